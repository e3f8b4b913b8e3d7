"""How an operation kind is declared: an ordered tuple of steps.

A step's `apply` is an *ensure*: it must look each resource up (by tag, name or client
token) and create it only when it provably does not exist, so that running it again after a
crash adopts what the crashed attempt made instead of making it twice. `wait` answers None
when the step's resources are ready, or how many seconds to wait before asking again; the
engine re-schedules instead of sleeping.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol


class StepContext(Protocol):
    """What a step sees of its operation."""

    op_id: str
    actor: str
    """The name of the token that asked for the operation."""
    kind: str
    target: str
    params: dict[str, Any]
    region: str
    step: str
    resources: dict[str, Any]
    """This step's resources recorded so far (by an earlier attempt or by `record`)."""
    outputs: dict[str, dict[str, Any]]
    """Resources of the operation's earlier steps, keyed by step name."""

    @property
    def redis(self) -> Any:
        """The panel's own Redis, for steps that change panel records (not cloud state)."""

    def record(self, **resources: Any) -> None:
        """Persist resource ids now, before the step ends, so a crash keeps them."""

    def client(self, service: str) -> Any:
        """A boto3 client for the operation's region."""

    def token(self, *parts: str) -> str:
        """A deterministic idempotency token (AWS ClientToken / clientRequestToken), the same
        for every attempt of this step of this operation."""

    def detail(self, message: str) -> None:
        """Set the step's human-readable progress detail (emits an event)."""

    def lock(self, name: str) -> AbstractContextManager[None]:
        """A short lock shared by every worker (e.g. `vpc/<id>` while a subnet block is
        chosen and created); a step that cannot get it is retried later."""


def step_token(op_id: str, step: str, *parts: str) -> str:
    """`StepContext.token`: the same for every attempt of this step of this operation."""
    seed = "\n".join((op_id, step, *parts))
    return "hypd-" + hashlib.sha256(seed.encode()).hexdigest()[:58]


class StepFailed(Exception):
    """A permanent failure: the step and the operation fail with this code and message."""

    def __init__(self, message: str, code: str = "step_failed") -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class StepRetry(Exception):
    """A temporary condition (e.g. DependencyViolation while a deletion settles): try the
    step again after `after` seconds, counting it as an attempt."""

    def __init__(self, message: str, after: float | None = None) -> None:
        super().__init__(message)
        self.after = after


@dataclass(frozen=True)
class Step:
    name: str
    title: str
    apply: Callable[[StepContext], dict[str, Any] | None]
    wait: Callable[[StepContext], float | None] | None = None
    stage: str | None = None
    """The stage a step belongs to (e.g. a cluster's `network`, `eks`): stages group steps
    for display and are what a user re-runs on its own."""


@dataclass(frozen=True)
class OperationKind:
    name: str
    steps: tuple[Step, ...]
    """Every step this kind may run, in order (names unique)."""
    resource_url: Callable[[dict[str, Any]], str | None] = lambda params: None
    select: Callable[[dict[str, Any]], tuple[Step, ...]] | None = None
    """Which of `steps` an operation with these params runs (default: all), fixed when the
    operation is recorded (e.g. an existing VPC replaces the network steps)."""
    on_cancel: Callable[[StepContext], None] | None = None
    """What a running operation takes back when it is cancelled (e.g. a grant made for it),
    called with the context of the step it stopped at, before it is marked cancelled. It
    must be safe to call again (a crash may repeat it): record before acting, as a step
    does. A failure it raises is logged and the operation is cancelled all the same; a
    retryable one (StepRetry, throttling) tries again at the next boundary."""

    def steps_for(self, params: dict[str, Any]) -> tuple[Step, ...]:
        return self.select(params) if self.select else self.steps

    def step(self, name: str) -> Step:
        return next(s for s in self.steps if s.name == name)


KindTable = Mapping[str, OperationKind]
"""The kinds an engine runs, by name: one explicit table (tasks/kinds.py), handed to the
engine, so a kind is known because it is listed, never because some module was imported."""


def kind_table(*kinds: OperationKind) -> dict[str, OperationKind]:
    table: dict[str, OperationKind] = {}
    for kind in kinds:
        if kind.name in table:
            raise ValueError(f"operation kind {kind.name!r} is listed twice")
        table[kind.name] = kind
    return table
