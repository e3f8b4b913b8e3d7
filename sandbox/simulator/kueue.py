"""Kueue's controller manager in a local Kubernetes (the task-governance add-on runs it):
jobs labelled `kueue.x-k8s.io/queue-name` wait, suspended, until their Workload gets quota.

Runs only once the Kueue CRDs are served (the add-on installed them). Each reconcile:

1. every HyperPodPyTorchJob, batch/v1 Job and KubeRay RayJob carrying the queue label — and
   every plain pod Kueue's pod webhook took (`kueue_jobs.POD`: a Dev space's) — gets a
   Workload (Kueue's job integrations, `kueue_jobs.INTEGRATIONS`): named
   `<kind>-<job>-<5 hex>` (`hyperpodpytorchjob-…`, `job-…`, `rayjob-…`), in the job's
   namespace, owned by the job (it goes with it), labelled `kueue.x-k8s.io/job-uid: <job
   uid>`; `spec.queueName` from the label, the kind's pod sets (a HyperPodPyTorchJob's one
   per replica spec, `count` = replicas; a Job's one `main`, `count` = parallelism; a
   RayJob's `head`, one per worker group and its `submitter`), `priorityClassRef` +
   `priority` from the WorkloadPriorityClass the job's `kueue.x-k8s.io/priority-class` label
   names (no label: priority 0). A label naming no WorkloadPriorityClass makes no Workload
   (Kueue cannot build it): the job stays suspended;
2. the job is held suspended (a plain pod gated, and deleted when evicted) — a Job's and a
   RayJob's `spec.suspend`, a HyperPodPyTorchJob's
   `spec.runPolicy.suspend` (inferred: the HyperPod training operator's CRD is not public;
   Kubeflow's jobs, which Kueue integrates, suspend there) — until its Workload is admitted,
   and suspended again when it is evicted (the training and Job simulators then remove its
   pods; KubeRay's RayJob goes `Suspending`, then `Suspended`); Kueue's webhook suspends a
   queued job as it is created, here the first reconcile does, before the operators see the
   job;
3. admission (`kueue_admission.decide`), and the Workloads' status as Kueue writes it:
   - waiting: `QuotaReserved` False, reason `Pending`, message "couldn't assign flavors to
     pod set <ps>: insufficient unused quota for <resource> in flavor <flavor>, <n> more
     needed"; reason `Inadmissible` with "LocalQueue <q> doesn't exist" / "ClusterQueue <q>
     doesn't exist" when the queue is missing; "ClusterQueue <q> is inactive" on hold;
   - admitted: `status.admission` (clusterQueue, podSetAssignments with flavors,
     resourceUsage, count), `QuotaReserved` True (reason `QuotaReserved`, "Quota reserved in
     ClusterQueue <cq>"), `Admitted` True (reason `Admitted`, "The workload is admitted");
     an earlier `Evicted`/`Preempted` turns False ("Previously: …");
   - preempted: admission removed; `Evicted` True reason `Preempted`, `Preempted` True
     reason `InCohortReclamation` or `InClusterQueue`, both with Kueue's message "Preempted to
     accommodate a workload (UID: <preemptor's Workload uid>, JobUID: <its job's uid>) due to
     <reclamation within the cohort | prioritization in the ClusterQueue>; preemptor path:
     /<cohort>/<cq>; preemptee path: /<cohort>/<cq>"; `QuotaReserved` and `Admitted` False;
     the workload then waits again, in order;
   - on the job, Kueue's events: `CreatedWorkload` "Created Workload: <ns>/<workload>",
     `Started` "Admitted by clusterQueue <cq>", `Stopped` with the eviction's message;
   - the job finished (a HyperPodPyTorchJob's Completed or Failed condition, a Job's Complete
     or Failed, a RayJob's `jobDeploymentStatus` Complete or Failed): `Finished` True (reason
     `Succeeded` / `Failed` — a RayJob's by its `jobStatus` —, the job's message), and its
     quota is free;
4. ClusterQueue status: `pendingWorkloads`, `reservingWorkloads`, `admittedWorkloads`,
   `flavorsReservation` and `flavorsUsage` (per flavor and covered resource: `total`,
   `borrowed` above the nominal quota), condition `Active` True; LocalQueue status: the same
   counts and flavors (without `borrowed`) for its workloads, condition `Active`.

Every write goes through the API server's admission against the real CRDs
(`fieldValidation=Strict`). Times are the wall clock's (Kueue's are too).
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from sandbox.kube import validation
from sandbox.kube.errors import KubeError
from sandbox.kube.patches import MERGE_PATCH
from sandbox.kube.store import Checks
from sandbox.simulator import kueue_admission as ka
from sandbox.simulator import kueue_objects as ko
from sandbox.simulator.kueue_jobs import (
    GATE,
    INTEGRATIONS,
    POD,
    Integration,
    conditions_of,
    gates,
    is_true,
    managed_pod,
    meta,
    pod_webhook,
    reset_condition,
    selected_type,
    set_condition,
    workload_name,
)
from sandbox.simulator.scheduling import quantity, requests

if TYPE_CHECKING:
    from sandbox.kube.store import Event
    from sandbox.simulator.cluster import ClusterSimulator

log = logging.getLogger(__name__)

GROUP = "kueue.x-k8s.io"
VERSION = "v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
MANAGER = "kueue-controller-manager"
REASONS = {"InCohortReclamation": "reclamation within the cohort",
           "InClusterQueue": "prioritization in the ClusterQueue"}


class KueueController:
    """Workloads, admission and queue status in one cluster (see the module docstring)."""

    def __init__(self, sim: ClusterSimulator) -> None:
        self.sim = sim
        sim.kube.store.webhooks.append(pod_webhook(lambda: self._rt("workloads") is not None))

    @staticmethod
    def watches(item: Event) -> bool:
        return item.group == GROUP

    # --- store access ---------------------------------------------------------------------

    def _rt(self, plural: str) -> Any:
        return self.sim.kube.catalog.lookup(GROUP, VERSION, plural)

    def _list(self, plural: str, group: str = GROUP, version: str = VERSION) -> list[Any]:
        rt = self.sim.kube.catalog.lookup(group, version, plural)
        if rt is None:
            return []
        items, _, _, _ = self.sim.kube.store.list(rt, None, lambda _o: True)
        return items

    def _status(self, plural: str, obj: dict[str, Any], status: dict[str, Any]) -> None:
        """Write `obj`'s status if it changed (and keep `obj` in step with it)."""
        if status == (obj.get("status") or {}):
            return
        obj["status"] = status
        md = meta(obj)
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": obj["kind"],
                "metadata": {"name": md["name"]}, "status": status}
        try:
            self.sim.kube.store.replace(self._rt(plural), md.get("namespace"), md["name"],
                                        body, MANAGER, "status",
                                        checks=Checks(mode=validation.STRICT))
        except KubeError as exc:
            log.info("kueue simulator: status of %s %s not written: %s", plural,
                     md["name"], exc)

    def _hold(self, kind: Integration, job: dict[str, Any], wl: dict[str, Any] | None) -> None:
        """Suspend or resume the job as its Workload says, with the job's events Kueue
        records: `Started` "Admitted by clusterQueue <cq>", `Stopped` with the eviction's
        message."""
        admitted = wl is not None and self._holds_quota(wl)
        if kind.suspended(job) != admitted:
            return
        self._suspend(kind, job, not admitted)
        if admitted:
            cq = wl["status"]["admission"]["clusterQueue"]  # type: ignore[index]
            self.sim._event(job, "Normal", "Started", f"Admitted by clusterQueue {cq}", MANAGER)
        elif wl is not None and is_true(wl, "Evicted"):
            message = next(c.get("message", "") for c in conditions_of(wl)
                           if c.get("type") == "Evicted")
            self.sim._event(job, "Normal", "Stopped", message, MANAGER)

    def _suspend(self, kind: Integration, job: dict[str, Any], suspend: bool) -> None:
        """Set the job's suspend flag (in the store, and in `job` as this pass holds it); a
        plain pod is let go by removing Kueue's gate, and stopped by its deletion."""
        md = meta(job)
        rt = self.sim.kube.catalog.lookup(kind.group, kind.version, kind.plural)
        if kind.gated:
            with contextlib.suppress(KubeError):
                if suspend:
                    self.sim.kube.store.delete(rt, md.get("namespace"), md["name"],
                                               "Background")
                    return
                left = [{"name": g} for g in gates(job) if g != GATE]
                job.update(self.sim.kube.store.patch(
                    rt, md.get("namespace"), md["name"], MERGE_PATCH,
                    {"spec": {"schedulingGates": left or None}}, MANAGER)[0])
            return
        with contextlib.suppress(KubeError):
            job.update(self.sim.kube.store.patch(rt, md.get("namespace"), md["name"],
                                                 MERGE_PATCH, kind.suspend_patch(suspend),
                                                 MANAGER, checks=Checks(mode=validation.STRICT)
                                                 )[0])

    # --- workloads of jobs -----------------------------------------------------------------

    def _workload_for(self, kind: Integration, job: dict[str, Any], priorities: dict[str, int]
                      ) -> dict[str, Any] | None:
        md = meta(job)
        labels = md.get("labels") or {}
        spec: dict[str, Any] = {"queueName": labels[QUEUE_LABEL], "active": True,
                                "podSets": kind.pod_sets(job)}
        wanted = labels.get(PRIORITY_LABEL)
        if wanted:
            if wanted not in priorities:
                return None
            spec["priorityClassRef"] = {"group": GROUP, "kind": "WorkloadPriorityClass",
                                        "name": wanted}
            spec["priority"] = priorities[wanted]
        else:
            spec["priority"] = 0
        return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Workload",
                "metadata": {"name": workload_name(job), "namespace": md.get("namespace"),
                             "labels": {JOB_UID_LABEL: str(md.get("uid"))},
                             "ownerReferences": [{
                                 "apiVersion": job["apiVersion"], "kind": job["kind"],
                                 "name": md["name"], "uid": md["uid"], "controller": True,
                                 "blockOwnerDeletion": True}]},
                "spec": spec}

    def _ensure_workloads(self, jobs: list[tuple[Integration, dict[str, Any]]],
                          priorities: dict[str, int],
                          workloads: dict[str, dict[str, Any]]) -> None:
        rt = self._rt("workloads")
        for kind, job in jobs:
            uid = str(meta(job).get("uid"))
            if uid in workloads or meta(job).get("deletionTimestamp"):
                continue
            if not kind.gated and not kind.suspended(job):  # what Kueue's webhook does as
                self._suspend(kind, job, True)  # the job is created (a pod's gates it)
            body = self._workload_for(kind, job, priorities)
            if body is None:
                continue
            try:
                made = self.sim.kube.store.create(rt, meta(job).get("namespace"), body, MANAGER,
                                                  checks=Checks(mode=validation.STRICT))
            except KubeError as exc:
                log.info("kueue simulator: no workload for %s: %s", meta(job)["name"], exc)
                continue
            workloads[uid] = made
            self.sim._event(job, "Normal", "CreatedWorkload",
                            f"Created Workload: {meta(made).get('namespace')}/{meta(made)['name']}",
                            MANAGER)

    # --- reconcile ---------------------------------------------------------------------------

    def reconcile(self) -> None:
        if self._rt("workloads") is None:
            return
        jobs = [(kind, j) for kind in INTEGRATIONS
                for j in self._list(kind.plural, kind.group, kind.version)
                if (meta(j).get("labels") or {}).get(QUEUE_LABEL)]
        jobs += [(POD, p) for p in self._list(POD.plural, POD.group, POD.version)
                 if managed_pod(p) and not meta(p).get("deletionTimestamp")]
        priorities = {str(meta(p)["name"]): int(p.get("value") or 0)
                      for p in self._list("workloadpriorityclasses")}
        workloads = {str((meta(w).get("labels") or {}).get(JOB_UID_LABEL)): w
                     for w in self._list("workloads")}
        self._ensure_workloads(jobs, priorities, workloads)
        by_uid = {str(meta(j).get("uid")): (kind, j) for kind, j in jobs}
        for uid, wl in workloads.items():
            if uid in by_uid and not is_true(wl, "Finished"):
                self._finish_if_done(*by_uid[uid], wl)
        queues = self._queues()
        local = {(str(meta(q).get("namespace")), str(meta(q)["name"])): q
                 for q in self._list("localqueues")}
        self._admit(list(workloads.values()), queues, local)
        for kind, job in jobs:
            wl = workloads.get(str(meta(job).get("uid")))
            if not (wl is not None and is_true(wl, "Finished")):
                self._hold(kind, job, wl)
        self._queue_status(queues, local)

    def _finish_if_done(self, kind: Integration, job: dict[str, Any], wl: dict[str, Any]
                        ) -> None:
        """A finished job's Workload gets `Finished` (reason `Succeeded` / `Failed`, the job's
        message), which frees its quota."""
        done = kind.finished(job)
        if done is None:
            return
        ok, message = done
        status = copy.deepcopy(wl.get("status") or {})
        status["conditions"] = set_condition(
            status.get("conditions") or [], "Finished", "True", "Succeeded" if ok else "Failed",
            message)
        self._status("workloads", wl, status)

    @staticmethod
    def _holds_quota(wl: dict[str, Any]) -> bool:
        return bool((wl.get("status") or {}).get("admission")) and is_true(wl, "QuotaReserved") \
            and not is_true(wl, "Finished")

    def _queues(self) -> dict[str, tuple[dict[str, Any], ka.Queue]]:
        out = {}
        for cq in self._list("clusterqueues"):
            spec = cq.get("spec") or {}
            quotas, flavors = {}, []
            for group in spec.get("resourceGroups") or []:
                for flavor in group.get("flavors") or []:
                    flavors.append(flavor["name"])
                    for r in flavor.get("resources") or []:
                        limit = r.get("borrowingLimit")
                        lend = r.get("lendingLimit")
                        quotas[(flavor["name"], r["name"])] = ka.Quota(
                            quantity(r.get("nominalQuota", 0)),
                            ka.UNLIMITED if limit is None else quantity(limit),
                            None if lend is None else quantity(lend))
            preemption = spec.get("preemption") or {}
            name = str(meta(cq)["name"])
            out[name] = (cq, ka.Queue(
                name, spec.get("cohortName"), quotas, flavors,
                preemption.get("withinClusterQueue", "Never"),
                preemption.get("reclaimWithinCohort", "Never"),
                spec.get("stopPolicy", "None") == "None"))
        return out

    def _request(self, wl: dict[str, Any], queue: ka.Queue
                 ) -> tuple[ka.Usage, list[dict[str, Any]]]:
        """What the workload asks of the queue, and its podSetAssignments."""
        usage: ka.Usage = defaultdict(float)
        assignments = []
        covered = {r for _, r in queue.quotas}
        for ps in (wl.get("spec") or {}).get("podSets") or []:
            template = ps.get("template") or {}
            selected = selected_type(template)
            flavor = selected if selected in queue.flavors else (
                None if selected else (queue.flavors[0] if queue.flavors else None))
            count = int(ps.get("count", 1))
            asked = {r: a * count for r, a in requests(template).items() if r in covered}
            if flavor is None:
                return {}, []
            for r, amount in asked.items():
                usage[(flavor, r)] += amount
            assignments.append({"name": ps.get("name", "main"), "count": count,
                                "flavors": dict.fromkeys(sorted(asked), flavor),
                                "resourceUsage": {r: ko.shown(r, a)
                                                  for r, a in sorted(asked.items())}})
        return dict(usage), assignments

    def _admit(self, workloads: list[dict[str, Any]],
               queues: dict[str, tuple[dict[str, Any], ka.Queue]],
               local: dict[tuple[str, str], dict[str, Any]]) -> None:
        by_key = {f"{meta(w).get('namespace')}/{meta(w)['name']}": w for w in workloads}
        running, pending, plans = [], [], {}
        for key, wl in by_key.items():
            if is_true(wl, "Finished"):
                continue
            spec, status = wl.get("spec") or {}, wl.get("status") or {}
            if self._holds_quota(wl):
                cq = status["admission"]["clusterQueue"]
                entry = queues.get(cq)
                usage = self._request(wl, entry[1])[0] if entry else {}
                when = next((c.get("lastTransitionTime", "") for c in conditions_of(wl)
                             if c.get("type") == "QuotaReserved"), "")
                running.append(ka.Running(key, cq, int(spec.get("priority") or 0), when, usage))
                continue
            lq = local.get((str(meta(wl).get("namespace")), str(spec.get("queueName"))))
            if lq is None:
                self._wait(wl, "Inadmissible", f"LocalQueue {spec.get('queueName')} doesn't exist")
                continue
            cq_name = str((lq.get("spec") or {}).get("clusterQueue"))
            if cq_name not in queues:
                self._wait(wl, "Inadmissible", f"ClusterQueue {cq_name} doesn't exist")
                continue
            request, assignments = self._request(wl, queues[cq_name][1])
            if not assignments:
                self._wait(wl, "Pending", "couldn't assign flavors to pod set: no flavor of "
                                          f"ClusterQueue {cq_name} matches its node selector")
                continue
            plans[key] = (cq_name, assignments)
            pending.append(ka.Candidate(key, cq_name, int(spec.get("priority") or 0),
                                        str(meta(wl).get("creationTimestamp") or ""), request))
        decision = ka.decide({n: q for n, (_, q) in queues.items()}, running, pending)
        for key, (preemptor, reason) in decision.preempted.items():
            self._evict(by_key[key], by_key[preemptor], reason, queues, plans[preemptor][0])
        for key in decision.admitted:
            self._reserve(by_key[key], *plans[key])
        for key, why in decision.waiting.items():
            if isinstance(why, str):
                self._wait(by_key[key], "Inadmissible", why)
                continue
            flavor, resource, amount = why
            pod_set = next((a["name"] for a in plans[key][1] if flavor in a["flavors"].values()),
                           "main")
            self._wait(by_key[key], "Pending",
                       f"couldn't assign flavors to pod set {pod_set}: insufficient unused "
                       f"quota for {resource} in flavor {flavor}, "
                       f"{ko.shown(resource, amount)} more needed")

    def _wait(self, wl: dict[str, Any], reason: str, message: str) -> None:
        status = copy.deepcopy(wl.get("status") or {})
        status.pop("admission", None)
        conditions = set_condition(status.get("conditions") or [], "QuotaReserved", "False",
                                   reason, message)
        status["conditions"] = conditions
        self._status("workloads", wl, status)

    def _reserve(self, wl: dict[str, Any], cq: str, assignments: list[dict[str, Any]]) -> None:
        status = copy.deepcopy(wl.get("status") or {})
        status["admission"] = {"clusterQueue": cq, "podSetAssignments": assignments}
        conditions = set_condition(status.get("conditions") or [], "QuotaReserved", "True",
                                   "QuotaReserved", f"Quota reserved in ClusterQueue {cq}")
        conditions = set_condition(conditions, "Admitted", "True", "Admitted",
                                   "The workload is admitted")
        for kind in ("Evicted", "Preempted"):
            conditions = reset_condition(conditions, kind, "QuotaReserved")
        status["conditions"] = conditions
        self._status("workloads", wl, status)

    def _evict(self, wl: dict[str, Any], by: dict[str, Any], reason: str,
               queues: dict[str, tuple[dict[str, Any], ka.Queue]], theirs: str) -> None:
        def path(cq: str) -> str:
            cohort = queues[cq][1].cohort if cq in queues else None
            return f"/{cohort}/{cq}" if cohort else f"/{cq}"

        status = copy.deepcopy(wl.get("status") or {})
        mine = (status.get("admission") or {}).get("clusterQueue", "")
        message = (f"Preempted to accommodate a workload (UID: {meta(by).get('uid')}, JobUID: "
                   f"{(meta(by).get('labels') or {}).get(JOB_UID_LABEL)}) due to "
                   f"{REASONS[reason]}; preemptor path: {path(theirs)}; preemptee path: "
                   f"{path(mine)}")
        status.pop("admission", None)
        conditions = status.get("conditions") or []
        conditions = set_condition(conditions, "Evicted", "True", "Preempted", message)
        conditions = set_condition(conditions, "Preempted", "True", reason, message)
        conditions = set_condition(conditions, "QuotaReserved", "False", "Pending", message)
        conditions = set_condition(conditions, "Admitted", "False", "NoReservation",
                                   "The workload has no reservation")
        status["conditions"] = conditions
        self._status("workloads", wl, status)

    # --- queue status ------------------------------------------------------------------------

    def _queue_status(self, queues: dict[str, tuple[dict[str, Any], ka.Queue]],
                      local: dict[tuple[str, str], dict[str, Any]]) -> None:
        workloads = [w for w in self._list("workloads") if not is_true(w, "Finished")]
        lq_cq = {k: str((q.get("spec") or {}).get("clusterQueue")) for k, q in local.items()}
        per_cq: dict[str, list[dict[str, Any]]] = defaultdict(list)
        per_lq: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for wl in workloads:
            key = (str(meta(wl).get("namespace")), str((wl.get("spec") or {}).get("queueName")))
            if key in local:
                per_lq[key].append(wl)
                per_cq[lq_cq[key]].append(wl)
        for name, (cq, queue) in queues.items():
            self._status("clusterqueues", cq, self._counts(per_cq[name], queue, True,
                                                           cq.get("status") or {}))
        for key, lq in local.items():
            queue = queues.get(lq_cq[key])
            status = self._counts(per_lq[key], queue[1] if queue else None, False,
                                  lq.get("status") or {})
            self._status("localqueues", lq, status)

    def _counts(self, workloads: list[dict[str, Any]], queue: ka.Queue | None,
                borrowed: bool, old: dict[str, Any]) -> dict[str, Any]:
        holding = [w for w in workloads if self._holds_quota(w)]
        used: dict[tuple[str, str], float] = defaultdict(float)
        for wl in holding:
            for key, amount in (self._request(wl, queue)[0] if queue else {}).items():
                used[key] += amount
        flavors = []
        for flavor in queue.flavors if queue else []:
            resources = []
            for (f, r), quota in queue.quotas.items():  # type: ignore[union-attr]
                if f != flavor:
                    continue
                item = {"name": r, "total": ko.shown(r, used[(f, r)])}
                if borrowed:
                    item["borrowed"] = ko.shown(r, max(0.0, used[(f, r)] - quota.nominal))
                resources.append(item)
            flavors.append({"name": flavor, "resources": resources})
        what = "ClusterQueue" if borrowed else "localQueue"
        message = ("Can admit new workloads" if borrowed
                   else "Can submit new workloads to localQueue")
        if queue is None:
            active = ("False", "ClusterQueueDoesNotExist", "Can't submit new workloads to "
                      "clusterQueue")
        elif not queue.active:
            active = ("False", "Stopped", f"{what} is stopped")
        else:
            active = ("True", "Ready", message)
        return {"pendingWorkloads": len(workloads) - len(holding),
                "reservingWorkloads": len(holding), "admittedWorkloads": len(holding),
                "flavorsReservation": flavors, "flavorsUsage": copy.deepcopy(flavors),
                "conditions": set_condition(old.get("conditions") or [], "Active", *active)}
