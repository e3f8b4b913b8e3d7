"""The derived idempotency keys: stable for 10 minutes after the first call, no window edge."""

from __future__ import annotations

from mcp_server.idempotency import WINDOW_S, IdempotencyKeys, canonical_arguments, derive_key


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


ARGS = {"name": "lab", "availability_zones": ["us-west-2a", "us-west-2b"]}


def test_canonical_arguments_ignore_order_unset_values_and_the_key_itself() -> None:
    a = canonical_arguments({"name": "lab", "cidr": None, "region": "us-west-2"})
    b = canonical_arguments({"region": "us-west-2", "name": "lab", "idempotency_key": "x"})
    assert a == b == '{"name":"lab","region":"us-west-2"}'


def test_key_is_stable_across_the_window_edge() -> None:
    clock = Clock(WINDOW_S * 1000 + WINDOW_S - 1)  # one second before a bucket boundary
    keys = IdempotencyKeys(clock=clock)
    first, replayed = keys.key_for("p", "create_network", ARGS)
    assert first.startswith("mcp-") and replayed is False
    keys.accepted("p", "create_network", ARGS, first)
    clock.now += 2  # the blind retry lands in the next bucket
    again, replayed = keys.key_for("p", "create_network", dict(reversed(ARGS.items())))
    assert again == first and replayed is True
    clock.now += WINDOW_S - 3  # still within 10 minutes of the first call
    assert keys.key_for("p", "create_network", ARGS)[0] == first


def test_key_changes_after_ten_minutes() -> None:
    clock = Clock(1_000_000.0)
    keys = IdempotencyKeys(clock=clock)
    first, _ = keys.key_for("p", "create_network", ARGS)
    keys.accepted("p", "create_network", ARGS, first)
    clock.now += WINDOW_S
    later, replayed = keys.key_for("p", "create_network", ARGS)
    assert later != first and replayed is False


def test_another_process_derives_the_same_key_within_the_bucket() -> None:
    t = WINDOW_S * 5000 + 10
    mine = IdempotencyKeys(clock=Clock(t)).key_for("p", "delete_network", {"name": "lab"})[0]
    theirs = IdempotencyKeys(clock=Clock(t + 300)).key_for("q", "delete_network",
                                                           {"name": "lab"})[0]
    assert mine == theirs == derive_key("delete_network", {"name": "lab"}, t)


def test_keys_differ_by_tool_arguments_and_caller_memory() -> None:
    keys = IdempotencyKeys(clock=Clock(1_000_000.0))
    a = keys.key_for("p", "create_network", {"name": "a"})[0]
    b = keys.key_for("p", "create_network", {"name": "b"})[0]
    c = keys.key_for("p", "delete_network", {"name": "a"})[0]
    assert len({a, b, c}) == 3
    keys.accepted("p", "create_network", {"name": "a"}, a)
    # Another caller's first call is not a replay of this caller's.
    assert keys.key_for("other", "create_network", {"name": "a"}) == (a, False)


def test_memory_is_bounded() -> None:
    clock = Clock(1_000_000.0)
    keys = IdempotencyKeys(clock=clock, max_entries=10)
    for i in range(50):
        keys.key_for("p", "create_network", {"name": f"n{i}"})
    assert len(keys._entries) <= 10
