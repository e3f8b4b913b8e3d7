"""Teams and the scheduler config on the full stack, through REST: the scheduler config is
created, read, updated from its version (the diff in the operation) and deleted; a team's
compute quota is created, read with its namespace and queues, patched and deleted — each
change an operation, SageMaker's own answer (boto3) agreeing; what can never work is
refused before anything is made (feature off 412, a bad name or an instance type the
cluster lacks 422 on the field, the scheduler while teams hold quotas and a team while work
runs in its namespace 409 in_use); a dry run records nothing. The local AWS checks every
SageMaker request against botocore's model (sandbox/gaps/sagemaker_governance.py)."""

from __future__ import annotations

import pytest

from tests.app.dryrunkit import calls_in_order, rehearsed
from tests.app.teamkit import (
    TEAM,
    cluster_arn,
    create_team,
    follow,
    quota,
    read,
    scheduler_url,
    team_name,
    url,
)
from tests.app.test_clusters_api import TYPE
from tests.stack import MEMBER_TOKENS, wait_until
from tests.stack import TEAM as MEMBERS_TEAM

SCHEDULER = {"priority_classes": [{"name": "inference", "weight": 90},
                                  {"name": "training", "weight": 50}], "fair_share": True}


@pytest.fixture
def cluster(governed_cluster) -> str:
    return governed_cluster["name"]


def _governance_calls(stack, since: int) -> list[dict]:
    return [c for c in stack.sandbox.calls(service="sagemaker", since=since)
            if "Quota" in c["action"] or "SchedulerConfig" in c["action"]]


def _paths(fields: dict, prefix: str = "") -> set[str]:
    """The dotted paths of a 422's fields (the schema's nest, a refutation's are dotted)."""
    found: set[str] = set()
    for key, value in fields.items():
        path = f"{prefix}{key}"
        found |= _paths(value, f"{path}.") if isinstance(value, dict) else {path}
    return found


def _seq(stack) -> int:
    calls = stack.sandbox.calls()
    return calls[-1]["seq"] if calls else 0


def test_nothing_is_asked_of_sagemaker_before_the_feature_is_on(governed_cluster):
    refused = governed_cluster["refused"]
    assert refused.status_code == 412, refused.text
    error = refused.json()["error"]
    assert error["code"] == "precondition_failed"
    assert "task_governance" in error["message"]


