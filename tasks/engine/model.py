"""The shape of an operation record: its id, its steps, its public view.

Its statuses and phases are the vocabulary's (`vocabulary.operations`), shared with the
schemas, the app and the MCP server.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from typing import Any

from tasks.engine.kinds import OperationKind
from vocabulary.operations import OpStatus, StepPhase

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_operation_id() -> str:
    """A ULID-style id: sortable by creation time, so listings need no extra index order."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "op_" + "".join(reversed(chars))


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_operation(
    kind: OperationKind,
    target: str,
    params: dict[str, Any],
    actor: str,
    idempotency_key: str | None,
    inputs: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """`inputs`: resources of steps that ran in an earlier operation (e.g. a re-run stage
    needs the VPC the create made); steps see them in `ctx.outputs`."""
    stamp = now_iso()
    return {
        "id": new_operation_id(),
        "kind": kind.name,
        "target": target,
        "params": params,
        "status": OpStatus.QUEUED.value,
        "steps": [
            {
                "name": step.name,
                "title": step.title,
                "stage": step.stage,
                "phase": StepPhase.PENDING.value,
                "attempts": 0,
                "started_at": None,
                "finished_at": None,
                "detail": None,
                "resources": {},
            }
            for step in kind.steps_for(params)
        ],
        "inputs": inputs or {},
        "error": None,
        "created_at": stamp,
        "updated_at": stamp,
        "idempotency_key": idempotency_key,
        "actor": actor,
        "cancel_requested": False,
        "resource_url": kind.resource_url(params),
        "generation": 1,
        "version": 1,
        # submit enqueues the first task now: due at once (see tasks/engine/sweeper.py)
        "next_run_at": time.time(),
    }


def current_step(op: dict[str, Any]) -> dict[str, Any] | None:
    """The first step not yet done; None when every step is done."""
    for step in op["steps"]:
        if not StepPhase(step["phase"]).is_done:
            return step
    return None


BOOKKEEPING = frozenset({"generation", "version", "next_run_at"})
"""Engine fields no client sees: the fence (generation), the record's write count (version)
and when the operation's next task is due (epoch seconds; the sweeper reads it)."""


def public_view(op: dict[str, Any], last_event_id: str | None) -> dict[str, Any]:
    """The operation as clients see it: engine bookkeeping left out."""
    view = {k: v for k, v in op.items() if k not in BOOKKEEPING}
    view["last_event_id"] = last_event_id
    return view
