"""A jump of the sandbox's clock ages the simulated world: the creation and launch times AWS
reports for what exists move back by the jump (a reader on the wall clock sees it that much
older), and what is made after the jump gets the wall time."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from sandbox.control import SandboxControl
from tests.sandbox.hyperpodkit import (
    Lab,
    cluster_request,
    gpu_group,
    make_lab,
    nodes,
    unique,
    wait_for,
)

SANDBOX_SPEED = 1.0  # only the jumps move simulated time
JUMP_S = 3600
# everything HyperPod, EKS and EC2 need to have made the cluster, its nodes and the gateway
SETTLE_S = 2400


def _nat_gateway(ec2: Any, lab: Lab) -> str:
    allocation = ec2.allocate_address(Domain="vpc")["AllocationId"]
    return str(ec2.create_nat_gateway(SubnetId=lab.subnet_a,
                                      AllocationId=allocation)["NatGateway"]["NatGatewayId"])


def _nat_created(ec2: Any, nat_id: str) -> datetime:
    return ec2.describe_nat_gateways(NatGatewayIds=[nat_id])["NatGateways"][0]["CreateTime"]


def _times(client: Any, lab: Lab, hyperpod: str, nat_id: str) -> dict[str, datetime]:
    """Each creation/launch time the product reads, as boto3 gets it from the local AWS."""
    sm = client("sagemaker")
    [node] = nodes(sm, hyperpod)
    return {
        "hyperpod node LaunchTime": node["LaunchTime"],
        "hyperpod cluster CreationTime": sm.describe_cluster(ClusterName=hyperpod)[
            "CreationTime"],
        "eks cluster createdAt": client("eks").describe_cluster(name=lab.eks_name)["cluster"][
            "createdAt"],
        "nat gateway CreateTime": _nat_created(client("ec2"), nat_id),
        "eks access entry createdAt": _access_entry_created(client("eks"), lab.eks_name),
    }


def _access_entry_created(eks: Any, cluster: str) -> datetime:
    """The creator's access entry, which EKS makes with a cluster in `API` mode (the gap's
    own record, not moto's)."""
    [principal] = eks.list_access_entries(clusterName=cluster)["accessEntries"]
    entry = eks.describe_access_entry(clusterName=cluster, principalArn=principal)
    return entry["accessEntry"]["createdAt"]


@pytest.fixture(scope="module")
def world(local_aws: Any, client_factory: Any) -> dict[str, Any]:
    """An EKS cluster, a NAT gateway and a HyperPod cluster with one node, all made."""
    control = SandboxControl(local_aws.url)
    lab = make_lab(client_factory, control, prefix="age")
    nat_id = _nat_gateway(client_factory("ec2"), lab)
    hyperpod = unique("hp")
    client_factory("sagemaker").create_cluster(
        **cluster_request(lab, hyperpod, groups=[gpu_group(lab, InstanceCount=1)]))
    control.advance_clock(SETTLE_S)
    wait_for(lambda: nodes(client_factory("sagemaker"), hyperpod))
    return {"lab": lab, "nat_id": nat_id, "hyperpod": hyperpod}


def test_a_clock_jump_moves_every_reported_creation_time_back_by_the_jump(
        control: SandboxControl, client_factory: Any, world: dict[str, Any]) -> None:
    before = _times(client_factory, world["lab"], world["hyperpod"], world["nat_id"])
    control.advance_clock(JUMP_S)
    after = _times(client_factory, world["lab"], world["hyperpod"], world["nat_id"])
    moved = {what: (before[what] - after[what]).total_seconds() for what in before}
    assert moved == pytest.approx(dict.fromkeys(before, JUMP_S), abs=1)


def test_what_is_made_after_a_jump_has_the_wall_time(
        control: SandboxControl, client_factory: Any, world: dict[str, Any]) -> None:
    lab, ec2, sm = world["lab"], client_factory("ec2"), client_factory("sagemaker")
    control.advance_clock(JUMP_S)
    nat_id = _nat_gateway(ec2, lab)
    sm.batch_add_cluster_nodes(
        ClusterName=world["hyperpod"],
        NodesToAdd=[{"InstanceGroupName": "gpu", "IncrementTargetCountBy": 1}])
    now = datetime.now(UTC)
    assert abs((now - _nat_created(ec2, nat_id)).total_seconds()) < 5
    launched = sorted(n["LaunchTime"] for n in nodes(sm, world["hyperpod"]))
    assert len(launched) == 2
    assert abs((now - launched[-1]).total_seconds()) < 5  # the new node: now
    assert (launched[-1] - launched[0]).total_seconds() >= JUMP_S  # the old one: aged
