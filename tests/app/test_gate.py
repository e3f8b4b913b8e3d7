"""app/gate.py: the web pool lets at most `slots` tasks run at once; a task that steps out to
wait (`waiting()`) gives its slot to the next in line, so waiters never starve the others and
more waiters than slots never deadlock. Events and counts, never timings: a `wait(timeout=…)`
below is a guard against a hang, not a measurement."""

from __future__ import annotations

import threading
from concurrent.futures import Future

import pytest

from app.gate import GatedPool, waiting

GUARD_S = 30  # a test that reaches this is hung, not slow


class Tally:
    """How many tasks run inside the gate at once (outside `waiting()`), and the most."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0

    def __enter__(self) -> Tally:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        return self

    def __exit__(self, *_: object) -> None:
        with self.lock:
            self.now -= 1


def _done(futures: list[Future]) -> list:
    return [f.result(timeout=GUARD_S) for f in futures]


def test_at_most_slots_tasks_run_at_once_and_every_task_runs():
    pool = GatedPool(slots=2, threads=8, patience=GUARD_S)
    tally = Tally()
    release = threading.Event()
    started = threading.Semaphore(0)

    def task(n: int) -> int:
        with tally:
            started.release()
            assert release.wait(GUARD_S)
        return n

    futures = [pool.submit(task, n) for n in range(6)]
    for _ in range(2):
        assert started.acquire(timeout=GUARD_S)
    assert not started.acquire(blocking=False), "a third task ran past a gate of two"
    assert tally.now == 2 and not any(f.done() for f in futures)
    release.set()
    assert _done(futures) == list(range(6))
    assert tally.most == 2
    pool.shutdown()


def test_waiters_step_out_so_more_of_them_than_slots_never_starve_a_read():
    """Five long-polls on a gate of two: each waits outside the gate, so a read submitted
    after them runs and answers while all five still wait; then they all finish."""
    pool = GatedPool(slots=2, threads=8, patience=GUARD_S)
    tally = Tally()
    change = threading.Event()
    waiting_now = threading.Semaphore(0)
    order: list[str] = []

    def long_poll(n: int) -> str:
        with tally:
            pass
        with waiting():
            waiting_now.release()
            assert change.wait(GUARD_S)
        with tally:
            order.append(f"poll {n}")
        return f"poll {n}"

    def read() -> str:
        with tally:
            order.append("read")
        return "read"

    polls = [pool.submit(long_poll, n) for n in range(5)]
    for _ in range(5):
        assert waiting_now.acquire(timeout=GUARD_S)
    assert pool.submit(read).result(timeout=GUARD_S) == "read"
    assert order == ["read"] and not any(f.done() for f in polls)
    change.set()  # all five come back at once, into a gate of two
    assert sorted(_done(polls)) == [f"poll {n}" for n in range(5)]
    assert tally.most <= 2
    pool.shutdown()


def test_a_task_back_from_waiting_goes_before_tasks_not_yet_started():
    pool = GatedPool(slots=1, threads=4, patience=GUARD_S)
    stepped_out, back, hold = threading.Event(), threading.Event(), threading.Event()
    order: list[str] = []

    def poller() -> None:
        with waiting():
            stepped_out.set()
            assert back.wait(GUARD_S)
        order.append("poller")

    def holder() -> None:
        order.append("holder")
        assert hold.wait(GUARD_S)

    first = pool.submit(poller)
    assert stepped_out.wait(GUARD_S)
    held = pool.submit(holder)  # takes the slot the poller gave up
    while "holder" not in order:
        threading.Event().wait(0.01)
    back.set()
    while not pool._returning:  # the poller is in line for the slot (its thread ran)
        threading.Event().wait(0.01)
    later = pool.submit(lambda: order.append("later"))
    hold.set()
    _done([first, held, later])
    assert order == ["holder", "poller", "later"]
    pool.shutdown()


def test_a_slot_held_past_patience_stops_holding_the_line():
    """A request stuck on something the gate does not know is a wait (an AWS call) holds
    its slot only for `patience`: the next in line then runs beside it."""
    pool = GatedPool(slots=1, threads=4, patience=0.05)
    unstick = threading.Event()
    stuck = pool.submit(lambda: unstick.wait(GUARD_S))
    assert pool.submit(lambda: "read").result(timeout=GUARD_S) == "read"
    assert not stuck.done()
    unstick.set()
    assert stuck.result(timeout=GUARD_S) is True
    pool.shutdown()


def test_the_thread_limit_holds_and_queued_work_runs_when_a_thread_frees():
    pool = GatedPool(slots=2, threads=3, patience=GUARD_S)
    free = threading.Event()
    in_wait = threading.Semaphore(0)

    def wait_long() -> str:
        with waiting():
            in_wait.release()
            assert free.wait(GUARD_S)
        return "waited"

    waits = [pool.submit(wait_long) for _ in range(3)]
    for _ in range(3):
        assert in_wait.acquire(timeout=GUARD_S)
    queued = pool.submit(lambda: "queued")
    assert not queued.done()  # every thread is taken: the line waits for one
    free.set()
    assert _done([*waits, queued]) == ["waited"] * 3 + ["queued"]
    assert pool._threads == 3
    pool.shutdown()


def test_errors_and_results_reach_the_future_and_its_callbacks():
    pool = GatedPool(slots=1, threads=2, patience=GUARD_S)
    seen: list[Future] = []
    done = threading.Event()

    def boom() -> None:
        raise KeyError("x")

    failed = pool.submit(boom)
    failed.add_done_callback(lambda f: (seen.append(f), done.set()))
    with pytest.raises(KeyError):
        failed.result(timeout=GUARD_S)
    assert done.wait(GUARD_S) and seen == [failed]
    assert pool.submit(lambda a, b=0: a + b, 1, b=2).result(timeout=GUARD_S) == 3
    pool.shutdown(wait=True)
    with pytest.raises(RuntimeError):
        pool.submit(lambda: None)


def test_waiting_outside_a_gated_pool_does_nothing():
    with waiting(), waiting():
        pass


def test_a_gate_wider_than_the_pool_is_refused():
    with pytest.raises(ValueError):
        GatedPool(slots=9, threads=8)
    with pytest.raises(ValueError):
        GatedPool(slots=0, threads=8)


def test_a_task_whose_thread_cannot_start_fails_and_gives_its_slot_back(monkeypatch):
    """A process out of threads: the task's future fails with the reason at once (no client
    left waiting on it), and the slot and thread count it took are free for the next."""
    pool = GatedPool(slots=1, threads=2, patience=GUARD_S)
    start = threading.Thread.start
    refusals = iter([RuntimeError("can't start new thread")])

    def start_or_refuse(thread: threading.Thread) -> None:
        refusal = next(refusals, None)
        if refusal is not None:
            raise refusal
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", start_or_refuse)
    refused = pool.submit(lambda: "never")
    with pytest.raises(RuntimeError, match="can't start new thread"):
        refused.result(timeout=GUARD_S)
    assert pool._holders == {} and pool._threads == 0
    assert _done([pool.submit(lambda n=n: n) for n in range(3)]) == [0, 1, 2]
    pool.shutdown()
