"""Kueue's admission decision (sandbox/simulator/kueue_admission.py) on plain data: the
limits that bound borrowing, and who may be preempted for whom."""

from __future__ import annotations

from sandbox.simulator.kueue_admission import Candidate, Queue, Quota, Running, decide

GPU = ("p5", "nvidia.com/gpu")


def _queue(name: str, nominal: float, borrow: float = float("inf"), lend: float | None = None,
           within: str = "Never", reclaim: str = "Any") -> Queue:
    return Queue(name, "cohort", {GPU: Quota(nominal, borrow, lend)}, ["p5"], within, reclaim)


def _wants(key: str, queue: str, gpus: float, priority: int = 0, created: str = "1") -> Candidate:
    return Candidate(key, queue, priority, created, {GPU: gpus})


def _runs(key: str, queue: str, gpus: float, priority: int = 0, admitted: str = "1") -> Running:
    return Running(key, queue, priority, admitted, {GPU: gpus})


def test_borrowing_stops_at_the_borrowing_limit_and_at_what_others_lend() -> None:
    queues = {"a": _queue("a", 8, lend=2), "b": _queue("b", 8, borrow=4)}
    # B may borrow 4 by its own limit, but A lends only 2
    decision = decide(queues, [], [_wants("b1", "b", 11)])
    assert decision.admitted == [] and decision.waiting["b1"] == ("p5", "nvidia.com/gpu", 1.0)
    assert decide(queues, [], [_wants("b1", "b", 10)]).admitted == ["b1"]
    # without lending limits B's own borrowing limit binds
    queues = {"a": _queue("a", 8), "b": _queue("b", 8, borrow=4)}
    assert decide(queues, [], [_wants("b1", "b", 13)]).waiting["b1"] == (
        "p5", "nvidia.com/gpu", 1.0)


def test_pending_work_goes_by_priority_then_by_age() -> None:
    queues = {"a": _queue("a", 8, borrow=0)}
    decision = decide(queues, [], [_wants("old", "a", 8, 1, "1"), _wants("new", "a", 8, 5, "2"),
                                   _wants("older", "a", 8, 5, "0")])
    assert decision.admitted == ["older"]
    assert set(decision.waiting) == {"old", "new"}


def test_a_lender_reclaims_from_borrowers_newest_lowest_first_and_only_what_it_needs() -> None:
    queues = {"a": _queue("a", 8), "b": _queue("b", 8)}
    running = [_runs("b-own", "b", 8, 9, "1"), _runs("b-old", "b", 4, 1, "2"),
               _runs("b-new", "b", 4, 1, "3")]
    decision = decide(queues, running, [_wants("a1", "a", 4)])
    assert decision.admitted == ["a1"]
    assert decision.preempted == {"b-new": ("a1", "InCohortReclamation")}


def test_reclaim_lower_priority_spares_the_borrower_of_higher_priority() -> None:
    queues = {"a": _queue("a", 8, reclaim="LowerPriority"), "b": _queue("b", 8)}
    running = [_runs("b1", "b", 16, priority=5)]
    decision = decide(queues, running, [_wants("a1", "a", 8, priority=1)])
    assert decision.admitted == [] and decision.preempted == {}


def test_within_a_queue_only_lower_priorities_make_room_and_never_without_the_policy() -> None:
    running = [_runs("low", "a", 4, 1), _runs("mid", "a", 4, 5)]
    lone = {"a": _queue("a", 8, borrow=0, within="LowerPriority")}
    decision = decide(lone, running, [_wants("high", "a", 4, 9)])
    assert decision.preempted == {"low": ("high", "InClusterQueue")}
    assert decide(lone, running, [_wants("same", "a", 4, 1)]).preempted == {}
    never = {"a": _queue("a", 8, borrow=0)}
    assert decide(never, running, [_wants("high", "a", 4, 9)]).preempted == {}
