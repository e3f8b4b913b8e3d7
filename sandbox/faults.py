"""Injected faults: the next N matching AWS calls fail before they reach moto.

A fault answers instead of AWS, so AWS state does not change, exactly like a throttled or
failed call on real AWS. "timeout" holds the request without answering for longer than a
client would wait (bounded, and cut short when faults are cleared or the server stops), so the
product sees its own read timeout rather than an error reply.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import asdict, dataclass
from typing import Any

from sandbox.errors import KINDS

DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 300.0


class FaultError(ValueError):
    """A fault request that cannot be honoured (answered as 400 by the control routes)."""


@dataclass
class Fault:
    """One armed fault. `service`/`action` None match any."""

    id: str
    service: str | None
    action: str | None
    kind: str
    code: str | None
    message: str | None
    status: int | None
    count: int
    seconds: float
    fired: int = 0

    def matches(self, service: str, action: str) -> bool:
        """True if this fault applies to `service:action`."""
        return (self.service in (None, service)) and (self.action in (None, action))

    def as_dict(self) -> dict[str, Any]:
        """The fault as the control routes show it."""
        return {**asdict(self), "remaining": self.count - self.fired}


def _text(value: Any, name: str) -> str | None:
    if value is None or value == "*":
        return None
    if not isinstance(value, str) or not value:
        raise FaultError(f"{name} must be a non-empty string")
    return value


class FaultBook:
    """The armed faults, consumed by calls in arrival order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._ids = itertools.count(1)
        self._wake = threading.Event()

    def add(self, spec: dict[str, Any]) -> Fault:
        """Arm a fault from its JSON description (see sandbox/README.md)."""
        kind = spec.get("kind")
        if kind not in KINDS:
            raise FaultError(f"kind must be one of {sorted(KINDS)}")
        count = spec.get("count", 1)
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise FaultError("count must be a positive integer")
        status = spec.get("status")
        if status is not None and (not isinstance(status, int) or not 400 <= status <= 599):
            raise FaultError("status must be an HTTP error status (400-599)")
        seconds = spec.get("seconds", DEFAULT_TIMEOUT_S)
        if not isinstance(seconds, int | float) or not 0 < seconds <= MAX_TIMEOUT_S:
            raise FaultError(f"seconds must be in (0, {MAX_TIMEOUT_S}]")
        with self._lock:
            fault = Fault(
                id=f"f{next(self._ids)}",
                service=_text(spec.get("service"), "service"),
                action=_text(spec.get("action"), "action"),
                kind=kind,
                code=_text(spec.get("code"), "code"),
                message=_text(spec.get("message"), "message"),
                status=status,
                count=count,
                seconds=float(seconds),
            )
            self._faults.append(fault)
        return fault

    def take(self, service: str, action: str) -> Fault | None:
        """The first armed fault matching the call, spending one of its uses."""
        with self._lock:
            for fault in self._faults:
                if fault.matches(service, action):
                    fault.fired += 1
                    if fault.fired >= fault.count:
                        self._faults.remove(fault)
                    return fault
        return None

    def list(self) -> list[dict[str, Any]]:
        """The faults still armed."""
        with self._lock:
            return [f.as_dict() for f in self._faults]

    def clear(self) -> None:
        """Disarm everything and let any request stuck in a timeout go."""
        with self._lock:
            self._faults.clear()
            self._wake.set()
            self._wake = threading.Event()

    def stall(self, seconds: float) -> None:
        """Hold a timed-out request for `seconds`, or until faults are cleared."""
        with self._lock:
            wake = self._wake
        wake.wait(seconds)
