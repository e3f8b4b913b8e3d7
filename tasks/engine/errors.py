"""Errors the engine raises for the faces to turn into the one error envelope."""

from __future__ import annotations

from typing import Any


class EngineError(Exception):
    code = "engine_error"
    http_status = 500

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}


class OperationNotFound(EngineError):
    code = "not_found"
    http_status = 404


class Conflict(EngineError):
    """Another operation holds the target, an ancestor or a descendant of it."""

    code = "conflict"
    http_status = 409


class IdempotencyKeyReused(EngineError):
    code = "idempotency_key_reused"
    http_status = 422


class UnknownKind(EngineError):
    """A kind the engine's table does not list (a programming error, never the user's)."""

    code = "internal_error"
    http_status = 500


class InvalidTransition(EngineError):
    """E.g. retrying an operation that succeeded, cancelling one that finished."""

    code = "conflict"
    http_status = 409
