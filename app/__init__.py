"""The Flask app factory: one app for the REST API, the WebSockets and the dashboard."""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from inspect import iscoroutinefunction
from pathlib import Path
from typing import Any

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


def security_headers(settings: Settings) -> tuple[tuple[str, str], ...]:
    """Added to every reply that does not set its own. A form may post only here and to the
    spaces router: the dashboard's Open posts a space's sign-in code there, from the tab it
    opens (which keeps this page's policy)."""
    policy = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
              "connect-src 'self'; object-src 'none'; base-uri 'none'; "
              f"form-action 'self' {settings.spaces_origin}; frame-ancestors 'none'")
    return (("Content-Security-Policy", policy), ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "no-referrer"), ("X-Frame-Options", "DENY"))


class HypdFlask(Flask):
    """Flask, remembering which views and hooks are coroutine functions.

    Flask asks `inspect.iscoroutinefunction` of every hook and view on every request, and
    flask-smorest of every decorator layer: 15 times per status read, the largest single
    cost a read paid that a bare Flask route does not (docs/benchmarks.md, "Status
    reads"). The answer cannot change for a function, so it is asked once per function."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._coroutine_functions: weakref.WeakKeyDictionary[Callable[..., Any], bool] = \
            weakref.WeakKeyDictionary()

    def ensure_sync(self, func: Callable[..., Any]) -> Callable[..., Any]:
        owner = getattr(func, "__func__", func)  # a bound method: a new object each time
        try:
            is_coroutine = self._coroutine_functions[owner]
        except KeyError:
            is_coroutine = iscoroutinefunction(func)
            self._coroutine_functions[owner] = is_coroutine
        except TypeError:  # cannot be weakly referenced: ask each time, as Flask does
            is_coroutine = iscoroutinefunction(func)
        return self.async_to_sync(func) if is_coroutine else func


def create_app(settings: Settings | None = None, tokens: auth.TokenTable | None = None) -> Flask:
    settings = settings or Settings.from_env()
    app = HypdFlask(__name__, static_folder=str(STATIC_DIR), static_url_path="/static")
    app.config.update(
        API_TITLE="hypd",
        API_VERSION="v1",
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX="/api/v1",
        OPENAPI_JSON_PATH="openapi.json",
        JSON_SORT_KEYS=False,
    )
    app.extensions["hypd.settings"] = settings
    added_headers = security_headers(settings)
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
    def _headers(response):
        """The security headers a reply does not set itself, and how long the server spent
        on the request (`Server-Timing`, what bench/ scripts report). One pass over the
        reply's headers: `Headers.setdefault` scans them and raises a KeyError per absent
        name."""
        headers = response.headers
        present = {name.lower() for name in headers.keys()}  # noqa: SIM118 (iter: pairs)
        for name, value in added_headers:
            if name.lower() not in present:
                headers.add(name, value)
        started = g.get("hypd_started")
        if started is not None:
            timing = f"app;dur={(time.perf_counter() - started) * 1000:.2f}"
            if "server-timing" in present:
                headers["Server-Timing"] = timing
            else:
                headers.add("Server-Timing", timing)
        return response

    audit.install(app)

    # last: every route is registered, and one without a declaration refuses the start
    auth.install(app, tokens if tokens is not None else auth.TokenTable.from_settings(settings))
    intake.install(app)  # after auth: a request without a valid token is refused for that
    return app
