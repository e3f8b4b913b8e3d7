"""Training jobs as they are in a cluster: hypd's HyperPodPyTorchJobs and RayJobs, their pods,
events, state and recovery budget, and their pods' logs — read from the Kubernetes API.

A job's pods are found by hypd's label `hypd.io/job=<job>` (set on every pod template; both
operators copy template labels to the pods they make). Log lines are read with timestamps:
a line is `(time, text)` and the time is the kubelet's (RFC 3339, nanoseconds), which is
what resuming a tail relies on.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes.client import ApiClient

from cloud import kube, training

TERMINAL_STATES = ("succeeded", "failed")


def _md(obj: Mapping[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def list_jobs(api: ApiClient) -> list[dict[str, Any]]:
    """Every job hypd submitted, of both kinds, in every namespace (a kind whose CRD is not
    installed lists as empty)."""
    found = []
    for api_version, kind in training.KINDS.values():
        found.extend(kube.list_objects(api, api_version, kind,
                                       label_selector={kube.MANAGED_BY_LABEL:
                                                       kube.MANAGED_BY_VALUE}))
    return found


def find(api: ApiClient, name: str) -> dict[str, Any] | None:
    """The job of that name (names are unique per cluster: hypd refuses a second one)."""
    for api_version, kind in training.KINDS.values():
        for obj in kube.list_objects(api, api_version, kind,
                                     label_selector={training.JOB_LABEL: name}):
            if kube.managed_by_hypd(obj) and _md(obj).get("name") == name:
                return obj
    return None


def pods(api: ApiClient, job: Mapping[str, Any]) -> list[dict[str, Any]]:
    md = _md(job)
    found = kube.list_objects(api, "v1", "Pod", md.get("namespace"),
                              label_selector={training.JOB_LABEL: md["name"]})
    return sorted(found, key=lambda p: _md(p)["name"])


def events(api: ApiClient, job: Mapping[str, Any], job_pods: list[dict[str, Any]],
           limit: int = 20) -> list[dict[str, Any]]:
    """The newest events of the job and its pods."""
    md = _md(job)
    names = {md["name"], *(_md(p)["name"] for p in job_pods)}
    found = [e for e in kube.list_objects(api, "v1", "Event", md.get("namespace"))
             if (e.get("involvedObject") or {}).get("name") in names]
    found.sort(key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
    return [{"at": e.get("lastTimestamp") or e.get("eventTime"), "type": e.get("type"),
             "reason": e.get("reason"),
             "object": f"{(e.get('involvedObject') or {}).get('kind')}/"
                       f"{(e.get('involvedObject') or {}).get('name')}",
             "message": e.get("message")} for e in found[-limit:]]


def _true(status: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions") or []
                 if c.get("type") == kind and c.get("status") == "True"), None)


def pod_restarts(pod: Mapping[str, Any]) -> int:
    return sum(int(cs.get("restartCount") or 0)
               for cs in (pod.get("status") or {}).get("containerStatuses") or [])


@dataclass(frozen=True)
class State:
    state: str
    message: str | None
    started_at: str | None
    finished_at: str | None
    restarts: int
    allowed: int | None


def state(job: Mapping[str, Any], job_pods: list[dict[str, Any]]) -> State:
    """The job's state from its operator's status (and its pods while the operator has not
    written one)."""
    status = job.get("status") or {}
    spec = job.get("spec") or {}
    if _md(job).get("deletionTimestamp"):
        return State("deleting", None, status.get("startTime"), None, 0, None)
    if job.get("kind") == training.RAY_KIND:
        ray = {"SUCCEEDED": "succeeded", "FAILED": "failed", "STOPPED": "failed",
               "RUNNING": "running"}.get(str(status.get("jobStatus")), "pending")
        restarts = sum(pod_restarts(p) for p in job_pods)
        return State(ray, status.get("message"), status.get("startTime"),
                     status.get("endTime"), restarts, spec.get("backoffLimit"))
    allowed = (spec.get("runPolicy") or {}).get("jobMaxRetryCount")
    restarts = int(status.get("restartCount") or 0)
    for kind, name in (("Failed", "failed"), ("Completed", "succeeded"),
                       ("Succeeded", "succeeded")):
        found = _true(status, kind)
        if found:
            return State(name, found.get("message"), status.get("startTime"),
                         status.get("completionTime"), restarts, allowed)
    if _true(status, "Restarting"):
        return State("restarting", _true(status, "Restarting").get("message"),
                     status.get("startTime"), None, restarts, allowed)
    if _true(status, "Running"):
        return State("running", None, status.get("startTime"), None, restarts, allowed)
    return State("pending", None, status.get("startTime"), None, restarts, allowed)


def budget(found: State) -> dict[str, Any]:
    remaining = None if found.allowed is None else max(0, found.allowed - found.restarts)
    return {"used": found.restarts, "allowed": found.allowed, "remaining": remaining}


def pod_view(pod: Mapping[str, Any]) -> dict[str, Any]:
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    return {"name": _md(pod)["name"], "node": (pod.get("spec") or {}).get("nodeName"),
            "phase": status.get("phase"), "restarts": pod_restarts(pod),
            "ready": bool(statuses) and all(cs.get("ready") for cs in statuses),
            "role": (_md(pod).get("labels") or {}).get("ray.io/node-type")}


def main_container(pod: Mapping[str, Any]) -> str:
    """The container whose log is the job's (the first: the operators' own come after)."""
    return str(((pod.get("spec") or {}).get("containers") or [{}])[0].get("name"))


# -- log lines -----------------------------------------------------------------------------------

def split_line(raw: str) -> tuple[str, str]:
    """`<RFC 3339 time> <text>` as the API server writes it with timestamps."""
    when, _, text = raw.partition(" ")
    return when, text


def read_lines(api: ApiClient, namespace: str, pod: str, container: str, *,
               tail: int | None = None, since_time: str | None = None,
               previous: bool = False) -> list[tuple[str, str]]:
    response = kube.open_log(api, namespace, pod, kube.log_query(
        container, tail=tail, since_time=since_time, previous=previous), read_timeout=30)
    try:
        body = response.read().decode("utf-8", "replace")
    finally:
        response.release_conn()
    return [split_line(raw) for raw in body.splitlines()]


def follow_lines(response: Any) -> Iterator[tuple[str, str]]:
    """Lines of a followed log as they arrive (the stream ends when the container does)."""
    pending = b""
    for chunk in response.stream(64 * 1024, decode_content=False):
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for raw in complete:
            yield split_line(raw.decode("utf-8", "replace"))
    if pending:
        yield split_line(pending.decode("utf-8", "replace"))
