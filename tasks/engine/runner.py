"""Moving an operation forward, one step boundary per task.

`advance(op_id, generation)` is the only task. It loads the operation, drops itself when the
stored generation has moved on (a duplicate or a stale redelivery), takes a lease so no
duplicate runs beside it, and then does exactly one of: start the current step's mutation
(`applying` written first), check on a step that is waiting (`applied`), finish the
operation, or honour a cancel at the boundary. The next task is enqueued *before* the
generation is bumped, while the lease is held: a crash between the two leaves the old
message unacknowledged, so the broker brings it back and nothing is lost.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import redis

from cloud import logs
from cloud.metrics import STEP_SECONDS
from tasks.engine.heartbeat import Heartbeat
from tasks.engine.kinds import KindTable, StepFailed, StepRetry, step_token
from tasks.engine.model import current_step, now_iso
from tasks.engine.store import OperationStore, StaleGeneration, lease_key, op_event, step_event
from vocabulary.operations import OpStatus, StepPhase

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 8
UNFINISHED_ATTEMPT = ("no attempt finished: each ended without an outcome (the worker stopped, "
                      "or the task time limit, HYPD_VISIBILITY_TIMEOUT_S less a second, cut it)")
"""The give-up reason when no attempt recorded one: a worker killed mid-step leaves none."""
REQUEUE_S = 0.25

Schedule = Callable[[str, int, float], None]
"""schedule(op_id, generation, countdown_seconds) enqueues `advance`."""


class StepRuntime:
    """The StepContext a step receives (see tasks.engine.kinds.StepContext)."""

    def __init__(self, store: OperationStore, op: dict[str, Any], step: dict[str, Any],
                 region: str, lock_ttl_s: float = 10.0,
                 heartbeat: Heartbeat | None = None) -> None:
        self._store = store
        self._lock_ttl_s = lock_ttl_s
        self._heartbeat = heartbeat
        self._generation = op["generation"]
        self.op_id: str = op["id"]
        self.actor: str = op["actor"]
        self.kind: str = op["kind"]
        self.target: str = op["target"]
        self.params: dict[str, Any] = op["params"]
        self.region = region
        self.step: str = step["name"]
        self.resources: dict[str, Any] = dict(step["resources"])
        self.outputs: dict[str, dict[str, Any]] = {
            **op.get("inputs", {}),
            **{s["name"]: s["resources"] for s in op["steps"] if s["name"] != step["name"]},
        }

    @property
    def redis(self) -> redis.Redis:
        """For steps that change the panel's own records (e.g. the active cluster)."""
        return self._store.redis

    def record(self, **resources: Any) -> None:
        self.resources.update(resources)

        def mutate(op: dict[str, Any]) -> list[dict[str, Any]]:
            step = _step(op, self.step)
            step["resources"].update(resources)
            return [step_event(step)]

        self._store.update(self.op_id, mutate, self._generation)

    def detail(self, message: str) -> None:
        def mutate(op: dict[str, Any]) -> list[dict[str, Any]]:
            step = _step(op, self.step)
            step["detail"] = message
            return [step_event(step)]

        self._store.update(self.op_id, mutate, self._generation)

    def client(self, service: str) -> Any:
        from cloud import aws

        return aws.client(service, region=self.region)

    def token(self, *parts: str) -> str:
        return step_token(self.op_id, self.step, *parts)

    @contextlib.contextmanager
    def lock(self, name: str) -> Iterator[None]:
        """A short cross-process lock (e.g. per VPC while choosing a subnet block).

        Its expiry is short (a killed holder must not stall the others for long) but the
        step's heartbeat renews it while the holder lives; a step that cannot get it is
        retried rather than failed.
        """
        ttl = max(1.0, self._lock_ttl_s)
        # Not thread-local: the heartbeat thread renews it with the token this thread took.
        mutex = self._store.redis.lock(f"hypd:mutex:{name}", timeout=ttl, blocking_timeout=ttl,
                                       thread_local=False)
        if not mutex.acquire():
            raise StepRetry(f"{name} is busy with another allocation", after=None)
        if self._heartbeat is not None:
            self._heartbeat.hold(mutex)
        try:
            yield
        finally:
            if self._heartbeat is not None:
                self._heartbeat.drop(mutex)
            with contextlib.suppress(redis.exceptions.LockError):
                mutex.release()


