"""The operation engine against a real Redis, with steps we control."""

from __future__ import annotations

import json

import pytest

from tasks.engine.errors import Conflict, IdempotencyKeyReused, InvalidTransition, UnknownKind
from tasks.engine.kinds import OperationKind, Step, StepFailed, StepRetry, kind_table
from tasks.engine.runner import MAX_ATTEMPTS, UNFINISHED_ATTEMPT, Runner
from tasks.engine.service import Engine
from tasks.engine.store import IdempotencyClaim, OperationStore, lease_key

CALLS: list[tuple[str, str]] = []
BEHAVIOUR: dict[str, object] = {}


def _apply(name):
    def apply(ctx):
        stored = STORE[0].get(ctx.op_id)
        phase = next(s["phase"] for s in stored["steps"] if s["name"] == name)
        CALLS.append((name, phase))
        action = BEHAVIOUR.get(name)
        if isinstance(action, BaseException):
            raise action
        if callable(action):
            return action(ctx)
        return {f"{name}_id": f"{name}-1"}

    return apply


def _wait(name):
    def wait(ctx):
        pending = BEHAVIOUR.get(f"{name}.wait", [])
        return pending.pop(0) if pending else None

    return wait


STORE: list[OperationStore] = []
KIND = OperationKind(
    name="test.thing",
    steps=(
        Step("one", "Step one", _apply("one")),
        Step("two", "Step two", _apply("two"), _wait("two")),
        Step("three", "Step three", _apply("three")),
    ),
    resource_url=lambda p: f"/api/v1/things/{p['name']}",
)


class Queue:
    def __init__(self) -> None:
        self.items: list[tuple[str, int, float]] = []

    def __call__(self, op_id: str, generation: int, countdown: float) -> None:
        self.items.append((op_id, generation, countdown))


@pytest.fixture
def env(redis_db):
    CALLS.clear()
    BEHAVIOUR.clear()
    store = OperationStore(redis_db)
    STORE[:] = [store]
    queue = Queue()
    engine = Engine(store, queue, KINDS)
    runner = Runner(store, queue, KINDS, region="us-west-2", poll_min_s=0.1, poll_max_s=2,
                    lease_s=5)
    return engine, runner, queue, store


def drain(runner: Runner, queue: Queue, limit: int = 50) -> None:
    """Run queued tasks in order, as a worker would (countdowns ignored)."""
    for _ in range(limit):
        if not queue.items:
            return
        op_id, gen, _ = queue.items.pop(0)
        runner.advance(op_id, gen)
    raise AssertionError("operation did not settle")


def test_steps_run_in_order_each_marked_applying_before_its_mutation(env):
    engine, runner, queue, store = env
    op, created = engine.submit(KIND, "thing/a", {"name": "a"}, "tester")
    assert created and op["status"] == "queued"
    drain(runner, queue)
    final = store.get(op["id"])
    assert final["status"] == "succeeded"
    assert [s["phase"] for s in final["steps"]] == ["succeeded"] * 3
    assert CALLS == [("one", "applying"), ("two", "applying"), ("three", "applying")]
    assert final["steps"][0]["resources"] == {"one_id": "one-1"}
    assert store.redis.hget("hypd:locks", "thing/a") is None


def test_events_record_every_phase_change(env):
    engine, runner, queue, store = env
    op, _ = engine.submit(KIND, "thing/a", {"name": "a"}, "tester")
    drain(runner, queue)
    events = [e for _, e in store.events(op["id"])]
    step_one = [e["phase"] for e in events if e.get("step") == "one"]
    assert step_one == ["applying", "applied", "succeeded"]
    assert events[-1]["type"] == "operation" and events[-1]["status"] == "succeeded"
    firehose = store.redis.xrange("hypd:events")
    assert len(firehose) == len(events)


def test_second_operation_on_same_ancestor_or_descendant_target_conflicts(env):
    engine, _, _, _ = env
    op, _ = engine.submit(KIND, "cluster/c", {"name": "c"}, "tester")
    for target in ("cluster/c", "cluster/c/feature/x"):
        with pytest.raises(Conflict) as info:
            engine.submit(KIND, target, {"name": "c"}, "tester")
        assert info.value.details["operation_id"] == op["id"]
    _other, created = engine.submit(KIND, "cluster/cc", {"name": "cc"}, "tester")
    assert created


