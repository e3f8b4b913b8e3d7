"""Operation kinds of training jobs, each on target `cluster/<c>/job/<j>`:

- `job.create`: `namespace` (the job's namespace, made and labelled as hypd's when missing,
  and the cluster's bucket claim in it), `mlflow` (the namespace's MLflow service account and
  its Pod Identity association; only with a tracking server attached), `kuberay` (KubeRay's
  operator, installed the way the managed features install theirs; only for a RayJob on a
  cluster without it), `submit` (a server-side apply of the manifest the route built and
  recorded, then until the API server serves the job back);
- `job.delete`: `delete` (the job, with Foreground propagation so its operator stops its
  pods), then until the job and its pods are gone.

The route checks everything it can without changing anything (the recipe, the training
operator, elastic limits, capacity fit, the name) before it records the operation; the
engine's Idempotency-Key makes a retried submission the same operation, and its target lock
keeps a second one of the same job out. Every write is an apply of a whole object by name
(or a delete of one), and the Pod Identity association is adopted by its namespace and
service account, so a step re-run after a crash converges on the same objects: the job is
made once.
"""

from __future__ import annotations

from typing import Any

from cloud import addons, dependencies, eks, iam, jobs, kube, mlflow, storage, training
from tasks.engine.kinds import OperationKind, Step, StepContext, StepFailed
from tasks.outcomes import guarded

KUBERAY = "kuberay-operator"
POLL_S = 2.0


def target(cluster: str, job: str) -> str:
    return f"cluster/{cluster}/job/{job}"


def job_url(params: dict[str, Any]) -> str:
    return f"/api/v1/clusters/{params['cluster']}/jobs/{params['name']}"


def _api(ctx: StepContext) -> Any:
    return eks.api_client(ctx.params["cluster"], ctx.region)


def kuberay_missing(api: Any, eks_client: Any, cluster: str) -> bool:
    """True when the cluster lacks (part of) KubeRay's operator."""
    dep = dependencies.by_name()[KUBERAY]
    return bool(addons.plan([dep], addons.installed(eks_client, api, cluster, [dep])))


def no_claim(cluster: str) -> str:
    """Why a job cannot run in the default namespace of a cluster without its bucket claim."""
    return (f"cluster {cluster} has no {training.SHARED_CLAIM} claim (its bucket at /s3): "
            "re-run its storage stage first")


# -- job.create ----------------------------------------------------------------------------------

@guarded
def ensure_namespace(ctx: StepContext) -> dict[str, Any]:
    """The job's namespace and the cluster's bucket claim in it."""
    return {"namespace": ctx.params["namespace"], "made": namespace_and_claim(ctx)}


def namespace_and_claim(ctx: StepContext) -> list[str]:
    """The namespace `ctx.params["namespace"]` and the cluster's bucket claim in it (the
    storage stage makes it in `default`; another namespace — a team's — gets its own PV +
    PVC of the same bucket), each made only when missing; what it made. A team's space
    needs them as a team's job does (tasks/spaces.py)."""
    api, cluster, namespace = _api(ctx), ctx.params["cluster"], ctx.params["namespace"]
    made = []
    if kube.get_object(api, "v1", "Namespace", namespace) is None:
        kube.server_side_apply(api, training.namespace_manifest(namespace))
        made.append(f"Namespace/{namespace}")
    if kube.get_object(api, "v1", "PersistentVolumeClaim", training.SHARED_CLAIM,
                       namespace) is None:
        if namespace == storage.DEFAULT_NAMESPACE:
            raise StepFailed(no_claim(cluster), "precondition_failed")
        account = iam.account_id(ctx.client("sts"))
        bucket = storage.shared_bucket_name(cluster, account, ctx.region)
        for obj in storage.s3_volume(bucket, ctx.region, claim_name=training.SHARED_CLAIM,
                                     namespace=namespace, cluster=cluster):
            kube.server_side_apply(api, obj)
            made.append(f"{obj['kind']}/{obj['metadata']['name']}")
    return made


