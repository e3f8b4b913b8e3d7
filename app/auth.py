"""Named bearer tokens with two roles, viewer and operator, and optionally a team.

Secrets are never stored or logged: the tokens file holds SHA-256 digests, and tokens given
by environment are hashed at start. A token's *name* scopes Idempotency-Keys, the active
cluster and the audit log. A token of the tokens file may name its *team* (a team of the
clusters' task governance, issue 25): the team's members are the tokens naming it.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from pathlib import Path

import yaml
from flask import Flask, current_app, g, request

from app import permissions
from app.errors import ApiError
from cloud.settings import Settings, SettingsError
from vocabulary import patterns, teams
from vocabulary.roles import PUBLIC, Role


@dataclass(frozen=True)
class Principal:
    name: str
    role: str
    team: str | None = None

    def may(self, role: str) -> bool:
        return Role(self.role).covers(role)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


Entry = tuple[str, str, str] | tuple[str, str, str, str | None]
"""(name, role, sha256 hex of the secret[, team])"""


class TokenTable:
    def __init__(self, entries: list[Entry]) -> None:
        self._entries: list[tuple[str, str, str, str | None]] = []
        for entry in entries:
            name, role, known, team = (*entry, None)[:4]
            if role not in list(Role):
                raise SettingsError(f"token {name!r}: role must be one of "
                                    f"{', '.join(Role)}")
            if team is not None and not valid_team(team):
                raise SettingsError(f"token {name!r}: team {team!r} is not a team name "
                                    f"({teams.TEAM_NAME_RULE})")
            self._entries.append((name, role, known, team))

    @classmethod
    def from_settings(cls, settings: Settings) -> TokenTable:
        entries: list[Entry] = []
        if settings.operator_token:
            # each of these two tokens is named after its role (DESIGN: Settings)
            role = Role.OPERATOR.value
            entries.append((role, role, digest(settings.operator_token)))
        if settings.viewer_token:
            role = Role.VIEWER.value
            entries.append((role, role, digest(settings.viewer_token)))
        if settings.tokens_file:
            entries.extend(read_tokens_file(settings.tokens_file))
        return cls(entries)

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, secret: str) -> Principal | None:
        presented = digest(secret)
        found = None
        for name, role, known, team in self._entries:
            if hmac.compare_digest(presented, known):  # no early exit: constant-ish time
                found = Principal(name, role, team)
        return found

    def members(self, team: str) -> list[str]:
        """The names of the tokens in `team`."""
        return sorted(name for name, _, _, member_of in self._entries if member_of == team)


def valid_team(team: str) -> bool:
    return bool(patterns.TEAM_NAME.fullmatch(team)) and len(team) <= teams.TEAM_NAME_MAX


def read_tokens_file(path: Path) -> list[Entry]:
    """YAML or JSON: a list of {name, role, sha256[, team]}."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SettingsError(f"cannot read HYPD_TOKENS_FILE {path}: {exc}") from exc
    if not isinstance(data, list):
        raise SettingsError(f"{path}: expected a list of {{name, role, sha256}}")
    entries = []
    for item in data:
        if not isinstance(item, dict) or not {"name", "role", "sha256"} <= item.keys():
            raise SettingsError(f"{path}: every entry needs name, role and sha256")
        team = item.get("team")
        entries.append((str(item["name"]), str(item["role"]), str(item["sha256"]).lower(),
                        None if team is None else str(team)))
    return entries


def bearer(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def authenticate(tokens: TokenTable, secret: str | None) -> Principal:
    if not secret:
        raise ApiError(401, "unauthorized", "a bearer token is required",
                       headers={"WWW-Authenticate": "Bearer"})
    principal = tokens.lookup(secret)
    if principal is None:
        raise ApiError(401, "unauthorized", "the bearer token is not valid",
                       headers={"WWW-Authenticate": "Bearer"})
    return principal


def refusal(principal: Principal, declared: permissions.Access, dry_run_asked: bool = False
            ) -> str | None:
    """Why the principal may not call a route so declared (None: it may). A team member's
    operator token changes only its team's work: a change not declared `team_work` is for
    an operator outside any team (the route refuses another team's work itself)."""
    role = declared.needed(dry_run_asked)
    if not principal.may(role):
        return f"token {principal.name!r} has the {principal.role} role; this needs {role}"
    if principal.team and role == Role.OPERATOR and not declared.team_work:
        return (f"token {principal.name!r} is a member of team {principal.team}: it changes "
                "only its team's work (submitting and deleting its jobs); this change is for "
                "an operator outside any team")
    return None


def require(principal: Principal, declared: permissions.Access, dry_run_asked: bool = False
            ) -> None:
    why = refusal(principal, declared, dry_run_asked)
    if why is not None:
        raise ApiError(403, "forbidden", why)


def install(app: Flask, tokens: TokenTable) -> None:
    """Check every request against its route's declaration (app/permissions.py); call once every
    route is registered: a route without a declaration refuses the start here."""
    app.extensions["hypd.tokens"] = tokens
    declared = permissions.declarations(app)
    app.extensions["hypd.access"] = declared

    @app.before_request
    def _authorize() -> None:
        rule = request.url_rule
        if rule is None:  # no such route (404) or method (405): still not without a token
            if request.path.startswith("/api/"):
                g.principal = authenticate(tokens, bearer(request.headers.get("Authorization")))
            return
        method = "GET" if request.method == "HEAD" else request.method
        needs = declared.get((rule.endpoint, method))
        if needs is None:  # OPTIONS: Flask answers it with the allowed methods
            needs = permissions.Access(Role.VIEWER)
        if needs.role == PUBLIC or needs.websocket:
            return  # a socket authenticates with its first message, against `needs`
        # the header as the WSGI environ holds it: what `request.headers` would look up
        principal = authenticate(tokens, bearer(request.environ.get("HTTP_AUTHORIZATION")))
        g.principal = principal
        asked = needs.dry_run and permissions.dry_run_asked(request.args)
        g.dry_run = asked
        require(principal, needs, asked)


def declared(endpoint: str, method: str) -> permissions.Access:
    """What a route declares (the WebSocket allows an action by its REST twin's)."""
    return current_app.extensions["hypd.access"][(endpoint, method)]


def current() -> Principal:
    return g.principal


def members(team: str) -> list[str]:
    """The names of this app's tokens in `team`."""
    return current_app.extensions["hypd.tokens"].members(team)


def dry_run() -> bool:
    """Whether this request is a dry run its route's declaration opens to viewers: let in
    on a viewer's token because it changes nothing."""
    return bool(g.get("dry_run"))
