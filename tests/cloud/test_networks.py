"""Network builders, readers and deletion helpers against moto."""

from __future__ import annotations

import ipaddress

import pytest

from cloud import networks as net
from tests.cloud.conftest import REGION
from tests.cloud.netkit import Spy, set_nat_state, snapshot, tags

ZONES = ["us-west-2a", "us-west-2b"]


def build(ec2, name: str, cidr: str = net.DEFAULT_CIDR, zones=ZONES) -> dict:
    """Every builder in order, as network.create runs them."""
    out: dict = {}
    out.update(net.ensure_vpc(ec2, name, cidr))
    out["subnets"] = net.ensure_subnets(ec2, name, out["vpc_id"], zones)
    public = [s["id"] for s in out["subnets"] if s["role"] == "public"]
    private = [s["id"] for s in out["subnets"] if s["role"] == "private"]
    out.update(net.ensure_internet_gateway(ec2, name, out["vpc_id"]))
    out.update(net.ensure_nat_gateway(ec2, name, out["vpc_id"], public[0], f"tok-{name}-nat"))
    out.update(net.ensure_route_tables(ec2, name, out["vpc_id"], out["internet_gateway_id"],
                                       out["nat_gateway_id"], public, private))
    out.update(net.ensure_security_group(ec2, name, out["vpc_id"]))
    out.update(net.ensure_s3_endpoint(ec2, name, out["vpc_id"], REGION,
                                      [out["public_route_table_id"],
                                       out["private_route_table_id"]], f"tok-{name}-s3"))
    return out


def assert_tagged(resource: dict, name: str, role: str) -> None:
    got = tags(resource)
    assert got["hypd:managed-by"] == "hypd"
    assert got["hypd:network"] == name
    assert got["hypd:role"] == role
    assert got["Name"].startswith(f"hypd-{name}")


# -- builders ------------------------------------------------------------------------------


def test_every_resource_is_created_with_the_network_tags(ec2):
    out = build(ec2, "lab")
    vpc = ec2.describe_vpcs(VpcIds=[out["vpc_id"]])["Vpcs"][0]
    assert_tagged(vpc, "lab", "vpc")
    for subnet in ec2.describe_subnets(SubnetIds=[s["id"] for s in out["subnets"]])["Subnets"]:
        role = "public-subnet" if tags(subnet)["hypd:role"] == "public-subnet" else \
            "private-subnet"
        assert_tagged(subnet, "lab", role)
    igw = ec2.describe_internet_gateways(
        InternetGatewayIds=[out["internet_gateway_id"]])["InternetGateways"][0]
    assert_tagged(igw, "lab", "internet-gateway")
    nat = ec2.describe_nat_gateways(NatGatewayIds=[out["nat_gateway_id"]])["NatGateways"][0]
    assert_tagged(nat, "lab", "nat-gateway")
    eip = ec2.describe_addresses(AllocationIds=[out["allocation_id"]])["Addresses"][0]
    assert_tagged(eip, "lab", "nat-eip")
    tables = ec2.describe_route_tables(RouteTableIds=[out["public_route_table_id"],
                                                      out["private_route_table_id"]])
    assert sorted(tags(t)["hypd:role"] for t in tables["RouteTables"]) == [
        "private-route-table", "public-route-table"]
    for table in tables["RouteTables"]:
        assert_tagged(table, "lab", tags(table)["hypd:role"])
    group = ec2.describe_security_groups(GroupIds=[out["security_group_id"]])["SecurityGroups"][0]
    assert_tagged(group, "lab", "security-group")
    endpoint = ec2.describe_vpc_endpoints(
        VpcEndpointIds=[out["s3_endpoint_id"]])["VpcEndpoints"][0]
    assert_tagged(endpoint, "lab", "s3-endpoint")


