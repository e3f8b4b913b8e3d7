"""Networks through REST on the full stack: the create finishes, everything is tagged,
and the mutation contracts (Idempotency-Key, 409, 422) hold."""

from __future__ import annotations

import json
import uuid

import boto3
import pytest
import redis

from tests.app.dryrunkit import calls_in_order, rehearsed


def _ec2(stack):
    return boto3.client("ec2", region_name="us-west-2",
                        endpoint_url=stack.env["AWS_ENDPOINT_URL"],
                        aws_access_key_id=stack.env["AWS_ACCESS_KEY_ID"],
                        aws_secret_access_key=stack.env["AWS_SECRET_ACCESS_KEY"])


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def _tags(resource: dict) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in resource.get("Tags", [])}


def resources_of(ec2, vpc_id: str) -> dict[str, list[dict]]:
    by_vpc = [{"Name": "vpc-id", "Values": [vpc_id]}]
    found = {
        "vpc": ec2.describe_vpcs(VpcIds=[vpc_id])["Vpcs"],
        "subnet": ec2.describe_subnets(Filters=by_vpc)["Subnets"],
        "internet_gateway": ec2.describe_internet_gateways(
            Filters=[{"Name": "attachment.vpc-id", "Values": [vpc_id]}])["InternetGateways"],
        "nat_gateway": [n for n in ec2.describe_nat_gateways(Filters=by_vpc)["NatGateways"]
                        if n["State"] not in ("deleted", "deleting")],
        "route_table": [r for r in ec2.describe_route_tables(Filters=by_vpc)["RouteTables"]
                        if not any(a.get("Main") for a in r.get("Associations", []))],
        "security_group": [g for g in ec2.describe_security_groups(Filters=by_vpc)[
            "SecurityGroups"] if g["GroupName"] != "default"],
        "vpc_endpoint": ec2.describe_vpc_endpoints(Filters=by_vpc)["VpcEndpoints"],
    }
    eips = ec2.describe_addresses()["Addresses"]
    nat_alloc = {a["AllocationId"] for n in found["nat_gateway"]
                 for a in n.get("NatGatewayAddresses", [])}
    found["elastic_ip"] = [e for e in eips if e.get("AllocationId") in nat_alloc]
    return found


@pytest.fixture(scope="module")
def created(stack):
    """One network made through REST and followed to its end, shared by the checks."""
    name = _name("lab")
    with stack.client() as c:
        reply = c.post("/api/v1/networks", json={"name": name})
    assert reply.status_code == 202, reply.text
    body = reply.json()
    op = stack.wait_operation(body["operation"]["id"])
    return name, body, reply.headers, op


def test_create_replies_202_with_how_to_follow(created):
    name, body, headers, _ = created
    op_id = body["operation"]["id"]
    assert body["status_route"] == f"/api/v1/operations/{op_id}"
    assert "status_tool" not in body and "status_args" not in body  # REST names routes only
    assert body["poll_after_seconds"] > 0
    assert body["resource_url"] == f"/api/v1/networks/{name}"
    assert headers["Location"] == body["status_route"]
    assert int(headers["Retry-After"]) > 0
    assert body["operation"]["kind"] == "network.create"
    assert body["operation"]["target"] == f"network/{name}"
    assert [s["name"] for s in body["operation"]["steps"]] == [
        "vpc", "subnets", "internet_gateway", "nat_gateway", "route_tables",
        "security_group", "s3_endpoint"]