def test_descendant_lock_blocks_ancestor(env):
    engine, _, _, _ = env
    op, _ = engine.submit(KIND, "cluster/c/feature/x", {"name": "c"}, "tester")
    with pytest.raises(Conflict) as info:
        engine.submit(KIND, "cluster/c", {"name": "c"}, "tester")
    assert op["id"] in info.value.message


def test_idempotency_key_same_body_same_operation_other_body_refused(env):
    engine, _, queue, _ = env
    claim = IdempotencyClaim("k1", "tester POST /x", {"name": "a"})
    first, created = engine.submit(KIND, "thing/a", {"name": "a"}, "tester", claim)
    again, created_again = engine.submit(KIND, "thing/a", {"name": "a"}, "tester",
                                         IdempotencyClaim("k1", "tester POST /x", {"name": "a"}))
    assert created and not created_again and again["id"] == first["id"]
    assert len(queue.items) == 1  # enqueued once
    with pytest.raises(IdempotencyKeyReused):
        engine.submit(KIND, "thing/b", {"name": "b"}, "tester",
                      IdempotencyClaim("k1", "tester POST /x", {"name": "b"}))
    # another scope (token name) is another key
    _, created_other = engine.submit(KIND, "thing/c", {"name": "c"}, "tester",
                                     IdempotencyClaim("k1", "other POST /x", {"name": "a"}))
    assert created_other


def test_stale_generation_does_nothing(env):
    engine, runner, queue, store = env
    _op, _ = engine.submit(KIND, "thing/a", {"name": "a"}, "tester")
    op_id, gen, _ = queue.items.pop(0)
    runner.advance(op_id, gen)  # step one done, gen bumped
    before = store.get(op_id)
    runner.advance(op_id, gen)  # a duplicate of the old message
    assert store.get(op_id)["version"] == before["version"]
    assert CALLS == [("one", "applying")]


def test_duplicate_while_lease_held_reschedules_instead_of_running(env):
    engine, runner, queue, store = env
    _op, _ = engine.submit(KIND, "thing/a", {"name": "a"}, "tester")
    op_id, gen, _ = queue.items.pop(0)
    store.redis.set(lease_key(op_id), "someone-else", px=5000)
    runner.advance(op_id, gen)
    assert CALLS == []
    assert queue.items == [(op_id, gen, 0.1)]


def test_crash_after_mutation_resumes_same_step_adopting(env):
    """A worker dying inside apply leaves the step `applying`; the redelivered task calls
    apply again (which adopts), and the operation finishes."""
    engine, runner, queue, store = env
    _op, _ = engine.submit(KIND, "thing/a", {"name": "a"}, "tester")
    BEHAVIOUR["one"] = KeyboardInterrupt()  # stands in for SIGKILL: nothing after runs
    op_id, gen, _ = queue.items.pop(0)
    with pytest.raises(KeyboardInterrupt):
        runner.advance(op_id, gen)
    assert store.get(op_id)["steps"][0]["phase"] == "applying"
    del BEHAVIOUR["one"]
    store.redis.delete(lease_key(op_id))  # the lease of the dead worker runs out
    runner.advance(op_id, gen)  # the broker redelivers the same message
    drain(runner, queue)
    final = store.get(op_id)
    assert final["status"] == "succeeded"
    assert final["steps"][0]["attempts"] == 2


def test_wait_reschedules_with_clamped_countdown(env):
    engine, runner, queue, store = env
    BEHAVIOUR["two.wait"] = [0.0001, 30.0]
    op, _ = engine.submit(KIND, "thing/a", {"name": "a"}, "tester")
    runner.advance(*queue.items.pop(0)[:2])  # one
    runner.advance(*queue.items.pop(0)[:2])  # two applied, first wait
    assert queue.items[-1][2] == 0.1  # clamped up to poll_min
    assert store.get(op["id"])["steps"][1]["phase"] == "applied"
    runner.advance(*queue.items.pop(0)[:2])
    assert queue.items[-1][2] == 2  # clamped down to poll_max
    drain(runner, queue)
    assert store.get(op["id"])["status"] == "succeeded"
    assert CALLS.count(("two", "applying")) == 1  # waiting never re-applies


