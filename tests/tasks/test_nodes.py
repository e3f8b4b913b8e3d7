"""Node operations under the worst faults: the worker's whole process group is SIGKILLed
after AWS answered the second batch call and before hypd recorded it. The operation still
succeeds and no batch is repeated: the sandbox's call log names every node exactly once.
And AWS's per-node refusals fail the operation, named in the step's detail, with the later
batches unsent; a retry sends only the refused nodes again."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from cloud.nodes import ACTIONS
from cloud.preflight import quota_name
from tests.app.test_clusters_api import ZONE, _calls, _client, _last_seq
from tests.stack import wait_until

TYPE = "ml.g4dn.xlarge"
WORKERS = 90


@pytest.fixture(scope="module")
def cluster(stack):
    stack.wait_idle()
    stack.sandbox.set_quota(1000, quota_name=quota_name(TYPE))
    name = f"kill-n-{uuid.uuid4().hex[:4]}"
    with stack.client() as c:
        reply = c.post("/api/v1/clusters", json={"name": name, "availability_zone": ZONE,
                                                 "instance_type": TYPE,
                                                 "instance_count": WORKERS})
    assert reply.status_code == 202, reply.text
    assert stack.wait_operation(reply.json()["operation"]["id"], 300)["status"] == "succeeded"
    yield name
    # its nodes go before the quota that allowed them does, so the account is within the
    # default quotas again for the tests that run after this module in the same session
    stack.wait_idle()
    with stack.client() as c:
        gone = c.delete(f"/api/v1/clusters/{name}")
    assert gone.status_code == 202, gone.text
    assert stack.wait_operation(gone.json()["operation"]["id"], 300)["status"] == "succeeded"
    stack.sandbox.reset_quotas()


def _running(stack, cluster: str) -> list[str]:
    pages = _client(stack, "sagemaker").get_paginator("list_cluster_nodes").paginate(
        ClusterName=cluster)
    return sorted(n["InstanceId"] for p in pages for n in p["ClusterNodeSummaries"]
                  if n["InstanceStatus"]["Status"] == "Running")


def _submit(stack, cluster: str, action: str, node_ids: list[str]) -> str:
    with stack.client() as c:
        reply = c.post(f"/api/v1/clusters/{cluster}/nodes/{action}", json={"node_ids": node_ids})
    assert reply.status_code == 202, reply.text
    return reply.json()["operation"]["id"]


@pytest.mark.parametrize("action", ["reboot", "replace", "delete"])
def test_a_worker_killed_after_the_second_batch_call_repeats_no_batch(stack, cluster, action):
    stack.wait_idle()
    wait_until(lambda: len(_running(stack, cluster)) >= 60, 30, what="60 running nodes")
    nodes = _running(stack, cluster)[:60]
    operation = ACTIONS[action].operation
    since = _last_seq(stack)
    hold = stack.sandbox.hold("sagemaker", operation, count=2)
    try:
        op_id = _submit(stack, cluster, action, nodes)
        stack.sandbox.wait_held(hold, timeout=30)  # the first batch: let it through
        stack.sandbox.release(hold)
        stack.sandbox.wait_held(hold, timeout=60)  # the second: AWS acted, hypd has not recorded
        stack.kill_worker()
        stack.sandbox.release(hold)
        stack.start_worker()
        op = stack.wait_operation(op_id, timeout=90)
    finally:
        stack.sandbox.clear_holds()
        if stack.worker_proc.poll() is not None:
            stack.start_worker()
    assert op["status"] == "succeeded", op
    batches = [c["params"]["NodeIds"] for c in _calls(stack, "sagemaker", operation, since)]
    assert [len(b) for b in batches] == [25, 25, 10]
    sent = Counter(n for b in batches for n in b)
    assert set(sent) == set(nodes) and set(sent.values()) == {1}  # each node exactly once
    second = op["steps"][1]
    assert second["attempts"] == 2  # interrupted after the call, resumed once
    assert sorted(second["resources"]["adopted"]) == sorted(nodes[25:50])  # by evidence
    assert second["resources"]["done"] == []  # the answer never reached hypd
    remaining = set(_running(stack, cluster))
    if action == "reboot":
        assert set(nodes) <= remaining
    else:
        assert not set(nodes) & remaining


def test_refused_nodes_fail_the_operation_and_a_retry_resends_only_them(stack, cluster):
    stack.wait_idle()
    nodes = _running(stack, cluster)[:26]  # two batches: 25 + 1
    victim = nodes[3]  # deleted after the operation is recorded, before it runs
    sm = _client(stack, "sagemaker")
    since = _last_seq(stack)
    stack.kill_worker()  # nothing runs the operation until the node has changed under it
    try:
        op_id = _submit(stack, cluster, "reboot", nodes)
        sm.batch_delete_cluster_nodes(ClusterName=cluster, NodeIds=[victim])
    finally:
        stack.start_worker()
    op = stack.wait_operation(op_id, timeout=60)
    assert op["status"] == "failed", op
    first, second = op["steps"]
    assert first["phase"] == "failed" and second["phase"] == "pending"  # batch 2 not sent
    assert op["error"]["step"] == "batch_1"
    assert f"{victim}: InstanceIdNotFound: " in first["detail"]
    assert "1 of 25 nodes were not rebooted" in first["detail"]
    assert [f["node_id"] for f in first["resources"]["failed"]] == [victim]
    assert sorted(first["resources"]["done"]) == sorted(n for n in nodes[:25] if n != victim)
    [call] = _calls(stack, "sagemaker", "BatchRebootClusterNodes", since)
    assert call["params"]["NodeIds"] == nodes[:25]

    since = _last_seq(stack)
    with stack.client() as c:
        assert c.post(f"/api/v1/operations/{op_id}/retry").status_code == 202
    again = stack.wait_operation(op_id, timeout=60)
    assert again["status"] == "failed"  # the victim is gone: AWS refuses it again
    [call] = _calls(stack, "sagemaker", "BatchRebootClusterNodes", since)
    assert call["params"]["NodeIds"] == [victim]  # only the refused node is sent again
