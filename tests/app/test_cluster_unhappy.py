"""A cluster create that stops short leaves an honest, recoverable state (issue 20, item 3),
on the full stack.

One create is cancelled at its HyperPod step (a sandbox hold keeps SageMaker's answer to
CreateCluster while the cancel is asked, so the stop is deterministic; the cancel goes
through MCP, whose reply points on). Its read shows each stage as it ended — skipped stages
skipped, never succeeded — what is left in AWS (checked against AWS here), and its hourly
cost priced as the plan prices; the diagnosis says cancelled. A retry resumes it: nothing
made earlier is made again, the skipped steps run (it is cancelled once more, in its storage
stage); then the delete removes exactly what the create made — the counters of the local AWS
prove it. Two cheap creates stop before EKS exists: one failed mid-network (its NAT gateway
billed), one in a VPC the user brought (only the security group it made there goes).
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest
from mcp import Client

from mcp_server.server import build_server
from schemas.clusters import ClusterSchema
from tests.app.test_networks_api import _ec2
from tests.stack import wait_until

ZONE = "us-west-2a"
TYPE = "ml.g5.8xlarge"
COUNT = 2
EC2_MAKES = ("CreateVpc", "CreateSubnet", "CreateInternetGateway", "CreateNatGateway",
             "AllocateAddress", "CreateRouteTable", "CreateSecurityGroup", "CreateVpcEndpoint")
EC2_REMOVES = ("DeleteVpc", "DeleteSubnet", "DeleteInternetGateway", "DeleteNatGateway",
               "ReleaseAddress", "DeleteRouteTable", "DeleteSecurityGroup", "DeleteVpcEndpoints")
NAMED = {  # what else a create makes, by the parameter naming it: (create, delete)
    "iam": (("CreateRole", "DeleteRole"), "RoleName"),
    "eks": (("CreateCluster", "DeleteCluster"), "name"),
    "sagemaker": (("CreateCluster", "DeleteCluster"), "ClusterName"),
    "s3": (("CreateBucket", "DeleteBucket"), "Bucket"),
}


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:5]}"


def _body(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "availability_zone": ZONE, "instance_type": TYPE,
            "instance_count": COUNT, **extra}


def _seq(stack: Any) -> int:
    calls = stack.sandbox.calls()
    return calls[-1]["seq"] if calls else 0


def _read(stack: Any, name: str) -> dict[str, Any]:
    """The cluster as a viewer reads it, checked against the schema the API declares."""
    with stack.client("viewer") as c:
        reply = c.get(f"/api/v1/clusters/{name}")
    assert reply.status_code == 200, reply.text
    assert ClusterSchema().validate(reply.json()) == {}
    return reply.json()


def _stages(cluster: dict[str, Any]) -> dict[str, str]:
    return {s["name"]: s["status"] for s in cluster["stages"]}


def _submit(stack: Any, body: dict[str, Any]) -> str:
    with stack.client() as c:
        reply = c.post("/api/v1/clusters", json=body)
    assert reply.status_code == 202, reply.text
    return reply.json()["operation"]["id"]


def _mcp(stack: Any, tool: str, args: dict[str, Any], token: str = "operator") -> Any:
    secret = stack.operator_token if token == "operator" else stack.viewer_token

    async def call() -> Any:
        async with Client(build_server(stack.url, secret)) as client:
            return await client.call_tool(tool, args)

    result = asyncio.run(call())
    assert not result.is_error, result.content[0].text
    return result.structured_content


def _ok(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in calls if 200 <= c["status"] < 300 and not c["fault"]]


def _made_and_removed(stack: Any, made: tuple[int, int], removed: tuple[int, int]
                      ) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """What AWS saw made in one window of the call log and removed in another: EC2
    resources by the ids the local AWS counted for each call, the rest by name."""
    def window(span: tuple[int, int], ec2: tuple[str, ...], which: int) -> dict[str, set[str]]:
        calls = _ok([c for c in stack.sandbox.calls(since=span[0]) if c["seq"] <= span[1]])
        out: dict[str, set[str]] = {"ec2": {i for c in calls if c["service"] == "ec2"
                                            and c["action"] in ec2 for i in c["resource_ids"]}}
        for service, (actions, param) in NAMED.items():
            out[service] = {c["params"].get(param) for c in calls if c["service"] == service
                            and c["action"] == actions[which]}
        out["oidc"] = {str(len([c for c in calls if c["action"] == (
            "CreateOpenIDConnectProvider", "DeleteOpenIDConnectProvider")[which]]))}
        return out

    return window(made, EC2_MAKES, 0), window(removed, EC2_REMOVES, 1)


def _ec2_counters_moved(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Counter]:
    """By resource id, the EC2 mutations the local AWS counted between two readings."""
    moved = {}
    for rid, keys in after["by_resource"].items():
        earlier = before["by_resource"].get(rid, {})
        diff = Counter({k: n - earlier.get(k, 0) for k, n in keys.items()
                        if n != earlier.get(k, 0)})
        if diff:
            moved[rid] = diff
    return moved


def _delete(stack: Any, name: str, **query: Any) -> dict[str, Any]:
    with stack.client() as c:
        reply = c.delete(f"/api/v1/clusters/{name}", params=query)
    assert reply.status_code == 202, reply.text
    done = stack.wait_operation(reply.json()["operation"]["id"], timeout=240)
    assert done["status"] == "succeeded", done
    return done


# the create cancelled at its HyperPod step ---------------------------------------------------

@pytest.fixture(scope="module")
def cancelled(stack: Any) -> SimpleNamespace:
    """A create stopped by a cancel (asked through MCP) while SageMaker's answer to its
    CreateCluster is held: the step records what it got, and the operation stops at the
    step boundary that follows. Waits until HyperPod's nodes run (they are what is billed)."""
    stack.wait_idle()
    name = _name("cx")
    counters = stack.sandbox.counters()
    since = _seq(stack)
    hold = stack.sandbox.hold("sagemaker", "CreateCluster")
    try:
        op_id = _submit(stack, _body(name))
        stack.sandbox.wait_held(hold, timeout=180)
        reply = _mcp(stack, "cancel_operation", {"operation_id": op_id})
        stack.sandbox.release(hold)
        op = stack.wait_operation(op_id, timeout=120)
    finally:
        stack.sandbox.clear_holds()
    assert op["status"] == "cancelled", op

    def nodes_running() -> bool:
        left = _read(stack, name)["left_in_aws"]
        hp = [i for i in left["items"] if i["type"] == "hyperpod_cluster"]
        return bool(hp) and sum(n["count"] for n in hp[0].get("nodes") or ()) == COUNT

    wait_until(nodes_running, 60, 0.5, what="the HyperPod cluster's two nodes")
    return SimpleNamespace(name=name, op=op, cancel_reply=reply, since=since,
                           counters=counters)