def test_create_finishes_and_every_resource_is_tagged(stack, created):
    name, _, _, op = created
    assert op["status"] == "succeeded", op
    assert all(s["phase"] == "succeeded" for s in op["steps"])
    with stack.client() as c:
        network = c.get(f"/api/v1/networks/{name}").json()
    ec2 = _ec2(stack)
    found = resources_of(ec2, network["vpc_id"])
    for kind in ("vpc", "internet_gateway", "nat_gateway", "security_group", "vpc_endpoint",
                 "elastic_ip"):
        assert len(found[kind]) == 1, (kind, found[kind])
    assert len(found["subnet"]) == 4
    assert len(found["route_table"]) >= 2
    for kind, items in found.items():
        for item in items:
            tags = _tags(item)
            assert tags.get("hypd:managed-by") == "hypd", (kind, item)
            assert tags.get("hypd:network") == name, (kind, item)
    # DNS hostnames on; subnets in two zones, public and private
    attr = ec2.describe_vpc_attribute(VpcId=network["vpc_id"], Attribute="enableDnsHostnames")
    assert attr["EnableDnsHostnames"]["Value"] is True
    roles = {(s["availability_zone"], s["role"]) for s in network["subnets"]}
    zones = {z for z, _ in roles}
    assert len(zones) == 2 and len(roles) == 4
    # the private route to the NAT gateway exists (added once it was available)
    nat_id = found["nat_gateway"][0]["NatGatewayId"]
    assert any(r.get("NatGatewayId") == nat_id for t in found["route_table"]
               for r in t["Routes"])


def test_list_and_get(stack, created):
    name = created[0]
    with stack.client("viewer") as c:
        names = [n["name"] for n in c.get("/api/v1/networks").json()["items"]]
        assert name in names
        assert c.get(f"/api/v1/networks/{name}").json()["name"] == name
        missing = c.get("/api/v1/networks/no-such-net")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"


def test_a_network_says_which_clusters_use_it(stack, created):
    """The list and the read name each cluster in the network (the delete's own finder),
    whoever made it; the form of a new cluster offers a network with them."""
    name = created[0]
    with stack.client("viewer") as c:
        network = c.get(f"/api/v1/networks/{name}").json()
    assert network["used_by"] == []
    private = [s["id"] for s in network["subnets"] if s["role"] == "private"]
    eks, iam = (boto3.client(service, region_name="us-west-2",
                             endpoint_url=stack.env["AWS_ENDPOINT_URL"],
                             aws_access_key_id=stack.env["AWS_ACCESS_KEY_ID"],
                             aws_secret_access_key=stack.env["AWS_SECRET_ACCESS_KEY"])
                for service in ("eks", "iam"))
    outside = _name("outside")
    role = iam.create_role(RoleName=outside, AssumeRolePolicyDocument="{}")["Role"]
    eks.create_cluster(name=outside, roleArn=role["Arn"],
                       resourcesVpcConfig={"subnetIds": private})
    try:
        with stack.client("viewer") as c:
            listed = {n["name"]: n for n in c.get("/api/v1/networks").json()["items"]}
            read = c.get(f"/api/v1/networks/{name}").json()
        for view in (listed[name], read):
            assert [(u["kind"], u["name"]) for u in view["used_by"]] == [("cluster", outside)]
            assert "not made by hypd" in view["used_by"][0]["why"]
        # the list describes each of the region's clusters once, not once per network
        other = _name("other")
        with stack.client() as c:
            made = c.post("/api/v1/networks", json={"name": other}).json()
        assert stack.wait_operation(made["operation"]["id"])["status"] == "succeeded"
        since = max(call["seq"] for call in stack.sandbox.calls())
        with stack.client("viewer") as c:
            networks = c.get("/api/v1/networks").json()["items"]
        during = stack.sandbox.calls(since=since)
        listed_clusters = eks.list_clusters()["clusters"]
        assert len(networks) >= 2 and outside in listed_clusters
        describes = [call["params"] for call in during
                     if (call["service"], call["action"]) == ("eks", "DescribeCluster")]
        assert len(describes) == len(listed_clusters), describes
    finally:
        eks.delete_cluster(name=outside)


def test_same_name_again_is_409(stack, created):
    with stack.client() as c:
        reply = c.post("/api/v1/networks", json={"name": created[0]})
    assert reply.status_code == 409
    assert reply.json()["error"]["code"] == "conflict"


