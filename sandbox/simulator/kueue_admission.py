"""Kueue's admission decision as a pure function: which pending workloads get quota, which
borrow from the cohort, and which admitted ones are preempted to make room.

Taken from Kueue's documentation (concepts: ClusterQueue, Cohort, Preemption) and its
v0.19.2 source (`pkg/scheduler`): a ClusterQueue admits a workload when its usage plus the
request stays within `nominalQuota + borrowingLimit` and the cohort still has the unused
quota it borrows (each queue lends `lendingLimit`, all of its nominal quota when unset, and
keeps the rest for itself); pending workloads are tried by priority, then by creation
(BestEffortFIFO); a workload that does not fit may preempt — admitted workloads of other
queues of the cohort that borrow, when its own queue is within its nominal quota
(`reclaimWithinCohort`: `Any`, or only lower priorities with `LowerPriority`), and
lower-priority workloads of its own queue (`withinClusterQueue: LowerPriority`); candidates
go lowest priority first, then most recently admitted first.

Played smaller than Kueue (what the sandbox does not do): one flavor per pod set — the one
whose `nodeLabels` its node selector names (`node.kubernetes.io/instance-type` or the
beta label), else the queue's first —, no flavor fungibility, no fair-sharing preemption,
no `borrowWithinCohort`, no minimal-set second pass (candidates are taken in order until the
workload fits), no admission checks, no partial admission; resources a queue does not cover
are not counted; a preempted workload gives its quota back at once (Kueue waits for the job
to stop).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

Usage = dict[tuple[str, str], float]  # (flavor, resource) → amount in base units
UNLIMITED = float("inf")


@dataclass(frozen=True)
class Quota:
    nominal: float
    borrowing_limit: float = UNLIMITED
    lending_limit: float | None = None  # None: all of the nominal quota

    @property
    def lendable(self) -> float:
        return self.nominal if self.lending_limit is None else min(self.lending_limit,
                                                                   self.nominal)

    @property
    def guaranteed(self) -> float:
        return self.nominal - self.lendable


@dataclass
class Queue:
    """A ClusterQueue as admission sees it."""

    name: str
    cohort: str | None
    quotas: dict[tuple[str, str], Quota]
    flavors: list[str]
    within_queue: str = "Never"  # preemption.withinClusterQueue
    reclaim: str = "Never"  # preemption.reclaimWithinCohort
    active: bool = True


@dataclass
class Candidate:
    """A workload waiting for quota (the queue it goes to already resolved)."""

    key: str
    queue: str
    priority: int
    created: str
    request: Usage  # per (flavor, resource), flavors already chosen


@dataclass
class Running:
    key: str
    queue: str
    priority: int
    admitted: str  # when its quota was reserved
    usage: Usage


@dataclass
class Decision:
    admitted: list[str] = field(default_factory=list)
    preempted: dict[str, tuple[str, str]] = field(default_factory=dict)
    """preemptee key → (preemptor key, reason: InCohortReclamation | InClusterQueue)"""
    waiting: dict[str, tuple[str, str, float] | str] = field(default_factory=dict)
    """key → (flavor, resource, amount missing), or why its queue admits nothing"""


def usage_of(running: list[Running]) -> dict[str, Usage]:
    out: dict[str, Usage] = defaultdict(lambda: defaultdict(float))
    for r in running:
        for key, amount in r.usage.items():
            out[r.queue][key] += amount
    return out


def shortfall(queues: dict[str, Queue], usage: dict[str, Usage], queue: Queue,
              request: Usage) -> tuple[str, str, float] | None:
    """None if `request` fits `queue` now (borrowing as allowed), else the first
    (flavor, resource, amount missing)."""
    cohort = [q for q in queues.values() if queue.cohort and q.cohort == queue.cohort] \
        or [queue]
    for (flavor, resource), amount in request.items():
        quota = queue.quotas.get((flavor, resource))
        if quota is None or amount <= 0:
            continue
        used = usage.get(queue.name, {}).get((flavor, resource), 0.0)
        ceiling = quota.nominal + quota.borrowing_limit
        if used + amount > ceiling:
            return flavor, resource, used + amount - ceiling
        pool, borrowed = 0.0, 0.0
        for other in cohort:
            theirs = other.quotas.get((flavor, resource))
            if theirs is None:
                continue
            pool += theirs.lendable
            mine = usage.get(other.name, {}).get((flavor, resource), 0.0)
            if other.name == queue.name:
                mine += amount
            borrowed += max(0.0, mine - theirs.guaranteed)
        if borrowed > pool:
            return flavor, resource, borrowed - pool
    return None


def _borrowing(queue: Queue, usage: Usage) -> bool:
    return any(amount > queue.quotas[key].nominal
               for key, amount in usage.items() if key in queue.quotas)


def _targets(queues: dict[str, Queue], running: list[Running], usage: dict[str, Usage],
             queue: Queue, wl: Candidate) -> list[tuple[Running, str]]:
    """Who may be preempted for `wl`, in the order Kueue takes them."""
    own = usage.get(queue.name, {})
    within_nominal = all(own.get(k, 0.0) + a <= queue.quotas[k].nominal
                         for k, a in wl.request.items() if k in queue.quotas)
    out = []
    for r in running:
        if r.queue == queue.name:
            if queue.within_queue == "LowerPriority" and r.priority < wl.priority:
                out.append((r, "InClusterQueue"))
            continue
        other = queues.get(r.queue)
        if (other is None or not queue.cohort or other.cohort != queue.cohort
                or not within_nominal or not _borrowing(other, usage.get(r.queue, {}))):
            continue
        if queue.reclaim == "Any" or (queue.reclaim == "LowerPriority"
                                      and r.priority < wl.priority):
            out.append((r, "InCohortReclamation"))
    out.sort(key=lambda t: (t[0].priority, _desc(t[0].admitted)))
    return out


def _desc(stamp: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in stamp)


def _take(usage: dict[str, Usage], r: Running, sign: float) -> None:
    for key, amount in r.usage.items():
        usage.setdefault(r.queue, defaultdict(float))[key] += sign * amount


def decide(queues: dict[str, Queue], running: list[Running], pending: list[Candidate]
           ) -> Decision:
    """One scheduling pass over every pending workload."""
    decision = Decision()
    running = list(running)
    usage = usage_of(running)
    for wl in sorted(pending, key=lambda w: (-w.priority, w.created)):
        queue = queues[wl.queue]
        if not queue.active:
            decision.waiting[wl.key] = f"ClusterQueue {queue.name} is inactive"
            continue
        missing = shortfall(queues, usage, queue, wl.request)
        chosen: list[tuple[Running, str]] = []
        if missing is not None:
            for target, reason in _targets(queues, running, usage, queue, wl):
                chosen.append((target, reason))
                _take(usage, target, -1)
                if shortfall(queues, usage, queue, wl.request) is None:
                    break
            else:
                for target, _ in chosen:
                    _take(usage, target, +1)
                decision.waiting[wl.key] = missing
                continue
        for target, reason in chosen:
            running.remove(target)
            decision.preempted[target.key] = (wl.key, reason)
        decision.admitted.append(wl.key)
        admitted = Running(wl.key, wl.queue, wl.priority, "~", wl.request)
        running.append(admitted)
        _take(usage, admitted, +1)
    return decision
