"""The sweeper against a real Redis: it re-kicks only what nothing is advancing, and a kick
(even beside the original task turning up late) never runs a step twice.

Time is the sweeper's injected clock, so "an hour later" costs nothing; the engine's own
writes use the real clock, as in production.
"""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest

from cloud.metrics import SWEEPER_PICKUPS
from tasks.engine.kinds import OperationKind, Step, kind_table
from tasks.engine.model import new_operation
from tasks.engine.runner import Runner
from tasks.engine.service import Engine
from tasks.engine.store import DUE_INDEX, OperationStore, lease_key, op_key
from tasks.engine.sweeper import Sweeper, kick_key

GRACE_S = 2.0
CALLS: list[str] = []
WAITS: list[float | None] = []


def _apply(name: str):
    def apply(ctx):
        CALLS.append(name)
        if name == "one" and ctx.params.get("die_in_one") and CALLS.count("one") == 1:
            raise KeyboardInterrupt  # SIGKILL after AWS answered: nothing after it runs
        return {f"{name}_id": f"{name}-1"}

    return apply


def _wait(ctx):
    CALLS.append("two.wait")
    return WAITS.pop(0) if WAITS else None


KIND = OperationKind(name="test.sweep", steps=(
    Step("one", "Step one", _apply("one")),
    Step("two", "Step two", _apply("two"), _wait),
))
KINDS = kind_table(KIND)


class Queue:
    def __init__(self) -> None:
        self.items: list[tuple[str, int, float]] = []

    def __call__(self, op_id: str, generation: int, countdown: float) -> None:
        self.items.append((op_id, generation, countdown))


class Clock:
    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


@pytest.fixture
def env(redis_db):
    CALLS.clear()
    WAITS.clear()
    store = OperationStore(redis_db)
    queue = Queue()
    engine = Engine(store, queue, KINDS)
    runner = Runner(store, queue, KINDS, region="us-west-2", poll_min_s=0.1, poll_max_s=60,
                    lease_s=5)
    clock = Clock()
    sweeper = Sweeper(store, queue, grace_s=GRACE_S, interval_s=0.2, clock=clock)
    return SimpleNamespace(engine=engine, runner=runner, queue=queue, store=store,
                           sweeper=sweeper, clock=clock)


def drain(runner: Runner, queue: Queue, limit: int = 50) -> None:
    """Run queued tasks in order, as a worker would (countdowns ignored)."""
    for _ in range(limit):
        if not queue.items:
            return
        op_id, gen, _ = queue.items.pop(0)
        runner.advance(op_id, gen)
    raise AssertionError("operation did not settle")


def _record_without_enqueueing(store: OperationStore, name: str, **params) -> dict:
    """What a web process that died after recording, before enqueuing, leaves behind."""
    op, created = store.create(new_operation(KIND, f"thing/{name}", {"name": name, **params},
                                             "tester", None), None)
    assert created
    return op


def _pickups() -> float:
    """This process's count (no multiprocess directory in a test process)."""
    from prometheus_client import REGISTRY

    SWEEPER_PICKUPS.made()
    return REGISTRY.get_sample_value("hypd_sweeper_pickups_total") or 0.0


def test_an_operation_never_enqueued_is_kicked_after_grace_and_runs_each_step_once(env):
    engine, runner, queue, store, sweeper, clock = (
        env.engine, env.runner, env.queue, env.store, env.sweeper, env.clock)
    op = _record_without_enqueueing(store, "a")
    assert "next_run_at" not in engine.view(store.get(op["id"]))  # bookkeeping, not public

    assert sweeper.sweep() == []  # just recorded: its first task may still be on its way
    clock.offset = GRACE_S + 0.1
    pickups = _pickups()
    assert sweeper.sweep() == [op["id"]]
    assert queue.items == [(op["id"], 1, 0)]  # the stored generation
    assert sweeper.sweep() == []  # at most one kick per grace period
    assert _pickups() == pickups + 1  # counted once (/metrics)
    assert store.redis.pttl(kick_key(op["id"])) > 0

    drain(runner, queue)
    runner.advance(op["id"], 1)  # the "lost" first task turns up after all: a duplicate
    drain(runner, queue)
    final = store.get(op["id"])
    assert final["status"] == "succeeded"
    assert CALLS == ["one", "two", "two.wait"]  # each step once
    assert store.redis.zscore(DUE_INDEX, op["id"]) is None  # finished: out of the index
    clock.offset = 3600
    store.redis.delete(kick_key(op["id"]))
    assert sweeper.sweep() == []


def test_an_operation_whose_lease_is_held_is_never_kicked_however_late(env):
    engine, queue, store, sweeper, clock = (
        env.engine, env.queue, env.store, env.sweeper, env.clock)
    op, _ = engine.submit(KIND, "thing/b", {"name": "b"}, "tester")
    queue.items.clear()
    store.redis.set(lease_key(op["id"]), "a-live-worker", px=60_000)  # a long step runs
    for offset in (GRACE_S + 0.1, 60, 3600):
        clock.offset = offset
        assert sweeper.sweep() == []
    assert queue.items == []
    store.redis.delete(lease_key(op["id"]))  # its worker died: the lease runs out
    assert sweeper.sweep() == [op["id"]]


