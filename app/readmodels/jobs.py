"""Training jobs as the API shows them: read from the cluster (the job, its pods, their
events) and from the job's newest operation (tasks/jobs.py). While a `job.create` runs and
the cluster has no job yet, the job reads as `submitting`; after a submission that failed
(or was cancelled) before the job was made, it reads as `failed` with the operation's
reason, until a new submission of the name or a delete replaces that operation."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from app import context
from cloud import jobs, kube, mlflow, queueing, recipes, teams, training
from tasks.engine.model import OpStatus, StepPhase
from tasks.jobs import JOB_CREATE
from vocabulary import teams as team_words

if TYPE_CHECKING:
    from app.readmodels.clusters import ClusterRef

NOTES = {
    training.PYTORCH_KIND: (
        "Runs under the HyperPod training operator: the image must contain the HyperPod "
        "elastic agent (hyperpod-elastic-agent) and the job launches with hyperpodrun; a "
        "failed process is restarted in place and spends the recovery budget."),
    training.RAY_KIND: "Runs under KubeRay: a head pod runs the entrypoint, workers hold the "
                       "GPUs; the pods go when the job ends.",
}


def _md(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def operations(cluster: str) -> dict[str, dict[str, Any]]:
    """The newest operation of each job name of the cluster."""
    return context.engine().store.newest_by_child(f"cluster/{cluster}/job")


def unsubmitted(op: dict[str, Any] | None) -> bool:
    """True for a job.create that has not made its job: running, or ended without it."""
    return (op is not None and op["kind"] == JOB_CREATE.name
            and OpStatus(op["status"]) != OpStatus.SUCCEEDED)


class Queues:
    """What Kueue says of the teams' work (jobs, spaces) of one answer, each thing read once:
    the cluster's Workloads (a read names the jobs it preempted, in other teams' namespaces
    too), hypd's jobs by uid (to name them), ClusterQueues."""

    def __init__(self, api: Any, found: list[dict[str, Any]] | None = None) -> None:
        self.api, self._found = api, found
        self._queues: dict[str, dict[str, Any] | None] = {}

    @cached_property
    def workloads(self) -> dict[str, dict[str, Any]]:
        return queueing.workloads_by_job(self.api)

    @cached_property
    def jobs_by_uid(self) -> dict[str, dict[str, Any]]:
        """hypd's jobs by uid; read only when some Workload was preempted (to name who)."""
        if not any(queueing.preempted(w) for w in self.workloads.values()):
            return {}
        found = self._found if self._found is not None else jobs.list_jobs(self.api)
        return {str(_md(j).get("uid")): j for j in found}

    def queue(self, name: str) -> dict[str, Any] | None:
        if name not in self._queues:
            self._queues[name] = teams.cluster_queue_named(self.api, name)
        return self._queues[name]

    def place(self, obj: dict[str, Any], uid: str | None = None) -> dict[str, Any] | None:
        """The place in its team's queue of a job, or of a space (`obj` its Workspace, `uid`
        its pod's: Kueue queues the pod); None for work outside any queue."""
        if team_words.QUEUE_LABEL not in (_md(obj).get("labels") or {}):
            return None
        uid = uid or str(_md(obj).get("uid"))
        found = queueing.place(obj, self.workloads.get(uid), self.jobs_by_uid, self.queue)
        found["preempted"] = queueing.preempted_by_job(obj, self.workloads, self.jobs_by_uid,
                                                       uid)
        return found


def view(cluster: str, api: Any, obj: dict[str, Any], detail: bool = True,
         queues: Queues | None = None) -> dict[str, Any]:
    md = _md(obj)
    labels = md.get("labels") or {}
    team, priority = queueing.team_of(obj)
    job_pods = jobs.pods(api, obj)
    found = jobs.state(obj, job_pods)
    name = md["name"]
    out: dict[str, Any] = {
        "name": name, "cluster": cluster, "namespace": md.get("namespace"),
        "team": team, "priority": priority,
        "queue": (queues or Queues(api)).place(obj),
        "kind": obj.get("kind"), "recipe": labels.get(training.RECIPE_LABEL),
        "state": found.state, "message": found.message,
        "image": _image(obj), "nodes": _nodes(obj),
        "created_at": md.get("creationTimestamp"), "started_at": found.started_at,
        "finished_at": found.finished_at,
        "pods": [jobs.pod_view(p) for p in job_pods], "restarts": found.restarts,
        "waiting": kube.waiting_pods(job_pods),
        "recovery_budget": jobs.budget(found) if obj.get("kind") == training.PYTORCH_KIND
        else None,
        "events": jobs.events(api, obj, job_pods) if detail else [],
        "paths": recipes.paths(name, _env(obj).get("HYPD_DATA_DIR")),
        "operation_id": None, "mlflow": mlflow_link(cluster, _env(obj)),
        "notes": [NOTES[obj["kind"]]] if obj.get("kind") in NOTES else [],
    }
    return out


