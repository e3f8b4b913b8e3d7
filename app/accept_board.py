"""Which web process takes the next connection: the one holding fewest, as near as can be.

gunicorn's web processes all accept from one listening socket, and whichever wakes first takes
the connection. A client that opens 8 keep-alive connections at once (a script's pool, wrk)
then often leaves 6 on one process and 2 on the other, for as long as they live; the busier
process runs 6 request threads against its one GIL while the other idles, and it serves 18 to
33% fewer reads than a 4/4 split (docs/benchmarks.md, "2026-12-04, next stop": 4/4 splits gave
2,706 to 2,784 req/s, 6/2 2,195 to 2,323, 7/1 1,858).

So each process writes how many connections it holds on a shared board (an anonymous shared
memory map, made by gunicorn's master when it imports the worker class, so every forked
process sees the same pages), and stops listening while it holds more connections than the
least-loaded live process: the others then take what arrives, as nginx's accept mutex does
with its `accept_disabled`. The least-loaded process always listens, so a connection is never
left waiting for a process that would not take it.

A slot is a process's: its pid, its count, and when it last wrote (each event loop pass, at
least once a second). A slot not written for `STALE_S` (a process that died or hangs) is
ignored, and a new process takes its slot by its number in the master (gunicorn's `age`).
"""

from __future__ import annotations

import mmap
import os
import struct
import time

SLOTS = 64
STALE_S = 3.0
_SLOT = struct.Struct("=qii")  # last write (ms, monotonic), pid, connections held
"""One process's row; one whole struct written at a time."""


class AcceptBoard:
    def __init__(self, slots: int = SLOTS) -> None:
        self.slots = slots
        self._map = mmap.mmap(-1, _SLOT.size * slots)  # MAP_SHARED: seen across fork

    def _row(self, slot: int) -> tuple[int, int, int]:
        return _SLOT.unpack_from(self._map, slot * _SLOT.size)

    def write(self, slot: int, held: int, now_ms: int | None = None) -> None:
        stamp = int(time.monotonic() * 1000) if now_ms is None else now_ms
        _SLOT.pack_into(self._map, (slot % self.slots) * _SLOT.size, stamp, os.getpid(), held)

    def fewest_elsewhere(self, slot: int, now_ms: int | None = None) -> int | None:
        """The fewest connections a live other process holds (None: no other one lives)."""
        now = int(time.monotonic() * 1000) if now_ms is None else now_ms
        mine = slot % self.slots
        fewest: int | None = None
        for other in range(self.slots):
            stamp, pid, held = self._row(other)
            if other == mine or pid == 0 or now - stamp > STALE_S * 1000:
                continue
            fewest = held if fewest is None else min(fewest, held)
        return fewest

    def may_accept(self, slot: int, held: int, now_ms: int | None = None) -> bool:
        """Whether a process holding `held` connections should listen: not while it holds
        more than the least-loaded live other process (equals both listen)."""
        fewest = self.fewest_elsewhere(slot, now_ms)
        return fewest is None or held <= fewest