def test_a_cancelled_create_reads_skipped_stages_as_skipped(stack, cancelled):
    cluster = _read(stack, cancelled.name)
    stages = _stages(cluster)
    assert {k: stages[k] for k in ("network", "eks", "activate", "dependencies")} == {
        "network": "succeeded", "eks": "succeeded", "activate": "succeeded",
        "dependencies": "succeeded"}
    # stopped in the HyperPod step (still waiting for InService) or just after it
    assert stages["hyperpod"] in ("cancelled", "succeeded")
    assert stages["storage"] == "skipped"
    storage = next(s for s in cluster["stages"] if s["name"] == "storage")
    assert {s["phase"] for s in storage["steps"]} == {"skipped"}
    state = cluster["state"]
    assert (state["status"], state["stage"], state["operation_id"]) == (
        "create_cancelled", "hyperpod" if stages["hyperpod"] == "cancelled" else "storage",
        cancelled.op["id"])
    assert state["summary"].startswith("create cancelled") and "skipped: storage" in (
        state["summary"])
    # the list entry says the same
    with stack.client("viewer") as c:
        listed = {i["name"]: i for i in c.get("/api/v1/clusters").json()["items"]}
    assert listed[cancelled.name]["state"] == state
    assert _stages(listed[cancelled.name]) == stages


