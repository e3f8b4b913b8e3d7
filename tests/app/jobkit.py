"""Helpers for the training job tests: a spot GPU cluster with the training operator on (and
the refusal a job got before it was), the REST calls, waiting on a job's state, and an
endpoint that waits for GPUs a job holds."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from tests.app.featurekit import toggle
from tests.app.test_clusters_api import _body, _create
from tests.stack import wait_until

TORCHRUN = {"recipe": "torchrun", "image": "repo/train:1", "script": "/s3/code/train.py",
            "gpus_per_node": 1}


def job_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:5]}"


def training_cluster(stack) -> dict[str, Any]:
    """Two spot g5.8xlarge nodes (one GPU each); a job submitted before the training operator
    was turned on, and its reply."""
    stack.wait_idle()
    name = f"train-{uuid.uuid4().hex[:5]}"
    op = _create(stack, _body(name, capacity_type="spot"))
    assert op["status"] == "succeeded", op
    refused = submit(stack, name, {"name": "early", **TORCHRUN})
    done = toggle(stack, name, {"training_operator": {"enabled": True}})
    assert done is not None and done["status"] == "succeeded", done
    return {"name": name, "refused": refused}


def submit(stack, cluster: str, body: dict[str, Any], **headers: str):
    with stack.client() as c:
        return c.post(f"/api/v1/clusters/{cluster}/jobs", json=body, headers=headers)


def submitted(stack, cluster: str, body: dict[str, Any], **headers: str) -> dict[str, Any]:
    """Submit a job and follow its operation to the end, the way a client does: 202 naming
    the job's read, the operation succeeded; returns the job as its read then shows it."""
    reply = submit(stack, cluster, body, **headers)
    assert reply.status_code == 202, reply.text
    answer = reply.json()
    assert answer["operation"]["kind"] == "job.create"
    assert answer["resource_url"] == f"/api/v1/clusters/{cluster}/jobs/{body['name']}"
    op = stack.wait_operation(answer["operation"]["id"])
    assert op["status"] == "succeeded", op
    return get_job(stack, cluster, body["name"])


def deleted(stack, cluster: str, job: str, **params: str) -> dict[str, Any]:
    """Delete a job and follow its operation to the end; returns the operation."""
    with stack.client() as c:
        reply = c.delete(f"/api/v1/clusters/{cluster}/jobs/{job}", params=params)
    assert reply.status_code == 202, reply.text
    assert reply.json()["operation"]["kind"] == "job.delete"
    op = stack.wait_operation(reply.json()["operation"]["id"])
    assert op["status"] == "succeeded", op
    return op


def get_job(stack, cluster: str, job: str, token: str = "viewer") -> dict[str, Any]:
    with stack.client(token) as c:
        reply = c.get(f"/api/v1/clusters/{cluster}/jobs/{job}")
    assert reply.status_code == 200, reply.text
    return reply.json()


def wait_state(stack, cluster: str, job: str, *states: str, timeout: float = 60
               ) -> dict[str, Any]:
    return wait_until(lambda: (lambda j: j if j["state"] in states else None)(
        get_job(stack, cluster, job)), timeout, interval=0.2, what=f"job {job} {states}")


def an_endpoint_waits_too(stack, cluster: str,
                          meanwhile: Callable[[], None] | None = None) -> None:
    """While another job holds the GPUs: an endpoint that fits but finds them taken — its
    read and its operation's step say why its server waits (`meanwhile` looks too);
    cancelled and deleted, it leaves nothing behind."""
    from tests.app.test_endpoints_api import _upload_model

    _upload_model(stack, cluster, "tiny")
    with stack.client() as c:
        reply = c.post(f"/api/v1/clusters/{cluster}/endpoints", json={
            "name": "queued", "kind": "vllm", "model": "tiny", "gpus": 1})
    assert reply.status_code == 202, reply.text
    op_id = reply.json()["operation"]["id"]

    def read() -> dict | None:
        with stack.client("viewer") as c:
            view = c.get(f"/api/v1/clusters/{cluster}/endpoints/queued").json()
        return view if view.get("waiting") else None

    view = wait_until(read, 30, interval=0.2, what="the endpoint's reason")
    [server] = view["waiting"]
    assert server["pod"].startswith("queued-") and server["reason"] == "Unschedulable"
    assert server["message"].startswith("0/2 nodes are available: 2 Insufficient "
                                        "nvidia.com/gpu.")
    assert view["state"] == "creating"
    assert view["message"] == f"1 of its servers wait for capacity: {server['message']}"

    def deploy_step() -> dict | None:
        with stack.client("viewer") as c:
            steps = c.get(f"/api/v1/operations/{op_id}").json()["steps"]
        step = next(s for s in steps if s["name"] == "deploy")
        return step if "wait for capacity" in (step["detail"] or "") else None

    step = wait_until(deploy_step, 30, interval=0.2, what="the deploy step's reason")
    assert step["detail"] == (
        f"queued: 0 of 1 servers available; 1 wait for capacity: {server['message']}")
    if meanwhile is not None:
        meanwhile()
    with stack.client() as c:
        assert c.post(f"/api/v1/operations/{op_id}/cancel").status_code == 202
        assert stack.wait_operation(op_id)["status"] == "cancelled"
        gone = c.delete(f"/api/v1/clusters/{cluster}/endpoints/queued")
    assert stack.wait_operation(gone.json()["operation"]["id"])["status"] == "succeeded"
