"""The MCP SDK's own floor: a stdio server whose one tool returns a fixed text, with nothing
of hypd in it. bench/status_reads.py calls it with the same client, interleaved with the
real calls, so the MCP overhead stands beside what the SDK itself costs per call.

Run by the bench as `python bench/mcp_floor.py <reply file>`; the tool returns that file's
text (the same operation reply the REST read returns, so the payload is alike).
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer


def main() -> None:
    reply = Path(sys.argv[1]).read_text()
    server = MCPServer("floor")

    @server.tool()
    def get_fixed() -> str:
        """Answer the fixed reply."""
        return reply

    server.run("stdio")


if __name__ == "__main__":
    main()
