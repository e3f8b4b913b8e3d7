"""The Flask app factory: one app for the REST API, the WebSockets and the dashboard."""

from __future__ import annotations

import time
from pathlib import Path

from flask import Flask, g, send_from_directory

from app import audit, auth, errors, intake, openapi
from app.api import register_blueprints
from app.permissions import access
from app.ws import install as install_ws
from cloud.settings import Settings
from tasks.celery_app import engine, redis_client
from vocabulary.roles import PUBLIC

REPO_ROOT = Path(__file__).resolve().parent.parent
STATIC_DIR = REPO_ROOT / "static"
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)


def create_app(settings: Settings | None = None, tokens: auth.TokenTable | None = None) -> Flask:
    settings = settings or Settings.from_env()
    app = Flask(__name__, static_folder=str(STATIC_DIR), static_url_path="/static")
    app.config.update(
        API_TITLE="hypd",
        API_VERSION="v1",
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX="/api/v1",
        OPENAPI_JSON_PATH="openapi.json",
        JSON_SORT_KEYS=False,
    )
    app.extensions["hypd.settings"] = settings
    app.extensions["hypd.engine"] = engine(settings)
    app.extensions["hypd.redis"] = redis_client(settings.redis)

    api = errors.EnvelopeApi(app, spec_kwargs=openapi.spec_kwargs())
    errors.register(app)
    register_blueprints(api)
    install_ws(app)

    @app.get("/")
    @access(PUBLIC)
    def dashboard():
        response = send_from_directory(STATIC_DIR, "index.html")
        response.headers["Cache-Control"] = "no-cache"  # pick up updated modules
        return response

    @app.before_request
    def _started():
        g.hypd_started = time.perf_counter()  # first: the time includes the token check

    @app.after_request
    def _server_timing(response):
        """How long the server spent on the request (what bench/ scripts report)."""
        started = g.get("hypd_started")
        if started is not None:
            response.headers["Server-Timing"] = \
                f"app;dur={(time.perf_counter() - started) * 1000:.2f}"
        return response

    @app.after_request
    def _security_headers(response):
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        response.headers.setdefault("X-Frame-Options", "DENY")
        return response

    audit.install(app)

    # last: every route is registered, and one without a declaration refuses the start
    auth.install(app, tokens if tokens is not None else auth.TokenTable.from_settings(settings))
    intake.install(app)  # after auth: a request without a valid token is refused for that
    return app
