"""Models in a cluster's shared bucket (`models/<model>/`), and the Kubernetes Job that
fetches one there.

The Job runs as the service account `hypd-model-download` (IRSA: it may list the bucket and
write under `models/` only; a download from another bucket adds read of that source prefix,
for that download only). It uploads through the S3 API (`aws s3 cp`, multipart), never
through the Mountpoint mount (no rename or append there). Its image is a setting
(`HYPD_MODEL_DOWNLOAD_IMAGE`): the stock `python:3.12-slim` pip-installs the pinned TOOLS at
every run (the Job then needs a way to PyPI); an image built from
deploy/images/model-download/Dockerfile has them already, and the script installs only what
is missing. A Hugging Face model is fetched
with the hub's own CLI (`hf download`, id and revision) into the pod's scratch volume first;
an S3 source is copied bucket to bucket. A hub token reaches the pod only as the
environment variable `HF_TOKEN` taken from a Kubernetes Secret the user names: hypd never
sees, stores or prints the token.

Progress is read from the bucket itself (files and bytes under the model's prefix), so what
the operation reports is what is really there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cloud import kube, storage
from vocabulary import patterns

MODEL_PREFIX = "models/"
JOB_PREFIX = "hypd-model-"
MODEL_LABEL = "hypd.io/model"
OPERATION_LABEL = "hypd.io/operation"
SERVICE_ACCOUNT = "hypd-model-download"
NAMESPACE = "default"
TOOLS = ("huggingface_hub[cli,hf_transfer]==0.34.4", "awscli==1.42.30")
"""What the Job runs (`hf`, `aws`), pinned; deploy/images/model-download/Dockerfile bakes
exactly these (tests/cloud/test_models.py keeps the two equal)."""
SCRATCH_LIMIT = "1Ti"


# The Job's scripts: fixed text; every value reaches them as an environment variable.
# The tools are installed only when the image lacks them: `a && b || c && d` is
# `((a && b) || c) && d` in sh, so a failed install still stops the script.
_INSTALL = ('command -v hf >/dev/null && command -v aws >/dev/null || '
            'pip install --quiet --no-cache-dir "$HYPD_TOOL_HUB" "$HYPD_TOOL_CLI"')
_UPLOAD = ('aws s3 cp --recursive --only-show-errors --exclude ".cache/*" '
           '"$HYPD_FROM" "s3://$HYPD_BUCKET/models/$HYPD_MODEL/"')
SCRIPTS = {
    "huggingface": f'{_INSTALL} && hf download "$HYPD_REPO" --revision "$HYPD_REVISION" '
                   f'--local-dir /work/model && {_UPLOAD}',
    "s3": f"{_INSTALL} && {_UPLOAD}",
}


@dataclass(frozen=True)
class TokenRef:
    """A Kubernetes Secret's key holding a hub token (the token itself never leaves it)."""

    name: str
    key: str


@dataclass(frozen=True)
class Download:
    model: str
    source: str  # huggingface | s3
    repo: str | None = None
    revision: str = "main"
    s3_uri: str | None = None
    token: TokenRef | None = None

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Download:
        token = params.get("hub_token_secret")
        return cls(model=params["name"], source=params["source"], repo=params.get("repo"),
                   revision=params.get("revision") or "main", s3_uri=params.get("s3_uri"),
                   token=TokenRef(token["name"], token["key"]) if token else None)


def job_name(model: str) -> str:
    return f"{JOB_PREFIX}{model}"


def source_location(uri: str) -> tuple[str, str]:
    """(bucket, prefix) of an `s3://bucket/prefix` URI."""
    found = patterns.S3_OBJECT_URI.fullmatch(uri)
    if not found:
        raise ValueError(f"not an S3 URI: {uri!r}")
    return found.group(1), found.group(2).strip("/") + "/"


