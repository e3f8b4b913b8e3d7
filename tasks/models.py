"""Operation kind `model.download` (target `cluster/<c>/model/<m>`): fetch a model into the
cluster's bucket under `models/<m>/` as a Kubernetes Job (cloud/models.py).

Steps: `identity` (the download service account and its IRSA role, made once; for an S3
source, read of that prefix added to the role for this download), `job` (the Job, adopted by
its operation label when a crashed attempt made it; its wait reports the files and bytes in
the bucket and ends when the Job does), `cleanup` (the source's read taken back).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from cloud import dependencies, eks, iam, identity, kube, models, storage
from cloud.models import Download
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
    download = _download(ctx)
    if download.source == "s3":
        ctx.client("iam").put_role_policy(
            RoleName=made["role"], PolicyName=_source_policy_name(download.model),
            PolicyDocument=json.dumps(models.source_policy(download.s3_uri or "",
                                                      iam.partition_of(ctx.region))))
    return {"role": made["role"], "service_account": models.SERVICE_ACCOUNT}


@guarded
def apply_job(ctx: StepContext) -> dict[str, Any]:
    """The Job, made once: one carrying this operation's label is adopted; a finished one of
    an earlier download of the same model is removed first."""
    download = _download(ctx)
    api = _api(ctx)
    name = models.job_name(download.model)
    found = kube.get_object(api, "batch/v1", "Job", name, models.NAMESPACE)
    if found is not None:
        mine = (found["metadata"].get("labels") or {}).get(models.OPERATION_LABEL) == ctx.op_id
        if mine:
            return {"job": name, "uid": found["metadata"].get("uid"), "adopted": True}
        if models.job_state(found) == "running":
            raise StepFailed(f"Job {models.NAMESPACE}/{name} of another download is still "
                             "running", "conflict")
        kube.delete_object(api, "batch/v1", "Job", name, models.NAMESPACE)
        raise StepRetry(f"removing the finished Job {name} of an earlier download", 2.0)
    job = models.download_job(download, ctx.params["bucket"], ctx.region, ctx.op_id)
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
        raise StepFailed(f"the download Job {models.job_name(download.model)} disappeared; "
                         "retry to run it again", "upstream_error")
    if state == "failed":
        raise StepFailed(f"the download Job {models.job_name(download.model)} failed: see "
                         f"kubectl logs -n {models.NAMESPACE} "
                         f"job/{models.job_name(download.model)}", "upstream_error")
    return PROGRESS_POLL_S if state == "running" else None


@guarded
def remove_source_grant(ctx: StepContext) -> dict[str, Any]:
    download = _download(ctx)
    role = iam.role_name(ctx.params["cluster"], iam.PURPOSE_MODEL_DOWNLOAD)
    client = ctx.client("iam")
    with contextlib.suppress(client.exceptions.NoSuchEntityException):
        client.delete_role_policy(RoleName=role, PolicyName=_source_policy_name(download.model))
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


MODEL_DOWNLOAD = OperationKind(name="model.download", steps=(IDENTITY, JOB, CLEANUP),
                               select=_steps, resource_url=model_url)