def test_idempotency_key_replays_and_refuses_other_body(stack):
    name = _name("idem")
    key = str(uuid.uuid4())
    with stack.client() as c:
        first = c.post("/api/v1/networks", json={"name": name}, headers={"Idempotency-Key": key})
        again = c.post("/api/v1/networks", json={"name": name}, headers={"Idempotency-Key": key})
        other = c.post("/api/v1/networks", json={"name": name + "x"},
                       headers={"Idempotency-Key": key})
    assert first.status_code == 202 and again.status_code == 202
    assert again.json()["operation"]["id"] == first.json()["operation"]["id"]
    assert other.status_code == 422
    assert other.json()["error"]["code"] == "idempotency_key_reused"
    op = stack.wait_operation(first.json()["operation"]["id"])
    assert op["status"] == "succeeded"
    with stack.client() as c:  # a replay after the fact still answers the same operation
        late = c.post("/api/v1/networks", json={"name": name}, headers={"Idempotency-Key": key})
    assert late.status_code == 202 and late.json()["operation"]["id"] == op["id"]


def _key_ttl(stack, op_id: str) -> int:
    """How long Redis keeps the Idempotency-Key record that made `op_id`."""
    db = redis.Redis.from_url(stack.redis_url)
    for name in db.scan_iter("hypd:idem:*"):
        if json.loads(db.get(name))["operation_id"] == op_id:
            return db.ttl(name)
    raise AssertionError(f"no idempotency record made {op_id}")


def test_the_client_says_how_long_its_key_is_remembered(stack):
    """Idempotency-TTL is a property of the request (the MCP server sends 600 for the keys
    it derives); without it a key is kept the server's 24 hours, which is also the most."""
    name = _name("ttl")
    with stack.client() as c:
        short = c.post("/api/v1/networks", json={"name": name},
                       headers={"Idempotency-Key": str(uuid.uuid4()), "Idempotency-TTL": "600"})
        too_long = c.post("/api/v1/networks", json={"name": name + "x"},
                          headers={"Idempotency-Key": str(uuid.uuid4()),
                                   "Idempotency-TTL": str(24 * 3600 + 1)})
        odd = [c.post("/api/v1/networks", json={"name": name + "y"},
                      headers={"Idempotency-Key": str(uuid.uuid4()), "Idempotency-TTL": ttl})
               for ttl in ("0", "-5", "1.5", "ten", "\u0661".encode())]
        plain = c.post("/api/v1/networks", json={"name": name + "z"},
                       headers={"Idempotency-Key": str(uuid.uuid4())})
        # without a key, a TTL the server would not take is refused all the same, never
        # ignored while the change goes ahead (the schema-built fuzz found it so)
        keyless = c.post("/api/v1/networks", json={"name": name + "k"},
                         headers={"Idempotency-TTL": "ten"})
        planned = c.post("/api/v1/networks", json={"name": name + "k"},
                         params={"dry_run": "true"}, headers={"Idempotency-TTL": "0"})
        made = c.get("/api/v1/operations", params={"target": f"network/{name}k"}).json()
    assert short.status_code == 202 and plain.status_code == 202, (short.text, plain.text)
    assert made["items"] == []
    for refused in (too_long, *odd, keyless, planned):
        assert refused.status_code == 422, refused.text
        error = refused.json()["error"]
        assert error["code"] == "validation_failed"
        assert error["details"]["fields"] == {"Idempotency-TTL": [error["message"]]}
        assert "1 to 86400" in error["message"]
    assert 590 <= _key_ttl(stack, short.json()["operation"]["id"]) <= 600
    assert 24 * 3600 - 10 <= _key_ttl(stack, plain.json()["operation"]["id"]) <= 24 * 3600
    for reply in (short, plain):
        assert stack.wait_operation(reply.json()["operation"]["id"])["status"] == "succeeded"


