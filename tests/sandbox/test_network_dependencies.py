"""What EKS, HyperPod and NAT gateways put in a VPC, and the deletions AWS refuses while it is
there: the sandbox's network interfaces and DependencyViolation, through boto3 over HTTP.

The local AWS here runs at speed 1 and the tests move its clock, so every in-between state
(an interface detached but not yet deleted) is asserted without racing it.
"""

from __future__ import annotations

import ipaddress
import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sandbox.control import SandboxControl
from sandbox.interfaces import ENI_RELEASE_S
from sandbox.local_aws import LocalAws
from tests.sandbox.hyperpodkit import Lab, cluster_request, gpu_group, make_lab, unique

EKS_DELETING_S = 300.0
HYPERPOD_DELETING_S = 300.0
NODE_SHUTDOWN_S = 120.0
SANDBOX_SPEED = 1.0  # the conftest's local AWS at real speed: only advance_clock moves it


@pytest.fixture(scope="module")
def ctl(local_aws: LocalAws) -> SandboxControl:
    return SandboxControl(local_aws.url)


@pytest.fixture(scope="module")
def lab(ctl: SandboxControl, client_factory: Any) -> Lab:
    return make_lab(client_factory, ctl, "deps")


def refused(call: Any, **kwargs: Any) -> tuple[str, str]:
    with pytest.raises(ClientError) as caught:
        call(**kwargs)
    error = caught.value.response["Error"]
    return error["Code"], error["Message"]


def interfaces(ec2: Any, **filters: str) -> list[dict[str, Any]]:
    query = [{"Name": k.replace("_", "-"), "Values": [v]} for k, v in filters.items()]
    return ec2.describe_network_interfaces(Filters=query)["NetworkInterfaces"]


def network(ec2: Any) -> dict[str, str]:
    """A VPC with two subnets in two zones and a security group."""
    second = uuid.uuid4().int % 200 + 20
    vpc = ec2.create_vpc(CidrBlock=f"10.{second}.0.0/16")["Vpc"]["VpcId"]
    subnets = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.{second}.{i * 16}.0/20",
                                 AvailabilityZone=f"us-west-2{zone}")["Subnet"]["SubnetId"]
               for i, zone in enumerate("ab")]
    group = ec2.create_security_group(GroupName=unique("sg"), Description="nodes",
                                      VpcId=vpc)["GroupId"]
    return {"vpc": vpc, "a": subnets[0], "b": subnets[1], "sg": group}


