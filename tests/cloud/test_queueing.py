"""A team's job in its queue read from Kueue's Workload conditions, as Kueue v0.19.2 writes
them (the messages are Kueue's own)."""

from __future__ import annotations

from typing import Any

from cloud import queueing

QUEUE = "hyperpod-ns-b-localqueue"
JOB_B = {"metadata": {"name": "wide", "namespace": "hyperpod-ns-b", "uid": "uid-b",
                      "labels": {"kueue.x-k8s.io/queue-name": QUEUE}}}
JOB_A = {"metadata": {"name": "narrow", "namespace": "hyperpod-ns-a", "uid": "uid-a",
                      "labels": {"kueue.x-k8s.io/queue-name": "hyperpod-ns-a-localqueue"}}}
AT = "2026-12-04T10:00:00Z"
PREEMPTED = ("Preempted to accommodate a workload (UID: wl-a, JobUID: uid-a) due to "
             "reclamation within the cohort; preemptor path: /hyperpod-cohort/"
             "hyperpod-ns-a-clusterqueue; preemptee path: /hyperpod-cohort/"
             "hyperpod-ns-b-clusterqueue")


def _workload(*conditions: tuple[str, str, str, str], admission: bool = False
              ) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": [
        {"type": t, "status": s, "reason": r, "message": m, "lastTransitionTime": AT}
        for t, s, r, m in conditions]}
    if admission:
        status["admission"] = {"clusterQueue": "hyperpod-ns-b-clusterqueue"}
    return {"metadata": {"name": "hyperpodpytorchjob-wide-1a2b3"}, "spec": {"priority": 50},
            "status": status}


def _queue(borrowed: str) -> dict[str, Any]:
    return {"status": {"flavorsReservation": [{"name": "ml.g5.8xlarge", "resources": [
        {"name": "nvidia.com/gpu", "total": "2", "borrowed": borrowed}]}]}}


def test_no_workload_yet_waits_and_says_why():
    found = queueing.place(JOB_B, None, {}, lambda _name: None)
    assert (found["state"], found["local_queue"]) == ("waiting", QUEUE)
    assert "has not made" in found["message"]


def test_waiting_says_what_quota_is_short():
    short = ("couldn't assign flavors to pod set pods: insufficient unused quota for "
             "nvidia.com/gpu in flavor ml.g5.8xlarge, 1 more needed")
    found = queueing.place(JOB_B, _workload(("QuotaReserved", "False", "Pending", short)),
                           {}, lambda _name: None)
    assert (found["state"], found["message"], found["priority"]) == ("waiting", short, 50)


def test_admitted_borrows_when_its_queue_holds_more_than_its_quota():
    admitted = _workload(("QuotaReserved", "True", "QuotaReserved", "Quota reserved"),
                         ("Admitted", "True", "Admitted", "The workload is admitted"),
                         admission=True)
    borrowing = queueing.place(JOB_B, admitted, {}, lambda _name: _queue("1"))
    assert (borrowing["state"], borrowing["borrowing"]) == ("admitted", True)
    assert borrowing["cluster_queue"] == "hyperpod-ns-b-clusterqueue"
    assert borrowing["admitted_at"] == "2026-12-04T10:00:00Z"
    own = queueing.place(JOB_B, admitted, {}, lambda _name: _queue("0"))
    assert own["borrowing"] is False


def test_preempted_names_the_job_and_team_that_took_its_quota():
    workload = _workload(("QuotaReserved", "False", "Pending", "waiting again"),
                         ("Evicted", "True", "Preempted", PREEMPTED),
                         ("Preempted", "True", "InCohortReclamation", PREEMPTED))
    found = queueing.place(JOB_B, workload, {"uid-a": JOB_A}, lambda _name: None)
    assert found["state"] == "preempted"
    assert found["preempted_by"] == {"job": "narrow", "namespace": "hyperpod-ns-a",
                                     "team": "a", "reason": "InCohortReclamation",
                                     "at": "2026-12-04T10:00:00Z"}
    assert queueing.preempted_by_job(JOB_A, {"uid-b": workload}, {"uid-b": JOB_B}) == [
        {"job": "wide", "namespace": "hyperpod-ns-b", "team": "b",
         "reason": "InCohortReclamation", "at": "2026-12-04T10:00:00Z"}]
    assert queueing.preempted_by_job(JOB_B, {"uid-b": workload}, {"uid-b": JOB_B}) == []


def test_admitted_again_is_no_longer_preempted_and_finished_frees_its_quota():
    again = _workload(("Admitted", "True", "Admitted", "The workload is admitted"),
                      ("Preempted", "False", "InCohortReclamation", f"Previously: {PREEMPTED}"),
                      admission=True)
    assert queueing.place(JOB_B, again, {}, lambda _name: _queue("0"))["state"] == "admitted"
    assert not queueing.preempted(again)
    done = _workload(("Admitted", "True", "Admitted", "admitted"),
                     ("Finished", "True", "Succeeded", "Job finished successfully"),
                     admission=True)
    found = queueing.place(JOB_B, done, {}, lambda _name: None)
    assert (found["state"], found["message"]) == ("finished", "Job finished successfully")
