"""Who is calling."""

from __future__ import annotations

from flask_smorest import Blueprint

from app import auth, context
from app.permissions import access
from schemas.common import WhoamiSchema
from vocabulary.roles import Role

blp = Blueprint("auth", __name__, url_prefix="/api/v1/auth", description="Authentication")


@blp.route("/whoami")
@access(Role.VIEWER)
@blp.response(200, WhoamiSchema)
@blp.doc(operationId="whoami")
def whoami():
    """The name, role and team of the calling token, and where this hypd acts (the sandbox
    or a real AWS account, and its region): what a person signing in must know first."""
    principal = auth.current()
    settings = context.settings()
    return {"name": principal.name, "role": principal.role, "aws": settings.aws_mode,
            "region": settings.region, "team": principal.team}