class Runner:
    def __init__(self, store: OperationStore, schedule: Schedule, kinds: KindTable, *,
                 region: str, poll_min_s: float, poll_max_s: float, lease_s: float) -> None:
        self.store = store
        self.schedule = schedule
        self.kinds = kinds
        self.region = region
        self.poll_min_s = poll_min_s
        self.poll_max_s = poll_max_s
        self.lease_ms = max(1, int(lease_s * 1000))
        self.requeue_s = min(poll_min_s, REQUEUE_S)

    # entry point -------------------------------------------------------------------------

    def advance(self, op_id: str, generation: int) -> None:
        op = self.store.get(op_id)
        if op is None or op["generation"] > generation or OpStatus(op["status"]).is_finished:
            return  # moved on: a duplicate or a stale redelivery
        if op["generation"] < generation:
            # Enqueued by a boundary whose generation bump has not landed yet (or whose
            # worker died before it did, in which case the old message comes back and
            # re-runs that boundary): look again shortly.
            self.schedule(op_id, generation, self.requeue_s)
            return
        token = secrets.token_hex(8)
        if not self.store.redis.set(lease_key(op_id), token, nx=True, px=self.lease_ms):
            # Our predecessor is still releasing its lease, or a killed worker's lease is
            # running out: come back.
            self.schedule(op_id, generation, self.requeue_s)
            return
        try:
            with (logs.operation(op_id, op["kind"]),
                  Heartbeat(self.store.redis, lease_key(op_id), token, self.lease_ms) as beat):
                self._advance(op_id, generation, beat)
        except StaleGeneration:
            log.info("operation %s moved on past generation %s", op_id, generation)
        finally:
            self._release_lease(op_id, token)

    # one boundary ------------------------------------------------------------------------

    def _advance(self, op_id: str, gen: int, heartbeat: Heartbeat | None = None) -> None:
        op = self.store.require(op_id)
        if op["status"] == OpStatus.QUEUED:
            op = self.store.update(op_id, _set_status(OpStatus.RUNNING), gen)
        step = current_step(op)
        if step is None:
            # Every step is done: a cancel asked for after the last one took effect has
            # nothing left to stop, and calling the finished work "cancelled" would be a lie.
            self.store.update(op_id, _set_status(OpStatus.SUCCEEDED), gen)
            log.info("operation succeeded")
            return
        if op["cancel_requested"]:
            # Nothing of ours is in flight at a task's start: this is a step boundary.
            if not self._take_back(op_id, gen, op, step, heartbeat):
                return
            self.store.update(op_id, _cancel, gen)
            log.info("operation cancelled at a step boundary")
            return
        logs.at_step(step["name"])
        kind = self.kinds.get(op["kind"])
        if kind is None:
            self._fail(op_id, gen, step["name"], "internal_error",
                       f"this worker does not run operations of kind {op['kind']!r}")
            return
        spec = kind.step(step["name"])
        ctx = StepRuntime(self.store, op, step, op["params"].get("region") or self.region,
                          lock_ttl_s=self.lease_ms / 1000, heartbeat=heartbeat)

        if step["phase"] in (StepPhase.PENDING, StepPhase.APPLYING):
            if step["attempts"] >= MAX_ATTEMPTS:
                self._fail(op_id, gen, step["name"], "retries_exhausted",
                           f"gave up after {step['attempts']} attempts: "
                           f"{step['detail'] or UNFINISHED_ATTEMPT}")
                return
            op = self.store.update(op_id, _start_attempt(step["name"]), gen)
            log.info("applying (attempt %d)", step["attempts"] + 1)
            outcome = self._call(lambda: spec.apply(ctx))
            if isinstance(outcome, _Later):
                self._retry_later(op_id, gen, step["name"], outcome, attempts=step["attempts"] + 1)
                return
            if isinstance(outcome, _Failure):
                self._fail(op_id, gen, step["name"], outcome.code, outcome.message)
                return
            resources = {**ctx.resources, **(outcome or {})}
            op = self.store.update(op_id, _set_applied(step["name"], resources), gen)
            step = _step(op, step["name"])
            ctx.resources = dict(resources)

        # applied: is it ready?
        delay: float | None = None
        if spec.wait is not None:
            outcome = self._call(lambda: spec.wait(ctx))
            if isinstance(outcome, _Failure):
                self._fail(op_id, gen, step["name"], outcome.code, outcome.message)
                return
            if isinstance(outcome, _Later):
                delay = outcome.after if outcome.after is not None else self.poll_min_s
                self._note(op_id, gen, step["name"], f"waiting: {outcome.message}")
            else:
                delay = outcome
        if delay is not None:
            self._next(op_id, gen, self._clamp(delay))
            return
        op = self.store.update(op_id, _set_succeeded(step["name"]), gen)
        _observe_step(op, step["name"])
        log.info("step succeeded")
        self._next(op_id, gen, 0)

    def _take_back(self, op_id: str, gen: int, op: dict[str, Any],
                   step: dict[str, Any] | None, heartbeat: Heartbeat | None) -> bool:
        """Run the kind's `on_cancel` at the step the operation stopped at; False when it
        asked to be tried again (the next boundary is scheduled)."""
        kind = self.kinds.get(op["kind"])
        if kind is None or kind.on_cancel is None or step is None:
            return True
        on_cancel = kind.on_cancel
        ctx = StepRuntime(self.store, op, step, op["params"].get("region") or self.region,
                          lock_ttl_s=self.lease_ms / 1000, heartbeat=heartbeat)
        outcome = self._call(lambda: on_cancel(ctx))
        if isinstance(outcome, _Later):
            self._next(op_id, gen, self._clamp(outcome.after or self.poll_min_s))
            return False
        if isinstance(outcome, _Failure):
            log.warning("taking back what the operation made failed: %s", outcome.message)
        return True

    # outcomes ----------------------------------------------------------------------------

    def _call(self, fn: Callable[[], Any]) -> Any:
        from cloud.aws import error_code, is_transient

        try:
            return fn()
        except StepRetry as exc:
            return _Later(str(exc), exc.after)
        except StepFailed as exc:
            return _Failure(exc.code, exc.message)
        except StaleGeneration:
            raise
        except Exception as exc:
            if is_transient(exc):
                return _Later(f"{error_code(exc) or type(exc).__name__}: {exc}", None)
            log.exception("step failed")
            code = error_code(exc)
            return _Failure("upstream_error" if code else "internal_error",
                            f"{code}: {exc}" if code else f"{type(exc).__name__}: {exc}")

    def _retry_later(self, op_id: str, gen: int, step_name: str, later: _Later,
                     attempts: int) -> None:
        log.info("will retry: %s", later.message)
        self._note(op_id, gen, step_name, f"will retry: {later.message}")
        backoff = later.after if later.after is not None else self.poll_min_s * 2 ** (attempts - 1)
        self._next(op_id, gen, self._clamp(backoff))

    def _note(self, op_id: str, gen: int, step_name: str, detail: str) -> None:
        def mutate(op: dict[str, Any]) -> list[dict[str, Any]]:
            step = _step(op, step_name)
            step["detail"] = detail
            return [step_event(step)]

        self.store.update(op_id, mutate, gen)

    def _fail(self, op_id: str, gen: int, step_name: str, code: str, message: str) -> None:
        def mutate(op: dict[str, Any]) -> list[dict[str, Any]]:
            step = _step(op, step_name)
            step["phase"] = StepPhase.FAILED.value
            step["finished_at"] = now_iso()
            step["detail"] = message
            op["status"] = OpStatus.FAILED.value
            op["error"] = {"code": code, "message": message, "step": step_name}
            return [step_event(step), op_event(op, message)]

        _observe_step(self.store.update(op_id, mutate, gen), step_name)
        log.warning("step failed (%s): %s", code, message)

    def _next(self, op_id: str, gen: int, countdown: float) -> None:
        """Enqueue the next boundary, then bump the generation (see the module docstring)."""
        self.schedule(op_id, gen + 1, countdown)

        def bump(op: dict[str, Any]) -> None:
            op["generation"] = gen + 1
            op["next_run_at"] = time.time() + countdown  # what the sweeper measures from

        self.store.update(op_id, bump, gen)

    def _clamp(self, seconds: float) -> float:
        return min(max(seconds, self.poll_min_s), self.poll_max_s) if seconds > 0 else 0.0

    def _release_lease(self, op_id: str, token: str) -> None:
        key = lease_key(op_id)
        with contextlib.suppress(Exception):
            if self.store.redis.get(key) == token:
                self.store.redis.delete(key)


