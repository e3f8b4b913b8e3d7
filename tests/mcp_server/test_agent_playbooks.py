"""A scripted agent follows a playbook step by step on the sandbox, through a real MCP client
talking to `hypd mcp` over stdio (the command the agent configs in skills/agents/ run).

The script does not carry its own list of calls: it reads the playbook's `## Steps`, and for
each step calls the tools that step names, in the order it names them, the way an agent
would — the user's decisions coming from a scripted user who picks from the choices the
tools offered. A playbook step naming a tool the script cannot follow, or a tool the script
calls that the playbook never names, fails the test: the playbook and the agent's path stay
one thing.
"""

from __future__ import annotations

import re
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from mcp_server.tools import TOOLS_BY_NAME
from tests.mcp_server.mcp_fake_api import REPO_ROOT

FOLLOW_LIMIT_S = 240
HYPD = Path(sys.executable).with_name("hypd")
"""The `hypd` console script of this environment: agents run `hypd mcp`."""


def playbook_steps(name: str) -> list[tuple[str, list[str]]]:
    """The playbook's numbered steps: (the step's bold title, the tools it names in order)."""
    text = (REPO_ROOT / "skills" / f"{name}.md").read_text()
    steps = text.split("\n## Steps\n", 1)[1].split("\n## ", 1)[0]
    found = []
    for block in re.split(r"\n(?=\d+\. )", steps.strip()):
        title = re.match(r"\d+\. \*\*(.+?)\*\*", block)
        tools = [t for t in re.findall(r"`([a-z_]+)`", block) if t in TOOLS_BY_NAME]
        found.append((title.group(1) if title else block[:40], list(dict.fromkeys(tools))))
    return found


def stdio_agent(url: str, token: str) -> Client:
    params = StdioServerParameters(command=str(HYPD), args=["mcp"], cwd=str(REPO_ROOT),
                                   env={"HYPD_API_URL": url, "HYPD_TOKEN": token})
    return Client(params, read_timeout_seconds=90, mode="legacy")


class Agent:
    """One conversation: the client, what each tool answered, and the calls made."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.seen: dict[str, Any] = {}
        self.calls: list[str] = []

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        result = await self.client.call_tool(tool, args)
        assert not result.is_error, f"{tool}: {result.content[0].text}"
        self.calls.append(tool)
        self.seen[tool] = result.structured_content
        return result.structured_content

    async def follow(self, reply: dict[str, Any]) -> dict[str, Any]:
        """Call the reply's status tool with its arguments until the operation is terminal."""
        deadline = time.monotonic() + FOLLOW_LIMIT_S
        while True:
            out = await self.call(reply["status_tool"], {**reply["status_args"],
                                                         "timeout_seconds": 30})
            if out["terminal"]:
                return out
            assert time.monotonic() < deadline, f"not terminal after {FOLLOW_LIMIT_S} s: {out}"


Handler = Callable[[Agent, dict[str, Any]], Awaitable[None]]


