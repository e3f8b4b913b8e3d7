"""Operation kinds of Dev spaces, each on target `cluster/<c>/space/<s>`:

- `space.create`: `workspace` (a team's space first gets the team's namespace and the
  bucket's claim in it when missing, as a team's job does; then the Workspace, applied whole
  by name and marked with this operation's id, so a re-run adopts the one an earlier attempt
  made; then until the operator reports it running: Available, with its URL — a space waiting
  for a node, or in its team's queue, says why);
- `space.update`: `resources` (a merge patch of its requests, limits and idle shutdown; then,
  while it runs, until a ready pod carries the new requests);
- `space.stop` / `space.start`: `desired` (`spec.desiredStatus`, a merge patch; then until the
  operator reports it stopped, or running again);
- `space.delete`: `delete` (the Workspace; the operator's Deployment, Service and home volume
  go with it), then until it and its pods are gone.

Every write is an absolute value by name (an apply, a merge patch of fixed fields, a delete),
so a task run again after a crash converges on the same object: one Workspace per space. A
cancelled create takes back the Workspace it made (only one carrying its operation's id).
"""

from __future__ import annotations

from typing import Any

from cloud import eks, kube, spaces
from tasks.engine.kinds import OperationKind, Step, StepContext, StepFailed
from tasks.jobs import namespace_and_claim
from tasks.outcomes import guarded
from vocabulary import spaces as words

POLL_S = 2.0


def target(cluster: str, space: str) -> str:
    return f"cluster/{cluster}/space/{space}"


def space_url(params: dict[str, Any]) -> str:
    return f"/api/v1/clusters/{params['cluster']}/spaces/{params['name']}"


def _api(ctx: StepContext) -> Any:
    return eks.api_client(ctx.params["cluster"], ctx.region)


def _namespace(ctx: StepContext) -> str:
    """The space's namespace (a team's space: the team's); operations recorded before spaces
    had teams name none."""
    return ctx.params.get("namespace") or spaces.NAMESPACE


def _pods(ctx: StepContext) -> list[dict[str, Any]]:
    return spaces.pods(_api(ctx), ctx.params["name"], _namespace(ctx))


def _found(ctx: StepContext) -> dict[str, Any]:
    found = spaces.find(_api(ctx), ctx.params["name"])
    if found is None:
        raise StepFailed(f"space {ctx.params['name']} is gone from cluster "
                         f"{ctx.params['cluster']}", "not_found")
    return found


def _until(ctx: StepContext, want: str) -> float | None:
    """Until the Workspace is in state `want`; fails on the operator's Degraded."""
    ws = _found(ctx)
    state, message = spaces.state(ws)
    if state == want:
        return None
    if state == words.FAILED:
        raise StepFailed(f"the space failed: {message or 'the operator reports it degraded'}",
                         "upstream_error")
    waiting = kube.waiting_pods(_pods(ctx))
    why = "; ".join(f"{w['pod']}: {w.get('message') or w.get('reason')}" for w in waiting)
    ctx.detail(f"{state}" + (f": {why}" if why else f" ({message})" if message else ""))
    return POLL_S


# -- space.create --------------------------------------------------------------------------------

@guarded
def apply_workspace(ctx: StepContext) -> dict[str, Any]:
    api, name, namespace = _api(ctx), ctx.params["name"], _namespace(ctx)
    found = kube.get_object(api, spaces.API_VERSION, spaces.KIND, name, namespace)
    if found is not None:
        made_by = (found["metadata"].get("annotations") or {}).get(spaces.OPERATION_ANNOTATION)
        if made_by == ctx.op_id:
            return {"workspace": name, "uid": found["metadata"].get("uid"), "adopted": True}
        raise StepFailed(f"a Workspace {namespace}/{name} made by someone else exists "
                         "on the cluster", "conflict")
    made = namespace_and_claim(ctx) if namespace != spaces.NAMESPACE else []
    manifest = spaces.manifest(spaces.Space.from_params(ctx.params), ctx.params["cluster"],
                               ctx.params["owner"], ctx.op_id, words.DESIRED_RUNNING)
    try:
        applied = kube.server_side_apply(api, manifest)
    except kube.KubeError as exc:
        if exc.http_status == 404:
            raise StepFailed(f"cluster {ctx.params['cluster']} does not serve Workspace: turn "
                             "the spaces feature on first", "precondition_failed") from exc
        raise
    return {"workspace": name, "uid": applied["metadata"].get("uid"), "made": made}


@guarded
def wait_running(ctx: StepContext) -> float | None:
    """Until the editor runs — or until the operator itself stopped it for idleness (its
    `desiredStatus` turned Stopped: it ran, and nobody used it within its idle time)."""
    ws = _found(ctx)
    if spaces.desired(ws) == words.DESIRED_STOPPED:
        ctx.detail("stopped by its idle shutdown before anyone used it; start it again to "
                   "use it")
        ctx.record(idle_stopped=True)
        return None
    left = _until(ctx, words.RUNNING)
    if left is None:
        ws = _found(ctx)
        pod = next(iter(_pods(ctx)), None)
        ctx.record(url=spaces.access(ws)["url"],
                   node=((pod or {}).get("spec") or {}).get("nodeName"))
    return left