def test_it_lists_what_is_left_in_aws_as_aws_has_it(stack, cancelled):
    left = _read(stack, cancelled.name)["left_in_aws"]
    steps = {s["name"]: s["resources"] for s in cancelled.op["steps"]}
    by_type: dict[str, set[str]] = {}
    for item in left["items"]:
        assert item["exists"] is True, item
        by_type.setdefault(item["type"], set()).add(item["id"])
    assert left["gone"] == []
    name = cancelled.name
    assert by_type == {
        "vpc": {steps["vpc"]["vpc_id"]},
        "subnet": {s["id"] for s in steps["subnets"]["subnets"]}
        | {steps["compute_subnet"]["subnet_id"]},
        "internet_gateway": {steps["internet_gateway"]["internet_gateway_id"]},
        "nat_gateway": {steps["nat_gateway"]["nat_gateway_id"]},
        "elastic_ip": {steps["nat_gateway"]["allocation_id"]},
        "route_table": {steps["route_tables"]["public_route_table_id"],
                        steps["route_tables"]["private_route_table_id"]},
        "security_group": {steps["security_group"]["security_group_id"]},
        "vpc_endpoint": {steps["s3_endpoint"]["s3_endpoint_id"]},
        "iam_role": {f"hypd-{name}-eks-cluster", f"hypd-{name}-hp-exec",
                     f"hypd-{name}-hp-cluster"},
        "oidc_provider": {steps["eks_access"]["oidc_provider_arn"]},
        "eks_cluster": {name},
        "s3_bucket": {steps["lifecycle"]["bucket"]},
        "hyperpod_cluster": {name},
    }
    # ... each one there in AWS, read here independently of the product
    ec2 = _ec2(stack)
    assert ec2.describe_vpcs(VpcIds=list(by_type["vpc"]))["Vpcs"]
    nat = ec2.describe_nat_gateways(NatGatewayIds=list(by_type["nat_gateway"]))["NatGateways"]
    assert nat[0]["State"] == "available"
    assert stack.aws("eks").describe_cluster(name=name)["cluster"]["status"] == "ACTIVE"
    for role in by_type["iam_role"]:
        stack.aws("iam").get_role(RoleName=role)
    # billed by the hour: the control plane, the NAT gateway, HyperPod's running nodes
    assert {i["type"] for i in left["items"] if i["billed_hourly"]} == {
        "eks_cluster", "nat_gateway", "hyperpod_cluster"}
    hp = next(i for i in left["items"] if i["type"] == "hyperpod_cluster")
    assert hp["nodes"] == [{"instance_group": "workers", "instance_type": TYPE, "count": COUNT,
                            "capacity_type": "on-demand"}]


def test_what_is_left_is_priced_as_the_plan_prices_it(stack, cancelled):
    cost = _read(stack, cancelled.name)["left_in_aws"]["cost"]
    with stack.client("viewer") as c:
        plan = c.post("/api/v1/clusters", params={"dry_run": "true"},
                      json=_body(_name("plan"))).json()["cost"]
    items = {i["kind"]: i for i in cost["items"]}
    planned = {i["kind"]: i for i in plan["items"]}
    assert set(items) >= {"hyperpod_instances", "eks_control_plane", "nat_gateway"}
    assert set(items) - set(planned) == set()  # nothing priced that a plan would not price
    for kind, item in items.items():
        assert item["basis"] == "list-price" and item["source"]["name"] == "aws-price-list"
        assert item["unit_usd"] == planned[kind]["unit_usd"], kind
        assert item["source"]["sku"] == planned[kind]["source"]["sku"], kind
    assert (items["hyperpod_instances"]["quantity"], items["nat_gateway"]["quantity"]) == (
        COUNT, 1)
    assert cost["complete"] is True
    assert cost["hourly_usd"] == pytest.approx(sum(i["hourly_usd"] for i in cost["items"]))
    assert cost["hourly_usd"] == pytest.approx(plan["hourly_usd"])  # the same things, now


