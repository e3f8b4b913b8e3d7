"""Operation kind `job.create` (target `cluster/<c>/job/<j>`): a job that needs a dependency
installed first.

A training job whose operator is there is created at once by its route (201, the job's own
status then tells its progress). A RayJob on a cluster without KubeRay needs KubeRay
installed first — the `kuberay-operator` entry of the dependency graph
(cloud/data/dependencies.yaml), applied the way the managed features apply theirs — so it is
an operation: `kuberay` (apply what is missing, under the cluster's features mutex, then wait
until the API server serves RayJob) and `submit` (server-side apply of the manifest the route
built and recorded; applying again after a crash changes nothing).
"""

from __future__ import annotations

from typing import Any

from cloud import addons, dependencies, eks, kube, training
from tasks.engine.kinds import OperationKind, Step, StepContext
from tasks.outcomes import guarded

KUBERAY = "kuberay-operator"
SERVED_POLL_S = 2.0


def target(cluster: str, job: str) -> str:
    return f"cluster/{cluster}/job/{job}"


def _api(ctx: StepContext) -> Any:
    return eks.api_client(ctx.params["cluster"], ctx.region)


def kuberay_missing(api: Any, eks_client: Any, cluster: str) -> bool:
    """True when the cluster lacks (part of) KubeRay's operator."""
    dep = dependencies.by_name()[KUBERAY]
    return bool(addons.plan([dep], addons.installed(eks_client, api, cluster, [dep])))


@guarded
def ensure_kuberay(ctx: StepContext) -> dict[str, Any]:
    dep = dependencies.by_name()[KUBERAY]
    api, cluster = _api(ctx), ctx.params["cluster"]
    with ctx.lock(f"features/{cluster}"):
        actions = addons.plan([dep], addons.installed(ctx.client("eks"), api, cluster, [dep]))
        done = [addons.apply(action, ctx.client("eks"), api, cluster, ctx.region)
                for action in actions]
    return {"actions": done}


@guarded
def wait_served(ctx: StepContext) -> float | None:
    try:
        kube.resource_info(_api(ctx), training.RAY_API, training.RAY_KIND)
    except kube.KubeError as exc:
        if exc.http_status == 404:
            return SERVED_POLL_S
        raise
    return None


@guarded
def submit(ctx: StepContext) -> dict[str, Any]:
    manifest = ctx.params["manifest"]
    applied = kube.server_side_apply(_api(ctx), manifest)
    return {"kind": applied.get("kind"), "name": applied["metadata"]["name"],
            "namespace": applied["metadata"].get("namespace")}


KUBERAY_STEP = Step("kuberay", "Install KubeRay's operator (the RayJob CRD)", ensure_kuberay,
                    wait_served)
SUBMIT_STEP = Step("submit", "Create the job", submit)


def job_url(params: dict[str, Any]) -> str:
    return f"/api/v1/clusters/{params['cluster']}/jobs/{params['name']}"


JOB_CREATE = OperationKind(name="job.create", steps=(KUBERAY_STEP, SUBMIT_STEP),
                           resource_url=job_url)
