"""A dry run of an operation: its own steps, run once in order with every change held back.

Why rehearse rather than describe: a plan written beside the steps drifts from them; a
rehearsal runs the very `apply` the worker would, so its list of calls is the operation's
(cloud/rehearsal.py says how AWS, Kubernetes and the panel's records are held back). What a
step finds already there it adopts and changes nothing, so a step whose rehearsal made no
change and answered resources is "exists": what the operation would adopt.

Each step's apply runs once; its `wait` (is it ready yet?) does not run — the plan says it
would wait. A step that asks to be tried later says why and the rehearsal goes on. When a
step reads what only an earlier rehearsed change would have made, what it would do is
decided at run time, and its plan says so rather than guess. A step that fails for a reason
of its own (a refusal, a name taken) ends the plan there: the operation would stop there.

Nothing is recorded: no operation, no idempotency key, no lock, no event.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from cloud import rehearsal
from tasks.engine.kinds import OperationKind, Step, StepFailed, StepRetry, step_token
from vocabulary.rehearsal import StepPlan

REHEARSAL_OP_ID = "op_REHEARSAL"
READ_COMMANDS = frozenset({
    "exists", "get", "mget", "hget", "hmget", "hgetall", "hexists", "hkeys", "hlen",
    "smembers", "sismember", "scard", "lrange", "llen", "lindex", "zrange", "zrangebyscore",
    "zrevrange", "zrevrangebyscore", "zscore", "zcard", "zcount", "scan_iter", "scan",
    "keys", "ttl", "pttl", "type", "xrange", "xrevrange", "xlen", "strlen",
})


class ReadOnlyRedis:
    """The panel's Redis as a rehearsed step sees it: reads pass, writes are written down."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        if name in READ_COMMANDS:
            return getattr(self._real, name)

        def held_back(*args: Any, **_: Any) -> None:
            found = rehearsal.current()
            if found is not None:
                key = str(args[0]) if args else ""
                found.change("hypd", name, {"key": key} if key else {})

        return held_back


class RehearsalContext:
    """The StepContext of a rehearsed step (see tasks.engine.kinds.StepContext)."""

    def __init__(self, kind: str, target: str, params: dict[str, Any], actor: str,
                 region: str, redis: Any, inputs: dict[str, dict[str, Any]] | None) -> None:
        self.op_id = REHEARSAL_OP_ID
        self.actor = actor
        self.kind = kind
        self.target = target
        self.params = params
        self.region = params.get("region") or region
        self.step = ""
        self.resources: dict[str, Any] = {}
        self.outputs: dict[str, dict[str, Any]] = dict(inputs or {})
        self.details: list[str] = []
        self._redis = ReadOnlyRedis(redis)

    @property
    def redis(self) -> Any:
        return self._redis

    def begin(self, step: Step) -> None:
        self.step = step.name
        self.resources = {}
        self.details = []

    def record(self, **resources: Any) -> None:
        self.resources.update(resources)

    def client(self, service: str) -> Any:
        from cloud import aws

        return aws.client(service, region=self.region)

    def token(self, *parts: str) -> str:
        return step_token(self.op_id, self.step, *parts)

    def detail(self, message: str) -> None:
        self.details.append(message)

    @contextlib.contextmanager
    def lock(self, name: str) -> Iterator[None]:
        yield  # nothing is allocated for real: no one to keep out


def rehearse(kind: OperationKind, target: str, params: dict[str, Any], actor: str,
             region: str, redis: Any,
             inputs: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The plan of the operation `kind` would run on `target` with `params`."""
    ctx = RehearsalContext(kind.name, target, params, actor, region, redis, inputs)
    steps: list[dict[str, Any]] = []
    stopped: dict[str, Any] | None = None
    with rehearsal.recording() as found:
        for step in kind.steps_for(params):
            if stopped is not None:
                steps.append(_planned(step, StepPlan.NOT_REACHED))
                continue
            ctx.begin(step)
            first_call, guessed_before, reads_before = len(found.calls), found.guessed, \
                found.reads
            result: dict[str, Any] | None = None
            error: dict[str, str] | None = None
            try:
                result = step.apply(ctx) or {}
                state = None
            except StepRetry as exc:
                state, error = StepPlan.WAITS, {"code": "not_yet", "message": str(exc)}
            except StepFailed as exc:
                state, error = StepPlan.FAILS, {"code": exc.code, "message": exc.message}
            except Exception as exc:  # a step's own error is the plan's answer
                state, error = StepPlan.FAILS, {"code": _code(exc), "message": str(exc)}
            calls = [c.view() for c in found.calls[first_call:]]
            depends = (found.guessed > guessed_before
                       or rehearsal.names_placeholder(ctx.outputs)
                       or rehearsal.names_placeholder(result or {}))
            if state == StepPlan.FAILS and depends:
                state = StepPlan.DECIDED_AT_RUN_TIME
            if state is None:
                state = (StepPlan.CHANGES if calls else
                         StepPlan.EXISTS if (result or ctx.resources) else StepPlan.NOTHING)
            resources = {**ctx.resources, **(result or {})}
            ctx.outputs[step.name] = resources
            plan = _planned(step, state)
            plan.update(calls=calls, reads=found.reads - reads_before,
                        then_waits=step.wait is not None and state != StepPlan.FAILS,
                        detail="; ".join(ctx.details) or None, error=error)
            if state == StepPlan.EXISTS:
                plan["found"] = {k: v for k, v in resources.items()
                                 if not rehearsal.names_placeholder(v)}
            steps.append(plan)
            if state == StepPlan.FAILS:
                stopped = {"step": step.name, **(error or {})}
    changes = sum(len(s.get("calls") or ()) for s in steps)
    return {
        "dry_run": True,
        "kind": kind.name,
        "target": target,
        "would_fail": stopped,
        "steps": steps,
        "changes": changes,
        "message": _message(kind.name, steps, stopped, changes),
    }


def _planned(step: Step, state: StepPlan) -> dict[str, Any]:
    return {"step": step.name, "title": step.title, "stage": step.stage, "plan": state.value,
            "calls": [], "reads": 0, "then_waits": False, "detail": None, "error": None}


def _code(exc: BaseException) -> str:
    from cloud.aws import error_code

    return error_code(exc) or "internal_error"


def _message(kind: str, steps: list[dict[str, Any]], stopped: dict[str, Any] | None,
             changes: int) -> str:
    exists = sum(1 for s in steps if s["plan"] == StepPlan.EXISTS.value)
    later = sum(1 for s in steps if s["plan"] == StepPlan.DECIDED_AT_RUN_TIME.value)
    said = [f"{kind}: {changes} change(s) over {len(steps)} step(s)"]
    if exists:
        said.append(f"{exists} step(s) find their resources already there and adopt them")
    if later:
        said.append(f"{later} step(s) act on what earlier steps make, decided at run time")
    if stopped:
        said.append(f"it would fail at step {stopped['step']!r}: {stopped.get('message')}")
    return "; ".join(said)
