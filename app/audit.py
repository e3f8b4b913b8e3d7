"""The audit log: every mutation and every refusal, kept in Redis with a bound.

The log is a Redis stream, `hypd:audit`. An entry is written:

- for each request under `/api/` that changes or tries to change something (any method but
  GET, HEAD and OPTIONS), whatever its outcome; but not for a dry run that answered, which
  changed nothing and refused nobody;
- for each request refused for its token (401, 403), reads included, on any route (`/metrics`
  too);
- by the WebSocket itself, for a cancel (accepted or refused) and for each refusal (bad
  token, Origin, role, a bad `after`, a message over 64 KiB), under its own route
  (`WS /ws/clusters/<cluster>/jobs/<job>/logs` for a log tail's).

An entry names the token by its name and role (never the secret, never a header or a body),
the route, the target, the operation and the outcome. It is written once the reply is made,
by an `after_request` hook, so it records what happened, not what was asked. A failure to
write it is logged and never fails the request. The stream keeps the newest
`HYPD_AUDIT_MAX_ENTRIES`, trimmed approximately: Redis drops whole blocks, which is how it
trims cheaply, so at most one block more is kept.

The target is the operation's when one was made or replayed, else the one the route's
blueprint declares (`declare_target`: `cluster/<cluster>/group/<name>` on
`/clusters/lab/instance-groups/g` -> `cluster/lab/group/g`, a create's body `name`, or the
operation a cancel/retry names); so a viewer's refused mutation is filterable by target like
the operation it would have made.

The hook never parses a body itself: it asks app/intake.py, the same strict reader, which
cannot crash (never raises) on what it refuses. So a body refused as malformed, or one that
would crash a parser, is recorded like any refusal: a body 10,000 levels deep crashed the
hook's own parse, and the attempt it refused went unrecorded. An entry whose target cannot be
read is written with the target null rather than lost.

`forced` says the request overrode a guard with `force=true` (it broke what depended on its
target, or deleted another token's space), so an override is found without reading bodies.

MCP calls reach the API with the caller's token and are audited like any request; a call the
MCP server itself refuses (a hidden tool) never reaches the API and is not in the log.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import redis
from flask import Flask, Response, current_app, g, request
from flask_smorest import Blueprint
from marshmallow import fields

from app import intake, permissions
from schemas.common import STREAM_ID_MAX
from vocabulary import patterns

log = logging.getLogger(__name__)

AUDIT_KEY = "hypd:audit"
READS = frozenset({"GET", "HEAD", "OPTIONS"})
REFUSED_FOR_TOKEN = frozenset({401, 403})
PAGE = 500

TargetReader = Callable[[Mapping[str, Any], Any], "str | None"]
"""Reads a refused request's target from its URL's arguments and its body."""

_PLACEHOLDER = re.compile(r"<(\w+)>")
_CONVERTER = re.compile(r"<(?:[a-z]+:)?(\w+)>")


def declare_target(blp: Blueprint, target: str | TargetReader) -> None:
    """Declare the target its routes name, for a request that made no operation (a refusal):
    a template such as `cluster/<cluster>/space/<name>`, each `<arg>` the route's URL argument
    of that name, or a function of the URL's arguments and the body. A resource's blueprint
    declares it beside itself, so adding a resource edits no table here."""
    blp.hypd_target = target  # type: ignore[attr-defined]


def install(app: Flask) -> None:
    app.after_request(_after_request)


def _after_request(response: Response) -> Response:
    if response.status_code not in REFUSED_FOR_TOKEN and (
            request.method in READS or not request.path.startswith("/api/")):
        return response  # a refusal for the token is audited on any route (`/metrics` too)
    if response.status_code < 400 and _answered_dry_run():
        return response  # it changed nothing and nobody was refused
    try:
        record(_request_entry(response))
    except Exception:  # the request happened; losing its entry must not undo that
        log.exception("could not write the audit entry of %s %s", request.method,
                      request.path)
    return response


def _answered_dry_run() -> bool:
    rule = request.url_rule
    declared = current_app.extensions["hypd.access"].get((rule.endpoint, request.method)) \
        if rule is not None else None
    return bool(declared and declared.dry_run and permissions.dry_run_asked(request.args))


def record(entry: dict[str, Any]) -> None:
    settings = current_app.extensions["hypd.settings"]
    conn: redis.Redis = current_app.extensions["hypd.redis"]
    entry = {"at": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
             **entry}
    conn.xadd(AUDIT_KEY, {"data": json.dumps(entry)}, maxlen=settings.audit_max_entries,
              approximate=True)


def record_socket(path: str, principal: Any, status: int, outcome: str,
                  code: str | None = None, operation: dict[str, Any] | None = None) -> None:
    """A WebSocket's cancel or refusal (the socket has no reply to hook)."""
    rule = request.url_rule
    try:
        record(entry(principal, "WS", f"WS {_template(rule.rule) if rule else path}", path,
                      operation.get("target") if operation else None,
                      operation.get("id") if operation else None, outcome, status, code))
    except Exception:
        log.exception("could not write the audit entry of a WebSocket on %s", path)


