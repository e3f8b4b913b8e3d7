"""Training jobs as the API shows them: read from the cluster (the job, its pods, their
events), with the operation still submitting one (a RayJob waiting for KubeRay)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app import context
from cloud import jobs, kube, mlflow, recipes, training

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


def submitting(cluster: str) -> dict[str, dict[str, Any]]:
    """{job: operation} of the job creates still running on the cluster."""
    return context.engine().store.newest_by_child(f"cluster/{cluster}/job", unfinished=True)


def view(cluster: str, api: Any, obj: dict[str, Any], detail: bool = True) -> dict[str, Any]:
    md = _md(obj)
    labels = md.get("labels") or {}
    job_pods = jobs.pods(api, obj)
    found = jobs.state(obj, job_pods)
    name = md["name"]
    out: dict[str, Any] = {
        "name": name, "cluster": cluster, "namespace": md.get("namespace"),
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
    """A job still being submitted (its operation installs what it needs first)."""
    params = op["params"]
    manifest = params["manifest"]
    return {"name": params["name"], "cluster": cluster, "namespace": params["namespace"],
            "kind": manifest["kind"], "recipe": params.get("recipe"), "state": "submitting",
            "message": f"operation {op['id']} is {op['status']}", "image": _image(manifest),
            "nodes": _nodes(manifest), "created_at": op.get("created_at"),
            "started_at": None, "finished_at": None, "pods": [], "waiting": [], "restarts": 0,
            "recovery_budget": None, "events": [],
            "paths": recipes.paths(params["name"], _env(manifest).get("HYPD_DATA_DIR")),
            "operation_id": op["id"], "mlflow": mlflow_link(cluster, _env(manifest)),
            "notes": [NOTES[manifest["kind"]]]}


def mlflow_link(cluster: str, env: dict[str, str]) -> dict[str, Any] | None:
    """Where the job logs its metrics, read from its own environment (what its pods got):
    the tracking server, the experiment, and the route and tool that open the MLflow UI (a
    presigned URL is a credential of its own, made on request, never part of a job)."""
    arn = env.get(mlflow.TRACKING_URI)
    if not arn:
        return None
    return {"tracking_server_arn": arn, "experiment_name": env.get(mlflow.EXPERIMENT),
            "ui_url_route": f"/api/v1/clusters/{cluster}/mlflow/ui-url",
            "ui_url_tool": "get_mlflow_ui_url"}


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


def listing(ref: ClusterRef, api: Any) -> list[dict[str, Any]]:
    items = {(_md(o))["name"]: view(ref.name, api, o, detail=False)
             for o in jobs.list_jobs(api)}
    for name, op in submitting(ref.name).items():
        items.setdefault(name, from_operation(ref.name, op))
    return [items[k] for k in sorted(items)]
