"""The launcher: the `hypd` command, which starts hypd's processes.

`hypd up` runs the whole stack (Redis, the local AWS in sandbox mode, Celery workers, the web
server) as supervised children; `hypd web`, `hypd worker`, `hypd mcp` and `hypd sandbox` run
one part each. It is the composition root: it may import every part of hypd (lazily, so that
`hypd mcp` pays for the MCP server only), and no part imports it.
"""
