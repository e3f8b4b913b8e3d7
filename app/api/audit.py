"""The audit log, for operators: who changed what, and who was refused."""

from __future__ import annotations

from flask_smorest import Blueprint

from app import audit, context
from app.permissions import access
from schemas.audit import AuditListSchema, AuditQuerySchema
from vocabulary.roles import Role

blp = Blueprint("audit", __name__, url_prefix="/api/v1/audit",
                description="Every mutation and refusal: token name, role, route, target, "
                            "operation, outcome")


@blp.route("")
@access(Role.OPERATOR)
@blp.arguments(AuditQuerySchema, location="query")
@blp.response(200, AuditListSchema)
@blp.doc(operationId="list_audit")
def audit_log(query):
    """List audit entries, newest first (filter by target, token name, outcome). Operators
    only: the log says who did what."""
    items, next_before = audit.entries(
        context.redis_conn(), target=query.get("target"), token=query.get("token"),
        outcome=query.get("outcome"), limit=query["limit"], before=query.get("before"))
    return {"items": items, "next_before": next_before}
