"""What the REST API's OpenAPI document says about the routes the tools call.

The document is the rulebook: each tool's input schema (path and query parameters and the
JSON body's fields — types, enums, patterns, bounds, required, defaults), its output schema
(the route's 2xx reply schemas, `Route.replies`) and who may call it (`x-hypd-role`,
`x-hypd-dry-run-role` where a route's dry run is open to viewers, and `x-hypd-team-work` where
a team member's operator token may call it) are read from it, never re-typed here. The
server reads the document from the API it calls (`GET /api/v1/openapi.json`, public), so the
two cannot drift.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from vocabulary.roles import ACCESS_LEVELS, Role

Location = Literal["path", "query", "body"]

ROLE_EXTENSION = "x-hypd-role"
DRY_RUN_EXTENSION = "x-hypd-dry-run-role"
TEAM_WORK_EXTENSION = "x-hypd-team-work"
ROLE_ORDER = ACCESS_LEVELS
MEMBER = "member"
"""A session of a team member's operator token: a viewer's tools, and the changes declared
team work (the API refuses the member any other change, and another team's work)."""

_MAX_DEPTH = 20


class RouteBookError(ValueError):
    """The document lacks a route a tool calls, or describes it in a way tools cannot use."""


@dataclass(frozen=True)
class Param:
    """One input of a route: where it goes and its JSON schema (references inlined)."""

    name: str
    location: Location
    schema: dict[str, Any]
    required: bool


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    params: tuple[Param, ...]
    role: str
    """Who may call it: `public`, `viewer` or `operator`."""
    dry_run_role: str | None
    """Who may call its dry run (`?dry_run=true`), when it offers one."""
    replies: tuple[dict[str, Any], ...] = ()
    """The JSON schema of each 2xx reply the document describes (references inlined), in
    the document's order, without repeats."""
    team_work: bool = False
    """A change a team member's operator token may ask for (its team's work)."""

    def role_for(self, fixed_query: Mapping[str, str]) -> str:
        """The role a call needs when these query parameters are always sent."""
        asked = str(fixed_query.get("dry_run", "")).lower() in ("true", "1")
        return self.dry_run_role if asked and self.dry_run_role else self.role

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)


def may(role: str, needs: str) -> bool:
    return ROLE_ORDER.index(role) >= ROLE_ORDER.index(needs)


def session_role(who: Mapping[str, Any]) -> str:
    """What a session of this token (whoami's answer) may call: `operator`, `member` (an
    operator's token in a team) or `viewer`."""
    if who.get("role") != Role.OPERATOR:
        return Role.VIEWER.value
    return MEMBER if who.get("team") else Role.OPERATOR.value


def may_call(session: str, route: Route, needs: str) -> bool:
    """Whether a session may call `route` when the call needs `needs`."""
    if session == MEMBER:
        return may(Role.VIEWER, needs) or (needs == Role.OPERATOR and route.team_work)
    return may(session, needs)


