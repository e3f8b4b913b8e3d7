"""Prometheus metrics of this machine's hypd processes (cloud/metrics.py says what counts)."""

from __future__ import annotations

from flask import Response
from flask_smorest import Blueprint

from app import context
from app.permissions import access
from cloud import metrics
from vocabulary.roles import Role

blp = Blueprint("metrics", __name__, description="Prometheus metrics")


@blp.route("/metrics")
@access(Role.VIEWER)
@blp.doc(responses={"200": {
    "description": "Prometheus text exposition format",
    "content": {"text/plain": {"schema": {"type": "string"}}},
}})
@blp.doc(operationId="get_metrics")
def prometheus():
    """Prometheus metrics: operations by kind and status, step durations, AWS calls and
    errors by service and API, open WebSockets, sweeper pickups. A viewer token's: scrape
    with `authorization: {credentials_file: ...}`."""
    body, content_type = metrics.scrape(context.settings())
    return Response(body, content_type=content_type)