def entry(principal: Any, method: str, route: str, path: str, target: str | None,
           operation_id: str | None, outcome: str, status: int,
           code: str | None, forced: bool = False) -> dict[str, Any]:
    return {
        "token": getattr(principal, "name", None),
        "role": getattr(principal, "role", None),
        "method": method,
        "route": route,
        "path": path,
        "target": target,
        "operation_id": operation_id,
        "outcome": outcome,
        "status": status,
        "code": code,
        "forced": forced,
    }


def _request_entry(response: Response) -> dict[str, Any]:
    reply = _json(response)
    operation = reply.get("operation") if isinstance(reply.get("operation"), dict) else None
    error = reply.get("error") if isinstance(reply.get("error"), dict) else {}
    status = response.status_code
    rule = request.url_rule
    route = f"{request.method} {_template(rule.rule) if rule else request.path}"
    if operation:
        target, operation_id = operation.get("target"), operation.get("id")
    else:
        target, operation_id = _refused_target(), None
    outcome = ("refused" if 400 <= status < 500 else "failed" if status >= 500
               else "accepted" if operation else "done")
    return entry(g.get("principal"), request.method, route, request.path, target,
                  operation_id, outcome, status, error.get("code") if status >= 400 else None,
                  forced=str(request.args.get("force", "")).lower() in fields.Boolean.truthy)


def _refused_target() -> str | None:
    """The target of a request that made no operation; None, logged, when it cannot be read:
    the entry is written without it rather than not at all."""
    blueprint = current_app.blueprints.get(request.blueprint) if request.blueprint else None
    declared = getattr(blueprint, "hypd_target", None)
    if declared is None:
        return None  # no route (a 404), or one that acts on no target (whoami, discovery)
    try:  # the body through intake, never parsed here: it may be what was refused
        if callable(declared):
            return declared(request.view_args or {}, intake.body())
        return target_from(declared, request.view_args or {}, intake.body())
    except Exception:
        log.exception("could not read the target of %s %s", request.method, request.path)
        return None


def _template(rule: str) -> str:
    """`/api/v1/networks/<string:name>` → `/api/v1/networks/<name>`."""
    return _CONVERTER.sub(r"<\1>", rule)


def _json(response: Response) -> dict[str, Any]:
    if not response.is_json or response.direct_passthrough:
        return {}
    data = response.get_json(silent=True)
    return data if isinstance(data, dict) else {}


def target_from(template: str, args: Mapping[str, Any], body: Any) -> str | None:
    """Fill a declared target from the URL's arguments (`cluster/<cluster>/group/<name>` on
    `/clusters/lab/instance-groups/g` -> `cluster/lab/group/g`); an argument the URL lacks is a
    create's, named by its body's `name`. The target ends before the first part that names
    nothing valid (`cluster/lab` for a refused create without a name)."""
    made: list[str] = []
    pending: list[str] = []  # a part's kind (`group`), kept once its name is known
    for part in template.split("/"):
        placeholder = _PLACEHOLDER.fullmatch(part)
        if placeholder is None:
            pending.append(part)
            continue
        name = args.get(placeholder.group(1))
        if name is None:
            name = body.get("name") if isinstance(body, dict) else None
        if not (isinstance(name, str) and patterns.NAME.fullmatch(name)):
            return "/".join(made) or None
        made += [*pending, name]
        pending = []
    return "/".join(made + pending) or None


def entries(conn: redis.Redis, *, target: str | None = None, token: str | None = None,
            outcome: str | None = None, limit: int = 100,
            before: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
    """The newest entries matching the filters (a target matches itself and what is below
    it), and the id to pass as `before` for older ones (None at the end)."""
    found: list[dict[str, Any]] = []
    last: str | None = None
    for entry_id, entry in _newest_first(conn, before):
        last = entry_id
        if token is not None and entry.get("token") != token:
            continue
        if outcome is not None and entry.get("outcome") != outcome:
            continue
        held = entry.get("target") or ""
        if target is not None and not (held == target or held.startswith(target + "/")):
            continue
        found.append({"id": entry_id, **entry})
        if len(found) >= limit:
            return found, last
    return found, None


def older_than(entry_id: str) -> str | None:
    """The newest stream id below `entry_id` (None below 0-0): an inclusive bound Redis
    takes for any id the schema lets through — an exclusive `(0-0`, `(00-0` or `(0-00`
    is refused by Redis (each was a 500)."""
    ms, seq = (int(part) for part in entry_id.split("-"))
    if seq > 0:
        return f"{ms}-{seq - 1}"
    return f"{ms - 1}-{STREAM_ID_MAX}" if ms > 0 else None


def _newest_first(conn: redis.Redis, before: str | None) -> Iterator[tuple[str, dict]]:
    upper = older_than(before) if before else "+"
    if upper is None:
        return  # nothing is older than 0-0
    while True:
        page = conn.xrevrange(AUDIT_KEY, max=upper, min="-", count=PAGE)
        for entry_id, stored in page:
            yield entry_id, json.loads(stored["data"])
        if len(page) < PAGE:
            return
        upper = f"({page[-1][0]}"
