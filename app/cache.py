"""Read caches in Redis, so repeated looks at slow-changing AWS facts are fast: seconds for a
node listing, minutes for instance types, a day for list prices."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypeVar

from app import context

T = TypeVar("T")


def cached(key: str, ttl_s: int, load: Callable[[], T]) -> T:
    conn = context.redis_conn()
    full_key = f"hypd:cache:{key}"
    raw = conn.get(full_key)
    if raw is not None:
        return json.loads(raw)
    value = load()
    conn.set(full_key, json.dumps(value), ex=ttl_s)
    return value
