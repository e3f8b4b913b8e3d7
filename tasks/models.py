"""Operation kind `model.download` (target `cluster/<c>/model/<m>`): fetch a model into the
cluster's bucket under `models/<m>/` as a Kubernetes Job (cloud/models.py).

Steps: `identity` (the download service account and its IRSA role, made once), `job` (for an
S3 source, read of that prefix granted to the role for this download; then the Job, adopted
by its operation label when a crashed attempt made it; its wait reports the files and bytes
in the bucket and ends when the Job does), `cleanup` (the source's read taken back).

The source's read never outlives the download: a Job that fails or disappears takes it back
before the step fails, and a cancelled download before it stops (`on_cancel`, which first
deletes the operation's own Job and its pods, so a cancel stops the transfer too). Its state is
recorded on the `job` step (`source_grant`: granting → granted → revoking → revoked) before
each IAM call, so a re-run task adopts what an earlier one did instead of calling again; a
retry of the failed operation grants it anew.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from cloud import dependencies, eks, iam, identity, kube, models, storage
from cloud.models import Download
from cloud.settings import Settings
from tasks.engine.kinds import OperationKind, Step, StepContext, StepFailed, StepRetry
from tasks.outcomes import guarded

ACCOUNT = "model-download-account"
PROGRESS_POLL_S = 5.0


def target(cluster: str, model: str) -> str:
    return f"cluster/{cluster}/model/{model}"


def _download(ctx: StepContext) -> Download:
    return Download.from_params(ctx.params)


def _api(ctx: StepContext) -> Any:
    return eks.api_client(ctx.params["cluster"], ctx.region)


def _source_policy_name(model: str) -> str:
    return f"hypd-source-{model}"


@guarded
def ensure_identity(ctx: StepContext) -> dict[str, Any]:
    cluster = ctx.params["cluster"]
    account = iam.account_id(ctx.client("sts"))
    facts = identity.facts(ctx.client("eks"), cluster, ctx.region, account,
                           storage.shared_bucket_name(cluster, account, ctx.region))
    made = identity.ensure(ctx.client("iam"), _api(ctx), dependencies.by_name()[ACCOUNT],
                           facts)
    return {"role": made["role"], "service_account": models.SERVICE_ACCOUNT}


# -- the S3 source's read, for this download only ---------------------------------------------

GRANTING, GRANTED, REVOKING, REVOKED = "granting", "granted", "revoking", "revoked"


def _role(ctx: StepContext) -> str:
    return iam.role_name(ctx.params["cluster"], iam.PURPOSE_MODEL_DOWNLOAD)


def _grant_source(ctx: StepContext, download: Download) -> None:
    """Let the download's role read the S3 source (once per attempt of the operation)."""
    state = ctx.resources.get("source_grant")
    if download.source != "s3" or state == GRANTED:
        return
    client = ctx.client("iam")
    policy = _source_policy_name(download.model)
    if state == GRANTING:  # an earlier task may have made it before it died
        with contextlib.suppress(client.exceptions.NoSuchEntityException):
            client.get_role_policy(RoleName=_role(ctx), PolicyName=policy)
            ctx.record(source_grant=GRANTED)
            return
    ctx.record(source_grant=GRANTING)
    client.put_role_policy(
        RoleName=_role(ctx), PolicyName=policy,
        PolicyDocument=json.dumps(models.source_policy(download.s3_uri or "",
                                                  iam.partition_of(ctx.region))))
    ctx.record(source_grant=GRANTED)


def _grant_state(ctx: StepContext) -> str | None:
    """Where the source's read stands: this step's record, else the job step's."""
    return ctx.resources.get("source_grant",
                             (ctx.outputs.get(JOB.name) or {}).get("source_grant"))


def _revoke_source(ctx: StepContext, download: Download) -> bool:
    """Take the source's read back, once: False when there was nothing to take back."""
    if download.source != "s3" or _grant_state(ctx) in (None, REVOKED):
        return False
    ctx.record(source_grant=REVOKING)
    client = ctx.client("iam")
    with contextlib.suppress(client.exceptions.NoSuchEntityException):
        client.delete_role_policy(RoleName=_role(ctx),
                                  PolicyName=_source_policy_name(download.model))
    ctx.record(source_grant=REVOKED)
    return True


def _failed(ctx: StepContext, download: Download, message: str, code: str) -> StepFailed:
    """The download failed: its source's read goes before the step fails."""
    _revoke_source(ctx, download)
    return StepFailed(message, code)