def test_scheduler_and_team_lifecycle(stack, cluster):
    since = _seq(stack)
    arn = cluster_arn(stack, cluster)
    with stack.client() as c:
        follow(stack, c.put(scheduler_url(cluster), json=SCHEDULER))
    found = read(stack, scheduler_url(cluster))
    assert (found["version"], found["fair_share"], found["managed"]) == (1, True, True)
    assert found["priority_classes"] == SCHEDULER["priority_classes"]
    assert found["status"] in ("Creating", "Created")
    with stack.client() as c:  # the same again: nothing sent
        again = c.put(scheduler_url(cluster), json=SCHEDULER)
    assert again.status_code == 200 and again.json()["changed"] is False, again.text

    changed = {**SCHEDULER, "fair_share": False}
    wait_until(lambda: read(stack, scheduler_url(cluster))["status"] == "Created", 30,
               what="the scheduler config created")
    with stack.client() as c:
        op = follow(stack, c.put(scheduler_url(cluster), json=changed))
    assert op["params"]["target_version"] == 1
    assert op["params"]["changes"] == {"fair_share": {"from": True, "to": False}}
    found = read(stack, scheduler_url(cluster))
    assert (found["version"], found["fair_share"]) == (2, False)
    sm = stack.aws("sagemaker")
    assert sm.describe_cluster_scheduler_config(
        ClusterSchedulerConfigId=found["id"])["SchedulerConfig"]["FairShare"] == "Disabled"

    team = team_name()
    create_team(stack, cluster, team)
    got = read(stack, url(cluster, team))
    assert got["quota"] == TEAM["quota"] and got["fair_share_weight"] == 10
    assert (got["borrow_limit_percent"], got["lend_idle"], got["may_preempt"]) == (50, True,
                                                                                   True)
    assert (got["namespace"], got["local_queue"], got["cluster_queue"]) == (
        f"hyperpod-ns-{team}", f"hyperpod-ns-{team}-localqueue",
        f"hyperpod-ns-{team}-clusterqueue")
    # the add-on makes the team's queues once SageMaker has the quota: until then the read
    # says so, then it reads Kueue's count of the team's work
    assert got["queue"]["present"] or "not made" in got["queue"]["message"]
    queue = _queue_made(stack, cluster, team)
    assert (queue["admitted_workloads"], queue["pending_workloads"]) == (0, 0)
    theirs = quota(stack, arn, team)
    assert theirs["ComputeQuotaId"] == got["compute_quota"]["id"]
    assert theirs["ComputeQuotaConfig"]["ComputeQuotaResources"] == [
        {"InstanceType": TYPE, "Count": 1}]
    listed = read(stack, url(cluster))
    assert team in [t["name"] for t in listed["items"]]
    assert listed["scheduler"]["id"] == found["id"]

    wait_until(lambda: read(stack, url(cluster, team))["state"] == "Created", 30,
               what="the quota created")
    with stack.client() as c:
        op = follow(stack, c.patch(url(cluster, team),
                                   json={"borrow_limit_percent": 0, "may_preempt": False}))
    assert op["params"]["target_version"] == 1
    assert op["params"]["changes"] == {"borrow_limit_percent": {"from": 50, "to": 0},
                                       "may_preempt": {"from": True, "to": False}}
    got = read(stack, url(cluster, team))
    assert (got["compute_quota"]["version"], got["borrow_limit_percent"],
            got["may_preempt"]) == (2, 0, False)
    theirs = quota(stack, arn, team)["ComputeQuotaConfig"]
    assert theirs["ResourceSharingConfig"] == {"Strategy": "Lend"}
    assert theirs["PreemptTeamTasks"] == "Never"

    with stack.client() as c:  # the scheduler config while a team holds a quota
        refused = c.delete(scheduler_url(cluster))
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["code"] == "in_use"
    assert team in refused.text

    with stack.client() as c:
        follow(stack, c.delete(url(cluster, team)))
    with stack.client("viewer") as c:
        assert c.get(url(cluster, team)).status_code == 404
    assert quota(stack, arn, team) is None
    with stack.client() as c:
        follow(stack, c.delete(scheduler_url(cluster)))
    with stack.client("viewer") as c:
        gone = c.get(scheduler_url(cluster))
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "not_found"

    # every request passed the local AWS's check against botocore's model; a Describe may
    # meet a quota gone between its list and it (Deleting → gone on the sandbox's clock)
    calls = _governance_calls(stack, since)
    refused = [c for c in calls if c["status"] >= 300 and not c["action"].startswith("Describe")]
    assert not refused, refused
    made = [c["action"] for c in calls if c["action"].startswith(("Create", "Update",
                                                                  "Delete"))]
    assert made == ["CreateClusterSchedulerConfig", "UpdateClusterSchedulerConfig",
                    "CreateComputeQuota", "UpdateComputeQuota", "DeleteComputeQuota",
                    "DeleteClusterSchedulerConfig"]


@pytest.mark.parametrize("body, field", [
    ({"name": "Team_A"}, "name"),
    ({"name": "-team"}, "name"),
    ({"quota": [{"instance_type": "ml.p5.48xlarge", "count": 1}]}, "quota.0.instance_type"),
    ({"quota": [{"instance_type": "ml.nope.large", "count": 1}]}, "quota.0.instance_type"),
    ({"quota": [{"instance_type": TYPE, "count": -1}]}, "quota.0.count"),
    ({"lend_idle": False}, "borrow_limit_percent"),
    ({"borrow_limit_percent": 501}, "borrow_limit_percent"),
])
def test_a_team_sagemaker_would_refuse_is_refused_on_its_field(stack, cluster, body, field):
    since = _seq(stack)
    with stack.client() as c:
        reply = c.post(url(cluster), json={"name": team_name(), **TEAM, **body})
    assert reply.status_code == 422, reply.text
    error = reply.json()["error"]
    assert error["code"] == "validation_failed"
    assert field in _paths(error["details"]["fields"]), error
    assert not [c for c in _governance_calls(stack, since) if c["action"].startswith("Create")]


