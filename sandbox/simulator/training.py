"""The training operators of a local Kubernetes: HyperPod's training operator
(HyperPodPyTorchJob) and KubeRay (RayJob).

Neither operator runs in the sandbox, so this module plays them on top of the cluster's
scheduler and kubelets (`cluster.ClusterSimulator`): it makes each job's pods from its
templates (owned by the job, so deleting the job deletes them), follows their phases and
restarts, and writes the job's status with the fields the real controllers document.

- **HyperPodPyTorchJob** (`sagemaker.amazonaws.com/v1`): one pod per replica of each
  `replicaSpecs` entry, named `<job>-<replica spec>-<i>` and labelled `HPJob=<job>` (the label
  AWS's HyperPod CLI lists a job's pods by). The operator recovers a failed process in place
  (the HyperPod elastic agent restarts it), so a failed container restarts in its pod and each
  restart counts against `runPolicy.jobMaxRetryCount`; status: `startTime`, `conditions`
  (Created, Running, Restarting, Completed, Failed), `restartCount` (restarts used),
  `jobPods`, `masterAddr`, `completionTime`. A job whose restarts exceed the budget fails, and
  its pods go (`cleanPodPolicy`).
- **RayJob** (`ray.io/v1`): a head pod `<job>-head` and each worker group's pods
  `<job>-<group>-worker-<i>`, labelled as KubeRay labels them (`ray.io/cluster`,
  `ray.io/node-type`, `ray.io/group`, `ray.io/originated-from-crd`); the head runs the
  entrypoint. Status: `jobId`, `rayClusterName`, `startTime`, `jobStatus` (PENDING, RUNNING,
  SUCCEEDED, FAILED), `jobDeploymentStatus` (Initializing, Running, Complete, Failed),
  `endTime`, `message`, `succeeded`/`failed`; with `shutdownAfterJobFinishes` the pods go
  when the job ends. `spec.suspend` (Kueue's hold) tears the Ray cluster down:
  `jobDeploymentStatus` Suspending while its pods remain, then Suspended (the cluster's and
  the Ray job's fields cleared, as KubeRay does); unsuspended, it starts again as a new job.

Every pod goes through the cluster's scheduler: one that fits no node stays Pending with the
scheduler's FailedScheduling event, and a job's processes wait in their rendezvous until all
its pods run (`_rendezvous`), so a job larger than the cluster waits — never Running, never
Succeeded — instead of running its pods a few at a time.

What a training container does is this module's resolver in the cluster's `Programs` book.
Its own command is not run, except for the files its shell script writes into the bucket
mounted at /s3 (`s3files`: a HyperPodPyTorchJob's `hyperpodrun … sh -c "echo … > /s3/…"`, a
RayJob's entrypoint `sh -c "…"`), put once its rendezvous is complete. It prints
a start line, then (once the rendezvous is complete) `steps` progress lines (step, loss,
throughput), `lines_per_second` simulated, as the sandbox's training settings say
(`/_sandbox/training`), then exit 0 — unless an armed pod
fault (`/_sandbox/training/faults`) matches the pod: then it prints the fault's
`last_words` (e.g. an NCCL watchdog's timeout) after `after_lines` progress lines and exits
with the fault's code, once per use of the fault.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import logging
import math
import shlex
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from sandbox.kube import validation
from sandbox.kube.errors import KubeError
from sandbox.kube.objects import now as stamp
from sandbox.kube.store import Checks
from sandbox.simulator.programs import Line, Program

if TYPE_CHECKING:
    from sandbox.kube.store import Event
    from sandbox.simulator.cluster import ClusterSimulator

log = logging.getLogger(__name__)

HPJ = ("sagemaker.amazonaws.com", "v1", "hyperpodpytorchjobs", "HyperPodPyTorchJob")
RAYJOB = ("ray.io", "v1", "rayjobs", "RayJob")
JOB_KINDS = frozenset({(HPJ[0], HPJ[2]), (RAYJOB[0], RAYJOB[2])})
JOB_LABEL = "HPJob"
RAY_CLUSTER = "ray.io/cluster"
RAY_NODE_TYPE = "ray.io/node-type"
RAY_GROUP = "ray.io/group"
RAY_FROM_CRD = "ray.io/originated-from-crd"
RAY_FROM_NAME = "ray.io/originated-from-cr-name"
OPERATOR = "hp-training-operator"
KUBERAY = "kuberay-operator"
MASTER_PORT = "23456"
RAY_RESET_ON_SUSPEND = ("rayClusterStatus", "rayClusterName", "dashboardURL", "jobId", "message",
                        "reason", "rayJobInfo", "jobStatusCheckFailureStartTime", "jobStatus")
"""What KubeRay clears once a suspended RayJob's resources are gone (jobStatus back to New,
which is empty)."""
MAX_TIMERS_PER_REAL_S = 200.0  # a fast log is printed in batches, not one timer per line


class TrainingControlError(ValueError):
    """A settings or fault request that cannot be honoured (400 on the control routes)."""


@dataclass
class TrainingSettings:
    steps: int = 20
    lines_per_second: float = 5.0


@dataclass
class PodFault:
    """Make a training container exit with `exit_code` after `after_lines` lines, `count`
    times. `job` (and optionally `pod`, `namespace`) say which containers it hits."""

    id: str
    job: str
    pod: str | None
    namespace: str | None
    exit_code: int
    after_lines: int
    count: int
    last_words: tuple[str, ...] = ()
    """What the process prints just before it exits (an NCCL watchdog's timeout, an Xid)."""
    fired: int = 0

    def matches(self, namespace: str, job: str, pod: str) -> bool:
        return (self.job == job and self.pod in (None, pod)
                and self.namespace in (None, namespace))

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "remaining": self.count - self.fired}