def test_the_read_and_the_cancel_reply_name_both_ways_on(stack, cancelled):
    op_id = cancelled.op["id"]
    resume = ("resume", "retry_operation", "POST", f"/api/v1/operations/{op_id}/retry")
    delete = ("delete", "delete_cluster", "DELETE", f"/api/v1/clusters/{cancelled.name}")
    # the REST read names the routes (and no tool)
    shape = [(a["action"], a["rest"]["route"], a["rest"]["method"], a["rest"]["path"],
              a.get("tool")) for a in _read(stack, cancelled.name)["next_actions"]]
    assert shape == [
        ("resume", "/api/v1/operations/{operation_id}/retry", *resume[2:], None),
        ("delete", "/api/v1/clusters/{name}", *delete[2:], None)]
    # the MCP cancel's reply pointed at the read first, then both ways on
    reply = cancelled.cancel_reply
    assert (reply["status_tool"], reply["status_args"]) == ("wait_operation",
                                                            {"operation_id": op_id})
    assert [(a["action"], a["tool"], a["rest"]["method"], a["rest"]["path"])
            for a in reply["next_actions"]] == [
        ("read", "get_cluster", "GET", f"/api/v1/clusters/{cancelled.name}"), resume, delete]
    # and the agent's read of the cluster carries what is left, its cost and the ways on
    seen = _mcp(stack, "get_cluster", {"name": cancelled.name}, token="viewer")
    assert seen["state"]["status"] == "create_cancelled"
    assert seen["left_in_aws"]["cost"]["hourly_usd"] > 0
    assert [a["tool"] for a in seen["next_actions"]] == ["retry_operation", "delete_cluster"]


def test_the_creation_diagnosis_says_cancelled(stack, cancelled):
    with stack.client("viewer") as c:
        diagnosis = c.get(f"/api/v1/clusters/{cancelled.name}/diagnostics/creation").json()
    assert diagnosis["healthy"] is False
    finding = next(f for f in diagnosis["findings"] if f["code"] == "cancelled_create")
    assert finding["evidence"][0]["ref"].startswith(cancelled.op["id"])
    assert [(s["step"], s["rest"]["method"], s["rest"]["route"])
            for s in diagnosis["suggestions"]][-3:] == [
        ("investigate", "GET", "/api/v1/clusters/{name}"),
        ("retry", "POST", "/api/v1/operations/{operation_id}/retry"),
        ("delete", "DELETE", "/api/v1/clusters/{name}")]


