"""cloud/'s outcomes in the engine's terms, for every operation kind's steps.

One table: "not yet" (AWS still settling, a dependency still being deleted, a client error a
retry may cure) re-runs the step later; a refusal the user must resolve fails the step with
its code and a message they can act on; anything else goes to the engine's own handling
(transient AWS errors retried, the rest failed as upstream or internal errors).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from cloud import addons, capacity, eks, hyperpod, iam, kube, storage
from cloud import networks as net
from cloud.aws import error_code
from cloud.subnets import SubnetSpaceExhausted
from tasks.engine.kinds import StepContext, StepFailed, StepRetry

NOT_YET = (net.NotYet, eks.NotYet, storage.NotReady)
REFUSALS = (net.NetworkError, SubnetSpaceExhausted, eks.EksError, iam.RoleConflict,
            hyperpod.HyperPodError, capacity.CapacityError, storage.StorageError,
            addons.DependencyError, kube.KubeError)


def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def run(ctx: StepContext, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(ctx, *args, **kwargs)
        except NOT_YET as exc:
            raise StepRetry(str(exc), getattr(exc, "retry_after", None)) from exc
        except REFUSALS as exc:
            if isinstance(exc, kube.KubeError) and kube.is_transient(exc):
                raise StepRetry(str(exc)) from exc
            raise StepFailed(str(exc), getattr(exc, "code", None) or "step_failed") from exc
        except ClientError as exc:
            if error_code(exc) == "DependencyViolation":
                raise StepRetry(f"DependencyViolation: {exc}") from exc
            raise

    return run


def output(ctx: StepContext, step: str, key: str) -> Any:
    """A resource id an earlier step recorded (in this operation or given as its inputs)."""
    try:
        return ctx.outputs[step][key]
    except KeyError:
        raise StepFailed(f"the {step} step has not recorded {key}; re-run its stage first",
                         "missing_input") from None
