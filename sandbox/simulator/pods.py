"""One pod as its node's kubelet runs it: container states over time and the pod status they
make, with only the fields the kubelet documents.

A pod bound to a node starts `Pending` with its containers `waiting: ContainerCreating`;
after the image pull (`PULL_S` simulated seconds) the pod gets its IP and each container
runs its `Program`: `running` (started, ready — after its readiness probe's initial delay,
if it has one), its lines written to the log as they come, then `terminated` with its exit
code (`Completed` for 0, `Error` otherwise). Init containers run one after the other first
(`Initialized` turns True when the last succeeds). What happens after a container ends is
the pod's `restartPolicy`: `Always` (and `OnFailure` after a failure) restart it after a
back-off of 10 s doubling up to 300 s (`waiting: CrashLoopBackOff`, `restartCount` + 1,
`lastState.terminated`); otherwise it stays terminated, and once all have, the pod is
`Succeeded` (every exit code 0) or `Failed`.

Conditions, in the kubelet's order: PodReadyToStartContainers, Initialized, Ready,
ContainersReady, PodScheduled (the scheduler's, kept).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from sandbox.simulator.programs import Program

PULL_S = 2.0  # simulated seconds from scheduling to running (sandbox + image pull)
BACKOFF_FIRST_S = 10.0
BACKOFF_MAX_S = 300.0
TERMINAL = frozenset({"Succeeded", "Failed"})


def image_ref(image: str) -> str:
    """The image as containerd reports it ("busybox" → "docker.io/library/busybox:latest")."""
    name = image
    first = name.split("/", 1)[0]
    if "/" not in name or not ("." in first or ":" in first or first == "localhost"):
        name = "docker.io/" + (name if "/" in name else "library/" + name)
    last = name.rsplit("/", 1)[-1]
    if "@" not in last and ":" not in last:
        name += ":latest"
    return name


def image_id(image: str) -> str:
    repo = image_ref(image).rsplit("@", 1)[0]
    repo = repo.rsplit(":", 1)[0] if ":" in repo.rsplit("/", 1)[-1] else repo
    return f"{repo}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def qos_class(pod: dict[str, Any]) -> str:
    """Guaranteed, Burstable or BestEffort, from the containers' requests and limits."""
    containers = [*((pod.get("spec") or {}).get("initContainers") or []),
                  *((pod.get("spec") or {}).get("containers") or [])]
    any_set, guaranteed = False, True
    for c in containers:
        resources = c.get("resources") or {}
        limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
        if limits or requests:
            any_set = True
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name, limits[name]) != limits[name]:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


@dataclass
class ContainerRun:
    """One container's state as the kubelet reports it."""

    name: str
    image: str
    program: Program
    init: bool = False
    ready_delay_s: float | None = 0.0  # readiness: None without a probe (ready when running)
    state: str = "waiting"  # waiting | running | terminated
    reason: str = "ContainerCreating"
    message: str = ""
    started_at: str | None = None
    finished_at: str | None = None
    exit_code: int | None = None
    restart_count: int = 0
    last_terminated: dict[str, Any] | None = None
    container_id: str = ""
    ready: bool = False

    def terminated(self) -> dict[str, Any]:
        return {
            "exitCode": self.exit_code,
            "reason": "Completed" if self.exit_code == 0 else "Error",
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
            "containerID": self.container_id,
        }

    def status(self) -> dict[str, Any]:
        if self.state == "running":
            state: dict[str, Any] = {"running": {"startedAt": self.started_at}}
        elif self.state == "terminated":
            state = {"terminated": self.terminated()}
        else:
            state = {"waiting": {"reason": self.reason, **(
                {"message": self.message} if self.message else {})}}
        out: dict[str, Any] = {
            "name": self.name,
            "image": image_ref(self.image),
            "imageID": image_id(self.image) if self.container_id else "",
            "ready": self.ready,
            "restartCount": self.restart_count,
            "started": self.state == "running",
            "state": state,
            "lastState": {"terminated": self.last_terminated} if self.last_terminated else {},
        }
        if self.container_id:
            out["containerID"] = self.container_id
        return out


