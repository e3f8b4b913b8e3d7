"""What the faces ask of the engine: submit, cancel, retry, read and wait.

The web process calls these; the worker runs `Runner.advance`. Both meet only in Redis.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from tasks.engine import rehearsal
from tasks.engine.errors import InvalidTransition, OperationNotFound, UnknownKind
from tasks.engine.kinds import KindTable, OperationKind
from tasks.engine.model import new_operation, public_view
from tasks.engine.store import IdempotencyClaim, OperationStore, op_event, step_event
from vocabulary.operations import OpStatus, StepPhase

Enqueue = Callable[[str, int, float], None]


class Engine:
    def __init__(self, store: OperationStore, enqueue: Enqueue, kinds: KindTable) -> None:
        self.store = store
        self.enqueue = enqueue
        self.kinds = kinds

    def submit(
        self,
        kind: OperationKind,
        target: str,
        params: dict[str, Any],
        actor: str,
        claim: IdempotencyClaim | None = None,
        inputs: dict[str, dict[str, Any]] | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """Record and enqueue a new operation; answers (operation, created)."""
        if self.kinds.get(kind.name) is not kind:
            # the worker runs only the table's kinds: refuse now rather than strand it
            raise UnknownKind(f"operation kind {kind.name!r} is not in the engine's table")
        op = new_operation(kind, target, params, actor, claim.key if claim else None, inputs)
        op, created = self.store.create(op, claim)
        if created:
            self.enqueue(op["id"], op["generation"], 0)
        return op, created

    def rehearse(self, kind: OperationKind, target: str, params: dict[str, Any], actor: str,
                 region: str, inputs: dict[str, dict[str, Any]] | None = None
                 ) -> dict[str, Any]:
        """What `submit` would set going, as a dry run (tasks/engine/rehearsal.py): the
        kind's steps run once with every change held back; nothing is recorded."""
        if self.kinds.get(kind.name) is not kind:
            raise UnknownKind(f"operation kind {kind.name!r} is not in the engine's table")
        return rehearsal.rehearse(kind, target, params, actor, region, self.store.redis, inputs)

    def cancel(self, op_id: str) -> dict[str, Any]:
        """Queued: cancelled now. Running: at its next step boundary."""

        def mutate(op: dict[str, Any]) -> list[dict[str, Any]]:
            status = OpStatus(op["status"])
            if status.is_finished:
                raise InvalidTransition(
                    f"operation {op_id} already {status.value}; nothing to cancel",
                    {"operation_id": op_id, "status": status.value},
                )
            op["cancel_requested"] = True
            if status == OpStatus.QUEUED and all(
                s["phase"] == StepPhase.PENDING for s in op["steps"]
            ):
                events = []
                for step in op["steps"]:
                    step["phase"] = StepPhase.SKIPPED.value
                    events.append(step_event(step))
                op["status"] = OpStatus.CANCELLED.value
                return [*events, op_event(op, "cancelled before it started")]
            return [op_event(op, "cancel requested; takes effect at the next step boundary")]

        return self.store.update(op_id, mutate)

    def retry(self, op_id: str) -> dict[str, Any]:
        """Back to queued with the same id, from the failed (or first unfinished) step."""
        generation: list[int] = []

        def mutate(op: dict[str, Any]) -> list[dict[str, Any]]:
            status = OpStatus(op["status"])
            if status not in (OpStatus.FAILED, OpStatus.CANCELLED):
                raise InvalidTransition(
                    f"operation {op_id} is {status.value}; only a failed or cancelled "
                    "operation can be retried",
                    {"operation_id": op_id, "status": status.value},
                )
            events = []
            for step in op["steps"]:
                if step["phase"] in (StepPhase.FAILED, StepPhase.SKIPPED):
                    step["phase"] = StepPhase.PENDING.value
                    step["attempts"] = 0
                    step["detail"] = None
                    step["finished_at"] = None
                    events.append(step_event(step))
            op["status"] = OpStatus.QUEUED.value
            op["error"] = None
            op["cancel_requested"] = False
            op["generation"] += 1
            op["next_run_at"] = time.time()  # enqueued below, due at once
            generation.append(op["generation"])
            return [*events, op_event(op, "retried")]

        op = self.store.update(op_id, mutate)
        self.enqueue(op_id, generation[0], 0)
        return op

    def view(self, op: dict[str, Any]) -> dict[str, Any]:
        return public_view(op, self.store.last_event_id(op["id"]))

    def get(self, op_id: str) -> dict[str, Any]:
        return json.loads(self.get_json(op_id))

    def get_json(self, op_id: str) -> str:
        """The status read: the operation's view as rendered when it last changed."""
        rendered = self.store.read_view(op_id)
        if rendered is None:
            raise OperationNotFound(f"no operation {op_id!r}", {"operation_id": op_id})
        return rendered

    def wait_json(self, op_id: str, seconds: float, after: str | None = None) -> str:
        """Long-poll: answer once an event newer than `after` (default: the newest one now)
        exists, the operation is finished, or `seconds` have passed."""
        start = after or self.store.last_event_id(op_id) or "0"
        op = self.store.require(op_id)
        if seconds > 0 and not OpStatus(op["status"]).is_finished:
            self.store.events(op_id, after=start, block_ms=int(seconds * 1000), count=1)
        return self.get_json(op_id)
