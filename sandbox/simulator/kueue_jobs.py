"""The job side of Kueue in the sandbox: the job kinds it queues (where each is served,
where its suspend flag is, which conditions end it, its pod sets), the Workload name it
derives, and status conditions set as apimachinery sets them (`kueue.KueueController` uses
these).

Taken from Kueue v0.19.2: a job's Workload is `<lower-case kind>-<job name>-<hash>` (the
sandbox hashes the job's uid: 5 hex digits), labelled `kueue.x-k8s.io/job-uid`; a batch/v1
Job is one pod set `main` of `parallelism` pods; a condition's transition time moves only
when its status does; an ended condition reads "Previously: …" when Kueue turns it False.
Inferred: a HyperPodPyTorchJob is suspended at `spec.runPolicy.suspend` (Kubeflow's place;
the HyperPod training operator's CRD is not public) and has one pod set per replica spec.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from typing import Any

from sandbox.kube.objects import now as stamp
from sandbox.simulator.nodes import LABEL_INSTANCE_TYPE, LABEL_INSTANCE_TYPE_BETA
from sandbox.simulator.training import HPJ


@dataclass(frozen=True)
class Integration:
    """A job kind Kueue manages: where it is served, where its suspend flag is, which
    conditions say it is done (the success one first)."""

    group: str
    version: str
    plural: str
    suspend_path: tuple[str, ...]
    done: tuple[str, str]

    def pod_sets(self, job: dict[str, Any]) -> list[dict[str, Any]]:
        spec = job.get("spec") or {}
        if self.plural == "jobs":  # batch/v1: one pod set, as many pods as run at once
            return [{"name": "main", "count": int(spec.get("parallelism", 1)),
                     "template": copy.deepcopy(spec.get("template") or {})}]
        return [{"name": str(r.get("name") or "main").lower(),
                 "count": int(r.get("replicas") or 0),
                 "template": copy.deepcopy(r.get("template") or {})}
                for r in spec.get("replicaSpecs") or []]

    def suspended(self, job: dict[str, Any]) -> bool:
        value: Any = job
        for key in self.suspend_path:
            value = (value or {}).get(key)
        return bool(value)

    def suspend_patch(self, suspend: bool) -> dict[str, Any]:
        patch: dict[str, Any] = {self.suspend_path[-1]: suspend}
        for key in reversed(self.suspend_path[:-1]):
            patch = {key: patch}
        return patch


INTEGRATIONS = (
    # the HyperPod training operator's CRD is not public: Kubeflow's runPolicy.suspend
    Integration(HPJ[0], HPJ[1], HPJ[2], ("spec", "runPolicy", "suspend"),
                ("Completed", "Failed")),
    Integration("batch", "v1", "jobs", ("spec", "suspend"), ("Complete", "Failed")),
)


def meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def conditions_of(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return list((obj.get("status") or {}).get("conditions") or [])


def is_true(obj: dict[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions_of(obj))


def set_condition(conditions: list[dict[str, Any]], kind: str, status: str, reason: str,
                  message: str) -> list[dict[str, Any]]:
    """As apimachinery's SetStatusCondition: the transition time moves only when the status
    does."""
    out = [dict(c) for c in conditions]
    old = next((c for c in out if c.get("type") == kind), None)
    if old is None:
        out.append({"type": kind, "status": status, "reason": reason, "message": message,
                    "lastTransitionTime": stamp()})
        return out
    if old["status"] != status:
        old["lastTransitionTime"] = stamp()
    old.update(status=status, reason=reason, message=message)
    return out


def reset_condition(conditions: list[dict[str, Any]], kind: str, reason: str
                    ) -> list[dict[str, Any]]:
    """An active condition turned False ("Previously: …"), as Kueue does on re-admission."""
    old = next((c for c in conditions if c.get("type") == kind), None)
    if old is None or old.get("status") != "True":
        return conditions
    return set_condition(conditions, kind, "False", reason,
                         f"Previously: {old.get('message', '')}")


def workload_name(job: dict[str, Any]) -> str:
    """Kueue's name for a job's Workload: `<kind>-<job>-<5 hex of its uid>`."""
    md = meta(job)
    digest = hashlib.sha1(str(md.get("uid")).encode()).hexdigest()[:5]
    return f"{job['kind'].lower()}-{md['name']}"[:247] + f"-{digest}"


def selected_type(template: dict[str, Any]) -> str | None:
    selector = (template.get("spec") or {}).get("nodeSelector") or {}
    return selector.get(LABEL_INSTANCE_TYPE) or selector.get(LABEL_INSTANCE_TYPE_BETA)
