"""The Spaces add-on's workspace controller (jupyter-infra/jupyter-k8s) in a local Kubernetes.

AWS's `amazon-sagemaker-spaces` add-on runs the open-source jupyter-k8s controller; the
sandbox plays what it does with a `workspace.jupyter.org/v1alpha1` Workspace, as far as hypd
relies on it (upstream's internal/controller: workspace_controller.go, state_machine.go,
status_manager.go, conditions.go, *_builder.go, idle_detectors.go), and only while the
add-on's controller Deployment (`jupyter-k8s-system/jupyter-k8s-controller-manager`) is
available — before the add-on nothing happens, as on a cluster without it.

- It adds its finalizer `workspace.jupyter.org/workspace-protection` and the access strategy
  labels (`workspace.jupyter.org/access-strategy-name`/`-namespace`) first, in one update.
- **Running** (spec.desiredStatus Running or unset): the home PVC `workspace-<name>-pvc`
  when spec.storage is given (ReadWriteOnce, its size — 10Gi by default — and storage
  class), the Deployment `workspace-<name>` (1 replica, Recreate; one container `workspace`
  with the image, resources — 100m/128Mi requested by default —, port `http` 8888, the home
  PVC at storage.mountPath, /home/jovyan by default, and each spec.volumes claim at its
  mountPath; nodeSelector, affinity, tolerations as given) and the ClusterIP Service
  `workspace-<name>-service` (port `http` 8888). All three carry `app: jupyter`,
  `workspace.jupyter.org/workspace-name`, `workspace.jupyter.org/component: workspace`
  (the Deployment and its pods the Workspace's own labels and annotations too — upstream's
  deployment_builder.go buildObjectMeta / buildPodLabels copy every one, so a team's space's
  pod carries Kueue's queue and priority-class labels and the sandbox's Kueue queues it) and a
  controller ownerReference to the Workspace. The workload controllers, binder, scheduler
  and kubelets then run the pod: one that fits no node stays Pending with the scheduler's
  FailedScheduling event. Once the Deployment is Available: status Available=True
  (`ResourcesReady`), event WorkspaceRunning, and — when spec.accessStrategy names a
  WorkspaceAccessStrategy that exists — `accessURL` and `applicationBasePath` from its
  `accessURLTemplate` / `applicationBasePathTemplate` (Go templates over `.Workspace`,
  `.AccessStrategy`, `.Service`: the field paths and `b32encode` are rendered). A strategy
  named but missing stops the reconcile there (upstream returns an error): no status.
  Before that, upstream's starting status — Available=False, Progressing=True with reason
  `ResourcesNotReady` ("Workspace is starting") while the compute is not ready (upstream
  checks access only once compute and service are up, so `ComputeNotReady` never shows on
  this path), `deploymentName`, `serviceName`.
- **Stopped**: the Deployment and Service are deleted (upstream deletes them; it does not
  scale to 0), the home PVC kept; accessURL cleared; once both are gone: Stopped=True
  (`AllResourcesStopped`), Available=False (`DesiredStateStopped`), event WorkspaceStopped,
  `deploymentName`/`serviceName` cleared.
- **Idle shutdown** (spec.idleShutdown.enabled with detection.httpGet): once Available it
  asks the workspace's server `GET <applicationBasePath><httpGet.path>` through the
  Service (as the controller's network detector does; no base path rendered: the path
  alone), reads `lastActivityTimestamp` (`responseBodyPath`, by default
  `lastActiveTimestamp`; `format` RFC3339 — fractional seconds too — or unix) and, when
  now - last activity >=
  idleTimeoutInMinutes, records IdleShutdown and sets spec.desiredStatus Stopped itself.
  Time is the sandbox's clock: the check runs when the deadline comes (real time ÷ speed)
  and again whenever `POST /_sandbox/clock/advance` jumps past it (a change on the
  timeline). Upstream checks every 5 minutes; the sandbox checks at the deadline.
- **Deleted**: while its finalizer is there, Deleting=True, then the Deployment, Service
  and home PVC are deleted, then the finalizer removed (the API server then removes the
  Workspace). The local Kubernetes models finalizers and ownerReference garbage collection.

The objects are built by `workspace_objects` (upstream's builders). What the workspace's
container does is this module's resolver: an editor server on 8888 (`workspace_server`)
serving under the base path its command line names: JupyterLab's `<base>api/status` answers
`{"last_activity": RFC3339, ...}`, Code Editor's `/api/idle` at the root (whatever its base;
no `api/status`) `{"lastActiveTimestamp": RFC3339}`, neither counting as activity; any other
GET under the base is activity and answers the page listing the bucket mounted at /s3,
anything else is 404.
Nothing routes to it on the cluster's endpoint (an EKS endpoint serves the API only): it is
reached through `pods/portforward` or the service proxy.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from typing import TYPE_CHECKING, Any

from sandbox.kube.errors import KubeError
from sandbox.kube.objects import now as stamp
from sandbox.simulator import workspace_objects as build
from sandbox.simulator.programs import Program
from sandbox.simulator.workspace_objects import CONTAINER, STRATEGY_LABELS, names, render
from sandbox.simulator.workspace_server import WorkspaceServer
from sandbox.timing import Clock, Timeline

if TYPE_CHECKING:
    from sandbox.kube.store import Event
    from sandbox.simulator.cluster import ClusterSimulator

log = logging.getLogger(__name__)

GROUP, VERSION = "workspace.jupyter.org", "v1alpha1"
WORKSPACE = (GROUP, VERSION, "workspaces", "Workspace")
STRATEGY = (GROUP, VERSION, "workspaceaccessstrategies", "WorkspaceAccessStrategy")
CONTROLLER = "jupyter-k8s-controller-manager"
CONTROLLER_DEPLOYMENT = (CONTROLLER, "jupyter-k8s-system")
FINALIZER = "workspace.jupyter.org/workspace-protection"


def _md(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _condition(kind: str, ok: bool, reason: str, message: str, at: str) -> dict[str, Any]:
    return {"type": kind, "status": "True" if ok else "False", "reason": reason,
            "message": message, "lastTransitionTime": at}


def _merge(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """upstream's MergeConditionsIfChanged: nothing changes unless one condition does
    (then the set is written anew)."""
    before = {c.get("type"): c for c in old}
    if all((before.get(c["type"]) or {}).get(k) == c[k] for c in new
           for k in ("status", "reason", "message")):
        return old
    return [c for c in old if c.get("type") not in {n["type"] for n in new}] + new


class WorkspaceController:
    """The controller in one cluster (see the module docstring). The local AWS gives it
    its `clock` and `timeline`; a cluster without one keeps its own clock."""

    def __init__(self, sim: ClusterSimulator) -> None:
        self.sim = sim
        self.clock: Clock | None = None
        self.timeline: Timeline | None = None
        self.server = WorkspaceServer(sim, self.now)
        self._wakes: dict[str, float] = {}  # workspace uid → the idle deadline a wake is set for
        sim.programs.register(self.program)

    @staticmethod
    def watches(item: Event) -> bool:
        return item.group == GROUP and item.plural in (WORKSPACE[2], STRATEGY[2])

    def now(self) -> float:
        """Simulated seconds (the sandbox clock's)."""
        if self.clock is None:
            self.clock = Clock(self.sim.speed())
        return self.clock.now()

    def program(self, pod: dict[str, Any], container: dict[str, Any]) -> Program | None:
        if container.get("name") != CONTAINER or not self.server.workspace_of(pod):
            return None
        return self.server.program(pod)

    # --- store access ---------------------------------------------------------------------

    def _get(self, api_version: str, kind: str, name: str, namespace: str | None
             ) -> dict[str, Any] | None:
        return self.sim.kube.get_object(api_version, kind, name, namespace)

    def _put(self, obj: dict[str, Any]) -> None:
        try:
            self.sim.kube.store.put(obj, CONTROLLER)
        except (KubeError, ValueError) as exc:
            log.info("workspace controller: %s %s not made: %s", obj["kind"],
                     obj["metadata"]["name"], exc)

    def _delete(self, api_version: str, kind: str, name: str, namespace: str | None) -> None:
        rt = self.sim.kube.catalog.for_kind(api_version, kind)
        with contextlib.suppress(KubeError):  # gone already
            self.sim.kube.store.delete(rt, namespace, name, "Background")

    def _patch(self, workspace: dict[str, Any], patch: dict[str, Any]) -> None:
        self.sim.workloads.patch_object(GROUP, WORKSPACE[2], workspace, patch, CONTROLLER)

    def _status(self, workspace: dict[str, Any], status: dict[str, Any]) -> None:
        if status != (workspace.get("status") or {}):
            self.sim.workloads.replace_status(GROUP, WORKSPACE[2], workspace, status,
                                              CONTROLLER)

    def _event(self, workspace: dict[str, Any], reason: str, message: str) -> None:
        self.sim._event(workspace, "Normal", reason, message, CONTROLLER)

    # --- reconciling ----------------------------------------------------------------------

    def _running(self) -> bool:
        found = self._get("apps/v1", "Deployment", *CONTROLLER_DEPLOYMENT)
        return bool(found and (found.get("status") or {}).get("availableReplicas"))

    def reconcile(self) -> None:
        rt = self.sim.kube.catalog.lookup(GROUP, VERSION, WORKSPACE[2])
        if rt is None or not self._running():
            return
        items, _, _, _ = self.sim.kube.store.list(rt, None, lambda _o: True)
        for workspace in items:
            try:
                self._workspace(workspace)
            except KubeError as exc:
                log.info("workspace controller: %s: %s", _md(workspace).get("name"), exc)

    def _workspace(self, workspace: dict[str, Any]) -> None:
        md, spec = _md(workspace), workspace.get("spec") or {}
        if md.get("deletionTimestamp"):
            if FINALIZER in (md.get("finalizers") or []):
                self._delete_workspace(workspace)
            return
        strategy_ref = spec.get("accessStrategy") or {}
        wanted: dict[str, str | None] = dict.fromkeys(STRATEGY_LABELS)
        if strategy_ref.get("name"):
            wanted = dict(zip(STRATEGY_LABELS, (strategy_ref["name"], strategy_ref.get(
                "namespace") or md.get("namespace")), strict=True))
        current = md.get("labels") or {}
        patch: dict[str, Any] = {}
        if any(current.get(k) != v for k, v in wanted.items()):
            patch["labels"] = wanted
        if FINALIZER not in (md.get("finalizers") or []):
            patch["finalizers"] = [*(md.get("finalizers") or []), FINALIZER]
        if patch:  # one update, then reconciled again (its write wakes the controllers)
            self._patch(workspace, {"metadata": patch})
            return
        if (spec.get("desiredStatus") or "Running") == "Stopped":
            self._stop(workspace)
        else:
            self._run(workspace)

    def _strategy(self, workspace: dict[str, Any]) -> tuple[bool, dict[str, Any] | None]:
        """(found or not asked for, the strategy)."""
        ref = (workspace.get("spec") or {}).get("accessStrategy") or {}
        if not ref.get("name"):
            return True, None
        found = self._get(f"{GROUP}/{VERSION}", STRATEGY[3], ref["name"],
                          ref.get("namespace") or _md(workspace).get("namespace"))
        return found is not None, found

    def _run(self, workspace: dict[str, Any]) -> None:
        md = _md(workspace)
        name, namespace = md["name"], md.get("namespace")
        ok, strategy = self._strategy(workspace)
        if not ok:
            log.info("workspace controller: %s: access strategy not found", name)
            return
        deployment_name, service_name, pvc_name = names(name)
        spec = workspace.get("spec") or {}
        if spec.get("storage") is not None and \
                self._get("v1", "PersistentVolumeClaim", pvc_name, namespace) is None:
            self._put(build.pvc(workspace))
        available = any(c.get("type") == "Available" and c.get("status") == "True"
                        for c in (workspace.get("status") or {}).get("conditions") or [])
        deployment = self._get("apps/v1", "Deployment", deployment_name, namespace)
        wanted = build.deployment(workspace)
        if deployment is None:
            self._put(wanted)
            deployment = self._get("apps/v1", "Deployment", deployment_name, namespace)
        elif available and (deployment.get("spec") or {}).get("template") != \
                wanted["spec"]["template"]:  # upstream updates only an available workspace
            self.sim.workloads.patch_object("apps", "deployments", deployment, {
                "metadata": {"labels": wanted["metadata"]["labels"]},
                "spec": {"template": wanted["spec"]["template"]}}, CONTROLLER)
        service = self._get("v1", "Service", service_name, namespace)
        if service is None:
            self._put(build.service(workspace))
            service = self._get("v1", "Service", service_name, namespace)
        status = copy.deepcopy(workspace.get("status") or {})
        at = stamp()
        if _deployment_available(deployment) and service is not None:
            self._access(workspace, strategy, service, status)
            if not available:
                self._event(workspace, "WorkspaceRunning", "Workspace is now running")
            status["conditions"] = _merge(status.get("conditions") or [], [
                _condition("Available", True, "ResourcesReady", "Workspace is ready", at),
                _condition("Progressing", False, "ResourcesReady", "Workspace is ready", at),
                _condition("Degraded", False, "NoError", "No errors detected", at),
                _condition("Stopped", False, "DesiredStateRunning", "Workspace is running", at),
                _condition("Deleting", False, "DesiredStateRunning", "Workspace is running",
                           at)])
            status.update(deploymentName=deployment_name, serviceName=service_name)
            self._status(workspace, status)
            self._idle(workspace, status)
            return
        message = "Workspace is starting"
        status.update(deploymentName=deployment_name, serviceName=service_name)
        status["conditions"] = _merge(status.get("conditions") or [], [
            _condition("Available", False, "ResourcesNotReady", message, at),
            _condition("Progressing", True, "ResourcesNotReady", message, at),
            _condition("Degraded", False, "NoError", "No errors detected", at),
            _condition("Stopped", False, "DesiredStateRunning", message, at),
            _condition("Deleting", False, "DesiredStateRunning", message, at)])
        self._status(workspace, status)

    def _access(self, workspace: dict[str, Any], strategy: dict[str, Any] | None,
                service: dict[str, Any], status: dict[str, Any]) -> None:
        """accessURL and applicationBasePath from the strategy's templates (none: cleared)."""
        for key in ("accessURL", "applicationBasePath"):
            status.pop(key, None)
        if strategy is None:
            return
        spec = strategy.get("spec") or {}
        for key, template in (("accessURL", spec.get("accessURLTemplate")),
                              ("applicationBasePath", spec.get("applicationBasePathTemplate"))):
            if not template:
                continue
            try:
                status[key] = render(str(template), workspace, strategy, service)
            except ValueError as exc:
                log.info("workspace controller: %s: %s", _md(workspace).get("name"), exc)

    def _stop(self, workspace: dict[str, Any]) -> None:
        md = _md(workspace)
        name, namespace = md["name"], md.get("namespace")
        deployment_name, service_name, _ = names(name)
        self._wakes.pop(str(md.get("uid")), None)
        self._delete("apps/v1", "Deployment", deployment_name, namespace)
        self._delete("v1", "Service", service_name, namespace)
        status = copy.deepcopy(workspace.get("status") or {})
        for key in ("accessURL", "applicationBasePath", "accessResourceSelector"):
            status.pop(key, None)
        at = stamp()
        gone = (self._get("apps/v1", "Deployment", deployment_name, namespace) is None,
                self._get("v1", "Service", service_name, namespace) is None)
        if all(gone):
            stopped = any(c.get("type") == "Stopped" and c.get("status") == "True"
                          for c in status.get("conditions") or [])
            if not stopped:
                self._event(workspace, "WorkspaceStopped", "Workspace has been stopped")
            message = "Workspace is stopped"
            status["conditions"] = _merge(status.get("conditions") or [], [
                _condition("Available", False, "DesiredStateStopped", message, at),
                _condition("Progressing", False, "DesiredStateStopped", message, at),
                _condition("Degraded", False, "NoError", "No errors detected", at),
                _condition("Stopped", True, "AllResourcesStopped", message, at),
                _condition("Deleting", False, "DesiredStateStopped", message, at)])
            status.pop("deploymentName", None)
            status.pop("serviceName", None)
        else:
            reason, message = (("ComputeNotStopped", "Compute is still running") if gone[1]
                               else ("ServiceNotStopped", "Service is still up") if gone[0]
                               else ("ResourcesNotStopped", "Resources are still running"))
            status["conditions"] = _merge(status.get("conditions") or [], [
                _condition("Available", False, "DesiredStateStopped",
                           "Desired status is Stopped", at),
                _condition("Progressing", True, "DesiredStateStopped", message, at),
                _condition("Degraded", False, "NoError", "No errors detected", at),
                _condition("Stopped", False, reason, message, at),
                _condition("Deleting", False, "DesiredStateStopped", "Workspace is stopping",
                           at)])
        self._status(workspace, status)

    def _delete_workspace(self, workspace: dict[str, Any]) -> None:
        """upstream's ReconcileDeletion: Deleting, its objects deleted, then the finalizer."""
        md = _md(workspace)
        namespace = md.get("namespace")
        deployment_name, service_name, pvc_name = names(md["name"])
        self._wakes.pop(str(md.get("uid")), None)
        status = copy.deepcopy(workspace.get("status") or {})
        message, at = "Workspace is being deleted", stamp()
        status["conditions"] = _merge(status.get("conditions") or [], [
            _condition("Available", False, "DeletionInProgress", message, at),
            _condition("Progressing", False, "DeletionInProgress", message, at),
            _condition("Degraded", False, "NoError", "No errors detected", at),
            _condition("Stopped", False, "DeletionInProgress", message, at),
            _condition("Deleting", True, "DeletionInProgress",
                       "Workspace resources are being deleted", at)])
        status.pop("deploymentName", None)
        status.pop("serviceName", None)
        self._status(workspace, status)
        owned = (("apps/v1", "Deployment", deployment_name), ("v1", "Service", service_name),
                 ("v1", "PersistentVolumeClaim", pvc_name))
        for api_version, kind, name in owned:
            self._delete(api_version, kind, name, namespace)
        if all(self._get(a, k, n, namespace) is None for a, k, n in owned):
            current = self._get(f"{GROUP}/{VERSION}", WORKSPACE[3], md["name"], namespace)
            if current is not None:
                left = [f for f in _md(current).get("finalizers") or [] if f != FINALIZER]
                self._patch(current, {"metadata": {"finalizers": left or None}})

    # --- idle shutdown --------------------------------------------------------------------

    def _idle(self, workspace: dict[str, Any], status: dict[str, Any]) -> None:
        spec = workspace.get("spec") or {}
        idle = spec.get("idleShutdown") or {}
        http_get = (idle.get("detection") or {}).get("httpGet")
        if not idle.get("enabled") or not http_get:
            return
        timeout_s = float(idle.get("idleTimeoutInMinutes") or 0) * 60
        path = (status.get("applicationBasePath") or "").rstrip("/") + "/" + \
            str(http_get.get("path") or "/").lstrip("/")
        last = self.server.last_activity_of(workspace, path, http_get)
        if last is None:  # not answering: tried again at the next check
            self._wake(workspace, self.now() + 300)
            return
        if self.now() - last >= timeout_s:
            minutes = idle.get("idleTimeoutInMinutes")
            self._event(workspace, "IdleShutdown",
                        f"Stopping workspace due to idle timeout of {minutes} minutes")
            self._patch(workspace, {"spec": {"desiredStatus": "Stopped"}})
            return
        self._wake(workspace, last + timeout_s)

    def _wake(self, workspace: dict[str, Any], due: float) -> None:
        """Look again when the deadline comes: by the loop's timer as time passes, and by
        the timeline when the sandbox's clock is advanced past it."""
        uid = str(_md(workspace).get("uid"))
        if self._wakes.get(uid) == due:
            return
        self._wakes[uid] = due
        loop = asyncio.get_running_loop()
        delay = max(0.0, due - self.now())

        def poke() -> None:
            if self._wakes.get(uid) == due:
                self.sim._reconcile({"workspaces"})

        loop.call_later(delay / max(self.sim.speed(), 1e-9) + 0.001, poke)
        if self.timeline is not None:
            self.timeline.post(delay, lambda: loop.call_soon_threadsafe(poke))

def _deployment_available(deployment: dict[str, Any] | None) -> bool:
    """upstream's IsDeploymentAvailable: its Available condition, else the replica counts."""
    if deployment is None:
        return False
    status = deployment.get("status") or {}
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Available":
            return condition.get("status") == "True"
    return (status.get("availableReplicas") or 0) > 0 and \
        (status.get("readyReplicas") or 0) >= (deployment.get("spec") or {}).get("replicas", 1)

