"""The fault campaign (issue 20, item 6): every operation kind, every step, five faults.

A *chain* is a few operations, each of one kind, that together leave the world as they found
it (create a network, delete it). Each chain runs once clean — its baseline: every step's
calls (trace.py) and everything it created — and then once per fault, with fresh names.
A faulted round strikes **every step** of every operation in turn, at the call the clean
run's trace says the step makes first:

- `kill_at_start`: the step's first call (its first mutation where it has one) is held on
  arrival, before AWS or the API server saw it; the worker's whole process group is
  SIGKILLed there and the call dropped, never to reach AWS; a new worker is started.
- `kill_waiting`: the worker is SIGKILLed while it waits on AWS: AWS has answered the step's
  first mutation and the answer is held (the worst moment: done, not recorded); and for a
  step that waits, again on its first poll while waiting.
- `throttle_5xx`: the step's first call is throttled once, then answered 5xx until
  botocore's five attempts are spent, so the step itself sees the failure and retries (a
  cluster's API server: 429, then 500 — its client does not retry).
- `redis_restart`: while the step's first call is in flight (AWS answered, the answer held),
  redis-server is SIGKILLed and started again with the append-only file `hypd up` uses in
  aws mode (fsync always); every operation record, event and audit entry written before is
  checked to be there after.
- `web_killed`: the web server is SIGKILLed between recording the operation and enqueuing its
  first task (a proxy between it and Redis strikes at the enqueue: redisproxy.py); the
  client sends its request again with the same Idempotency-Key once the web server is back,
  and must get the same operation.

Each faulted operation must then finish as the clean one did: succeeded, with exactly the
same AWS and Kubernetes creates (the sandbox's counters, trace.made), nothing made twice, no
record lost; and every step must have been struck — a gate that the operation passed without
its call is a miss, and fails the test (a poll while waiting that a struck run did not make,
its wait having ended at once, is counted apart). A step the sandbox sees no call of (only
the panel's own records) cannot be struck and is named as such.
"""

from __future__ import annotations

import enum
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import redis

from tests.faults.redisproxy import RedisProxy
from tests.faults.trace import (
    KUBERNETES,
    Made,
    StepTrace,
    aws_calls,
    kube_calls,
    made,
    steps_of,
)
from tests.stack import Stack
from vocabulary.operations import OpStatus, StepPhase

GATE_TIMEOUT_S = 120.0
FINISH_TIMEOUT_S = 300.0
IDLE_TIMEOUT_S = 60.0
POLL_S = 0.02
BOTOCORE_ATTEMPTS = 5  # cloud/aws.py MAX_ATTEMPTS: a burst this long reaches the step


class Fault(enum.StrEnum):
    KILL_AT_START = "kill_at_start"
    KILL_WAITING = "kill_waiting"
    BURST = "throttle_5xx"
    REDIS = "redis_restart"
    WEB = "web_killed"


# -- what a chain is ------------------------------------------------------------------------

@dataclass(frozen=True)
class Request:
    method: str
    path: str
    body: dict[str, Any] | None = None
    params: dict[str, str] | None = None


@dataclass(frozen=True)
class Act:
    """One operation of a chain: its kind and the request that starts it, from the round's
    names (and, for a request naming what the cluster has now — a node, a pool's worker —
    a look at the stack)."""

    kind: str
    request: Callable[[Stack, dict[str, str]], Request]


@dataclass(frozen=True)
class Chain:
    name: str
    acts: tuple[Act, ...]
    names: Callable[[str], dict[str, str]]
    """The round's names from a short unique token (each round makes its own things)."""
    arrange: Callable[[Stack, dict[str, str]], None] | None = None
    """What a round needs before its first act (not struck), e.g. a model in the bucket."""
    warmup: bool = False
    """Run once before the clean round: its first run installs what stays (e.g. an
    endpoint's load balancer controller), so only later runs are alike."""

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(a.kind for a in self.acts)


# -- one run of one operation ---------------------------------------------------------------

