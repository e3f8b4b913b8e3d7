"""Operations: list, read (with long-poll), cancel, retry."""

from __future__ import annotations

from flask.views import MethodView
from flask_smorest import Blueprint

from app import context
from app.mutations import operation_reply
from app.permissions import access
from schemas.common import (
    MutationReplySchema,
    OperationListSchema,
    OperationOnlySchema,
    OperationQuerySchema,
    OperationSchema,
    OperationWaitSchema,
)

blp = Blueprint("operations", __name__, url_prefix="/api/v1/operations",
                description="Long-running changes and their progress")


@blp.route("")
class Operations(MethodView):
    @access("viewer")
    @blp.arguments(OperationQuerySchema, location="query")
    @blp.response(200, OperationListSchema)
    def get(self, query):
        """List operations, newest first (filter by status, kind, target)."""
        engine = context.engine()
        items = engine.store.list(query.get("status"), query.get("kind"), query.get("target"),
                                  query["limit"])
        return {"items": [engine.view(op) for op in items]}


@blp.route("/<string:operation_id>")
class Operation(MethodView):
    @access("viewer")
    @blp.arguments(OperationWaitSchema, location="query")
    @blp.response(200, OperationSchema)
    def get(self, query, operation_id):
        """Read an operation; with `wait`, long-poll for its next change."""
        engine = context.engine()
        if query["wait"] > 0:
            return engine.wait(operation_id, query["wait"], query.get("after"))
        return engine.get(operation_id)


@blp.route("/<string:operation_id>/cancel", methods=["POST"])
@access("operator")
@blp.response(202, OperationOnlySchema)
def cancel(operation_id):
    """Cancel: at once if queued, otherwise at the next step boundary."""
    engine = context.engine()
    op = engine.view(engine.cancel(operation_id))
    route = f"/api/v1/operations/{operation_id}"
    return {"operation": op}, 202, {"Location": route}


@blp.route("/<string:operation_id>/retry", methods=["POST"])
@access("operator")
@blp.response(202, MutationReplySchema)
def retry(operation_id):
    """Retry a failed or cancelled operation from its failed step (same id)."""
    engine = context.engine()
    return operation_reply(engine.view(engine.retry(operation_id)))
