"""What the SageMaker and Service Quotas gaps share: replies, errors, state, and moto look-ups.

The gaps check a request against the rest of the local AWS the way AWS does — the role must
exist in IAM, the bucket in S3, the subnets and security groups in EC2, the EKS cluster in EKS —
by reading moto's in-process models (the layer runs moto in this process).
"""

from __future__ import annotations

import base64
import json
import logging
import uuid
from collections.abc import Callable
from typing import Any

from sandbox.errors import error_reply
from sandbox.gaps import GapContext
from sandbox.gaps.sagemaker_model import RequestInvalid, output, validate
from sandbox.reply import Reply

log = logging.getLogger(__name__)

JSON_CONTENT_TYPE = "application/x-amz-json-1.1"
# Lists page at this size unless the request asks for another, so code that ignores NextToken
# fails here rather than first in production.
DEFAULT_PAGE = 10


class AwsError(Exception):
    """An AWS error answer: code (as botocore matches it), message, HTTP status."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


def validation(message: str) -> AwsError:
    return AwsError("ValidationException", message)


def json_reply(value: dict[str, Any]) -> Reply:
    return Reply(
        200,
        json.dumps(value).encode(),
        [("Content-Type", JSON_CONTENT_TYPE), ("x-amzn-RequestId", str(uuid.uuid4()))],
    )


def handler(
    service: str, model_service: str | None = None
) -> Callable[[Callable[[GapContext, dict[str, Any]], dict[str, Any]]], Callable[..., Reply]]:
    """Wrap `fn(ctx, params) -> answer` into a gap answer: validate against botocore's model,
    turn AwsError into AWS's error reply, and cut the answer to the output shape."""
    model_name = model_service or service

    def wrap(fn: Callable[[GapContext, dict[str, Any]], dict[str, Any]]) -> Callable[..., Reply]:
        def answer(ctx: GapContext) -> Reply:
            params = ctx.call.params
            try:
                validate(model_name, ctx.call.action, params)
                value = fn(ctx, params)
            except RequestInvalid as exc:
                return error_reply(ctx.call.protocol, 400, exc.code, exc.message)
            except AwsError as exc:
                return error_reply(ctx.call.protocol, exc.status, exc.code, exc.message)
            except Exception as exc:  # a sandbox bug: say so in AWS's shape, not as HTML
                log.exception("sandbox: %s:%s failed", service, ctx.call.action)
                message = f"local AWS (sandbox gap) failed: {type(exc).__name__}: {exc}"
                return error_reply(ctx.call.protocol, 500, "InternalFailure", message)
            return json_reply(output(model_name, ctx.call.action, value))

        answer.__name__ = fn.__name__
        answer.__doc__ = fn.__doc__
        return answer

    return wrap


def shared_state(app: Any) -> dict[str, Any]:
    """The per-local-AWS dict that gap handlers and the `/_sandbox` control routes share.

    The control routes see the layer's `Controls`, not the app; the layer gives Controls its
    `gap_state` (then both are the app's one dict). A layer that does not yet pass it still
    works: Controls then holds its own dict, and gap handlers find it through the app.
    """
    controls = getattr(app, "_controls", None)
    state = getattr(controls, "gap_state", None)
    if isinstance(state, dict):
        return state
    return app.gap_state


# --- paging ---------------------------------------------------------------------------------


def page(
    items: list[Any], params: dict[str, Any], default: int = DEFAULT_PAGE
) -> tuple[list[Any], str | None]:
    """One page of `items` and the token for the next (None at the end)."""
    start = 0
    token = params.get("NextToken")
    if token:
        try:
            start = int(base64.b64decode(token.encode()).decode())
        except (ValueError, UnicodeDecodeError) as exc:
            raise validation(f"Invalid pagination token {token!r}.") from exc
    size = int(params.get("MaxResults") or default)
    chunk = items[start : start + size]
    end = start + size
    return chunk, (base64.b64encode(str(end).encode()).decode() if end < len(items) else None)


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
