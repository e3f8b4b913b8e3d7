"""The worst moment to die while hypd makes a cluster's MLflow tracking server: the worker's
whole process group is SIGKILLed after SageMaker accepted CreateMlflowTrackingServer (which
has no client token) and before hypd recorded it. The operation still finishes, adopting the
tracking server by its name and tags: SageMaker was asked once. Long form (-m slow): a worker
restart costs about ten seconds, and the default run covers the adoption path without it
(tests/cloud/test_mlflow.py)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


def _created(stack, since: int) -> list[dict]:
    return [c for c in stack.sandbox.calls(service="sagemaker",
                                           action="CreateMlflowTrackingServer", since=since)
            if 200 <= c["status"] < 300]


def test_a_worker_killed_after_the_create_was_accepted_still_finishes_it_once(stack,
                                                                              training):
    cluster = training["name"]
    stack.wait_idle()
    since = stack.sandbox.calls()[-1]["seq"]

    def put():
        with stack.client() as c:
            return c.put(f"/api/v1/clusters/{cluster}/mlflow", json={})

    op = stack.killed_once_answered("sagemaker", "CreateMlflowTrackingServer", put)
    try:
        assert op["status"] == "succeeded", op
        killed = next(s for s in op["steps"] if s["name"] == "tracking_server")
        assert killed["attempts"] >= 2, killed  # interrupted, then resumed by adopting
        assert len(_created(stack, since)) == 1
        assert killed["resources"]["arn"].endswith(f"mlflow-tracking-server/hypd-{cluster}")
    finally:
        with stack.client() as c:
            reply = c.delete(f"/api/v1/clusters/{cluster}/mlflow")
        assert reply.status_code == 202, reply.text
        assert stack.wait_operation(reply.json()["operation"]["id"], 120)[
            "status"] == "succeeded"