def test_vpc_has_dns_support_and_hostnames(ec2):
    vpc_id = net.ensure_vpc(ec2, "lab")["vpc_id"]
    assert ec2.describe_vpc_attribute(VpcId=vpc_id, Attribute="enableDnsHostnames")[
        "EnableDnsHostnames"]["Value"] is True
    assert ec2.describe_vpc_attribute(VpcId=vpc_id, Attribute="enableDnsSupport")[
        "EnableDnsSupport"]["Value"] is True
    assert ec2.describe_vpcs(VpcIds=[vpc_id])["Vpcs"][0]["CidrBlock"] == "10.0.0.0/16"


def test_subnets_layout(ec2):
    vpc_id = net.ensure_vpc(ec2, "lab", "10.20.0.0/16")["vpc_id"]
    subnets = net.ensure_subnets(ec2, "lab", vpc_id, ["us-west-2b", "us-west-2c", "us-west-2a"])
    assert [(s["availability_zone"], s["role"]) for s in subnets] == [
        ("us-west-2b", "private"), ("us-west-2b", "public"),
        ("us-west-2c", "private"), ("us-west-2c", "public"),
        ("us-west-2a", "private"), ("us-west-2a", "public")]
    vpc = ipaddress.ip_network("10.20.0.0/16")
    blocks = [ipaddress.ip_network(s["cidr"]) for s in subnets]
    for s, block in zip(subnets, blocks, strict=True):
        assert block.subnet_of(vpc)
        assert block.prefixlen == (20 if s["role"] == "private" else 24)
    assert not any(a.overlaps(b) for i, a in enumerate(blocks) for b in blocks[i + 1:])
    described = {s["SubnetId"]: s for s in ec2.describe_subnets(
        SubnetIds=[s["id"] for s in subnets])["Subnets"]}
    for s in subnets:
        assert described[s["id"]]["AvailabilityZone"] == s["availability_zone"]
        elb = "kubernetes.io/role/elb" if s["role"] == "public" else \
            "kubernetes.io/role/internal-elb"
        assert tags(described[s["id"]])[elb] == "1"


def test_subnets_need_two_zones(ec2):
    vpc_id = net.ensure_vpc(ec2, "lab")["vpc_id"]
    with pytest.raises(net.NetworkError, match="at least 2 availability zones"):
        net.ensure_subnets(ec2, "lab", vpc_id, ["us-west-2a", "us-west-2a"])


def test_building_twice_creates_and_changes_nothing(ec2):
    first = build(ec2, "lab")
    before = snapshot(ec2)
    spy = Spy(ec2)
    second = build(spy, "lab")
    assert spy.mutations == []  # every route, association, rule and attachment was checked
    assert snapshot(ec2) == before
    first.pop("state"), second.pop("state")
    assert second == first


def test_routes_associations_and_endpoint(ec2):
    out = build(ec2, "lab")
    tables = {t["RouteTableId"]: t for t in ec2.describe_route_tables(
        RouteTableIds=[out["public_route_table_id"], out["private_route_table_id"]])[
        "RouteTables"]}
    public, private = tables[out["public_route_table_id"]], tables[out["private_route_table_id"]]

    def default(table):
        return next(r for r in table["Routes"] if r.get("DestinationCidrBlock") == "0.0.0.0/0")

    assert default(public)["GatewayId"] == out["internet_gateway_id"]
    assert default(private)["NatGatewayId"] == out["nat_gateway_id"]
    assert sorted(a["SubnetId"] for a in public["Associations"]) == sorted(
        s["id"] for s in out["subnets"] if s["role"] == "public")
    assert sorted(a["SubnetId"] for a in private["Associations"]) == sorted(
        s["id"] for s in out["subnets"] if s["role"] == "private")
    for table in (public, private):  # the S3 gateway endpoint's prefix-list route
        assert any(r.get("GatewayId") == out["s3_endpoint_id"] for r in table["Routes"])
    endpoint = ec2.describe_vpc_endpoints(VpcEndpointIds=[out["s3_endpoint_id"]])[
        "VpcEndpoints"][0]
    assert endpoint["ServiceName"] == "com.amazonaws.us-west-2.s3"
    assert endpoint["VpcEndpointType"] == "Gateway"
    assert sorted(endpoint["RouteTableIds"]) == sorted(tables)
    nat = ec2.describe_nat_gateways(NatGatewayIds=[out["nat_gateway_id"]])["NatGateways"][0]
    assert nat["SubnetId"] == next(s["id"] for s in out["subnets"] if s["role"] == "public")
    assert nat["NatGatewayAddresses"][0]["AllocationId"] == out["allocation_id"]