def test_busy_target_is_409_naming_the_running_operation(stack):
    name = _name("busy")
    with stack.client() as c:
        first = c.post("/api/v1/networks", json={"name": name}).json()
        second = c.post("/api/v1/networks", json={"name": name})
    assert second.status_code == 409
    error = second.json()["error"]
    assert error["code"] == "conflict"
    assert error["details"]["operation_id"] == first["operation"]["id"]
    assert first["operation"]["id"] in error["message"]
    assert stack.wait_operation(first["operation"]["id"])["status"] == "succeeded"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "Bad_Name"}, "name"),
        ({"name": "ends-"}, "name"),
        ({}, "name"),
        ({"name": "ok", "cidr": "8.8.0.0/16"}, "cidr"),
        ({"name": "ok", "cidr": "10.0.0.0/24"}, "cidr"),
        ({"name": "ok", "availability_zones": ["us-west-2a"]}, "availability_zones"),
        ({"name": "ok", "surprise": 1}, "surprise"),
    ],
)
def test_bad_body_is_422_with_field_errors(stack, body, field):
    with stack.client() as c:
        reply = c.post("/api/v1/networks", json=body)
    assert reply.status_code == 422, reply.text
    error = reply.json()["error"]
    assert error["code"] == "validation_failed"
    assert field in error["details"]["fields"]
    assert error["message"]


def test_unknown_region_and_a_repeated_zone_is_422_not_500(stack):
    """marshmallow reports the bad item by index beside the list's own `_schema` error; the
    envelope once failed to serialise that mix (int and str keys) and answered 500."""
    body = {"name": "mixed", "region": "us-nowhere-1",
            "availability_zones": ["us-west-2a", "us-west-2a", "nowhere"]}
    with stack.client() as c:
        reply = c.post("/api/v1/networks", json=body)
    assert reply.status_code == 422, reply.text
    error = reply.json()["error"]
    assert error["code"] == "validation_failed"
    assert error["details"]["fields"]["availability_zones"] == {
        "2": ["not an availability zone name"], "_schema": ["availability zones must be distinct"]}
    assert error["details"]["fields"]["region"]
    assert "availability_zones.2: not an availability zone name" in error["message"]
    assert "availability_zones: availability zones must be distinct" in error["message"]


def test_zone_not_in_region_is_422(stack):
    with stack.client() as c:
        reply = c.post("/api/v1/networks",
                       json={"name": "zones", "availability_zones": ["us-west-2a", "us-east-1a"]})
    assert reply.status_code == 422
    assert "us-east-1a" in reply.json()["error"]["message"]


def test_delete_removes_only_this_network(stack):
    name = _name("gone")
    ec2 = _ec2(stack)
    bystander = ec2.create_vpc(CidrBlock="10.99.0.0/16")["Vpc"]["VpcId"]
    with stack.client() as c:
        op = c.post("/api/v1/networks", json={"name": name}).json()["operation"]
        assert stack.wait_operation(op["id"])["status"] == "succeeded"
        vpc_id = c.get(f"/api/v1/networks/{name}").json()["vpc_id"]
    # the plan first: nothing uses it; each resource's delete in order, none sent
    plan = rehearsed(stack, "DELETE", f"/api/v1/networks/{name}", kind="network.delete")
    assert plan["refused"] is False and plan["would_fail"] is None, plan
    assert calls_in_order(plan, [("ec2", "DeleteVpcEndpoints"), ("ec2", "DeleteSecurityGroup"),
                                 ("ec2", "DeleteNatGateway"), ("ec2", "DeleteSubnet"),
                                 ("ec2", "DeleteVpc")]), plan
    assert all(c["params"].get("VpcId") in (None, vpc_id)
               for s in plan["steps"] for c in s["calls"])  # this network's, no other's
    assert ec2.describe_vpcs(VpcIds=[vpc_id])["Vpcs"]
    with stack.client() as c:
        reply = c.delete(f"/api/v1/networks/{name}")
        assert reply.status_code == 202, reply.text
        assert reply.json()["operation"]["kind"] == "network.delete"
        done = stack.wait_operation(reply.json()["operation"]["id"])
        assert done["status"] == "succeeded", done
        assert c.get(f"/api/v1/networks/{name}").status_code == 404
    assert not ec2.describe_vpcs(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["Vpcs"]
    assert ec2.describe_vpcs(VpcIds=[bystander])["Vpcs"]
