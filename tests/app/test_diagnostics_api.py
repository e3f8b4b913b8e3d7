"""Diagnostics through REST and MCP on the full stack, with failures injected on the sandbox:
a failed stage (an AWS refusal at the network stage), unhealthy nodes (HyperPod's health
label set as its agent sets it), NCCL/EFA/Xid/out-of-memory lines in pods' logs (pods whose
command echoes them, run by the simulator's kubelets). Each diagnosis finds the failure,
cites it, suggests the right next command — and changes nothing."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client

from mcp_server.routemap import ROUTES
from mcp_server.server import build_server
from schemas.diagnostics import DiagnosisSchema
from tests.app.jobkit import TORCHRUN, job_name, submitted, wait_state
from tests.app.test_clusters_api import ZONE
from tests.stack import wait_until

TYPE = "ml.g5.8xlarge"
HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
NAMESPACE = "train"
TIMEOUT_LINE = ("[rank1]:[E ProcessGroupNCCL.cpp:616] Watchdog caught collective operation "
                "timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE) ran for 600000 milliseconds")
EFA_LINE = "NCCL WARN NET/OFI Request error: libfabric fi_cq_readerr failed"
XID_LINE = "NVRM: Xid (PCI:0000:10:1c): 79, pid=4242, GPU has fallen off the bus."
OOM_LINE = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:5]}"


def _diagnose(stack: Any, cluster: str, kind: str, **query: Any) -> dict[str, Any]:
    """The diagnosis as a viewer reads it; nothing in AWS changes meanwhile."""
    before = stack.sandbox.counters()["by_action"]
    with stack.client("viewer") as c:
        reply = c.get(f"/api/v1/clusters/{cluster}/diagnostics/{kind}", params=query)
    assert reply.status_code == 200, reply.text
    assert stack.sandbox.counters()["by_action"] == before
    body = reply.json()
    assert DiagnosisSchema().validate(body) == {}
    return body


def _steps(diagnosis: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """Each suggestion as the MCP server hands it to an agent (its route's tool); the REST
    reply itself names no tool."""
    assert not any("tool" in s for s in diagnosis["suggestions"])
    agent = ROUTES.translate(copy.deepcopy(diagnosis))
    return [(s["step"], s["tool"], s["args"].get("node_ids") or s["args"].get("node_id")
             or s["args"].get("stage") or s["args"].get("operation_id"))
            for s in agent["suggestions"]]


def _finding(diagnosis: dict[str, Any], code: str, node_id: str | None = None) -> dict:
    found = [f for f in diagnosis["findings"] if f["code"] == code
             and (node_id is None or f["node_id"] == node_id)]
    assert len(found) == 1, (code, node_id, diagnosis["findings"])
    return found[0]


def two_node_cluster(stack: Any, prefix: str = "diag") -> dict[str, Any]:
    """A new cluster of two Running nodes, each with its Kubernetes Node."""
    stack.wait_idle()
    name = _name(prefix)
    with stack.client() as c:
        reply = c.post("/api/v1/clusters", json={
            "name": name, "availability_zone": ZONE, "instance_type": TYPE,
            "instance_count": 2})
    assert reply.status_code == 202, reply.text
    op = stack.wait_operation(reply.json()["operation"]["id"], timeout=300)
    assert op["status"] == "succeeded", op
    sm = stack.aws("sagemaker")

    def running() -> list[str]:
        nodes = sm.list_cluster_nodes(ClusterName=name)["ClusterNodeSummaries"]
        return sorted(n["InstanceId"] for n in nodes
                      if n["InstanceStatus"]["Status"] == "Running")

    wait_until(lambda: len(running()) == 2, 60, what="two Running nodes")
    kube = stack.kube(name)
    wait_until(lambda: len(kube.list_objects("v1", "Node")) == 2, 30, what="two Nodes")
    first, second = running()
    return {"name": name, "kube": kube, "nodes": (first, second),
            "node_names": (f"hyperpod-{first}", f"hyperpod-{second}")}


def delete_cluster(stack: Any, name: str) -> None:
    stack.wait_idle()
    with stack.client() as c:
        gone = c.delete(f"/api/v1/clusters/{name}")
    assert gone.status_code == 202, gone.text
    assert stack.wait_operation(gone.json()["operation"]["id"], timeout=300)["status"] == (
        "succeeded")


@pytest.fixture(scope="module")
def cluster(stack) -> Iterator[dict[str, Any]]:
    made = two_node_cluster(stack)
    yield made
    delete_cluster(stack, made["name"])


def test_a_healthy_cluster_has_no_findings(stack, cluster):
    for kind in ("creation", "node-health", "nccl"):
        diagnosis = _diagnose(stack, cluster["name"], kind)
        assert diagnosis["healthy"] is True, diagnosis
        assert diagnosis["findings"] == [] and diagnosis["suggestions"] == []
        assert diagnosis["summary"].startswith("Nothing found")
        assert all(s["read"] for s in diagnosis["sources"]), diagnosis["sources"]


def test_node_health_finds_labelled_nodes_and_suggests_reboot_then_replace(stack, cluster):
    name, kube = cluster["name"], cluster["kube"]
    (first, second), (first_node, second_node) = cluster["nodes"], cluster["node_names"]
    kube.label_node(first_node, {HEALTH_LABEL: "UnschedulablePendingReboot"})
    kube.label_node(second_node, {HEALTH_LABEL: "UnschedulablePendingReplacement"})
    try:
        diagnosis = _diagnose(stack, name, "node-health")
    finally:
        for node in (first_node, second_node):
            kube.label_node(node, {HEALTH_LABEL: "Schedulable"})
    assert diagnosis["healthy"] is False
    reboot = _finding(diagnosis, "node_unhealthy", first)
    assert reboot["remedy"] == "reboot" and reboot["severity"] == "error"
    assert {"source": "node_label", "ref": first_node,
            "text": f"{HEALTH_LABEL}=UnschedulablePendingReboot", "at": None} in reboot["evidence"]
    replace = _finding(diagnosis, "node_unhealthy", second)
    assert replace["remedy"] == "replace"
    assert any(e["text"].endswith("=UnschedulablePendingReplacement")
               for e in replace["evidence"])
    # investigate both, then reboot only the one a reboot can clear, then replace
    assert _steps(diagnosis) == [
        ("investigate", "get_node", first), ("investigate", "get_node", second),
        ("reboot", "reboot_nodes", [first]), ("replace", "replace_nodes", sorted([first, second])),
    ]
    investigate, reboot_step = diagnosis["suggestions"][0], diagnosis["suggestions"][2]
    assert investigate["kubectl"] == ["kubectl", "describe", "node", first_node]
    assert investigate["mutating"] is False and reboot_step["mutating"] is True
    assert reboot_step["rest"] == {"method": "POST",
                                   "route": "/api/v1/clusters/{cluster}/nodes/reboot",
                                   "args": {"cluster": name},
                                   "path": f"/api/v1/clusters/{name}/nodes/reboot",
                                   "body": {"node_ids": [first]}}
    # the labels are back: nothing found
    assert _diagnose(stack, name, "node-health")["healthy"] is True


def _pod(name: str, node_name: str, lines: list[str], exit_code: int) -> dict[str, Any]:
    script = "\n".join([*(f"echo {line}" for line in lines), f"exit {exit_code}"])
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"nodeName": node_name, "restartPolicy": "Never",
                     "containers": [{"name": "trainer", "image": "busybox:1.36",
                                     "command": ["sh", "-c", script]}]}}


def test_nccl_finds_failure_lines_in_pod_logs_and_names_the_nodes(stack, cluster):
    name, kube = cluster["name"], cluster["kube"]
    (first, second), (first_node, second_node) = cluster["nodes"], cluster["node_names"]
    rank0, rank1 = _name("rank0"), _name("rank1")
    kube.create_pod(_pod(rank1, first_node, ["NCCL INFO Bootstrap : Using eth0",
                                             TIMEOUT_LINE, EFA_LINE], 1))
    kube.create_pod(_pod(rank0, second_node, [XID_LINE, OOM_LINE], 1))

    def finished() -> bool:
        pods = {p["metadata"]["name"]: p for p in kube.list_objects("v1", "Pod", NAMESPACE)}
        return all((pods.get(p) or {}).get("status", {}).get("phase") == "Failed"
                   for p in (rank0, rank1))

    wait_until(finished, 60, what="both ranks failed")
    diagnosis = _diagnose(stack, name, "nccl", namespace=NAMESPACE)
    timeout = _finding(diagnosis, "nccl-timeout", first)
    assert timeout["evidence"][0] == {"source": "pod_log",
                                      "ref": f"{NAMESPACE}/{rank1}/trainer",
                                      "text": TIMEOUT_LINE, "at": None}
    assert _finding(diagnosis, "efa-error", first)["evidence"][0]["text"] == EFA_LINE
    xid = _finding(diagnosis, "xid-fatal", second)
    assert xid["remedy"] == "replace" and xid["evidence"][0]["text"] == XID_LINE
    oom = _finding(diagnosis, "oom", second)
    assert oom["remedy"] == "none" and oom["severity"] == "warning"
    assert not [f for f in diagnosis["findings"] if "Bootstrap" in str(f["evidence"])]
    # the stalled rank's node is rebooted first; the node with a fatal Xid is replaced
    assert _steps(diagnosis) == [
        ("investigate", "get_node", first), ("investigate", "get_node", second),
        ("reboot", "reboot_nodes", [first]), ("replace", "replace_nodes", sorted([first, second])),
    ]
    # another namespace has none of it
    assert _diagnose(stack, name, "nccl", namespace="elsewhere")["healthy"] is True
    for pod in (rank0, rank1):
        kube.delete_object("v1", "Pod", pod, NAMESPACE)


def test_creation_finds_the_failed_stage_and_suggests_reading_then_rerunning_it(stack):
    stack.wait_idle()
    name = _name("diagf")
    stack.sandbox.add_fault("ec2", "CreateVpc", "error", code="VpcLimitExceeded",
                            message="injected: the maximum number of VPCs has been reached",
                            status=400)
    try:
        with stack.client() as c:
            reply = c.post("/api/v1/clusters", json={
                "name": name, "availability_zone": ZONE, "instance_type": TYPE,
                "instance_count": 1})
        assert reply.status_code == 202, reply.text
        op = stack.wait_operation(reply.json()["operation"]["id"], timeout=120)
    finally:
        stack.sandbox.clear_faults()
    assert op["status"] == "failed", op
    diagnosis = _diagnose(stack, name, "creation")
    stage = _finding(diagnosis, "stage_failed")
    assert stage["stage"] == "network" and stage["remedy"] == "retry"
    assert stage["evidence"][0]["source"] == "operation"
    assert stage["evidence"][0]["ref"] == f"{op['id']} step {op['error']['step']}"
    assert "maximum number of VPCs" in " ".join(e["text"] for e in stage["evidence"])
    assert _steps(diagnosis) == [("investigate", "get_operation", op["id"]),
                                 ("retry", "run_cluster_stage", "network")]
    assert diagnosis["suggestions"][-1]["rest"]["path"] == (
        f"/api/v1/clusters/{name}/stages/network/run")
    assert {s["source"]: s["read"] for s in diagnosis["sources"]}["hyperpod_cluster"] is False
    delete_cluster(stack, name)


def test_nccl_for_one_job_cites_only_that_jobs_pods(stack, training):
    """Two jobs in one namespace: one rank of `sick` dies of an NCCL timeout (its last words,
    in the run before its restart), `well` runs clean; each job's diagnosis reads only its
    own pods."""
    name = training["name"]
    sick, well = job_name("sick"), job_name("well")
    for job in (sick, well):
        stack.sandbox.set_training(steps=2, lines_per_second=50, job=job)
    stack.sandbox.fail_training_pod(sick, after_lines=1, last_words=[TIMEOUT_LINE, EFA_LINE])
    for job in (sick, well):
        submitted(stack, name, {"name": job, **TORCHRUN})
    done = {job: wait_state(stack, name, job, "succeeded") for job in (sick, well)}
    assert done[sick]["restarts"] == 1 and done[well]["restarts"] == 0
    pod = done[sick]["pods"][0]
    node_id = pod["node"].removeprefix("hyperpod-")
    diagnosis = _diagnose(stack, name, "nccl", job=sick)
    timeout = _finding(diagnosis, "nccl-timeout", node_id)
    assert timeout["evidence"][0]["text"] == TIMEOUT_LINE
    assert timeout["evidence"][0]["ref"].startswith(f"default/{pod['name']}/")
    assert timeout["evidence"][0]["ref"].endswith(" (previous run)")  # the run that died
    assert _finding(diagnosis, "efa-error", node_id)["evidence"][0]["text"] == EFA_LINE
    assert {e["ref"].split("/")[1] for f in diagnosis["findings"]
            for e in f["evidence"] if e["source"].startswith("pod_")} == {pod["name"]}
    # the same namespace, and the other job's own diagnosis finds nothing
    assert done[sick]["namespace"] == done[well]["namespace"] == "default"
    clean = _diagnose(stack, name, "nccl", job=well)
    assert clean["healthy"] is True and clean["findings"] == [], clean["findings"]
    with stack.client("viewer") as c:
        missing = c.get(f"/api/v1/clusters/{name}/diagnostics/nccl",
                        params={"job": "no-such-job"})
        elsewhere = c.get(f"/api/v1/clusters/{name}/diagnostics/nccl",
                          params={"job": well, "namespace": "elsewhere"})
        bad = c.get(f"/api/v1/clusters/{name}/diagnostics/nccl", params={"job": "Bad_Name"})
    for reply in (missing, elsewhere):
        assert reply.status_code == 404, reply.text
        assert reply.json()["error"]["code"] == "not_found"
    assert "no-such-job" in missing.json()["error"]["message"]
    assert bad.status_code == 422 and "job" in bad.json()["error"]["details"]["fields"]


@pytest.mark.asyncio
async def test_a_viewer_diagnoses_over_mcp(stack, cluster):
    name, kube = cluster["name"], cluster["kube"]
    first, first_node = cluster["nodes"][0], cluster["node_names"][0]
    kube.label_node(first_node, {HEALTH_LABEL: "UnschedulablePendingReboot"})
    try:
        async with Client(build_server(stack.url, stack.viewer_token)) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool("diagnose_cluster",
                                            {"cluster": name, "kind": "node-health"})
            bad = await client.call_tool("diagnose_cluster", {"cluster": name, "kind": "gpu"})
    finally:
        kube.label_node(first_node, {HEALTH_LABEL: "Schedulable"})
    assert "diagnose_cluster" in names and "reboot_nodes" not in names
    assert not result.is_error, result.content[0].text
    first_action = next(s for s in result.structured_content["suggestions"]
                        if s["step"] != "investigate")
    assert (first_action["tool"], first_action["args"]["node_ids"]) == ("reboot_nodes", [first])
    assert bad.is_error