@guarded
def ensure_mlflow_binding(ctx: StepContext) -> dict[str, Any]:
    """The namespace's `hypd-mlflow` service account and its Pod Identity association to
    the tracking server's role (made once per namespace; another job's is adopted)."""
    return mlflow.ensure_binding(ctx.client("eks"), _api(ctx), ctx.params["cluster"],
                                 ctx.params["namespace"], ctx.params["mlflow_role_arn"],
                                 ctx.token("pod_identity"))


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
    """Until the API server serves RayJob (KubeRay's CRD established)."""
    try:
        kube.resource_info(_api(ctx), training.RAY_API, training.RAY_KIND)
    except kube.KubeError as exc:
        if exc.http_status == 404:
            return POLL_S
        raise
    return None


@guarded
def submit(ctx: StepContext) -> dict[str, Any]:
    manifest = ctx.params["manifest"]
    try:
        applied = kube.server_side_apply(_api(ctx), manifest)
    except kube.KubeError as exc:
        if exc.http_status == 404:  # the kind is not served: its operator went meanwhile
            raise StepFailed(f"cluster {ctx.params['cluster']} does not serve "
                             f"{manifest['kind']}: its operator is not installed",
                             "precondition_failed") from exc
        raise
    md = applied["metadata"]
    return {"kind": applied.get("kind"), "name": md["name"], "namespace": md.get("namespace"),
            "uid": md.get("uid")}


@guarded
def wait_submitted(ctx: StepContext) -> float | None:
    """Until the job reads back as hypd's (what its read then shows)."""
    if jobs.find(_api(ctx), ctx.params["name"]) is None:
        return POLL_S
    return None


# -- job.delete ----------------------------------------------------------------------------------

def _pods(ctx: StepContext) -> list[dict[str, Any]]:
    return jobs.pods(_api(ctx), {"metadata": {"name": ctx.params["name"],
                                              "namespace": ctx.params["namespace"]}})


@guarded
def delete_job(ctx: StepContext) -> dict[str, Any]:
    """The job, Foreground: its operator's pods go before it does. Already gone (a crashed
    attempt's delete went through): nothing to do."""
    api, name = _api(ctx), ctx.params["name"]
    found = jobs.find(api, name)
    if found is None:
        return {"deleted": None}
    md = found["metadata"]
    kube.delete_object(api, found["apiVersion"], found["kind"], md["name"], md.get("namespace"),
                       propagation="Foreground", uid=md.get("uid"))
    return {"deleted": f"{found['kind']} {md.get('namespace')}/{md['name']}"}


@guarded
def wait_job_gone(ctx: StepContext) -> float | None:
    left = [f"pod/{p['metadata']['name']}" for p in _pods(ctx)]
    if jobs.find(_api(ctx), ctx.params["name"]) is not None:
        left.insert(0, f"job/{ctx.params['name']}")
    if left:
        ctx.detail(f"still terminating: {', '.join(left)}")
        return POLL_S
    return None


# -- the kinds ------------------------------------------------------------------------------

NAMESPACE = Step("namespace", "Make the job's namespace and its bucket claim if missing",
                 ensure_namespace)
MLFLOW = Step("mlflow", "Let the namespace's pods log to the MLflow tracking server",
              ensure_mlflow_binding)
KUBERAY_STEP = Step("kuberay", "Install KubeRay's operator (the RayJob CRD)", ensure_kuberay,
                    wait_served)
SUBMIT = Step("submit", "Create the job", submit, wait_submitted)
DELETE = Step("delete", "Delete the job; its pods go with it", delete_job, wait_job_gone)


def _create_steps(params: dict[str, Any]) -> tuple[Step, ...]:
    steps = [NAMESPACE]
    if params.get("mlflow_role_arn"):
        steps.append(MLFLOW)
    if params.get("kuberay"):
        steps.append(KUBERAY_STEP)
    return (*steps, SUBMIT)


JOB_CREATE = OperationKind(name="job.create", steps=(NAMESPACE, MLFLOW, KUBERAY_STEP, SUBMIT),
                           select=_create_steps, resource_url=job_url)
JOB_DELETE = OperationKind(name="job.delete", steps=(DELETE,), resource_url=job_url)
