"""Operation kinds `mlflow.attach` and `mlflow.detach` (target `cluster/<c>/mlflow`): a
cluster's SageMaker managed MLflow tracking server (cloud/mlflow.py).

`PUT /clusters/<c>/mlflow` gives the cluster a tracking server. Without `tracking_server`,
hypd makes its own (`hypd-<c>`, artifact store `s3://<shared bucket>/mlflow/`, tagged as
hypd's for the cluster); with a name or ARN (same region), an existing one is attached and
never deleted by hypd. Either is one `mlflow.attach` operation on `cluster/<c>/mlflow`, a
descendant of the cluster, so a cluster delete is refused while it runs. Already attached
(the same server again, or `{}` while hypd's own is attached): `200 changed: false`; another
one attached: 409 naming it (detach first).

`mlflow.attach` steps; every step adopts what an earlier attempt made:

- for hypd's own server, `server_role`: `hypd-<c>-mlflow-server`, the role SageMaker keeps
  artifacts with: trust `sagemaker.amazonaws.com`, list/read/write/delete under `mlflow/` of
  the bucket only (AWS suggests AmazonS3FullAccess; the artifact store is one prefix);
- then `tracking_server`: CreateMlflowTrackingServer has no client token. The name is unique
  per account and region, so the step looks it up first and adopts it when its tags say hypd
  made it for this cluster, refuses it otherwise; a `ResourceInUse` from a racing attempt is
  adopted the same way;
- or, for an existing one (the operation's `tracking_server_name`), `verify` it;
- either waits with a `NotYet` while the server is `Creating`/`Updating` (about 20 minutes on
  AWS): the engine re-schedules, no worker waits. A stopped or failed server is refused with
  what to do;
- `identity`: the jobs' role scoped to that ARN, the `default` namespace's service account
  and its Pod Identity association (below);
- `record`: the ConfigMap the jobs route reads (below).

Where the attachment lives: in the cluster. `record` applies the ConfigMap
`default/hypd-mlflow` (labelled as hypd's): tracking server name and ARN, `made_by_hypd`, the
jobs' role ARN. It is what the jobs route reads (one Kubernetes GET per submission) and what
`GET /clusters/<c>/mlflow` starts from (then DescribeMlflowTrackingServer for status and URL,
and the newest `mlflow.*` operation for `creating`/`attaching`/`detaching`/`failed`). No copy
is kept in Redis: AWS and the cluster stay the source of truth.

The jobs' identity: Pod Identity on a service account of their own, not the storage
identity. The bucket at `/s3` is mounted by the Mountpoint CSI driver with the nodes'
execution role; granting MLflow there would give it to every pod on every node (and to the
node itself). Instead `identity` makes the role `hypd-<c>-mlflow`: trust
`pods.eks.amazonaws.com` for this EKS cluster; `sagemaker-mlflow:*` on the one tracking
server ARN (the MLflow REST API's actions follow MLflow's versions, so the family is named
whole but the resource is one server); and list/get/put/abort-multipart under the server's
S3 artifact store, its `ArtifactStoreUri` (MLflow's client uploads artifacts and logged
models there itself). Then the `hypd-mlflow` service account of `default` and its Pod
Identity association. A job in another namespace gets that namespace's service account and
association at submission (looked up first, made once).

Every job submitted while a server is attached runs as `hypd-mlflow` and gets
`MLFLOW_TRACKING_URI=<tracking server ARN>` (what the `sagemaker-mlflow` plugin resolves and
signs for) and `MLFLOW_EXPERIMENT_NAME` (the job's name unless the request's `env` names
one), in every pod of both job kinds (tests/cloud/test_mlflow.py pins it). Artifacts: the
job role has no S3 grant; metrics, parameters and tags are what it logs (training throughput
and the like); a job writes files under `/s3`.

A job's link. `GET .../jobs/<job>` answers `mlflow: {tracking_server_arn, experiment_name,
ui_url_route, ui_url_tool}` read from the job's own environment (so it is true for the job
even after a detach), or null. The MLflow UI opens through a presigned URL
(`GET /clusters/<c>/mlflow/ui-url`, CreatePresignedMlflowTrackingServerUrl, 5 minutes to
open). It is a credential, so it is made on request for an operator only (the route is an
operator's read, like the audit log; MCP `get_mlflow_ui_url` is hidden from viewers), never
part of a job, a log line or a cache.

Detach (`DELETE .../mlflow`, `mlflow.detach`) undoes the attach in reverse:

- `record` first, so new jobs stop logging to MLflow; what it held is recorded on the step
  before the ConfigMap goes;
- `identity`: every association of a `hypd-mlflow` service account to the role, the service
  accounts hypd made, the role;
- `tracking_server`: deleted only when its tags say hypd made it for this cluster; an
  attached one is kept, and the step says so. A delete waits while the server is still being
  created, then waits until it is gone;
- `server_role`.

Detach also cleans up after an attach that failed half-way (hypd's server or role without a
record). The cluster delete has a step of its own, `mlflow` (storage stage, before the
bucket): hypd's tracking server of the cluster is deleted by its tags; an attached one stays;
the record, service accounts and associations go with the EKS cluster and the roles with the
cluster's roles.

Faces: MCP `get_mlflow`, `set_mlflow`, `detach_mlflow`, `get_mlflow_ui_url`; the jobs page's
MLflow card; `skills/submit-training.md`. The sandbox answers the MLflow calls
(`sandbox/gaps/sagemaker_mlflow.py`). Tests: tests/app/test_mlflow_api.py (on the job tests'
shared cluster), tests/sandbox/test_mlflow_gap.py, tests/cloud/test_mlflow.py,
tests/tasks/test_mlflow_kill.py (long form).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from cloud import eks, iam, kube, mlflow, storage
from tasks.engine.kinds import OperationKind, Step, StepContext, StepFailed
from tasks.outcomes import guarded, output


def target(cluster: str) -> str:
    return f"cluster/{cluster}/mlflow"


def _cluster(ctx: StepContext) -> str:
    return ctx.params["cluster"]


def _api(ctx: StepContext) -> Any:
    return eks.api_client(_cluster(ctx), ctx.region)


def _account(ctx: StepContext) -> str:
    return iam.account_id(ctx.client("sts"))


def _server(ctx: StepContext) -> dict[str, Any]:
    """The tracking server this operation attaches: the one it made or the one it checked."""
    step = "verify" if ctx.params.get("tracking_server_name") else "tracking_server"
    return {"name": output(ctx, step, "name"), "arn": output(ctx, step, "arn"),
            "artifact_store_uri": (ctx.outputs.get(step) or {}).get("artifact_store_uri")}


# -- attach -------------------------------------------------------------------------------------

@guarded
def ensure_server_role(ctx: StepContext) -> dict[str, Any]:
    cluster = _cluster(ctx)
    bucket = storage.shared_bucket_name(cluster, _account(ctx), ctx.region)
    spec = iam.mlflow_server_role(cluster, ctx.region, bucket, mlflow.ARTIFACT_PREFIX)
    return {"role": spec.name, "role_arn": iam.ensure_role_spec(ctx.client("iam"), spec),
            "bucket": bucket}


@guarded
def ensure_tracking_server(ctx: StepContext) -> dict[str, Any]:
    cluster = _cluster(ctx)
    role = ctx.outputs["server_role"]
    arn = mlflow.ensure_server(ctx.client("sagemaker"), cluster, role["bucket"],
                               role["role_arn"], ctx.params.get("size") or "Small")
    return {"name": mlflow.server_name(cluster), "arn": arn,
            "artifact_store_uri": mlflow.artifact_uri(role["bucket"])}


@guarded
def wait_usable(ctx: StepContext) -> float | None:
    name = ctx.resources.get("name") or ctx.params.get("tracking_server_name") or \
        mlflow.server_name(_cluster(ctx))
    mlflow.wait_usable(ctx.client("sagemaker"), name)
    return None


@guarded
def verify_existing(ctx: StepContext) -> dict[str, Any]:
    name = ctx.params["tracking_server_name"]
    found = mlflow.describe(ctx.client("sagemaker"), name)
    if found is None:
        raise StepFailed(f"no tracking server named {name} in {ctx.region}", "not_found")
    return {"name": name, "arn": found["TrackingServerArn"],
            "artifact_store_uri": found.get("ArtifactStoreUri")}


@guarded
def ensure_identity(ctx: StepContext) -> dict[str, Any]:
    cluster = _cluster(ctx)
    server = _server(ctx)
    found = eks.describe(ctx.client("eks"), cluster)
    if found is None:
        raise StepFailed(f"EKS cluster {cluster} does not exist in {ctx.region}", "not_found")
    spec = iam.mlflow_role(cluster, _account(ctx), found["arn"], server["arn"],
                           server["artifact_store_uri"])
    role_arn = iam.ensure_role_spec(ctx.client("iam"), spec)
    ctx.record(role=spec.name, role_arn=role_arn)
    bound = mlflow.ensure_binding(ctx.client("eks"), _api(ctx), cluster,
                                  mlflow.RECORD_NAMESPACE, role_arn, ctx.token("association"))
    return {"role": spec.name, "role_arn": role_arn, "bound": [bound["namespace"]]}


@guarded
def apply_record(ctx: StepContext) -> dict[str, Any]:
    server = _server(ctx)
    made = not ctx.params.get("tracking_server_name")
    manifest = mlflow.record_manifest(_cluster(ctx), server["name"], server["arn"], made,
                                      output(ctx, "identity", "role_arn"))
    kube.server_side_apply(_api(ctx), manifest)
    return {"config_map": f"{mlflow.RECORD_NAMESPACE}/{mlflow.RECORD_NAME}"}


SERVER_ROLE = Step("server_role", "The role the tracking server keeps artifacts with "
                   "(mlflow/ of the cluster's bucket)", ensure_server_role)
TRACKING_SERVER = Step("tracking_server", "Create the MLflow tracking server (about 20 "
                       "minutes on AWS)", ensure_tracking_server, wait_usable)
VERIFY = Step("verify", "Check the existing tracking server", verify_existing, wait_usable)
IDENTITY = Step("identity", "The jobs' role (log to this tracking server only), service "
                "account and Pod Identity association", ensure_identity)
RECORD = Step("record", "Record the tracking server in the cluster (jobs read it)",
              apply_record)


def _attach_steps(params: dict[str, Any]) -> tuple[Step, ...]:
    if params.get("tracking_server_name"):
        return (VERIFY, IDENTITY, RECORD)
    return (SERVER_ROLE, TRACKING_SERVER, IDENTITY, RECORD)


# -- detach -------------------------------------------------------------------------------------

@guarded
def delete_record(ctx: StepContext) -> dict[str, Any]:
    api = _api(ctx)
    found = mlflow.read_record(api)
    if found is not None:
        ctx.record(**found)  # before deleting: a retry still knows what was attached
    return {"deleted": mlflow.delete_record(api)}


def _recorded(ctx: StepContext, key: str) -> Any:
    return (ctx.outputs.get("record") or {}).get(key, ctx.params.get(key))


@guarded
def remove_identity(ctx: StepContext) -> dict[str, Any]:
    cluster = _cluster(ctx)
    role = iam.role_name(cluster, iam.PURPOSE_MLFLOW)
    found = iam.role_state(ctx.client("iam"), role)
    removed = mlflow.remove_bindings(ctx.client("eks"), _api(ctx), cluster,
                                     found["arn"] if found else None)
    return {**removed, "role_deleted": iam.delete_role(ctx.client("iam"), role, cluster)}


ClusterName = Callable[[StepContext], str]


@guarded
def delete_tracking_server(ctx: StepContext, cluster_of: ClusterName = _cluster
                           ) -> dict[str, Any]:
    cluster = cluster_of(ctx)
    name = _recorded(ctx, "tracking_server_name") or mlflow.server_name(cluster)
    deleted = mlflow.delete_server(ctx.client("sagemaker"), name, cluster)
    return {"name": name, "deleted": deleted,
            **({} if deleted else {"kept": "not made by hypd for this cluster, or gone"})}


@guarded
def wait_server_gone(ctx: StepContext) -> float | None:
    if ctx.resources.get("deleted"):
        mlflow.wait_gone(ctx.client("sagemaker"), ctx.resources["name"])
    return None


def cluster_delete_step(cluster_of: ClusterName) -> Step:
    """The cluster delete's own step: hypd's tracking server of the cluster goes with it
    (by its tags; an attached one stays), before the bucket its artifacts are in. Its
    record, service accounts and associations go with the EKS cluster, its roles with the
    cluster's roles."""
    return Step("mlflow", "Delete the MLflow tracking server if hypd made it",
                functools.partial(delete_tracking_server, cluster_of=cluster_of),
                wait_server_gone)


@guarded
def delete_server_role(ctx: StepContext) -> dict[str, Any]:
    cluster = _cluster(ctx)
    role = iam.role_name(cluster, iam.PURPOSE_MLFLOW_SERVER)
    return {"role": role, "deleted": iam.delete_role(ctx.client("iam"), role, cluster)}


DETACH_STEPS = (
    Step("record", "Remove the record (new jobs no longer log to MLflow)", delete_record),
    Step("identity", "Remove the jobs' Pod Identity associations, service accounts and role",
         remove_identity),
    Step("tracking_server", "Delete the tracking server if hypd made it", delete_tracking_server,
         wait_server_gone),
    Step("server_role", "Delete the tracking server's role if hypd made it", delete_server_role),
)


def mlflow_url(params: dict[str, Any]) -> str:
    return f"/api/v1/clusters/{params['cluster']}/mlflow"


MLFLOW_ATTACH = OperationKind(name="mlflow.attach",
                              steps=(SERVER_ROLE, TRACKING_SERVER, VERIFY, IDENTITY, RECORD),
                              select=_attach_steps, resource_url=mlflow_url)
MLFLOW_DETACH = OperationKind(name="mlflow.detach", steps=DETACH_STEPS, resource_url=mlflow_url)