def test_failure_then_retry_keeps_id_and_resumes_at_failed_step(env):
    engine, runner, queue, store = env
    BEHAVIOUR["two"] = StepFailed("the quota is exhausted", code="quota_exceeded")
    op, _ = engine.submit(KIND, "thing/a", {"name": "a"}, "tester")
    drain(runner, queue)
    failed = store.get(op["id"])
    assert failed["status"] == "failed"
    assert failed["error"] == {"code": "quota_exceeded", "message": "the quota is exhausted",
                               "step": "two"}
    assert store.redis.hget("hypd:locks", "thing/a") is None
    del BEHAVIOUR["two"]
    retried = engine.retry(op["id"])
    assert retried["id"] == op["id"] and retried["status"] == "queued"
    assert store.redis.hget("hypd:locks", "thing/a") == op["id"]
    drain(runner, queue)
    assert store.get(op["id"])["status"] == "succeeded"
    assert [c for c in CALLS if c[0] == "one"] == [("one", "applying")]  # not redone


def test_retry_refused_while_target_taken_by_another(env):
    engine, runner, queue, _ = env
    BEHAVIOUR["one"] = StepFailed("no")
    op, _ = engine.submit(KIND, "thing/a", {"name": "a"}, "tester")
    drain(runner, queue)
    engine.submit(KIND, "thing/a", {"name": "a"}, "tester")
    with pytest.raises(Conflict):
        engine.retry(op["id"])


def test_retry_of_running_or_succeeded_refused(env):
    engine, runner, queue, _ = env
    op, _ = engine.submit(KIND, "thing/a", {"name": "a"}, "tester")
    with pytest.raises(InvalidTransition):
        engine.retry(op["id"])
    drain(runner, queue)
    with pytest.raises(InvalidTransition):
        engine.retry(op["id"])
    with pytest.raises(InvalidTransition):
        engine.cancel(op["id"])


def test_cancel_queued_is_immediate(env):
    engine, runner, queue, store = env
    op, _ = engine.submit(KIND, "thing/a", {"name": "a"}, "tester")
    cancelled = engine.cancel(op["id"])
    assert cancelled["status"] == "cancelled"
    assert all(s["phase"] == "skipped" for s in cancelled["steps"])
    drain(runner, queue)
    assert CALLS == []
    assert store.redis.hget("hypd:locks", "thing/a") is None


def test_cancel_running_takes_effect_at_next_boundary(env):
    engine, runner, queue, store = env
    op, _ = engine.submit(KIND, "thing/a", {"name": "a"}, "tester")
    runner.advance(*queue.items.pop(0)[:2])  # step one done
    engine.cancel(op["id"])
    drain(runner, queue)
    final = store.get(op["id"])
    assert final["status"] == "cancelled"
    assert [s["phase"] for s in final["steps"]] == ["succeeded", "skipped", "skipped"]
    assert CALLS == [("one", "applying")]


def test_a_cancel_after_the_last_step_leaves_the_finished_operation_succeeded(env):
    engine, runner, queue, store = env
    op, _ = engine.submit(KIND, "thing/a", {"name": "a"}, "tester")
    for _ in range(3):  # each step to its boundary; the one that would succeed stays queued
        runner.advance(*queue.items.pop(0)[:2])
    assert all(s["phase"] == "succeeded" for s in store.get(op["id"])["steps"])
    engine.cancel(op["id"])
    drain(runner, queue)
    final = store.get(op["id"])
    assert final["status"] == "succeeded"
    assert [s["phase"] for s in final["steps"]] == ["succeeded"] * 3


def test_temporary_errors_retry_with_backoff_then_give_up(env):
    engine, runner, queue, store = env
    BEHAVIOUR["one"] = StepRetry("DependencyViolation: still in use")
    op, _ = engine.submit(KIND, "thing/a", {"name": "a"}, "tester")
    countdowns = []
    for _ in range(MAX_ATTEMPTS + 1):
        op_id, gen, countdown = queue.items.pop(0)
        countdowns.append(countdown)
        runner.advance(op_id, gen)
    final = store.get(op["id"])
    assert final["status"] == "failed"
    assert final["error"]["code"] == "retries_exhausted"
    assert "DependencyViolation" in final["error"]["message"]
    assert countdowns[1] < countdowns[3] <= 2  # backs off, capped


