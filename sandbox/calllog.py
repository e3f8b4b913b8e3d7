"""The call log and the mutation counters.

Every AWS call the layer sees is logged with its decoded parameters (never its headers, so no
credentials), and every successful mutating call is counted per action and per resource.
Tests read these to prove what the product did to AWS — "CreateVpc ran once", "the subnet was
tagged twice" — without trusting the product's own account of it.
"""

from __future__ import annotations

import collections
import threading
from datetime import UTC, datetime
from typing import Any

from sandbox.identify import Call
from sandbox.resources import is_mutation

# Oldest entries fall off beyond this, so a long demo cannot grow the log without bound.
MAX_CALLS = 20_000


class CallLog:
    """Numbered record of calls plus counters of successful mutations."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: collections.deque[dict[str, Any]] = collections.deque(maxlen=MAX_CALLS)
        self._seq = 0
        self._by_action: collections.Counter[str] = collections.Counter()
        self._by_resource: dict[str, collections.Counter[str]] = {}

    def record(
        self,
        call: Call,
        status: int,
        resource_ids: list[str],
        fault: str | None = None,
    ) -> int:
        """Log one call and count it if it changed AWS state; returns its sequence number."""
        with self._lock:
            self._seq += 1
            entry = {
                "seq": self._seq,
                "service": call.service,
                "action": call.action,
                "region": call.region,
                "params": call.params,
                "status": status,
                "resource_ids": resource_ids,
                "fault": fault,
                "at": datetime.now(UTC).isoformat(timespec="milliseconds"),
            }
            self._calls.append(entry)
            if status < 400 and fault is None and is_mutation(call.action):
                self._by_action[call.key] += 1
                for rid in resource_ids:
                    self._by_resource.setdefault(rid, collections.Counter())[call.key] += 1
            return self._seq

    def calls(
        self, service: str | None = None, action: str | None = None, since: int = 0
    ) -> list[dict[str, Any]]:
        """Logged calls after `since`, optionally only one service and/or action."""
        with self._lock:
            return [
                c
                for c in self._calls
                if c["seq"] > since
                and service in (None, c["service"])
                and action in (None, c["action"])
            ]

    def counters(self) -> dict[str, Any]:
        """Successful mutations per "service:Action" and per resource id."""
        with self._lock:
            return {
                "by_action": dict(self._by_action),
                "by_resource": {rid: dict(c) for rid, c in self._by_resource.items()},
            }

    def clear(self) -> None:
        """Forget all calls and counts (sequence numbers keep rising, so `since` stays valid)."""
        with self._lock:
            self._calls.clear()
            self._by_action.clear()
            self._by_resource.clear()
