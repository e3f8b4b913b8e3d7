"""The worst moment to die: for each step of a network create, the worker's whole process
group is SIGKILLed after AWS answered the step's mutation and before hypd recorded it. The
operation must still succeed, and every resource must have been created exactly once.

And it must not take the broker's visibility timeout to get there: the sweeper picks up an
operation nothing advances (a dead worker's, or one whose web process died before enqueuing
it) within seconds of a live worker being up."""

from __future__ import annotations

import time
import uuid

import pytest

from tasks.engine.model import new_operation
from tasks.engine.store import OperationStore
from tasks.networks import NETWORK_CREATE
from tests.app.test_networks_api import _ec2, resources_of

RECOVERY_BOUND_S = 30  # the bound, measured from the new worker's start
# A worker whose broker would bring a killed task back only after 5 minutes: whatever
# recovers the operation sooner is not the broker.
LONG_VISIBILITY = {"HYPD_VISIBILITY_TIMEOUT_S": "300"}

FAULT_POINTS = {
    "vpc": "CreateVpc",
    "subnets": "CreateSubnet",
    "internet_gateway": "CreateInternetGateway",
    "nat_gateway": "CreateNatGateway",
    "route_tables": "CreateRouteTable",
    "security_group": "CreateSecurityGroup",
    "s3_endpoint": "CreateVpcEndpoint",
}


def _expected_creations(found: dict[str, list[dict]]) -> dict[str, int]:
    associations = sum(1 for t in found["route_table"] for a in t.get("Associations", [])
                       if not a.get("Main"))
    routes = sum(1 for t in found["route_table"] for r in t["Routes"]
                 if r.get("GatewayId", "").startswith("igw-") or r.get("NatGatewayId"))
    return {
        "ec2:CreateVpc": 1,
        "ec2:CreateSubnet": len(found["subnet"]),
        "ec2:CreateInternetGateway": 1,
        "ec2:AttachInternetGateway": 1,
        "ec2:AllocateAddress": 1,
        "ec2:CreateNatGateway": 1,
        "ec2:CreateRouteTable": len(found["route_table"]),
        "ec2:AssociateRouteTable": associations,
        "ec2:CreateRoute": routes,
        "ec2:CreateSecurityGroup": 1,
        "ec2:CreateVpcEndpoint": 1,
    }


# the default run kills the first step and the one that makes what costs by the hour (the NAT
# gateway, after its address); the long form (-m slow) kills every other step too, as the
# fault campaign strikes every step of network.create with every fault
LONG_FORM = ("subnets", "internet_gateway", "route_tables", "security_group", "s3_endpoint")


@pytest.mark.parametrize("step", [pytest.param(s, marks=pytest.mark.slow) if s in LONG_FORM
                                  else s for s in FAULT_POINTS])
def test_worker_killed_at_fault_point_still_creates_everything_once(stack, step):
    name = f"kill-{step.replace('_', '-')}-{uuid.uuid4().hex[:4]}"
    stack.wait_idle()
    before = stack.sandbox.counters()["by_action"]

    def submit():
        with stack.client() as c:
            return c.post("/api/v1/networks", json={"name": name})

    op = stack.killed_once_answered("ec2", FAULT_POINTS[step], submit, timeout=90)
    assert op["status"] == "succeeded", op
    killed = next(s for s in op["steps"] if s["name"] == step)
    assert killed["attempts"] >= 2  # the step really was interrupted and resumed
    _assert_created_once(stack, name, before)


@pytest.mark.parametrize("step", ["vpc", pytest.param("subnets", marks=pytest.mark.slow)])
def test_a_killed_workers_operation_is_picked_up_in_seconds_not_at_the_visibility_timeout(
        stack, step):
    name = f"sweep-{step}-{uuid.uuid4().hex[:4]}"
    stack.wait_idle()
    stack.kill_worker()
    stack.start_worker(**LONG_VISIBILITY)
    before = stack.sandbox.counters()["by_action"]
    hold = stack.sandbox.hold("ec2", FAULT_POINTS[step])
    try:
        with stack.client() as c:
            reply = c.post("/api/v1/networks", json={"name": name})
        assert reply.status_code == 202, reply.text
        op_id = reply.json()["operation"]["id"]
        stack.sandbox.wait_held(hold, timeout=30)  # AWS has answered; hypd has not recorded
        stack.kill_worker()
        stack.sandbox.release(hold)
        log_start = len(stack.log("worker"))
        started = time.monotonic()
        stack.start_worker(**LONG_VISIBILITY)
        op = stack.wait_operation(op_id, timeout=RECOVERY_BOUND_S)
        recovered_s = time.monotonic() - started
        new_worker_log = stack.log("worker")[log_start:]
    finally:
        stack.sandbox.clear_holds()
        stack.kill_worker()
        stack.start_worker()  # the suite's own worker again
    assert op["status"] == "succeeded", op
    assert recovered_s < RECOVERY_BOUND_S, recovered_s
    print(f"\nrecovered {step} kill in {recovered_s:.1f} s from the new worker's start")
    assert f"operation {op_id} " in new_worker_log and "re-kicked" in new_worker_log, (
        "not recovered by the sweeper:\n" + new_worker_log[-3000:])
    killed = next(s for s in op["steps"] if s["name"] == step)
    assert killed["attempts"] == 2  # interrupted once, resumed once
    _assert_created_once(stack, name, before)


def test_an_operation_recorded_but_never_enqueued_is_picked_up(stack):
    """The web process died between recording the operation and enqueuing its first task:
    no message exists anywhere, so only the sweeper can start it."""
    name = f"orphan-{uuid.uuid4().hex[:4]}"
    stack.wait_idle()
    before = stack.sandbox.counters()["by_action"]
    store = OperationStore(stack.redis())
    op, created = store.create(new_operation(
        NETWORK_CREATE, f"network/{name}", {"name": name, "region": "us-west-2"}, "operator",
        None), None)
    assert created
    started = time.monotonic()
    final = stack.wait_operation(op["id"], timeout=RECOVERY_BOUND_S)
    picked_up_s = time.monotonic() - started
    assert final["status"] == "succeeded", final
    assert picked_up_s < RECOVERY_BOUND_S, picked_up_s
    print(f"\nnever-enqueued operation finished {picked_up_s:.1f} s after it was recorded")
    assert all(s["attempts"] == 1 for s in final["steps"]), final["steps"]
    _assert_created_once(stack, name, before)


def _assert_created_once(stack, name: str, before: dict[str, int]) -> None:
    after = stack.sandbox.counters()["by_action"]
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    with stack.client() as c:
        vpc_id = c.get(f"/api/v1/networks/{name}").json()["vpc_id"]
    ec2 = _ec2(stack)
    tagged = ec2.describe_vpcs(Filters=[{"Name": "tag:hypd:network", "Values": [name]}])["Vpcs"]
    assert [v["VpcId"] for v in tagged] == [vpc_id]
    found = resources_of(ec2, vpc_id)
    for action, count in _expected_creations(found).items():
        assert delta.get(action, 0) == count, (action, delta.get(action, 0), count)
