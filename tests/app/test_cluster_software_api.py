"""Cluster software through REST: HyperPod's node software update is one UpdateClusterSoftware
followed to its end, never sent twice — not even when the worker dies right after AWS
accepted it."""

from __future__ import annotations

import uuid

import pytest

from tests.app.test_clusters_api import _body, _calls, _client, _create, _last_seq


@pytest.fixture(scope="module")
def cluster(stack):
    stack.wait_idle()
    name = f"sw-{uuid.uuid4().hex[:5]}"
    assert _create(stack, _body(name))["status"] == "succeeded"
    return name


def _update(stack, name: str, body: dict | None = None):
    with stack.client() as c:
        return c.post(f"/api/v1/clusters/{name}/software-update", json=body or {})


def _software_calls(stack, name: str, since: int) -> list[dict]:
    return [c for c in _calls(stack, "sagemaker", "UpdateClusterSoftware", since)
            if c["params"]["ClusterName"] == name]


def test_the_update_is_followed_until_every_group_succeeded(stack, cluster):
    since = _last_seq(stack)
    reply = _update(stack, cluster, {"instance_groups": ["workers"]})
    assert reply.status_code == 202, reply.text
    op = stack.wait_operation(reply.json()["operation"]["id"], 120)
    assert op["status"] == "succeeded", op
    [call] = _software_calls(stack, cluster, since)
    assert call["params"]["InstanceGroups"] == [{"InstanceGroupName": "workers"}]
    described = _client(stack, "sagemaker").describe_cluster(ClusterName=cluster)
    assert described["ClusterStatus"] == "InService"
    assert {g["InstanceGroupName"]: g.get("SoftwareUpdateStatus")
            for g in described["InstanceGroups"]} == {"workers": "Succeeded"}


def test_an_unknown_group_is_refused_and_nothing_is_sent(stack, cluster):
    since = _last_seq(stack)
    reply = _update(stack, cluster, {"instance_groups": ["nope"]})
    assert reply.status_code == 422
    assert "nope" in reply.json()["error"]["message"]
    assert _software_calls(stack, cluster, since) == []
    imported_or_missing = _update(stack, "no-such-cluster")
    assert imported_or_missing.status_code == 404


def test_a_worker_killed_after_aws_accepted_the_update_never_sends_it_again(stack, cluster):
    stack.wait_idle()
    since = _last_seq(stack)
    hold = stack.sandbox.hold("sagemaker", "UpdateClusterSoftware")
    try:
        reply = _update(stack, cluster)
        assert reply.status_code == 202, reply.text
        op_id = reply.json()["operation"]["id"]
        stack.sandbox.wait_held(hold, timeout=30)  # AWS has answered; hypd has not recorded
        stack.kill_worker()
        stack.sandbox.release(hold)
        stack.start_worker()
        op = stack.wait_operation(op_id, timeout=90)
    finally:
        stack.sandbox.clear_holds()
        if stack.worker_proc.poll() is not None:
            stack.start_worker()
    assert op["status"] == "succeeded", op
    assert op["steps"][0]["attempts"] >= 2  # interrupted, then resumed by adopting
    assert len(_software_calls(stack, cluster, since)) == 1
