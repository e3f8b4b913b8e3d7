"""Imported clusters: EKS (and HyperPod) clusters hypd did not create but may use.

The registry is one of the panel's own records (DESIGN.md: what Redis holds). An imported
cluster is read-only to hypd's lifecycle: forgetting it never touches AWS.
"""

from __future__ import annotations

import json
from typing import Any

import redis

KEY = "hypd:imported-clusters"


def remember(conn: redis.Redis, name: str, region: str, hyperpod_cluster: str | None,
             by: str) -> None:
    conn.hset(KEY, name, json.dumps({"name": name, "region": region,
                                     "hyperpod_cluster": hyperpod_cluster, "imported_by": by}))


def get(conn: redis.Redis, name: str) -> dict[str, Any] | None:
    raw = conn.hget(KEY, name)
    return json.loads(raw) if raw else None


def imported(conn: redis.Redis) -> list[dict[str, Any]]:
    return [json.loads(v) for _, v in sorted(conn.hgetall(KEY).items())]


def forget(conn: redis.Redis, name: str) -> bool:
    return bool(conn.hdel(KEY, name))
