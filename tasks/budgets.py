"""Monthly budgets: a panel record, like the active cluster (tasks/active.py).

A budget is of a *subject*: a cluster (`<cluster>`) or one of its teams
(`<cluster>/<team>`, `subject()`); names never hold a `/`, so the two cannot meet. Kept in
Redis by subject, so every web process and worker sees the same budget; and, per month, the
warnings already raised (threshold → when), so that each crossing is raised once however
many reads and checks see it. A budget set anew clears this month's raised warnings: the
new figure warns again at its own thresholds. A deleted or forgotten cluster's budgets (its
own and its teams') go with it (`forget_cluster`).
"""

from __future__ import annotations

from typing import Any

import redis

RAISED_KEPT_S = 40 * 24 * 3600
"""A month's raised warnings are kept a little longer than the month."""
SEPARATOR = "/"


def subject(cluster: str, team: str | None = None) -> str:
    """What a budget is of: the cluster, or its team."""
    return f"{cluster}{SEPARATOR}{team}" if team else cluster


def split(of: str) -> tuple[str, str | None]:
    """(cluster, team or None) of a subject."""
    cluster, _, team = of.partition(SEPARATOR)
    return cluster, team or None


def _key(of: str) -> str:
    return f"hypd:budget:{of}"


def _raised_key(of: str, month: str) -> str:
    return f"hypd:budget-raised:{of}:{month}"


def set_budget(conn: redis.Redis, of: str, monthly_usd: float, by: str, at: str,
               month: str) -> dict[str, Any]:
    record = {"monthly_usd": repr(float(monthly_usd)), "set_by": by, "set_at": at}
    with conn.pipeline() as pipe:
        pipe.hset(_key(of), mapping=record)
        pipe.delete(_raised_key(of, month))
        pipe.execute()
    return get_budget(conn, of) or {}


def get_budget(conn: redis.Redis, of: str) -> dict[str, Any] | None:
    """{monthly_usd, set_by, set_at}, or None when the subject has no budget."""
    record = conn.hgetall(_key(of))
    if not record:
        return None
    return {**record, "monthly_usd": float(record["monthly_usd"])}


def clear(conn: redis.Redis, of: str) -> bool:
    """Forget the subject's budget and its raised warnings; True if it had one."""
    had = bool(conn.delete(_key(of)))
    for key in conn.scan_iter(_raised_key(of, "*")):
        conn.delete(key)
    return had


def forget_cluster(conn: redis.Redis, cluster: str) -> None:
    """A cluster that goes takes its budget and its teams' budgets with it."""
    clear(conn, cluster)
    for of in budgeted(conn):
        if split(of)[0] == cluster:
            clear(conn, of)


def budgeted(conn: redis.Redis) -> list[str]:
    """The subjects that have a budget."""
    prefix = _key("")
    return sorted(key[len(prefix):] for key in conn.scan_iter(_key("*")))


def raise_once(conn: redis.Redis, of: str, month: str, threshold: float, at: str) -> bool:
    """Mark the warning at `threshold` raised this month; True only for the first caller."""
    key = _raised_key(of, month)
    first = bool(conn.hsetnx(key, repr(threshold), at))
    if first:
        conn.expire(key, RAISED_KEPT_S)
    return first


def raised(conn: redis.Redis, of: str, month: str) -> dict[float, str]:
    """The warnings raised this month: threshold → when."""
    return {float(k): v for k, v in conn.hgetall(_raised_key(of, month)).items()}
