"""A scripted agent follows a playbook step by step on the sandbox, through a real MCP client
talking to `hypd mcp` over stdio (the command the agent configs in skills/agents/ run).

The script does not carry its own list of calls: it reads the playbook's `## Steps`, and for
each step calls the tools that step names, in the order it names them, the way an agent
would — the user's decisions coming from a scripted user who picks from the choices the
tools offered. A playbook step naming a tool the script cannot follow, or a tool the script
calls that the playbook never names, fails the test: the playbook and the agent's path stay
one thing. A step the situation does not call for (turning on a feature that is on) is
skipped by name and with the reason, and the test says which it expects skipped.

The create-cluster agent makes its own cluster (that is its playbook); the submit-training
and deploy-model agents share one cluster made through REST: the training tests' (`training`
in tests/conftest.py, made once per test process), with a model put in its bucket.
"""

from __future__ import annotations

import asyncio
import json
import os
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
from tests.app.test_endpoints_api import _upload_model
from tests.mcp_server.mcp_fake_api import REPO_ROOT

FOLLOW_LIMIT_S = 240
FAILURE_STEPS = ("On failure",)
"""Steps an agent takes only when the operation failed."""
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
    """`hypd mcp` started as the agent configs start it (their args: the agent's toolsets),
    so a playbook tool outside them fails here as it would for the agent. PYTHONPATH, when
    the tests run from a checkout, passes on so the server is this checkout's."""
    config = json.loads((REPO_ROOT / "skills" / "agents" / "hypd-inst-agent.json").read_text())
    env = {"HYPD_API_URL": url, "HYPD_TOKEN": token}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    params = StdioServerParameters(command=str(HYPD), args=config["mcpServers"]["hypd"]["args"],
                                   cwd=str(REPO_ROOT), env=env)
    return Client(params, read_timeout_seconds=90, mode="legacy")


class Agent:
    """One conversation: the client, what each tool answered, the calls made and the steps
    skipped (tool → why)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.seen: dict[str, Any] = {}
        self.calls: list[str] = []
        self.skipped: dict[str, str] = {}
        self.skips: list[str] = []
        """The tools skipped, in order: a tool two steps name may be skipped in one only."""

    def skip(self, tool: str, why: str) -> None:
        self.skipped[tool] = why
        self.skips.append(tool)

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

    async def follow_job(self, args: dict[str, Any]) -> dict[str, Any]:
        """Call get_job until the job's state is terminal."""
        deadline = time.monotonic() + FOLLOW_LIMIT_S
        while True:
            job = await self.call("get_job", args)
            if job["state"] in ("succeeded", "failed"):
                return job
            assert time.monotonic() < deadline, f"not terminal after {FOLLOW_LIMIT_S} s: {job}"
            await asyncio.sleep(0.2)  # get_job has no long poll: an agent's pace


Handler = Callable[[Agent, dict[str, Any]], Awaitable[None]]


def success_path(playbook: str, script: dict[str, Handler]) -> list[tuple[str, list[str]]]:
    """The playbook's steps but the failure ones; they name exactly the script's tools."""
    path = [(title, tools) for title, tools in playbook_steps(playbook)
            if title not in FAILURE_STEPS]
    named = {tool for _, tools in path for tool in tools}
    assert named == set(script), "the playbook and the agent's script name the same tools"
    return path


async def follow_playbook(agent: Agent, path: list[tuple[str, list[str]]],
                          script: dict[str, Handler], wants: dict[str, Any]) -> None:
    for _title, tools in path:
        for tool in tools:
            await script[tool](agent, wants)


def tools_called_in_order(agent: Agent, path: list[tuple[str, list[str]]]) -> list[str]:
    """The playbook's tools in its order, less those skipped (each skip drops the first
    of its tool's places not yet dropped, skips being made in the playbook's order): the
    agent's calls, once its repeated status calls are set apart."""
    skips = list(agent.skips)
    kept = []
    for tool in (t for _, tools in path for t in tools):
        if tool in skips:
            skips.remove(tool)
        else:
            kept.append(tool)
    return kept


def wait_operation_for(*started: str) -> Handler:
    """`wait_operation` as a step names it: follow the first operation, of the replies the
    agent kept as `started`, that it has not followed yet, until it succeeds — skipped
    when the situation started none."""
    followed: set[str] = set()

    async def wait_operation(agent: Agent, wants: dict[str, Any]) -> None:
        new = [s for s in started if s in agent.seen and s not in followed]
        if not new:
            agent.skip("wait_operation", "no operation was started")
            return
        followed.add(new[0])
        done = await agent.follow(agent.seen[new[0]])
        assert done["status"] == "succeeded", done["operation"].get("error")

    return wait_operation


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

    wait_operation = wait_operation_for("create_reply")

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




