"""What an agent reads before its first question: the bytes of `tools/list` per toolset.

Each line is the JSON of the `tools/list` result as an MCP client receives it (a real
client session, `mcp.Client(server)`, the result dumped as the SDK sends it: by alias,
without nulls, compact) for a server publishing those toolsets to an operator, with the
part of it each field takes. The server reads the real API's OpenAPI document (made by the
app here, no API running). tests/mcp_server/test_mcp_tool_list_size.py holds the goals.

    python bench/tool_list.py
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def openapi() -> dict[str, Any]:
    from app import create_app
    from app.auth import TokenTable
    from cloud.settings import Settings

    app = create_app(Settings(redis_url="redis://127.0.0.1:1/0"), tokens=TokenTable([]))
    return app.test_client().get("/api/v1/openapi.json").get_json()


async def listed(document: dict[str, Any], toolsets: str | None) -> dict[str, Any]:
    """The tools/list result an operator's session with these toolsets receives."""
    from mcp import Client

    from mcp_server.routes import RouteBook
    from mcp_server.server import build_server

    server = build_server("http://127.0.0.1:9", "unused", role="operator",
                          routes=RouteBook(document), toolsets=toolsets)
    async with Client(server) as client:
        result = await client.list_tools()
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


def size(data: Any) -> int:
    return len(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode())


async def main() -> None:
    from mcp_server.agent_configs import AGENT_TOOLSETS
    from mcp_server.toolsets import NAMES

    document = openapi()
    sets = [("all", None), *((name, name) for name in NAMES),
            ("the agent's (skills/agents)", ",".join(AGENT_TOOLSETS))]
    fields = ("description", "inputSchema", "outputSchema")
    print(f"{'toolsets':<30} {'tools':>5} {'bytes':>8}  " + "  ".join(
        f"{f:>12}" for f in fields))
    for label, chosen in sets:
        result = await listed(document, chosen)
        tools = result["tools"]
        parts = [sum(size(t.get(f)) for t in tools if f in t) for f in fields]
        print(f"{label:<30} {len(tools):>5} {size(result):>8}  " + "  ".join(
            f"{p:>12}" for p in parts))


if __name__ == "__main__":
    asyncio.run(main())
