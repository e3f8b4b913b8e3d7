"""The worst moment to die: for each step of a network create, the worker's whole process
group is SIGKILLed after AWS answered the step's mutation and before hypd recorded it. The
operation must still succeed, and every resource must have been created exactly once."""

from __future__ import annotations

import uuid

import pytest

from tests.app.test_networks_api import _ec2, resources_of

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


@pytest.mark.parametrize("step", list(FAULT_POINTS))
def test_worker_killed_at_fault_point_still_creates_everything_once(stack, step):
    name = f"kill-{step.replace('_', '-')}-{uuid.uuid4().hex[:4]}"
    stack.wait_idle()
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
        stack.start_worker()
        op = stack.wait_operation(op_id, timeout=90)
    finally:
        stack.sandbox.clear_holds()
        if stack.worker_proc.poll() is not None:
            stack.start_worker()
    assert op["status"] == "succeeded", op
    killed = next(s for s in op["steps"] if s["name"] == step)
    assert killed["attempts"] >= 2  # the step really was interrupted and resumed

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