@dataclass
class PodRun:
    """A pod on its node: what the kubelet knows of it."""

    uid: str
    namespace: str
    name: str
    node: str
    restart_policy: str
    host_ip: str
    init: list[ContainerRun]
    main: list[ContainerRun]
    start_time: str
    qos: str
    pod_ip: str | None = None
    init_done: bool = False
    failed_init: bool = False
    stopped: bool = False
    since: dict[str, str] = field(default_factory=dict)  # condition → lastTransitionTime

    def restarts(self, code: int | None) -> bool:
        return self.restart_policy == "Always" or (
            self.restart_policy == "OnFailure" and code not in (0, None))

    @property
    def phase(self) -> str:
        if self.failed_init:
            return "Failed"
        if not self.init_done:
            return "Pending"
        if self.main and all(c.state == "terminated" and not self.restarts(c.exit_code)
                             for c in self.main):
            return "Succeeded" if all(c.exit_code == 0 for c in self.main) else "Failed"
        if any(c.state == "running" or c.restart_count > 0 or c.state == "terminated"
               for c in self.main):
            return "Running"
        return "Pending"

    def _condition(self, kind: str, ok: bool, now: str, reason: str = "",
                   message: str = "") -> dict[str, Any]:
        status = "True" if ok else "False"
        key = f"{kind}={status}"
        if key not in self.since:
            self.since = {k: v for k, v in self.since.items() if not k.startswith(kind + "=")}
            self.since[key] = now
        out: dict[str, Any] = {"type": kind, "status": status, "lastProbeTime": None,
                               "lastTransitionTime": self.since[key]}
        if not ok and reason:
            out["reason"] = reason
        if not ok and message:
            out["message"] = message
        return out

    def status(self, scheduled: dict[str, Any] | None, now: str) -> dict[str, Any]:
        """The pod's status now; `scheduled` is the scheduler's PodScheduled condition."""
        phase = self.phase
        done = phase in TERMINAL
        waiting_init = [c.name for c in self.init if c.state != "terminated" or c.exit_code]
        unready = [c.name for c in self.main if not c.ready]
        conditions = [
            self._condition("PodReadyToStartContainers", bool(self.pod_ip) and not done, now),
            self._condition("Initialized", self.init_done or (done and not self.failed_init),
                            now, "ContainersNotInitialized",
                            f"containers with incomplete status: [{' '.join(waiting_init)}]"),
        ]
        ready_reason = "PodCompleted" if done else "ContainersNotReady"
        ready_message = "" if done else f"containers with unready status: [{' '.join(unready)}]"
        ready = not unready and not done
        conditions.append(self._condition("Ready", ready, now, ready_reason, ready_message))
        conditions.append(self._condition("ContainersReady", ready, now, ready_reason,
                                          ready_message))
        conditions.append(scheduled or {"type": "PodScheduled", "status": "True",
                                        "lastProbeTime": None, "lastTransitionTime": now})
        status: dict[str, Any] = {
            "phase": phase,
            "conditions": conditions,
            "hostIP": self.host_ip,
            "hostIPs": [{"ip": self.host_ip}],
            "startTime": self.start_time,
            "qosClass": self.qos,
            "containerStatuses": [c.status() for c in self.main],
        }
        if self.pod_ip:
            status["podIP"] = self.pod_ip
            status["podIPs"] = [{"ip": self.pod_ip}]
        if self.init:
            status["initContainerStatuses"] = [c.status() for c in self.init]
        return status


def container_id(pod_uid: str, name: str, restart: int) -> str:
    digest = hashlib.sha256(f"{pod_uid}/{name}/{restart}".encode()).hexdigest()
    return f"containerd://{digest}"


def backoff_s(restart_count: int) -> float:
    return min(BACKOFF_MAX_S, BACKOFF_FIRST_S * (2 ** max(0, restart_count)))
