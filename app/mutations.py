"""How every mutation route answers: submit an operation, reply 202 with how to follow it —
or 200 when the change is already true (`no_change`), or a destructive request's dry run.

One helper so that the Idempotency-Key contract, the target lock and the reply shape are
the same for every resource. Who may ask is the route's declaration alone
(app/permissions.py); `submit` checks only that a dry run, let in because it changes
nothing, never becomes an operation.

The reply names routes only (`status_route`, `resource_url`): it is the REST face's. The
MCP server maps those routes to its tools when it hands a reply to an agent.

Idempotency, as a client sees it:
- `Idempotency-Key: <1-255 printable characters>` on any mutation. Scope: the token's name +
  method + path. The same key with the same body answers the operation the first request
  made (its current state); with another body, `422 idempotency_key_reused`.
- `Idempotency-TTL: <seconds>` (optional, 1 to 86400): how long the client wants its key
  remembered, for a client whose keys are short-lived by design (the MCP server derives
  keys valid 10 minutes and says so). Without it a key is kept 24 hours, which is also the
  most the server keeps one; a value outside those bounds is refused with 422, never
  silently changed.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flask import Response, jsonify, request
from flask_smorest import Blueprint
from marshmallow import RAISE, Schema

from app import auth, context
from app.permissions import access
from cloud import dependents, logs
from cloud.errors import Invalid
from schemas.common import DryRunQuerySchema, MutationReplySchema, NoChangeSchema
from schemas.dependents import (
    IN_USE_DESCRIPTION,
    DestroyPlanSchema,
    ForceQuerySchema,
    InUseErrorSchema,
    or_plan,
)
from schemas.rehearsal import REHEARSAL_DESCRIPTION, RehearsalSchema
from tasks.engine.kinds import OperationKind
from tasks.engine.store import IDEMPOTENCY_TTL_S, IdempotencyClaim
from vocabulary.roles import Role

log = logging.getLogger(__name__)

POLL_AFTER_S = 5
MAX_KEY_LEN = 255


def idempotency_claim(body: Any) -> IdempotencyClaim | None:
    """This request's Idempotency-Key as the engine records it, or None without one. Both
    headers are checked whenever they are sent: an `Idempotency-TTL` the server would not
    take is refused (422) with or without a key, never ignored while the change goes ahead."""
    key = request.headers.get("Idempotency-Key")
    ttl_s = _key_ttl()
    if key is None:
        return None
    if not key or len(key) > MAX_KEY_LEN or not key.isprintable():
        raise Invalid(f"Idempotency-Key must be 1 to {MAX_KEY_LEN} printable characters",
                      field="Idempotency-Key")
    principal = auth.current()
    scope = f"{principal.name} {request.method} {request.path}"
    return IdempotencyClaim(key=key, scope=scope, body=body, ttl_s=ttl_s)


def _key_ttl() -> int:
    """How long to remember the key: the client's `Idempotency-TTL`, else the server's
    (and most) 24 hours."""
    asked = request.headers.get("Idempotency-TTL")
    if asked is None:
        return IDEMPOTENCY_TTL_S
    seconds = int(asked) if re.fullmatch(r"[0-9]{1,6}", asked.strip()) else 0
    if not 1 <= seconds <= IDEMPOTENCY_TTL_S:
        raise Invalid(f"Idempotency-TTL must be a whole number of seconds from 1 to "
                      f"{IDEMPOTENCY_TTL_S} (how long the key is remembered; "
                      f"{IDEMPOTENCY_TTL_S} without it)", field="Idempotency-TTL")
    return seconds


def replayed() -> tuple[dict[str, Any], int, dict[str, str]] | None:
    """The 202 reply of the operation this request's Idempotency-Key already made, if it
    did: for a route that must look before it knows whether to submit at all (an explicit
    diff that may answer "no change"), so a replay still answers the first request's
    operation."""
    claim = idempotency_claim(request.get_json(silent=True))
    if claim is None or auth.dry_run():
        return None  # a dry run records nothing, so it never answers a recorded operation
    op = context.engine().store.replay(claim)
    return None if op is None else operation_reply(context.engine().view(op))


def operation_reply(op_view: dict[str, Any], status: int = 202):
    """The 202 body and headers for an operation (DESIGN.md: a mutation's reply): the
    routes to follow it by, never an MCP tool (the MCP server maps the routes to tools)."""
    route = f"/api/v1/operations/{op_view['id']}"
    body = {
        "operation": op_view,
        "resource_url": op_view.get("resource_url"),
        "status_route": route,
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
    engine = context.engine()
    claim = idempotency_claim(request.get_json(silent=True))  # its headers checked first
    if auth.dry_run():
        # let in because it changes nothing: the operation is rehearsed, never recorded
        engine.store.ensure_target_free(target)
        if precheck is not None:
            precheck()
        return alt_reply(RehearsalSchema, engine.rehearse(
            kind, target, params, auth.current().name, context.settings().region, inputs))
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


def alt_reply(schema: type[Schema], data: Mapping[str, Any], status: int = 200) -> Response:
    """A reply a route documents with `@blp.alt_response(status, schema=...)`, dumped through
    that schema: flask-smorest serializes only the route's primary `@blp.response`, so an
    alternative reply is made here, the one place that does it, never by hand in a route."""
    response = jsonify(schema().dump(data))
    response.status_code = status
    return response


def no_change(resource_url: str | None, message: str) -> Response:
    """The 200 of a change that is already true (DESIGN.md: a mutation's reply): nothing was
    recorded or sent to AWS. The route declares it with
    `@blp.alt_response(200, schema=NoChangeSchema, ...)`."""
    return alt_reply(NoChangeSchema, {"changed": False, "resource_url": resource_url,
                                      "message": message})


def changing(blp: Blueprint, *, own_200: tuple[type[Schema], str] | None = None,
             team_work: bool = False) -> Callable[[Any], Any]:
    """What every route declares that changes AWS or Kubernetes through an operation (a
    destructive one declares `destructive`): an operator's, its `?dry_run=true` open to
    viewers and answered by `submit` with the operation rehearsed (RehearsalSchema) — or
    the route's own 200 (`own_200`, e.g. "no change") where it has one."""
    def decorate(view: Any) -> Any:
        @functools.wraps(view)
        def run(*args: Any, dry_run: bool = False, **kwargs: Any) -> Any:
            return view(*args, **kwargs)  # `submit` reads it as the role check did

        # a change takes no query but its dry_run: anything else is refused (422), never
        # ignored while the change goes ahead
        run = blp.arguments(DryRunQuerySchema, location="query", as_kwargs=True,
                            unknown=RAISE)(run)
        if own_200 is not None:
            run = blp.doc(**or_plan(*own_200, plan=RehearsalSchema))(run)
        else:
            run = blp.alt_response(200, schema=RehearsalSchema,
                                   description=REHEARSAL_DESCRIPTION)(run)
        return access(Role.OPERATOR, dry_run=True, team_work=team_work)(run)

    return decorate


# -- destructive requests --------------------------------------------------------------------------

@dataclass(frozen=True)
class Impact:
    """What a destructive request would do: its target in words, what it would remove, and
    what depends on it (app/readmodels/dependents.py reads each resource's)."""

    what: str
    removes: list[str]
    found: list[dependents.Dependent] = field(default_factory=list)


def destructive(blp: Blueprint, query: type[Schema] = ForceQuerySchema, *,
                reply: type[Schema] = MutationReplySchema, status: int = 202,
                own_200: tuple[type[Schema], str] | None = None, conflict: str = "",
                team_work: bool = False) -> Callable[[Any], Any]:
    """What every destructive route declares, in one place: an operator's, its dry run open
    to viewers; `query` (`dry_run`, and `force` where a person may override dependents);
    its reply; the dry run's 200 (DestroyPlan — or either, where the route has a 200 of its
    own: `own_200`); and the 409 in_use (with the route's other 409s, `conflict`)."""
    def decorate(view: Any) -> Any:
        view = blp.alt_response(409, schema=InUseErrorSchema, description=(
            f"{conflict}; or {IN_USE_DESCRIPTION}" if conflict else IN_USE_DESCRIPTION))(view)
        if own_200 is not None:
            view = blp.doc(**or_plan(*own_200))(view)
        else:
            view = blp.alt_response(200, schema=DestroyPlanSchema,
                                    description="the dry run: what would be removed and what "
                                                "would break, changing nothing")(view)
        view = blp.response(status, reply)(view)
        view = blp.arguments(query, location="query")(view)
        return access(Role.OPERATOR, dry_run=True, team_work=team_work)(view)

    return decorate


def plan(impact: Impact, force: bool, rehearsal: Mapping[str, Any] | None = None) -> Response:
    """The dry run's 200 (DestroyPlanSchema): what would be removed and what would break —
    and, for an operation, its steps rehearsed (the calls each would make, in order)."""
    stopping = dependents.blocking(impact.found, force)
    forceable = all(d.forceable for d in impact.found)
    if stopping:
        message = (f"{impact.what} would be refused (409 in_use): "
                   f"{len(stopping)} dependent(s) would break"
                   + ("; force=true would go ahead anyway" if forceable else
                      "; they must go first (no force for this)"))
    elif impact.found:
        message = f"{impact.what} would go ahead with force=true, breaking {len(impact.found)}"
    else:
        message = f"{impact.what} would go ahead; nothing depends on it"
    return alt_reply(DestroyPlanSchema, {
        "dry_run": True, "target": impact.what, "removes": impact.removes,
        "dependents": dependents.views(impact.found), "total": len(impact.found),
        "refused": bool(stopping), "force_allowed": forceable, "message": message,
        **({k: rehearsal[k] for k in ("kind", "steps", "changes", "would_fail")}
           if rehearsal is not None else {})})


def guard(impact: Callable[[], Impact], query: Mapping[str, Any]) -> Response | None:
    """For a destructive route that acts at once (no operation): its dry run's reply; else
    None once nothing blocks it — `InUse` (409 in_use) names what does."""
    found = impact()
    if query.get("dry_run"):
        return plan(found, bool(query.get("force")))
    dependents.refuse(found.what, found.found, bool(query.get("force")))
    return None


def destroy(kind: OperationKind, target: str, params: dict[str, Any],
            impact: Callable[[], Impact], query: Mapping[str, Any],
            inputs: dict[str, dict[str, Any]] | None = None):
    """The one path of every destructive route that is an operation. `?dry_run=true`
    answers 200 with what the request would remove and what would break, recording and
    changing nothing. Otherwise its target's dependents are read as the precheck (after the
    target's lock, only for a new request), and any that live refuse it with 409 in_use —
    before anything is recorded or sent to AWS — unless `force` overrides them."""
    if query.get("dry_run"):
        found = impact()  # first: it may fill params in (a node action's region)
        return plan(found, bool(query.get("force")), context.engine().rehearse(
            kind, target, params, auth.current().name, context.settings().region, inputs))

    def precheck() -> None:
        found = impact()
        dependents.refuse(found.what, found.found, bool(query.get("force")))

    return submit(kind, target, params, precheck, inputs)