def test_retry_resumes_where_it_stopped_and_runs_the_skipped_steps(stack, cancelled):
    op = cancelled.op
    before = {s["name"]: s for s in op["steps"]}
    since = _seq(stack)
    # hold the shared bucket's creation (the storage stage's first call) to cancel again
    hold = stack.sandbox.hold("s3", "CreateBucket")
    try:
        with stack.client() as c:
            reply = c.post(f"/api/v1/operations/{op['id']}/retry")
            assert reply.status_code == 202, reply.text
            assert reply.json()["operation"]["id"] == op["id"]
            queued = {s["name"]: s for s in reply.json()["operation"]["steps"]}
            stack.sandbox.wait_held(hold, timeout=120)
            assert c.post(f"/api/v1/operations/{op['id']}/cancel").status_code == 202
        stack.sandbox.release(hold)
        again = stack.wait_operation(op["id"], timeout=120)
    finally:
        stack.sandbox.clear_holds()
    # the retry kept what was done and put the skipped steps back to run
    for name, step in before.items():
        if step["phase"] == "skipped":
            assert queued[name]["phase"] == "pending", name
        else:
            assert queued[name]["phase"] == step["phase"], name
    after = {s["name"]: s for s in again["steps"]}
    assert again["status"] == "cancelled"
    assert after["s3_bucket"]["phase"] == "succeeded"  # a skipped step ran
    assert after["s3_volume"]["phase"] == "skipped"
    assert after["hyperpod_cluster"]["phase"] == "succeeded"
    for name, step in before.items():
        if step["phase"] == "succeeded":  # done before: not run again
            assert after[name]["attempts"] == step["attempts"], name
    made = [(c["service"], c["action"]) for c in _ok(stack.sandbox.calls(since=since))
            if c["action"] in EC2_MAKES or c["action"] == "CreateOpenIDConnectProvider"
            or (c["service"] in NAMED and c["action"] == NAMED[c["service"]][0][0])]
    assert made == [("s3", "CreateBucket")], made  # only what the skipped step makes
    cluster = _read(stack, cancelled.name)
    assert _stages(cluster)["storage"] == "cancelled"
    assert cluster["state"]["summary"] == "create cancelled at stage storage"


def test_delete_removes_exactly_what_the_create_made(stack, cancelled):
    stack.wait_idle()
    ec2 = _ec2(stack)
    made_until = _seq(stack)
    bystander = ec2.create_vpc(CidrBlock="10.79.0.0/16")["Vpc"]["VpcId"]
    deleting_from = _seq(stack)
    _delete(stack, cancelled.name, delete_data="true")
    made, removed = _made_and_removed(stack, (cancelled.since, made_until),
                                      (deleting_from, _seq(stack)))
    assert made == removed
    assert len(made["ec2"]) >= 12 and len(made["iam"]) == 3 and made["oidc"] == {"1"}
    assert made["eks"] == made["sagemaker"] == {cancelled.name}
    assert len(made["s3"]) == 2  # the lifecycle bucket and the shared one (delete_data)
    # the counters say the same, per EC2 resource: each made once and removed once, and no
    # other resource removed
    moved = _ec2_counters_moved(cancelled.counters, stack.sandbox.counters())
    created = {rid for rid, keys in moved.items()
               if any(k.split(":")[1] in EC2_MAKES for k in keys)}
    deleted = {rid for rid, keys in moved.items()
               if any(k.split(":")[1] in EC2_REMOVES for k in keys)}
    assert created - {bystander} == deleted == made["ec2"]
    assert all(sum(n for k, n in moved[rid].items() if k.split(":")[1] in EC2_MAKES) == 1
               for rid in created)
    assert ec2.describe_vpcs(VpcIds=[bystander])["Vpcs"]
    with stack.client() as c:
        assert c.get(f"/api/v1/clusters/{cancelled.name}").status_code == 404
        # its create can no longer be resumed: what it recorded is gone
        refused = c.post(f"/api/v1/operations/{cancelled.op['id']}/retry")
    assert refused.status_code == 409, refused.text
    assert "was deleted after" in refused.json()["error"]["message"]
    ec2.delete_vpc(VpcId=bystander)


# creates that stopped before EKS existed --------------------------------------------------------

