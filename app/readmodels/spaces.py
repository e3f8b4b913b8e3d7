"""Dev spaces as REST, MCP and the dashboard show them: read from the cluster (the Workspace,
its pod, their events; the editor's own last activity) and from each space's newest
operation. While a `space.create` runs and the cluster has no Workspace yet, the space reads
as `creating`; a create that ended without one reads as `failed` with the operation's reason,
until a new create or a delete replaces that operation.

A team's space (its Workspace in the team's namespace, labelled with the team's queue)
reads its team and priority class from those labels, and its place in the queue from the
Workload Kueue made for its pod (app/readmodels/jobs.py `Queues`, as a job's): waiting
(its pod gated), admitted (borrowing or not), preempted; a stopped space has no pod and
no place (null)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app import context
from app.errors import ApiError
from app.readmodels.jobs import Queues
from cloud import jobs, kube, spaces, storage
from tasks.spaces import SPACE_CREATE
from vocabulary import spaces as words
from vocabulary.operations import OpStatus

if TYPE_CHECKING:
    from app.readmodels.clusters import ClusterRef


def operations(cluster: str) -> dict[str, dict[str, Any]]:
    """The newest operation of each space of the cluster."""
    return context.engine().store.newest_by_child(f"cluster/{cluster}/space")


def unmade(op: dict[str, Any] | None) -> bool:
    """True for a space.create that has not (yet) made its Workspace."""
    return (op is not None and op["kind"] == SPACE_CREATE.name
            and OpStatus(op["status"]) != OpStatus.SUCCEEDED)


def _mounts() -> list[dict[str, str]]:
    return [{"path": storage.DEFAULT_MOUNT_PATH, "claim": storage.DEFAULT_CLAIM,
             "what": "the cluster's bucket (the claim every job mounts)"},
            {"path": spaces.HOME, "claim": "", "what": "the space's home volume"}]


def _queue(ws: dict[str, Any], pods: list[dict[str, Any]], queues: Queues
           ) -> dict[str, Any] | None:
    """The space's place in its team's queue: its newest pod's Workload (none while it is
    stopped: no pod, nothing queued)."""
    live = [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
    if not live and spaces.desired(ws) == words.DESIRED_STOPPED:
        return None
    newest = max(live, key=lambda p: (p.get("metadata") or {}).get("creationTimestamp") or "",
                 default=None)
    return queues.place(ws, str(newest["metadata"].get("uid")) if newest else None)


def view(cluster: str, api: Any, ws: dict[str, Any], op: dict[str, Any] | None,
         detail: bool = True, queues: Queues | None = None) -> dict[str, Any]:
    md = ws.get("metadata") or {}
    name = md["name"]
    asked = spaces.asked(ws)
    state, message = spaces.state(ws)
    pods = spaces.pods(api, name, spaces.namespace_of(ws))
    queue = _queue(ws, pods, queues or Queues(api))
    if queue is not None and queue["state"] != "admitted" and state == words.STARTING:
        message = f"waiting in team {asked.team}'s queue: {queue['message']}"
    active = None
    if detail and state == words.RUNNING:
        active = spaces.last_activity(api, ws, cluster)
    mounts = _mounts()
    mounts[1]["claim"] = f"workspace-{name}-pvc"
    return {
        "name": name, "cluster": cluster, "namespace": md.get("namespace"),
        "owner": spaces.owner(ws), "team": asked.team, "priority": asked.priority,
        "queue": queue, "app_type": asked.app_type, "image": asked.image,
        "state": state, "message": message, "instance_group": asked.instance_group,
        "resources": {"cpu": asked.cpu, "memory_gib": asked.memory_gib, "gpus": asked.gpus},
        "home_gib": asked.home_gib, "idle_shutdown_minutes": asked.idle_shutdown_minutes,
        "last_activity": active.isoformat() if active else None,
        "idle_minutes": spaces.idle_minutes(active),
        "access": spaces.access(ws, cluster), "mounts": mounts,
        "pods": [jobs.pod_view(p) for p in pods], "waiting": kube.waiting_pods(pods),
        "events": jobs.events(api, ws, pods) if detail else [],
        "created_at": md.get("creationTimestamp"),
        "operation_id": op["id"] if op else None,
    }


def from_operation(cluster: str, op: dict[str, Any]) -> dict[str, Any]:
    """A space its create has not made: `creating` while it runs, `failed` once it ended."""
    params = op["params"]
    status = OpStatus(op["status"])
    state, message = words.CREATING, f"being created (operation {op['id']})"
    if status.is_finished:
        error = (op.get("error") or {}).get("message")
        state, message = words.FAILED, (f"its create {status.value} (operation {op['id']})"
                                        + (f": {error}" if error else ""))
    return {
        "name": params["name"], "cluster": cluster,
        "namespace": params.get("namespace") or spaces.NAMESPACE,
        "owner": params.get("owner"), "team": params.get("team"),
        "priority": params.get("priority"), "queue": None, "app_type": params.get("app_type"),
        "image": params.get("image"), "state": state, "message": message,
        "instance_group": params.get("instance_group"),
        "resources": {"cpu": params.get("cpu"), "memory_gib": params.get("memory_gib"),
                      "gpus": params.get("gpus")},
        "home_gib": params.get("home_gib"),
        "idle_shutdown_minutes": params.get("idle_shutdown_minutes"),
        "last_activity": None, "idle_minutes": None, "access": None, "mounts": _mounts(),
        "pods": [], "waiting": [], "events": [], "created_at": op.get("created_at"),
        "operation_id": op["id"],
    }


def listing(ref: ClusterRef, api: Any) -> list[dict[str, Any]]:
    ops = operations(ref.name)
    queues = Queues(api)
    found = {ws["metadata"]["name"]: view(ref.name, api, ws, ops.get(ws["metadata"]["name"]),
                                          detail=False, queues=queues)
             for ws in spaces.listing(api)}
    for name, op in ops.items():
        if name not in found and unmade(op):
            found[name] = from_operation(ref.name, op)
    return [found[n] for n in sorted(found)]


def one(ref: ClusterRef, api: Any, name: str) -> dict[str, Any]:
    op = operations(ref.name).get(name)
    ws = spaces.find(api, name)
    if ws is not None:
        return view(ref.name, api, ws, op)
    if unmade(op):
        return from_operation(ref.name, op)
    raise ApiError(404, "not_found", f"cluster {ref.name} has no space {name!r}")
