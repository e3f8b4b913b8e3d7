"""The operation WebSocket: first-message auth, snapshot + events, resume, close codes."""

from __future__ import annotations

import json
import uuid

from tests.app.wskit import connect as _connect
from tests.app.wskit import read_all as _read_all
from tests.stack import MEMBER_TOKENS, wait_until


def _network(stack) -> str:
    with stack.client() as c:
        reply = c.post("/api/v1/networks", json={"name": f"ws-{uuid.uuid4().hex[:6]}"})
    assert reply.status_code == 202
    return reply.json()["operation"]["id"]


def test_stream_follows_an_operation_to_its_end(stack):
    op_id = _network(stack)
    ws = _connect(stack, op_id)
    ws.send(json.dumps({"type": "auth", "token": stack.viewer_token}))
    messages, code = _read_all(ws)
    assert code == 1000
    assert messages[0]["type"] == "operation" and messages[0]["operation"]["id"] == op_id
    events = [m for m in messages[1:] if m["type"] == "event"]
    assert events[-1]["event"]["type"] == "operation"
    assert events[-1]["event"]["status"] == "succeeded"
    ids = [m["id"] for m in events]
    assert ids == sorted(ids, key=lambda i: tuple(map(int, i.split("-"))))
    assert len(set(ids)) == len(ids)
    phases = {(m["event"].get("step"), m["event"].get("phase")) for m in events}
    assert ("vpc", "applying") in phases and ("s3_endpoint", "succeeded") in phases

    # resuming from an id gives exactly what came after it
    middle = ids[len(ids) // 2]
    ws = _connect(stack, op_id)
    ws.send(json.dumps({"type": "auth", "token": stack.viewer_token, "after": middle}))
    resumed, code = _read_all(ws)
    assert [m["id"] for m in resumed if m["type"] == "event"] == ids[ids.index(middle) + 1:]


def test_bad_or_missing_token_closes_4401(stack):
    op_id = _network(stack)
    ws = _connect(stack, op_id)
    ws.send(json.dumps({"type": "auth", "token": "wrong"}))
    assert _read_all(ws) == ([], 4401)
    ws = _connect(stack, op_id)
    ws.send(json.dumps({"type": "hello"}))
    assert _read_all(ws)[1] == 4401


def test_cross_origin_closes_4403(stack):
    op_id = _network(stack)
    ws = _connect(stack, op_id, origin="http://evil.example")
    assert _read_all(ws)[1] == 4403  # refused before it may even authenticate


def test_viewer_cannot_cancel_over_the_socket_operator_can(stack):
    # Hold the first AWS call so the operation is certainly still running.
    stack.wait_idle()
    hold = stack.sandbox.hold("ec2", "CreateVpc")
    try:
        op_id = _network(stack)
        stack.sandbox.wait_held(hold, timeout=20)
        ws = _connect(stack, op_id)
        ws.send(json.dumps({"type": "auth", "token": stack.viewer_token}))
        ws.send(json.dumps({"type": "cancel"}))
        messages, code = _read_all(ws)
        assert code == 4403
        assert messages[-1]["type"] == "error"
        assert messages[-1]["error"]["code"] == "forbidden"

        # a team member's operator token cancels only its team's job operations
        ws = _connect(stack, op_id)
        ws.send(json.dumps({"type": "auth", "token": MEMBER_TOKENS["ana"][1]}))
        ws.send(json.dumps({"type": "cancel"}))
        refusal = next(m for m in iter(lambda: json.loads(ws.recv()), None)
                       if m.get("type") == "error")
        ws.close()
        assert refusal["error"]["code"] == "forbidden"
        assert "member of team" in refusal["error"]["message"]
        with stack.client() as c:
            assert c.get(f"/api/v1/operations/{op_id}").json()["cancel_requested"] is False

        ws = _connect(stack, op_id)
        ws.send(json.dumps({"type": "auth", "token": stack.operator_token}))
        ws.send(json.dumps({"type": "cancel"}))

        def cancel_recorded() -> bool:
            with stack.client() as c:
                return c.get(f"/api/v1/operations/{op_id}").json()["cancel_requested"]

        wait_until(cancel_recorded, 20, what="the cancel sent over the socket")
        stack.sandbox.release(hold)
        messages, code = _read_all(ws)
        assert code == 1000
        assert messages[-1]["event"]["status"] == "cancelled"
    finally:
        stack.sandbox.clear_holds()


def test_unknown_operation_closes_4404(stack):
    ws = _connect(stack, "op_nope")
    ws.send(json.dumps({"type": "auth", "token": stack.operator_token}))
    assert _read_all(ws)[1] == 4404
