"""HyperPod lifecycle scripts: the bucket that holds them and their upload.

The scripts are data (`cloud/data/lifecycle/`), uploaded byte for byte; nothing here writes
shell. HyperPod's instance role reads lifecycle scripts through the managed policy
AmazonSageMakerClusterInstanceRolePolicy, which covers only buckets named `sagemaker-*`, so
the lifecycle bucket is `sagemaker-hypd-<cluster>-<digest>` (see `cloud.storage.bucket_name`).
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from cloud.aws import CLUSTER_TAG, error_code, is_not_found, tags_for
from cloud.capacity import DEFAULT_ON_CREATE, LIFECYCLE_BUCKET_PREFIX
from cloud.storage import bucket_name, ensure_bucket

SCRIPTS_DIR = Path(__file__).parent / "data" / "lifecycle"
DEFAULT_PREFIX = "lifecycle"
ROLE_LIFECYCLE_BUCKET = "lifecycle-bucket"
SHA256_METADATA = "sha256"
"""Object metadata `x-amz-meta-sha256`: the content's digest, compared before uploading."""


def lifecycle_bucket_name(cluster: str, account_id: str, region: str) -> str:
    return bucket_name(LIFECYCLE_BUCKET_PREFIX + "hypd-", cluster, account_id, region)


def lifecycle_bucket_tags(cluster: str) -> list[dict[str, str]]:
    return tags_for(CLUSTER_TAG, cluster, role=ROLE_LIFECYCLE_BUCKET)


def ensure_lifecycle_bucket(s3: Any, cluster: str, region: str, tags: list[dict[str, str]]
                            | None = None, *, account_id: str) -> dict[str, Any]:
    """The cluster's lifecycle bucket (public access blocked, encrypted, tagged), created or
    adopted. `account_id` makes the globally unique name deterministic, so a retry finds the
    same bucket. Returns {name, region, created}."""
    name = lifecycle_bucket_name(cluster, account_id, region)
    return ensure_bucket(s3, name, region, tags or lifecycle_bucket_tags(cluster))


def script_files(directory: Path = SCRIPTS_DIR) -> dict[str, bytes]:
    """File name → bytes of every lifecycle script kept as data."""
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def upload_scripts(s3: Any, bucket: str, prefix: str = DEFAULT_PREFIX,
                   files: dict[str, bytes] | None = None) -> dict[str, Any]:
    """Upload the lifecycle scripts under `s3://bucket/prefix/`, skipping every object whose
    content is already there (compared by the SHA-256 kept in its metadata, or by ETag, which
    for a single-part SSE-S3 object is the MD5). Returns {uri, on_create, uploaded, unchanged}.
    """
    files = script_files() if files is None else files
    if DEFAULT_ON_CREATE not in files:
        raise ValueError(f"the lifecycle scripts must include {DEFAULT_ON_CREATE}")
    prefix = prefix.strip("/")
    uploaded, unchanged = [], []
    for name, body in sorted(files.items()):
        key = f"{prefix}/{name}" if prefix else name
        digest = hashlib.sha256(body).hexdigest()
        if _same(s3, bucket, key, body, digest):
            unchanged.append(key)
            continue
        s3.put_object(
            Bucket=bucket, Key=key, Body=body,
            ContentType=("text/x-shellscript" if name.endswith(".sh")
                         else "application/octet-stream"),
            ContentMD5=base64.b64encode(hashlib.md5(body).digest()).decode(),
            Metadata={SHA256_METADATA: digest},
            ServerSideEncryption="AES256",
        )
        uploaded.append(key)
    uri = f"s3://{bucket}/{prefix}/" if prefix else f"s3://{bucket}/"
    return {"uri": uri, "on_create": DEFAULT_ON_CREATE, "uploaded": uploaded,
            "unchanged": unchanged}


def _same(s3: Any, bucket: str, key: str, body: bytes, digest: str) -> bool:
    try:
        head = s3.head_object(Bucket=bucket, Key=key)
    except ClientError as exc:
        if is_not_found(exc) or error_code(exc) in ("404", "NoSuchKey"):
            return False
        raise
    if head.get("ContentLength") not in (None, len(body)):
        return False
    stored = (head.get("Metadata") or {}).get(SHA256_METADATA)
    if stored:
        return stored == digest
    return (head.get("ETag") or "").strip('"') == hashlib.md5(body).hexdigest()