MAX_LAST_WORDS = 20
MAX_LINE_CHARS = 2000


def _last_words(spec: dict[str, Any]) -> tuple[str, ...]:
    words = spec.get("last_words", [])
    if (not isinstance(words, list) or len(words) > MAX_LAST_WORDS
            or not all(isinstance(w, str) and "\n" not in w and len(w) <= MAX_LINE_CHARS
                       for w in words)):
        raise TrainingControlError(f"last_words must be a list of at most {MAX_LAST_WORDS} "
                                   f"lines of at most {MAX_LINE_CHARS} characters")
    return tuple(words)


def _int(spec: dict[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = spec.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise TrainingControlError(f"{key} must be an integer in [{low}, {high}]")
    return value


class TrainingBook:
    """The training settings and armed pod faults of one local AWS (all its clusters)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.settings = TrainingSettings()
        self._per_job: dict[str, TrainingSettings] = {}
        self._faults: list[PodFault] = []
        self._ids = itertools.count(1)

    def configure(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Set how training containers run: every job's, or one `job`'s (so that tests
        running side by side do not change each other's jobs)."""
        job = spec.get("job")
        if job is not None and (not isinstance(job, str) or not job):
            raise TrainingControlError("job must be a job name")
        current = self.settings_for(job)
        steps = _int(spec, "steps", current.steps, 1, 1_000_000)
        rate = spec.get("lines_per_second", current.lines_per_second)
        if not isinstance(rate, int | float) or isinstance(rate, bool) or not 0 < rate <= 1e6:
            raise TrainingControlError("lines_per_second must be a number in (0, 1e6]")
        with self._lock:
            if job is None:
                self.settings = TrainingSettings(steps, float(rate))
            else:
                self._per_job[job] = TrainingSettings(steps, float(rate))
        return asdict(self.settings_for(job))

    def settings_for(self, job: str | None) -> TrainingSettings:
        with self._lock:
            return self._per_job.get(job or "", self.settings)

    def reset(self) -> None:
        with self._lock:
            self.settings = TrainingSettings()
            self._per_job.clear()
            self._faults.clear()

    def add_fault(self, spec: dict[str, Any]) -> PodFault:
        job = spec.get("job")
        if not isinstance(job, str) or not job:
            raise TrainingControlError("job must name the job whose pods fail")
        for key in ("pod", "namespace"):
            if spec.get(key) is not None and not isinstance(spec[key], str):
                raise TrainingControlError(f"{key} must be a string")
        with self._lock:
            fault = PodFault(id=f"pf{next(self._ids)}", job=job, pod=spec.get("pod"),
                             namespace=spec.get("namespace"),
                             exit_code=_int(spec, "exit_code", 1, 1, 255),
                             after_lines=_int(spec, "after_lines", 2, 0, 1_000_000),
                             count=_int(spec, "count", 1, 1, 1000),
                             last_words=_last_words(spec))
            self._faults.append(fault)
        return fault

    def faults(self) -> list[dict[str, Any]]:
        with self._lock:
            return [f.as_dict() for f in self._faults]

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def take_fault(self, namespace: str, job: str, pod: str) -> PodFault | None:
        with self._lock:
            for fault in self._faults:
                if fault.matches(namespace, job, pod):
                    fault.fired += 1
                    if fault.fired >= fault.count:
                        self._faults.remove(fault)
                    return fault
        return None


def _md(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    return _md(obj).get("labels") or {}


def _condition(kind: str, reason: str, message: str, old: list[dict[str, Any]]
               ) -> dict[str, Any]:
    """A True condition, keeping its transition time when it was already True."""
    before = next((c for c in old if c.get("type") == kind and c.get("status") == "True"),
                  None)
    when = before.get("lastTransitionTime") if before else stamp()
    return {"type": kind, "status": "True", "reason": reason, "message": message,
            "lastTransitionTime": when, "lastUpdateTime": when}


class TrainingControllers:
    """The two operators in one cluster (see the module docstring)."""

    def __init__(self, sim: ClusterSimulator, book: TrainingBook) -> None:
        self.sim = sim
        self.book = book
        sim.programs.register(self.program)

    @staticmethod
    def watches(item: Event) -> bool:
        return (item.group, item.plural) in JOB_KINDS

    # --- what a training container does -------------------------------------------------

    def _job_of(self, pod: dict[str, Any]) -> str | None:
        labels = _labels(pod)
        if labels.get(JOB_LABEL):
            return labels[JOB_LABEL]
        if labels.get(RAY_FROM_CRD) == RAYJOB[3] and labels.get(RAY_NODE_TYPE) == "head":
            return labels.get(RAY_FROM_NAME)
        return None

    def program(self, pod: dict[str, Any], container: dict[str, Any]) -> Program | None:
        job = self._job_of(pod)
        containers = (pod.get("spec") or {}).get("containers") or []
        if job is None or not containers or container.get("name") != containers[0].get("name"):
            return None
        md = _md(pod)
        settings = self.book.settings_for(job)
        fault = self.book.take_fault(str(md.get("namespace")), job, str(md.get("name")))
        steps = min(settings.steps, fault.after_lines) if fault else settings.steps
        texts = [f"{md.get('name')}: step {i}/{settings.steps} loss={2.5 / i:.4f} "
                 f"throughput={900 + (i * 37) % 200} samples/s" for i in range(1, steps + 1)]
        if fault:
            texts += fault.last_words
            texts.append(f"{md.get('name')}: error: process exited with code "
                         f"{fault.exit_code} (sandbox fault {fault.id})")
        rate = settings.lines_per_second
        work = (*self._writes(pod, container, job), *(self._timed(texts, rate)
                                                      or (Line(0.0, None),)))
        gate = self._rendezvous(pod)
        work = (replace(work[0], gate=gate), *work[1:])
        return Program(lines=(*self._timed([f"{md.get('name')}: starting {job}"], rate), *work),
                       exit_code=fault.exit_code if fault else 0, tail_s=0.0)

    def _writes(self, pod: dict[str, Any], container: dict[str, Any], job: str
                ) -> tuple[Line, ...]:
        """The files the job's own command writes under a bucket mount once it runs
        (`s3files`): a HyperPodPyTorchJob's container command (`hyperpodrun … sh -c …`), a
        RayJob's entrypoint (run on the head)."""
        argv = [str(a) for a in (container.get("command") or [])] + [
            str(a) for a in (container.get("args") or [])]
        if _labels(pod).get(RAY_NODE_TYPE) == "head":
            found = self.sim.kube.get_object(f"{RAYJOB[0]}/{RAYJOB[1]}", RAYJOB[3], job,
                                             _md(pod).get("namespace")) or {}
            try:
                argv = shlex.split(str((found.get("spec") or {}).get("entrypoint") or ""))
            except ValueError:
                argv = []
        return self.sim.files.effects(pod, container, argv)

    def _rendezvous(self, pod: dict[str, Any]) -> Callable[[], bool]:
        """Whether every pod of the pod's job runs: a distributed job's processes wait in
        their rendezvous (hyperpodrun/torchrun `--nnodes`) until all its nodes have joined,
        and KubeRay submits a RayJob's entrypoint only once its Ray cluster is up. So a job
        whose pods cannot all be scheduled never makes progress — it waits, its unplaced pods
        Pending with FailedScheduling — instead of running its pods one after another.
        (torchrun's join timeout is not played: the job waits until deleted.)"""
        owner = next((r for r in _md(pod).get("ownerReferences") or [] if r.get("controller")),
                     {})
        namespace, uid = _md(pod).get("namespace"), str(owner.get("uid"))
        kind = HPJ if owner.get("kind") == HPJ[3] else RAYJOB

        def ready() -> bool:
            job = next((j for j in self._list(kind) if str(_md(j).get("uid")) == uid), None)
            if job is None:
                return False
            wanted = len(self._replicas(job) if kind is HPJ else self._ray_pods(job))
            return self._all_running(job, namespace, wanted)

        return ready

    def _all_running(self, job: dict[str, Any], namespace: str | None, wanted: int) -> bool:
        uid = str(_md(job).get("uid"))
        mine = [p for p in self.sim._list("pods") if _md(p).get("namespace") == namespace
                and any(str(r.get("uid")) == uid for r in _md(p).get("ownerReferences") or [])]
        return len(mine) >= wanted and all(
            (p.get("status") or {}).get("phase") == "Running" for p in mine)

    def _timed(self, texts: list[str], rate: float) -> tuple[Line, ...]:
        """The lines at `rate` per simulated second, grouped so that no more than
        MAX_TIMERS_PER_REAL_S timers fire per real second."""
        per_timer = max(1, math.ceil(rate * self.sim.speed() / MAX_TIMERS_PER_REAL_S))
        return tuple(Line(len(chunk) / rate, "\n".join(chunk))
                     for chunk in (texts[i:i + per_timer]
                                   for i in range(0, len(texts), per_timer)))

    # --- reconciling ----------------------------------------------------------------------

    def _rt(self, kind: tuple[str, str, str, str]) -> Any:
        return self.sim.kube.catalog.lookup(kind[0], kind[1], kind[2])

    def _list(self, kind: tuple[str, str, str, str]) -> list[dict[str, Any]]:
        rt = self._rt(kind)
        if rt is None:
            return []
        items, _, _, _ = self.sim.kube.store.list(rt, None, lambda _o: True)
        return items

    def reconcile(self) -> None:
        pods = self.sim._list("pods")
        by_owner: dict[str, list[dict[str, Any]]] = {}
        for pod in pods:
            for ref in _md(pod).get("ownerReferences") or []:
                by_owner.setdefault(str(ref.get("uid")), []).append(pod)
        for job in self._list(HPJ):
            self._pytorch_job(job, by_owner.get(str(_md(job).get("uid")), []))
        for job in self._list(RAYJOB):
            self._ray_job(job, by_owner.get(str(_md(job).get("uid")), []))

    def _owner(self, job: dict[str, Any], kind: tuple[str, str, str, str]) -> dict[str, Any]:
        md = _md(job)
        return {"apiVersion": f"{kind[0]}/{kind[1]}", "kind": kind[3], "name": md["name"],
                "uid": md["uid"], "controller": True, "blockOwnerDeletion": True}

    def _create_pod(self, job: dict[str, Any], kind: tuple[str, str, str, str], name: str,
                    template: dict[str, Any], labels: dict[str, str], manager: str) -> None:
        template = copy.deepcopy(template or {})
        meta = template.get("metadata") or {}
        spec = template.get("spec") or {}
        spec.setdefault("restartPolicy", "OnFailure")
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": _md(job).get("namespace"),
                            "labels": {**(meta.get("labels") or {}), **labels},
                            "annotations": dict(meta.get("annotations") or {}),
                            "ownerReferences": [self._owner(job, kind)]},
               "spec": spec}
        try:
            self.sim.kube.store.put(pod, manager)
        except (KubeError, ValueError) as exc:
            log.info("training simulator: pod %s not made: %s", name, exc)

    def _write_status(self, job: dict[str, Any], kind: tuple[str, str, str, str],
                      status: dict[str, Any], manager: str) -> None:
        if status == (job.get("status") or {}):
            return
        md = _md(job)
        body = {"apiVersion": f"{kind[0]}/{kind[1]}", "kind": kind[3],
                "metadata": {"name": md["name"]}, "status": status}
        with contextlib.suppress(KubeError):  # gone meanwhile
            self.sim.kube.store.replace(self._rt(kind), md.get("namespace"), md["name"], body,
                                        manager, "status", checks=Checks(mode=validation.STRICT))

    def _delete_pods(self, pods: list[dict[str, Any]]) -> None:
        rt = self.sim._type("pods")
        for pod in pods:
            md = _md(pod)
            with contextlib.suppress(KubeError):
                self.sim.kube.store.delete(rt, md.get("namespace"), md["name"], None)

    # --- HyperPodPyTorchJob ----------------------------------------------------------------

    @staticmethod
    def _replicas(job: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        out = []
        for spec in (job.get("spec") or {}).get("replicaSpecs") or []:
            for i in range(int(spec.get("replicas") or 0)):
                out.append((f"{_md(job)['name']}-{spec.get('name')}-{i}",
                            spec.get("template") or {}))
        return out

    def _pytorch_job(self, job: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        md, status = _md(job), copy.deepcopy(job.get("status") or {})
        if md.get("deletionTimestamp"):
            return
        old = status.get("conditions") or []
        if any(c.get("type") in ("Completed", "Failed") and c.get("status") == "True"
               for c in old):
            return
        name = md["name"]
        run_policy = (job.get("spec") or {}).get("runPolicy") or {}
        if run_policy.get("suspend"):
            self._suspended(job, pods, old)
            return
        existing = {str(_md(p).get("name")): p for p in pods}
        for pod_name, template in self._replicas(job):
            if pod_name not in existing:
                self._create_pod(job, HPJ, pod_name, template, {JOB_LABEL: name}, OPERATOR)
        allowed = run_policy.get("jobMaxRetryCount")
        restarts, waiting_restart = 0, False
        for pod in pods:
            restarts_in_place = (pod.get("spec") or {}).get("restartPolicy") != "Never"
            for cs in (pod.get("status") or {}).get("containerStatuses") or []:
                restarts += int(cs.get("restartCount") or 0)
                state = cs.get("state") or {}
                reason = (state.get("waiting") or {}).get("reason")
                failed = (state.get("terminated") or {}).get("exitCode") not in (None, 0)
                if reason == "CrashLoopBackOff" or (failed and restarts_in_place):
                    restarts += 1  # the agent restarts it: counted when decided
                    waiting_restart = True
        phases = [(p.get("status") or {}).get("phase", "Pending") for p in pods]
        wanted = len(self._replicas(job))
        status.setdefault("startTime", stamp())
        conditions = [_condition("Created", "JobCreated",
                                 f"HyperPodPyTorchJob {name} is created.", old)]
        exhausted = allowed is not None and restarts > int(allowed)
        if exhausted:
            restarts = int(allowed)
        if exhausted or "Failed" in phases:
            why = (f"job {name} exceeded its retry limit of {allowed} restarts"
                   if exhausted else f"a pod of job {name} failed")
            conditions.append(_condition("Failed", "JobFailed", why, old))
            status["completionTime"] = stamp()
            if run_policy.get("cleanPodPolicy", "All") != "None":
                self._delete_pods(pods)
        elif pods and len(pods) == wanted and all(p == "Succeeded" for p in phases):
            conditions.append(_condition("Completed", "JobSucceeded",
                                         f"HyperPodPyTorchJob {name} completed.", old))
            status["completionTime"] = stamp()
        elif pods and len(pods) == wanted and all(p == "Running" for p in phases):
            conditions.append(_condition("Running", "JobRunning",
                                         f"HyperPodPyTorchJob {name} is running.", old))
            if waiting_restart:
                conditions.append(_condition("Restarting", "JobRestarting",
                                             f"a process of {name} is being restarted", old))
        status["conditions"] = conditions
        status["restartCount"] = restarts
        status["jobPods"] = [{"apiVersion": "v1", "kind": "Pod", "name": _md(p)["name"],
                              "namespace": _md(p).get("namespace"), "uid": _md(p).get("uid")}
                             for p in sorted(pods, key=lambda p: _md(p)["name"])]
        replicas = self._replicas(job)
        first = existing.get(replicas[0][0]) if replicas else None
        if first and (first.get("status") or {}).get("podIP"):
            status["masterAddr"] = first["status"]["podIP"]
            status["masterPort"] = MASTER_PORT
        self._write_status(job, HPJ, status, OPERATOR)

    def _suspended(self, job: dict[str, Any], pods: list[dict[str, Any]],
                   old: list[dict[str, Any]]) -> None:
        """`runPolicy.suspend` (Kueue holds the job until it is admitted, or evicted it): no
        pods — those running go — and a Suspended condition, as Kubeflow's operators do."""
        self._delete_pods(pods)
        status = copy.deepcopy(job.get("status") or {})
        status["conditions"] = [
            _condition("Created", "JobCreated",
                       f"HyperPodPyTorchJob {_md(job)['name']} is created.", old),
            _condition("Suspended", "JobSuspended",
                       f"HyperPodPyTorchJob {_md(job)['name']} is suspended.", old)]
        status["jobPods"] = []
        status.pop("masterAddr", None)
        status.pop("masterPort", None)
        self._write_status(job, HPJ, status, OPERATOR)

    # --- RayJob ---------------------------------------------------------------------------------

    @staticmethod
    def _ray_pods(job: dict[str, Any]) -> list[tuple[str, str, str, dict[str, Any]]]:
        """(pod name, node type, group, template) of the job's Ray cluster."""
        name = _md(job)["name"]
        cluster = ((job.get("spec") or {}).get("rayClusterSpec")) or {}
        out = [(f"{name}-head", "head", "headgroup",
                (cluster.get("headGroupSpec") or {}).get("template") or {})]
        for group in cluster.get("workerGroupSpecs") or []:
            for i in range(int(group.get("replicas") or 0)):
                out.append((f"{name}-{group.get('groupName')}-worker-{i}", "worker",
                            str(group.get("groupName")), group.get("template") or {}))
        return out

    def _ray_job(self, job: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        md, status = _md(job), copy.deepcopy(job.get("status") or {})
        if md.get("deletionTimestamp") or status.get("jobDeploymentStatus") in (
                "Complete", "Failed"):
            return
        if (job.get("spec") or {}).get("suspend"):
            self._ray_suspended(job, pods)
            return
        if status.get("jobDeploymentStatus") == "Suspended":
            status.pop("startTime", None)  # resumed: KubeRay's Suspended → New → Initializing
        name, spec = md["name"], job.get("spec") or {}
        cluster = f"{name}-raycluster"
        existing = {str(_md(p).get("name")): p for p in pods}
        for pod_name, node_type, group, template in self._ray_pods(job):
            if pod_name not in existing:
                labels = {RAY_CLUSTER: cluster, RAY_NODE_TYPE: node_type, RAY_GROUP: group,
                          RAY_FROM_CRD: RAYJOB[3], RAY_FROM_NAME: name,
                          "app.kubernetes.io/created-by": KUBERAY}
                self._create_pod(job, RAYJOB, pod_name, template, labels, KUBERAY)
        head = existing.get(f"{name}-head")
        head_phase = ((head or {}).get("status") or {}).get("phase", "Pending")
        status.setdefault("startTime", stamp())
        status.setdefault("jobId", spec.get("jobId") or f"{name}-job")
        status["rayClusterName"] = cluster
        if head_phase in ("Succeeded", "Failed"):
            ok = head_phase == "Succeeded"
            status.update(jobStatus="SUCCEEDED" if ok else "FAILED",
                          jobDeploymentStatus="Complete" if ok else "Failed",
                          endTime=stamp(), succeeded=1 if ok else 0, failed=0 if ok else 1,
                          message="Job finished successfully." if ok else
                          "Job entrypoint command failed with exit code 1")
            if spec.get("shutdownAfterJobFinishes"):
                self._delete_pods(pods)
        elif head_phase == "Running" and self._all_running(
                job, md.get("namespace"), len(self._ray_pods(job))):
            status.update(jobStatus="RUNNING", jobDeploymentStatus="Running",
                          message="Job is currently running.")
        else:
            status.update(jobStatus="PENDING", jobDeploymentStatus="Initializing",
                          message="The Ray cluster is being created.")
        self._write_status(job, RAYJOB, status, KUBERAY)

    def _ray_suspended(self, job: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        """`spec.suspend` (Kueue holds the RayJob until admitted, or evicted it), as KubeRay
        v1.7.0's rayjob_controller plays it: the Ray cluster is torn down, `Suspending` while
        its pods are still there, then `Suspended` with the cluster's and the Ray job's
        fields cleared (a job created suspended passes Initializing, so it has a startTime)."""
        status = copy.deepcopy(job.get("status") or {})
        status.setdefault("startTime", stamp())
        if pods:
            self._delete_pods(pods)
            status["jobDeploymentStatus"] = "Suspending"
        else:
            for key in RAY_RESET_ON_SUSPEND:
                status.pop(key, None)
            status["jobDeploymentStatus"] = "Suspended"
        self._write_status(job, RAYJOB, status, KUBERAY)