class _Later:
    def __init__(self, message: str, after: float | None) -> None:
        self.message = message
        self.after = after


class _Failure:
    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.message = message


def _observe_step(op: dict[str, Any], name: str) -> None:
    """A step ended (written, so counted once): how long it took from its first attempt."""
    step = _step(op, name)
    if not step.get("started_at") or not step.get("finished_at"):
        return  # failed before it was ever attempted (e.g. an unknown kind)
    started, finished = (datetime.fromisoformat(step[k].replace("Z", "+00:00"))
                         for k in ("started_at", "finished_at"))
    STEP_SECONDS.labels(op["kind"], name, step["phase"]).observe(
        max(0.0, (finished - started).total_seconds()))


def _step(op: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in op["steps"] if s["name"] == name)


def _set_status(status: OpStatus) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    def mutate(op: dict[str, Any]) -> list[dict[str, Any]]:
        op["status"] = status.value
        return [op_event(op)]

    return mutate


def _cancel(op: dict[str, Any]) -> list[dict[str, Any]]:
    events = []
    for step in op["steps"]:
        if step["phase"] == StepPhase.PENDING:
            step["phase"] = StepPhase.SKIPPED.value
            events.append(step_event(step))
    op["status"] = OpStatus.CANCELLED.value
    events.append(op_event(op, "cancelled at a step boundary"))
    return events


def _start_attempt(name: str) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    def mutate(op: dict[str, Any]) -> list[dict[str, Any]]:
        step = _step(op, name)
        step["phase"] = StepPhase.APPLYING.value
        step["attempts"] += 1
        step["started_at"] = step["started_at"] or now_iso()
        step["detail"] = None
        return [step_event(step)]

    return mutate


def _set_applied(name: str, resources: dict[str, Any]) -> Callable[[dict[str, Any]], Any]:
    def mutate(op: dict[str, Any]) -> list[dict[str, Any]]:
        step = _step(op, name)
        step["phase"] = StepPhase.APPLIED.value
        step["resources"] = resources
        step["detail"] = None
        return [step_event(step)]

    return mutate


def _set_succeeded(name: str) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    def mutate(op: dict[str, Any]) -> list[dict[str, Any]]:
        step = _step(op, name)
        step["phase"] = StepPhase.SUCCEEDED.value
        step["finished_at"] = now_iso()
        step["detail"] = None
        return [step_event(step)]

    return mutate
