"""Liveness for `hypd up`, load balancers and compose health checks."""

from __future__ import annotations

import redis
from flask_smorest import Blueprint

from app import context
from app.errors import ApiError
from app.permissions import access
from schemas.common import HealthSchema
from vocabulary.roles import PUBLIC

blp = Blueprint("health", __name__, description="Health")


@blp.route("/healthz")
@access(PUBLIC)
@blp.response(200, HealthSchema)
@blp.alt_response(503, schema=None, description="Redis unreachable")
@blp.doc(operationId="get_health")
def healthz():
    """Is the panel up (and can it reach Redis)?"""
    try:
        context.redis_conn().ping()
    except redis.RedisError as exc:
        raise ApiError(503, "unavailable", f"Redis is not reachable: {exc}") from exc
    return {"status": "ok"}