@dataclass
class ActRun:
    kind: str
    fault: str
    op: dict[str, Any]
    trace: dict[str, StepTrace]
    made: Made
    struck: dict[str, int] = field(default_factory=dict)
    unstrikable: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    waits_missed: list[str] = field(default_factory=list)
    """Polls while waiting the clean run made and this run did not (its wait ended at
    once: after a strike the step may find its resource ready)."""
    lost: list[str] = field(default_factory=list)
    extra: dict[str, int] = field(default_factory=dict)
    unspent: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def steps(self) -> list[str]:
        return [s["name"] for s in self.op["steps"]]

    @property
    def finished(self) -> bool:
        return self.op["status"] == OpStatus.SUCCEEDED

    def attempts(self, step: str) -> int:
        return next(s["attempts"] for s in self.op["steps"] if s["name"] == step)

    def figures(self) -> dict[str, Any]:
        """What the campaign's summary counts (tests/faults/figures.py)."""
        return {"kind": self.kind, "fault": self.fault, "steps": self.steps,
                "struck": self.struck, "unstrikable": self.unstrikable, "missed": self.missed,
                "waits_missed": self.waits_missed,
                "finished": self.finished, "extra": self.extra, "twice": self.made.twice,
                "lost": self.lost, "other": dict(self.made.other),
                "seconds": round(self.seconds, 1)}

    def problems(self) -> list[str]:
        """Everything that makes this run not count as finishing like the clean one."""
        found = []
        if not self.finished:
            found.append(f"{self.kind} {self.op['status']}: {self.op.get('error')}")
        if self.made.twice:
            found.append(f"{self.kind}: made twice: {self.made.twice}")
        if self.fault == "clean":
            return found
        if self.extra:
            found.append(f"{self.kind}: creates differ from the clean run: {self.extra}")
        if self.lost:
            found.append(f"{self.kind}: lost across a Redis restart: {self.lost}")
        if self.missed:
            calls = {m.split(":")[0]: [f"{c.service}:{c.action}"
                                       for c in self.trace[m.split(":")[0]].apply]
                     for m in self.missed}
            found.append(f"{self.kind}: steps passed without being struck: {self.missed} "
                         f"(their calls this time: {calls})")
        if self.unspent:
            found.append(f"{self.kind}: faults never spent: {self.unspent}")
        if self.fault != Fault.WEB:
            unstruck = [s for s in self.steps if s not in self.struck
                        and s not in self.unstrikable]
            if unstruck:
                found.append(f"{self.kind}: steps not struck: {unstruck}")
        if self.fault in (Fault.KILL_AT_START, Fault.BURST):
            again = [s for s in self.struck if self.attempts(s) < 2]
            if again:
                found.append(f"{self.kind}: struck but never attempted again: {again}")
        return found


# -- where a fault strikes a step -----------------------------------------------------------

@dataclass(frozen=True)
class Gate:
    step: str
    index: int
    service: str
    action: str
    when: str  # "before": held on arrival; "after": AWS answered, the answer held
    phase: StepPhase  # the step's phase the call must come in

    @property
    def where(self) -> str:
        return f"{self.step}:{self.phase.value} at {self.service}:{self.action}"


def plan(fault: Fault, clean: ActRun) -> tuple[list[Gate], list[str]]:
    """The gates of a faulted run, from the clean run's trace, and the steps no call of
    which the sandbox sees (nothing to strike at)."""
    gates, unstrikable = [], []
    before = "before" if fault in (Fault.KILL_AT_START, Fault.BURST) else "after"
    for index, name in enumerate(clean.steps):
        trace = clean.trace[name]
        first = trace.first("apply", mutation=True) or trace.first("apply", steady=True)
        if first is None:
            unstrikable.append(name)
        else:
            gates.append(Gate(name, index, first.service, first.action, before,
                              StepPhase.APPLYING))
        polled = trace.first("wait", steady=True)
        if fault is Fault.KILL_WAITING and polled is not None:
            gates.append(Gate(name, index, polled.service, polled.action, "after",
                              StepPhase.APPLIED))
    return gates, unstrikable


def _position(op: dict[str, Any]) -> tuple[int, StepPhase | None]:
    """(index of the step the operation is at, its phase); past the end when finished."""
    if OpStatus(op["status"]).is_finished:
        return len(op["steps"]), None
    for index, step in enumerate(op["steps"]):
        phase = StepPhase(step["phase"])
        if not phase.is_done:
            return index, phase
    return len(op["steps"]), None


def _order(index: int, phase: StepPhase | None) -> tuple[int, int]:
    """Where an operation is, comparable: a step pending, applying, then applied."""
    rank = {StepPhase.PENDING: 0, StepPhase.APPLYING: 1}
    return index, rank.get(phase, 2) if phase is not None else 0