def test_a_countdown_not_yet_due_is_left_alone_and_picked_up_once_overdue(env):
    engine, runner, queue, store, sweeper, clock = (
        env.engine, env.runner, env.queue, env.store, env.sweeper, env.clock)
    WAITS.append(30.0)  # step two's resources are not ready: check again in 30 s
    op, _ = engine.submit(KIND, "thing/c", {"name": "c"}, "tester")
    runner.advance(*queue.items.pop(0)[:2])  # one
    runner.advance(*queue.items.pop(0)[:2])  # two applied, waiting
    assert queue.items[-1][2] == 30.0
    waiting = store.get(op["id"])
    assert waiting["next_run_at"] == pytest.approx(time.time() + 30, abs=2)
    assert store.redis.zscore(DUE_INDEX, op["id"]) == pytest.approx(waiting["next_run_at"])

    for offset in (GRACE_S + 0.1, 29, 30 + GRACE_S - 0.5):
        clock.offset = offset
        assert sweeper.sweep() == [], offset
    queue.items.clear()  # the worker holding that countdown dies with it
    clock.offset = 30 + GRACE_S + 0.5
    assert sweeper.sweep() == [op["id"]]
    drain(runner, queue)
    assert store.get(op["id"])["status"] == "succeeded"
    assert CALLS == ["one", "two", "two.wait", "two.wait"]  # checked again, never re-applied


def test_a_step_whose_worker_died_is_resumed_exactly_once(env):
    """Killed after AWS answered (step `applying`): the lease first keeps the sweeper off;
    once it lapses, one kick resumes the step (adopting), and neither a second sweep nor
    the broker's late redelivery of the killed task runs it again."""
    engine, runner, queue, store, sweeper, clock = (
        env.engine, env.runner, env.queue, env.store, env.sweeper, env.clock)
    op, _ = engine.submit(KIND, "thing/d", {"name": "d", "die_in_one": True}, "tester")
    killed = queue.items.pop(0)
    with pytest.raises(KeyboardInterrupt):
        runner.advance(*killed[:2])
    assert store.get(op["id"])["steps"][0]["phase"] == "applying"
    store.redis.set(lease_key(op["id"]), "the-dead-worker", px=300)  # not yet lapsed

    clock.offset = GRACE_S + 0.1
    assert sweeper.sweep() == []
    time.sleep(0.35)  # the dead worker's lease runs out
    assert sweeper.sweep() == [op["id"]]
    assert sweeper.sweep() == []
    drain(runner, queue)
    runner.advance(*killed[:2])  # the broker redelivers the killed task, much later
    drain(runner, queue)

    final = store.get(op["id"])
    assert final["status"] == "succeeded"
    assert final["steps"][0]["attempts"] == 2  # the killed attempt and the resumed one
    assert CALLS == ["one", "one", "two", "two.wait"]


def test_a_retried_operation_is_back_in_the_index_with_a_fresh_due_time(env):
    engine, queue, store, sweeper, clock = (
        env.engine, env.queue, env.store, env.sweeper, env.clock)
    op, _ = engine.submit(KIND, "thing/e", {"name": "e"}, "tester")
    queue.items.clear()
    engine.cancel(op["id"])  # queued: cancelled at once
    assert store.redis.zscore(DUE_INDEX, op["id"]) is None
    engine.retry(op["id"])
    assert store.redis.zscore(DUE_INDEX, op["id"]) == pytest.approx(time.time(), abs=2)
    queue.items.clear()  # its web process died before the enqueue landed
    clock.offset = GRACE_S + 0.1
    assert sweeper.sweep() == [op["id"]]
    assert queue.items == [(op["id"], store.get(op["id"])["generation"], 0)]


def test_one_sweep_per_interval_whichever_worker_gets_the_turn(env):
    queue, store, sweeper, clock = (env.queue, env.store, env.sweeper, env.clock)
    other = Sweeper(store, queue, grace_s=GRACE_S, interval_s=0.2, clock=clock)
    assert sweeper.sweep_if_turn() == []
    assert other.sweep_if_turn() is None  # not its turn this interval
    time.sleep(0.25)
    assert other.sweep_if_turn() == []


def test_an_unfinished_record_from_before_due_times_is_indexed_and_kicked(env):
    runner, queue, store, sweeper, clock = (
        env.runner, env.queue, env.store, env.sweeper, env.clock)
    op = _record_without_enqueueing(store, "f")
    legacy = {k: v for k, v in store.get(op["id"]).items() if k != "next_run_at"}
    store.redis.set(op_key(op["id"]), json.dumps(legacy))
    store.redis.zrem(DUE_INDEX, op["id"])
    assert store.index_unscheduled() == 1
    assert store.index_unscheduled() == 0
    clock.offset = GRACE_S + 0.1
    assert sweeper.sweep() == [op["id"]]
    drain(runner, queue)
    assert store.get(op["id"])["status"] == "succeeded"
