"""The job side of Kueue in the sandbox: the job kinds it queues (where each is served,
where its suspend flag is, how it says it has finished, its pod sets), the Workload name it
derives, and status conditions set as apimachinery sets them (`kueue.KueueController` uses
these).

Taken from Kueue v0.19.2: a job's Workload is `<lower-case kind>-<job name>-<hash>` (the
sandbox hashes the job's uid: 5 hex digits), labelled `kueue.x-k8s.io/job-uid`; a batch/v1
Job is one pod set `main` of `parallelism` pods; a condition's transition time moves only
when its status does; an ended condition reads "Previously: …" when Kueue turns it False.
Inferred: a HyperPodPyTorchJob is suspended at `spec.runPolicy.suspend` (Kubeflow's place;
the HyperPod training operator's CRD is not public) and has one pod set per replica spec.

A KubeRay RayJob (`ray.io/v1`, Workload `rayjob-<job>-<hash>`), from Kueue v0.19.2's
`pkg/controller/jobs/rayjob` and `raycluster/common.go`: suspended at `spec.suspend`; pod sets
`head` (1 pod, `headGroupSpec.template`), one per worker group named by its `groupName`
lower-cased, `count` = `replicas` (1 when unset; the real CRD defaults it to 0) times
`numOfHosts` when above 1, and for `submissionMode: K8sJobMode` (the CRD's default, so also
when absent) a last pod set `submitter` of 1 pod: `submitterPodTemplate`, else KubeRay's
default submitter (container `ray-job-submitter` with the head's image, requests 500m CPU and
200Mi, limits 1 CPU and 1Gi, `restartPolicy: Never`); `SidecarMode` adds that container to
the head's pod set instead. Finished, as Kueue's `Finished()` reads it: `jobDeploymentStatus`
`Complete` or `Failed`, succeeded when `jobStatus` is `SUCCEEDED`, with the job's
`status.message`. Left out: the autoscaler sidecar (`enableInTreeAutoscaling`) and Redis
cleanup (GCS fault tolerance) that Kueue adds to the head's requests, topology requests,
workload slicing, RayJobs on an existing cluster (`clusterSelector`, which Kueue skips) and
the webhook's refusals (e.g. a queued RayJob without `shutdownAfterJobFinishes`).

A plain Pod (Kueue's `pod` integration, which its `deployment` integration uses: each pod of
a Deployment — a Dev space's editor, whose Workspace labels the jupyter-k8s operator copies
to it — is queued on its own; kubernetes-sigs/kueue site/content/en/docs/tasks/run/
deployment.md and plain_pods.md): Kueue's pod webhook (`pod_webhook`, run on every new pod
by the local Kubernetes, as a mutating webhook is) labels a pod carrying the queue label
`kueue.x-k8s.io/managed: "true"` and holds it with the scheduling gate
`kueue.x-k8s.io/admission` — unless a kind Kueue manages owns it (a Job's, a training job's,
a Ray cluster's pods are queued with their job); its Workload `pod-<pod>-<hash>` has one pod
set `main` of 1 pod; admitted, the gate is removed (the scheduler then places the pod);
preempted, the pod is deleted (its Deployment's next pod is gated and queued again);
finished when the pod has Succeeded or Failed. Left out: the `kueue.x-k8s.io/managed`
finalizer Kueue also adds (kept until it has recorded the pod's end), pod groups.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sandbox.kube.objects import now as stamp
from sandbox.simulator.nodes import LABEL_INSTANCE_TYPE, LABEL_INSTANCE_TYPE_BETA
from sandbox.simulator.training import HPJ, RAYJOB

Finish = tuple[bool, str]
"""How a job ended, as Kueue's `Finished()` reports it: (succeeded, message)."""

RAY_SUBMITTER = "ray-job-submitter"
RAY_SUBMITTER_RESOURCES = {"requests": {"cpu": "500m", "memory": "200Mi"},
                           "limits": {"cpu": "1", "memory": "1Gi"}}
