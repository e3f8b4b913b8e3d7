"""Scaling out: more workers against one Redis is how hypd grows (docs/deploy.md). Two
worker processes with their own node names drain a batch of 50 operations together, and no
step runs twice — by the workers' own log lines, the operations' step attempts and the local
AWS's mutation counters (each VPC, subnet, NAT gateway... created once)."""

from __future__ import annotations

import collections
import json
import uuid

import pytest

from tests.stack import wait_until

BATCH = 50
NODES = ("w1@scale", "w2@scale")
REGION = "eu-west-1"
"""A region of the batch's own: AWS describes by tag stay among the batch's resources."""
LONG_VISIBILITY = {"HYPD_VISIBILITY_TIMEOUT_S": "300"}
"""A step the loaded machine makes slow is not stopped by Celery's time limit (the suite's
5 s visibility allows 10 s): every attempt beyond the first would then be the engine's doing."""


def _applying(stack, node: str) -> list[tuple[str, str]]:
    """(operation, step) of every attempt this worker started, from its JSON log lines."""
    found = []
    for raw in stack.log(node).splitlines():
        if raw.startswith("{"):
            line = json.loads(raw)
            if line.get("message", "").startswith("applying (attempt"):
                found.append((line["op_id"], line["step"]))
    return found


@pytest.mark.timeout(900)  # ~40 s on an idle 2-core machine; minutes on a crowded one
def test_two_workers_drain_a_batch_and_no_step_runs_twice(stack):
    stack.wait_idle()
    before = stack.sandbox.counters()["by_action"]
    stack.kill_worker()  # only the two below consume
    workers = [stack.spawn_worker(node, "--concurrency", "2", "--loglevel", "INFO",
                                  env=LONG_VISIBILITY) for node in NODES]
    try:
        prefix = f"so{uuid.uuid4().hex[:4]}"
        with stack.client() as c:
            ids = [c.post("/api/v1/networks", json={"name": f"{prefix}-{n}", "region": REGION}
                          ).json()["operation"]["id"] for n in range(BATCH)]
        ops = [stack.wait_operation(op_id, timeout=600) for op_id in ids]
        wait_until(lambda: all(_applying(stack, n) for n in NODES), 10, what="both logs")
    finally:
        for proc in workers:
            stack.stop_process(proc)
        stack.start_worker()  # the suite's own worker again

    assert [op["status"] for op in ops] == ["succeeded"] * BATCH
    # the operations' own account: every step attempted once
    attempts = collections.Counter(s["attempts"] for op in ops for s in op["steps"])
    assert attempts == {1: BATCH * len(ops[0]["steps"])}, attempts
    # the workers' account: both took part, and no (operation, step) was started twice
    by_node = {node: _applying(stack, node) for node in NODES}
    ours = set(ids)
    started = [pair for node in NODES for pair in by_node[node] if pair[0] in ours]
    assert len(started) == len(set(started)) == BATCH * len(ops[0]["steps"])
    shares = {node: len({op for op, _ in by_node[node]} & ours) for node in NODES}
    assert all(shares.values()), shares  # drained by both
    print(f"\noperations touched per worker: {shares}")
    # AWS's account: each resource the batch recorded was created exactly once
    counters = stack.sandbox.counters()
    grew = {k: v - before.get(k, 0) for k, v in counters["by_action"].items()}
    assert grew.get("ec2:CreateVpc") == BATCH
    assert grew.get("ec2:CreateNatGateway") == BATCH
    creates = {"vpc_id": "ec2:CreateVpc", "nat_gateway_id": "ec2:CreateNatGateway",
               "internet_gateway_id": "ec2:CreateInternetGateway",
               "security_group_id": "ec2:CreateSecurityGroup"}
    for op in ops:
        for step in op["steps"]:
            for field, action in creates.items():
                if field in step["resources"]:
                    assert counters["by_resource"][step["resources"][field]][action] == 1
