"""`/metrics` on the full stack: the web processes and the worker's prefork children count in
one multiprocess directory tree, so an operation run here shows up — its kind and status,
its steps' durations (observed in the worker), its AWS calls and errors — and so does an
open WebSocket."""

from __future__ import annotations

import json
import uuid
from collections import defaultdict

from prometheus_client.parser import text_string_to_metric_families

from tests.app.wskit import connect, read_all
from tests.stack import wait_until


def _scrape(stack, token: str = "viewer") -> dict[tuple[str, frozenset], float]:
    with stack.client(token) as c:
        reply = c.get("/metrics")
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("text/plain")
    samples: dict[tuple[str, frozenset], float] = defaultdict(float)
    for family in text_string_to_metric_families(reply.text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] += sample.value
    return samples


def _value(samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_metrics_need_a_token_and_a_viewer_may_read_them(stack):
    with stack.client(None) as anonymous:
        assert anonymous.get("/metrics").status_code == 401
    assert _scrape(stack, "viewer") is not None


def test_an_operation_run_here_is_counted(stack):
    stack.wait_idle()
    before = _scrape(stack)
    name = f"met-{uuid.uuid4().hex[:5]}"
    with stack.client() as c:
        ok = c.post("/api/v1/networks", json={"name": name})
    assert stack.wait_operation(ok.json()["operation"]["id"])["status"] == "succeeded"
    stack.sandbox.add_fault("ec2", "CreateVpc", "error", code="VpcLimitExceeded",
                            message="no more VPCs", count=1)
    with stack.client() as c:
        bad = c.post("/api/v1/networks", json={"name": f"{name}-x"})
    assert stack.wait_operation(bad.json()["operation"]["id"])["status"] == "failed"
    kind = "network.create"

    def failure_counted() -> dict | None:
        """The worker counts a status once its record is written, and a step's duration once
        the write returns (tasks/engine/runner.py `_observe_step`): a scrape just after the
        record reads failed can come before either count (each failed CI once)."""
        samples = _scrape(stack)
        counted = [(metric, labels) for metric, labels in (
            ("hypd_operations_total", {"kind": kind, "status": "failed"}),
            ("hypd_step_duration_seconds_count",
             {"kind": kind, "step": "vpc", "outcome": "failed"}))
            if _value(samples, metric, **labels) > _value(before, metric, **labels)]
        return samples if len(counted) == 2 else None

    after = wait_until(failure_counted, timeout=15, what="the failed operation counted")

    def grew(metric: str, **labels: str) -> float:
        return _value(after, metric, **labels) - _value(before, metric, **labels)

    assert grew("hypd_operations_total", kind=kind, status="queued") == 2
    assert grew("hypd_operations_total", kind=kind, status="running") == 2
    assert grew("hypd_operations_total", kind=kind, status="succeeded") == 1
    assert grew("hypd_operations_total", kind=kind, status="failed") == 1
    # step durations: observed in the worker's processes, read from the web's
    assert grew("hypd_step_duration_seconds_count", kind=kind, step="vpc",
                outcome="succeeded") == 1
    assert grew("hypd_step_duration_seconds_count", kind=kind, step="vpc", outcome="failed") == 1
    assert grew("hypd_step_duration_seconds_count", kind=kind, step="nat_gateway",
                outcome="succeeded") == 1
    assert grew("hypd_step_duration_seconds_sum", kind=kind, step="nat_gateway",
                outcome="succeeded") > 0
    # AWS calls by service and API, and the refused one by its code
    assert grew("hypd_aws_calls_total", service="ec2", api="CreateVpc") == 2
    assert grew("hypd_aws_calls_total", service="ec2", api="CreateNatGateway") == 1
    assert grew("hypd_aws_errors_total", service="ec2", api="CreateVpc",
                code="VpcLimitExceeded") == 1


def test_an_open_websocket_is_counted_while_it_is_open(stack):
    stack.wait_idle()
    hold = stack.sandbox.hold("ec2", "CreateVpc")
    with stack.client() as c:
        op_id = c.post("/api/v1/networks", json={"name": f"ws-{uuid.uuid4().hex[:5]}"}
                       ).json()["operation"]["id"]
    try:
        stack.sandbox.wait_held(hold, timeout=30)
        base = _value(_scrape(stack), "hypd_websockets_open", kind="operation")
        ws = connect(stack, op_id)
        ws.send(json.dumps({"type": "auth", "token": stack.viewer_token}))
        assert json.loads(ws.recv())["type"] == "operation"
        wait_until(lambda: _value(_scrape(stack), "hypd_websockets_open",
                                  kind="operation") == base + 1, 10, what="the socket counted")
    finally:
        stack.sandbox.release(hold)
        stack.sandbox.clear_holds()
    _, code = read_all(ws)  # the operation finishes, the server closes the socket
    assert code == 1000
    wait_until(lambda: _value(_scrape(stack), "hypd_websockets_open", kind="operation") == base,
               10, what="the closed socket uncounted")
