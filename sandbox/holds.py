"""Deterministic fault points: hold a call's answer after AWS has acted on it (or the call
itself before AWS sees it).

The worst moment for a worker to die is after AWS has made a change and before the worker
has recorded it. A hold makes that moment reproducible: the matching call goes through to
moto (the state changes), then its answer is kept from the client until the test releases it.
Meanwhile the test can kill the worker; the answer then goes to a closed socket, which the
server shrugs off.

A hold armed `when="before"` parks the call on arrival instead, before any injected fault and
before moto: AWS has not acted yet. It is the moment a step has started and nothing of it has
happened (a kill there), and a gate: a test that sees where the operation is while the call
waits can arm faults for that very call and then let it go on.
"""

from __future__ import annotations

import enum
import itertools
import threading
from dataclasses import dataclass, field
from typing import Any

# A held answer is let go after this long even if nobody releases it, so a forgotten hold
# cannot pin a server thread forever.
MAX_HOLD_S = 600.0
RELEASE_WAIT_S = 2.0


class HoldState(enum.StrEnum):
    """Where a hold is in its life."""

    ARMED = "armed"  # waiting for a matching call
    HELD = "held"  # at least one answer is being held back now
    RELEASED = "released"  # all its calls were caught and let go


class HoldWhen(enum.StrEnum):
    """Where a matching call is held."""

    AFTER = "after"  # after AWS answered it (state changed), before the client hears
    BEFORE = "before"  # on arrival: no fault, no moto yet


class HoldError(ValueError):
    """A hold request that cannot be honoured."""


@dataclass
class Hold:
    """One fault point: catches the next `count` calls to `service:action`."""

    id: str
    service: str
    action: str
    count: int
    when: HoldWhen = HoldWhen.AFTER
    claimed: int = 0  # calls claimed on arrival (some may still be at moto)
    caught: list[int] = field(default_factory=list)  # call log seqs answered by moto
    parked: list[int] = field(default_factory=list)  # generation of each answer held now
    generation: int = 0  # bumped on each release; waiters leave when it moves
    cleared: bool = False  # forgotten by clear(): nothing may wait on it any more
    dropped: set[int] = field(default_factory=set)  # generations let go by a drop

    @property
    def state(self) -> HoldState:
        """Derived, so it can never disagree with the counters."""
        if self.parked:
            return HoldState.HELD
        if len(self.caught) < self.count:
            return HoldState.ARMED
        return HoldState.RELEASED

    def as_dict(self) -> dict[str, Any]:
        """The hold as the control routes show it."""
        return {
            "id": self.id,
            "service": self.service,
            "action": self.action,
            "count": self.count,
            "when": self.when.value,
            "state": self.state.value,
            "calls": list(self.caught),
            "held": len(self.parked),
        }


class HoldBook:
    """The fault points, and the threads parked on them."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._holds: dict[str, Hold] = {}
        self._ids = itertools.count(1)
        self._closed = False

    def arm(self, spec: dict[str, Any]) -> Hold:
        """Arm a hold from its JSON description (`service`, `action`, optional `count` and
        `when`)."""
        service, action = spec.get("service"), spec.get("action")
        if not isinstance(service, str) or not service:
            raise HoldError("service is required")
        if not isinstance(action, str) or not action:
            raise HoldError("action is required")
        count = spec.get("count", 1)
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise HoldError("count must be a positive integer")
        when = spec.get("when", HoldWhen.AFTER.value)
        if when not in tuple(HoldWhen):
            raise HoldError(f"when must be one of {[w.value for w in HoldWhen]}")
        with self._cond:
            hold = Hold(id=f"h{next(self._ids)}", service=service, action=action, count=count,
                        when=HoldWhen(when))
            self._holds[hold.id] = hold
            return hold

    def take(self, service: str, action: str, when: HoldWhen = HoldWhen.AFTER) -> Hold | None:
        """Claim the first armed hold of that `when` matching the call (on its arrival)."""
        with self._cond:
            for hold in self._holds.values():
                if ((hold.service, hold.action, hold.when) == (service, action, when)
                        and hold.claimed < hold.count):
                    hold.claimed += 1
                    return hold
        return None

    def park(self, hold: Hold, seq: int) -> bool:
        """Block the calling server thread until the hold is released, cleared or closed
        (`seq`: the call's in the call log; 0 when it is not logged, or not yet). True when
        it was let go by a drop: a call held `before` must then not go on."""
        with self._cond:
            hold.caught.append(seq)
            generation = hold.generation
            hold.parked.append(generation)
            self._cond.notify_all()
            self._cond.wait_for(
                lambda: self._closed or hold.cleared or hold.generation != generation,
                timeout=MAX_HOLD_S,
            )
            hold.parked.remove(generation)
            self._cond.notify_all()
            return generation in hold.dropped

    def release(self, hold_id: str, drop: bool = False) -> Hold | None:
        """Let the held answers of one hold go; None if there is no such hold. With `drop`,
        calls held `before` are answered with an error without AWS ever seeing them (their
        client is usually dead: the call must not happen after it)."""
        with self._cond:
            hold = self._holds.get(hold_id)
            if hold is not None:
                if drop:
                    hold.dropped.add(hold.generation)
                hold.generation += 1
                self._cond.notify_all()
                # Return once the released threads are on their way, so the state read next
                # is no longer "held".
                self._cond.wait_for(
                    lambda: all(g == hold.generation for g in hold.parked), timeout=RELEASE_WAIT_S
                )
            return hold

    def get(self, hold_id: str) -> dict[str, Any] | None:
        """One hold, as the control routes show it."""
        with self._cond:
            hold = self._holds.get(hold_id)
            return hold.as_dict() if hold else None

    def list(self) -> list[dict[str, Any]]:
        """All holds, oldest first."""
        with self._cond:
            return [h.as_dict() for h in self._holds.values()]

    def clear(self) -> None:
        """Release every held answer and forget all holds."""
        with self._cond:
            for hold in self._holds.values():
                hold.cleared = True
            self._holds.clear()
            self._cond.notify_all()

    def close(self) -> None:
        """Release everything for good (server stopping)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self.clear()
