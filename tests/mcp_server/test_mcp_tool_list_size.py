"""What an agent reads before its first question: `tools/list`, in bytes, per toolset.

Each figure is the JSON of the tools/list result as a real MCP client session receives it
(`mcp.Client(server)`, the result dumped as the SDK sends it: by alias, without nulls,
compact), for an operator's server publishing those toolsets, bound to the real API's
OpenAPI document — the same measure as bench/tool_list.py. BUDGETS are today's figures with
a few per cent to spare, so a change that bloats the list (a description, a schema the
server publishes) fails here, naming the toolset and its bytes; docs/benchmarks.md ("The
tool list") has the figures before and after the lean list, and where the rest goes.

Issue 22's goals (all tools <= 60 KB, the cluster lifecycle <= 20 KB) are not met, and the
first cannot be while the list says what the tests hold it to: the input schemas' rules
alone (types, enums, patterns, bounds, defaults, nested fields — each the OpenAPI
document's, tests/mcp_server/test_mcp_e2e.py) are about 31 KB, every reply's top-level
field names (test_mcp_tools.py) about 17 KB, names and hints about 7 KB, before one word of
description. They stand below as a strict xfail, to be turned into budgets the day they hold.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client

from mcp_server.agent_configs import AGENT_TOOLSETS
from mcp_server.routes import RouteBook
from mcp_server.server import build_server
from mcp_server.toolsets import ALWAYS, TOOLSETS_BY_NAME
from tests.mcp_server.mcp_fake_api import real_openapi

pytestmark = pytest.mark.asyncio

ALL = "all"
AGENT = ",".join(AGENT_TOOLSETS)
BUDGETS: dict[str, int] = {
    ALL: 102_000,           # 70 tools; 316,573 bytes before the lean list, 130,174 before
    "clusters": 22_600,     # the cluster lifecycle: networks, clusters, stages, software
    "capacity": 33_300,     # (each about 5 per cent above today's, docs/benchmarks.md)
    "training": 16_200,
    "inference": 18_700,    # (dry_run on every change: about 100 bytes a tool)
    "spaces": 11_400,
    "operations": 8_300,
    AGENT: 102_000,         # the agent configs' (skills/agents): every toolset, named
}
GOALS: dict[str, int] = {ALL: 60_000, "clusters": 20_000}


async def _tools_list(toolsets: str) -> dict[str, Any]:
    server = build_server("http://127.0.0.1:9", "unused", role="operator",
                          routes=RouteBook(real_openapi()), toolsets=toolsets)
    async with Client(server) as client:
        result = await client.list_tools()
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


def _bytes(data: Any) -> int:
    return len(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode())


@pytest.mark.parametrize("toolsets", list(BUDGETS))
async def test_tools_list_stays_within_its_budget(toolsets: str) -> None:
    listed = await _tools_list(toolsets)
    names = {t["name"] for t in listed["tools"]}
    if toolsets in TOOLSETS_BY_NAME:  # the list is the toolset's (and the following tools)
        assert names == set(TOOLSETS_BY_NAME[toolsets].tools) | set(ALWAYS)
    size = _bytes(listed)
    assert size <= BUDGETS[toolsets], (
        f"tools/list for --toolsets {toolsets} is {size} bytes, over its budget of "
        f"{BUDGETS[toolsets]}: {_largest(listed)}")


@pytest.mark.xfail(strict=True, reason="issue 22's goals (all <= 60 KB, clusters <= 20 KB) "
                   "are unmet: the input rules, held equal to the OpenAPI document's (~32 KB), "
                   "and every reply's field names (~17 KB) leave ~4 KB for 70 descriptions; "
                   "strict, so the day they hold it fails and becomes a budget")
@pytest.mark.parametrize("toolsets", list(GOALS))
async def test_tools_list_meets_issue_22_s_goal(toolsets: str) -> None:
    assert _bytes(await _tools_list(toolsets)) <= GOALS[toolsets]


def _largest(listed: dict[str, Any]) -> str:
    """The five largest tools and what in each takes the room, for the failure message."""
    rows = sorted(listed["tools"], key=_bytes, reverse=True)[:5]
    return "; ".join(
        f"{t['name']} {_bytes(t)} (description {_bytes(t.get('description'))}, input "
        f"{_bytes(t.get('inputSchema'))}, output {_bytes(t.get('outputSchema'))})"
        for t in rows)
