"""Keeping a running step's lease and mutexes alive for as long as it really runs.

Leases and mutexes expire, so that a killed worker never stalls an operation or a VPC for
long; but a live step may take longer than one expiry (AWS throttling with back-off, a slow
API). A daemon thread in the worker process renews them while the step runs: a broker
redelivery of the same task then finds the lease held and backs off instead of running the
step a second time beside it. When the process dies, renewal stops with it, the lease runs
out within one TTL (`HYPD_LEASE_S`), and the sweeper (tasks/engine/sweeper.py) picks the
operation up again.
"""

from __future__ import annotations

import contextlib
import logging
import threading

import redis

log = logging.getLogger(__name__)

# Extend the lease if it still holds our token; take it back if it lapsed (a beat came late,
# e.g. the process was starved of CPU) and nobody else holds it: the step is still running,
# so the lease must say so, or the sweeper would see a stalled operation. Never touch
# someone else's lease (answers 0 then).
_EXTEND = """
local holder = redis.call('get', KEYS[1])
if holder == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
if not holder then
  redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 2
end
return 0
"""


class Heartbeat:
    def __init__(self, conn: redis.Redis, key: str, token: str, ttl_ms: int) -> None:
        self._conn = conn
        self._key = key
        self._token = token
        self._ttl_ms = ttl_ms
        self._locks: list[redis.lock.Lock] = []
        self._guard = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat:{key}", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def hold(self, lock: redis.lock.Lock) -> None:
        with self._guard:
            self._locks.append(lock)

    def drop(self, lock: redis.lock.Lock) -> None:
        with self._guard, contextlib.suppress(ValueError):
            self._locks.remove(lock)

    def beat(self) -> None:
        renewed = None
        with contextlib.suppress(redis.RedisError):
            renewed = self._conn.eval(_EXTEND, 1, self._key, self._token, self._ttl_ms)
        if renewed == 2:
            log.warning("%s had lapsed while its step ran (a late beat); taken back", self._key)
        elif renewed == 0:
            log.warning("%s is held by another execution; this step runs unguarded", self._key)
        with self._guard:
            locks = list(self._locks)
        for lock in locks:
            with contextlib.suppress(redis.RedisError, redis.exceptions.LockError):
                lock.reacquire()

    def _run(self) -> None:
        while not self._stop.wait(self._ttl_ms / 3000):
            try:
                self.beat()
            except Exception:  # a heartbeat that dies lets a duplicate run beside the step
                log.exception("heartbeat of %s failed; renewing again next beat", self._key)