"""KubeRay's default submitter container's resources, which Kueue v0.19.2 mirrors."""


@dataclass(frozen=True)
class Integration:
    """A job kind Kueue manages: where it is served, where its suspend flag is, its pod sets
    (as Kueue's integration for the kind builds them) and whether it has finished."""

    group: str
    version: str
    plural: str
    suspend_path: tuple[str, ...]
    pod_sets: Callable[[dict[str, Any]], list[dict[str, Any]]]
    finished: Callable[[dict[str, Any]], Finish | None]
    gated: bool = False
    """A plain pod: held by Kueue's scheduling gate (`suspend_path` names the gates), let go
    by removing it, and stopped by deleting the pod."""

    def suspended(self, job: dict[str, Any]) -> bool:
        if self.gated:
            return GATE in gates(job)
        value: Any = job
        for key in self.suspend_path:
            value = (value or {}).get(key)
        return bool(value)

    def suspend_patch(self, suspend: bool) -> dict[str, Any]:
        patch: dict[str, Any] = {self.suspend_path[-1]: suspend}
        for key in reversed(self.suspend_path[:-1]):
            patch = {key: patch}
        return patch


def _pod_set(name: str, count: int, template: dict[str, Any] | None) -> dict[str, Any]:
    return {"name": name, "count": count, "template": copy.deepcopy(template or {})}


def _batch_pod_sets(job: dict[str, Any]) -> list[dict[str, Any]]:
    """A batch/v1 Job: one pod set, as many pods as run at once."""
    spec = job.get("spec") or {}
    return [_pod_set("main", int(spec.get("parallelism", 1)), spec.get("template"))]


def _replica_pod_sets(job: dict[str, Any]) -> list[dict[str, Any]]:
    """A HyperPodPyTorchJob: one pod set per replica spec."""
    return [_pod_set(str(r.get("name") or "main").lower(), int(r.get("replicas") or 0),
                     r.get("template"))
            for r in (job.get("spec") or {}).get("replicaSpecs") or []]


def _ray_pod_sets(job: dict[str, Any]) -> list[dict[str, Any]]:
    """A RayJob: its Ray cluster's head and worker groups, then its submitter (see the module
    docstring for what is taken from Kueue and what is left out)."""
    spec = job.get("spec") or {}
    cluster = spec.get("rayClusterSpec") or {}
    head_template = (cluster.get("headGroupSpec") or {}).get("template") or {}
    mode = spec.get("submissionMode") or "K8sJobMode"
    head = _pod_set("head", 1, head_template)
    if mode == "SidecarMode":  # KubeRay runs the submitter in the head pod
        head["template"].setdefault("spec", {}).setdefault("containers", []).append(
            {"name": RAY_SUBMITTER, "resources": copy.deepcopy(RAY_SUBMITTER_RESOURCES)})
    sets = [head]
    for group in cluster.get("workerGroupSpecs") or []:
        replicas = group.get("replicas")
        count = 1 if replicas is None else int(replicas)
        hosts = max(int(group.get("numOfHosts") or 1), 1)
        sets.append(_pod_set(str(group.get("groupName")).lower(), count * hosts,
                             group.get("template")))
    if mode == "K8sJobMode":
        sets.append(_pod_set("submitter", 1, spec.get("submitterPodTemplate")
                             or _ray_submitter(head_template)))
    return sets


def _ray_submitter(head_template: dict[str, Any]) -> dict[str, Any]:
    """KubeRay's default submitter Job pod: the head's image, so that versions match."""
    containers = (head_template.get("spec") or {}).get("containers") or [{}]
    container = {"name": RAY_SUBMITTER, "resources": copy.deepcopy(RAY_SUBMITTER_RESOURCES)}
    if containers[0].get("image"):
        container["image"] = containers[0]["image"]
    return {"spec": {"containers": [container], "restartPolicy": "Never"}}


