"""Where moto 5.2 refuses what AWS accepts, corrected to AWS's own published answer.

- SageMaker endpoint configurations: moto checks a production variant's instance type
  against a list of its own that stops at older families (no `ml.g5`, `ml.g6`, `ml.p5`, ...),
  so an endpoint on the instance types HyperPod inference runs on could not be recorded.
  Here the check is botocore's service model's `ProductionVariantInstanceType` enum — the
  list AWS publishes with the API — and the same ValidationError otherwise.

- S3 `CreateBucket`: AWS tags a bucket with `CreateBucketConfiguration.Tags` as it makes
  it; moto drops them, so a bucket made tagged read as untagged.

Applied once per process, before the first request (`apply`), like sandbox/moto_speed.py.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

_applied = False
_lock = threading.Lock()


@functools.cache
def endpoint_instance_types() -> frozenset[str]:
    """Every instance type AWS's SageMaker API accepts for an endpoint variant."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    return frozenset(model.shape_for("ProductionVariantInstanceType").enum)


def _validate_instance_type(self: object, instance_type: str) -> None:
    from moto.sagemaker.exceptions import ValidationError

    allowed = endpoint_instance_types()
    if instance_type not in allowed:
        raise ValidationError(
            message=f"Value '{instance_type}' at 'instanceType' failed to satisfy constraint: "
            f"Member must satisfy enum value set: {sorted(allowed)}")


def creation_tags(body: bytes) -> dict[str, str]:
    """The tags of a CreateBucket request's body (`CreateBucketConfiguration.Tags`)."""
    import xmltodict

    if not body:
        return {}
    config = (xmltodict.parse(body) or {}).get("CreateBucketConfiguration") or {}
    tags = (config.get("Tags") or {}).get("Tag") or []
    return {t["Key"]: t.get("Value") or "" for t in (tags if isinstance(tags, list) else [tags])}


def _tagged_at_creation(put: Any) -> Any:
    """moto's bucket PUT, then the creation's tags on the bucket it made."""

    @functools.wraps(put)
    def wrapper(self: Any, request: Any, bucket_name: str, querystring: dict[str, Any]) -> Any:
        new = not querystring and bucket_name not in self.backend.buckets
        answer = put(self, request, bucket_name, querystring)
        if new and bucket_name in self.backend.buckets:
            tags = creation_tags(self.body)
            if tags:
                self.backend.put_bucket_tagging(bucket_name, tags)
        return answer

    return wrapper


def apply() -> None:
    global _applied
    with _lock:
        if _applied:
            return
        from moto.s3.responses import S3Response
        from moto.sagemaker.models import FakeEndpointConfig

        FakeEndpointConfig.validate_instance_type = _validate_instance_type  # type: ignore
        S3Response._bucket_response_put = _tagged_at_creation(  # type: ignore
            S3Response._bucket_response_put)
        _applied = True