def from_operation(cluster: str, op: dict[str, Any]) -> dict[str, Any]:
    """A job its operation has not made (yet): `submitting` while the operation runs;
    `failed` with the operation's reason once it ended without the job."""
    params = op["params"]
    manifest = params["manifest"]
    status = OpStatus(op["status"])
    if status.is_finished:
        error = (op.get("error") or {}).get("message")
        state, message = "failed", (f"its submission {status.value} (operation {op['id']})"
                                    + (f": {error}" if error else ""))
    else:
        step = next((s for s in op["steps"] if s["phase"] != StepPhase.PENDING
                     and not StepPhase(s["phase"]).is_done), None)
        state, message = "submitting", (f"operation {op['id']} is {status.value}"
                                        + (f": {step['name']}" if step else ""))
    team, priority = queueing.team_of(manifest)
    return {"name": params["name"], "cluster": cluster, "namespace": params["namespace"],
            "team": team, "priority": priority, "queue": None, "kind": manifest["kind"],
            "recipe": params.get("recipe"), "state": state,
            "message": message, "image": _image(manifest),
            "nodes": _nodes(manifest), "created_at": op.get("created_at"),
            "started_at": None, "finished_at": op.get("updated_at") if status.is_finished
            else None, "pods": [], "waiting": [], "restarts": 0,
            "recovery_budget": None, "events": [],
            "paths": recipes.paths(params["name"], _env(manifest).get("HYPD_DATA_DIR")),
            "operation_id": op["id"], "mlflow": mlflow_link(cluster, _env(manifest)),
            "notes": [NOTES[manifest["kind"]]] if manifest["kind"] in NOTES else []}


def mlflow_link(cluster: str, env: dict[str, str]) -> dict[str, Any] | None:
    """Where the job logs its metrics, read from its own environment (what its pods got):
    the tracking server, the experiment, and the route that opens the MLflow UI (a
    presigned URL is a credential of its own, made on request, never part of a job)."""
    arn = env.get(mlflow.TRACKING_URI)
    if not arn:
        return None
    return {"tracking_server_arn": arn, "experiment_name": env.get(mlflow.EXPERIMENT),
            "ui_url_route": f"/api/v1/clusters/{cluster}/mlflow/ui-url"}


def _templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj.get("spec") or {}
    if obj.get("kind") == training.RAY_KIND:
        cluster = spec.get("rayClusterSpec") or {}
        return [(cluster.get("headGroupSpec") or {}).get("template") or {}]
    return [r.get("template") or {} for r in spec.get("replicaSpecs") or []]


def _container(obj: dict[str, Any]) -> dict[str, Any]:
    for template in _templates(obj):
        for container in (template.get("spec") or {}).get("containers") or []:
            return container
    return {}


def _image(obj: dict[str, Any]) -> str | None:
    return _container(obj).get("image")


def _env(obj: dict[str, Any]) -> dict[str, str]:
    return {e.get("name"): e.get("value") for e in _container(obj).get("env") or []}


def _nodes(obj: dict[str, Any]) -> int | None:
    spec = obj.get("spec") or {}
    if obj.get("kind") == training.RAY_KIND:
        workers = sum(int(g.get("replicas") or 0)
                      for g in (spec.get("rayClusterSpec") or {}).get("workerGroupSpecs") or [])
        return workers + 1
    return sum(int(r.get("replicas") or 0) for r in spec.get("replicaSpecs") or [])


def with_operation(view_: dict[str, Any], op: dict[str, Any] | None) -> dict[str, Any]:
    """A job's view naming the operation changing it now, if one is."""
    if op is not None and not OpStatus(op["status"]).is_finished:
        view_["operation_id"] = op["id"]
    return view_


def one(cluster: str, api: Any, name: str) -> dict[str, Any] | None:
    """One job: the cluster's, or its unmade submission; None when neither is."""
    op = operations(cluster).get(name)
    found = jobs.find(api, name)
    if found is not None:
        return with_operation(view(cluster, api, found), op)
    return from_operation(cluster, op) if unsubmitted(op) else None


def listing(ref: ClusterRef, api: Any) -> list[dict[str, Any]]:
    ops = operations(ref.name)
    found = jobs.list_jobs(api)
    queues = Queues(api, found=found)
    items = {(_md(o))["name"]: with_operation(view(ref.name, api, o, detail=False,
                                                   queues=queues),
                                              ops.get(_md(o)["name"]))
             for o in found}
    for name, op in ops.items():
        if name not in items and unsubmitted(op):
            items[name] = from_operation(ref.name, op)
    return [items[k] for k in sorted(items)]