@pytest.mark.asyncio
async def test_an_agent_follows_the_create_cluster_playbook_to_a_running_cluster(stack):
    stack.wait_idle()
    name = f"agent-{uuid.uuid4().hex[:6]}"
    script = create_cluster_script(name)
    path = success_path("create-cluster", script)
    assert [t for t, _ in path][:6] == ["Look first.", "Ask only decisions", "Preflight",
                                        "Plan", "Create", "On success"]
    expected = [tool for _, tools in path for tool in tools]
    try:
        async with stdio_agent(stack.url, stack.operator_token) as client:
            agent, wants = Agent(client), {}
            await follow_playbook(agent, path, script, wants)
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


# -- submit-training and deploy-model: one cluster for both ----------------------------------

MODEL = "tiny"
TRAINING_STEPS = 3


@pytest.fixture(scope="module")
def ready_cluster(stack, training) -> str:
    """The training tests' cluster (two ml.g5.8xlarge, one GPU each, the training operator
    on), with a model the user put in its bucket."""
    _upload_model(stack, training["name"], MODEL)
    return training["name"]


def submit_training_script(cluster: str, job: str) -> dict[str, Handler]:
    """How the agent uses each tool of skills/submit-training.md's success path."""

    async def list_clusters(agent: Agent, wants: dict[str, Any]) -> None:
        listed = await agent.call("list_clusters", {})
        assert cluster in {c["name"] for c in listed["items"]}  # one that fits: use it

    async def get_cluster(agent: Agent, wants: dict[str, Any]) -> None:
        detail = await agent.call("get_cluster", {"name": cluster})
        assert detail["eks"]["status"] == "ACTIVE", detail["eks"]

    async def list_instance_groups(agent: Agent, wants: dict[str, Any]) -> None:
        groups = (await agent.call("list_instance_groups", {"cluster": cluster}))["items"]
        wants["instance_group"] = groups[0]["name"]  # the user picks the cluster's group
        assert groups[0]["instance_type"] == "ml.g5.8xlarge"  # one GPU a node
        wants.update(nodes=1, gpus_per_node=1)

    async def list_jobs(agent: Agent, wants: dict[str, Any]) -> None:
        listed = await agent.call("list_jobs", {"cluster": cluster})
        assert job not in {j["name"] for j in listed["items"]}  # the name is new

    async def get_training_limits(agent: Agent, wants: dict[str, Any]) -> None:
        limits = await agent.call("get_training_limits", {})
        recipes = {r["name"]: r for r in limits["recipes"]}
        wants.update(recipe="torchrun", image="repo/train:1", script="/s3/code/train.py")
        assert recipes[wants["recipe"]]["needs"] == ["script"]  # a script under /s3

    async def get_features(agent: Agent, wants: dict[str, Any]) -> None:
        features = await agent.call("get_features", {"cluster": cluster})
        agent.seen["operator"] = features["features"]["training_operator"]["state"]

    async def update_features(agent: Agent, wants: dict[str, Any]) -> None:
        if agent.seen["operator"] == "on":
            agent.skip("update_features", "the training operator is on")
            return
        agent.seen["features_reply"] = await agent.call(
            "update_features", {"cluster": cluster, "training_operator": {"enabled": True}})

    wait_operation = wait_operation_for("features_reply", "submit_reply")

    async def submit_job(agent: Agent, wants: dict[str, Any]) -> None:
        reply = await agent.call("submit_job", {"cluster": cluster, "name": job, **wants})
        assert reply["operation"]["kind"] == "job.create"
        assert reply["resource_url"] == f"/api/v1/clusters/{cluster}/jobs/{job}"
        assert reply["status_tool"] == "wait_operation"
        agent.seen["submit_reply"] = reply

    async def get_job(agent: Agent, wants: dict[str, Any]) -> None:
        done = await agent.follow_job({"cluster": cluster, "job": job})
        assert done["kind"] == "HyperPodPyTorchJob"
        assert done["state"] == "succeeded", done
        assert done["pods"][0]["node"].startswith("hyperpod-i-")
        assert done["recovery_budget"] == {"used": 0, "allowed": 3, "remaining": 3}

    async def get_job_logs(agent: Agent, wants: dict[str, Any]) -> None:
        logs = await agent.call("get_job_logs", {"cluster": cluster, "job": job, "tail": 50})
        lines = [entry["line"] for entry in logs["lines"]]
        assert lines[0] == f"{job}-pods-0: starting {job}"
        assert [line.split()[2] for line in lines[1:]] == [
            f"{i}/{TRAINING_STEPS}" for i in range(1, TRAINING_STEPS + 1)]

    return {f.__name__: f for f in (
        list_clusters, get_cluster, list_instance_groups, list_jobs, get_training_limits,
        get_features, update_features, wait_operation, submit_job, get_job, get_job_logs)}


