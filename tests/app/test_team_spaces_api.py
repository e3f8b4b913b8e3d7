"""Dev spaces through the teams' queues on the full stack, through REST: the two teams of one
GPU node each (tests/app/test_team_jobs_api.py's cluster, with the spaces feature on). A
member's space runs for its team: its Workspace is made in the team's namespace with the
team's queue label, the operator copies it to the editor's pod and Kueue admits that pod
through the team's queue (the sandbox's Kueue: the pod is gated until then). A space for which
no quota is left waits in its queue, gated, and its read says so; it borrows a lender's idle
node once there is one, and is preempted when the lender takes it back (its pod deleted, the
next one queued again). A member changes only its team's spaces. What a space names that the
cluster's task governance refutes is refused on its field before anything is made."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from cloud import spaces
from tests.app.featurekit import toggle
from tests.app.teamkit import follow, read_until
from tests.app.test_team_jobs_api import BORROWER, LENDER, _field_refusal, shared_cluster

SPACE = {"instance_group": "workers", "cpu": 2, "memory_gib": 8, "gpus": 1, "home_gib": 20,
         "idle_shutdown_minutes": None}  # one GPU: a team's whole quota (one g5.8xlarge)
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


@pytest.fixture(scope="module")
def shared(stack) -> str:
    return team_spaces_cluster(stack)


def team_spaces_cluster(stack) -> str:
    """Two teams of one g5.8xlarge each that lend what they leave idle and may borrow as much
    again, a scheduler config (urgent 90, training 50), and the spaces feature on (the
    dashboard's test makes its own the same way)."""
    name = shared_cluster(stack)
    op = toggle(stack, name, {"spaces": {"enabled": True}}, timeout=180)
    assert op is not None and op["status"] == "succeeded", op
    return name


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:4]}"


def _url(cluster: str, name: str = "") -> str:
    return f"/api/v1/clusters/{cluster}/spaces" + (f"/{name}" if name else "")


def _create(stack, cluster: str, name: str, token: str = "operator", **extra: Any
            ) -> httpx.Response:
    with stack.client(token) as c:
        return c.post(_url(cluster), json={"name": name, **SPACE, **extra})


def _read(stack, cluster: str, name: str) -> dict[str, Any]:
    with stack.client("viewer") as c:
        reply = c.get(_url(cluster, name))
    assert reply.status_code == 200, reply.text
    return reply.json()


def _until(stack, cluster: str, name: str, check, what: str) -> dict[str, Any]:
    return read_until(lambda: _read(stack, cluster, name), check, f"space {name} {what}",
                      lambda s: f"it reads {s['state']} {s['message']!r}, queue {s['queue']}, "
                                f"waiting {s['waiting']}")


def _delete(stack, cluster: str, name: str, token: str = "operator", **params: str):
    with stack.client(token) as c:
        return c.delete(_url(cluster, name), params=params)


def _forbidden_to_a_member(reply: httpx.Response) -> None:
    assert reply.status_code == 403, reply.text
    error = reply.json()["error"]
    assert error["code"] == "forbidden"
    assert f"member of team {BORROWER}" in error["message"], error


