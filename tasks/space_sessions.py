"""Who may reach a Dev space's editor through hypd's spaces router: one-use sign-in codes and
the sessions they open, kept in Redis so that any web process mints and any router process
honours them.

Why a code and then a cookie, not a token in the link (issue 24, "no secret or token appears in
a URL that is logged"): the dashboard asks for a code with its bearer token, and posts it in a
form to the router (`<space>/_hypd/session`), which swaps it for a session cookie scoped to the
space's path. A code lives 30 s and is used once; a session lives 12 h and opens one space
only. Redis holds the SHA-256 of each secret, never the secret, so a copy of the database
signs nobody in.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import asdict, dataclass

import redis

CODE_TTL_S = 30
SESSION_TTL_S = 12 * 3600
COOKIE = "hypd_space"
"""The session cookie's name (HttpOnly, Path=the space's base path)."""
SESSION_PATH = "_hypd/session"
"""Under a space's base path: where the sign-in form posts its code (no editor serves
`_hypd/`)."""


@dataclass(frozen=True)
class SpaceDoor:
    """What a code or a session opens: one space of one cluster, for one hypd token."""

    cluster: str
    region: str
    namespace: str
    name: str
    uid: str
    """The Workspace's uid when the code was minted: a space deleted and made again under the
    same name (by another token, maybe) is another space, which this session does not open."""
    who: str
    """The token's name that signed in (the audit's and the router's log's who)."""

    def same_space(self, cluster: str, namespace: str, name: str) -> bool:
        return (self.cluster, self.namespace, self.name) == (cluster, namespace, name)


def _key(kind: str, secret: str) -> str:
    return f"hypd:space-{kind}:{hashlib.sha256(secret.encode()).hexdigest()}"


def _door(raw: str | bytes | None) -> SpaceDoor | None:
    if raw is None:
        return None
    try:
        return SpaceDoor(**json.loads(raw))
    except (TypeError, ValueError):
        return None


def _keep(conn: redis.Redis, kind: str, door: SpaceDoor, ttl_s: int) -> str:
    """A new secret for the door, kept (hashed) for `ttl_s`."""
    secret = secrets.token_urlsafe(32)
    conn.set(_key(kind, secret), json.dumps(asdict(door)), ex=ttl_s)
    return secret


def _valid(secret: str) -> bool:
    return bool(secret) and len(secret) <= 128


def mint_code(conn: redis.Redis, door: SpaceDoor) -> str:
    return _keep(conn, "code", door, CODE_TTL_S)


def redeem(conn: redis.Redis, code: str) -> SpaceDoor | None:
    """The door a code opens, once: a second use, or one after 30 s, finds nothing."""
    return _door(conn.getdel(_key("code", code))) if _valid(code) else None


def open_session(conn: redis.Redis, door: SpaceDoor) -> str:
    return _keep(conn, "session", door, SESSION_TTL_S)


def session(conn: redis.Redis, secret: str) -> SpaceDoor | None:
    return _door(conn.get(_key("session", secret))) if _valid(secret) else None