def test_an_eks_cluster_holds_its_subnets_security_groups_and_vpc_until_it_is_gone(
        ec2: Any, client_factory: Any, ctl: SandboxControl, lab: Lab) -> None:
    eks = client_factory("eks")
    net = network(ec2)
    name = unique("eks")
    eks.create_cluster(name=name, roleArn=f"arn:aws:iam::123456789012:role/{lab.name}-cluster",
                       resourcesVpcConfig={"subnetIds": [net["a"], net["b"]],
                                           "securityGroupIds": [net["sg"]]})
    config = eks.describe_cluster(name=name)["cluster"]["resourcesVpcConfig"]
    assert config["vpcId"] == net["vpc"]  # as EKS reports the subnets' VPC
    cluster_sg = config["clusterSecurityGroupId"]
    group = ec2.describe_security_groups(GroupIds=[cluster_sg])["SecurityGroups"][0]
    assert group["GroupName"].startswith(f"eks-cluster-sg-{name}-")
    assert group["VpcId"] == net["vpc"]

    enis = interfaces(ec2, vpc_id=net["vpc"])
    assert sorted(e["SubnetId"] for e in enis) == sorted([net["a"], net["b"]])
    for eni in enis:
        assert eni["Description"] == f"Amazon EKS {name}"
        assert eni["InterfaceType"] == "interface"
        assert eni["Status"] == "in-use"
        assert eni["RequesterManaged"] is True
        assert eni["RequesterId"] == eni["Attachment"]["InstanceOwnerId"] != eni["OwnerId"]
        assert eni["Attachment"]["Status"] == "attached"
        assert eni["Attachment"]["AttachmentId"].startswith("eni-attach-")
        assert sorted(g["GroupId"] for g in eni["Groups"]) == sorted([net["sg"], cluster_sg])
        subnet = ec2.describe_subnets(SubnetIds=[eni["SubnetId"]])["Subnets"][0]
        assert ipaddress.ip_address(eni["PrivateIpAddress"]) in ipaddress.ip_network(
            subnet["CidrBlock"])
    assert len(interfaces(ec2, group_id=cluster_sg)) == 2

    def all_refused() -> None:
        assert refused(ec2.delete_subnet, SubnetId=net["a"]) == (
            "DependencyViolation",
            f"The subnet '{net['a']}' has dependencies and cannot be deleted.")
        assert refused(ec2.delete_security_group, GroupId=net["sg"]) == (
            "DependencyViolation", f"resource {net['sg']} has a dependent object")
        assert refused(ec2.delete_vpc, VpcId=net["vpc"]) == (
            "DependencyViolation",
            f"The vpc '{net['vpc']}' has dependencies and cannot be deleted.")

    all_refused()
    assert refused(ec2.delete_network_interface, NetworkInterfaceId=enis[0]["NetworkInterfaceId"]
                   )[0] == "InvalidNetworkInterface.InUse"
    assert refused(ec2.detach_network_interface, AttachmentId=enis[0]["Attachment"][
        "AttachmentId"]) == ("OperationNotPermitted",
                             "You are not allowed to manage 'eni-attach' attachments.")

    eks.delete_cluster(name=name)
    ctl.advance_clock(EKS_DELETING_S)
    with pytest.raises(ClientError):
        eks.describe_cluster(name=name)
    # the cluster is gone, its interfaces are not yet: detached, still in the way
    left = interfaces(ec2, vpc_id=net["vpc"])
    assert [e["Status"] for e in left] == ["available", "available"]
    assert all("Attachment" not in e for e in left)
    all_refused()

    ctl.advance_clock(ENI_RELEASE_S)
    assert interfaces(ec2, vpc_id=net["vpc"]) == []
    assert ec2.describe_security_groups(
        Filters=[{"Name": "group-id", "Values": [cluster_sg]}])["SecurityGroups"] == []
    ec2.delete_security_group(GroupId=net["sg"])
    ec2.delete_subnet(SubnetId=net["a"])
    ec2.delete_subnet(SubnetId=net["b"])
    ec2.delete_vpc(VpcId=net["vpc"])


def _types(enis: list[dict[str, Any]]) -> list[str]:
    return sorted(e["InterfaceType"] for e in enis)


def _group(lab: Lab, name: str, instance_type: str, count: int, subnet: str, group: str,
           **extra: Any) -> dict[str, Any]:
    spec = gpu_group(lab, InstanceGroupName=name, InstanceType=instance_type,
                     InstanceCount=count,
                     OverrideVpcConfig={"SecurityGroupIds": [group], "Subnets": [subnet]})
    for key in ("OnStartDeepHealthChecks", "NetworkInterface"):
        spec.pop(key)
    return {**spec, **extra}


