"""The teams toolset on the full stack, through an MCP client: an agent sets the scheduler
config, makes a team, reads it, changes it, sets, reads and clears its budget, plans its
delete, deletes it and the config —
each reply within its tool's output schema, each change followed with wait_operation; a
refusal comes back as a tool error with the API's code (a team the cluster cannot hold)."""

from __future__ import annotations

import asyncio

import pytest
from mcp import Client

from mcp_server.toolsets import TOOLSETS_BY_NAME
from tests.app.teamkit import TEAM, team_name
from tests.mcp_server.agentkit import Agent
from tests.stack import MEMBER_TOKENS

pytestmark = pytest.mark.asyncio


@pytest.fixture
def cluster(governed_cluster) -> str:
    return governed_cluster["name"]


async def test_an_agent_runs_teams_through_the_teams_toolset(stack, cluster):
    from mcp_server.server import build_server

    server = build_server(stack.url, stack.operator_token, toolsets="teams")
    async with Client(server) as client:
        agent = await Agent.of(client)
        assert set(TOOLSETS_BY_NAME["teams"].tools) <= set(agent.tools)
        call, done = agent.call, agent.done

        team = team_name("agent")
        await done("put_scheduler", {"cluster": cluster, "priority_classes": [
            {"name": "training", "weight": 50}]})
        assert (await call("get_scheduler", {"cluster": cluster}))["priority_classes"] == [
            {"name": "training", "weight": 50}]
        await done("create_team", {"cluster": cluster, "name": team, **TEAM})
        listed = await call("list_teams", {"cluster": cluster})
        assert team in {t["name"] for t in listed["items"]}
        one = await call("get_team", {"cluster": cluster, "name": team})
        assert one["namespace"] == f"hyperpod-ns-{team}"
        assert one["queue"]["present"] or "not made" in one["queue"]["message"]

        refused = await client.call_tool("create_team", {
            "cluster": cluster, "name": team_name(),
            "quota": [{"instance_type": "ml.p5.48xlarge", "count": 1}]})
        assert refused.is_error and "validation_failed" in refused.content[0].text

        while (await call("get_team", {"cluster": cluster, "name": team}))["state"] != \
                "Created":
            await asyncio.sleep(0.2)  # the sandbox's clock settles it within moments
        await done("update_team", {"cluster": cluster, "name": team, "fair_share_weight": 40})
        budget = await call("set_team_budget", {"cluster": cluster, "name": team,
                                                "monthly_usd": 250})
        assert (budget["status_tool"], budget["status_args"]) == (
            "get_team_budget", {"cluster": cluster, "name": team})
        assert (await call("get_team_budget", budget["status_args"]))["monthly_usd"] == 250
        assert (await call("clear_team_budget", budget["status_args"]))["state"] == "unset"
        assert (await call("get_team", {"cluster": cluster, "name": team}))[
            "fair_share_weight"] == 40
        plan = await call("delete_team", {"cluster": cluster, "name": team, "dry_run": True})
        assert plan["dry_run"] is True and plan["refused"] is False
        await done("delete_team", {"cluster": cluster, "name": team})
        await done("delete_scheduler", {"cluster": cluster})


async def test_a_member_s_session_publishes_its_team_s_work_and_reads_only(stack):
    """ana's operator token is a team member's: her session publishes the reads and the
    changes declared team work (submitting and deleting jobs; creating, changing, stopping,
    starting and deleting spaces; cancelling and retrying their operations), never a
    cluster-wide change;
    calling one says why. ben, a viewer member, gets the reads only."""
    from mcp_server.server import build_server
    from mcp_server.tools import TOOLS

    reads = {t.name for t in TOOLS if t.read_only}
    sessions = {}
    for member in ("ana", "ben"):
        async with Client(build_server(stack.url, MEMBER_TOKENS[member][1])) as client:
            sessions[member] = {t.name for t in (await client.list_tools()).tools}
            if member == "ana":
                refused = await client.call_tool("create_team", {
                    "cluster": "any", "name": "mine", **TEAM})
    team_work = {"submit_job", "delete_job", "create_space", "update_space", "stop_space",
                 "start_space", "delete_space", "cancel_operation", "retry_operation"}
    assert sessions["ana"] - reads == team_work
    assert team_work.isdisjoint(sessions["ben"])
    assert not sessions["ben"] - reads
    assert refused.is_error and "team member" in refused.content[0].text
