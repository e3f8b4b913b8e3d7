"""What the SageMaker, FSx and Service Quotas gaps share: errors, paging, and moto look-ups.

The gaps check a request against the rest of the local AWS the way AWS does — the role must
exist in IAM, the bucket in S3, the subnets and security groups in EC2, the EKS cluster in EKS —
by reading moto's in-process models (the layer runs moto in this process).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from sandbox.gaps import DEFAULT_PAGE, AwsError, Handler, page
from sandbox.reply import Reply

__all__ = ["DEFAULT_PAGE", "AwsError", "handler", "json_reply", "page", "shared_state",
           "validation"]

JSON_CONTENT_TYPE = "application/x-amz-json-1.1"


def validation(message: str) -> AwsError:
    return AwsError("ValidationException", message)


def json_reply(value: dict[str, Any]) -> Reply:
    return Reply(
        200,
        json.dumps(value).encode(),
        [("Content-Type", JSON_CONTENT_TYPE), ("x-amzn-RequestId", str(uuid.uuid4()))],
    )


def handler(service: str, model_service: str | None = None) -> Callable[[Handler], Handler]:
    """The decorator gaps once stacked under `@answers`; the one request path
    (`sandbox.gaps.GapAnswer.run`) now does what it did, so it only names the botocore
    model where its name is not the signing name's (`handler("servicequotas",
    "service-quotas")`). Kept so a module in that style works unchanged."""

    def mark(fn: Handler) -> Handler:
        if model_service:
            fn.__gap_model__ = model_service  # type: ignore[attr-defined]
        return fn

    return mark


def shared_state(app: Any) -> dict[str, Any]:
    """The per-local-AWS dict every gap's state lives in (see `sandbox.gaps.GapState`)."""
    return app.gap_state  # type: ignore[no-any-return]


# --- moto look-ups --------------------------------------------------------------------------


def iam_role(account: str, arn: str) -> Any | None:
    """moto's IAM role with this ARN, or None."""
    from moto.iam.models import iam_backends

    backend = iam_backends[account]["aws"]
    for role in list(backend.roles.values()):
        if role.arn == arn:
            return role
    return None


def s3_bucket(account: str, name: str) -> Any | None:
    from moto.s3.models import s3_backends

    try:
        return s3_backends[account]["aws"].get_bucket(name)
    except Exception:  # MissingBucket
        return None


def s3_object_exists(account: str, bucket_name: str, key: str) -> bool:
    bucket = s3_bucket(account, bucket_name)
    if bucket is None:
        return False
    try:
        return key in bucket.keys
    except Exception:
        return False


def ec2_backend(account: str, region: str) -> Any:
    from moto.ec2.models import ec2_backends

    return ec2_backends[account][region]


def subnet(account: str, region: str, subnet_id: str) -> Any | None:
    try:
        return ec2_backend(account, region).get_subnet(subnet_id)
    except Exception:  # InvalidSubnetIdError
        return None


def security_group(account: str, region: str, group_id: str) -> Any | None:
    return ec2_backend(account, region).get_security_group_from_id(group_id)


def eks_cluster(account: str, region: str, name: str) -> Any | None:
    from moto.eks.models import eks_backends

    return eks_backends[account][region].clusters.get(name)


def split_s3_uri(uri: str) -> tuple[str, str] | None:
    """("bucket", "prefix") of s3://bucket/prefix (or the https form), None if neither."""
    for scheme in ("s3://", "https://"):
        if uri.startswith(scheme):
            rest = uri[len(scheme) :]
            if scheme == "https://":
                # https://bucket.s3.region.amazonaws.com/prefix or https://s3.../bucket/prefix
                host, _, path = rest.partition("/")
                if host.startswith("s3.") or host.startswith("s3-"):
                    bucket, _, prefix = path.partition("/")
                    return bucket, prefix
                return host.split(".s3", 1)[0], path
            bucket, _, prefix = rest.partition("/")
            return bucket, prefix
    return None
