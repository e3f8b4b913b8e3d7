"""Operations through REST: list filters, long-poll, a permanent AWS failure, retry from the
failed step (same id, nothing re-created), cancel, throttling absorbed."""

from __future__ import annotations

import uuid

from tests.app.test_networks_api import _ec2


def _create(stack, name: str) -> str:
    with stack.client() as c:
        reply = c.post("/api/v1/networks", json={"name": name})
    assert reply.status_code == 202, reply.text
    return reply.json()["operation"]["id"]


def test_failed_step_then_retry_resumes_there_without_recreating(stack):
    name = f"retry-{uuid.uuid4().hex[:6]}"
    stack.wait_idle()
    stack.sandbox.add_fault("ec2", "CreateSecurityGroup", "error", code="UnauthorizedOperation",
                            message="You are not authorized to perform this operation.",
                            status=403)
    before = stack.sandbox.counters()["by_action"]
    op_id = _create(stack, name)
    failed = stack.wait_operation(op_id)
    assert failed["status"] == "failed"
    assert failed["error"]["step"] == "security_group"
    assert "UnauthorizedOperation" in failed["error"]["message"]
    assert {s["name"]: s["phase"] for s in failed["steps"]}["security_group"] == "failed"
    assert {s["name"]: s["phase"] for s in failed["steps"]}["s3_endpoint"] == "pending"

    with stack.client() as c:
        listed = c.get("/api/v1/operations", params={"status": "failed",
                                                     "target": f"network/{name}"}).json()
        assert [o["id"] for o in listed["items"]] == [op_id]
        reply = c.post(f"/api/v1/operations/{op_id}/retry")
    assert reply.status_code == 202
    assert reply.json()["operation"]["id"] == op_id
    assert reply.json()["status_route"] == f"/api/v1/operations/{op_id}"
    done = stack.wait_operation(op_id)
    assert done["status"] == "succeeded", done
    after = stack.sandbox.counters()["by_action"]
    for action in ("ec2:CreateVpc", "ec2:CreateNatGateway", "ec2:CreateInternetGateway"):
        assert after.get(action, 0) - before.get(action, 0) == 1, action
    assert after["ec2:CreateSecurityGroup"] - before.get("ec2:CreateSecurityGroup", 0) == 1

    with stack.client() as c:
        again = c.post(f"/api/v1/operations/{op_id}/retry")
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "conflict"


def test_throttling_is_absorbed_by_retries(stack):
    name = f"thr-{uuid.uuid4().hex[:6]}"
    stack.wait_idle()
    stack.sandbox.add_fault("ec2", "CreateSubnet", "throttle", count=6)
    op = stack.wait_operation(_create(stack, name))
    assert op["status"] == "succeeded", op
    tagged = _ec2(stack).describe_subnets(
        Filters=[{"Name": "tag:hypd:network", "Values": [name]}])["Subnets"]
    assert len(tagged) == 4


def test_cancel_running_operation_stops_at_a_step_boundary(stack):
    name = f"cxl-{uuid.uuid4().hex[:6]}"
    stack.wait_idle()
    hold = stack.sandbox.hold("ec2", "CreateInternetGateway")
    try:
        op_id = _create(stack, name)
        stack.sandbox.wait_held(hold, timeout=30)
        with stack.client() as c:
            reply = c.post(f"/api/v1/operations/{op_id}/cancel")
            assert reply.status_code == 202
            assert reply.json()["operation"]["cancel_requested"] is True
        stack.sandbox.release(hold)
    finally:
        stack.sandbox.clear_holds()
    op = stack.wait_operation(op_id)
    assert op["status"] == "cancelled"
    phases = {s["name"]: s["phase"] for s in op["steps"]}
    assert phases["vpc"] == "succeeded" and phases["subnets"] == "succeeded"
    assert phases["s3_endpoint"] == "skipped"
    with stack.client() as c:
        assert c.post(f"/api/v1/operations/{op_id}/cancel").status_code == 409
        assert c.get("/api/v1/operations/op_missing").status_code == 404


def test_long_poll_returns_on_change_and_list_filters_by_kind(stack):
    op_id = _create(stack, f"poll-{uuid.uuid4().hex[:6]}")
    with stack.client() as c:
        first = c.get(f"/api/v1/operations/{op_id}").json()
        changed = c.get(f"/api/v1/operations/{op_id}",
                        params={"wait": 20, "after": first["last_event_id"]}).json()
        assert changed["last_event_id"] != first["last_event_id"] or changed["status"] in (
            "succeeded", "failed")
        kinds = {o["kind"] for o in c.get("/api/v1/operations",
                                          params={"kind": "network.create"}).json()["items"]}
        assert kinds == {"network.create"}
        bad = c.get("/api/v1/operations", params={"status": "weird"})
        assert bad.status_code == 422 and "status" in bad.json()["error"]["details"]["fields"]
    stack.wait_operation(op_id)


def test_a_status_read_is_the_schema_and_answers_304_while_unchanged(stack):
    """The read is served rendered (one Redis GET): its content is OperationSchema's, it
    makes no AWS call, and a poller sending its ETag back gets 304 until the next change."""
    from schemas.common import OperationSchema

    stack.wait_idle()
    hold = stack.sandbox.hold("ec2", "CreateInternetGateway")
    try:
        op_id = _create(stack, f"etag-{uuid.uuid4().hex[:6]}")
        stack.sandbox.wait_held(hold, timeout=30)
        with stack.client() as c:
            # the reads' window, repeated: on the shared stack the budget watcher calls AWS
            # every 2 s on its own, so a window may catch its calls; a read that called AWS
            # would put a call in every window
            windows = []
            for _ in range(5):
                calls_before = len(stack.sandbox.calls())
                first = c.get(f"/api/v1/operations/{op_id}")
                body = first.json()
                assert OperationSchema().dump(body) == body
                assert body["status"] == "running"
                assert body["last_event_id"] == c.get(
                    f"/api/v1/operations/{op_id}",
                    params={"wait": 0.1}).json()["last_event_id"]
                etag = first.headers["ETag"]
                again = c.get(f"/api/v1/operations/{op_id}", headers={"If-None-Match": etag})
                assert again.status_code == 304 and again.headers["ETag"] == etag
                assert again.content == b""
                windows.append(len(stack.sandbox.calls()) - calls_before)
                if not windows[-1]:
                    break
            assert 0 in windows, f"a status read called AWS (calls per window: {windows})"
            stack.sandbox.release(hold)
            done = stack.wait_operation(op_id)
            changed = c.get(f"/api/v1/operations/{op_id}", headers={"If-None-Match": etag})
            assert changed.status_code == 200 and changed.headers["ETag"] != etag
            assert changed.json()["status"] == done["status"] == "succeeded"
            assert changed.json()["last_event_id"] == done["last_event_id"]
    finally:
        stack.sandbox.clear_holds()