def test_a_step_whose_every_attempt_was_cut_short_says_so_when_it_gives_up(env):
    """A worker killed (or time-limited) inside apply records no outcome; after the last
    attempt the error says why there is none, not "None"."""
    engine, runner, queue, store = env
    BEHAVIOUR["one"] = KeyboardInterrupt()  # stands in for SIGKILL: nothing after runs
    _op, _ = engine.submit(KIND, "thing/a", {"name": "a"}, "tester")
    op_id, gen, _ = queue.items.pop(0)
    for _ in range(MAX_ATTEMPTS):
        with pytest.raises(KeyboardInterrupt):
            runner.advance(op_id, gen)
        store.redis.delete(lease_key(op_id))  # the dead worker's lease runs out
    runner.advance(op_id, gen)  # redelivered once more: no attempt left
    final = store.get(op_id)
    assert (final["status"], final["error"]["code"]) == ("failed", "retries_exhausted")
    assert final["error"]["message"] == (
        f"gave up after {MAX_ATTEMPTS} attempts: {UNFINISHED_ATTEMPT}")


def test_record_persists_partial_resources(env):
    engine, runner, queue, store = env

    def partial(ctx):
        ctx.record(first="r-1")
        raise KeyboardInterrupt

    BEHAVIOUR["one"] = partial
    op, _ = engine.submit(KIND, "thing/a", {"name": "a"}, "tester")
    with pytest.raises(KeyboardInterrupt):
        runner.advance(*queue.items.pop(0)[:2])
    assert store.get(op["id"])["steps"][0]["resources"] == {"first": "r-1"}


def test_wait_returns_on_next_event(env):
    engine, runner, queue, _store = env
    op, _ = engine.submit(KIND, "thing/a", {"name": "a"}, "tester")
    import threading

    timer = threading.Timer(0.2, lambda: runner.advance(*queue.items.pop(0)[:2]))
    timer.start()
    view = json.loads(engine.wait_json(op["id"], 5))
    timer.join()
    assert view["status"] == "running"
    assert view["last_event_id"]


def test_task_from_a_future_generation_comes_back_instead_of_being_dropped(env):
    """The next boundary is enqueued before the generation bump lands; a fast worker may
    pick it up in between. It must look again, not vanish (or the operation stalls)."""
    engine, runner, queue, _ = env
    op, _ = engine.submit(KIND, "thing/a", {"name": "a"}, "tester")
    queue.items.clear()
    runner.advance(op["id"], op["generation"] + 1)
    assert CALLS == []
    assert queue.items == [(op["id"], op["generation"] + 1, 0.1)]


SEEN_OUTPUTS: list[dict] = []
SELECTIVE = OperationKind(
    name="test.selective",
    steps=(
        Step("made", "Make it", lambda ctx: {"id": "new"}, stage="first"),
        Step("given", "Take it as given", lambda ctx: {"id": ctx.params["given"]}, stage="first"),
        Step("use", "Use it", lambda ctx: SEEN_OUTPUTS.append(dict(ctx.outputs)) or {},
             stage="second"),
    ),
    select=lambda p: tuple(s for s in SELECTIVE.steps
                           if s.name != ("made" if p.get("given") else "given")),
)


def _take_back(ctx):
    CALLS.append(("take back", ctx.step, ctx.outputs["one"].get("one_id")))
    pending = BEHAVIOUR.get("take back", [])
    if pending:
        raise pending.pop(0)


TAKING_BACK = OperationKind(name="test.taking-back", steps=KIND.steps, on_cancel=_take_back)
KINDS = kind_table(KIND, SELECTIVE, TAKING_BACK)


def test_a_cancelled_operation_takes_back_what_it_made_before_it_stops(env):
    """on_cancel runs at the boundary where the cancel lands, with that step's context; a
    retryable failure of it waits for the next boundary, a permanent one still cancels."""
    engine, runner, queue, store = env
    BEHAVIOUR["two.wait"] = [0.1, 0.1]
    BEHAVIOUR["take back"] = [StepRetry("Throttling"), StepFailed("gone")]
    op, _ = engine.submit(TAKING_BACK, "thing/t", {"name": "t"}, "tester")
    runner.advance(*queue.items.pop(0)[:2])  # one
    runner.advance(*queue.items.pop(0)[:2])  # two applied, waiting
    engine.cancel(op["id"])
    drain(runner, queue)
    final = store.get(op["id"])
    assert final["status"] == "cancelled"
    assert [c for c in CALLS if c[0] == "take back"] == [("take back", "two", "one-1")] * 2


