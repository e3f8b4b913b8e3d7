"""Deletions against the sandbox's local AWS, which refuses what AWS refuses while network
interfaces remain: network.delete deletes nothing while anyone else's interface is in the
VPC, waits for AWS services' interfaces to go, and only then takes the network apart; an
instance group's compute subnet is deleted once its instances' interfaces are gone.

The local AWS runs at speed 1 and each wait the operation asks for moves its clock by as
much (`drive`), so the test plays AWS's minutes without sleeping.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config

import tasks.networks as steps
from cloud import capacity
from cloud import networks as net
from sandbox.control import SandboxControl
from sandbox.interfaces import ENI_RELEASE_S
from sandbox.local_aws import LocalAws, client_env
from tasks.engine.kinds import StepFailed, StepRetry
from tasks.instance_groups import delete_subnet
from tasks.kinds import KINDS
from tests.sandbox.hyperpodkit import cluster_request, gpu_group, make_lab, unique
from tests.tasks.test_networks_steps import FakeContext, Operation

REGION = "us-west-2"
EKS_DELETING_S = 300.0


@pytest.fixture(scope="module")
def local() -> Iterator[tuple[LocalAws, SandboxControl]]:
    aws = LocalAws(speed=1.0)
    aws.start()
    try:
        yield aws, SandboxControl(aws.url)
    finally:
        aws.stop()


def _client(aws: LocalAws, service: str) -> Any:
    env = client_env(aws.url, REGION)
    return boto3.client(service, endpoint_url=aws.url, region_name=REGION,
                        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
                        aws_session_token=env["AWS_SESSION_TOKEN"],
                        config=Config(retries={"total_max_attempts": 1}))


@pytest.fixture(scope="module")
def ec2(local: tuple[LocalAws, SandboxControl]) -> Any:
    return _client(local[0], "ec2")


def drive(op: Operation, ctl: SandboxControl, only: tuple[str, ...] | None = None) -> None:
    """Run the kind's steps as the engine does; every wait moves the sandbox's clock."""
    for spec in KINDS[op.kind].steps:
        if only is not None and spec.name not in only:
            continue
        for _ in range(8):
            try:
                op.apply(spec.name)
                break
            except StepRetry:
                ctl.advance_clock(15)
        else:
            raise AssertionError(f"step {spec.name} kept asking to retry")
        while (delay := op.wait(spec.name)) is not None:
            ctl.advance_clock(delay)


def make_network(ec2: Any, ctl: SandboxControl, name: str, cidr: str) -> dict[str, Any]:
    drive(Operation(ec2, "network.create", {"name": name, "cidr": cidr}, f"op-{name}"), ctl)
    found = net.get_network(ec2, name)
    assert found is not None and found["state"] == "available"
    return found


def mutations(ctl: SandboxControl, since: int) -> list[str]:
    return [f"{c['service']}:{c['action']}" for c in ctl.calls(since=since)
            if c["status"] < 400 and not c["action"].startswith(("Describe", "List", "Get"))]


def last_seq(ctl: SandboxControl) -> int:
    calls = ctl.calls()
    return calls[-1]["seq"] if calls else 0


def private_subnets(network: dict[str, Any]) -> list[str]:
    return [s["id"] for s in network["subnets"] if s["role"] == "private"]


def test_anyone_elses_interface_stops_the_delete_before_anything_is_deleted(local, ec2):
    _, ctl = local
    network = make_network(ec2, ctl, "busy", "10.41.0.0/16")
    eni = ec2.create_network_interface(SubnetId=private_subnets(network)[0],
                                       Description="a user's instance")["NetworkInterface"]
    since = last_seq(ctl)

    op = Operation(ec2, "network.delete", {"name": "busy"}, "op-del-busy",
                   lambda service: _client(local[0], service))
    with pytest.raises(StepFailed) as refused:
        op.apply("in_use")
    assert refused.value.code == "in_use"
    assert eni["NetworkInterfaceId"] in refused.value.message
    assert "a user's instance" in refused.value.message
    assert mutations(ctl, since) == []
    assert net.get_network(ec2, "busy")["state"] == "available"

    # what the refusal spares it: AWS would have let the NAT gateway go, then refused the
    # subnet, leaving the network half deleted
    with pytest.raises(Exception, match="DependencyViolation"):
        ec2.delete_subnet(SubnetId=eni["SubnetId"])

    ec2.delete_network_interface(NetworkInterfaceId=eni["NetworkInterfaceId"])
    drive(op, ctl)
    assert net.get_network(ec2, "busy") is None


def _eks_cluster(local: tuple[LocalAws, SandboxControl], name: str,
                 network: dict[str, Any]) -> Any:
    iam, eks = _client(local[0], "iam"), _client(local[0], "eks")
    trust = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"},
        "Action": "sts:AssumeRole"}]}
    role = iam.create_role(RoleName=f"{name}-eks", AssumeRolePolicyDocument=json.dumps(trust))
    eks.create_cluster(name=name, roleArn=role["Role"]["Arn"],
                       resourcesVpcConfig={"subnetIds": private_subnets(network),
                                           "securityGroupIds": [network["security_group_id"]]})
    return eks


def test_an_aws_services_interfaces_are_waited_for_then_the_network_goes(
        local, ec2, monkeypatch):
    _, ctl = local
    network = make_network(ec2, ctl, "with-eks", "10.42.0.0/16")
    eks = _eks_cluster(local, "with-eks", network)
    since = last_seq(ctl)

    # while the EKS cluster lives, the delete is refused at once, naming it; nothing deleted
    monkeypatch.setattr(steps, "INTERFACE_LOOKS", 2)
    op = Operation(ec2, "network.delete", {"name": "with-eks"}, "op-del-with-eks",
                   lambda service: _client(local[0], service))
    with pytest.raises(StepFailed) as refused:
        op.apply("in_use")
    assert refused.value.code == "in_use"
    assert "cluster with-eks" in refused.value.message
    assert mutations(ctl, since) == []

    # the cluster is deleted: once it is gone its interfaces linger a while (AWS's, let go
    # of): the delete (retried) waits for them, then takes the network apart
    eks.delete_cluster(name="with-eks")
    ctl.advance_clock(EKS_DELETING_S)
    assert op.apply("in_use") == {"dependents": 0}
    assert op.wait("in_use") == op.wait("in_use") == steps.INTERFACE_POLL_S
    assert "Amazon EKS with-eks" in op.contexts["in_use"].details[-1]
    assert "available" in op.contexts["in_use"].details[-1]
    # lingering past the bound is refused (on AWS: 30 looks 30 s apart); a retry waits afresh
    with pytest.raises(StepFailed) as lingering:
        op.wait("in_use")
    assert lingering.value.code == "in_use"
    assert "Amazon EKS with-eks" in lingering.value.message
    assert op.outputs["in_use"]["looks"] == 0
    assert mutations(ctl, since) == ["eks:DeleteCluster"]
    ctl.advance_clock(ENI_RELEASE_S)
    assert op.wait("in_use") is None
    drive(op, ctl, only=tuple(s.name for s in KINDS["network.delete"].steps[1:]))
    assert net.get_network(ec2, "with-eks") is None
    assert ec2.describe_vpcs(Filters=[{"Name": "vpc-id", "Values": [network["vpc_id"]]}])[
        "Vpcs"] == []


def test_a_deleted_groups_subnet_goes_once_its_instances_interfaces_are_gone(local, ec2):
    aws, ctl = local
    lab = make_lab(lambda service: _client(aws, service), ctl, "groups")
    sm = _client(aws, "sagemaker")
    name = unique("hp")
    zone = f"{REGION}b"
    vpc = ec2.describe_vpcs(VpcIds=[lab.vpc_id])["Vpcs"][0]["CidrBlock"]
    subnet = ec2.create_subnet(
        VpcId=lab.vpc_id, CidrBlock=vpc.replace(".0.0/16", ".64.0/20"), AvailabilityZone=zone,
        TagSpecifications=[{"ResourceType": "subnet", "Tags": capacity.compute_subnet_tags(
            name, "workers", zone)}])["Subnet"]["SubnetId"]
    plain = {"OnStartDeepHealthChecks": None, "NetworkInterface": None}
    groups = [gpu_group(lab, InstanceGroupName=group, InstanceType="ml.m5.xlarge",
                        InstanceCount=1, OverrideVpcConfig={
                            "SecurityGroupIds": [lab.security_group], "Subnets": [where]})
              for group, where in (("main", lab.subnet_a), ("workers", subnet))]
    for group in groups:
        for key in plain:
            group.pop(key)
    sm.create_cluster(**cluster_request(lab, name, groups, AutoScaling={"Mode": "Disable"}))
    ctl.advance_clock(600)
    sm.update_cluster(ClusterName=name, InstanceGroups=[groups[0]],
                      InstanceGroupsToDelete=["workers"])
    ctl.advance_clock(120)  # the group's instance terminates: the group is gone ...
    assert [g["InstanceGroupName"] for g in sm.describe_cluster(ClusterName=name)[
        "InstanceGroups"]] == ["main"]

    step = FakeContext(ec2, "op-del-group", "instance_group.delete",
                       {"cluster": name, "name": "workers"}, "subnet", {})
    with pytest.raises(StepRetry, match="DependencyViolation"):
        delete_subnet(step)  # ... its interface is not yet
    assert ec2.describe_subnets(SubnetIds=[subnet])["Subnets"]
    ctl.advance_clock(ENI_RELEASE_S)
    assert delete_subnet(step) == {"deleted": [subnet]}
