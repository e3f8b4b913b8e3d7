"""A running step keeps its lease and its mutexes for as long as it really runs.

The mutex is taken in the step's thread and renewed from the heartbeat's thread, so it must
not keep its token thread-locally (it did: the heartbeat died on its first renewal, the
mutex lapsed under a slow step, and a duplicate attempt made a fifth subnet).
"""

from __future__ import annotations

import time

from tasks.engine.heartbeat import Heartbeat
from tasks.engine.runner import StepRuntime
from tasks.engine.store import OperationStore


def _op() -> tuple[dict, dict]:
    step = {"name": "subnets", "resources": {}}
    op = {"id": "op_T", "generation": 1, "actor": "operator", "kind": "test.thing",
          "target": "network/t", "params": {}, "steps": [step]}
    return op, step


def test_a_step_slower_than_its_ttls_keeps_lease_and_mutex(redis_db):
    ttl_ms = 600
    redis_db.set("hypd:lease:op_T", "me", px=ttl_ms)
    op, step = _op()
    with Heartbeat(redis_db, "hypd:lease:op_T", "me", ttl_ms) as beat:
        ctx = StepRuntime(OperationStore(redis_db), op, step, "us-west-2",
                          lock_ttl_s=ttl_ms / 2000, heartbeat=beat)
        with ctx.lock("vpc/vpc-1"):
            time.sleep(4 * ttl_ms / 1000)  # four lease lifetimes, over two of the mutex's
            assert redis_db.get("hypd:lease:op_T") == "me"
            assert redis_db.exists("hypd:mutex:vpc/vpc-1"), "the mutex lapsed mid-step"
            assert redis_db.pttl("hypd:mutex:vpc/vpc-1") > 0
    assert not redis_db.exists("hypd:mutex:vpc/vpc-1"), "released when the step ended"


def test_without_a_heartbeat_the_mutex_lapses(redis_db):
    """The control: what the heartbeat prevents does happen without it."""
    op, step = _op()
    ctx = StepRuntime(OperationStore(redis_db), op, step, "us-west-2", lock_ttl_s=0.2)
    with ctx.lock("vpc/vpc-2"):  # a mutex lives at least 1 s
        time.sleep(1.4)
        assert not redis_db.exists("hypd:mutex:vpc/vpc-2")


def test_a_lapsed_lease_is_taken_back_but_another_holder_is_never_displaced(redis_db):
    """A late beat (a CPU-starved process) finds its lease gone: the step still runs, so
    the lease must say so again, or the sweeper would kick a live operation. A lease that
    another execution took meanwhile is left alone."""
    beat = Heartbeat(redis_db, "hypd:lease:op_L", "me", 60_000)
    beat.beat()  # lapsed (never there)
    assert redis_db.get("hypd:lease:op_L") == "me"
    assert redis_db.pttl("hypd:lease:op_L") > 50_000
    redis_db.set("hypd:lease:op_L", "someone-else", px=1000)
    beat.beat()
    assert redis_db.get("hypd:lease:op_L") == "someone-else"
    assert redis_db.pttl("hypd:lease:op_L") <= 1000
