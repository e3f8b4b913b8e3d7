"""What every kind's steps share: cloud/'s outcomes in the engine's terms, and reading an
earlier step's output."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from cloud import addons, capacity, eks, hyperpod, iam, kube, storage
from cloud.aws import error_code
from tasks.engine.kinds import StepContext, StepFailed, StepRetry


def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """cloud/'s outcomes in the engine's terms: not-yet → retry later, refusals → fail."""

    @functools.wraps(fn)
    def run(ctx: StepContext, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(ctx, *args, **kwargs)
        except (eks.NotYet, storage.NotReady) as exc:
            raise StepRetry(str(exc), getattr(exc, "retry_after", None)) from exc
        except (eks.EksError, iam.RoleConflict, hyperpod.HyperPodError, capacity.CapacityError,
                storage.StorageError, addons.DependencyError, kube.KubeError) as exc:
            if isinstance(exc, kube.KubeError) and kube.is_transient(exc):
                raise StepRetry(str(exc)) from exc
            raise StepFailed(str(exc), getattr(exc, "code", None) or "step_failed") from exc
        except ClientError as exc:
            if error_code(exc) == "DependencyViolation":
                raise StepRetry(str(exc)) from exc
            raise

    return run


def output(ctx: StepContext, step: str, key: str) -> Any:
    """`key` of what the earlier step `step` recorded; fails the step when it is missing."""
    try:
        return ctx.outputs[step][key]
    except KeyError:
        raise StepFailed(f"the {step} step has not recorded {key}; re-run its stage first",
                         "missing_input") from None
