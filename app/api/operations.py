"""Operations: list, read (with long-poll), cancel, retry."""

from __future__ import annotations

import hashlib
from typing import Any

from flask import Response, request
from flask.views import MethodView
from flask_smorest import Blueprint

from app import audit, auth, context
from app.errors import ApiError
from app.gate import waiting
from app.mutations import operation_reply
from app.permissions import access
from app.readmodels import lifecycle, team_work
from schemas.common import (
    MutationReplySchema,
    OperationListSchema,
    OperationOnlySchema,
    OperationQuerySchema,
    OperationSchema,
    OperationWaitSchema,
)
from vocabulary import patterns
from vocabulary.roles import Role


def rendered_json(body: str) -> Response:
    """A reply rendered once when the operation changed (tasks/engine/store.py), passed
    through as it is: its content is OperationSchema's, checked by the tests."""
    data = body.encode()
    etag = hashlib.blake2b(data, digest_size=12).hexdigest()
    headers = [("ETag", f'"{etag}"'), ("Cache-Control", "no-cache")]
    # the If-None-Match header is parsed only when sent (most reads send none)
    if "HTTP_IF_NONE_MATCH" in request.environ and request.if_none_match.contains(etag):
        return Response(status=304, headers=headers)
    return Response(data, headers=[("Content-Type", "application/json"), *headers])


blp = Blueprint("operations", __name__, url_prefix="/api/v1/operations",
                description="Long-running changes and their progress")


def _operation_target(args: dict[str, Any], body: Any) -> str | None:
    """A refused cancel or retry names its operation's target."""
    operation_id = args.get("operation_id")
    if not (isinstance(operation_id, str) and patterns.OPERATION_ID.fullmatch(operation_id)):
        return None
    op = context.engine().store.get(operation_id)
    return op["target"] if op else None


audit.declare_target(blp, _operation_target)


@blp.route("")
class Operations(MethodView):
    @access(Role.VIEWER)
    @blp.arguments(OperationQuerySchema, location="query")
    @blp.response(200, OperationListSchema)
    @blp.doc(operationId="list_operations")
    def get(self, query):
        """List operations, newest first (filter by status, kind, target)."""
        engine = context.engine()
        items = engine.store.list(query.get("status"), query.get("kind"), query.get("target"),
                                  query["limit"])
        return {"items": [engine.view(op) for op in items]}


@blp.route("/<string:operation_id>")
class Operation(MethodView):
    @access(Role.VIEWER)
    # an instance, not the class: webargs would build one per request on the hottest route
    @blp.arguments(OperationWaitSchema(), location="query")
    @blp.response(200, OperationSchema)
    @blp.alt_response(304, description="not changed since the ETag sent as If-None-Match")
    @blp.doc(operationId="get_operation")
    def get(self, query, operation_id):
        """Read an operation; with `wait`, long-poll for its next change. The reply carries
        an ETag: a poller that sends it back as If-None-Match gets 304 while nothing
        changed."""
        engine = context.engine()
        if query["wait"] > 0:
            with waiting():  # out of the web pool's gate while it waits (app/gate.py)
                body = engine.wait_json(operation_id, query["wait"], query.get("after"))
        else:
            body = engine.get_json(operation_id)
        return rendered_json(body)


@blp.route("/<string:operation_id>/cancel", methods=["POST"])
@access(Role.OPERATOR, team_work=True)
@blp.response(202, OperationOnlySchema)
@blp.doc(operationId="cancel_operation")
def cancel(operation_id):
    """Cancel: at once if queued, otherwise at the next step boundary. A cluster's create
    (or stage re-run) answers its next actions too: read the cluster — what it left in AWS
    and its hourly cost — then resume it or delete what was made. A team member cancels
    only its team's job operations."""
    engine = context.engine()
    team_work.may_follow_up(auth.current(), engine.store.require(operation_id))
    op = engine.view(engine.cancel(operation_id))
    route = f"/api/v1/operations/{operation_id}"
    reply = {"operation": op}
    after = lifecycle.after_cancel(op)
    if after:
        reply["next_actions"] = after
    return reply, 202, {"Location": route}


@blp.route("/<string:operation_id>/retry", methods=["POST"])
@access(Role.OPERATOR, team_work=True)
@blp.response(202, MutationReplySchema)
@blp.doc(operationId="retry_operation")
def retry(operation_id):
    """Retry a failed or cancelled operation from its failed step (same id); the steps a
    cancel skipped run. A cluster's operation is refused (409) once the cluster was deleted
    after it. A team member retries only its team's job operations."""
    engine = context.engine()
    op = engine.store.require(operation_id)
    team_work.may_follow_up(auth.current(), op)
    refused = lifecycle.superseded(op)
    if refused:
        raise ApiError(409, "conflict", refused, {"operation_id": operation_id})
    return operation_reply(engine.view(engine.retry(operation_id)))
