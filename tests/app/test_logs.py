"""Structured logs on the full stack (the suite runs it with HYPD_LOG_FORMAT=json): the web
server's and the worker's lines about an operation are JSON objects carrying its id."""

from __future__ import annotations

import json
import uuid

from tests.stack import wait_until


def _json_lines(text: str) -> list[dict]:
    lines = []
    for raw in text.splitlines():
        if raw.startswith("{"):
            lines.append(json.loads(raw))  # a line that looks like JSON must be JSON
    return lines


def test_lines_about_an_operation_carry_its_id(stack):
    stack.wait_idle()
    stack.sandbox.add_fault("ec2", "CreateVpc", "error", code="VpcLimitExceeded",
                            message="no more VPCs", count=1)
    with stack.client() as c:
        op_id = c.post("/api/v1/networks", json={"name": f"log-{uuid.uuid4().hex[:5]}"}
                       ).json()["operation"]["id"]
    assert stack.wait_operation(op_id)["status"] == "failed"

    def about(source: str) -> list[dict]:
        return [line for line in _json_lines(stack.log(source)) if line.get("op_id") == op_id]

    submitted = wait_until(lambda: about("web"), 10, what="the web server's line")
    assert submitted[0]["kind"] == "network.create" and "submitted" in submitted[0]["message"]
    failed = wait_until(lambda: [x for x in about("worker") if x["level"] == "WARNING"], 10,
                        what="the worker's line")
    assert (failed[0]["kind"], failed[0]["step"]) == ("network.create", "vpc")
    assert "VpcLimitExceeded" in failed[0]["message"]
    assert {"time", "logger", "process"} <= failed[0].keys()