@pytest.mark.asyncio
async def test_an_agent_follows_the_submit_training_playbook_to_a_finished_job(stack,
                                                                              ready_cluster):
    job = f"agent-{uuid.uuid4().hex[:6]}"
    stack.sandbox.set_training(steps=TRAINING_STEPS, lines_per_second=50, job=job)
    script = submit_training_script(ready_cluster, job)
    path = success_path("submit-training", script)
    async with stdio_agent(stack.url, stack.operator_token) as client:
        agent = Agent(client)
        await follow_playbook(agent, path, script, {})
    # the operator was on already: nothing to turn on; the submission followed, then the job
    assert agent.skipped == {"update_features": "the training operator is on",
                             "wait_operation": "no operation was started"}
    assert agent.skips == ["update_features", "wait_operation"]
    polls = ("get_job", "wait_operation")
    assert [c for c in agent.calls if c not in polls] == [
        t for t in tools_called_in_order(agent, path) if t not in polls]
    calls = agent.calls
    assert calls.index("submit_job") < calls.index("wait_operation") < calls.index("get_job")
    assert agent.calls[-1] == "get_job_logs"  # read once the job had finished


def deploy_model_script(cluster: str, endpoint: str) -> dict[str, Handler]:
    """How the agent uses each tool of skills/deploy-model.md's success path: a vLLM
    endpoint of one server on one GPU, in the cluster."""

    async def list_clusters(agent: Agent, wants: dict[str, Any]) -> None:
        listed = await agent.call("list_clusters", {})
        assert cluster in {c["name"] for c in listed["items"]}

    async def list_models(agent: Agent, wants: dict[str, Any]) -> None:
        models = await agent.call("list_models", {"cluster": cluster})
        assert MODEL in {m["name"] for m in models["items"]}  # no download needed
        wants["model"] = MODEL

    async def list_endpoints(agent: Agent, wants: dict[str, Any]) -> None:
        listed = await agent.call("list_endpoints", {"cluster": cluster})
        assert endpoint not in {e["name"] for e in listed["items"]}

    async def list_instance_groups(agent: Agent, wants: dict[str, Any]) -> None:
        group = (await agent.call("list_instance_groups", {"cluster": cluster}))["items"][0]
        agent.seen["group"] = group

    async def list_instance_types(agent: Agent, wants: dict[str, Any]) -> None:
        group = agent.seen["group"]
        types = await agent.call("list_instance_types",
                                 {"availability_zone": group["availability_zone"]})
        offered = {t["name"]: t for t in types["items"]}
        assert offered[group["instance_type"]]["accelerator_count"] == 1
        # the user's decisions: one server on the one GPU an instance has
        wants.update(kind="vllm", gpus=1, replicas=1, service="in_cluster",
                     instance_type=group["instance_type"])

    async def get_features(agent: Agent, wants: dict[str, Any]) -> None:
        assert wants["kind"] != "managed"
        agent.skip("get_features", "a vllm endpoint needs no inference operator")

    async def create_endpoint(agent: Agent, wants: dict[str, Any]) -> None:
        reply = await agent.call("create_endpoint", {"cluster": cluster, "name": endpoint,
                                                     **wants})
        assert reply["status_tool"] == "wait_operation"
        agent.seen["create_reply"] = reply

    wait_operation = wait_operation_for("create_reply")

    async def get_endpoint(agent: Agent, wants: dict[str, Any]) -> None:
        view = await agent.call("get_endpoint", {"cluster": cluster, "name": endpoint})
        assert (view["state"], view["ready_replicas"]) == ("ready", 1), view

    async def invoke_endpoint(agent: Agent, wants: dict[str, Any]) -> None:
        answer = await agent.call("invoke_endpoint", {"cluster": cluster, "name": endpoint,
                                                      "prompt": "Hello", "max_tokens": 5})
        assert answer["status"] == 200 and answer["service"] == f"default/{endpoint}"
        completion = answer["response"]
        assert completion["object"] == "text_completion" and completion["model"] == MODEL
        assert completion["choices"][0]["text"]
        assert completion["usage"]["completion_tokens"] == 5

    return {f.__name__: f for f in (
        list_clusters, list_models, list_endpoints, list_instance_groups, list_instance_types,
        get_features, create_endpoint, wait_operation, get_endpoint, invoke_endpoint)}


@pytest.mark.asyncio
async def test_an_agent_follows_the_deploy_model_playbook_to_an_answering_endpoint(
        stack, ready_cluster):
    endpoint = f"agent-{uuid.uuid4().hex[:6]}"
    script = deploy_model_script(ready_cluster, endpoint)
    path = success_path("deploy-model", script)
    try:
        async with stdio_agent(stack.url, stack.operator_token) as client:
            agent = Agent(client)
            await follow_playbook(agent, path, script, {})
    finally:  # the endpoint holds a GPU the training tests of this cluster need
        with stack.client() as c:
            gone = c.delete(f"/api/v1/clusters/{ready_cluster}/endpoints/{endpoint}")
        if gone.status_code == 202:
            stack.wait_operation(gone.json()["operation"]["id"], timeout=120)
    assert agent.skipped == {"get_features": "a vllm endpoint needs no inference operator"}
    assert [c for c in agent.calls if c != "wait_operation"] == [
        t for t in tools_called_in_order(agent, path) if t != "wait_operation"]
    calls = agent.calls
    assert calls.index("list_models") < calls.index("create_endpoint") < calls.index(
        "wait_operation") < calls.index("get_endpoint") < calls.index("invoke_endpoint")