def test_internet_gateway_attached_once(ec2):
    vpc_id = net.ensure_vpc(ec2, "lab")["vpc_id"]
    spy = Spy(ec2)
    igw = net.ensure_internet_gateway(spy, "lab", vpc_id)["internet_gateway_id"]
    assert spy.mutations == ["create_internet_gateway", "attach_internet_gateway"]
    spy.calls.clear()
    assert net.ensure_internet_gateway(spy, "lab", vpc_id)["internet_gateway_id"] == igw
    assert spy.mutations == []
    attachments = ec2.describe_internet_gateways(InternetGatewayIds=[igw])[
        "InternetGateways"][0]["Attachments"]
    assert [a["VpcId"] for a in attachments] == [vpc_id]


def test_private_default_route_waits_for_the_nat_gateway(ec2):
    vpc_id = net.ensure_vpc(ec2, "lab")["vpc_id"]
    subnets = net.ensure_subnets(ec2, "lab", vpc_id, ZONES)
    public = [s["id"] for s in subnets if s["role"] == "public"]
    private = [s["id"] for s in subnets if s["role"] == "private"]
    igw = net.ensure_internet_gateway(ec2, "lab", vpc_id)["internet_gateway_id"]
    nat = net.ensure_nat_gateway(ec2, "lab", vpc_id, public[0], "tok")["nat_gateway_id"]
    set_nat_state(REGION, nat, "pending")
    assert net.nat_gateway_state(ec2, nat) == ("pending", None)
    result = net.ensure_route_tables(ec2, "lab", vpc_id, igw, nat, public, private)
    assert result["private_default_route"] is False
    routes = ec2.describe_route_tables(RouteTableIds=[result["private_route_table_id"]])[
        "RouteTables"][0]["Routes"]
    assert not any(r.get("DestinationCidrBlock") == "0.0.0.0/0" for r in routes)
    set_nat_state(REGION, nat, "available")
    again = net.ensure_route_tables(ec2, "lab", vpc_id, igw, nat, public, private)
    assert again["private_default_route"] is True
    assert again["private_route_table_id"] == result["private_route_table_id"]
    routes = ec2.describe_route_tables(RouteTableIds=[result["private_route_table_id"]])[
        "RouteTables"][0]["Routes"]
    assert [r["NatGatewayId"] for r in routes if r.get("DestinationCidrBlock") == "0.0.0.0/0"] \
        == [nat]


def test_nat_gateway_state_of_an_unknown_id(ec2):
    assert net.nat_gateway_state(ec2, "nat-0123456789abcdef0")[0] == "missing"


def test_security_group_rules(ec2):
    vpc_id = net.ensure_vpc(ec2, "lab")["vpc_id"]
    group_id = net.ensure_security_group(ec2, "lab", vpc_id)["security_group_id"]
    group = ec2.describe_security_groups(GroupIds=[group_id])["SecurityGroups"][0]
    assert group["GroupName"] == "hypd-lab"
    assert group["VpcId"] == vpc_id
    ingress = [(p["IpProtocol"], [g["GroupId"] for g in p["UserIdGroupPairs"]],
                [r["CidrIp"] for r in p["IpRanges"]]) for p in group["IpPermissions"]]
    assert ingress == [("-1", [group_id], [])]  # members only, all traffic (EFA, NCCL)
    egress = group["IpPermissionsEgress"]
    assert all(p["IpProtocol"] == "-1" for p in egress)
    assert [g["GroupId"] for p in egress for g in p["UserIdGroupPairs"]] == [group_id]
    assert [r["CidrIp"] for p in egress for r in p["IpRanges"]] == ["0.0.0.0/0"]


