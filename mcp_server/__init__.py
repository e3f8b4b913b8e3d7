"""The MCP server: hypd's tools for AI agents, each a call of the REST API.

A tool is a row of a declared table (`tools.py`) naming its route; `client.py` is the one HTTP
client, so an agent can never do more than its token's role allows through REST. This is the
only place that knows tool names: the REST API's replies name routes, and `routemap.py` gives
each the tool that calls it. Imports nothing of hypd's but the vocabulary (the words every
face shares: statuses, roles); `hypd mcp` runs it over stdio or streamable HTTP.
"""
