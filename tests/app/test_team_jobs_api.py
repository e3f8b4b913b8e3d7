"""Work through the teams' queues on the full stack, through REST: two teams with a quota of
one GPU node each on a two-node cluster. Team B's two-node job borrows A's idle node; A's
one-node job takes it back, preempting B's (Kueue's reclamation within the cohort, played by
the sandbox's Kueue); both jobs' reads say so. A member of B submits for B only and cannot
change A's job, nor anything but its team's work. What a job names that the cluster's task
governance refutes (a team it lacks, another namespace, a priority its scheduler config
lacks, no team on a shared cluster) is refused on its field before anything is made."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.app.featurekit import toggle
from tests.app.jobkit import TORCHRUN, get_job, job_name
from tests.app.teamkit import TEAM, follow, read_until, scheduler_url, url
from tests.app.test_clusters_api import _body, _create
from tests.stack import TEAM as MEMBERS_TEAM
from tests.stack import wait_until

SCHEDULER = {"priority_classes": [{"name": "urgent", "weight": 90},
                                  {"name": "training", "weight": 50}], "fair_share": False}
LENDER = "lender"
BORROWER = MEMBERS_TEAM  # the stack's member tokens (ana: operator, ben: viewer) are its
GPU_JOB = {**TORCHRUN, "gpus_per_node": 1}


@pytest.fixture(scope="module")
def shared(stack) -> str:
    return shared_cluster(stack)


def shared_cluster(stack) -> str:
    """A two-node GPU cluster with the training operator and task governance on, a scheduler
    config, and two teams of one node each that lend what they leave idle and may borrow
    as much again (the dashboard's test makes its own the same way)."""
    stack.wait_idle()
    name = f"share-{uuid.uuid4().hex[:5]}"
    op = _create(stack, _body(name))
    assert op["status"] == "succeeded", op
    for feature in ("training_operator", "task_governance"):
        op = toggle(stack, name, {feature: {"enabled": True}}, timeout=180)
        assert op is not None and op["status"] == "succeeded", op
    with stack.client() as c:
        follow(stack, c.put(scheduler_url(name), json=SCHEDULER))
        for team in (LENDER, BORROWER):
            follow(stack, c.post(url(name), json={**TEAM, "name": team,
                                                  "borrow_limit_percent": 100}))
    wait_until(lambda: all(_team(stack, name, t)["queue"]["present"]
                           for t in (LENDER, BORROWER)),
               90, interval=0.5, what="the add-on to make both teams' queues")
    return name


def _team(stack, cluster: str, team: str) -> dict[str, Any]:
    with stack.client("viewer") as c:
        reply = c.get(url(cluster, team))
    assert reply.status_code == 200, reply.text
    return reply.json()


def _submit(stack, cluster: str, body: dict[str, Any], token: str = "operator"):
    with stack.client(token) as c:
        return c.post(f"/api/v1/clusters/{cluster}/jobs", json=body)


def _submitted(stack, cluster: str, body: dict[str, Any], token: str = "operator"
               ) -> dict[str, Any]:
    reply = _submit(stack, cluster, body, token)
    assert reply.status_code == 202, reply.text
    op = stack.wait_operation(reply.json()["operation"]["id"])
    assert op["status"] == "succeeded", op
    return get_job(stack, cluster, body["name"])


def _queue_state(stack, cluster: str, job: str, state: str, timeout: float = 90
                 ) -> dict[str, Any]:
    return read_until(lambda: get_job(stack, cluster, job),
                      lambda j: (j["queue"] or {}).get("state") == state,
                      f"job {job} {state} in its queue",
                      lambda j: f"it reads {j['queue']}, events {j['events']}", timeout)


def _delete(stack, cluster: str, job: str, token: str = "operator", **params: str):
    with stack.client(token) as c:
        return c.delete(f"/api/v1/clusters/{cluster}/jobs/{job}", params=params)


def _field_refusal(reply, field: str, *words: str) -> None:
    assert reply.status_code == 422, reply.text
    error = reply.json()["error"]
    assert error["code"] == "validation_failed"
    assert field in error["details"]["fields"], error
    said = str(error["details"]["fields"][field])
    for word in words:
        assert word in said, said


def test_a_borrower_is_preempted_when_the_lender_needs_its_node_back(stack, shared):
    """B's two-node job borrows A's idle node and runs; A's one-node job reclaims it: B's
    job is preempted (suspended, its pods gone) and reads `preempted` by A's job, A's job
    is admitted within its own quota, runs, and names the job it preempted. A member of B
    can neither delete A's job nor submit for A, and may delete B's own."""
    borrower, lender = job_name("wide"), job_name("narrow")
    for job in (borrower, lender):  # both train until deleted
        stack.sandbox.set_training(steps=100000, lines_per_second=1, job=job)
    read = _submitted(stack, shared, {**GPU_JOB, "name": borrower, "nodes": 2,
                                      "priority": "training"}, token="ana")
    assert (read["team"], read["priority"], read["namespace"]) == (
        BORROWER, "training", f"hyperpod-ns-{BORROWER}")
    assert read["queue"]["local_queue"] == f"hyperpod-ns-{BORROWER}-localqueue"
    read = _queue_state(stack, shared, borrower, "admitted")
    assert read["queue"]["borrowing"] is True, read["queue"]
    assert read["queue"]["cluster_queue"] == f"hyperpod-ns-{BORROWER}-clusterqueue"
    assert read["queue"]["priority"] == 50  # the class's weight, as its WorkloadPriorityClass
    wait_until(lambda: get_job(stack, shared, borrower)["state"] == "running", 90,
               interval=0.3, what="the borrower's job to run on both nodes")

    read = _submitted(stack, shared, {**GPU_JOB, "name": lender, "team": LENDER})
    assert read["team"] == LENDER and read["priority"] is None
    preempted = _queue_state(stack, shared, borrower, "preempted")
    by = preempted["queue"]["preempted_by"]
    assert (by["job"], by["team"], by["reason"]) == (lender, LENDER, "InCohortReclamation")
    assert "Preempted to accommodate a workload" in preempted["queue"]["message"]
    admitted = _queue_state(stack, shared, lender, "admitted")
    assert admitted["queue"]["borrowing"] is False
    assert [(p["job"], p["team"]) for p in admitted["queue"]["preempted"]] == [
        (borrower, BORROWER)]
    wait_until(lambda: get_job(stack, shared, lender)["state"] == "running", 90,
               interval=0.3, what="the lender's job to run on its own node")
    assert wait_until(lambda: not get_job(stack, shared, borrower)["pods"] or None, 60,
                      interval=0.3, what="the preempted job's pods to go")
    waiting = get_job(stack, shared, borrower)
    assert waiting["state"] == "pending" and waiting["queue"]["state"] == "preempted"
    listed = {j["name"]: j for j in _list(stack, shared)}
    assert listed[borrower]["queue"]["preempted_by"]["job"] == lender

    refused = _delete(stack, shared, lender, token="ana", force="true")
    assert refused.status_code == 403, refused.text
    assert refused.json()["error"]["code"] == "forbidden"
    assert f"team {LENDER}" in refused.json()["error"]["message"]
    refused = _submit(stack, shared, {**GPU_JOB, "name": job_name("sneak"), "team": LENDER},
                      token="ana")
    assert refused.status_code == 403, refused.text
    assert get_job(stack, shared, lender)["state"] == "running"

    with stack.client("ana") as c:
        follow(stack, c.delete(f"/api/v1/clusters/{shared}/jobs/{borrower}",
                               params={"force": "true"}))
    with stack.client() as c:
        follow(stack, c.delete(f"/api/v1/clusters/{shared}/jobs/{lender}",
                               params={"force": "true"}))


def _list(stack, cluster: str) -> list[dict[str, Any]]:
    with stack.client("viewer") as c:
        reply = c.get(f"/api/v1/clusters/{cluster}/jobs")
    assert reply.status_code == 200, reply.text
    return reply.json()["items"]


def test_a_member_changes_only_its_team_s_work(stack, shared):
    """ana's operator token is a member's: cluster-wide changes are refused (403) before
    anything is asked of AWS, as is a scheduler change; a viewer member stays a viewer."""
    with stack.client("ana") as c:
        for reply in (c.put(scheduler_url(shared), json=SCHEDULER),
                      c.post(url(shared), json={**TEAM, "name": "mine"}),
                      c.delete(f"/api/v1/clusters/{shared}")):
            assert reply.status_code == 403, reply.text
            message = reply.json()["error"]["message"]
            assert f"member of team {MEMBERS_TEAM}" in message, message
        dry = c.delete(f"/api/v1/clusters/{shared}", params={"dry_run": "true"})
    assert dry.status_code == 200, dry.text  # changes nothing: a member may look
    refused = _submit(stack, shared, {**GPU_JOB, "name": job_name("ben")}, token="ben")
    assert refused.status_code == 403 and "viewer" in refused.json()["error"]["message"]


@pytest.mark.parametrize(("body", "field", "words"), [
    ({}, "team", (LENDER, BORROWER, "name the team")),
    ({"team": "nobody"}, "team", ("no team 'nobody'", LENDER)),
    ({"team": LENDER, "namespace": "default"}, "namespace", (f"hyperpod-ns-{LENDER}",)),
    ({"team": LENDER, "priority": "lowest"}, "priority", ("urgent", "training")),
])
def test_what_task_governance_refutes_is_refused_on_its_field(stack, shared, body, field,
                                                                words):
    name = job_name("refused")
    reply = _submit(stack, shared, {**GPU_JOB, "name": name, **body})
    _field_refusal(reply, field, *words)
    with stack.client("viewer") as c:
        assert c.get(f"/api/v1/clusters/{shared}/jobs/{name}").status_code == 404


def test_a_team_s_rayjob_goes_through_its_queue_too(stack, shared):
    """A verl job (a RayJob) for a team: Kueue makes its Workload (rayjob-…), admits it
    within the team's quota, and frees the quota when it ends."""
    name = job_name("rl")
    stack.sandbox.set_training(steps=3, job=name)
    read = _submitted(stack, shared, {"name": name, "recipe": "verl", "team": LENDER,
                                      "priority": "urgent", "image": "verlai/verl:latest",
                                      "nodes": 2, "gpus_per_node": 1,
                                      "config": "/s3/rl/ppo.yaml"})
    assert (read["kind"], read["team"], read["priority"]) == ("RayJob", LENDER, "urgent")
    finished = _queue_state(stack, shared, name, "finished")
    assert finished["queue"]["workload"].startswith(f"rayjob-{name}-")
    assert finished["queue"]["priority"] == 90
    assert get_job(stack, shared, name)["state"] == "succeeded"
    with stack.client() as c:
        follow(stack, c.delete(f"/api/v1/clusters/{shared}/jobs/{name}"))


def test_a_member_follows_up_only_its_team_s_job_operations(stack, shared):
    """Cancel and retry are team work for a member only on its team's job operations: the
    lender's job submission and the cluster's create are refused (403) before anything
    happens; its own job's submission gets past the check (here: already over, 409)."""
    own, other = job_name("mine"), job_name("theirs")
    for job in (own, other):
        stack.sandbox.set_training(steps=1, job=job)
    ops = {}
    for job, token, extra in ((own, "ana", {}), (other, "operator", {"team": LENDER})):
        reply = _submit(stack, shared, {**GPU_JOB, "name": job, **extra}, token)
        assert reply.status_code == 202, reply.text
        ops[job] = stack.wait_operation(reply.json()["operation"]["id"])["id"]
    with stack.client() as c:
        created = [o["id"] for o in c.get("/api/v1/operations", params={
            "kind": "cluster.create", "target": f"cluster/{shared}"}).json()["items"]]
    assert created
    with stack.client("ana") as c:
        for op_id in (ops[other], created[0]):
            for action in ("cancel", "retry"):
                refused = c.post(f"/api/v1/operations/{op_id}/{action}")
                assert refused.status_code == 403, refused.text
                assert f"member of team {BORROWER}" in refused.json()["error"]["message"]
        mine = c.post(f"/api/v1/operations/{ops[own]}/cancel")
    assert mine.status_code == 409, mine.text  # past the member's check: it is over
    with stack.client() as c:
        for job in (own, other):
            follow(stack, c.delete(f"/api/v1/clusters/{shared}/jobs/{job}",
                                   params={"force": "true"}))
