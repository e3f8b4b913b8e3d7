"""Who is calling."""

from __future__ import annotations

from flask_smorest import Blueprint

from app import auth
from app.permissions import access
from schemas.common import WhoamiSchema
from vocabulary.roles import Role

blp = Blueprint("auth", __name__, url_prefix="/api/v1/auth", description="Authentication")


@blp.route("/whoami")
@access(Role.VIEWER)
@blp.response(200, WhoamiSchema)
@blp.doc(operationId="whoami")
def whoami():
    """The name and role of the calling token."""
    principal = auth.current()
    return {"name": principal.name, "role": principal.role}