@guarded
def take_back(ctx: StepContext) -> None:
    """A cancelled create removes the Workspace it made (one carrying its operation's id)."""
    api, name, namespace = _api(ctx), ctx.params["name"], _namespace(ctx)
    found = kube.get_object(api, spaces.API_VERSION, spaces.KIND, name, namespace)
    annotations = ((found or {}).get("metadata") or {}).get("annotations") or {}
    if found is not None and annotations.get(spaces.OPERATION_ANNOTATION) == ctx.op_id:
        kube.delete_object(api, spaces.API_VERSION, spaces.KIND, name, namespace,
                           uid=found["metadata"].get("uid"))
        ctx.record(workspace_deleted=name)


WORKSPACE = Step("workspace", "Create the space's Workspace; wait until its editor runs",
                 apply_workspace, wait_running)
SPACE_CREATE = OperationKind(name="space.create", steps=(WORKSPACE,), resource_url=space_url,
                             on_cancel=take_back)


# -- space.update ----------------------------------------------------------------------------

def resources_patch(space: spaces.Space, cluster: str) -> dict[str, Any]:
    """The fields an update sets, absolutely (a GPU request that goes is set to null); the
    access strategy with the idle probe, as the two go together (`spaces.idle_shutdown`); and
    how the editor starts (`spaces.container_config`), so that a space made before its
    editor served under its base path serves there once updated."""
    wanted = space.resources()
    for part in ("requests", "limits"):
        wanted[part].setdefault(spaces.GPU, None)
    base = words.base_path(cluster, space.namespace, space.name)
    return {"spec": {"resources": wanted, "idleShutdown": spaces.idle_shutdown(space),
                     "accessStrategy": spaces.access_strategy(space.app_type),
                     "containerConfig": spaces.container_config(space.app_type, base)}}


@guarded
def patch_resources(ctx: StepContext) -> dict[str, Any]:
    _found(ctx)
    space = spaces.Space.from_params(ctx.params)
    kube.merge_patch(_api(ctx), spaces.API_VERSION, spaces.KIND, space.name, _namespace(ctx),
                     resources_patch(space, ctx.params["cluster"]))
    return {"resources": space.resources()}


@guarded
def wait_rolled(ctx: StepContext) -> float | None:
    """While the space runs: until a ready pod asks what the update asked."""
    ws = _found(ctx)
    if spaces.desired(ws) == words.DESIRED_STOPPED:
        return None
    want = spaces.Space.from_params(ctx.params).resources()["requests"]
    for pod in _pods(ctx):
        container = ((pod.get("spec") or {}).get("containers") or [{}])[0]
        asked = (container.get("resources") or {}).get("requests") or {}
        ready = all(cs.get("ready") for cs in (pod.get("status") or {}).get(
            "containerStatuses") or [{}])
        if asked == want and ready and spaces.state(ws)[0] == words.RUNNING:
            return None
    return _until(ctx, words.RUNNING) or POLL_S


RESOURCES = Step("resources", "Change the space's resources and idle shutdown; wait until it "
                              "runs with them", patch_resources, wait_rolled)
SPACE_UPDATE = OperationKind(name="space.update", steps=(RESOURCES,), resource_url=space_url)


# -- space.stop / space.start ----------------------------------------------------------------

def _set_desired(ctx: StepContext, value: str) -> dict[str, Any]:
    _found(ctx)
    kube.merge_patch(_api(ctx), spaces.API_VERSION, spaces.KIND, ctx.params["name"],
                     _namespace(ctx), {"spec": {"desiredStatus": value}})
    return {"desiredStatus": value}


@guarded
def stop(ctx: StepContext) -> dict[str, Any]:
    return _set_desired(ctx, words.DESIRED_STOPPED)


@guarded
def start(ctx: StepContext) -> dict[str, Any]:
    return _set_desired(ctx, words.DESIRED_RUNNING)


@guarded
def wait_stopped(ctx: StepContext) -> float | None:
    return _until(ctx, words.STOPPED)


STOP = Step("desired", "Stop the space (its home volume stays); wait until its pod is gone",
            stop, wait_stopped)
START = Step("desired", "Start the space; wait until its editor runs", start, wait_running)
SPACE_STOP = OperationKind(name="space.stop", steps=(STOP,), resource_url=space_url)
SPACE_START = OperationKind(name="space.start", steps=(START,), resource_url=space_url)


# -- space.delete ----------------------------------------------------------------------------

@guarded
def delete_workspace(ctx: StepContext) -> dict[str, Any]:
    """The Workspace, Foreground; already gone (a crashed attempt's delete went through):
    nothing to do."""
    api, name = _api(ctx), ctx.params["name"]
    found = spaces.find(api, name)
    if found is None:
        return {"deleted": None}
    namespace = spaces.namespace_of(found)
    kube.delete_object(api, spaces.API_VERSION, spaces.KIND, name, namespace,
                       propagation="Foreground", uid=found["metadata"].get("uid"))
    return {"deleted": f"Workspace {namespace}/{name}"}


@guarded
def wait_gone(ctx: StepContext) -> float | None:
    api, name = _api(ctx), ctx.params["name"]
    left = [f"pod/{p['metadata']['name']}" for p in _pods(ctx)]
    if spaces.find(api, name) is not None:
        left.insert(0, f"workspace/{name}")
    if left:
        ctx.detail(f"still terminating: {', '.join(left)}")
        return POLL_S
    return None


DELETE = Step("delete", "Delete the space: its editor, its pod and its home volume",
              delete_workspace, wait_gone)
SPACE_DELETE = OperationKind(name="space.delete", steps=(DELETE,), resource_url=space_url)