@guarded
def apply_job(ctx: StepContext) -> dict[str, Any]:
    """The Job, made once: one carrying this operation's label is adopted; a finished one of
    an earlier download of the same model is removed first."""
    download = _download(ctx)
    api = _api(ctx)
    name = models.job_name(download.model)
    found = kube.get_object(api, "batch/v1", "Job", name, models.NAMESPACE)
    if found is not None:
        if models.job_of(found, ctx.op_id):
            _grant_source(ctx, download)
            return {"job": name, "uid": found["metadata"].get("uid"), "adopted": True}
        if models.job_state(found) == "running":
            raise _failed(ctx, download, f"Job {models.NAMESPACE}/{name} of another download "
                                         "is still running", "conflict")
        kube.delete_object(api, "batch/v1", "Job", name, models.NAMESPACE)
        raise StepRetry(f"removing the finished Job {name} of an earlier download", 2.0)
    _grant_source(ctx, download)
    job = models.download_job(download, ctx.params["bucket"], ctx.region, ctx.op_id,
                              image=Settings.from_env().model_download_image)
    made = kube.server_side_apply(api, job)
    return {"job": name, "uid": made["metadata"].get("uid")}


@guarded
def wait_job(ctx: StepContext) -> float | None:
    download = _download(ctx)
    job = kube.get_object(_api(ctx), "batch/v1", "Job", models.job_name(download.model),
                          models.NAMESPACE)
    done = models.progress(ctx.client("s3"), ctx.params["bucket"], download.model)
    if done != {k: ctx.resources.get(k) for k in done}:
        ctx.record(**done)
    state = models.job_state(job)
    ctx.detail(f"{done['files']} files, {done['bytes']} bytes in "
               f"s3://{ctx.params['bucket']}/models/{download.model}/ (Job {state})")
    if state == "missing":
        raise _failed(ctx, download, f"the download Job {models.job_name(download.model)} "
                                     "disappeared; retry to run it again", "upstream_error")
    if state == "failed":
        raise _failed(ctx, download, f"the download Job {models.job_name(download.model)} "
                                     f"failed: see kubectl logs -n {models.NAMESPACE} "
                                     f"job/{models.job_name(download.model)}",
                      "upstream_error")
    return PROGRESS_POLL_S if state == "running" else None


@guarded
def remove_source_grant(ctx: StepContext) -> dict[str, Any]:
    """The source's read, taken back through the job step's record of it."""
    download = _download(ctx)
    _revoke_source(ctx, download)
    return {"removed": _source_policy_name(download.model)}


IDENTITY = Step("identity", "The download service account and its role (write models/ only)",
                ensure_identity)
JOB = Step("job", "Run the download Job; follow the files and bytes in the bucket", apply_job,
           wait_job)
CLEANUP = Step("cleanup", "Take back the read of the S3 source", remove_source_grant)


def _steps(params: dict[str, Any]) -> tuple[Step, ...]:
    return (IDENTITY, JOB, CLEANUP) if params["source"] == "s3" else (IDENTITY, JOB)


def model_url(params: dict[str, Any]) -> str:
    return f"/api/v1/clusters/{params['cluster']}/models"


@guarded
def take_back(ctx: StepContext) -> None:
    """A cancelled download stops: its own Job goes with its pods (only the Job carrying this
    operation's label; another download's is never touched); once those pods are gone, what
    it had written under `models/<m>/` goes too (cancelled in its job step only: the route
    refused the download while anything was there, and the model lock keeps another download
    of the name out, so every file there is this one's; a cancel landing after the Job
    finished keeps the finished model); and its source's read — taken back even when the
    rest failed (a retryable failure tries again at the next boundary; the read, recorded
    revoked, is not revoked twice)."""
    download = _download(ctx)
    try:
        api = _api(ctx)
        uid = models.remove_job(api, download.model, ctx.op_id)
        if uid is not None:
            ctx.record(job_deleted=uid)
        if ctx.step == JOB.name:
            running = models.writers(api, ctx.op_id)
            if running:
                raise StepRetry(f"waiting for the download's pods to stop ({', '.join(running)}) "
                                "before removing its partial files", 2.0)
            removed = models.remove_files(ctx.client("s3"), ctx.params["bucket"],
                                            download.model)
            if removed:
                ctx.record(partial_removed=removed)
    finally:
        _revoke_source(ctx, download)


MODEL_DOWNLOAD = OperationKind(name="model.download", steps=(IDENTITY, JOB, CLEANUP),
                               select=_steps, resource_url=model_url, on_cancel=take_back)


@guarded
def delete_files(ctx: StepContext) -> dict[str, Any]:
    """Every object version under `models/<m>/` of the cluster's bucket, for good: deleting
    what is already gone deletes nothing, so a re-run after a crash repeats no harm."""
    model = ctx.params["name"]
    removed = models.remove_files(ctx.client("s3"), ctx.params["bucket"], model)
    done = int(ctx.resources.get("removed") or 0) + removed
    ctx.record(removed=done)
    return {"removed": done, "location": f"s3://{ctx.params['bucket']}/"
                                         f"{models.MODEL_PREFIX}{model}/"}


MODEL_DELETE = OperationKind(
    name="model.delete",
    steps=(Step("files", "Delete the model's files from the cluster's bucket", delete_files),),
    resource_url=model_url)
