"""Simulated time: resources that take minutes on AWS take `delay / speed` here.

moto 5.2.5 creates NAT gateways `available` and EKS clusters `ACTIVE` at once, and deletes
NAT gateways straight to `deleted`. The product must wait for these on AWS, so the sandbox
plays the waits: when such a call succeeds, a rule edits moto's in-process model to the
in-between state (and the answer to match), and schedules the final state on a timeline.
Editing moto's model rather than rewriting Describe answers keeps moto's own filters (e.g.
`state=available`) truthful.

The timeline is advanced at the start of every AWS call (state is only observable through
calls), so no background thread is needed. One `speed` scales every delay; tests may also jump
the clock forward.

A jump ages the simulated world too. A product measures "how long has this run" as AWS's
reported creation or launch time against its own wall clock, which a jump does not move; so
whatever reports such a time registers an ager with the clock (`Clock.on_advance`), and a jump
of `seconds` moves every such time of the resources that exist then `seconds` into the past —
to a reader on the wall clock they are that much older, as if the time had passed. What is made
after the jump gets the wall time, as ever, so order is kept. The local Kubernetes clusters'
object times (pods, nodes, Kueue Workloads) are not moved: they are each cluster's own clock,
and the product keys records on some of them.

Aged (each by the gap that reports it, `sandbox.gaps.ages`): HyperPod clusters' CreationTime
and their nodes' LaunchTime (gaps/sagemaker_state.py); EKS clusters', node groups' and Fargate
profiles' createdAt (moto's models) and the EKS gap's add-ons, access entries and policies and
pod identity associations (gaps/eks.py); NAT gateways' CreateTime (moto's model, gaps/ec2.py).
Left as they are: times of events rather than of resources — HyperPod's cluster events and
nodes' LastSoftwareUpdateTime, EKS updates — which a product compares with moments of its own
(when it asked for a reboot, the newest update before it called) that a jump cannot move, so
moving them would hide what happened since; and, nothing the product measures a duration
from, FSx file systems' CreationTime, MLflow tracking servers', task governance's scheduler
configs' and compute quotas' CreationTime and LastModifiedTime, moto's other times (EC2
instances' LaunchTime, network interfaces' attachment times, IAM's CreateDate, S3's
CreationDate, CloudFormation's stack times), the call log's; and training plans'
StartTime/EndTime, which are a reservation's window, not an age.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from sandbox import interfaces
from sandbox.identify import Call
from sandbox.reply import Reply

# Simulated seconds, as on AWS.
NAT_GATEWAY_PENDING_S = 90.0
NAT_GATEWAY_DELETING_S = 90.0
EKS_CLUSTER_CREATING_S = 600.0


Ager = Callable[[timedelta], None]
"""Moves the reported creation/launch times of what exists now this far into the past."""


class Clock:
    """Simulated seconds since start: wall time times `speed`, plus any manual jumps."""

    def __init__(self, speed: float = 1.0) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.speed = speed
        self._start = time.monotonic()
        self._offset = 0.0
        self._agers: list[Ager] = []

    def now(self) -> float:
        """Simulated seconds elapsed."""
        return (time.monotonic() - self._start) * self.speed + self._offset

    def on_advance(self, ager: Ager) -> None:
        """Call `ager` with each jump, so the times it keeps age with the simulated world."""
        self._agers.append(ager)

    def advance(self, seconds: float) -> None:
        """Jump simulated time forward (tests that must not sleep), and age what exists by as
        much: the wall clock, which a product reads, does not jump with it."""
        jump = max(0.0, seconds)
        self._offset += jump
        if jump:
            for ager in list(self._agers):
                ager(timedelta(seconds=jump))


class Timeline:
    """Deferred state changes, applied in due order when time is checked.

    A change may schedule another (`after` from inside a change re-enters the lock on the same
    thread): a network interface released when its owner goes is deleted a little later. Its
    delay counts from the moment the change was due, not from when it ran, so a clock jumped
    past both runs both, in order."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._lock = threading.RLock()
        self._due: list[tuple[float, int, Callable[[], None]]] = []
        self._order = itertools.count()
        self._running_at: float | None = None  # the due time of the change running now
        self._posted: collections.deque[tuple[float, Callable[[], None]]] = collections.deque()

    def post(self, seconds: float, change: Callable[[], None]) -> None:
        """`after`, for a thread that must never wait for the timeline's lock — a local
        Kubernetes' event loop, which a running change (a cluster going with its EKS cluster)
        may be waiting on. Queued without a lock (a deque's append is atomic) and taken in
        at the next look at the clock; due `seconds` after now."""
        self._posted.append((self.clock.now() + seconds, change))

    def _take_posted(self) -> None:
        while self._posted:
            at, change = self._posted.popleft()
            heapq.heappush(self._due, (at, next(self._order), change))

    def after(self, seconds: float, change: Callable[[], None]) -> None:
        """Run `change` once `seconds` of simulated time have passed."""
        with self._lock:
            base = self._running_at if self._running_at is not None else self.clock.now()
            heapq.heappush(self._due, (base + seconds, next(self._order), change))

    def run_due(self) -> int:
        """Apply every change whose time has come; returns how many ran."""
        ran = 0
        with self._lock:
            self._take_posted()
            now = self.clock.now()
            while self._due and self._due[0][0] <= now:
                at, _, change = heapq.heappop(self._due)
                self._running_at = at
                try:
                    change()
                finally:
                    self._running_at = None
                ran += 1
        return ran

    def clear(self) -> None:
        """Drop every change not yet due (AWS state was reset: they would act on nothing)."""
        with self._lock:
            self._due.clear()
            self._posted.clear()

    def pending(self) -> int:
        """Changes not yet due."""
        with self._lock:
            self._take_posted()
            return len(self._due)


