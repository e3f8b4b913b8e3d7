"""Idempotency keys the MCP server derives for mutating tools called without one.

Goal (DESIGN.md, Contracts: Idempotency-Key): an agent's blind retry of a mutating tool -
the same tool with the same arguments, because a reply was lost - must never start a second
operation, for 10 minutes.

Scheme:
- The key is `mcp-` + sha256(tool, canonical JSON of the arguments, anchor)[:40], where the
  canonical JSON sorts keys, drops unset (null) arguments and `idempotency_key`, and the
  anchor is the 10-minute bucket `floor(t / 600)` of the time `t` of the *first* call.
- This process remembers, per caller (a hash of its token), each (tool, arguments) it
  derived a key for and when. Within 600 s of that first call the same key is reused, so the
  key is stable for the full 10 minutes after the first call whatever the clock says - there
  is no window edge (a call at 9:59 and its retry at 10:01 get the same key). After 600 s a
  new key is derived; its bucket differs from the old one, so the keys never coincide.
- Another process (say a second `hypd mcp --http` replica behind a load balancer) has no
  memory of the first call; it derives the key from the current bucket, which equals the
  first process's key unless a 10-minute boundary fell between the two calls. Best effort
  across processes, exact within one.
- Derived keys are sent with `Idempotency-TTL: 600` (`headers_for()`), the API's generic way
  for a client to say how long its key should be remembered, so the API keeps them 10
  minutes, not its default 24 hours: the API knows nothing of MCP. A key the agent passes
  itself is sent unchanged and without that header (kept 24 hours).
- When a remembered key had already been accepted by the API (a 2xx reply), the tool's reply
  says `replayed: true` with a note: the API answered with the earlier operation. That is
  the right answer to a blind retry and tells an agent that meant a deliberate repeat (say
  delete, re-create, delete again within 10 minutes) to pass a new `idempotency_key`.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

WINDOW_S = 600
MAX_ENTRIES = 10_000


def canonical_arguments(arguments: dict[str, Any]) -> str:
    clean = {k: v for k, v in arguments.items() if v is not None and k != "idempotency_key"}
    return json.dumps(clean, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def derive_key(tool: str, arguments: dict[str, Any], anchor: float) -> str:
    bucket = int(anchor // WINDOW_S)
    material = f"hypd-mcp\n{tool}\n{canonical_arguments(arguments)}\n{bucket}"
    return "mcp-" + hashlib.sha256(material.encode()).hexdigest()[:40]


def headers_for(key: str, derived: bool) -> dict[str, str]:
    """The headers a mutating call sends: the key, and for a derived one how long the API
    should remember it (this module's window; the API's own default is 24 hours)."""
    if not derived:
        return {"Idempotency-Key": key}
    return {"Idempotency-Key": key, "Idempotency-TTL": str(WINDOW_S)}


def principal_of(token: str | None) -> str:
    return hashlib.sha256((token or "").encode()).hexdigest()[:16]


@dataclass
class _Entry:
    key: str
    first_at: float
    accepted: bool = False


class IdempotencyKeys:
    """Per-process memory of derived keys (see the module docstring)."""

    def __init__(self, clock: Callable[[], float] = time.time, window_s: float = WINDOW_S,
                 max_entries: int = MAX_ENTRIES) -> None:
        self._clock = clock
        self._window = window_s
        self._max = max_entries
        self._entries: dict[tuple[str, str, str], _Entry] = {}
        self._lock = threading.Lock()

    def key_for(self, principal: str, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """The key to send, and whether the API already accepted a call with it."""
        now = self._clock()
        slot = (principal, tool, canonical_arguments(arguments))
        with self._lock:
            entry = self._entries.get(slot)
            if entry is None or now - entry.first_at >= self._window:
                self._expire(now)
                entry = _Entry(derive_key(tool, arguments, now), now)
                self._entries[slot] = entry
            return entry.key, entry.accepted

    def accepted(self, principal: str, tool: str, arguments: dict[str, Any], key: str) -> None:
        """Record that the API answered 2xx to a call with this key."""
        slot = (principal, tool, canonical_arguments(arguments))
        with self._lock:
            entry = self._entries.get(slot)
            if entry is not None and entry.key == key:
                entry.accepted = True

    def _expire(self, now: float) -> None:
        stale = [s for s, e in self._entries.items() if now - e.first_at >= self._window]
        for slot in stale:
            del self._entries[slot]
        while len(self._entries) >= self._max:  # oldest first (dicts keep insertion order)
            del self._entries[next(iter(self._entries))]
