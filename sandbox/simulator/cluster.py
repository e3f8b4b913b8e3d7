"""The controllers of one local Kubernetes: volume binder, scheduler and kubelets.

One `ClusterSimulator` per cluster runs on the local Kubernetes' event loop. It follows the
cluster's change feed (every write, through the API or in-process) and, whenever pods,
nodes, volumes or claims change, reconciles:

1. the EBS CSI provisioner (`provisioner.plan`) makes volumes for claims of its storage
   classes, and the binder (`volumes.plan`) binds claims to volumes;
2. the scheduler (`scheduling.place`) binds each unscheduled pod (`spec.nodeName`,
   condition PodScheduled, event `Scheduled`) or reports why it cannot (PodScheduled False
   `Unschedulable`, event `FailedScheduling`), trying again when the cluster changes;
3. the kubelet of each node starts the pods bound to it (`pods.PodRun`) and moves their
   containers on with timers, writing status, logs and events (Pulling, Pulled, Created,
   Started, BackOff) as it goes. A pod with a secret volume whose Secret does not exist
   (and is not `optional`) stays `ContainerCreating`, with `FailedMount` events, until it
   does (tried again after 0.5 s, doubling up to 2m2s, as the kubelet's volume manager).

Only pods the simulator itself started are moved on: a pod whose status someone else wrote
(a test, or a later simulator playing another controller) is left to them. Delays are
simulated seconds divided by the sandbox's speed. Pod IPs come from the node's /16, from
its upper half, unique in the cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import time
from collections.abc import Callable
from typing import Any

from sandbox.kube.errors import KubeError
from sandbox.kube.objects import now as stamp
from sandbox.kube.patches import MERGE_PATCH
from sandbox.kube.store import Event
from sandbox.kube.streams import CLOSING
from sandbox.simulator import provisioner, scheduling, volumes
from sandbox.simulator.inference import InferenceOperator
from sandbox.simulator.kueue import KueueController
from sandbox.simulator.pods import (
    PULL_S,
    TERMINAL,
    ContainerRun,
    PodRun,
    backoff_s,
    container_id,
    qos_class,
)
from sandbox.simulator.programs import Line, Programs
from sandbox.simulator.s3files import ScriptFiles
from sandbox.simulator.training import TrainingBook, TrainingControllers
from sandbox.simulator.workloads import PLURALS as WORKLOAD_PLURALS
from sandbox.simulator.workloads import WORKLOAD_KINDS, Workloads
from sandbox.simulator.workspaces import WorkspaceController

log = logging.getLogger(__name__)

WATCHED = frozenset({("", "pods"), ("", "nodes"), ("", "persistentvolumes"),
                     ("", "persistentvolumeclaims"), ("storage.k8s.io", "storageclasses"),
                     ("storage.k8s.io", "csidrivers")}) | WORKLOAD_KINDS
VOLUME_KINDS = frozenset({"persistentvolumes", "persistentvolumeclaims", "storageclasses",
                          "csidrivers"})
SCHEDULER = "default-scheduler"
KUBELET = "kubelet"
BINDER = "persistentvolume-controller"
PROVISIONER = "ebs-csi-controller"
GATED = "Scheduling is blocked due to non-empty scheduling gates"
"""kube-scheduler's PodScheduled message for a pod with scheduling gates."""
MOUNT_RETRY_S = (0.5, 122.0)
"""The kubelet's volume manager tries a failed mount again after 0.5 s, doubling up to 2m2s."""