class _Sent:
    """A request sent from a thread of its own (its first call may be held at a gate before
    the reply comes back), and the operation it recorded, found in `hypd:ops` as soon as it
    is there."""

    def __init__(self, campaign: Campaign, request: Request) -> None:
        self.campaign = campaign
        self.request = request
        self.known = set(campaign.redis.zrange("hypd:ops", -50, -1))
        self.reply: dict[str, Any] = {}
        self.thread = threading.Thread(target=self._send, daemon=True)
        self.started = False
        self._op_id: str | None = None

    def start(self) -> None:
        if not self.started:
            self.started = True
            self.thread.start()

    def _send(self) -> None:
        try:
            self.reply["op_id"] = self.campaign._submit(self.request)
        except BaseException as exc:  # handed on by op() and op_id()
            self.reply["error"] = exc

    def op(self) -> dict[str, Any] | None:
        """The operation's record once it is recorded."""
        if self._op_id is None:
            new = [i for i in self.campaign.redis.zrange("hypd:ops", -50, -1)
                   if i not in self.known]
            if self.reply.get("op_id") or len(new) == 1:
                self._op_id = self.reply.get("op_id") or new[0]
            elif "error" in self.reply:
                raise self.reply["error"]
            else:
                return None
        return self.campaign._op(self._op_id)

    def op_id(self) -> str:
        """The operation's id from the reply (the request must have answered 202)."""
        self.thread.join(60)
        if "error" in self.reply:
            raise self.reply["error"]
        assert self._op_id in (None, self.reply["op_id"]), (self._op_id, self.reply)
        return self.reply["op_id"]


# -- records a Redis restart must keep -------------------------------------------------------

@dataclass
class Records:
    """Operation records (their versions), their event streams' lengths and the audit log's
    entries, as Redis held them at one moment."""

    ops: dict[str, int]
    events: dict[str, int]
    audit: set[str]

    @classmethod
    def take(cls, conn: redis.Redis) -> Records:
        ids = [k.removeprefix("hypd:op:") for k in conn.scan_iter("hypd:op:*", count=1000)]
        raws = conn.mget([f"hypd:op:{i}" for i in ids]) if ids else []
        pipe = conn.pipeline(transaction=False)
        for op_id in ids:
            pipe.xlen(f"hypd:events:{op_id}")
        lengths = pipe.execute() if ids else []
        return cls(ops={i: json.loads(r)["version"] for i, r in zip(ids, raws, strict=True) if r},
                   events=dict(zip(ids, lengths, strict=True)),
                   audit={entry_id for entry_id, _ in conn.xrange("hypd:audit")})

    def lost(self, conn: redis.Redis) -> list[str]:
        now = Records.take(conn)
        found = [f"operation {i} (version {v})" for i, v in self.ops.items()
                 if now.ops.get(i, -1) < v]
        found += [f"events of {i} ({n} -> {now.events.get(i, 0)})"
                  for i, n in self.events.items() if now.events.get(i, 0) < n]
        found += [f"audit entry {e}" for e in sorted(self.audit - now.audit)]
        return found


# -- the driver ------------------------------------------------------------------------------

