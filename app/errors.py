"""The one error envelope: {"error": {"code", "message", "details"}}.

Every failure — a bad body, a missing token, a busy target, AWS saying no — leaves through
here with a stable code and a message that states the real cause.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from flask import Flask, jsonify
from flask_smorest import Api
from werkzeug.exceptions import HTTPException

from cloud.aws import error_code, is_transient
from cloud.errors import NotYet, Refusal
from cloud.settings import SettingsError
from schemas.common import ErrorSchema
from tasks.engine.errors import EngineError

HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    412: "precondition_failed",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "validation_failed",
    429: "throttled",
    500: "internal_error",
    502: "upstream_error",
    503: "throttled",
}


class ApiError(Exception):
    """Raise anywhere in a request to answer with the envelope."""

    def __init__(self, status: int, code: str, message: str,
                 details: dict[str, Any] | None = None, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details or {}
        self.headers = headers or {}


def envelope(status: int, code: str, message: str, details: dict[str, Any] | None = None,
             headers: dict[str, str] | None = None):
    response = jsonify({"error": {"code": code, "message": message, "details": details or {}}})
    response.status_code = status
    for key, value in (headers or {}).items():
        response.headers[key] = value
    return response


LOCATIONS = frozenset({"json", "query", "querystring", "form", "headers", "cookies", "files",
                       "view_args", "path", "json_or_form"})
"""webargs' request locations: the outer keys of its messages."""

BODY = "_schema"
"""marshmallow's key for an error of the whole (sub)object rather than of one field."""


MAX_DEPTH = 40
"""An error structure nests like the body it speaks of (app/intake.py caps a body at 32
levels); below this depth it is cut, never walked into Python's recursion limit."""

CUT = "…"


def _json_safe(errors: Any, depth: int = 0) -> Any:
    """marshmallow keys a list's items by int beside `_schema` strings; JSON keys are strings
    (and Flask sorts them, which fails on a mix of int and str)."""
    if depth > MAX_DEPTH:
        return CUT
    if isinstance(errors, dict):
        return {str(key): _json_safe(value, depth + 1) for key, value in errors.items()}
    if isinstance(errors, (list, tuple)):
        return [_json_safe(value, depth + 1) for value in errors]
    return errors if isinstance(errors, str) else str(errors)


def _field_errors(messages: Any) -> dict[str, Any]:
    """webargs nests errors by location ({"json": {"name": [...]}}); clients want fields.
    Below a field the structure stays marshmallow's (list items by index, `_schema` for the
    field as a whole), with string keys."""
    if not isinstance(messages, dict):
        return {BODY: _json_safe(messages if isinstance(messages, list) else [messages])}
    fields: dict[str, Any] = {}
    for key, errors in _json_safe(messages).items():
        if key in LOCATIONS and isinstance(errors, dict):
            fields.update(errors)
        else:
            fields[key] = errors
    return fields


def _flat(errors: Any, path: str = "", depth: int = 0) -> Iterator[tuple[str, str]]:
    """(dotted path, message) for every message in a marshmallow error structure; `_schema`
    speaks for the object it sits in."""
    if depth > MAX_DEPTH:
        yield path, CUT
    elif isinstance(errors, dict):
        for key, value in errors.items():
            yield from _flat(value, path if key == BODY else f"{path}.{key}" if path else key,
                             depth + 1)
    elif isinstance(errors, list):
        for value in errors:
            yield from _flat(value, path, depth + 1)
    else:
        yield path, str(errors)


def _summary(fields: dict[str, Any]) -> str:
    """One line naming each field at fault with its first message."""
    first: dict[str, str] = {}
    for path, message in _flat(fields):
        first.setdefault(path, message)
    parts = [f"{path}: {message}" if path else message for path, message in first.items()]
    return "; ".join(parts) or "the request is not valid"


class EnvelopeApi(Api):
    """flask-smorest's Api with its error payload replaced by ours."""

    ERROR_SCHEMA = ErrorSchema

    def _register_pagination_header(self) -> None:
        """None: hypd pages with its own cursors (`next_cursor`, `next_before`), never
        flask-smorest's page header, whose schema would stand unused in the document."""

    def handle_http_exception(self, error: HTTPException):
        status = error.code or 500
        data = getattr(error, "data", None) or {}
        headers = data.get("headers") or {}
        fields = _field_errors(data.get("errors") or data.get("messages")) \
            if "messages" in data or "errors" in data else None
        if status == 422 and fields is not None:
            return envelope(422, "validation_failed", _summary(fields), {"fields": fields},
                            headers)
        # webargs' 400 for a body it could not read says why in its messages
        message = data.get("message") or (_summary(fields) if fields else None) \
            or error.description or error.name
        if status == 500:
            message = "internal error; see the server log"
        return envelope(status, HTTP_CODES.get(status, "error"), message, {}, headers)


def register(app: Flask) -> None:
    @app.errorhandler(ApiError)
    def _api_error(exc: ApiError):
        return envelope(exc.status, exc.code, exc.message, exc.details, exc.headers)

    @app.errorhandler(BotoCoreError)
    @app.errorhandler(ClientError)
    def _aws_error(exc: Exception):
        # A read that AWS refused: say what AWS said, as an upstream error.
        if is_transient(exc):
            return envelope(503, "throttled", f"AWS is busy, try again: {exc}",
                            {"aws_code": error_code(exc)}, {"Retry-After": "5"})
        return envelope(502, "upstream_error", f"AWS refused: {exc}",
                        {"aws_code": error_code(exc)})

    @app.errorhandler(Refusal)
    def _refusal(exc: Refusal):
        details = dict(exc.details)
        if exc.field:
            details.setdefault("fields", {exc.field: [exc.message]})
        return envelope(exc.status, exc.code, exc.message, details)

    @app.errorhandler(NotYet)
    def _not_yet(exc: NotYet):
        # Settling, not refused: the same request will do once AWS has caught up.
        retry = str(int(exc.retry_after or 5))
        return envelope(409, "conflict", f"{exc.message}; try again shortly",
                        {"retry_after_seconds": int(retry)}, {"Retry-After": retry})

    @app.errorhandler(SettingsError)
    def _settings_error(exc: SettingsError):
        return envelope(500, "misconfigured", str(exc))

    @app.errorhandler(EngineError)
    def _engine_error(exc: EngineError):
        return envelope(exc.http_status, exc.code, exc.message, exc.details)