class RouteBook:
    """The routes of one OpenAPI document, looked up by method and path template."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        if not isinstance(document.get("paths"), Mapping):
            raise RouteBookError("not an OpenAPI document: it has no paths")
        self.document = document
        self._routes: dict[tuple[str, str], Route] = {}
        for path, item in document["paths"].items():
            shared = item.get("parameters") or []
            for method, operation in item.items():
                if method == "parameters" or not isinstance(operation, Mapping):
                    continue
                key = (method.upper(), path)
                self._routes[key] = self._route(method.upper(), path, shared, operation)

    def route(self, method: str, path: str) -> Route:
        try:
            return self._routes[(method.upper(), path)]
        except KeyError:
            raise RouteBookError(f"the API's OpenAPI document has no {method.upper()} {path}"
                                 ) from None

    def routes(self) -> list[Route]:
        return list(self._routes.values())

    # building ------------------------------------------------------------------------

    def _route(self, method: str, path: str, shared: list[Any],
               operation: Mapping[str, Any]) -> Route:
        params: dict[tuple[str, str], Param] = {}
        # operation-level parameters override path-level ones of the same name and place
        for raw in [*shared, *(operation.get("parameters") or [])]:
            raw = self.resolve(raw)
            where = raw.get("in")
            if where not in ("path", "query"):
                continue  # headers and cookies are the client's business, not a tool's
            schema = self.inline(raw.get("schema") or {})
            if raw.get("description") and "description" not in schema:
                schema["description"] = raw["description"]
            params[(where, raw["name"])] = Param(raw["name"], where, schema,
                                                 bool(raw.get("required")) or where == "path")
        body = self._body(operation)
        if body is not None:
            required = set(body.get("required") or ())
            for name, schema in (body.get("properties") or {}).items():
                params[("body", name)] = Param(name, "body", schema, name in required)
        names = [p.name for p in params.values()]
        clashes = sorted({n for n in names if names.count(n) > 1})
        if clashes:
            raise RouteBookError(f"{method} {path}: inputs named alike in two places: "
                                 f"{', '.join(clashes)}")
        role = operation.get(ROLE_EXTENSION)
        if role not in ROLE_ORDER:
            raise RouteBookError(f"{method} {path} declares no role ({ROLE_EXTENSION})")
        return Route(method, path, tuple(params.values()), role,
                     operation.get(DRY_RUN_EXTENSION), self._replies(operation),
                     bool(operation.get(TEAM_WORK_EXTENSION)))

    def _replies(self, operation: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
        replies: list[dict[str, Any]] = []
        for status, response in (operation.get("responses") or {}).items():
            if not str(status).startswith("2"):
                continue
            content = self.resolve(response).get("content") or {}
            schema = (content.get("application/json") or {}).get("schema")
            if schema is None:
                continue
            schema = self.inline(schema)
            if schema not in replies:
                replies.append(schema)
        return tuple(replies)

    def _body(self, operation: Mapping[str, Any]) -> dict[str, Any] | None:
        body = operation.get("requestBody")
        if not body:
            return None
        content = self.resolve(body).get("content") or {}
        schema = (content.get("application/json") or {}).get("schema")
        if schema is None:
            return None
        schema = self.inline(schema)
        if schema.get("type", "object") != "object":
            raise RouteBookError("a request body that is not a JSON object cannot be a tool's "
                                 "arguments")
        return schema

    def resolve(self, node: Any) -> Any:
        """Follow a local `$ref` (`#/components/...`) to what it names."""
        seen = 0
        while isinstance(node, Mapping) and "$ref" in node:
            ref = node["$ref"]
            if not isinstance(ref, str) or not ref.startswith("#/"):
                raise RouteBookError(f"only local references are supported, not {ref!r}")
            target: Any = self.document
            for part in ref[2:].split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            node = target
            seen += 1
            if seen > _MAX_DEPTH:
                raise RouteBookError(f"reference loop at {ref}")
        return node

    def inline(self, schema: Any, depth: int = 0) -> Any:
        """A copy of `schema` with every reference replaced by what it names, and OpenAPI
        3.0's `nullable` spelled as JSON Schema does, so a tool's schema stands alone."""
        if depth > _MAX_DEPTH:
            raise RouteBookError("schema nested too deeply (a reference cycle?)")
        schema = self.resolve(schema)
        if isinstance(schema, list):
            return [self.inline(item, depth + 1) for item in schema]
        if not isinstance(schema, Mapping):
            return copy.deepcopy(schema)
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key == "nullable":
                continue
            if key == "properties":  # names, not schemas: never mistaken for keywords
                out[key] = {name: self.inline(v, depth + 1) for name, v in value.items()}
            else:
                out[key] = self.inline(value, depth + 1)
        wrapped = out.get("allOf")
        if isinstance(wrapped, list) and len(wrapped) == 1 and isinstance(wrapped[0], dict):
            # `{description, allOf: [<one schema>]}` is how a described nested schema is
            # written; a tool's schema says the same thing flat
            out.pop("allOf")
            out = {**wrapped[0], **out}
        if schema.get("nullable"):
            out = _or_null(out)
        return out


def _or_null(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI 3.0's `nullable: true` as JSON Schema says it: null is one more value."""
    kind = schema.get("type")
    if isinstance(kind, str):
        schema["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        schema["type"] = [*kind, "null"]
    elif kind is None and any(k in schema for k in ("oneOf", "anyOf", "properties", "enum")):
        schema = {"anyOf": [{k: v for k, v in schema.items() if k != "description"},
                            {"type": "null"}],
                  **({"description": schema["description"]} if "description" in schema else {})}
        return schema
    if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
        schema["enum"] = [*schema["enum"], None]
    return schema
