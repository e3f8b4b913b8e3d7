"""What teams' admitted work used, kept so that it outlives the work: a panel record.

Kueue's Workloads vanish with their jobs, and a preempted Workload loses its admission, so
a cost read cannot find last week's work in the cluster. Each look at a cluster's admitted
work (app/readmodels/team_cost.py: every cost read, and each turn of app/budget_watch.py)
writes, per admitted Workload and instance type, one *entry*: the team, the instance type,
its share of nodes (node-hours by dominant share per hour), when Kueue admitted it and when
it was last seen admitted. An entry is keyed by the Workload's uid, its `Admitted`
condition's lastTransitionTime and the instance type, so a re-admission after a preemption
is a new entry and a repeated look (a retried turn, two processes at once) rewrites the same
state, never adds; and a look that ends after a later one (two processes at once) never moves
an entry's "last seen" back: the write is a compare-and-set on it.

Redis keys: `hypd:team-ledger:<cluster>:<YYYY-MM>`, a hash of entry key → JSON, holding
every entry that overlaps that month (an entry spanning two months is in both); each write
keeps the hash `KEPT_S` (40 days) longer. `hypd:team-clusters`, a set of the clusters that
have teams, kept by the team operations and reads, so the watcher looks only at those.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

import redis

KEPT_S = 40 * 24 * 3600
CLUSTERS_KEY = "hypd:team-clusters"


@dataclass(frozen=True)
class Entry:
    """One admitted Workload's share of nodes of one instance type over an interval."""

    uid: str
    admitted_at: str
    team: str
    instance_type: str
    share: float
    """nodes of the type it holds, by dominant share"""
    seen_at: str
    """the last time it was seen admitted (or when it finished)"""

    @property
    def key(self) -> str:
        return f"{self.uid}@{self.admitted_at}@{self.instance_type}"


def _key(cluster: str, month: str) -> str:
    return f"hypd:team-ledger:{cluster}:{month}"


def _months(start: str, end: str) -> list[str]:
    """The months (YYYY-MM) from `start`'s to `end`'s, at most the last two: an older
    month's hash is no longer read."""
    first, last = _moment(start), _moment(end)
    months = [f"{last.year:04}-{last.month:02}"]
    if (first.year, first.month) < (last.year, last.month):
        previous = (last.year, last.month - 1) if last.month > 1 else (last.year - 1, 12)
        months.append(f"{previous[0]:04}-{previous[1]:02}")
    return months


def record(conn: redis.Redis, cluster: str, entries: Iterable[Entry]) -> None:
    """Write each entry's state into every month it overlaps (idempotent), unless the hash
    holds it seen later."""
    by_month: dict[str, dict[str, Entry]] = defaultdict(dict)
    for entry in entries:
        for month in _months(entry.admitted_at, entry.seen_at):
            by_month[_key(cluster, month)][entry.key] = entry
    for key, fresh in by_month.items():
        _merge(conn, key, fresh)


def _merge(conn: redis.Redis, key: str, fresh: Mapping[str, Entry]) -> None:
    """Write the entries not already seen later, as one transaction on the hash (retried
    when another writer changed it between the read and the write)."""
    fields = list(fresh)
    with conn.pipeline() as pipe:
        while True:
            try:
                pipe.watch(key)
                held = pipe.hmget(key, fields)
                newer = {field: json.dumps(asdict(fresh[field]))
                         for field, raw in zip(fields, held, strict=True)
                         if raw is None or _moment(json.loads(raw)["seen_at"])
                         <= _moment(fresh[field].seen_at)}
                pipe.multi()
                if newer:
                    pipe.hset(key, mapping=newer)
                pipe.expire(key, KEPT_S)
                pipe.execute()
                return
            except redis.WatchError:
                continue


def entries(conn: redis.Redis, cluster: str, month: str) -> list[Entry]:
    """Every entry overlapping the month (YYYY-MM)."""
    return [Entry(**json.loads(raw)) for raw in conn.hgetall(_key(cluster, month)).values()]


def mark(conn: redis.Redis, cluster: str) -> None:
    """The cluster has teams: the watcher records their work."""
    conn.sadd(CLUSTERS_KEY, cluster)


def unmark(conn: redis.Redis, cluster: str) -> None:
    conn.srem(CLUSTERS_KEY, cluster)


def clusters(conn: redis.Redis) -> list[str]:
    return sorted(conn.smembers(CLUSTERS_KEY))


def _moment(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
