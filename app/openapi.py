"""What the OpenAPI document says of every operation, stated once for all of them.

The routes declare what is theirs: an `operationId` (`@blp.doc(operationId="create_network")`,
right above the view), a docstring, a role (`@access`), arguments and replies. This module
is an apispec plugin that completes each operation as the document is built, from those
declarations, with what holds for every route alike:

- **Names**: each operation's `operationId` is its route's own name, snake_case, unique
  (a generated client's function, the MCP tool that calls the route). A route without one
  stops `create_app`, as a route without a role does (app/permissions.py).
- **Words**: the docstring is the `description`; the `summary` is its first sentence.
- **Idempotency**: every change (any method but GET) documents the `Idempotency-Key` and
  `Idempotency-TTL` request headers (components parameters `IdempotencyKey`,
  `IdempotencyTTL`) as app/mutations.py honours them.
- **Errors**: every 4xx/5xx reply is the one envelope (`Error`, app/errors.py) unless the
  route declared a more precise envelope (InUseError); a route's own 409/412/422… keep the
  route's description. Every route that needs a token documents 401, and an operator's
  route 403 (a viewer's token), from its role declaration (`x-hypd-role`).

The document also says where it is served (`servers`: its own origin), who makes it
(`info.contact`) and its licence, and carries no component nothing uses, so an OpenAPI
linter's recommended rules (Spectral's `spectral:oas`) find nothing to say
(tests/app/test_openapi_lint.py).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from apispec import APISpec, BasePlugin

from app.mutations import MAX_KEY_LEN
from app.permissions import DRY_RUN_EXTENSION, ROLE_EXTENSION
from tasks.engine.store import IDEMPOTENCY_TTL_S
from vocabulary.roles import PUBLIC, Role

OPERATION_ID = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")
"""An operation's name: snake_case, as Python and an agent's tool list write names."""

IDEMPOTENCY_KEY = "IdempotencyKey"
IDEMPOTENCY_TTL = "IdempotencyTTL"
ERROR = "Error"
"""The envelope's schema component (app/errors.py's ErrorSchema, as the document names it)."""

CHANGES = frozenset({"post", "put", "patch", "delete"})

_DOCUMENT: dict[str, Any] = {
    "info": {
        "description": "Control panel for EKS + SageMaker HyperPod clusters. A change that "
                       "takes time answers 202 with the operation carrying it out (read its "
                       "status_route until the operation is finished), one already true 200 "
                       "with changed false; every failure is the one error envelope "
                       "{\"error\": {\"code\", \"message\", \"details\"}}.",
        "contact": {"name": "hypd maintainers"},
        "license": {"name": "Apache-2.0"},
    },
    "servers": [{"url": "/", "description": "this panel (the origin serving this document)"}],
    "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    "security": [{"bearer": []}],
}


def spec_kwargs() -> dict[str, Any]:
    """The document's own fields and this plugin, as create_app hands them to
    flask-smorest's Api (a fresh copy per app: apispec keeps what it is given)."""
    return {**copy.deepcopy(_DOCUMENT), "extra_plugins": [OperationsPlugin()]}

_HEADERS: dict[str, dict[str, Any]] = {
    IDEMPOTENCY_KEY: {
        "name": "Idempotency-Key",
        "in": "header",
        "required": False,
        "description": (
            "Makes the change safe to send again (after a lost reply, a timeout): per token, "
            "method and path, the same key with the same body answers the operation the "
            "first request started, in its current state, and starts nothing; the same key "
            "with another body is refused with 422 idempotency_key_reused. Remembered 24 "
            "hours, or as long as Idempotency-TTL says. A change made at once rather than by "
            "an operation (a 200 or 201 reply), and a cancel or retry of an operation by its "
            "id, take the header and keep no record of it."),
        # printable ASCII: what a header carries everywhere (the API takes any printable
        # character, and refuses others with 422)
        "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LEN,
                   "pattern": "^[ -~]+$"},
    },
    IDEMPOTENCY_TTL: {
        "name": "Idempotency-TTL",
        "in": "header",
        "required": False,
        "description": (
            f"How many seconds to remember this request's Idempotency-Key (1 to "
            f"{IDEMPOTENCY_TTL_S}; {IDEMPOTENCY_TTL_S} without it), for a client whose keys "
            "are short-lived by design. A value out of bounds is refused with 422, never "
            "changed."),
        "schema": {"type": "integer", "minimum": 1, "maximum": IDEMPOTENCY_TTL_S},
    },
}

_BY_ROLE = {"401": "UNAUTHORIZED", "403": "FORBIDDEN"}
"""flask-smorest's components responses (each the envelope) for a missing token and a role
below the route's."""

_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)\.(\s|$)")


class UnnamedOperation(RuntimeError):
    """A route without a valid, unique operationId: the app refuses to start."""


def summary_of(description: str) -> str:
    """The first sentence of a docstring (its first line of thought, for a list of routes)."""
    found = _SENTENCE_END.search(description)
    return description[:found.start() + 1] if found else description


class OperationsPlugin(BasePlugin):
    """Completes each operation as flask-smorest hands it to apispec (see the module
    docstring)."""

    def __init__(self) -> None:
        self.spec: APISpec | None = None
        self.named: dict[str, str] = {}

    def init_spec(self, spec: APISpec) -> None:
        super().init_spec(spec)
        self.spec = spec
        for name, parameter in _HEADERS.items():
            spec.components.parameter(name, parameter["in"], dict(parameter), lazy=True)

    def operation_helper(self, path: str | None = None,
                         operations: dict[str, Any] | None = None, **kwargs: Any) -> None:
        for method, operation in (operations or {}).items():
            if not isinstance(operation, dict):
                continue
            where = f"{method.upper()} {path}"
            self._name(where, operation)
            _words(operation)
            if method in CHANGES:
                operation["parameters"] = [*(operation.get("parameters") or []),
                                           IDEMPOTENCY_KEY, IDEMPOTENCY_TTL]
            self._errors(operation)

    def _name(self, where: str, operation: Mapping[str, Any]) -> None:
        name = operation.get("operationId")
        if not isinstance(name, str) or not OPERATION_ID.fullmatch(name):
            raise UnnamedOperation(f"{where} has no operationId in snake_case (got {name!r}): "
                                   "declare its name with @blp.doc(operationId=...)")
        other = self.named.setdefault(name, where)
        if other != where:
            raise UnnamedOperation(f"{where} and {other} are both named {name!r}")

    def _errors(self, operation: dict[str, Any]) -> None:
        responses = operation.setdefault("responses", {})
        role = operation.get(ROLE_EXTENSION)
        if role != PUBLIC:
            responses.setdefault("401", _BY_ROLE["401"])
        if role == Role.OPERATOR or operation.get(DRY_RUN_EXTENSION):
            responses.setdefault("403", _BY_ROLE["403"])
        for status, response in responses.items():
            if str(status)[0] in "45" and isinstance(response, dict) \
                    and "$ref" not in response and not response.get("content"):
                response["content"] = {"application/json": {
                    "schema": self._ref("schema", ERROR)}}

    def _ref(self, kind: str, name: str) -> dict[str, str]:
        assert self.spec is not None
        return self.spec.components.get_ref(kind, name)


def _words(operation: dict[str, Any]) -> None:
    """The docstring (flask-smorest made it the summary) as the description, its first
    sentence as the summary."""
    text = " ".join(" ".join(str(operation.get(k) or "").split())
                    for k in ("summary", "description")).strip()
    if text:
        operation["description"] = text
        operation["summary"] = summary_of(text)
