"""What an agent reads before its first question: `tools/list`, in bytes, per toolset.

Each figure is the JSON of the tools/list result as a real MCP client session receives it
(`mcp.Client(server)`, the result dumped as the SDK sends it: by alias, without nulls,
compact), for an operator's server publishing those toolsets, bound to the real API's
OpenAPI document — the same measure as bench/tool_list.py, which also says where the bytes
go. BUDGETS are today's figures with about 3 per cent to spare, so a change that bloats the
list (a description, a schema the server publishes) fails here, naming the toolset and its
bytes; docs/benchmarks.md ("The tool list") has the figures before and after each cut.

Issue 22's goals: the cluster lifecycle (`--toolsets clusters`) <= 20 KB holds and is
asserted. All tools <= 60 KB does not, and cannot while the list carries what the tests
hold it to and an agent needs to call a tool right: with every description — the rows' and
the arguments' — taken out, the list is still about 56 KB (input schemas' rules ~31 KB:
types, patterns, enums, bounds, defaults, required, nested fields, each the OpenAPI
document's, tests/mcp_server/test_mcp_e2e.py; every reply's top-level field names and
what every shape requires ~20 KB, test_mcp_tools.py; annotations ~3.5 KB; names ~2 KB),
which leaves ~4 KB for 71 tools' and their arguments' words (today ~27 KB: what, when and
which status tool per row, ~13 KB; what the arguments' schemas cannot say, ~13 KB). Those
were the figures at 71 tools; at 85 (budgets and teams since) the list is 98.3 KB. It
stands below as a strict xfail until a decision (drop the goal for per-toolset budgets,
publish less, or dynamic toolsets), to be turned into a budget the day it holds.
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
    ALL: 100_400,           # 85 tools: 98,317 bytes with a space's team, priority and queue
                            # (97,889 before them; 94,659 before the team budget's 3 tools;
                            # 82,672 before the 3 budget and 8 teams tools; 99,230 before
                            # the second lean pass)
    "clusters": 19_100,     # 18,529: networks, clusters, stages, software (22,306 before)
    "capacity": 31_300,     # 30,376 with the budget's 3 tools (27,716 before them; 33,282
                            # before the lean pass)
    "training": 14_100,     # 13,652 (15,819)
    "inference": 15_600,    # 15,102 (17,922)
    "spaces": 9_828,        # 9,508: +428 bytes, raised by exactly those, for a space's
                            # team and priority (create_space's arguments) and its queue
                            # (the replies' field names); 9,080 before them (10,930)
    "teams": 13_950,        # 13,567: the scheduler config, teams and their budgets
                            # (10,829 before the team budget's 3 tools)
    "operations": 6_850,    # 6,648 (7,906); each about 3 per cent above today's
    AGENT: 100_400,         # the agent configs' (skills/agents): every toolset, named
}
GOALS: dict[str, int] = {ALL: 60_000, "clusters": 20_000}
"""Issue 22's: the cluster lifecycle's holds (asserted); all tools' does not (strict xfail)."""


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


async def test_the_cluster_lifecycle_meets_issue_22_s_goal() -> None:
    size = _bytes(await _tools_list("clusters"))
    assert size <= BUDGETS["clusters"] <= GOALS["clusters"], size


@pytest.mark.xfail(strict=True, reason="issue 22's goal for all tools (<= 60 KB) is unmet: "
                   "without one word of description the list is ~56 KB — the input rules, "
                   "held equal to the OpenAPI document's (~31 KB), every reply's top-level "
                   "field names and required fields (~20 KB), annotations and names (~5 KB) "
                   "— leaving ~4 KB for the words of 71 tools and their arguments (~27 KB "
                   "then; 85 tools and 98.3 KB now); strict, so the day it holds it fails "
                   "and becomes a budget")
async def test_all_tools_meet_issue_22_s_goal() -> None:
    assert _bytes(await _tools_list(ALL)) <= GOALS[ALL]


def _largest(listed: dict[str, Any]) -> str:
    """The five largest tools and what in each takes the room, for the failure message."""
    rows = sorted(listed["tools"], key=_bytes, reverse=True)[:5]
    return "; ".join(
        f"{t['name']} {_bytes(t)} (description {_bytes(t.get('description'))}, input "
        f"{_bytes(t.get('inputSchema'))}, output {_bytes(t.get('outputSchema'))})"
        for t in rows)
