"""The two kinds of outcome every cloud adapter raises besides AWS's own errors.

Each module's exceptions subclass one of these, so the engine (`tasks/outcomes.py`) and the
REST error envelope (`app/errors.py`) each handle two bases instead of a list of every
module's classes, and a new adapter's errors are understood without touching either.
"""

from __future__ import annotations

from typing import Any

STATUS_BY_CODE = {
    "validation_failed": 422,
    "immutable_field": 422,
    "exceeds_capacity": 422,
    "not_found": 404,
    "precondition_failed": 412,
    "upstream_error": 502,
    "throttled": 503,
}
"""HTTP status of a refusal by its code; any other code (`conflict`, `network_conflict`,
`storage_conflict`, ...) is a 409."""


class Refusal(Exception):
    """A request that cannot be carried out as asked, for a reason the user must resolve (a
    name taken, a resource that is not hypd's, a choice AWS would refuse). `code` is the
    stable API error code, `field` the request field at fault (if one is), `retryable`
    whether the same request may succeed later unchanged (a Kubernetes API answering 503)."""

    default_code = "conflict"
    retryable = False

    def __init__(self, message: str, code: str | None = None, *, field: str | None = None,
                 details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.field = field
        self.details = dict(details or {})

    @property
    def status(self) -> int:
        return STATUS_BY_CODE.get(self.code, 409)


class Invalid(Refusal):
    """A request that is well-formed but names what the actual state refutes (a namespace
    that does not exist, a worker not in the pool, min above max): 422 validation_failed,
    with `field` naming the field at fault as a schema's own errors do."""

    default_code = "validation_failed"


class NotYet(Exception):
    """AWS (or the cluster) is still settling — a dependency being deleted, an id not
    visible yet, a file system being created: ask again after `retry_after` seconds."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after
