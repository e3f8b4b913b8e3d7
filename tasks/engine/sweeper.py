"""Picking up operations that nothing is advancing any more.

Two things strand an operation: its worker dies (the running step's task, or a countdown
task the dead worker held in memory, comes back from the broker only after the visibility
timeout, minutes), or the web process dies between recording an operation and enqueuing its
first task (nothing would ever come back). The sweeper finds both in seconds and re-kicks
them: it enqueues `advance(op_id, stored generation)`, the same task the engine sends, so the
engine's fences decide what happens — generation (a stale or duplicate task does nothing)
and the lease (a task never runs beside a live one). A kick can therefore never run a step
twice; at worst it is one more duplicate, which the engine drops.

An operation is *stalled* when all of these hold:
- it is unfinished (only unfinished operations are in the due index, `hypd:due`);
- its next task was due (`next_run_at`, written whenever the engine enqueues one) more than
  `grace_s` ago — so an operation waiting on a countdown is left alone until it is due, and
  one whose task is merely queued behind busy workers gets `grace_s` to start;
- nobody holds its lease — a running step's lease is renewed by its heartbeat, so a held
  lease means a live worker is on it, however long the step takes.

It is kicked at most once per `grace_s` (`hypd:kick:<id>`, SET NX), and one worker sweeps per
interval (`hypd:sweeper`, SET NX with the interval as expiry), wherever the workers run.
Correctness never depends on clocks: a skewed clock only makes a kick early (a harmless
duplicate) or late.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable

from cloud.metrics import SWEEPER_PICKUPS
from tasks.engine.store import DUE_INDEX, OperationStore, lease_key
from vocabulary.operations import OpStatus

log = logging.getLogger(__name__)

SWEEP_LOCK = "hypd:sweeper"
BATCH = 200

Enqueue = Callable[[str, int, float], None]


def kick_key(op_id: str) -> str:
    return f"hypd:kick:{op_id}"


class Sweeper:
    def __init__(self, store: OperationStore, enqueue: Enqueue, *, grace_s: float,
                 interval_s: float, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.enqueue = enqueue
        self.grace_s = grace_s
        self.interval_s = interval_s
        self.clock = clock
        self.name = f"{socket.gethostname()}:{os.getpid()}"

    def sweep_if_turn(self) -> list[str] | None:
        """Sweep unless another sweeper (any process, any machine) did this interval;
        answers the kicked ids, or None when it was not this one's turn."""
        ttl_ms = max(1, int(self.interval_s * 1000))
        if not self.store.redis.set(SWEEP_LOCK, self.name, nx=True, px=ttl_ms):
            return None
        return self.sweep()

    def sweep(self) -> list[str]:
        """Kick every stalled operation; answers their ids."""
        now = self.clock()
        kicked = []
        for op_id, _due in self.store.due(now - self.grace_s, limit=BATCH):
            if self.store.redis.exists(lease_key(op_id)):
                continue  # a live worker is on it
            op = self.store.get(op_id)
            if op is None:
                self.store.redis.zrem(DUE_INDEX, op_id)  # a record can never come back
                continue
            if OpStatus(op["status"]).is_finished:
                continue
            due = op.get("next_run_at")
            if due is not None and due + self.grace_s > now:
                continue  # it moved on since the index was read
            grace_ms = max(1, int(self.grace_s * 1000))
            if not self.store.redis.set(kick_key(op_id), op["generation"], nx=True, px=grace_ms):
                continue  # kicked within this grace period already
            self.enqueue(op_id, op["generation"], 0)
            kicked.append(op_id)
            SWEEPER_PICKUPS.inc()
            log.warning("operation %s (%s, %s) was stalled (no live worker on it, due %.1f s "
                        "ago): re-kicked at generation %s", op_id, op["kind"], op["status"],
                        now - due if due is not None else float("nan"), op["generation"])
        return kicked


class SweeperThread:
    """Runs a Sweeper every interval in a daemon thread of a worker's main process (never
    inside a task: tasks do not wait). Every worker runs one; the sweep lock lets one of
    them sweep per interval."""

    def __init__(self, sweeper: Sweeper) -> None:
        self.sweeper = sweeper
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hypd-sweeper", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        try:
            added = self.sweeper.store.index_unscheduled()
            if added:
                log.info("sweeper: %s unfinished operations from before due times indexed",
                         added)
        except Exception:
            log.exception("sweeper: indexing older operations failed")
        while True:
            try:
                self.sweeper.sweep_if_turn()
            except Exception:  # Redis briefly gone: sweep again next interval
                log.exception("sweep failed; trying again next interval")
            if self._stop.wait(self.sweeper.interval_s):
                return
