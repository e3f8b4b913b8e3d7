"""Who may call each route: declared by the route itself, in one place, shown in OpenAPI.

Every view — a function or a MethodView method — carries one `@access(...)`:
`@access(Role.VIEWER)` for reads, `@access(Role.OPERATOR)` for changes,
`@access(Role.OPERATOR, dry_run=True)` for a change whose `?dry_run=true` changes nothing
(that dry run alone is open to viewers), `team_work=True` on a change a team member's
operator token may ask for (its team's jobs: the route checks whose; any other change is
for an operator outside any team), `@access(PUBLIC)` for what needs no token (the
roles and levels are the vocabulary's, `vocabulary.roles`). The declaration, never a query
parameter or a header, decides; a route without one makes the app refuse to start, so a new
route cannot be born open — nor can a route answering anything but GET be declared less than
an operator's. The declaration is the only role check: nothing behind it (not the engine's
submit) asks again. The OpenAPI document carries the declaration of every operation
(`x-hypd-role`, and `x-hypd-dry-run-role` where a dry run is open to viewers), which is how
the MCP server decides which tools a token sees, and the WebSocket's actions are allowed by
the declaration of the REST route they stand for.

**Permissions** (app/permissions.py): every view carries `@access(role)` — `public`,
`viewer` or `operator`, and `dry_run=True` where the route's `?dry_run=true` changes nothing
and is open to viewers (`POST /clusters`, and every destructive route: see Guardrails). The
declaration is the only thing the check
(app/auth.py, before every request) reads: a query parameter or header never lowers what a
route needs, `?dry_run` counts only on a route that declares it and is read by the route's
own query schema (`DryRunQuerySchema`). Routes served by libraries (static files, the
OpenAPI document) are declared in one table there. An undeclared route makes `create_app`
raise `UndeclaredRoutes` naming it, so a route cannot be born open. The OpenAPI document
carries each operation's declaration (`x-hypd-role`, `x-hypd-dry-run-role`; `security: []`
for public ones), which is how the MCP server decides which tools a token sees; the
WebSocket allows `{"type": "cancel"}` by the declaration of `POST
/operations/<id>/cancel`, and following an operation by its own (`viewer`). Reads are a viewer's,
with one
exception declared by its route: `GET /api/v1/audit` is an operator's (it says who did
what; viewers are users of clusters, not their auditors). `/metrics` is a viewer's, not
public: the contract keeps the unauthenticated surface to `/healthz`, the OpenAPI document
and the dashboard's files; metrics show activity (operation kinds, AWS APIs called, error
codes) that `GET /operations` already gates behind a viewer token; and Prometheus sends a
bearer token without effort (`authorization: {credentials_file: ...}`). Besides,
`mutations.submit` — the engine's door — refuses a non-operator, in case a route declares
itself open by mistake (a test fails on such a declaration anyway: every non-GET operation
must be `operator`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from flask import Flask
from flask_smorest import Blueprint
from marshmallow import EXCLUDE, ValidationError

from schemas.common import DryRunQuerySchema
from vocabulary.roles import ACCESS_LEVELS, PUBLIC, Role

ROLE_EXTENSION = "x-hypd-role"
DRY_RUN_EXTENSION = "x-hypd-dry-run-role"
TEAM_WORK_EXTENSION = "x-hypd-team-work"

IGNORED_METHODS = frozenset({"HEAD", "OPTIONS"})
"""Answered by Flask for every route: HEAD as the GET, OPTIONS with the allowed methods."""
READ_METHODS = frozenset({"GET"})
"""A route answering any other method changes something: it is an operator's."""

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Access:
    role: str
    """`public`, `viewer` or `operator`."""
    dry_run: bool = False
    """The route's `?dry_run=true` changes nothing, so a viewer may ask for it."""
    websocket: bool = False
    """A WebSocket: its token arrives as the first message, checked by the socket itself."""
    team_work: bool = False
    """A change a team member's operator token may ask for: it changes one team's work (a
    job), and the route itself refuses a member another team's. Every other change is for
    an operator outside any team (`forbidden` to a member)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "role", str(self.role))  # a Role member, stored as its word
        if self.role not in ACCESS_LEVELS:
            raise ValueError(
                f"access role must be one of {', '.join(ACCESS_LEVELS)}: {self.role!r}")
        if self.dry_run and self.role != Role.OPERATOR:
            raise ValueError("only an operator route can open its dry run to viewers")
        if self.team_work and self.role != Role.OPERATOR:
            raise ValueError("only a change can be declared team work")

    def needed(self, dry_run_asked: bool) -> str:
        """The role this request needs."""
        return Role.VIEWER if self.dry_run and dry_run_asked else self.role

    def openapi(self) -> dict[str, Any]:
        doc: dict[str, Any] = {ROLE_EXTENSION: self.role}
        if self.dry_run:
            doc[DRY_RUN_EXTENSION] = Role.VIEWER.value
        if self.team_work:
            doc[TEAM_WORK_EXTENSION] = True
        if self.role == PUBLIC:
            doc["security"] = []
        return doc


INFRASTRUCTURE: Mapping[str, Access] = {
    "static": Access(PUBLIC),  # the dashboard's files
    "api-docs.openapi_json": Access(PUBLIC),  # /api/v1/openapi.json (flask-smorest)
}
"""Endpoints served by libraries, declared here because they cannot carry a decorator."""


def access(role: str, *, dry_run: bool = False, websocket: bool = False,
           team_work: bool = False) -> Callable[[F], F]:
    """Declare who may call the view this decorates (see the module docstring)."""
    declared = Access(role, dry_run, websocket, team_work)

    def decorate(view: F) -> F:
        wrapped = view if websocket else Blueprint.doc(**declared.openapi())(view)
        wrapped.hypd_access = declared  # type: ignore[attr-defined]
        return wrapped

    return decorate


def dry_run_asked(args: Mapping[str, str]) -> bool:
    """Read `?dry_run` exactly as the route's own query schema reads it, so the check and the
    route can never disagree about whether this request is a dry run."""
    try:
        return bool(DryRunQuerySchema(unknown=EXCLUDE).load(dict(args)).get("dry_run"))
    except ValidationError:
        return False  # not a dry run the route would accept: it needs the route's role


class UndeclaredRoutes(RuntimeError):
    """Routes without an access declaration, or a change declared open to less than an
    operator: the app refuses to start."""


Declarations = dict[tuple[str, str], Access]
"""(endpoint, HTTP method) → its declaration."""


def declarations(app: Flask) -> Declarations:
    """Every route's declaration, per method; raises UndeclaredRoutes naming what has none,
    and what changes (a method other than GET) without being declared an operator's. So the
    declaration is the one check a request meets: nothing behind it asks for a role again."""
    found: Declarations = {}
    missing: list[str] = []
    open_changes: list[str] = []
    for rule in app.url_map.iter_rules():
        view = app.view_functions[rule.endpoint]
        for method in sorted((rule.methods or set()) - IGNORED_METHODS):
            declared = INFRASTRUCTURE.get(rule.endpoint) or _declared_on(view, method)
            if declared is None:
                missing.append(f"{method} {rule.rule} ({rule.endpoint})")
                continue
            if method not in READ_METHODS and declared.role != Role.OPERATOR:
                open_changes.append(f"{method} {rule.rule} ({rule.endpoint})")
            found[(rule.endpoint, method)] = declared
    problems = []
    if missing:
        problems.append("routes without an @access(...) declaration: " + "; ".join(missing))
    if open_changes:
        problems.append("routes that change something, declared open to less than an "
                        "operator: " + "; ".join(open_changes))
    if problems:
        raise UndeclaredRoutes(". ".join(problems))
    return found


def _declared_on(view: Any, method: str) -> Access | None:
    view_class = getattr(view, "view_class", None)
    target = getattr(view_class, method.lower(), None) if view_class is not None else view
    return getattr(target, "hypd_access", None)
