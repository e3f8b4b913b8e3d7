"""Helpers for the teams tests: a cluster with task governance on (and what a team asked
before it was on got), the REST calls, and SageMaker's own view through boto3."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import httpx

from tests.app.featurekit import state, toggle
from tests.app.test_clusters_api import TYPE, _body, _create
from tests.stack import wait_until

TEAM = {"quota": [{"instance_type": TYPE, "count": 1}], "borrow_limit_percent": 50,
        "lend_idle": True, "may_preempt": True, "fair_share_weight": 10}


def team_name(prefix: str = "team") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:5]}"


def url(cluster: str, team: str = "") -> str:
    return f"/api/v1/clusters/{cluster}/teams" + (f"/{team}" if team else "")


def scheduler_url(cluster: str) -> str:
    return f"/api/v1/clusters/{cluster}/scheduler"


def governed_cluster(stack) -> dict[str, Any]:
    """One node with the task_governance feature on; the reply to a team asked for before
    the feature was on."""
    stack.wait_idle()
    name = f"gov-{uuid.uuid4().hex[:5]}"
    op = _create(stack, _body(name, instance_count=1))
    assert op["status"] == "succeeded", op
    with stack.client() as c:
        refused = c.post(url(name), json={"name": "early", **TEAM})
    op = toggle(stack, name, {"task_governance": {"enabled": True}}, timeout=180)
    assert op is not None and op["status"] == "succeeded", op
    assert state(stack, name, "task_governance") == "on"
    return {"name": name, "refused": refused}


def read_until(read: Callable[[], dict[str, Any]], check: Callable[[dict[str, Any]], Any],
               what: str, say: Callable[[dict[str, Any]], str], timeout: float = 90
               ) -> dict[str, Any]:
    """`read()` again until `check` passes on it; a timeout says what the last read was
    (`say`)."""
    last: list[dict[str, Any]] = []

    def there() -> dict[str, Any] | None:
        last[:] = [read()]
        return last[0] if check(last[0]) else None

    try:
        return wait_until(there, timeout, interval=0.3, what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; {say(last[0]) if last else 'never read'}") from None


def follow(stack, reply: httpx.Response, timeout: float = 120) -> dict[str, Any]:
    assert reply.status_code == 202, reply.text
    op = stack.wait_operation(reply.json()["operation"]["id"], timeout)
    assert op["status"] == "succeeded", op
    return op


def create_team(stack, cluster: str, name: str, **extra: Any) -> dict[str, Any]:
    with stack.client() as c:
        reply = c.post(url(cluster), json={"name": name, **TEAM, **extra})
    return follow(stack, reply)


def read(stack, path: str) -> dict[str, Any]:
    with stack.client("viewer") as c:
        reply = c.get(path)
    assert reply.status_code == 200, reply.text
    return reply.json()


def quota(stack, cluster_arn: str, team: str) -> dict[str, Any] | None:
    """SageMaker's own answer for the team's quota (boto3 against the local AWS)."""
    sm = stack.aws("sagemaker")
    for q in sm.list_compute_quotas(ClusterArn=cluster_arn)["ComputeQuotaSummaries"]:
        if q["ComputeQuotaTarget"]["TeamName"] == team:
            return sm.describe_compute_quota(ComputeQuotaId=q["ComputeQuotaId"])
    return None


def cluster_arn(stack, cluster: str) -> str:
    return stack.aws("sagemaker").describe_cluster(ClusterName=cluster)["ClusterArn"]


def running_job(stack, cluster: str, prefix: str, cpu: int) -> dict[str, Any]:
    """A new team of the cluster running one Job that Kueue admits and that runs until it is
    deleted (its pod asks `cpu` vCPUs): {team, namespace, batch}. The caller deletes the
    team (`force`)."""
    from kubernetes.client import BatchV1Api

    from tests.app.test_teams_api import _queue_made, _queued_job

    team = team_name(prefix)
    create_team(stack, cluster, team)
    _queue_made(stack, cluster, team)
    namespace = f"hyperpod-ns-{team}"
    job = _queued_job("work", namespace, str(cpu))
    job["spec"]["template"]["spec"]["containers"][0]["command"] = ["sleep", "infinity"]
    batch = BatchV1Api(stack.kube(cluster).api)
    batch.create_namespaced_job(namespace, job)  # the sandbox's clock runs sleeps fast
    return {"team": team, "namespace": namespace, "batch": batch}