def test_hyperpod_instances_hold_network_interfaces_in_their_groups_subnet(
        ec2: Any, client_factory: Any, ctl: SandboxControl, lab: Lab) -> None:
    sm = client_factory("sagemaker")
    group = ec2.create_security_group(GroupName=unique("hp"), Description="hp",
                                      VpcId=lab.vpc_id)["GroupId"]
    vpc = ipaddress.ip_network(ec2.describe_vpcs(VpcIds=[lab.vpc_id])["Vpcs"][0]["CidrBlock"])
    subnet = ec2.create_subnet(VpcId=lab.vpc_id, CidrBlock=str(list(vpc.subnets(4))[4]),
                               AvailabilityZone="us-west-2b")["Subnet"]["SubnetId"]
    efa_only = _group(lab, "train", "ml.p4d.24xlarge", 1, subnet, group,
                      NetworkInterface={"InterfaceType": "efa-only"})
    plain = _group(lab, "cpu", "ml.m5.xlarge", 2, subnet, group)
    name = unique("hp")
    sm.create_cluster(**cluster_request(lab, name, [efa_only, plain],
                                        AutoScaling={"Mode": "Disable"}))
    mine = interfaces(ec2, subnet_id=subnet)
    # a p4d.24xlarge has 4 network cards: the primary efa, then efa-only ones (no address);
    # an m5.xlarge one plain interface each
    assert _types(mine) == ["efa", "efa-only", "efa-only", "efa-only", "interface", "interface"]
    assert all(e["RequesterManaged"] and e["Status"] == "in-use" for e in mine)
    assert all([g["GroupId"] for g in e["Groups"]] == [group] for e in mine)
    assert all(name in e["Description"] for e in mine)
    assert all("PrivateIpAddress" not in e for e in mine if e["InterfaceType"] == "efa-only")
    # each instance's primary interface holds its private address
    primary = {e["Description"].rsplit(" ", 1)[-1]: e["PrivateIpAddress"] for e in mine
               if e["InterfaceType"] in ("efa", "interface")}
    for node in sm.list_cluster_nodes(ClusterName=name)["ClusterNodeSummaries"]:
        described = sm.describe_cluster_node(ClusterName=name, NodeId=node["InstanceId"])
        assert primary[node["InstanceId"]] == described["NodeDetails"]["PrivatePrimaryIp"]
    assert refused(ec2.delete_subnet, SubnetId=subnet)[0] == "DependencyViolation"
    assert refused(ec2.delete_security_group, GroupId=group)[0] == "DependencyViolation"

    # scale out: the new instance's interface comes with it
    ctl.advance_clock(600)
    sm.update_cluster(ClusterName=name, InstanceGroups=[{**plain, "InstanceCount": 3}])
    assert _types(interfaces(ec2, subnet_id=subnet)).count("interface") == 3

    # scale in: a deleted node's interface goes after it terminates, and a little later
    cpu = [n["InstanceId"] for n in sm.list_cluster_nodes(ClusterName=name)[
        "ClusterNodeSummaries"] if n["InstanceGroupName"] == "cpu"]
    sm.batch_delete_cluster_nodes(ClusterName=name, NodeIds=cpu[:1])
    ctl.advance_clock(NODE_SHUTDOWN_S)
    assert _types(interfaces(ec2, subnet_id=subnet)).count("interface") == 3
    ctl.advance_clock(ENI_RELEASE_S)
    left = interfaces(ec2, subnet_id=subnet)
    assert _types(left).count("interface") == 2
    assert not any(cpu[0] in e["Description"] for e in left)

    # replace: the old instance's interfaces go, the new one's come
    (old,) = [n["InstanceId"] for n in sm.list_cluster_nodes(ClusterName=name)[
        "ClusterNodeSummaries"] if n["InstanceGroupName"] == "train"]
    sm.batch_replace_cluster_nodes(ClusterName=name, NodeIds=[old])
    ctl.advance_clock(NODE_SHUTDOWN_S + ENI_RELEASE_S)
    train = [e for e in interfaces(ec2, subnet_id=subnet) if e["InterfaceType"] != "interface"]
    assert len(train) == 4 and not any(old in e["Description"] for e in train)

    sm.delete_cluster(ClusterName=name)
    ctl.advance_clock(HYPERPOD_DELETING_S)
    assert refused(ec2.delete_subnet, SubnetId=subnet)[0] == "DependencyViolation"
    ctl.advance_clock(ENI_RELEASE_S)
    assert interfaces(ec2, subnet_id=subnet) == []
    ec2.delete_subnet(SubnetId=subnet)
    ec2.delete_security_group(GroupId=group)


def test_a_nat_gateway_holds_its_subnet_until_it_is_deleted(
        ec2: Any, ctl: SandboxControl) -> None:
    net = network(ec2)
    allocation = ec2.allocate_address(Domain="vpc")["AllocationId"]
    nat = ec2.create_nat_gateway(SubnetId=net["a"], AllocationId=allocation)["NatGateway"]
    eni_id = nat["NatGatewayAddresses"][0]["NetworkInterfaceId"]
    (eni,) = ec2.describe_network_interfaces(NetworkInterfaceIds=[eni_id])["NetworkInterfaces"]
    assert eni["Description"] == f"Interface for NAT Gateway {nat['NatGatewayId']}"
    assert eni["InterfaceType"] == "nat_gateway"
    assert eni["RequesterManaged"] is True and eni["Groups"] == []
    assert eni["Attachment"]["InstanceOwnerId"] == "amazon-aws"
    # a NAT gateway's interface has no security group: the group is free
    ec2.delete_security_group(GroupId=net["sg"])

    assert refused(ec2.delete_subnet, SubnetId=net["a"])[0] == "DependencyViolation"
    ec2.delete_nat_gateway(NatGatewayId=nat["NatGatewayId"])
    assert refused(ec2.delete_subnet, SubnetId=net["a"])[0] == "DependencyViolation"
    ctl.advance_clock(90)
    assert ec2.describe_nat_gateways(NatGatewayIds=[nat["NatGatewayId"]])["NatGateways"][0][
        "State"] == "deleted"
    assert interfaces(ec2, subnet_id=net["a"]) == []
    ec2.delete_subnet(SubnetId=net["a"])
    # its Elastic IP goes as hypd lets it go (moto keeps the association: hypd drops it)
    association = ec2.describe_addresses(AllocationIds=[allocation])["Addresses"][0]
    ec2.disassociate_address(AssociationId=association["AssociationId"])
    ec2.release_address(AllocationId=allocation)


