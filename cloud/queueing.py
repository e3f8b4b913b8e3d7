"""A team's work in its queue, as Kueue says: its Workload and what its conditions mean.

Kueue (v0.19.2) makes one Workload per queued job, in the job's namespace, labelled
`kueue.x-k8s.io/job-uid: <the job's uid>` — and per queued plain pod (a space's: Kueue's
deployment integration queues each pod of a Deployment on its own), labelled with the pod's
uid — and says everything through its conditions:
- `Finished` True: the job ended and its quota is free;
- `QuotaReserved` / `Admitted` True: admitted, `status.admission.clusterQueue` names the queue
  whose quota it holds;
- `Preempted` True (and `Evicted` True, reason `Preempted`): its quota was taken, its job
  suspended; it waits again. The message names the preemptor: "Preempted to accommodate a
  workload (UID: <its Workload>, JobUID: <its job>) due to …", and the reason says why
  (`InCohortReclamation`: a lending team took back its quota; `InClusterQueue`: a higher
  priority of the same team). Kueue turns it False ("Previously: …") on re-admission;
- otherwise it waits: `QuotaReserved` False, its message what is missing ("insufficient
  unused quota for … in flavor …") or why the queue admits nothing.

Whether admitted work *borrows* is its ClusterQueue's: `status.flavorsReservation` counts what
the queue holds above its nominal quota (`borrowed`), which a lender may take back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes.utils import parse_quantity

from cloud import teams
from vocabulary import teams as words

PREEMPTOR_JOB = re.compile(r"JobUID: ([0-9A-Za-z-]+)")


def _md(obj: Mapping[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def team_of(obj: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(team, priority class) a job or a space runs for, from its labels: its queue is its
    team's LocalQueue, in the team's namespace; (None, None) outside any queue."""
    labels = _md(obj).get("labels") or {}
    if words.QUEUE_LABEL not in labels:
        return None, None
    return (words.team_of_namespace(_md(obj).get("namespace")),
            words.priority_name(labels.get(words.PRIORITY_LABEL)))


def _condition(obj: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or ()
                 if c.get("type") == kind), None)


def _true(obj: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    found = _condition(obj, kind)
    return found if found is not None and found.get("status") == "True" else None


def preempted(workload: Mapping[str, Any]) -> bool:
    """Preempted and not admitted again (Kueue turns `Preempted` False when it is)."""
    return _true(workload, "Preempted") is not None


def workloads_by_job(api: Any) -> dict[str, dict[str, Any]]:
    """Kueue's Workloads in every namespace, by the uid of the job each stands for."""
    found = {}
    for workload in teams.workloads(api):
        uid = (_md(workload).get("labels") or {}).get(words.JOB_UID_LABEL)
        if uid:
            found[uid] = workload
    return found


def borrows(queue: Mapping[str, Any] | None) -> bool | None:
    """Whether the ClusterQueue holds more than its nominal quota now (None: unknown)."""
    if queue is None:
        return None
    status = queue.get("status") or {}
    return any(parse_quantity(r.get("borrowed") or 0) > 0
               for f in status.get("flavorsReservation") or ()
               for r in f.get("resources") or ())


def _preemptor_uid(condition: Mapping[str, Any] | None) -> str | None:
    found = PREEMPTOR_JOB.search(str((condition or {}).get("message") or ""))
    return found.group(1) if found else None


def _job_ref(job: Mapping[str, Any] | None) -> dict[str, Any]:
    md = _md(job or {})
    namespace = md.get("namespace")
    return {"job": md.get("name"), "namespace": namespace,
            "team": words.team_of_namespace(namespace)}


def place(job: Mapping[str, Any], workload: Mapping[str, Any] | None,
          jobs_by_uid: Mapping[str, Mapping[str, Any]],
          queue_of: Callable[[str], Mapping[str, Any] | None]) -> dict[str, Any]:
    """The place in its team's queue (JobQueueSchema) of a job, or a space (`job` is then
    its Workspace, whose labels name the queue, and `workload` its pod's). `jobs_by_uid`
    names the preemptor; `queue_of` reads a ClusterQueue by name (a listing remembers
    each)."""
    labels = _md(job).get("labels") or {}
    out: dict[str, Any] = {"local_queue": labels.get(words.QUEUE_LABEL), "cluster_queue": None,
                           "workload": None, "priority": None, "admitted_at": None,
                           "borrowing": None, "preempted_by": None}
    if workload is None:
        return {**out, "state": "waiting",
                "message": "Kueue has not made its Workload yet: it is held (a job suspended, "
                           "a pod gated) until Kueue does and admits it"}
    status = workload.get("status") or {}
    out.update(workload=_md(workload).get("name"),
               priority=(workload.get("spec") or {}).get("priority"))
    finished = _true(workload, "Finished")
    if finished is not None:
        return {**out, "state": "finished", "message": finished.get("message")}
    admitted = _true(workload, "Admitted") or _true(workload, "QuotaReserved")
    if admitted is not None and status.get("admission"):
        name = (status.get("admission") or {}).get("clusterQueue")
        return {**out, "state": "admitted", "message": admitted.get("message"),
                "cluster_queue": name, "admitted_at": admitted.get("lastTransitionTime"),
                "borrowing": borrows(queue_of(name)) if name else None}
    preempted = _true(workload, "Preempted")
    waiting = _condition(workload, "QuotaReserved")
    if preempted is not None:
        by = jobs_by_uid.get(_preemptor_uid(preempted) or "")
        return {**out, "state": "preempted", "message": preempted.get("message"),
                "preempted_by": {**_job_ref(by), "reason": preempted.get("reason"),
                                 "at": preempted.get("lastTransitionTime")}}
    return {**out, "state": "waiting", "message": (waiting or {}).get("message")}


def preempted_by_job(job: Mapping[str, Any], workloads: Mapping[str, Mapping[str, Any]],
                     jobs_by_uid: Mapping[str, Mapping[str, Any]],
                     uid: str | None = None) -> list[dict[str, Any]]:
    """The jobs whose quota this work took and that still wait for it (Preempted True, the
    message naming this work: the job's uid, or `uid`, a space's pod's)."""
    uid = uid or str(_md(job).get("uid"))
    out = []
    for job_uid, workload in workloads.items():
        preempted = _true(workload, "Preempted")
        if preempted is not None and _preemptor_uid(preempted) == uid:
            out.append({**_job_ref(jobs_by_uid.get(job_uid)), "reason": preempted.get("reason"),
                        "at": preempted.get("lastTransitionTime")})
    return sorted(out, key=lambda p: str(p["job"]))
