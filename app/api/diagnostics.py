"""Read-only diagnostics of a cluster: why its create failed, which nodes are unhealthy,
what NCCL/EFA/Xid/out-of-memory errors its pods show — findings with their evidence and the
commands to run next, which hypd never runs itself (app/readmodels/diagnostics.py)."""

from __future__ import annotations

from flask_smorest import Blueprint

from app import audit
from app.permissions import access
from app.readmodels import diagnostics
from schemas.diagnostics import DiagnosisSchema, DiagnosticPathSchema, DiagnosticQuerySchema
from vocabulary.roles import Role

blp = Blueprint("diagnostics", __name__, url_prefix="/api/v1/clusters",
                description="Read-only diagnostics: failed creation, node health, NCCL")
audit.declare_target(blp, "cluster/<cluster>")


@blp.route("/<string:cluster>/diagnostics/<string:kind>")
@access(Role.VIEWER)
@blp.arguments(DiagnosticPathSchema, location="path")
@blp.arguments(DiagnosticQuerySchema, location="query")
@blp.response(200, DiagnosisSchema)
@blp.doc(operationId="diagnose_cluster")
def diagnose(path, query, cluster, kind):
    """Diagnose a cluster, changing nothing: `creation` (failed stages with their step
    and AWS's message, HyperPod's failure and error events, nodes in Failure),
    `node-health` (nodes in Failure, marked for reboot or replacement by HyperPod's health
    label, or not Ready, with their HyperPod events and conditions) or `nccl` (the pods'
    last log lines, warning events and container states matched against known failure
    patterns: NCCL timeouts and errors, EFA errors, NVIDIA Xid errors, out of memory —
    of every workload, of one `namespace`, or of one training `job`'s pods only; 404 for a
    job the cluster does not have).
    Answers findings, each citing its evidence, and suggested commands ordered investigate
    → reboot → replace (→ retry a stage) — suggestions only: nothing is run."""
    return diagnostics.diagnose(cluster, kind, query)