def test_security_group_name_taken_by_someone_else(ec2):
    vpc_id = net.ensure_vpc(ec2, "lab")["vpc_id"]
    ec2.create_security_group(GroupName="hypd-lab", Description="not ours", VpcId=vpc_id)
    with pytest.raises(net.NetworkError, match="hypd did not create"):
        net.ensure_security_group(ec2, "lab", vpc_id)


def test_existing_network_with_another_cidr_is_a_conflict(ec2):
    net.ensure_vpc(ec2, "lab", "10.0.0.0/16")
    with pytest.raises(net.NetworkError, match="already exists") as info:
        net.ensure_vpc(ec2, "lab", "10.1.0.0/16")
    assert info.value.code == "network_conflict"


def test_an_existing_vpc_is_checked_before_it_is_used(ec2):
    vpc_id = ec2.create_vpc(CidrBlock="10.5.0.0/16")["Vpc"]["VpcId"]
    a, b = (ec2.create_subnet(VpcId=vpc_id, CidrBlock=f"10.5.{i}.0/24",
                              AvailabilityZone=zone)["Subnet"]["SubnetId"]
            for i, zone in enumerate(ZONES))
    same_zone = ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.5.9.0/24",
                                  AvailabilityZone=ZONES[0])["Subnet"]["SubnetId"]
    assert net.existing_vpc(ec2, vpc_id, [a, b]) == {
        "vpc_id": vpc_id, "subnet_ids": [a, b], "availability_zones": ZONES}
    other_vpc = ec2.create_vpc(CidrBlock="10.6.0.0/16")["Vpc"]["VpcId"]
    elsewhere = ec2.create_subnet(VpcId=other_vpc, CidrBlock="10.6.0.0/24",
                                  AvailabilityZone=ZONES[1])["Subnet"]["SubnetId"]
    for vpc, subnets, message in (
            ("vpc-0000000000000000f", [a, b], f"does not exist in {REGION}"),
            (vpc_id, [a, elsewhere], f"subnets not in VPC {vpc_id}: {elsewhere}"),
            (vpc_id, [a, same_zone], "at least two availability zones")):
        with pytest.raises(net.NetworkError, match=message) as info:
            net.existing_vpc(ec2, vpc, subnets)
        assert info.value.code == "validation_failed"


def test_record_is_called_as_soon_as_ids_exist(ec2):
    recorded: list[dict] = []
    vpc = net.ensure_vpc(ec2, "lab", record=lambda **kw: recorded.append(kw))
    assert recorded == [{"vpc_id": vpc["vpc_id"], "cidr": "10.0.0.0/16"}]
    recorded.clear()
    net.ensure_subnets(ec2, "lab", vpc["vpc_id"], ZONES, record=lambda **kw: recorded.append(kw))
    assert [len(r["subnets"]) for r in recorded] == [1, 2, 3, 4]


def test_s3_service_name():
    assert net.s3_service_name("us-west-2") == "com.amazonaws.us-west-2.s3"
    assert net.s3_service_name("cn-north-1") == "cn.com.amazonaws.cn-north-1.s3"


# -- readers -------------------------------------------------------------------------------