def download_job(download: Download, bucket: str, region: str, operation: str, *,
                 image: str) -> dict[str, Any]:
    """The Job (batch/v1) fetching `download` into `s3://<bucket>/models/<model>/`, run from
    `image` (the setting HYPD_MODEL_DOWNLOAD_IMAGE)."""
    env: list[dict[str, Any]] = [
        {"name": "HYPD_MODEL", "value": download.model},
        {"name": "HYPD_BUCKET", "value": bucket},
        {"name": "AWS_REGION", "value": region},
        {"name": "AWS_DEFAULT_REGION", "value": region},
        {"name": "HYPD_TOOL_HUB", "value": TOOLS[0]},
        {"name": "HYPD_TOOL_CLI", "value": TOOLS[1]},
    ]
    if download.source == "huggingface":
        env += [{"name": "HYPD_REPO", "value": download.repo or ""},
                {"name": "HYPD_REVISION", "value": download.revision},
                {"name": "HYPD_FROM", "value": "/work/model"},
                {"name": "HF_HUB_ENABLE_HF_TRANSFER", "value": "1"},
                {"name": "HF_HUB_DISABLE_PROGRESS_BARS", "value": "1"}]
        if download.token is not None:
            env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {
                "name": download.token.name, "key": download.token.key}}})
    else:
        env.append({"name": "HYPD_FROM", "value": download.s3_uri or ""})
    labels = kube.labels({MODEL_LABEL: download.model, OPERATION_LABEL: operation})
    container = {
        "name": "download", "image": image,
        "command": ["sh", "-c", SCRIPTS[download.source]],
        "env": env,
        "resources": {"requests": {"cpu": "2", "memory": "4Gi"},
                      "limits": {"memory": "8Gi"}},
        "volumeMounts": [{"name": "work", "mountPath": "/work"}],
    }
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": job_name(download.model), "namespace": NAMESPACE,
                     "labels": labels},
        "spec": {
            "backoffLimit": 2,
            "activeDeadlineSeconds": 6 * 3600,
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {"restartPolicy": "Never", "serviceAccountName": SERVICE_ACCOUNT,
                         "containers": [container],
                         "volumes": [{"name": "work",
                                      "emptyDir": {"sizeLimit": SCRATCH_LIMIT}}]},
            },
        },
    }


def job_of(job: Mapping[str, Any] | None, operation: str) -> bool:
    """Whether `job` is the one `operation` made (it carries the operation's label)."""
    labels = ((job or {}).get("metadata") or {}).get("labels") or {}
    return job is not None and labels.get(OPERATION_LABEL) == operation


def remove_job(api: Any, model: str, operation: str) -> str | None:
    """Delete `operation`'s download Job of `model`, its pods with it (Background: a
    batch/v1 Job deleted without a policy leaves its pods running); the uid of the Job
    deleted, or None when there was none of this operation's (gone already, never made, or
    the name held by another download's Job, which is left alone). Safe to call again: the
    deletion is bound to the uid found, so it can never reach a Job made after the lookup."""
    found = kube.get_object(api, "batch/v1", "Job", job_name(model), NAMESPACE)
    if not job_of(found, operation):
        return None
    uid = found["metadata"].get("uid")
    deleted = kube.delete_object(api, "batch/v1", "Job", job_name(model), NAMESPACE,
                                 propagation="Background", uid=uid)
    return uid if deleted else None


def writers(api: Any, operation: str) -> list[str]:
    """The pods of `operation`'s download still there (a deleted Job's pods go after it)."""
    return [p["metadata"]["name"] for p in kube.list_objects(
        api, "v1", "Pod", NAMESPACE, label_selector={OPERATION_LABEL: operation})]


def remove_files(s3: Any, bucket: str, model: str) -> int:
    """Delete every object version under `models/<model>/`: what an unfinished download
    wrote (a new download of the name is refused while anything is there), or a model being
    removed; how many went."""
    return storage.delete_objects(s3, bucket, f"{MODEL_PREFIX}{model}/")


def job_state(job: Mapping[str, Any] | None) -> str:
    """`missing`, `running`, `succeeded` or `failed`, from the Job's conditions."""
    if job is None:
        return "missing"
    for condition in (job.get("status") or {}).get("conditions") or ():
        if condition.get("status") == "True" and condition.get("type") == "Complete":
            return "succeeded"
        if condition.get("status") == "True" and condition.get("type") == "Failed":
            return "failed"
    return "running"


def progress(s3: Any, bucket: str, model: str) -> dict[str, int]:
    """Files and bytes under the model's prefix now."""
    files = size = 0
    paginator = s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=f"{MODEL_PREFIX}{model}/"):
        for item in page.get("Contents") or ():
            files += 1
            size += int(item.get("Size") or 0)
    return {"files": files, "bytes": size}


def listing(s3: Any, bucket: str) -> dict[str, dict[str, int]]:
    """Every model in the bucket: {name: {files, bytes}}."""
    found: dict[str, dict[str, int]] = {}
    paginator = s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=MODEL_PREFIX):
        for item in page.get("Contents") or ():
            name = item["Key"][len(MODEL_PREFIX):].split("/", 1)[0]
            if not name or "/" not in item["Key"][len(MODEL_PREFIX):]:
                continue
            entry = found.setdefault(name, {"files": 0, "bytes": 0})
            entry["files"] += 1
            entry["bytes"] += int(item.get("Size") or 0)
    return found


def source_policy(uri: str, partition: str = "aws") -> dict[str, Any]:
    """Read of one download's S3 source prefix (added to the download role for it)."""
    bucket, prefix = source_location(uri)
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "ListSource", "Effect": "Allow", "Action": ["s3:ListBucket"],
         "Resource": [f"arn:{partition}:s3:::{bucket}"],
         "Condition": {"StringLike": {"s3:prefix": [f"{prefix}*"]}}},
        {"Sid": "ReadSource", "Effect": "Allow", "Action": ["s3:GetObject"],
         "Resource": [f"arn:{partition}:s3:::{bucket}/{prefix}*"]},
    ]}