def test_a_vpc_is_refused_while_a_gateway_group_or_table_remains(ec2: Any) -> None:
    net = network(ec2)
    for subnet in (net["a"], net["b"]):
        ec2.delete_subnet(SubnetId=subnet)
    igw = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=net["vpc"])
    table = ec2.create_route_table(VpcId=net["vpc"])["RouteTable"]["RouteTableId"]
    for undo in (lambda: ec2.detach_internet_gateway(InternetGatewayId=igw, VpcId=net["vpc"]),
                 lambda: ec2.delete_route_table(RouteTableId=table),
                 lambda: ec2.delete_security_group(GroupId=net["sg"])):
        assert refused(ec2.delete_vpc, VpcId=net["vpc"])[0] == "DependencyViolation"
        undo()
    ec2.delete_vpc(VpcId=net["vpc"])
    ec2.delete_internet_gateway(InternetGatewayId=igw)


def test_a_group_named_by_another_groups_rule_is_refused(ec2: Any) -> None:
    net = network(ec2)
    other = ec2.create_security_group(GroupName=unique("peer"), Description="peer",
                                      VpcId=net["vpc"])["GroupId"]
    rule = {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443}
    ec2.authorize_security_group_ingress(
        GroupId=net["sg"], IpPermissions=[{**rule, "UserIdGroupPairs": [{"GroupId": net["sg"]}]}])
    ec2.authorize_security_group_ingress(
        GroupId=other, IpPermissions=[{**rule, "UserIdGroupPairs": [{"GroupId": net["sg"]}]}])
    assert refused(ec2.delete_security_group, GroupId=net["sg"]) == (
        "DependencyViolation", f"resource {net['sg']} has a dependent object")
    ec2.delete_security_group(GroupId=other)
    ec2.delete_security_group(GroupId=net["sg"])  # its rule naming itself does not hold it
    # a dry run deletes nothing (moto's deleted the subnet)
    assert refused(ec2.delete_subnet, SubnetId=net["a"], DryRun=True)[0] == "DryRunOperation"
    assert ec2.describe_subnets(SubnetIds=[net["a"]])["Subnets"]


def test_an_interface_endpoint_holds_its_subnet_and_group_until_it_is_deleted(ec2: Any) -> None:
    net = network(ec2)
    endpoint = ec2.create_vpc_endpoint(
        VpcEndpointType="Interface", VpcId=net["vpc"], ServiceName="com.amazonaws.us-west-2.sts",
        SubnetIds=[net["a"]], SecurityGroupIds=[net["sg"]])["VpcEndpoint"]
    (eni,) = interfaces(ec2, subnet_id=net["a"])
    assert eni["Description"] == f"VPC Endpoint Interface {endpoint['VpcEndpointId']}"
    assert eni["InterfaceType"] == "vpc_endpoint" and eni["RequesterManaged"] is True
    assert [g["GroupId"] for g in eni["Groups"]] == [net["sg"]]
    assert refused(ec2.delete_subnet, SubnetId=net["a"])[0] == "DependencyViolation"
    assert refused(ec2.delete_security_group, GroupId=net["sg"])[0] == "DependencyViolation"
    ec2.delete_vpc_endpoints(VpcEndpointIds=[endpoint["VpcEndpointId"]])
    ec2.delete_security_group(GroupId=net["sg"])
    ec2.delete_subnet(SubnetId=net["a"])