def test_get_and_list_networks(ec2):
    out = build(ec2, "lab")
    other = build(ec2, "other", "10.1.0.0/16", ["us-west-2c", "us-west-2d"])
    # an untagged VPC, and one that only *looks* like hypd's by name: neither is a network
    ec2.create_vpc(CidrBlock="10.9.0.0/16")
    ec2.create_vpc(CidrBlock="10.8.0.0/16", TagSpecifications=[
        {"ResourceType": "vpc", "Tags": [{"Key": "Name", "Value": "hypd-ghost"}]}])
    lab = net.get_network(ec2, "lab")
    assert lab == {
        "name": "lab",
        "region": REGION,
        "vpc_id": out["vpc_id"],
        "cidr": "10.0.0.0/16",
        "state": "available",
        "availability_zones": ZONES,
        "subnets": sorted(out["subnets"], key=lambda s: (s["availability_zone"],
                                                         s["role"] != "private")),
        "internet_gateway_id": out["internet_gateway_id"],
        "nat_gateway_id": out["nat_gateway_id"],
        "security_group_id": out["security_group_id"],
        "s3_endpoint_id": out["s3_endpoint_id"],
    }
    assert net.get_network(ec2, "ghost") is None
    assert net.get_network(ec2, "nope") is None
    listed = net.list_networks(ec2)
    assert [n["name"] for n in listed] == ["lab", "other"]
    assert listed[0] == lab
    assert listed[1]["vpc_id"] == other["vpc_id"]
    assert listed[1]["availability_zones"] == ["us-west-2c", "us-west-2d"]


def test_network_state_follows_the_pieces(ec2):
    vpc_id = net.ensure_vpc(ec2, "lab")["vpc_id"]
    assert net.get_network(ec2, "lab")["state"] == "incomplete"
    out = build(ec2, "lab")
    assert out["vpc_id"] == vpc_id
    set_nat_state(REGION, out["nat_gateway_id"], "pending")
    assert net.get_network(ec2, "lab")["state"] == "pending"
    set_nat_state(REGION, out["nat_gateway_id"], "deleting")
    assert net.get_network(ec2, "lab")["state"] == "deleting"
    set_nat_state(REGION, out["nat_gateway_id"], "available")
    assert net.get_network(ec2, "lab")["state"] == "available"


# -- deletion ------------------------------------------------------------------------------


def delete_all(ec2, name: str) -> dict[str, list[str]]:
    done = {
        "endpoints": net.delete_s3_endpoints(ec2, name),
        "groups": net.delete_security_groups(ec2, name),
        "tables": net.delete_route_tables(ec2, name),
        "nats": net.delete_nat_gateways(ec2, name),
    }
    assert net.nat_gateways_remaining(ec2, name) == []
    done["eips"] = net.release_nat_addresses(ec2, name)
    done["igws"] = net.delete_internet_gateways(ec2, name)
    done["subnets"] = net.delete_subnets(ec2, name)
    done["vpcs"] = net.delete_vpcs(ec2, name)
    return done


