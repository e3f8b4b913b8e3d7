"""The MCP SDK's own floor: a stdio server whose one tool returns a fixed reply, with nothing
of hypd in it. bench/status_reads.py calls it with the same client, interleaved with the
real calls, so the MCP overhead stands beside what the SDK itself costs per call.

Run by the bench as `python bench/mcp_floor.py <reply file> [<output schema file>]`; the
tool returns that file's text (the same operation reply the REST read returns, so the
payload is alike). Given `get_operation`'s output schema as `tools/list` publishes it, the
tool declares it and answers the reply as structured content too, as `get_operation` does,
so a client that validates structured content against the schema (the Python SDK's does)
pays that validation for the floor as well: like with like.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, TextContent


def main() -> None:
    reply = Path(sys.argv[1]).read_text()
    if len(sys.argv) < 3:
        server = MCPServer("floor")

        @server.tool()
        def get_fixed() -> str:
            """Answer the fixed reply."""
            return reply

        server.run("stdio")
        return
    output_schema: dict[str, Any] = json.loads(Path(sys.argv[2]).read_text())

    async def get_fixed() -> CallToolResult:
        # parsed per call, as get_operation parses the REST reply it passes on
        return CallToolResult(content=[TextContent(type="text", text=reply)],
                              structured_content=json.loads(reply))

    tool = Tool(fn=get_fixed, name="get_fixed", description="Answer the fixed reply.",
                parameters={"type": "object", "properties": {}},
                fn_metadata=FuncMetadata(arg_model=ArgModelBase, output_schema=output_schema),
                is_async=True)
    MCPServer("floor", tools=[tool], log_level="WARNING").run("stdio")


if __name__ == "__main__":
    main()