def test_a_team_s_spaces_queue_wait_borrow_and_are_preempted(stack, shared):
    mine, theirs, more, back = (_name(p) for p in ("mine", "theirs", "more", "back"))
    # ana, a member of B, names no team: her space runs for B, through B's queue
    follow(stack, _create(stack, shared, mine, token="ana"))
    read = _read(stack, shared, mine)
    namespace = f"hyperpod-ns-{BORROWER}"
    assert (read["team"], read["priority"], read["namespace"], read["state"]) == (
        BORROWER, None, namespace, "running")
    queue = read["queue"]
    assert (queue["state"], queue["local_queue"], queue["cluster_queue"], queue["borrowing"]
            ) == ("admitted", f"{namespace}-localqueue", f"{namespace}-clusterqueue", False)
    [pod] = read["pods"]
    assert queue["workload"].startswith(f"pod-{pod['name']}-")  # Kueue queued its pod
    api = stack.kube(shared).api
    ws = spaces.find(api, mine)
    assert ws["metadata"]["labels"][QUEUE_LABEL] == f"{namespace}-localqueue"
    [live] = spaces.pods(api, mine, namespace)  # the operator copied the label to its pod
    assert live["metadata"]["labels"][QUEUE_LABEL] == f"{namespace}-localqueue"
    assert live["metadata"]["labels"]["kueue.x-k8s.io/managed"] == "true"
    with stack.client("viewer") as c:
        listed = {s["name"]: s for s in c.get(_url(shared)).json()["items"]}
    assert (listed[mine]["team"], listed[mine]["queue"]["state"]) == (BORROWER, "admitted")

    # the lender's space, urgent, within its own quota: the cluster's two GPUs are taken
    follow(stack, _create(stack, shared, theirs, team=LENDER, priority="urgent"))
    read = _read(stack, shared, theirs)
    assert (read["team"], read["priority"], read["queue"]["priority"]) == (LENDER, "urgent", 90)

    # B's second space: no quota left anywhere, so it waits in B's queue, its pod gated
    reply = _create(stack, shared, more, token="ana")
    assert reply.status_code == 202, reply.text
    waiting = _until(stack, shared, more, lambda s: (s["queue"] or {}).get("state") == "waiting"
                     and s["waiting"], "waiting in its queue")
    assert waiting["state"] == "starting"
    assert waiting["message"].startswith(f"waiting in team {BORROWER}'s queue: ")
    assert "insufficient unused quota" in waiting["queue"]["message"]
    assert waiting["waiting"][0]["reason"] == "SchedulingGated"

    # a member of B changes none of A's spaces, and creates none for A
    with stack.client("ana") as c:
        _forbidden_to_a_member(c.post(_url(shared, theirs) + "/stop"))
        _forbidden_to_a_member(c.patch(_url(shared, theirs), json={"cpu": 4}))
    _forbidden_to_a_member(_delete(stack, shared, theirs, token="ana", force="true"))
    _forbidden_to_a_member(_create(stack, shared, _name("sneak"), token="ana", team=LENDER))
    assert _read(stack, shared, theirs)["state"] == "running"

    # A's node goes idle: B's waiting space borrows it and its create finishes
    follow(stack, _delete(stack, shared, theirs))
    stack.wait_operation(reply.json()["operation"]["id"], 120)
    read = _until(stack, shared, more, lambda s: s["state"] == "running", "running")
    assert (read["queue"]["state"], read["queue"]["borrowing"]) == ("admitted", True)
    before = {p["name"] for p in read["pods"]}

    # A takes its node back: B's borrowed space is preempted — its pod deleted, the next one
    # gated in B's queue again — and A's space runs
    follow(stack, _create(stack, shared, back, team=LENDER))
    again = _until(stack, shared, more, lambda s: s["state"] == "starting"
                   and (s["queue"] or {}).get("state") == "waiting"
                   and {p["name"] for p in s["pods"]} - before, "preempted and queued again")
    assert not {p["name"] for p in again["pods"]} & before
    assert _read(stack, shared, back)["queue"]["state"] == "admitted"

    # B's spaces are its work: deleting the team would take their queue (the dry run says)
    with stack.client() as c:
        plan = c.delete(f"/api/v1/clusters/{shared}/teams/{BORROWER}",
                        params={"dry_run": "true"})
    assert plan.status_code == 200, plan.text
    found = {(d["kind"], d["name"]) for d in plan.json()["dependents"]}
    assert {("space", mine), ("space", more)} <= found, found

    with stack.client("ana") as c:
        for name in (mine, more):
            follow(stack, c.delete(_url(shared, name)))
    follow(stack, _delete(stack, shared, back))


@pytest.mark.parametrize(("body", "field", "words"), [
    ({}, "team", (LENDER, BORROWER, "name the team")),
    ({"team": "nobody"}, "team", ("no team 'nobody'", LENDER)),
    ({"priority": "urgent"}, "priority", ("name the team too",)),
    ({"team": LENDER, "priority": "lowest"}, "priority", ("urgent", "training")),
])
def test_what_task_governance_refutes_is_refused_on_its_field(stack, shared, body, field,
                                                                words):
    name = _name("refused")
    _field_refusal(_create(stack, shared, name, **body), field, *words)
    with stack.client("viewer") as c:
        assert c.get(_url(shared, name)).status_code == 404