def test_a_team_with_running_work_is_kept_unless_forced(stack, cluster):
    team = team_name("busy")
    create_team(stack, cluster, team)
    kube = stack.kube(cluster)
    namespace = f"hyperpod-ns-{team}"
    kube.create_pod({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "trainer", "namespace": namespace,
                                  "labels": {"kueue.x-k8s.io/queue-name":
                                             f"{namespace}-localqueue"}},
                     "spec": {"containers": [{"name": "main", "image": "busybox"}]},
                     "status": {"phase": "Running"}})
    with stack.client() as c:
        refused = c.delete(url(cluster, team))
    assert refused.status_code == 409, refused.text
    error = refused.json()["error"]
    assert error["code"] == "in_use"
    assert "trainer" in error["message"] or "trainer" in refused.text

    plan = rehearsed(stack, "DELETE", url(cluster, team), kind="team.delete")
    assert plan["refused"] is True and plan["force_allowed"] is True
    assert [d["name"] for d in plan["dependents"]] == ["trainer"]

    with stack.client() as c:
        follow(stack, c.delete(url(cluster, team), params={"force": "true"}))
    assert quota(stack, cluster_arn(stack, cluster), team) is None


def test_dry_runs_record_nothing(stack, cluster):
    team = team_name("plan")
    plan = rehearsed(stack, "POST", url(cluster), {"name": team, **TEAM}, kind="team.create")
    assert calls_in_order(plan, [("sagemaker", "CreateComputeQuota")])
    plan = rehearsed(stack, "PUT", scheduler_url(cluster), SCHEDULER, kind="scheduler.put")
    assert calls_in_order(plan, [("sagemaker", "CreateClusterSchedulerConfig")])
    with stack.client("viewer") as c:
        assert c.get(url(cluster, team)).status_code == 404
        assert c.get(scheduler_url(cluster)).status_code == 404


def test_a_patch_that_changes_nothing_sends_nothing(stack, cluster):
    team = team_name("same")
    create_team(stack, cluster, team)
    since = _seq(stack)
    with stack.client() as c:
        same = c.patch(url(cluster, team), json={"fair_share_weight": 10})
        unknown = c.patch(url(cluster, team), json={"colour": "red"})
        missing = c.patch(url(cluster, "nobody"), json={"fair_share_weight": 1})
    assert same.status_code == 200 and same.json()["changed"] is False, same.text
    assert unknown.status_code == 422, unknown.text
    assert missing.status_code == 404, missing.text
    assert not [c for c in _governance_calls(stack, since) if c["action"].startswith("Update")]

    wait_until(lambda: read(stack, url(cluster, team))["state"] == "Created", 30,
               what="the quota created")
    plan = rehearsed(stack, "PATCH", url(cluster, team), {"fair_share_weight": 20},
                     kind="team.update")
    [update] = [c for s in plan["steps"] for c in s["calls"]
                if c["operation"] == "UpdateComputeQuota"]
    assert update["params"]["TargetVersion"] == 1, update  # the version the request read
    assert update["params"]["ComputeQuotaId"] == read(stack, url(cluster, team))[
        "compute_quota"]["id"]
    plan = rehearsed(stack, "DELETE", url(cluster, team), kind="team.delete")
    assert (plan["refused"], plan["dependents"]) == (False, [])
    assert calls_in_order(plan, [("sagemaker", "DeleteComputeQuota")])
    assert read(stack, url(cluster, team))["fair_share_weight"] == 10
    with stack.client() as c:
        follow(stack, c.delete(url(cluster, team)))


def _queue_made(stack, cluster: str, team: str) -> dict:
    """The team's queue state once the add-on has made its ClusterQueue."""
    def made() -> dict | None:
        queue = read(stack, url(cluster, team))["queue"]
        return queue if queue["present"] else None

    return wait_until(made, 60, interval=0.5, what=f"the add-on to make {team}'s ClusterQueue")