def _by_conditions(success: str, failure: str) -> Callable[[dict[str, Any]], Finish | None]:
    """Finished when the `success` or `failure` condition is True (with its message)."""
    defaults = {success: "Job finished successfully", failure: "Job failed"}

    def finished(job: dict[str, Any]) -> Finish | None:
        done = next((c for c in conditions_of(job) if c.get("type") in defaults
                     and c.get("status") == "True"), None)
        if done is None:
            return None
        return done["type"] == success, done.get("message") or defaults[done["type"]]

    return finished


def _pod_pod_sets(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """A plain pod: one pod set `main` of the pod itself."""
    spec = {k: v for k, v in (pod.get("spec") or {}).items()
            if k not in ("schedulingGates", "nodeName")}
    return [_pod_set("main", 1, {"spec": spec})]


def _pod_finished(pod: dict[str, Any]) -> Finish | None:
    phase = (pod.get("status") or {}).get("phase")
    if phase not in ("Succeeded", "Failed"):
        return None
    return phase == "Succeeded", f"Pod {phase.lower()}"


def _ray_finished(job: dict[str, Any]) -> Finish | None:
    """Kueue reads `jobDeploymentStatus` for whether, `jobStatus` for how."""
    status = job.get("status") or {}
    if status.get("jobDeploymentStatus") not in ("Complete", "Failed"):
        return None
    return status.get("jobStatus") == "SUCCEEDED", str(status.get("message") or "")


INTEGRATIONS = (
    # the HyperPod training operator's CRD is not public: Kubeflow's runPolicy.suspend
    Integration(HPJ[0], HPJ[1], HPJ[2], ("spec", "runPolicy", "suspend"), _replica_pod_sets,
                _by_conditions("Completed", "Failed")),
    Integration("batch", "v1", "jobs", ("spec", "suspend"), _batch_pod_sets,
                _by_conditions("Complete", "Failed")),
    Integration(RAYJOB[0], RAYJOB[1], RAYJOB[2], ("spec", "suspend"), _ray_pod_sets,
                _ray_finished),
)
POD = Integration("", "v1", "pods", ("spec", "schedulingGates"), _pod_pod_sets, _pod_finished,
                  gated=True)
"""Kueue's plain-pod integration: only pods its webhook took (`managed_pod`)."""

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
GATE = "kueue.x-k8s.io/admission"
MANAGED_LABEL = "kueue.x-k8s.io/managed"
QUEUED_OWNERS = frozenset({"HyperPodPyTorchJob", "Job", "RayJob", "RayCluster"})
"""Kinds Kueue queues itself: their pods are not queued again as plain pods."""


def gates(pod: dict[str, Any]) -> list[str]:
    return [g.get("name") for g in (pod.get("spec") or {}).get("schedulingGates") or []]


def managed_pod(pod: dict[str, Any]) -> bool:
    """A pod Kueue's webhook took: queued on its own."""
    labels = meta(pod).get("labels") or {}
    return bool(labels.get(QUEUE_LABEL)) and labels.get(MANAGED_LABEL) == "true"


def pod_webhook(installed: Callable[[], bool]) -> Callable[[Any, dict[str, Any]], None]:
    """Kueue's mutating pod webhook (while Kueue runs: `installed`): a new pod carrying the
    queue label, not owned by a kind Kueue queues itself, is labelled managed and gated."""
    def mutate(rt: Any, obj: dict[str, Any]) -> None:
        if (rt.group, rt.plural) != ("", "pods"):
            return
        labels = meta(obj).get("labels") or {}
        owners = {r.get("kind") for r in meta(obj).get("ownerReferences") or []
                  if r.get("controller")}
        if not labels.get(QUEUE_LABEL) or owners & QUEUED_OWNERS or not installed():
            return
        obj["metadata"]["labels"] = {**labels, MANAGED_LABEL: "true"}
        spec = obj.setdefault("spec", {})
        if GATE not in gates(obj):
            spec["schedulingGates"] = [*(spec.get("schedulingGates") or []), {"name": GATE}]

    return mutate


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