class Campaign:
    """Runs chains on one stack (Redis with AOF, the web server behind `proxy`)."""

    def __init__(self, stack: Stack, proxy: RedisProxy) -> None:
        self.stack = stack
        self.proxy = proxy
        self.sandbox = stack.sandbox
        self.redis = stack.redis()
        self.context: dict[str, str] = {}
        """Names every round of this campaign shares (e.g. the module's cluster)."""
        self._baselines: dict[str, list[ActRun]] = {}
        self._aws_seq = 0
        self._kube_seq = 0
        self.clean_runs: list[ActRun] = []

    # rounds ------------------------------------------------------------------------------

    def baseline(self, chain: Chain) -> list[ActRun]:
        """The chain's clean runs, one per act (made once, after a warm-up round if it
        wants one)."""
        if chain.name not in self._baselines:
            if chain.warmup:
                self._round(chain, "warmup", None)
            runs = self._round(chain, "clean", None)
            problems = [p for r in runs for p in r.problems()]
            assert not problems, problems
            assert len(runs) == len(chain.acts)
            self.clean_runs += runs
            self._baselines[chain.name] = runs
        return self._baselines[chain.name]

    def run(self, chain: Chain, fault: Fault) -> list[ActRun]:
        return self._round(chain, fault.value, fault, self.baseline(chain))

    def _round(self, chain: Chain, label: str, fault: Fault | None,
               clean: list[ActRun] | None = None) -> list[ActRun]:
        names = {**self.context, **chain.names(f"{label[0]}{uuid.uuid4().hex[:4]}")}
        if chain.arrange is not None:
            self._idle()
            chain.arrange(self.stack, names)
        runs = []
        for index, act in enumerate(chain.acts):
            run = self._act(act, names, fault, clean[index] if clean else None)
            runs.append(run)
            if not run.finished:
                break  # the next acts need this one done
        return runs

    # one operation -----------------------------------------------------------------------

    def _act(self, act: Act, names: dict[str, str], fault: Fault | None,
             clean: ActRun | None) -> ActRun:
        self._idle()
        self._cursor()
        started = time.monotonic()
        request = act.request(self.stack, names)
        gates, unstrikable = plan(fault, clean) if clean and fault is not Fault.WEB else ([], [])
        lost: list[str] = []
        if fault is Fault.WEB:
            op_id = self._submit_killing_web(request)
            struck, missed, waits, unspent = {}, [], [], []
        else:
            op_id, struck, missed, waits, unspent = self._strike(request, fault, gates, lost)
        op = self._finish(op_id)
        calls, writes = self._cursor()
        steps = [s["name"] for s in op["steps"]]
        events = [(entry_id, json.loads(fields["data"]))
                  for entry_id, fields in self.redis.xrange(f"hypd:events:{op_id}")]
        run = ActRun(kind=op["kind"], fault=fault.value if fault else "clean", op=op,
                     trace=steps_of(events, aws_calls(calls) + kube_calls(writes), steps),
                     made=made(calls, writes, names), struck=struck, unstrikable=unstrikable,
                     missed=missed, waits_missed=waits, lost=lost, unspent=unspent,
                     seconds=time.monotonic() - started)
        assert run.kind == act.kind, (run.kind, act.kind)
        if clean is not None:
            run.extra = run.made.extra_over(clean.made)
        return run

    def _send(self, request: Request, key: str | None = None) -> httpx.Response:
        headers = {"Idempotency-Key": key} if key else {}
        with self.stack.client() as c:
            return c.request(request.method, request.path, json=request.body,
                             params=request.params, headers=headers)

    def _submit(self, request: Request) -> str:
        reply = self._send(request)
        assert reply.status_code == 202, (request, reply.status_code, reply.text)
        return reply.json()["operation"]["id"]

    def _submit_killing_web(self, request: Request) -> str:
        """The request once, the web server SIGKILLed as it enqueues; then again with the
        same Idempotency-Key once it is back: the same operation, recorded before the kill."""
        key = f"campaign-{uuid.uuid4().hex}"
        before = set(self.redis.zrange("hypd:ops", 0, -1))
        self.proxy.arm(self.stack.kill_web)
        try:
            answered = self._send(request, key)
        except httpx.HTTPError:
            pass  # the connection died with the web server: what a client sees
        else:
            raise AssertionError(f"the web server answered ({answered.status_code}): it was "
                                 "not killed at the enqueue")
        finally:
            self.proxy.disarm()
            # the client may hear the connection die before the kill has returned
            struck = self.proxy.struck.wait(30)
            if self.stack.web_proc is not None and self.stack.web_proc.poll() is not None:
                self.stack.start_web(HYPD_REDIS_URL=self.proxy.url)
        assert struck, "the web server died, but not at the enqueue"
        recorded = set(self.redis.zrange("hypd:ops", 0, -1)) - before
        assert len(recorded) == 1, recorded  # recorded, never enqueued
        [op_id] = recorded
        reply = self._send(request, key)
        if reply.status_code == 201:
            # a workload whose operation (started by the sweeper meanwhile) has made it
            # already: the route answers with the workload itself, as for any replay of it
            assert reply.json()["name"] == request.body["name"], reply.text
        else:
            assert reply.status_code == 202, (request, reply.status_code, reply.text)
            assert reply.json()["operation"]["id"] == op_id, (reply.text, op_id)
        return op_id

    # striking ----------------------------------------------------------------------------

    def _strike(self, request: Request, fault: Fault | None, gates: list[Gate],
                lost: list[str]
                ) -> tuple[str, dict[str, int], list[str], list[str], list[str]]:
        """Send the request with the first gate armed (a step may make its first call before
        the reply is back), then strike at each gate in turn. Answers the operation's id,
        the strikes per step, the gates it passed (a step's own call: a miss; a step's poll
        while waiting: a wait that did not happen this time) and faults never spent."""
        struck: dict[str, int] = {}
        missed: list[str] = []
        waits: list[str] = []
        armed: list[str] = []
        resume: Callable[[], None] | None = None
        sent = _Sent(self, request)
        try:
            for gate in gates:
                hold = self.sandbox.hold(gate.service, gate.action, when=gate.when)
                if resume is not None:
                    resume()
                    resume = None
                sent.start()
                hold = self._await(sent, gate, hold)
                if hold is None:
                    (waits if gate.phase is StepPhase.APPLIED else missed).append(gate.where)
                    self.sandbox.clear_holds()
                    continue
                struck[gate.step] = struck.get(gate.step, 0) + 1
                resume = self._at_gate(fault, gate, hold, armed, lost)
        finally:
            if resume is not None:
                resume()
            self.sandbox.clear_holds()
        sent.start()
        op_id = sent.op_id()
        if not armed:
            return op_id, struck, missed, waits, []
        self._finish(op_id)
        unspent = [f["id"] for f in self.sandbox.faults() if f["id"] in armed]
        self.sandbox.clear_faults()
        return op_id, struck, missed, waits, unspent

    def _await(self, sent: _Sent, gate: Gate, hold: str) -> str | None:
        """The hold once it holds the gate's call with the operation at the gate's step and
        phase; None when the operation went past without making the call. A call of an
        earlier step (or of the web server, before the operation is recorded) is let go, the
        next one caught by a new hold armed first."""
        deadline = time.monotonic() + GATE_TIMEOUT_S
        want = _order(gate.index, gate.phase)
        while True:
            held = self.sandbox.get_hold(hold)["state"] == "held"
            op = sent.op()
            at = _order(*_position(op)) if op is not None else (-1, 0)
            if held and at == want:
                return hold
            if held and at < want:
                newer = self.sandbox.hold(gate.service, gate.action, when=gate.when)
                self.sandbox.release(hold)
                hold = newer
                continue
            if at > want:
                self.sandbox.release(hold)
                return None
            if time.monotonic() > deadline:
                raise AssertionError(f"gate {gate} not reached in {GATE_TIMEOUT_S} s: {op}")
            time.sleep(POLL_S)

    def _at_gate(self, fault: Fault | None, gate: Gate, hold: str, armed: list[str],
                 lost: list[str]) -> Callable[[], None] | None:
        """Strike while the gate's call is held; what to do once the next gate is armed."""
        if fault in (Fault.KILL_AT_START, Fault.KILL_WAITING):
            self.stack.kill_worker()
            self.sandbox.release(hold, drop=gate.when == "before")
            return self.stack.start_worker
        if fault is Fault.BURST:
            burst = (("throttle", 1), ("server_error", 1 if gate.service == KUBERNETES
                                       else BOTOCORE_ATTEMPTS - 1))
            for kind, count in burst:
                armed.append(self.sandbox.add_fault(gate.service, gate.action, kind,
                                                    count=count)["id"])
            self.sandbox.release(hold)
            return None
        if fault is Fault.REDIS:
            before = Records.take(self.redis)
            self.stack.restart_redis()
            lost += before.lost(self.redis)
            self.sandbox.release(hold)
            return None
        raise AssertionError(f"no gates for {fault}")

    # reading -----------------------------------------------------------------------------

    def _op(self, op_id: str) -> dict[str, Any]:
        """The operation's record from Redis (through a restart: the client reconnects)."""
        deadline = time.monotonic() + 30
        while True:
            try:
                raw = self.redis.get(f"hypd:op:{op_id}")
                assert raw, f"no operation {op_id}"
                return json.loads(raw)
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def _finish(self, op_id: str, timeout: float = FINISH_TIMEOUT_S) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            op = self._op(op_id)
            if OpStatus(op["status"]).is_finished:
                return op
            if time.monotonic() > deadline:
                raise AssertionError(f"operation {op_id} not finished in {timeout} s: {op}")
            time.sleep(0.05)

    def _idle(self) -> None:
        """Nothing running: a hold armed next catches this run's calls only. An operation
        an earlier (failed) run left stuck is cancelled, and this run fails naming it."""
        stuck = []
        for op_id in self.redis.zrange("hypd:due", 0, -1):
            try:
                self._finish(op_id, IDLE_TIMEOUT_S)
            except AssertionError as exc:
                stuck.append(str(exc))
                with self.stack.client() as c:
                    c.post(f"/api/v1/operations/{op_id}/cancel")
        assert not stuck, stuck

    def _cursor(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """AWS calls and cluster writes since the last look."""
        calls = self.sandbox.calls(since=self._aws_seq)
        writes = self.sandbox.kube_writes(since=self._kube_seq)
        if calls:
            self._aws_seq = calls[-1]["seq"]
        if writes:
            self._kube_seq = writes[-1]["seq"]
        return calls, writes
