"""Helpers for the training job tests: a spot GPU cluster with the training operator on (and
the refusal a job got before it was), the REST calls, and waiting on a job's state."""

from __future__ import annotations

import uuid
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


def get_job(stack, cluster: str, job: str, token: str = "viewer") -> dict[str, Any]:
    with stack.client(token) as c:
        reply = c.get(f"/api/v1/clusters/{cluster}/jobs/{job}")
    assert reply.status_code == 200, reply.text
    return reply.json()


def wait_state(stack, cluster: str, job: str, *states: str, timeout: float = 60
               ) -> dict[str, Any]:
    return wait_until(lambda: (lambda j: j if j["state"] in states else None)(
        get_job(stack, cluster, job)), timeout, interval=0.2, what=f"job {job} {states}")
