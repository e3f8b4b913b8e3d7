"""The worst moment to die while making a team: the worker's whole process group is
SIGKILLed after SageMaker answered CreateComputeQuota and before hypd recorded the quota's
id. CreateComputeQuota takes no client token, so the step run again must find the quota by
the team's name and adopt it (its tags are hypd's for this cluster): the team has one quota,
created once by the local AWS's counters."""

from __future__ import annotations

import pytest

from tests.app.teamkit import TEAM, cluster_arn, follow, quota, read, team_name, url


@pytest.fixture
def cluster(governed_cluster) -> str:
    return governed_cluster["name"]


def _quotas(stack, arn: str, team: str) -> list[dict]:
    found = stack.aws("sagemaker").list_compute_quotas(ClusterArn=arn)["ComputeQuotaSummaries"]
    return [q for q in found if q["ComputeQuotaTarget"]["TeamName"] == team]


def test_a_worker_killed_mid_team_create_makes_one_quota(stack, cluster):
    team, arn = team_name("once"), cluster_arn(stack, cluster)
    before = stack.sandbox.counters()["by_action"].get("sagemaker:CreateComputeQuota", 0)
    seen: dict = {}

    def sagemaker_has_it() -> None:  # hypd has not heard it yet
        seen["quotas"] = _quotas(stack, arn, team)
        assert len(seen["quotas"]) == 1

    def submit():
        with stack.client() as c:
            return c.post(url(cluster), json={"name": team, **TEAM})

    op = stack.killed_once_answered("sagemaker", "CreateComputeQuota", submit,
                                    while_held=sagemaker_has_it)
    assert op["status"] == "succeeded", op
    [step] = op["steps"]
    assert step["attempts"] >= 2, step  # interrupted, then resumed by adopting
    assert step["resources"].get("adopted") is True, step
    [made] = _quotas(stack, arn, team)
    assert made["ComputeQuotaId"] == seen["quotas"][0]["ComputeQuotaId"]
    after = stack.sandbox.counters()["by_action"].get("sagemaker:CreateComputeQuota", 0)
    assert after - before == 1
    assert read(stack, url(cluster, team))["compute_quota"]["id"] == made["ComputeQuotaId"]
    assert quota(stack, arn, team)["ComputeQuotaTarget"]["TeamName"] == team
    with stack.client() as c:  # the cluster is shared: its scheduler config's tests count teams
        follow(stack, c.delete(url(cluster, team)))