def _queued_job(name: str, namespace: str, cpu: str) -> dict:
    """A batch Job for the team's LocalQueue, created suspended as Kueue's examples do."""
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"kueue.x-k8s.io/queue-name": f"{namespace}-localqueue"}},
            "spec": {"suspend": True, "backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "work", "image": "busybox:1.36",
                                "command": ["sleep", "3600"],
                                "resources": {"requests": {"cpu": cpu}}}]}}}}


def test_a_team_reads_what_kueue_says_of_its_queue(stack, cluster):
    """The team's ClusterQueue as the task-governance add-on makes it and Kueue keeps its
    status (the sandbox plays both): a Job in the team's queue within its quota is admitted,
    one asking more than the quota (and the cohort can lend) waits; the team's read counts
    both and shows the quota used."""
    from kubernetes.client import BatchV1Api

    team = team_name("queue")
    create_team(stack, cluster, team)
    _queue_made(stack, cluster, team)
    namespace = f"hyperpod-ns-{team}"
    batch = BatchV1Api(stack.kube(cluster).api)
    batch.create_namespaced_job(namespace, _queued_job("fits", namespace, "1"))
    batch.create_namespaced_job(namespace, _queued_job("too-big", namespace, "900"))
    try:
        def counted() -> dict | None:
            queue = read(stack, url(cluster, team))["queue"]
            return queue if (queue["admitted_workloads"], queue["pending_workloads"]) == (
                1, 1) else None

        queue = wait_until(counted, 60, interval=0.5, what="one job admitted and one waiting")
        cpu = [u for u in queue["usage"] if u["resource"] == "cpu"]
        assert cpu == [{"flavor": TYPE, "resource": "cpu", "total": "1", "borrowed": "0"}]
        listed = {t["name"]: t for t in read(stack, url(cluster))["items"]}
        assert listed[team]["queue"] == queue
        assert not batch.read_namespaced_job("fits", namespace).spec.suspend
        assert batch.read_namespaced_job("too-big", namespace).spec.suspend
    finally:
        with stack.client() as c:
            follow(stack, c.delete(url(cluster, team), params={"force": "true"}))


def test_a_quota_made_outside_hypd_is_read_never_changed(stack, cluster):
    """A team's quota made straight through SageMaker (no hypd tags): listed and read with
    `managed: false`; its change and its delete are refused, sending nothing."""
    team, sm = team_name("theirs"), stack.aws("sagemaker")
    made = sm.create_compute_quota(
        Name=team, ClusterArn=cluster_arn(stack, cluster),
        ComputeQuotaTarget={"TeamName": team},
        ComputeQuotaConfig={"ComputeQuotaResources": [{"InstanceType": TYPE, "Count": 1}]})
    try:
        got = read(stack, url(cluster, team))
        assert (got["managed"], got["compute_quota"]["id"]) == (False, made["ComputeQuotaId"])
        since = _seq(stack)
        with stack.client() as c:
            changed = c.patch(url(cluster, team), json={"fair_share_weight": 5})
            deleted = c.delete(url(cluster, team), params={"force": "true"})
        for reply in (changed, deleted):
            assert reply.status_code == 409, reply.text
            assert "not made by hypd" in reply.json()["error"]["message"]
        assert not [c for c in _governance_calls(stack, since)
                    if c["action"].startswith(("Update", "Delete"))]
    finally:
        sm.delete_compute_quota(ComputeQuotaId=made["ComputeQuotaId"])


def test_a_team_s_members_are_the_tokens_naming_it(stack, cluster):
    """The stack's tokens file puts two tokens in its team: its read lists them; another team
    has none."""
    create_team(stack, cluster, MEMBERS_TEAM)
    other = team_name("nobody")
    create_team(stack, cluster, other)
    try:
        assert read(stack, url(cluster, MEMBERS_TEAM))["members"] == sorted(MEMBER_TOKENS)
        listed = {t["name"]: t["members"] for t in read(stack, url(cluster))["items"]}
        assert (listed[MEMBERS_TEAM], listed[other]) == (sorted(MEMBER_TOKENS), [])
    finally:
        with stack.client() as c:
            for team in (MEMBERS_TEAM, other):
                follow(stack, c.delete(url(cluster, team)))