class Rule(Protocol):
    """Turns one successful call into an in-between state and a scheduled final state."""

    service: str
    action: str

    def apply(self, call: Call, reply: Reply, timeline: Timeline) -> Reply:
        """Edit moto's model, schedule the rest, return the (possibly rewritten) answer."""
        ...


def _ec2_backend(call: Call) -> Any:
    from moto.ec2.models import ec2_backends

    return ec2_backends[call.account][call.region]


def _eks_backend(call: Call) -> Any:
    from moto.eks.models import eks_backends

    return eks_backends[call.account][call.region]


def _set_if(obj: Any, attr: str, expected: str, new: str) -> Callable[[], None]:
    """A change that moves `obj.attr` from `expected` to `new`, and does nothing otherwise
    (the object may have moved on, or AWS state been reset, in the meantime)."""

    def change() -> None:
        if getattr(obj, attr, None) == expected:
            setattr(obj, attr, new)

    return change


_NAT_ID = re.compile(rb"<natGatewayId>(nat-[0-9a-f]+)</natGatewayId>")
_STATE = re.compile(rb"<state>[a-z]+</state>")


@dataclass
class NatGatewayCreate:
    """CreateNatGateway: `pending` for 90 s, then `available`; its network interface carries
    AWS's fields (sandbox/interfaces.py)."""

    service: str = "ec2"
    action: str = "CreateNatGateway"

    def apply(self, call: Call, reply: Reply, timeline: Timeline) -> Reply:
        found = _NAT_ID.search(reply.body)
        if found is None:
            return reply
        nat = _ec2_backend(call).nat_gateways.get(found.group(1).decode())
        if nat is None:
            return reply
        nat.state = "pending"
        interfaces.nat_gateway_interface(nat)
        timeline.after(NAT_GATEWAY_PENDING_S, _set_if(nat, "state", "pending", "available"))
        return reply.with_body(_STATE.sub(b"<state>pending</state>", reply.body, count=1))


@dataclass
class NatGatewayDelete:
    """DeleteNatGateway: `deleting` for 90 s, then `deleted` (moto goes straight to deleted),
    and its network interface goes with it (moto keeps it for ever): until then the subnet
    cannot be deleted."""

    service: str = "ec2"
    action: str = "DeleteNatGateway"

    def apply(self, call: Call, reply: Reply, timeline: Timeline) -> Reply:
        nat = _ec2_backend(call).nat_gateways.get(str(call.params.get("NatGatewayId")))
        if nat is None:
            return reply
        nat.state = "deleting"
        to_deleted = _set_if(nat, "state", "deleting", "deleted")

        def deleted() -> None:
            to_deleted()
            if nat.state == "deleted":
                interfaces.drop_nat_gateway_interface(call.account, call.region, nat)

        timeline.after(NAT_GATEWAY_DELETING_S, deleted)
        return reply


@dataclass
class EksClusterCreate:
    """CreateCluster: `CREATING` for 10 minutes, then `ACTIVE` (moto: ACTIVE at once).

    moto refuses node groups and Fargate profiles on a cluster that is not ACTIVE, as AWS does.
    """

    service: str = "eks"
    action: str = "CreateCluster"

    def apply(self, call: Call, reply: Reply, timeline: Timeline) -> Reply:
        try:
            answer = json.loads(reply.body)
            name = answer["cluster"]["name"]
        except (ValueError, KeyError, TypeError):
            return reply
        cluster = _eks_backend(call).clusters.get(name)
        # Once per cluster: a CreateCluster replayed with its clientRequestToken answers the
        # existing cluster, which must not go back to CREATING.
        if cluster is None or getattr(cluster, "_sandbox_timed", False):
            return reply
        cluster._sandbox_timed = True
        cluster.status = "CREATING"
        timeline.after(EKS_CLUSTER_CREATING_S, _set_if(cluster, "status", "CREATING", "ACTIVE"))
        answer["cluster"]["status"] = "CREATING"
        return reply.with_body(json.dumps(answer).encode())


DEFAULT_RULES: tuple[Rule, ...] = (NatGatewayCreate(), NatGatewayDelete(), EksClusterCreate())


class Transitions:
    """The rules, keyed by call, and the timeline they schedule on."""

    def __init__(self, clock: Clock, rules: tuple[Rule, ...] = DEFAULT_RULES) -> None:
        self.timeline = Timeline(clock)
        self._rules = {(r.service, r.action): r for r in rules}

    def tick(self) -> None:
        """Apply the state changes that are due (called before each AWS call)."""
        self.timeline.run_due()

    def after_call(self, call: Call, reply: Reply) -> Reply:
        """Let the rule for this call, if any, act on its successful answer."""
        rule = self._rules.get((call.service, call.action))
        if rule is None or reply.status >= 400:
            return reply
        return rule.apply(call, reply, self.timeline)
