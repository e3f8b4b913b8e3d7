"""The active cluster: a per-token default, not one global switch (DESIGN.md: Auth).

Kept in Redis by token name, so every web process and worker sees the same choice; the
create pipeline's `activate` stage sets it for the token that asked for the cluster.
"""

from __future__ import annotations

import redis


def _key(token_name: str) -> str:
    return f"hypd:active-cluster:{token_name}"


def set_active(conn: redis.Redis, token_name: str, cluster: str) -> None:
    conn.set(_key(token_name), cluster)


def get_active(conn: redis.Redis, token_name: str) -> str | None:
    return conn.get(_key(token_name))


def clear_everywhere(conn: redis.Redis, cluster: str) -> None:
    """Forget a deleted cluster for every token whose active cluster it was."""
    for key in conn.scan_iter(_key("*")):
        if conn.get(key) == cluster:
            conn.delete(key)
