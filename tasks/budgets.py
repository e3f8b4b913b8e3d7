"""A cluster's monthly budget: a panel record, like the active cluster (tasks/active.py).

Kept in Redis by cluster name, so every web process and worker sees the same budget; and,
per month, the warnings already raised (threshold → when), so that each crossing is raised
once however many reads and checks see it. A budget set anew clears this month's raised
warnings: the new figure warns again at its own thresholds. A deleted or forgotten cluster's
budget goes with it.
"""

from __future__ import annotations

from typing import Any

import redis

RAISED_KEPT_S = 40 * 24 * 3600
"""A month's raised warnings are kept a little longer than the month."""


def _key(cluster: str) -> str:
    return f"hypd:budget:{cluster}"


def _raised_key(cluster: str, month: str) -> str:
    return f"hypd:budget-raised:{cluster}:{month}"


def set_budget(conn: redis.Redis, cluster: str, monthly_usd: float, by: str, at: str,
               month: str) -> dict[str, Any]:
    record = {"monthly_usd": repr(float(monthly_usd)), "set_by": by, "set_at": at}
    with conn.pipeline() as pipe:
        pipe.hset(_key(cluster), mapping=record)
        pipe.delete(_raised_key(cluster, month))
        pipe.execute()
    return get_budget(conn, cluster) or {}


def get_budget(conn: redis.Redis, cluster: str) -> dict[str, Any] | None:
    """{monthly_usd, set_by, set_at}, or None when the cluster has no budget."""
    record = conn.hgetall(_key(cluster))
    if not record:
        return None
    return {**record, "monthly_usd": float(record["monthly_usd"])}


def clear(conn: redis.Redis, cluster: str) -> bool:
    """Forget the cluster's budget and its raised warnings; True if it had one."""
    had = bool(conn.delete(_key(cluster)))
    for key in conn.scan_iter(_raised_key(cluster, "*")):
        conn.delete(key)
    return had


def budgeted(conn: redis.Redis) -> list[str]:
    """The clusters that have a budget."""
    prefix = _key("")
    return sorted(key[len(prefix):] for key in conn.scan_iter(_key("*")))


def raise_once(conn: redis.Redis, cluster: str, month: str, threshold: float,
               at: str) -> bool:
    """Mark the warning at `threshold` raised this month; True only for the first caller."""
    key = _raised_key(cluster, month)
    first = bool(conn.hsetnx(key, repr(threshold), at))
    if first:
        conn.expire(key, RAISED_KEPT_S)
    return first


def raised(conn: redis.Redis, cluster: str, month: str) -> dict[float, str]:
    """The warnings raised this month: threshold → when."""
    return {float(k): v for k, v in conn.hgetall(_raised_key(cluster, month)).items()}
