"""Operation records, locks, idempotency records and events in Redis.

Every change to an operation goes through `OperationStore.update`: one optimistic
transaction (WATCH the record, MULTI/EXEC) that checks the caller's generation, writes the
record and appends its events to the operation's stream and the firehose. So a phase change
and its event are never apart, and a stale task can never overwrite a newer one.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import redis

from cloud.metrics import OPERATIONS
from tasks.engine.errors import Conflict, IdempotencyKeyReused, OperationNotFound
from tasks.engine.locks import LOCKS_KEY, conflicting_holders
from tasks.engine.model import now_iso, public_view
from vocabulary.operations import OpStatus

OPS_INDEX = "hypd:ops"
DUE_INDEX = "hypd:due"
"""Unfinished operations by when their next task is due (the record's `next_run_at`), kept
in the same transaction as the record: what the sweeper reads instead of every record."""
FIREHOSE = "hypd:events"
FIREHOSE_MAXLEN = 10_000
EVENTS_TTL_AFTER_FINISH_S = 7 * 24 * 3600
IDEMPOTENCY_TTL_S = 24 * 3600
"""How long an Idempotency-Key is kept: the default, and the most a client may ask for."""
BLOCK_SLICE_MS = 2000

Event = dict[str, Any]
Mutator = Callable[[dict[str, Any]], list[Event] | None]


def op_key(op_id: str) -> str:
    return f"hypd:op:{op_id}"


def events_key(op_id: str) -> str:
    return f"hypd:events:{op_id}"


def view_key(op_id: str) -> str:
    return f"hypd:view:{op_id}"


def lease_key(op_id: str) -> str:
    return f"hypd:lease:{op_id}"


@dataclass(frozen=True)
class IdempotencyClaim:
    """An Idempotency-Key as scoped by the contract: token name + method + path, kept
    `ttl_s` seconds (the request says how long, within IDEMPOTENCY_TTL_S)."""

    key: str
    scope: str
    body: Any
    ttl_s: int = IDEMPOTENCY_TTL_S

    @property
    def redis_key(self) -> str:
        digest = hashlib.sha256(f"{self.scope}\n{self.key}".encode()).hexdigest()
        return f"hypd:idem:{digest}"

    @property
    def body_hash(self) -> str:
        canonical = json.dumps(self.body, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(canonical.encode()).hexdigest()


class StaleGeneration(Exception):
    """The caller's generation is not the stored one: a newer task owns the operation."""


class OperationStore:
    def __init__(self, client: redis.Redis) -> None:
        self.redis = client

    # reads -----------------------------------------------------------------------------

    def get(self, op_id: str) -> dict[str, Any] | None:
        raw = self.redis.get(op_key(op_id))
        return json.loads(raw) if raw else None

    def require(self, op_id: str) -> dict[str, Any]:
        op = self.get(op_id)
        if op is None:
            raise OperationNotFound(f"no operation {op_id!r}", {"operation_id": op_id})
        return op

    def read_view(self, op_id: str) -> str | None:
        """The operation's public view as JSON text, or None when there is no such
        operation. One GET: this is the status read every client polls."""
        rendered = self.redis.get(view_key(op_id))
        if rendered is not None:
            return rendered
        op = self.get(op_id)  # recorded before views were rendered
        return None if op is None else json.dumps(public_view(op, self.last_event_id(op_id)))

    def last_event_id(self, op_id: str) -> str | None:
        newest = self.redis.xrevrange(events_key(op_id), count=1)
        return newest[0][0] if newest else None

    def list(
        self,
        status: str | None = None,
        kind: str | None = None,
        target: str | None = None,
        limit: int = 50,
    ) -> list[dict[str, Any]]:
        """Newest first. Filters run here: the panel's own records are few."""
        found: list[dict[str, Any]] = []
        offset, page = 0, 200
        while len(found) < limit:
            ids = self.redis.zrevrange(OPS_INDEX, offset, offset + page - 1)
            if not ids:
                break
            offset += page
            raws = self.redis.mget([op_key(i) for i in ids])
            for raw in raws:
                if not raw:
                    continue
                op = json.loads(raw)
                if status and op["status"] != status:
                    continue
                if kind and op["kind"] != kind:
                    continue
                if target and not (op["target"] == target or op["target"].startswith(target + "/")):
                    continue
                found.append(op)
                if len(found) >= limit:
                    break
        return found

    def newest_by_child(self, parent: str, kinds: Collection[str] | None = None, *,
                        unfinished: bool = False, limit: int = 500) -> dict[str, dict[str, Any]]:
        """The newest operation on each child of `parent`, by child name: for
        `cluster/c/storage`, {"data": <newest op on cluster/c/storage/data or below>, ...}.
        `kinds` keeps only those kinds. A read model shows each item with the operation
        changing it (or that last changed it), so this is the one place that walks the
        records for it.

        `unfinished` keeps only the running ones, read from the lock table instead of the
        records: a live operation holds its target's lock, and locks exclude ancestors and
        descendants, so each child has at most one."""
        prefix = parent.rstrip("/") + "/"
        found: dict[str, dict[str, Any]] = {}
        ops = live_operations(self.redis, prefix) if unfinished else \
            self.list(target=prefix[:-1], limit=limit)
        for op in ops:
            if not op["target"].startswith(prefix) or (kinds is not None and
                                                       op["kind"] not in kinds):
                continue
            found.setdefault(op["target"][len(prefix):].split("/", 1)[0], op)
        return found

    def events(
        self, op_id: str, after: str | None = None, block_ms: int | None = None, count: int = 200
    ) -> list[tuple[str, Event]]:
        """Events after `after` ("0" or None: from the start); with block_ms, wait for one."""
        start = after or "0"
        if block_ms is not None:
            # Block in slices shorter than the client's socket timeout (redis-py: 5 s).
            deadline = time.monotonic() + block_ms / 1000
            entries = []
            while True:
                slice_ms = max(1, min(BLOCK_SLICE_MS, int((deadline - time.monotonic()) * 1000)))
                reply = self.redis.xread({events_key(op_id): start}, count=count, block=slice_ms)
                entries = reply[0][1] if reply else []
                if entries or time.monotonic() >= deadline:
                    break
        else:
            entries = self.redis.xrange(events_key(op_id), min=f"({start}" if after else "-",
                                        count=count)
        return [(entry_id, json.loads(fields["data"])) for entry_id, fields in entries]

    def replay(self, claim: IdempotencyClaim) -> dict[str, Any] | None:
        """The operation a recorded Idempotency-Key made, or None for a new key."""
        existing = self.redis.get(claim.redis_key)
        if not existing:
            return None
        record = json.loads(existing)
        if record["body_hash"] != claim.body_hash:
            raise IdempotencyKeyReused(
                "this Idempotency-Key was already used with a different request body; "
                "use a new key for a new request",
                {"operation_id": record["operation_id"]},
            )
        return self.require(record["operation_id"])

    def ensure_target_free(self, target: str) -> None:
        """Raise Conflict naming the running operation, if any, that holds `target` (or an
        ancestor or descendant). A read-only early answer; `create` checks again."""
        self._check_lock_free(self.redis, target)

    # writes ----------------------------------------------------------------------------

    def create(
        self, op: dict[str, Any], claim: IdempotencyClaim | None
    ) -> tuple[dict[str, Any], bool]:
        """Record a new operation, its lock and its idempotency record in one transaction.

        Answers (operation, created). A replayed Idempotency-Key answers the operation it
        first made; a conflicting target raises Conflict naming the running operation.
        """
        watched = [LOCKS_KEY] + ([claim.redis_key] if claim else [])
        while True:
            with self.redis.pipeline() as pipe:
                try:
                    pipe.watch(*watched)
                    if claim and pipe.exists(claim.redis_key):
                        pipe.unwatch()
                        replayed = self.replay(claim)
                        if replayed is not None:
                            return replayed, False
                        continue  # the record expired just now: start over
                    stale = self._check_lock_free(pipe, op["target"])
                    pipe.multi()
                    for path in stale:
                        pipe.hdel(LOCKS_KEY, path)
                    pipe.hset(LOCKS_KEY, op["target"], op["id"])
                    pipe.set(op_key(op["id"]), json.dumps(op))
                    pipe.zadd(OPS_INDEX, {op["id"]: _score(op["id"])})
                    pipe.zadd(DUE_INDEX, {op["id"]: op["next_run_at"]})
                    if claim:
                        record = {"body_hash": claim.body_hash, "operation_id": op["id"]}
                        pipe.set(claim.redis_key, json.dumps(record), ex=claim.ttl_s)
                    last = self._append_events(pipe, op, [_op_event(op, "created")], None)
                    self._write_view(pipe, op, last)
                    pipe.execute()
                    OPERATIONS.labels(op["kind"], op["status"]).inc()
                    return op, True
                except redis.WatchError:
                    continue

    def update(
        self, op_id: str, mutate: Mutator, generation: int | None = None
    ) -> dict[str, Any]:
        """Apply `mutate` to the stored record and append the events it returns.

        With `generation`, raises StaleGeneration unless it is the stored one. A change
        into a finished status releases the target's lock in the same transaction; a change
        out of one (retry) takes it again, or raises Conflict.
        """
        key = op_key(op_id)
        while True:
            with self.redis.pipeline() as pipe:
                try:
                    pipe.watch(key, LOCKS_KEY)
                    raw = pipe.get(key)
                    if not raw:
                        raise OperationNotFound(f"no operation {op_id!r}", {"operation_id": op_id})
                    op = json.loads(raw)
                    if generation is not None and op["generation"] != generation:
                        raise StaleGeneration(op_id)
                    status_before = op["status"]
                    was_finished = OpStatus(status_before).is_finished
                    due_before = op.get("next_run_at")
                    events = mutate(op) or []
                    op["version"] += 1
                    op["updated_at"] = now_iso()
                    finished = OpStatus(op["status"]).is_finished
                    stale: list[str] = []
                    if was_finished and not finished:
                        stale = self._check_lock_free(pipe, op["target"])
                    holder = pipe.hget(LOCKS_KEY, op["target"])
                    newest = pipe.xrevrange(events_key(op_id), count=1)  # watched with op
                    pipe.multi()
                    pipe.set(key, json.dumps(op))
                    if finished and not was_finished:
                        if holder == op["id"]:  # only this operation's own lock entry
                            pipe.hdel(LOCKS_KEY, op["target"])
                        pipe.expire(events_key(op_id), EVENTS_TTL_AFTER_FINISH_S)
                    if was_finished and not finished:
                        for path in stale:
                            pipe.hdel(LOCKS_KEY, path)
                        pipe.hset(LOCKS_KEY, op["target"], op["id"])
                        pipe.persist(events_key(op_id))
                    if finished:
                        pipe.zrem(DUE_INDEX, op_id)
                    elif op.get("next_run_at") is not None and (
                            was_finished or op["next_run_at"] != due_before):
                        pipe.zadd(DUE_INDEX, {op_id: op["next_run_at"]})
                    last = self._append_events(pipe, op, events,
                                               newest[0][0] if newest else None)
                    self._write_view(pipe, op, last)
                    pipe.execute()
                    if op["status"] != status_before:
                        OPERATIONS.labels(op["kind"], op["status"]).inc()
                    return op
                except redis.WatchError:
                    continue

    def due(self, until: float, limit: int = 100) -> list[tuple[str, float]]:
        """Unfinished operations whose next task was due at or before `until` (epoch
        seconds), earliest first, with their due times."""
        return self.redis.zrangebyscore(DUE_INDEX, "-inf", until, start=0, num=limit,
                                        withscores=True)

    def index_unscheduled(self) -> int:
        """Put unfinished operations that have no due time (recorded before hypd kept one)
        into the due index, as due when last updated. Answers how many; run once per worker
        start, so an operation stranded before an upgrade is picked up too."""
        added = 0
        for op in self.list(limit=10**9):
            if OpStatus(op["status"]).is_finished or op.get("next_run_at") is not None:
                continue
            since = datetime.fromisoformat(op["updated_at"].replace("Z", "+00:00"))
            added += self.redis.zadd(DUE_INDEX, {op["id"]: since.timestamp()}, nx=True)
        return added

    # helpers ---------------------------------------------------------------------------

    def _check_lock_free(self, pipe: Any, target: str) -> list[str]:
        """Raise Conflict if a live operation holds a conflicting target; answer the
        conflicting lock entries whose operations have finished (stale, to be dropped)."""
        held = pipe.hgetall(LOCKS_KEY)
        stale: list[str] = []
        for path, holder_id in conflicting_holders(target, held).items():
            holder_raw = pipe.get(op_key(holder_id))
            holder = json.loads(holder_raw) if holder_raw else None
            if holder is None or OpStatus(holder["status"]).is_finished:
                stale.append(path)
                continue
            raise Conflict(
                f"{path} is busy with operation {holder_id} ({holder['kind']}, "
                f"{holder['status']}); wait for it to finish or cancel it",
                {"operation_id": holder_id, "target": path, "kind": holder["kind"]},
            )
        return stale

    def _append_events(self, pipe: Any, op: dict[str, Any], events: Iterable[Event],
                       newest: str | None) -> str | None:
        """Queue the events on the operation's stream and the firehose; answer the id of the
        operation's newest event once they are written.

        The operation's stream gets ids chosen here, not by Redis, so the rendered view
        written in the same transaction can carry its `last_event_id`. They stay ordered:
        every writer of this stream is a transaction watching the operation's record, and
        `newest` was read under that watch."""
        last = newest
        for event in events:
            event = {"op_id": op["id"], "at": now_iso(), **event}
            data = json.dumps(event)
            last = _next_event_id(last)
            pipe.xadd(events_key(op["id"]), {"data": data}, id=last)
            pipe.xadd(FIREHOSE, {"data": data}, maxlen=FIREHOSE_MAXLEN, approximate=True)
        return last

    def _write_view(self, pipe: Any, op: dict[str, Any], last_event_id: str | None) -> None:
        """The operation as a status read answers it, rendered once per change (a read is
        then one GET: no decoding, no schema dump)."""
        pipe.set(view_key(op["id"]), json.dumps(public_view(op, last_event_id)))


def live_operations(client: redis.Redis, prefix: str) -> list[dict[str, Any]]:
    """The unfinished operations holding a lock on `prefix` or below it (e.g. every
    feature toggle of a cluster: `cluster/<c>/feature/`), from the lock table: for a step
    that must not undo what a concurrent operation on a sibling target is doing."""
    found = []
    for path, op_id in client.hgetall(LOCKS_KEY).items():
        if not path.startswith(prefix):
            continue
        raw = client.get(op_key(op_id))
        op = json.loads(raw) if raw else None
        if op is not None and not OpStatus(op["status"]).is_finished:
            found.append(op)
    return found


def _next_event_id(after: str | None) -> str:
    """A stream id after `after`: now in milliseconds, or `after`'s time with the next
    sequence number when the clock has not moved past it (or went back)."""
    now_ms = int(time.time() * 1000)
    if after is None:
        return f"{now_ms}-0"
    ms, seq = (int(part) for part in after.split("-"))
    return f"{now_ms}-0" if now_ms > ms else f"{ms}-{seq + 1}"


def _score(op_id: str) -> float:
    # ULID ids sort by time; the millisecond prefix is a fine score.
    return float(_ulid_ms(op_id))


def _ulid_ms(op_id: str) -> int:
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    value = 0
    for ch in op_id.removeprefix("op_")[:10]:
        value = value * 32 + alphabet.index(ch)
    return value


def _op_event(op: dict[str, Any], what: str) -> Event:
    return {"type": "operation", "status": op["status"], "detail": what}


def op_event(op: dict[str, Any], detail: str | None = None) -> Event:
    return {"type": "operation", "status": op["status"], "detail": detail}


def step_event(step: dict[str, Any]) -> Event:
    return {
        "type": "step",
        "step": step["name"],
        "phase": step["phase"],
        "attempts": step["attempts"],
        "detail": step["detail"],
        "resources": step["resources"],
    }