def test_a_kind_outside_the_table_is_refused_at_submit(env):
    engine, _runner, queue, store = env
    stray = OperationKind(name="test.stray", steps=KIND.steps)
    with pytest.raises(UnknownKind):
        engine.submit(stray, "thing/z", {"name": "z"}, "tester")
    assert queue.items == [] and store.list() == []


def test_select_fixes_the_steps_and_inputs_reach_later_steps(env):
    engine, runner, queue, store = env
    SEEN_OUTPUTS.clear()
    op, _ = engine.submit(SELECTIVE, "thing/s", {"given": "g-1"}, "tester",
                          inputs={"earlier": {"vpc_id": "vpc-1"}})
    assert [(s["name"], s["stage"]) for s in op["steps"]] == [("given", "first"),
                                                              ("use", "second")]
    drain(runner, queue)
    assert store.get(op["id"])["status"] == "succeeded"
    assert SEEN_OUTPUTS == [{"earlier": {"vpc_id": "vpc-1"}, "given": {"id": "g-1"}}]


def test_a_long_step_keeps_its_lease_so_a_redelivered_duplicate_backs_off(env):
    """A step that outlives one lease expiry (throttling back-off) keeps the lease: the
    broker's redelivery of the same message finds it held and re-schedules itself."""
    engine, runner, queue, store = env
    runner.lease_ms = 300
    seen: list[str | None] = []

    def slow(ctx):
        import time as clock

        deadline = clock.monotonic() + 1.0  # over three lease lifetimes
        while clock.monotonic() < deadline:
            seen.append(store.redis.get(lease_key(ctx.op_id)))
            duplicate = Runner(store, queue, KINDS, region="us-west-2", poll_min_s=0.1,
                               poll_max_s=2,
                               lease_s=0.3)
            duplicate.advance(ctx.op_id, store.get(ctx.op_id)["generation"])
            clock.sleep(0.1)
        return {"slow": True}

    BEHAVIOUR["one"] = slow
    engine.submit(KIND, "thing/a", {"name": "a"}, "tester")
    op_id, gen, _ = queue.items.pop(0)
    runner.advance(op_id, gen)
    assert all(seen) and len(set(seen)) == 1  # held by the same token all along
    assert [c for c in CALLS if c[0] == "one"] == [("one", "applying")]  # ran once
    assert queue.items[:-1] and all(item == (op_id, gen, 0.1) for item in queue.items[:-1])
    assert store.redis.get(lease_key(op_id)) is None  # released at the end


def test_the_rendered_view_is_the_record_as_clients_see_it_at_every_change(env):
    """The status read answers a view rendered when the operation changed: at each step of
    a whole run it equals the record's public view, with the stream's newest event id."""
    from tasks.engine.model import public_view

    engine, runner, queue, store = env
    BEHAVIOUR["two.wait"] = [0.1]
    op, _ = engine.submit(KIND, "thing/v", {"name": "v"}, "tester")
    seen = 0
    while True:
        record = store.get(op["id"])
        rendered = json.loads(engine.get_json(op["id"]))
        assert rendered == public_view(record, store.last_event_id(op["id"]))
        assert rendered["last_event_id"] is not None
        seen += 1
        if not queue.items:
            break
        runner.advance(*queue.items.pop(0)[:2])
    assert rendered["status"] == "succeeded" and seen > 5
    ids = [i for i, _ in store.events(op["id"])]
    assert ids == sorted(ids, key=lambda i: tuple(map(int, i.split("-"))))
    assert len(set(ids)) == len(ids)


def test_event_ids_stay_ordered_when_the_clock_goes_back(env, monkeypatch):
    engine, _runner, _queue, store = env
    op, _ = engine.submit(KIND, "thing/c", {"name": "c"}, "tester")
    import tasks.engine.store as store_module

    monkeypatch.setattr(store_module.time, "time", lambda: 1.0)  # 1970: far behind
    engine.cancel(op["id"])
    ids = [i for i, _ in store.events(op["id"])]
    first_ms = int(ids[0].split("-")[0])
    assert ids[-1] == f"{first_ms}-{len(ids) - 1}"
    assert json.loads(engine.get_json(op["id"]))["last_event_id"] == ids[-1]