def test_a_create_failed_mid_network_reads_failed_there_and_deletes_what_it_made(stack):
    stack.wait_idle()
    name = _name("fx")
    counters, since = stack.sandbox.counters(), _seq(stack)
    stack.sandbox.add_fault("ec2", "CreateRouteTable", "error", code="UnauthorizedOperation",
                            message="injected: not allowed to create route tables", status=403)
    try:
        failed = stack.wait_operation(_submit(stack, _body(name)), timeout=120)
    finally:
        stack.sandbox.clear_faults()
    assert failed["status"] == "failed", failed
    cluster = _read(stack, name)
    assert _stages(cluster) == {"network": "failed", "eks": "pending", "activate": "pending",
                                "dependencies": "pending", "hyperpod": "pending",
                                "storage": "pending"}
    network = cluster["stages"][0]
    assert network["error"]["step"] == "route_tables"
    assert "not allowed to create route tables" in network["error"]["message"]
    assert (cluster["state"]["status"], cluster["state"]["stage"]) == ("create_failed",
                                                                      "network")
    assert cluster["state"]["summary"].startswith("create failed at stage network: ")
    left = cluster["left_in_aws"]
    assert {i["type"] for i in left["items"]} == {"vpc", "subnet", "internet_gateway",
                                                  "nat_gateway", "elastic_ip"}
    assert [(i["kind"], i["quantity"]) for i in left["cost"]["items"]] == [("nat_gateway", 1)]
    assert [a["rest"]["route"] for a in cluster["next_actions"]] == [
        "/api/v1/operations/{operation_id}/retry", "/api/v1/clusters/{name}"]
    with stack.client("viewer") as c:
        diagnosis = c.get(f"/api/v1/clusters/{name}/diagnostics/creation").json()
    assert diagnosis["healthy"] is False
    assert [f["code"] for f in diagnosis["findings"]] == ["stage_failed"]
    made_until = _seq(stack)
    _delete(stack, name)
    made, removed = _made_and_removed(stack, (since, made_until), (made_until, _seq(stack)))
    assert made == removed and len(made["ec2"]) == 8  # VPC, 4 subnets, IGW, NAT, EIP
    moved = _ec2_counters_moved(counters, stack.sandbox.counters())
    assert {rid for rid, keys in moved.items()
            if any(k.split(":")[1] in EC2_REMOVES for k in keys)} == made["ec2"]


def test_a_create_in_a_users_vpc_deletes_only_the_security_group_it_made_there(stack):
    stack.wait_idle()
    ec2 = _ec2(stack)
    vpc = ec2.create_vpc(CidrBlock="10.81.0.0/16")["Vpc"]["VpcId"]
    subnets = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.81.{i * 16}.0/20",
                                 AvailabilityZone=zone)["Subnet"]["SubnetId"]
               for i, zone in enumerate(("us-west-2a", "us-west-2b"))]
    name = _name("vx")
    since = _seq(stack)
    stack.sandbox.add_fault("eks", "CreateCluster", "error", code="AccessDeniedException",
                            message="injected: not allowed", status=403)
    try:
        failed = stack.wait_operation(_submit(stack, _body(
            name, existing_vpc={"vpc_id": vpc, "subnet_ids": subnets})), timeout=120)
    finally:
        stack.sandbox.clear_faults()
    assert failed["status"] == "failed" and failed["error"]["step"] == "eks_cluster", failed
    cluster = _read(stack, name)
    assert (cluster["state"]["status"], cluster["state"]["stage"]) == ("create_failed", "eks")
    group = next(s for s in failed["steps"]
                 if s["name"] == "existing_network")["resources"]["made_security_group_id"]
    left = cluster["left_in_aws"]
    assert {(i["type"], i["id"]) for i in left["items"]} == {
        ("security_group", group), ("iam_role", f"hypd-{name}-eks-cluster")}
    assert left["gone"] == [{"type": "eks_cluster", "id": name}]  # asked for, never made
    assert left["cost"]["items"] == [] and left["cost"]["hourly_usd"] == 0
    made_until = _seq(stack)
    _delete(stack, name)
    made, removed = _made_and_removed(stack, (since, made_until), (made_until, _seq(stack)))
    assert made == removed and made["ec2"] == {group}
    assert made["iam"] == {f"hypd-{name}-eks-cluster"}
    # the user's VPC and subnets stay
    assert ec2.describe_vpcs(VpcIds=[vpc])["Vpcs"]
    assert len(ec2.describe_subnets(SubnetIds=subnets)["Subnets"]) == 2
    for subnet in subnets:
        ec2.delete_subnet(SubnetId=subnet)
    ec2.delete_vpc(VpcId=vpc)
