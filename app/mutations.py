"""How every mutation route answers: submit an operation, reply 202 with how to follow it.

One helper so that the Idempotency-Key contract, the target lock and the reply shape are
the same for every resource.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from flask import request

from app import auth, context
from app.errors import ApiError
from cloud import logs
from tasks.engine.kinds import OperationKind
from tasks.engine.store import MCP_IDEMPOTENCY_TTL_S, IdempotencyClaim

log = logging.getLogger(__name__)

POLL_AFTER_S = 5
MAX_KEY_LEN = 255


def idempotency_claim(body: Any) -> IdempotencyClaim | None:
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return None
    if not key or len(key) > MAX_KEY_LEN or not key.isprintable():
        raise ApiError(422, "validation_failed",
                       f"Idempotency-Key must be 1 to {MAX_KEY_LEN} printable characters",
                       {"fields": {"Idempotency-Key": ["invalid"]}})
    principal = auth.current()
    scope = f"{principal.name} {request.method} {request.path}"
    short = request.headers.get("Idempotency-Scope", "").lower() == "mcp"
    return IdempotencyClaim(key=key, scope=scope, body=body,
                            ttl_s=MCP_IDEMPOTENCY_TTL_S if short else IdempotencyClaim.ttl_s)


def replayed() -> tuple[dict[str, Any], int, dict[str, str]] | None:
    """The 202 reply of the operation this request's Idempotency-Key already made, if it
    did: for a route that must look before it knows whether to submit at all (an explicit
    diff that may answer "no change"), so a replay still answers the first request's
    operation."""
    claim = idempotency_claim(request.get_json(silent=True))
    if claim is None:
        return None
    op = context.engine().store.replay(claim)
    return None if op is None else operation_reply(context.engine().view(op))


def operation_reply(op_view: dict[str, Any], status: int = 202):
    """The 202 body and headers for an operation (DESIGN.md: a mutation's reply)."""
    route = f"/api/v1/operations/{op_view['id']}"
    body = {
        "operation": op_view,
        "resource_url": op_view.get("resource_url"),
        "status_route": route,
        "status_tool": "wait_operation",
        "status_args": {"operation_id": op_view["id"]},
        "poll_after_seconds": POLL_AFTER_S,
    }
    return body, status, {"Location": route, "Retry-After": str(POLL_AFTER_S)}


def submit(
    kind: OperationKind,
    target: str,
    params: dict[str, Any],
    precheck: Callable[[], None] | None = None,
    inputs: dict[str, dict[str, Any]] | None = None,
):
    """Start (or, for a replayed Idempotency-Key, find) the operation; answer 202.

    `precheck` (e.g. "does this network exist already?") runs only for a new request: a
    replay answers the operation the key first made, whatever has happened since.
    """
    # The route's declaration already decided; this is the engine's door, kept shut for a
    # route that would declare itself open by mistake.
    auth.require_role(auth.current(), "operator")
    engine = context.engine()
    claim = idempotency_claim(request.get_json(silent=True))
    if claim is not None:
        replayed = engine.store.replay(claim)
        if replayed is not None:
            return operation_reply(engine.view(replayed))
    engine.store.ensure_target_free(target)  # "busy" names the running operation first
    if precheck is not None:
        precheck()
    op, created = engine.submit(kind, target, params, auth.current().name, claim, inputs)
    if created:
        with logs.operation(op["id"], kind.name):
            log.info("%s on %s submitted by token %r", kind.name, target, auth.current().name)
    return operation_reply(engine.view(op))
