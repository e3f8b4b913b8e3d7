"""Where moto 5.2 refuses what AWS accepts, corrected to AWS's own published answer.

- SageMaker endpoint configurations: moto checks a production variant's instance type
  against a list of its own that stops at older families (no `ml.g5`, `ml.g6`, `ml.p5`, ...),
  so an endpoint on the instance types HyperPod inference runs on could not be recorded.
  Here the check is botocore's service model's `ProductionVariantInstanceType` enum — the
  list AWS publishes with the API — and the same ValidationError otherwise.

Applied once per process, before the first request (`apply`), like sandbox/moto_speed.py.
"""

from __future__ import annotations

import functools
import threading

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


def apply() -> None:
    global _applied
    with _lock:
        if _applied:
            return
        from moto.sagemaker.models import FakeEndpointConfig

        FakeEndpointConfig.validate_instance_type = _validate_instance_type  # type: ignore
        _applied = True