def create_cluster_script(name: str) -> dict[str, Handler]:
    """How the agent uses each tool of skills/create-cluster.md's success path; `wants` is
    the scripted user's decisions, filled in as the choices are offered."""

    async def list_clusters(agent: Agent, wants: dict[str, Any]) -> None:
        listed = await agent.call("list_clusters", {})
        assert name not in {c["name"] for c in listed["items"]}  # nothing that fits: create

    async def list_networks(agent: Agent, wants: dict[str, Any]) -> None:
        await agent.call("list_networks", {})  # a new network, the panel's default

    async def list_availability_zones(agent: Agent, wants: dict[str, Any]) -> None:
        zones = await agent.call("list_availability_zones", {})
        offered = [z["name"] for z in zones["items"] if z["state"] == "available"]
        wants["availability_zone"] = offered[0]  # the user picks from what was offered

    async def list_instance_types(agent: Agent, wants: dict[str, Any]) -> None:
        types = await agent.call("list_instance_types",
                                 {"availability_zone": wants["availability_zone"]})
        offered = {t["name"]: t for t in types["items"]}
        wants["instance_type"] = "ml.g5.8xlarge"
        assert offered[wants["instance_type"]]["accelerator"] == "gpu"
        wants.update(instance_count=1, capacity_type="on-demand")

    async def preflight(agent: Agent, wants: dict[str, Any]) -> None:
        checks = await agent.call("preflight", {
            "instance_type": wants["instance_type"], "count": wants["instance_count"],
            "capacity_type": wants["capacity_type"]})
        assert checks["ok"] is True, checks

    async def plan_cluster(agent: Agent, wants: dict[str, Any]) -> None:
        plan = await agent.call("plan_cluster", {"name": name, **wants})
        assert plan["dry_run"] is True and plan["cost"]["hourly_usd"] > 0
        assert plan["preflight"]["ok"] is True

    async def create_cluster(agent: Agent, wants: dict[str, Any]) -> None:
        reply = await agent.call("create_cluster", {"name": name, **wants})
        assert reply["operation"]["kind"] == "cluster.create"
        assert reply["status_tool"] == "wait_operation"
        agent.seen["create_reply"] = reply

    async def wait_operation(agent: Agent, wants: dict[str, Any]) -> None:
        done = await agent.follow(agent.seen["create_reply"])
        assert done["status"] == "succeeded", done["operation"].get("error")

    async def get_cluster(agent: Agent, wants: dict[str, Any]) -> None:
        detail = await agent.call("get_cluster", {"name": name})
        assert {s["status"] for s in detail["stages"]} == {"succeeded"}
        assert detail["hyperpod"]["node_provisioning_mode"] == "Continuous"

    async def get_active_cluster(agent: Agent, wants: dict[str, Any]) -> None:
        assert (await agent.call("get_active_cluster", {}))["name"] == name

    async def get_kubeconfig(agent: Agent, wants: dict[str, Any]) -> None:
        config = await agent.call("get_kubeconfig", {"name": name})
        assert config["kubeconfig"]["clusters"], config

    async def diagnose_cluster(agent: Agent, wants: dict[str, Any]) -> None:
        health = await agent.call("diagnose_cluster", {"cluster": name, "kind": "node-health"})
        assert health["healthy"] is True, health["findings"]

    return {f.__name__: f for f in (
        list_clusters, list_networks, list_availability_zones, list_instance_types, preflight,
        plan_cluster, create_cluster, wait_operation, get_cluster, get_active_cluster,
        get_kubeconfig, diagnose_cluster)}


FAILURE_STEPS = ("On failure",)
"""Steps an agent takes only when the operation failed."""


@pytest.mark.asyncio
async def test_an_agent_follows_the_create_cluster_playbook_to_a_running_cluster(stack):
    stack.wait_idle()
    name = f"agent-{uuid.uuid4().hex[:6]}"
    steps = playbook_steps("create-cluster")
    script = create_cluster_script(name)
    path = [(title, tools) for title, tools in steps if title not in FAILURE_STEPS]
    assert [t for t, _ in path][:6] == ["Look first.", "Ask only decisions", "Preflight",
                                        "Plan", "Create", "On success"]
    expected = [tool for _, tools in path for tool in tools]
    assert set(expected) == set(script), "the playbook and the agent's script name the same tools"
    try:
        async with stdio_agent(stack.url, stack.operator_token) as client:
            agent, wants = Agent(client), {}
            for _title, tools in path:
                for tool in tools:
                    await script[tool](agent, wants)
    finally:
        stack.wait_idle()
        with stack.client() as c:
            gone = c.delete(f"/api/v1/clusters/{name}")
        if gone.status_code == 202:
            stack.wait_operation(gone.json()["operation"]["id"], timeout=300)
    # it looked before it proposed, planned before it created, and followed to the end
    calls = agent.calls
    assert calls.index("list_clusters") < calls.index("plan_cluster") < calls.index(
        "create_cluster") < calls.index("wait_operation") < calls.index("get_cluster")
    assert calls.index("list_instance_types") < calls.index("plan_cluster")
    assert [c for c in calls if c not in ("wait_operation",)] == [
        c for c in expected if c != "wait_operation"]
    assert wants == {"availability_zone": wants["availability_zone"],
                     "instance_type": "ml.g5.8xlarge", "instance_count": 1,
                     "capacity_type": "on-demand"}  # decisions only: no CIDR, no subnet
