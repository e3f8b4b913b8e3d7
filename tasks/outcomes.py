"""cloud/'s outcomes in the engine's terms, for every operation kind's steps.

Two bases (cloud/errors.py): `NotYet` (AWS still settling, a dependency still being deleted)
re-runs the step later; a `Refusal` the user must resolve fails the step with its code and a
message they can act on, unless it is retryable (a Kubernetes API answering 503). A
DependencyViolation from AWS is a "not yet"; anything else goes to the engine's own handling
(transient AWS errors retried, the rest failed as upstream or internal errors).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from cloud.aws import error_code
from cloud.errors import NotYet, Refusal
from tasks.engine.kinds import StepContext, StepFailed, StepRetry


def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def run(ctx: StepContext, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(ctx, *args, **kwargs)
        except NotYet as exc:
            raise StepRetry(str(exc), exc.retry_after) from exc
        except Refusal as exc:
            if exc.retryable:
                raise StepRetry(str(exc)) from exc
            raise StepFailed(str(exc), exc.code) from exc
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
