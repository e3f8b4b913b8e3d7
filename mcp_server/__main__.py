"""`python -m mcp_server`: the same as `hypd mcp`."""

from mcp_server.server import main

if __name__ == "__main__":
    main()