def test_delete_removes_only_that_networks_tagged_resources(ec2):
    lab = build(ec2, "lab")
    build(ec2, "other", "10.1.0.0/16")
    stranger = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]  # same CIDR, untagged
    stranger_subnet = ec2.create_subnet(VpcId=stranger, CidrBlock="10.0.0.0/20")["Subnet"]
    other_before = net.get_network(ec2, "other")

    done = delete_all(ec2, "lab")
    assert done["vpcs"] == [lab["vpc_id"]]
    assert sorted(done["subnets"]) == sorted(s["id"] for s in lab["subnets"])
    assert done["nats"] == [lab["nat_gateway_id"]]
    assert done["eips"] == [lab["allocation_id"]]
    assert done["igws"] == [lab["internet_gateway_id"]]
    assert sorted(done["tables"]) == sorted([lab["public_route_table_id"],
                                             lab["private_route_table_id"]])
    assert done["groups"] == [lab["security_group_id"]]
    assert done["endpoints"] == [lab["s3_endpoint_id"]]

    assert net.get_network(ec2, "lab") is None
    assert net.get_network(ec2, "other") == other_before
    vpcs = {v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"]}
    assert stranger in vpcs and lab["vpc_id"] not in vpcs
    assert ec2.describe_subnets(SubnetIds=[stranger_subnet["SubnetId"]])["Subnets"]
    assert [a["AllocationId"] for a in ec2.describe_addresses()["Addresses"]] != []  # other's
    assert lab["allocation_id"] not in {a["AllocationId"]
                                        for a in ec2.describe_addresses()["Addresses"]}


def test_delete_is_idempotent(ec2):
    build(ec2, "lab")
    delete_all(ec2, "lab")
    before = snapshot(ec2)
    spy = Spy(ec2)
    again = delete_all(spy, "lab")
    assert all(ids == [] for ids in again.values())
    assert spy.mutations == []
    assert snapshot(ec2) == before


def test_delete_out_of_order_says_not_yet(ec2):
    out = build(ec2, "lab")
    with pytest.raises(net.NotYet, match=r"VPC .* still has dependencies: 4 subnet"):
        net.delete_vpcs(ec2, "lab")
    with pytest.raises(net.NotYet, match="still held by a NAT gateway"):
        net.release_nat_addresses(ec2, "lab")
    # an association we do not own keeps the table busy: DependencyViolation → NotYet
    fresh = ec2.create_subnet(VpcId=out["vpc_id"], CidrBlock="10.0.200.0/24")["Subnet"]
    ec2.associate_route_table(RouteTableId=out["public_route_table_id"],
                              SubnetId=fresh["SubnetId"])
    with pytest.raises(net.NotYet, match=f"route table {out['public_route_table_id']}"):
        _delete_tables_without_disassociating(ec2)
    assert net.get_network(ec2, "lab")["vpc_id"] == out["vpc_id"]


def _delete_tables_without_disassociating(ec2):
    for table in net._find(ec2, "rt", "lab", [net.ROLE_PUBLIC_ROUTE_TABLE]):
        with net._dependencies(f"route table {table['RouteTableId']}"):
            ec2.delete_route_table(RouteTableId=table["RouteTableId"])


def test_nat_gateway_deletion_is_waited_for(ec2):
    out = build(ec2, "lab")
    net.delete_s3_endpoints(ec2, "lab")
    net.delete_security_groups(ec2, "lab")
    net.delete_route_tables(ec2, "lab")
    assert net.delete_nat_gateways(ec2, "lab") == [out["nat_gateway_id"]]
    set_nat_state(REGION, out["nat_gateway_id"], "deleting")  # as AWS: ~1 minute
    assert net.nat_gateways_remaining(ec2, "lab") == [
        {"id": out["nat_gateway_id"], "state": "deleting"}]
    assert net.delete_nat_gateways(ec2, "lab") == []  # not asked twice
    set_nat_state(REGION, out["nat_gateway_id"], "deleted")
    assert net.nat_gateways_remaining(ec2, "lab") == []


def test_failed_nat_gateways_are_listed(ec2):
    out = build(ec2, "lab")
    assert net.failed_nat_gateways(ec2, "lab") == []
    set_nat_state(REGION, out["nat_gateway_id"], "failed")
    assert net.failed_nat_gateways(ec2, "lab") == [out["nat_gateway_id"]]
    assert net.get_network(ec2, "lab")["state"] == "failed"


def test_an_attempt_racing_for_the_subnets_adopts_what_the_other_made(ec2):
    """Two attempts of the subnets step (a duplicate task) may both find no subnets before
    either creates one; the one that gets the VPC lock second must adopt, not add a fifth."""
    import contextlib

    vpc_id = net.ensure_vpc(ec2, "race")["vpc_id"]
    other_ran: list[bool] = []

    @contextlib.contextmanager
    def lock():
        if not other_ran:  # the other attempt held the lock first and made every subnet
            other_ran.append(True)
            net.ensure_subnets(ec2, "race", vpc_id, ZONES)
        yield

    made = net.ensure_subnets(ec2, "race", vpc_id, ZONES, lock=lock)
    tagged = ec2.describe_subnets(Filters=[{"Name": "tag:hypd:network", "Values": ["race"]}])
    assert len(tagged["Subnets"]) == 4
    assert {s["id"] for s in made} == {s["SubnetId"] for s in tagged["Subnets"]}