def _md(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


class ClusterSimulator:
    """Binder, scheduler and kubelets of one `LocalKube` (see the module docstring)."""

    def __init__(self, kube: Any, speed: Callable[[], float],
                 programs: Programs | None = None, training: TrainingBook | None = None) -> None:
        self.kube = kube
        self.speed = speed
        self.programs = programs or Programs()
        self.objects: Any = None
        """The local AWS's S3 (`downloads.ObjectStore`), set by the local AWS: where a
        container's files under a bucket mount go (`s3files`); None keeps nothing."""
        self.files = ScriptFiles(kube, lambda: self.objects)
        self.programs.register(self.files)  # asked after every workload's own resolver
        self.training = TrainingControllers(self, training or TrainingBook())
        self.kueue = KueueController(self)
        self.runs: dict[str, PodRun] = {}  # pod uid → its run
        self._timers: dict[str, list[asyncio.TimerHandle]] = {}
        self._task: asyncio.Task[None] | None = None
        self._failed_messages: dict[str, str] = {}  # pod uid → last FailedScheduling message
        # (pod uid, container) → (its run, container, restart, the gated line it waits at)
        self._parked: dict[tuple[str, str], tuple[PodRun, ContainerRun, int, int]] = {}
        self._ips: set[str] = set()
        # (pod uid, field path, reason, message) → (event name, first seen, count)
        self._events: dict[tuple[str, str, str, str], tuple[str, str, int]] = {}
        self.workloads = Workloads(kube, self.programs)
        self.inference = InferenceOperator(self)
        self.workspaces = WorkspaceController(self)
        kube.service_proxy = self.workloads.proxy
        kube.pod_port = self.workloads.pod_port

    # --- lifecycle (called on the cluster's event loop) ---------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._follow())

    def stop(self) -> None:
        for handles in self._timers.values():
            for handle in handles:
                handle.cancel()
        self._timers.clear()
        if self._task is not None:
            self._task.cancel()

    async def _follow(self) -> None:
        queue = self.kube.subscribe()
        try:
            self._reconcile(set(VOLUME_KINDS) | {"pods"})
            while True:
                item = await queue.get()
                if item is CLOSING:
                    return
                changed = self._relevant(item)
                while not queue.empty():  # one reconcile for a burst of changes
                    more = queue.get_nowait()
                    if more is CLOSING:
                        return
                    changed |= self._relevant(more)
                if changed:
                    self._reconcile(changed)
        except asyncio.CancelledError:
            pass
        finally:
            self.kube.unsubscribe(queue)

    def _relevant(self, item: Any) -> set[str]:
        """The kind an event changed, if the controllers care."""
        if isinstance(item, Event) and self.training.watches(item):
            return {"training-jobs"}
        if isinstance(item, Event) and self.kueue.watches(item):
            return {"kueue"}
        if isinstance(item, Event) and self.inference.watches(item):
            return {"inference-endpoints"}
        if isinstance(item, Event) and self.workspaces.watches(item):
            return {"workspaces"}
        if not isinstance(item, Event) or (item.group, item.plural) not in WATCHED:
            return set()
        if item.plural == "pods" and item.type == "DELETED":
            self._forget(str(_md(item.obj).get("uid")))
        return {item.plural}

    def _reconcile(self, changed: set[str]) -> None:
        """Run the controllers a change concerns (node updates alone, frequent on a big
        cluster, cost nothing while no pod waits)."""
        steps = []
        if changed & {"training-jobs", "kueue", "jobs", "pods"}:  # first: it holds queued work
            steps.append(self.kueue.reconcile)
        if changed & {"inference-endpoints", "deployments", "services"}:
            steps.append(self.inference.reconcile)
        if changed & {"workspaces", "deployments", "services"}:
            steps.append(self.workspaces.reconcile)
        if changed & WORKLOAD_PLURALS:
            steps.append(self.workloads.reconcile)
        if changed & VOLUME_KINDS:
            steps.append(self._bind_volumes)
        if changed & {"training-jobs", "pods"}:
            steps.append(self.training.reconcile)
        if changed & {"pods", "nodes", "persistentvolumeclaims"}:
            steps.append(self._pods)
        for step in steps:
            try:
                step()
            except Exception:  # a sandbox bug must not stop the controllers
                log.exception("simulator: %s failed in %s", step.__name__, self.kube.name)

    def _pods(self) -> None:
        """Schedule what waits, then start what is bound to a node and not yet started."""
        if self._parked:
            self._open_gates()
        pods = self._list("pods")
        for pod in pods:
            if self._gated(pod):
                self._unschedulable(pod, GATED, "SchedulingGated")
        waiting = [p for p in pods if self._unscheduled(p)]
        unstarted = [p for p in pods if (p.get("spec") or {}).get("nodeName")
                     and str(_md(p).get("uid")) not in self.runs]
        if not waiting and not unstarted:
            return
        nodes = self._list("nodes")
        if waiting:
            self._schedule(pods, waiting, nodes)
        self._start_pods(nodes)

    # --- store access ---------------------------------------------------------------------

    def _type(self, plural: str) -> Any:
        return self.kube.catalog.lookup("", "v1", plural)

    def _list(self, plural: str) -> list[dict[str, Any]]:
        items, _, _, _ = self.kube.store.list(self._type(plural), None, lambda _o: True)
        return items

    def _write_status(self, plural: str, namespace: str | None, name: str,
                      status: dict[str, Any], manager: str) -> None:
        kind = self._type(plural).kind
        body = {"apiVersion": "v1", "kind": kind, "metadata": {"name": name}, "status": status}
        with contextlib.suppress(KubeError):  # gone meanwhile
            self.kube.store.replace(self._type(plural), namespace, name, body, manager, "status")

    def _patch(self, plural: str, namespace: str | None, name: str, patch: dict[str, Any],
               manager: str) -> None:
        with contextlib.suppress(KubeError):
            self.kube.store.patch(self._type(plural), namespace, name, MERGE_PATCH, patch,
                                  manager)

    def _event(self, obj: dict[str, Any], kind: str, reason: str, message: str,
               component: str, host: str | None = None, field_path: str | None = None) -> None:
        """Record an Event; a repeat of the same one (same object, field, reason and
        message) counts up on the first, as the event recorder's correlator does."""
        md = _md(obj)
        when = stamp()
        key = (str(md.get("uid")), field_path or "", reason, message)
        seen = self._events.get(key)
        if seen is not None:
            name, first, count = seen
            count += 1
        else:
            name, first, count = f"{md.get('name')}.{time.time_ns():x}", when, 1
        self._events[key] = (name, first, count)
        involved = {"kind": obj.get("kind", "Pod"), "namespace": md.get("namespace"),
                    "name": md.get("name"), "uid": md.get("uid"),
                    "apiVersion": obj.get("apiVersion", "v1"),
                    "resourceVersion": md.get("resourceVersion")}
        if field_path:
            involved["fieldPath"] = field_path
        source: dict[str, Any] = {"component": component}
        if host:
            source["host"] = host
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": md.get("namespace") or "default"},
            "involvedObject": involved, "reason": reason, "message": message, "type": kind,
            "source": source, "firstTimestamp": first, "lastTimestamp": when, "count": count,
            "eventTime": None, "reportingComponent": component, "reportingInstance": host or "",
        }
        try:
            self.kube.store.put(event, component)
        except (KubeError, ValueError):
            log.debug("simulator: event %s for %s not written", reason, md.get("name"))

    # --- the binder -----------------------------------------------------------------------

    def _provision(self) -> None:
        """The EBS CSI provisioner and the default storage class (`provisioner.plan`)."""
        kube = self.kube
        drivers = {str(_md(d).get("name")) for d in kube.list_objects("storage.k8s.io/v1",
                                                                      "CSIDriver")}
        for action in provisioner.plan(self._list("persistentvolumeclaims"),
                                       self._list("persistentvolumes"),
                                       kube.list_objects("storage.k8s.io/v1", "StorageClass"),
                                       drivers):
            if action.verb == "claim":
                self._patch("persistentvolumeclaims", action.namespace, action.name,
                            action.body or {}, PROVISIONER)
            elif action.verb == "create" and action.body is not None:
                try:
                    kube.store.put(action.body, PROVISIONER)
                except (KubeError, ValueError):
                    log.debug("simulator: volume %s not made", action.name)
            else:
                kube.store.remove(self._type("persistentvolumes"), None, action.name)

    def _bind_volumes(self) -> None:
        self._provision()
        for change in volumes.plan(self._list("persistentvolumes"),
                                   self._list("persistentvolumeclaims")):
            plural = ("persistentvolumes" if change.kind == "PersistentVolume"
                      else "persistentvolumeclaims")
            if change.patch:
                self._patch(plural, change.namespace, change.name, change.patch, BINDER)
            if change.status is not None:
                self._write_status(plural, change.namespace, change.name, change.status, BINDER)

    # --- the scheduler --------------------------------------------------------------------

    @staticmethod
    def _claims_problem(pod: dict[str, Any], claims: dict[tuple[str, str], Any]) -> str | None:
        namespace = _md(pod).get("namespace") or "default"
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            claim_name = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if not claim_name:
                continue
            claim = claims.get((namespace, claim_name))
            if claim is None:
                return f'persistentvolumeclaim "{claim_name}" not found'
            if (claim.get("status") or {}).get("phase") != "Bound":
                return "pod has unbound immediate PersistentVolumeClaims"
        return None

    @staticmethod
    def _unscheduled(pod: dict[str, Any]) -> bool:
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        return not (spec.get("nodeName") or _md(pod).get("deletionTimestamp")
                    or status.get("phase", "Pending") != "Pending"
                    or (spec.get("schedulerName") or SCHEDULER) != SCHEDULER
                    or spec.get("schedulingGates"))

    @staticmethod
    def _gated(pod: dict[str, Any]) -> bool:
        """A pending pod the scheduler leaves alone: its scheduling gates are not all gone
        (Kueue's holds a queued pod until its Workload is admitted)."""
        spec = pod.get("spec") or {}
        return bool(spec.get("schedulingGates")) and not spec.get("nodeName") \
            and not _md(pod).get("deletionTimestamp")

    def _schedule(self, pods: list[dict[str, Any]], waiting: list[dict[str, Any]],
                  nodes: list[dict[str, Any]]) -> None:
        claims = {(_md(c).get("namespace"), _md(c).get("name")): c
                  for c in self._list("persistentvolumeclaims")}
        for pod in sorted(waiting, key=lambda p: _md(p).get("creationTimestamp") or ""):
            problem = self._claims_problem(pod, claims)
            placement = (scheduling.Placement(None, f"0/{len(nodes)} nodes are available: "
                                                    f"{problem}.") if problem
                         else scheduling.place(pod, nodes, pods))
            if placement.node is None:
                self._unschedulable(pod, placement.message)
                continue
            self._bind(pod, placement.node)
            pod.setdefault("spec", {})["nodeName"] = placement.node  # counts for the next pods

    def _bind(self, pod: dict[str, Any], node: str) -> None:
        md = _md(pod)
        self._patch("pods", md.get("namespace"), md["name"], {"spec": {"nodeName": node}},
                    SCHEDULER)
        condition = {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                     "lastTransitionTime": stamp()}
        self._write_status("pods", md.get("namespace"), md["name"],
                           {"phase": "Pending", "conditions": [condition]}, SCHEDULER)
        self._failed_messages.pop(str(md.get("uid")), None)
        self._event(pod, "Normal", "Scheduled",
                    f"Successfully assigned {md.get('namespace')}/{md.get('name')} to {node}",
                    SCHEDULER)

    def _unschedulable(self, pod: dict[str, Any], message: str,
                       reason: str = "Unschedulable") -> None:
        """PodScheduled False with the reason (a gated pod's `SchedulingGated`, without an
        event, as kube-scheduler writes it), or Unschedulable with FailedScheduling."""
        md = _md(pod)
        uid = str(md.get("uid"))
        if self._failed_messages.get(uid) == message:
            return
        self._failed_messages[uid] = message
        condition = {"type": "PodScheduled", "status": "False", "lastProbeTime": None,
                     "lastTransitionTime": stamp(), "reason": reason,
                     "message": message}
        self._write_status("pods", md.get("namespace"), md["name"],
                           {"phase": "Pending", "conditions": [condition]}, SCHEDULER)
        if reason == "Unschedulable":
            self._event(pod, "Warning", "FailedScheduling", message, SCHEDULER)

    # --- the kubelets ---------------------------------------------------------------------

    def _start_pods(self, node_list: list[dict[str, Any]]) -> None:
        nodes = {str(_md(n).get("name")): n for n in node_list}
        for pod in self._list("pods"):
            md, spec, status = _md(pod), pod.get("spec") or {}, pod.get("status") or {}
            uid = str(md.get("uid"))
            if uid in self.runs or spec.get("nodeName") not in nodes:
                continue
            if podip := status.get("podIP"):
                self._ips.add(podip)
            if status.get("phase", "Pending") != "Pending" or status.get("containerStatuses"):
                continue  # someone else runs it
            self._start(pod, nodes[spec["nodeName"]])

    def _node_ip(self, node: dict[str, Any]) -> str:
        for item in (node.get("status") or {}).get("addresses") or []:
            if item.get("type") == "InternalIP":
                return str(item.get("address"))
        return "10.0.0.1"

    def _allocate_ip(self, node_ip: str) -> str:
        network = ipaddress.ip_network(f"{node_ip}/16", strict=False)
        taken = self._ips | {self._node_ip(n) for n in self._list("nodes")}
        for offset in range(network.num_addresses // 2, network.num_addresses - 1):
            candidate = str(network.network_address + offset)
            if candidate not in taken and candidate.rsplit(".", 1)[-1] not in ("0", "255"):
                self._ips.add(candidate)
                return candidate
        return node_ip

    def _container_runs(self, pod: dict[str, Any], key: str, init: bool) -> list[ContainerRun]:
        runs = []
        for c in (pod.get("spec") or {}).get(key) or []:
            probe = c.get("readinessProbe")
            runs.append(ContainerRun(
                name=str(c.get("name")), image=str(c.get("image", "")),
                program=self.programs.program(pod, c), init=init,
                ready_delay_s=float(probe.get("initialDelaySeconds", 0)) if probe else None))
        return runs

    def _start(self, pod: dict[str, Any], node: dict[str, Any]) -> None:
        md, spec = _md(pod), pod.get("spec") or {}
        run = PodRun(
            uid=str(md.get("uid")), namespace=str(md.get("namespace")), name=str(md["name"]),
            node=str(spec["nodeName"]), restart_policy=spec.get("restartPolicy") or "Always",
            host_ip=self._node_ip(node),
            init=self._container_runs(pod, "initContainers", True),
            main=self._container_runs(pod, "containers", False),
            start_time=stamp(), qos=qos_class(pod))
        run.init_done = not run.init
        self.runs[run.uid] = run
        self._publish(run)
        self._after(run, PULL_S, lambda: self._sandbox_ready(run))

    def _after(self, run: PodRun, seconds: float, action: Callable[[], None]) -> None:
        if run.stopped:
            return
        loop = asyncio.get_running_loop()
        delay = max(0.0, seconds) / max(self.speed(), 1e-9)

        def fire() -> None:
            if not run.stopped:
                try:
                    action()
                except Exception:
                    log.exception("simulator: pod %s/%s", run.namespace, run.name)

        self._timers.setdefault(run.uid, []).append(loop.call_later(delay, fire))

    def _forget(self, uid: str) -> None:
        run = self.runs.pop(uid, None)
        if run is not None:
            run.stopped = True
        for handle in self._timers.pop(uid, []):
            handle.cancel()
        for key in [k for k in self._parked if k[0] == uid]:
            del self._parked[key]
        self._failed_messages.pop(uid, None)
        for key in [k for k in self._events if k[0] == uid]:
            del self._events[key]

    def _pod(self, run: PodRun) -> dict[str, Any] | None:
        try:
            return self.kube.store.get(self._type("pods"), run.namespace, run.name)
        except KubeError:
            return None

    def _publish(self, run: PodRun) -> None:
        pod = self._pod(run)
        if pod is None or str(_md(pod).get("uid")) != run.uid:
            self._forget(run.uid)
            return
        scheduled = next((c for c in (pod.get("status") or {}).get("conditions") or []
                          if c.get("type") == "PodScheduled"), None)
        self._write_status("pods", run.namespace, run.name, run.status(scheduled, stamp()),
                           KUBELET)

    def _container_event(self, run: PodRun, c: ContainerRun, kind: str, reason: str,
                         message: str) -> None:
        pod = self._pod(run)
        if pod is not None:
            key = "initContainers" if c.init else "containers"
            self._event(pod, kind, reason, message, KUBELET, run.node, f"spec.{key}{{{c.name}}}")

    def _missing_secrets(self, pod: dict[str, Any]) -> list[tuple[str, str]]:
        """(volume, Secret) for each secret volume whose Secret is not in the pod's namespace
        (an `optional` one may be missing)."""
        missing = []
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            source = volume.get("secret")
            if not source or source.get("optional"):
                continue
            name = str(source.get("secretName") or "")
            try:
                self.kube.store.get(self._type("secrets"), _md(pod).get("namespace"), name)
            except KubeError:
                missing.append((str(volume.get("name")), name))
        return missing

    def _sandbox_ready(self, run: PodRun, retry_s: float = MOUNT_RETRY_S[0]) -> None:
        pod = self._pod(run)
        if pod is None:
            return
        missing = self._missing_secrets(pod)
        if missing:  # the kubelet mounts volumes before it makes the sandbox: it waits
            for volume, secret in missing:
                self._event(pod, "Warning", "FailedMount",
                            f'MountVolume.SetUp failed for volume "{volume}" : secret '
                            f'"{secret}" not found', KUBELET, run.node)
            later = min(retry_s * 2, MOUNT_RETRY_S[1])
            self._after(run, retry_s, lambda: self._sandbox_ready(run, later))
            return
        host_network = bool((pod.get("spec") or {}).get("hostNetwork"))
        run.pod_ip = run.host_ip if host_network else self._allocate_ip(run.host_ip)
        if run.init:
            self._run_container(run, run.init[0])
        else:
            for c in run.main:
                self._run_container(run, c)
        self._publish(run)

    def _run_container(self, run: PodRun, c: ContainerRun) -> None:
        first = c.restart_count == 0 and c.state == "waiting" and not c.container_id
        if first:
            self._container_event(run, c, "Normal", "Pulling", f'Pulling image "{c.image}"')
            self._container_event(run, c, "Normal", "Pulled",
                                  f'Successfully pulled image "{c.image}" in '
                                  f"{PULL_S:.0f}s ({PULL_S:.0f}s including waiting)")
        c.container_id = container_id(run.uid, c.name, c.restart_count)
        c.state, c.reason, c.message = "running", "", ""
        c.started_at, c.finished_at, c.exit_code = stamp(), None, None
        c.ready = c.ready_delay_s is None or c.ready_delay_s <= 0
        self._container_event(run, c, "Normal", "Created", f"Created container: {c.name}")
        self._container_event(run, c, "Normal", "Started", f"Started container {c.name}")
        restart = c.restart_count
        if not c.ready and c.ready_delay_s is not None:
            self._after(run, c.ready_delay_s, lambda: self._ready(run, c, restart))
        self._play(run, c, restart)

    def _play(self, run: PodRun, c: ContainerRun, restart: int, start: int = 0,
              opened: bool = False) -> None:
        """Time the program's lines from `start` on, then its exit; stop at a gated line
        (unless its gate just `opened`) and wait there (`_parked`)."""
        lines = c.program.lines
        elapsed = 0.0
        for index in range(start, len(lines)):
            line = lines[index]
            if line.gate is not None and not (opened and index == start):
                self._after(run, elapsed, lambda i=index: self._park(run, c, restart, i))
                return
            elapsed += line.after_s
            self._after(run, elapsed, lambda ln=line: self._log(run, c, ln, restart))
        if c.program.exit_code is not None:
            code = c.program.exit_code
            self._after(run, elapsed + c.program.tail_s, lambda: self._exit(run, c, code, restart))

    def _park(self, run: PodRun, c: ContainerRun, restart: int, index: int) -> None:
        if c.restart_count != restart or c.state != "running":
            return
        self._parked[(run.uid, c.name)] = (run, c, restart, index)
        self._open_gates()

    def _open_gates(self) -> None:
        """Go on with each parked container whose gate now holds (one gone or restarted
        meanwhile is dropped)."""
        for key, (run, c, restart, index) in list(self._parked.items()):
            if run.stopped or c.restart_count != restart or c.state != "running":
                del self._parked[key]
                continue
            gate = c.program.lines[index].gate
            if gate is None or gate():
                del self._parked[key]
                self._play(run, c, restart, index, opened=True)

    def _log(self, run: PodRun, c: ContainerRun, line: Line, restart: int) -> None:
        if c.restart_count == restart and c.state == "running":
            if line.effect is not None:
                line.effect()
            if line.text is not None:
                self.kube.logs.append(run.namespace, run.name, c.name, line.text, restart)

    def _ready(self, run: PodRun, c: ContainerRun, restart: int) -> None:
        if c.restart_count == restart and c.state == "running":
            c.ready = True
            self._publish(run)

    def _exit(self, run: PodRun, c: ContainerRun, code: int, restart: int) -> None:
        if c.restart_count != restart or c.state != "running":
            return
        c.state, c.exit_code, c.finished_at, c.ready = "terminated", code, stamp(), False
        if c.init:
            self._init_exited(run, c)
        elif run.restarts(code):
            self._back_off(run, c)
        self._publish(run)
        if run.phase in TERMINAL:
            self._forget_timers(run)

    def _init_exited(self, run: PodRun, c: ContainerRun) -> None:
        if c.exit_code == 0:
            rest = [i for i in run.init if i.state == "waiting"]
            if rest:
                self._run_container(run, rest[0])
            else:
                run.init_done = True
                for main in run.main:
                    self._run_container(run, main)
        elif run.restart_policy == "Never":
            run.failed_init = True
        else:
            self._back_off(run, c)

    def _back_off(self, run: PodRun, c: ContainerRun) -> None:
        wait = backoff_s(c.restart_count)
        self._container_event(run, c, "Warning", "BackOff",
                              f"Back-off restarting failed container {c.name} in pod "
                              f"{run.name}_{run.namespace}({run.uid})")

        def restart() -> None:
            c.restart_count += 1
            c.program = self._program_again(run, c)
            self._run_container(run, c)
            self._publish(run)

        def waiting() -> None:
            c.last_terminated = c.terminated()
            c.state, c.reason = "waiting", "CrashLoopBackOff"
            c.message = (f"back-off {int(wait)}s restarting failed container={c.name} "
                         f"pod={run.name}_{run.namespace}({run.uid})")
            self._publish(run)

        self._after(run, 0.001, waiting)
        self._after(run, wait, restart)

    def _program_again(self, run: PodRun, c: ContainerRun) -> Any:
        """What a restarted container runs this time (the book may answer differently)."""
        pod = self._pod(run)
        key = "initContainers" if c.init else "containers"
        spec = next((s for s in ((pod or {}).get("spec") or {}).get(key) or []
                     if s.get("name") == c.name), None)
        return self.programs.program(pod, spec) if pod and spec else c.program

    def _forget_timers(self, run: PodRun) -> None:
        for handle in self._timers.pop(run.uid, []):
            handle.cancel()
