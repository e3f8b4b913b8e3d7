"""The web pool's gate (app/gate.py) in a real `hypd web`: one process, 12 threads, a gate of
2. Six long-polls and two WebSockets wait on an operation that cannot change (its AWS call is
held); each steps out of the gate while it waits, so ordinary reads still answer, and when
the operation moves on every waiter answers it. Correctness and order only, no timing."""

from __future__ import annotations

import json
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.app import wskit
from tests.stack import Stack, wait_until

LONG_POLLS = 6
SOCKETS = 2
GATE = 2


@pytest.fixture(scope="module")
def gated():
    running = Stack(web_args=("--workers", "1", "--threads", "12", "--gate", str(GATE))).start()
    try:
        yield running
    finally:
        running.stop()


def _blocked_event_reads(stack: Stack) -> int:
    """Redis clients blocked reading an operation's events (long-polls and sockets)."""
    return sum(1 for client in stack.redis().client_list()
               if client.get("cmd") == "xread" and "b" in client.get("flags", ""))


def _follow(stack: Stack, op_id: str) -> tuple[list[str], int | None]:
    """A WebSocket following the operation to its end: its messages' types, its close code."""
    ws = wskit.connect(stack, op_id)
    ws.send(json.dumps({"type": "auth", "token": stack.operator_token}))
    messages, code = wskit.read_all(ws)
    return [m["type"] for m in messages], code


def test_more_waiters_than_gate_slots_neither_starve_reads_nor_deadlock(gated):
    gated.wait_idle()
    hold = gated.sandbox.hold("ec2", "CreateInternetGateway")
    try:
        with gated.client() as c:
            reply = c.post("/api/v1/networks", json={"name": f"gate-{uuid.uuid4().hex[:6]}"})
            assert reply.status_code == 202, reply.text
            op_id = reply.json()["operation"]["id"]
            gated.sandbox.wait_held(hold, timeout=30)
            before = c.get(f"/api/v1/operations/{op_id}").json()
        assert before["status"] == "running"

        def long_poll() -> dict:
            with httpx.Client(base_url=gated.url, timeout=90, headers={
                    "Authorization": f"Bearer {gated.operator_token}"}) as client:
                answer = client.get(f"/api/v1/operations/{op_id}", params={"wait": 60})
            assert answer.status_code == 200, answer.text
            return answer.json()

        with ThreadPoolExecutor(LONG_POLLS + SOCKETS) as clients:
            polls = [clients.submit(long_poll) for _ in range(LONG_POLLS)]
            sockets = [clients.submit(_follow, gated, op_id) for _ in range(SOCKETS)]
            wait_until(lambda: _blocked_event_reads(gated) >= LONG_POLLS + SOCKETS, 60,
                       what="every long-poll and socket waiting on the operation's events")

            with gated.client() as c:  # more waiters than slots: reads still answer
                for _ in range(3):
                    now = c.get(f"/api/v1/operations/{op_id}")
                    assert now.status_code == 200
                    assert now.json()["last_event_id"] == before["last_event_id"]
                    assert c.get("/api/v1/operations", params={"limit": 5}).status_code == 200
            assert not any(f.done() for f in polls + sockets), "a waiter answered unchanged"

            gated.sandbox.release(hold)  # the operation moves on: every waiter answers
            moved = [f.result(timeout=90) for f in polls]
            followed = [f.result(timeout=90) for f in sockets]
        assert all(m["last_event_id"] != now.json()["last_event_id"] for m in moved)
        for kinds, code in followed:
            assert kinds[0] == "operation" and "event" in kinds and code == 1000
        assert gated.wait_operation(op_id)["status"] == "succeeded"
    finally:
        gated.sandbox.clear_holds()
