"""A destructive request first looks at what depends on its target (issue 20), on the job
tests' shared cluster with one training job kept running: the network under the cluster, the
cluster, the training operator and the job's node are each refused with 409 in_use naming
what would break — before any operation is recorded or AWS is asked to change anything (the
local AWS's counters) — over REST and MCP; each dry run (a viewer's) lists what would be
removed and what would break. The forced paths are tested where each resource's own tests
have one to spare (jobs, groups, nodes, features, MLflow, endpoints, models, clusters)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.app.jobkit import TORCHRUN, deleted, job_name, submitted, wait_state
from tests.mcp_server.refusals import refusal


@pytest.fixture(scope="module")
def busy(stack, training) -> Any:
    """A training job that runs until it is deleted (forced) after this module."""
    cluster, name = training["name"], job_name("busy")
    stack.sandbox.set_training(steps=100000, lines_per_second=1, job=name)
    submitted(stack, cluster, {"name": name, **TORCHRUN})
    job = wait_state(stack, cluster, name, "running")
    yield {"cluster": cluster, "job": name, "pods": job["pods"]}
    deleted(stack, cluster, name, force="true")


def _mutations(stack) -> dict[str, int]:
    return dict(stack.sandbox.counters()["by_action"])


def _operations(stack, target: str) -> list[dict[str, Any]]:
    with stack.client("viewer") as c:
        return c.get("/api/v1/operations", params={"target": target}).json()["items"]


def _refused(reply, what: str) -> dict[str, Any]:
    """The in_use envelope, checked for its shape; its details."""
    assert reply.status_code == 409, reply.text
    error = reply.json()["error"]
    assert error["code"] == "in_use", error
    assert error["message"].startswith(f"{what} is in use: "), error["message"]
    assert "Nothing was changed" in error["message"]
    details = error["details"]
    assert details["target"] == what and details["total"] == len(details["dependents"]) > 0
    return details


def _named(details: dict[str, Any], kind: str, name: str) -> dict[str, Any]:
    found = [d for d in details["dependents"] if (d["kind"], d["name"]) == (kind, name)]
    assert found, details["dependents"]
    return found[0]


def test_a_network_under_a_live_cluster_is_refused_naming_it_and_nothing_is_done(stack,
                                                                                training):
    cluster = training["name"]
    stack.wait_idle()
    before = _mutations(stack)
    with stack.client() as c:
        refused = c.delete(f"/api/v1/networks/{cluster}")
        forced = c.delete(f"/api/v1/networks/{cluster}", params={"force": "true"})
    details = _refused(refused, f"network {cluster}")
    found = _named(details, "cluster", cluster)
    assert found["forceable"] is False and "EKS cluster (ACTIVE, made by hypd)" in found["why"]
    assert f"cluster {cluster} (EKS cluster" in refused.json()["error"]["message"]
    assert details["force_allowed"] is False
    assert "force does not override this" in refused.json()["error"]["message"]
    # there is no force for a network: asking for it changes nothing
    assert _named(_refused(forced, f"network {cluster}"), "cluster", cluster) == found
    assert not [o for o in _operations(stack, f"network/{cluster}")
                if o["kind"] == "network.delete"]
    assert _mutations(stack) == before
    with stack.client() as c:  # the refusal is audited
        audited = c.get("/api/v1/audit", params={"target": f"network/{cluster}"}).json()
    assert any(e["code"] == "in_use" and e["outcome"] == "refused" for e in audited["items"])

    with stack.client("viewer") as c:  # a viewer may ask what it would do
        plan = c.delete(f"/api/v1/networks/{cluster}", params={"dry_run": "true"})
    assert plan.status_code == 200, plan.text
    body = plan.json()
    assert body["dry_run"] is True and body["refused"] is True
    assert body["force_allowed"] is False
    assert any(r.startswith("VPC vpc-") for r in body["removes"])
    assert any(r.startswith("NAT gateway") for r in body["removes"])
    assert _named(body, "cluster", cluster)["why"] == found["why"]
    assert _mutations(stack) == before


@pytest.mark.asyncio
async def test_an_agent_is_refused_the_same_way_and_told_what_depends(stack, training):
    from mcp import Client

    from mcp_server.server import build_server

    cluster = training["name"]
    before = _mutations(stack)
    async with Client(build_server(stack.url, stack.operator_token)) as client:
        tool = next(t for t in (await client.list_tools()).tools if t.name == "delete_network")
        assert set(tool.input_schema["properties"]) >= {"name", "dry_run"}
        assert "force" not in tool.input_schema["properties"]
        assert "in_use" in tool.description
        refused = await client.call_tool("delete_network", {"name": cluster})
        assert refused.is_error
        assert refused.content[0].text.startswith(f"in_use: network {cluster} is in use: "
                                                  f"cluster {cluster}")
        details = refusal(refused)["error"]["details"]
        assert _named(details, "cluster", cluster)["forceable"] is False
        plan = await client.call_tool("delete_network", {"name": cluster, "dry_run": True})
        assert not plan.is_error, plan.content[0].text
        assert plan.structured_content["refused"] is True
        assert plan.structured_content["status_tool"] is None
    assert not [o for o in _operations(stack, f"network/{cluster}")
                if o["kind"] == "network.delete"]
    assert _mutations(stack) == before


def test_a_cluster_running_a_job_is_refused_naming_the_job(stack, busy):
    cluster, job = busy["cluster"], busy["job"]
    before = _mutations(stack)
    with stack.client() as c:
        refused = c.delete(f"/api/v1/clusters/{cluster}")
    details = _refused(refused, f"cluster {cluster}")
    found = _named(details, "training_job", job)
    assert found["namespace"] == "default" and found["forceable"] is True
    assert found["why"] == "HyperPodPyTorchJob running"
    assert details["force_allowed"] is True
    assert "force=true to go ahead anyway" in refused.json()["error"]["message"]
    assert not [o for o in _operations(stack, f"cluster/{cluster}")
                if o["kind"] == "cluster.delete"]
    with stack.client("viewer") as c:
        plan = c.delete(f"/api/v1/clusters/{cluster}", params={"dry_run": "true"}).json()
    assert plan["refused"] is True and plan["force_allowed"] is True
    assert "Delete the HyperPod cluster" in plan["removes"]
    assert "Delete the EKS cluster" in plan["removes"]
    assert _named(plan, "training_job", job)
    assert _mutations(stack) == before


def test_turning_the_training_operator_off_is_refused_while_its_job_runs(stack, busy):
    cluster, job = busy["cluster"], busy["job"]
    before = _mutations(stack)
    off = {"training_operator": {"enabled": False}}
    with stack.client() as c:
        refused = c.patch(f"/api/v1/clusters/{cluster}/features", json=off)
    details = _refused(refused, f"turning off training_operator on cluster {cluster}")
    assert _named(details, "training_job", job)["why"] == "HyperPodPyTorchJob running"
    assert not [o for o in _operations(stack, f"cluster/{cluster}/feature/training_operator")
                if o["params"].get("enabled") is False]
    with stack.client("viewer") as c:
        plan = c.patch(f"/api/v1/clusters/{cluster}/features", json=off,
                       params={"dry_run": "true"}).json()
    assert plan["refused"] is True
    assert "addon amazon-sagemaker-hyperpod-training-operator" in plan["removes"]
    assert _mutations(stack) == before


def test_deleting_or_replacing_the_node_a_job_runs_on_is_refused(stack, busy):
    cluster, job = busy["cluster"], busy["job"]
    pod = busy["pods"][0]
    with stack.client("viewer") as c:
        nodes = c.get(f"/api/v1/clusters/{cluster}/nodes").json()["items"]
    node = next(n for n in nodes if n["node_name"] == pod["node"])
    before, ops = _mutations(stack), _operations(stack, f"cluster/{cluster}/nodes")
    with stack.client() as c:
        for action in ("delete", "replace"):
            refused = c.post(f"/api/v1/clusters/{cluster}/nodes/{action}",
                             json={"node_ids": [node["id"]]})
            details = _refused(refused, f"{action} of 1 node(s) of cluster {cluster}")
            found = _named(details, "pod", pod["name"])
            assert found["why"] == f"a pod of training job {job}, running on node {pod['node']}"
        plan = c.post(f"/api/v1/clusters/{cluster}/nodes/delete", json={"node_ids": [node["id"]]},
                      params={"dry_run": "true"}).json()
    assert plan["refused"] is True and plan["removes"] == [
        f"node {node['id']} ({node['instance_group']}) deleted: its instance and local disks"]
    assert _operations(stack, f"cluster/{cluster}/nodes") == ops
    assert _mutations(stack) == before
