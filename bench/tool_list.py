"""What an agent reads before its first question: the bytes of `tools/list` per toolset.

Each line is the JSON of the `tools/list` result as an MCP client receives it (a real
client session, `mcp.Client(server)`, the result dumped as the SDK sends it: by alias,
without nulls, compact) for a server publishing those toolsets to an operator, with the
part of it each field takes. The server reads the real API's OpenAPI document (made by the
app here, no API running). Then, for every tool, where the bytes go: each part is what the
list would lose without it (so the parts overlap where one holds another: argument
descriptions are inside the input schemas), and the server's instructions, which a
session reads once beside the list. tests/mcp_server/test_mcp_tool_list_size.py holds the
goals.

    python bench/tool_list.py
"""

from __future__ import annotations

import asyncio
import copy
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SHARED = ("cluster", "dry_run", "force", "idempotency_key", "region")
"""Arguments that stand on many tools alike."""


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


def _without(schema: Any, keys: set[str]) -> Any:
    """A schema without these keywords at any depth (a `properties` map's names kept)."""
    if isinstance(schema, list):
        return [_without(item, keys) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {k: ({n: _without(s, keys) for n, s in v.items()} if k == "properties"
                else _without(v, keys))
            for k, v in schema.items() if k not in keys}


def _in_inputs(keys: set[str]) -> Callable[[dict[str, Any]], None]:
    def cut(tool: dict[str, Any]) -> None:
        tool["inputSchema"] = _without(tool["inputSchema"], keys)
    return cut


def _shared(tool: dict[str, Any]) -> None:
    for name in SHARED:
        tool["inputSchema"].get("properties", {}).pop(name, None)


def _pop(field: str) -> Callable[[dict[str, Any]], None]:
    return lambda tool: tool.pop(field, None)


PARTS: tuple[tuple[str, Callable[[dict[str, Any]], None]], ...] = (
    ("tool descriptions", _pop("description")),
    ("input schemas", _pop("inputSchema")),
    ("  argument descriptions", _in_inputs({"description"})),
    ("  types", _in_inputs({"type"})),
    ("  patterns", _in_inputs({"pattern"})),
    ("  enums", _in_inputs({"enum"})),
    ("  defaults", _in_inputs({"default"})),
    ("  bounds", _in_inputs({"minimum", "maximum", "minLength", "maxLength", "minItems",
                             "maxItems", "exclusiveMinimum", "exclusiveMaximum"})),
    ("  required", _in_inputs({"required"})),
    ("  additionalProperties", _in_inputs({"additionalProperties"})),
    (f"  shared arguments ({', '.join(SHARED)})", _shared),
    ("output schemas", _pop("outputSchema")),
    ("  what every reply shape requires", lambda tool: tool.get(
        "outputSchema", {}).pop("required", None)),
    ("annotations", _pop("annotations")),
)


def breakdown(result: dict[str, Any]) -> list[tuple[str, int]]:
    """Each part and the bytes the list would lose without it."""
    tools = result["tools"]
    whole = size(tools)
    found = []
    for label, cut in PARTS:
        lean = copy.deepcopy(tools)
        for tool in lean:
            cut(tool)
        found.append((label, whole - size(lean)))
    names = size([{"name": t["name"]} for t in tools])
    found.append(("names and JSON around them", names))
    return found


async def main() -> None:
    from mcp_server.agent_configs import AGENT_TOOLSETS
    from mcp_server.server import INSTRUCTIONS
    from mcp_server.toolsets import NAMES

    document = openapi()
    sets = [("all", None), *((name, name) for name in NAMES),
            ("the agent's (skills/agents)", ",".join(AGENT_TOOLSETS))]
    fields = ("description", "inputSchema", "outputSchema")
    print(f"{'toolsets':<30} {'tools':>5} {'bytes':>8}  " + "  ".join(
        f"{f:>12}" for f in fields))
    everything: dict[str, Any] = {}
    for label, chosen in sets:
        result = await listed(document, chosen)
        everything = everything or result
        tools = result["tools"]
        parts = [sum(size(t.get(f)) for t in tools if f in t) for f in fields]
        print(f"{label:<30} {len(tools):>5} {size(result):>8}  " + "  ".join(
            f"{p:>12}" for p in parts))
    print(f"\nwhere the bytes of all go ({size(everything)}):")
    for label, taken in breakdown(everything):
        print(f"  {label:<60} {taken:>7}")
    print(f"the server's instructions (read once, beside the list): "
          f"{len(INSTRUCTIONS.encode())} bytes")


if __name__ == "__main__":
    asyncio.run(main())
