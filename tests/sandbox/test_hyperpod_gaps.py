"""The SageMaker HyperPod cluster API as the sandbox answers it, through boto3 over HTTP."""

from __future__ import annotations

import copy
import ipaddress
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from sandbox.control import SandboxControl
from sandbox.local_aws import LocalAws
from tests.sandbox.hyperpodkit import (
    REGION,
    Lab,
    cluster_request,
    gpu_group,
    make_lab,
    nodes,
    statuses,
    unique,
    wait_for,
)

INSTANCE_ID = re.compile(r"^i-[0-9a-f]{17}$")
CLUSTER_ARN = re.compile(r"^arn:aws:sagemaker:us-west-2:\d{12}:cluster/[a-z0-9]{12}$")


@pytest.fixture(scope="module")
def lab(local_aws: LocalAws, client_factory: Any) -> Lab:
    return make_lab(client_factory, SandboxControl(local_aws.url))


@pytest.fixture(scope="module")
def sm(client_factory: Any) -> Any:
    return client_factory("sagemaker")


@pytest.fixture(scope="module")
def raw_sm(client_factory: Any) -> Any:
    """A client that sends what botocore would refuse, so the server's checks show."""
    return client_factory("sagemaker", parameter_validation=False)


@pytest.fixture
def ctl(control: SandboxControl) -> Iterator[SandboxControl]:
    yield control
    control.reset_quotas()
    control.clear_training_plans()


@dataclass
class Slow:
    """A local AWS whose clock moves only when a test jumps it (speed 1: a second is a
    second), so every in-between state can be asserted without racing the clock."""

    aws: LocalAws
    ctl: SandboxControl
    client: Any
    sm: Any
    lab: Lab


@pytest.fixture(scope="module")
def slow() -> Iterator[Slow]:
    aws = LocalAws(speed=1.0)
    aws.start()

    def client(service: str, **config: Any) -> Any:
        return boto3.client(
            service,
            endpoint_url=aws.url,
            region_name=REGION,
            aws_access_key_id="AKIATESTSANDBOX00000",
            aws_secret_access_key="test-secret",
            aws_session_token="test-session-token",
            config=Config(retries={"total_max_attempts": 1}, **config),
        )

    ctl = SandboxControl(aws.url)
    try:
        yield Slow(aws, ctl, client, client("sagemaker"), make_lab(client, ctl))
    finally:
        aws.stop()


def _error(exc: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    return exc.value.response["Error"]["Code"], exc.value.response["Error"]["Message"]


def _wait_in_service(sm: Any, name: str) -> dict[str, Any]:
    return wait_for(
        lambda: (d := sm.describe_cluster(ClusterName=name))["ClusterStatus"] == "InService" and d
    )


def _wait_running(sm: Any, name: str, count: int) -> list[dict[str, Any]]:
    return wait_for(
        lambda: (n := nodes(sm, name))
        and len(n) == count
        and all(x["InstanceStatus"]["Status"] == "Running" for x in n)
        and n
    )


# --- what is stored and returned ------------------------------------------------------------


def test_describe_returns_every_field_as_sent(slow: Slow) -> None:
    sm, lab = slow.sm, slow.lab
    request = cluster_request(lab)
    arn = sm.create_cluster(**request)["ClusterArn"]
    assert CLUSTER_ARN.match(arn)

    described = sm.describe_cluster(ClusterName=request["ClusterName"])
    assert described["ClusterArn"] == arn
    assert described["ClusterName"] == request["ClusterName"]
    assert described["ClusterStatus"] == "Creating"
    for key in ("VpcConfig", "Orchestrator", "NodeRecovery", "NodeProvisioningMode",
                "ClusterRole", "TieredStorageConfig"):
        assert described[key] == request[key], key
    assert described["AutoScaling"] == {**request["AutoScaling"], "Status": "Creating"}
    (group,) = described["InstanceGroups"]
    sent = request["InstanceGroups"][0]
    for key in ("InstanceGroupName", "InstanceType", "ExecutionRole", "LifeCycleConfig",
                "ThreadsPerCore", "InstanceStorageConfigs", "OnStartDeepHealthChecks",
                "OverrideVpcConfig", "CapacityRequirements", "NetworkInterface"):
        assert group[key] == sent[key], key
    assert group["TargetCount"] == 2
    assert group["CurrentCount"] == 0
    assert group["Status"] == "Creating"
    labels = sent["KubernetesConfig"]["Labels"]
    assert group["KubernetesConfig"] == {"CurrentLabels": labels, "DesiredLabels": labels}
    # Describing by ARN is the same cluster.
    assert sm.describe_cluster(ClusterName=arn)["ClusterName"] == request["ClusterName"]
    assert sm.list_tags(ResourceArn=arn)["Tags"] == request["Tags"]


def test_nodes_are_real_looking_instances_in_the_groups_subnet(slow: Slow) -> None:
    sm, lab, client_factory = slow.sm, slow.lab, slow.client
    request = cluster_request(lab)
    name = request["ClusterName"]
    sm.create_cluster(**request)
    listed = nodes(sm, name)
    assert len(listed) == 2
    subnet = client_factory("ec2").describe_subnets(SubnetIds=[lab.subnet_b])["Subnets"][0]
    network = ipaddress.ip_network(subnet["CidrBlock"])
    for summary in listed:
        assert INSTANCE_ID.match(summary["InstanceId"])
        assert summary["InstanceType"] == "ml.p5.48xlarge"
        assert summary["LaunchTime"]
        assert summary["InstanceStatus"]["Status"] == "Pending"
        details = sm.describe_cluster_node(ClusterName=name, NodeId=summary["InstanceId"])[
            "NodeDetails"
        ]
        assert ipaddress.ip_address(details["PrivatePrimaryIp"]) in network
        assert details["Placement"]["AvailabilityZone"] == subnet["AvailabilityZone"]
        assert details["Placement"]["AvailabilityZoneId"] == subnet["AvailabilityZoneId"]
        assert details["PrivateDnsHostname"].startswith(
            "ip-" + details["PrivatePrimaryIp"].replace(".", "-")
        )
        assert details["CapacityType"] == "OnDemand"
        assert details["NetworkInterface"] == {"InterfaceType": "efa"}
        # Continuous provisioning names each node logically as well.
        assert details["NodeLogicalId"].startswith("gpu-")
    assert len({n["InstanceId"] for n in listed}) == 2


def test_cluster_names_are_unique_and_unknown_names_are_not_found(sm: Any, lab: Lab) -> None:
    request = cluster_request(lab)
    sm.create_cluster(**request)
    with pytest.raises(ClientError) as exc:
        sm.create_cluster(**request)
    assert _error(exc)[0] == "ResourceInUse"
    for call in (
        lambda: sm.describe_cluster(ClusterName="no-such-cluster"),
        lambda: sm.delete_cluster(ClusterName="no-such-cluster"),
        lambda: sm.list_cluster_nodes(ClusterName="no-such-cluster"),
        lambda: sm.update_cluster(ClusterName="no-such-cluster",
                                  InstanceGroups=[gpu_group(lab)]),
    ):
        with pytest.raises(ClientError) as exc:
            call()
        assert _error(exc)[0] == "ResourceNotFound"


# --- time ------------------------------------------------------------------------------------


def test_creating_deep_health_checks_and_in_service_follow_the_clock(slow: Slow) -> None:
    ctl, sm, lab = slow.ctl, slow.sm, slow.lab
    request = cluster_request(lab)
    name = request["ClusterName"]
    sm.create_cluster(**request)
    assert statuses(sm, name) == ["Pending", "Pending"]

    ctl.advance_clock(470)
    assert statuses(sm, name) == ["Pending", "Pending"]
    assert sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "Creating"

    ctl.advance_clock(20)  # instances booted: deep health checks first
    assert statuses(sm, name) == ["DeepHealthCheckInProgress"] * 2
    assert sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "Creating"

    ctl.advance_clock(120)  # 10 minutes: continuous provisioning makes the cluster usable
    described = sm.describe_cluster(ClusterName=name)
    assert described["ClusterStatus"] == "InService"
    assert described["AutoScaling"]["Status"] == "InService"
    assert described["InstanceGroups"][0]["Status"] == "InService"

    # AWS refuses UpdateCluster while deep health checks run.
    bigger = [gpu_group(lab, InstanceCount=3)]
    with pytest.raises(ClientError) as exc:
        sm.update_cluster(ClusterName=name, InstanceGroups=bigger)
    code, message = _error(exc)
    assert code == "ValidationException"
    assert "deep health checks are in progress" in message.lower()

    ctl.advance_clock(900)
    assert statuses(sm, name) == ["Running", "Running"]
    sm.update_cluster(ClusterName=name, InstanceGroups=bigger)
    described = sm.describe_cluster(ClusterName=name)
    # Continuous provisioning: the cluster stays InService while the group scales.
    assert described["ClusterStatus"] == "InService"
    group = described["InstanceGroups"][0]
    assert (group["TargetCount"], group["CurrentCount"]) == (3, 2)
    assert group["ActiveOperations"] == {"Scaling": 1}
    assert statuses(sm, name) == ["Pending", "Running", "Running"]

    ctl.advance_clock(480 + 900 + 1)
    group = sm.describe_cluster(ClusterName=name)["InstanceGroups"][0]
    assert (group["TargetCount"], group["CurrentCount"]) == (3, 3)
    assert "ActiveOperations" not in group

    sm.delete_cluster(ClusterName=name)
    assert sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "Deleting"
    assert statuses(sm, name) == ["ShuttingDown"] * 3
    ctl.advance_clock(301)
    with pytest.raises(ClientError) as exc:
        sm.describe_cluster(ClusterName=name)
    assert _error(exc)[0] == "ResourceNotFound"
    sm.create_cluster(**request)  # the name is free again


def test_without_continuous_provisioning_the_cluster_waits_for_its_instances(slow: Slow) -> None:
    ctl, sm, lab = slow.ctl, slow.sm, slow.lab
    request = cluster_request(lab)
    for key in ("NodeProvisioningMode", "AutoScaling", "ClusterRole"):
        del request[key]
    name = request["ClusterName"]
    sm.create_cluster(**request)
    ctl.advance_clock(700)
    assert sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "Creating"
    ctl.advance_clock(700)
    assert sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService"
    sm.update_cluster(ClusterName=name, InstanceGroups=[gpu_group(lab, InstanceCount=1)])
    described = sm.describe_cluster(ClusterName=name)
    assert described["ClusterStatus"] == "Updating"
    assert described["InstanceGroups"][0]["Status"] == "Updating"
    assert statuses(sm, name) == ["Running", "ShuttingDown"]
    with pytest.raises(ClientError) as exc:
        sm.update_cluster(ClusterName=name, InstanceGroups=[gpu_group(lab, InstanceCount=2)])
    assert _error(exc)[0] == "ConflictException"
    ctl.advance_clock(121)
    assert sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService"
    assert statuses(sm, name) == ["Running"]


def test_a_missing_lifecycle_script_fails_the_instance_when_it_boots(
    sm: Any, lab: Lab, client_factory: Any, ctl: SandboxControl
) -> None:
    group = gpu_group(lab, LifeCycleConfig={"SourceS3Uri": f"s3://{lab.bucket}/nowhere",
                                            "OnCreate": "on_create.sh"},
                      OnStartDeepHealthChecks=None)
    del group["OnStartDeepHealthChecks"]
    request = cluster_request(lab, groups=[group])
    name = request["ClusterName"]
    sm.create_cluster(**request)
    ctl.advance_clock(500)
    failed = wait_for(lambda: [n for n in nodes(sm, name)
                               if n["InstanceStatus"]["Status"] == "Failure"])
    assert "on_create.sh" in failed[0]["InstanceStatus"]["Message"]
    events = sm.list_cluster_events(ClusterName=name, ResourceType="Instance")["Events"]
    error = next(e for e in events if e["EventLevel"] == "Error")
    assert "on_create.sh" in error["Description"] and "not found" in error["Description"]


def test_a_small_subnet_runs_out_of_addresses(
    sm: Any, lab: Lab, client_factory: Any, ctl: SandboxControl
) -> None:
    ec2 = client_factory("ec2")
    small = ec2.create_subnet(VpcId=lab.vpc_id, CidrBlock=_free_24(ec2, lab.vpc_id),
                              AvailabilityZone=f"{REGION}a")["Subnet"]["SubnetId"]
    group = gpu_group(lab, InstanceCount=4,
                      OverrideVpcConfig={"SecurityGroupIds": [lab.security_group],
                                         "Subnets": [small]})
    request = cluster_request(lab, groups=[group])
    sm.create_cluster(**request)
    ctl.advance_clock(500)
    # A p5.48xlarge takes 81 addresses on EKS: a /24 (251 usable) holds three.
    failures = wait_for(lambda: [n for n in nodes(sm, request["ClusterName"])
                                 if n["InstanceStatus"]["Status"] == "Failure"])
    assert len(failures) == 1
    assert "InsufficientFreeAddressesInSubnet" in failures[0]["InstanceStatus"]["Message"]


def _free_24(ec2: Any, vpc_id: str) -> str:
    vpc = ec2.describe_vpcs(VpcIds=[vpc_id])["Vpcs"][0]
    network = ipaddress.ip_network(vpc["CidrBlock"])
    return str(list(network.subnets(new_prefix=24))[200])


# --- refusals ------------------------------------------------------------------------------


def _bad(lab: Lab, change: Any) -> dict[str, Any]:
    request = cluster_request(lab)
    change(request)
    return request


def _drop(mapping: dict[str, Any], key: str) -> None:
    del mapping[key]


REFUSALS = [
    # (why, change to a good request, words the message must contain)
    ("missing required member",
     lambda r: _drop(r["InstanceGroups"][0], "ExecutionRole"),
     ["instanceGroups.1.member.executionRole", "must not be null"]),
    ("instance type outside the enum",
     lambda r: r["InstanceGroups"][0].update(InstanceType="ml.p9.mega"),
     ["instanceGroups.1.member.instanceType", "enum value set"]),
    ("count above the model's maximum",
     lambda r: r["InstanceGroups"][0].update(InstanceCount=7000),
     ["instanceGroups.1.member.instanceCount", "less than or equal to 6758"]),
    ("cluster name breaks its pattern",
     lambda r: r.update(ClusterName="bad_name!"),
     ["clusterName", "regular expression pattern"]),
    ("bad NodeRecovery enum",
     lambda r: r.update(NodeRecovery="Sometimes"),
     ["nodeRecovery", "enum value set"]),
    ("too many deep health checks",
     lambda r: r["InstanceGroups"][0].update(OnStartDeepHealthChecks=["InstanceStress"] * 4),
     ["onStartDeepHealthChecks", "length less than or equal to 3"]),
    ("execution role that does not exist",
     lambda r: r["InstanceGroups"][0].update(
         ExecutionRole="arn:aws:iam::123456789012:role/nobody"),
     ["ExecutionRole", "does not exist"]),
    ("cluster role that does not exist",
     lambda r: r.update(ClusterRole="arn:aws:iam::123456789012:role/nobody"),
     ["ClusterRole", "does not exist"]),
    ("lifecycle bucket that does not exist",
     lambda r: r["InstanceGroups"][0].update(
         LifeCycleConfig={"SourceS3Uri": "s3://sagemaker-no-such-bucket/x",
                          "OnCreate": "on_create.sh"}),
     ["LifeCycleConfig.SourceS3Uri", "sagemaker-no-such-bucket", "does not exist"]),
    ("subnet that does not exist",
     lambda r: r["VpcConfig"].update(Subnets=["subnet-0123456789abcdef0"]),
     ["VpcConfig.Subnets", "subnet-0123456789abcdef0"]),
    ("EKS cluster that does not exist",
     lambda r: r["Orchestrator"]["Eks"].update(
         ClusterArn="arn:aws:eks:us-west-2:123456789012:cluster/ghost"),
     ["Orchestrator.Eks.ClusterArn", "ghost"]),
    ("EKS orchestration without a VpcConfig",
     lambda r: _drop(r, "VpcConfig"),
     ["VpcConfig"]),
    ("autoscaling without continuous provisioning",
     lambda r: _drop(r, "NodeProvisioningMode"),
     ["AutoScaling", "NodeProvisioningMode Continuous"]),
    ("autoscaling without node recovery",
     lambda r: r.update(NodeRecovery="None"),
     ["AutoScaling", "NodeRecovery Automatic"]),
    ("efa-only on a type with one EFA interface",
     lambda r: r["InstanceGroups"][0].update(InstanceType="ml.g5.8xlarge",
                                             NetworkInterface={"InterfaceType": "efa-only"}),
     ["NetworkInterface.InterfaceType", "efa-only"]),
    ("both spot and on-demand",
     lambda r: r["InstanceGroups"][0].update(CapacityRequirements={"Spot": {}, "OnDemand": {}}),
     ["CapacityRequirements"]),
    ("deep health checks on a CPU type",
     lambda r: r["InstanceGroups"][0].update(InstanceType="ml.m5.2xlarge",
                                             NetworkInterface=None),
     ["OnStartDeepHealthChecks"]),
    ("instance type and instance requirements",
     lambda r: r["InstanceGroups"][0].update(
         InstanceRequirements={"InstanceTypes": ["ml.p5.48xlarge"]}),
     ["InstanceRequirements"]),
    ("min count above count",
     lambda r: r["InstanceGroups"][0].update(MinInstanceCount=5),
     ["MinInstanceCount"]),
    ("duplicate group names",
     lambda r: r["InstanceGroups"].append(copy.deepcopy(r["InstanceGroups"][0])),
     ["unique"]),
]


@pytest.mark.parametrize(("why", "change", "words"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_bad_requests_are_refused_naming_the_field(
    raw_sm: Any, lab: Lab, why: str, change: Any, words: list[str]
) -> None:
    request = _bad(lab, change)
    for group in request["InstanceGroups"]:
        for key in [k for k, v in group.items() if v is None]:
            del group[key]
    with pytest.raises(ClientError) as exc:
        raw_sm.create_cluster(**request)
    code, message = _error(exc)
    assert code == "ValidationException", message
    for word in words:
        assert word in message, (why, message)
    with pytest.raises(ClientError):
        raw_sm.describe_cluster(ClusterName=request["ClusterName"])


def test_an_eks_cluster_not_yet_active_is_refused(
    sm: Any, lab: Lab, client_factory: Any
) -> None:
    eks = client_factory("eks")
    name = unique("young")
    arn = eks.create_cluster(name=name, roleArn=lab.cluster_role,
                             resourcesVpcConfig={"subnetIds": [lab.subnet_a, lab.subnet_b]}
                             )["cluster"]["arn"]
    request = cluster_request(lab, Orchestrator={"Eks": {"ClusterArn": arn}})
    with pytest.raises(ClientError) as exc:
        sm.create_cluster(**request)
    code, message = _error(exc)
    assert code == "ValidationException"
    assert "ACTIVE" in message


def test_capacity_type_network_interface_and_subnets_are_fixed_for_the_groups_life(
    sm: Any, lab: Lab, ctl: SandboxControl
) -> None:
    group = gpu_group(lab)
    del group["OnStartDeepHealthChecks"]
    request = cluster_request(lab, groups=[group])
    name = request["ClusterName"]
    sm.create_cluster(**request)
    ctl.advance_clock(700)
    _wait_in_service(sm, name)
    for change, field in (
        ({"CapacityRequirements": {"Spot": {}}}, "CapacityRequirements"),
        ({"NetworkInterface": {"InterfaceType": "efa-only"}}, "NetworkInterface"),
        ({"OverrideVpcConfig": {"SecurityGroupIds": [lab.security_group],
                                "Subnets": [lab.subnet_a]}}, "OverrideVpcConfig"),
    ):
        with pytest.raises(ClientError) as exc:
            sm.update_cluster(ClusterName=name, InstanceGroups=[{**group, **change}])
        code, message = _error(exc)
        assert code == "ValidationException"
        assert field in message and "cannot be changed" in message
    with pytest.raises(ClientError) as exc:
        sm.update_cluster(ClusterName=name, Orchestrator={
            "Eks": {"ClusterArn": lab.eks_arn.replace(lab.eks_name, "other")}})
    assert "Orchestrator" in _error(exc)[1]


def test_quotas_refuse_instances_beyond_them(sm: Any, lab: Lab, ctl: SandboxControl) -> None:
    # p4d: a type no other test of this module uses, so the utilization is this test's own.
    ctl.set_quota(3, "ml.p4d.24xlarge for cluster usage")
    first = cluster_request(lab, groups=[gpu_group(lab, InstanceCount=2,
                                                   InstanceType="ml.p4d.24xlarge")])
    sm.create_cluster(**first)
    second = cluster_request(lab, groups=[gpu_group(lab, InstanceCount=2,
                                                    InstanceType="ml.p4d.24xlarge")])
    with pytest.raises(ClientError) as exc:
        sm.create_cluster(**second)
    code, message = _error(exc)
    assert code == "ResourceLimitExceeded"
    assert "'ml.p4d.24xlarge for cluster usage' is 3 Instances" in message
    assert "current utilization of 2 Instances and a request delta of 2" in message
    # Spot capacity counts against its own quota.
    spot = cluster_request(lab, groups=[gpu_group(lab, CapacityRequirements={"Spot": {}})])
    sm.create_cluster(**spot)
    ctl.set_quota(1, "Maximum number instances allowed per SageMaker HyperPod cluster")
    with pytest.raises(ClientError) as exc:
        sm.create_cluster(**cluster_request(lab, groups=[gpu_group(lab, InstanceCount=2)]))
    assert "Maximum number instances allowed per SageMaker HyperPod cluster" in _error(exc)[1]


def test_training_plan_groups_must_fit_the_plan(
    sm: Any, lab: Lab, ctl: SandboxControl
) -> None:
    plan = ctl.add_training_plan(unique("plan"), "ml.p5.48xlarge", 2, f"{REGION}a")
    on_plan = {"TrainingPlanArn": plan["TrainingPlanArn"],
               "OverrideVpcConfig": {"SecurityGroupIds": [lab.security_group],
                                     "Subnets": [lab.subnet_b, lab.subnet_a]}}
    # More instances than the plan reserves.
    with pytest.raises(ClientError) as exc:
        sm.create_cluster(**cluster_request(lab, groups=[gpu_group(lab, InstanceCount=3,
                                                                   **on_plan)]))
    assert _error(exc)[0] == "ResourceLimitExceeded"
    # No subnet in the plan's zone.
    with pytest.raises(ClientError) as exc:
        sm.create_cluster(**cluster_request(lab, groups=[gpu_group(
            lab, TrainingPlanArn=plan["TrainingPlanArn"])]))
    assert "us-west-2a" in _error(exc)[1]
    # The quota for on-demand use does not apply to reserved capacity.
    ctl.set_quota(0, "ml.p5.48xlarge for cluster usage")
    request = cluster_request(lab, groups=[gpu_group(lab, **on_plan)])
    sm.create_cluster(**request)
    node = nodes(sm, request["ClusterName"])[0]
    details = sm.describe_cluster_node(ClusterName=request["ClusterName"],
                                       NodeId=node["InstanceId"])["NodeDetails"]
    assert details["Placement"]["AvailabilityZone"] == f"{REGION}a"
    group = sm.describe_cluster(ClusterName=request["ClusterName"])["InstanceGroups"][0]
    assert group["TrainingPlanArn"] == plan["TrainingPlanArn"]
    assert group["TrainingPlanStatus"] == "Active"
    summary = sm.list_clusters(TrainingPlanArn=plan["TrainingPlanArn"])["ClusterSummaries"]
    assert [s["ClusterName"] for s in summary] == [request["ClusterName"]]
    expired = ctl.add_training_plan(unique("old"), "ml.p5.48xlarge", 8, f"{REGION}a",
                                    status="Expired")
    with pytest.raises(ClientError) as exc:
        sm.create_cluster(**cluster_request(lab, groups=[gpu_group(
            lab, TrainingPlanArn=expired["TrainingPlanArn"],
            OverrideVpcConfig=on_plan["OverrideVpcConfig"])]))
    assert "Expired" in _error(exc)[1]


# --- node operations -----------------------------------------------------------------------


def _running_cluster(sm: Any, lab: Lab, ctl: SandboxControl, count: int = 3) -> str:
    group = gpu_group(lab, InstanceCount=count)
    del group["OnStartDeepHealthChecks"]
    request = cluster_request(lab, groups=[group])
    sm.create_cluster(**request)
    ctl.advance_clock(700)
    _wait_running(sm, request["ClusterName"], count)
    return request["ClusterName"]


def test_node_batch_calls_are_capped_at_awss_limits(raw_sm: Any, sm: Any, lab: Lab,
                                                     ctl: SandboxControl) -> None:
    name = _running_cluster(sm, lab, ctl, count=1)
    many = [f"i-0{n:016x}" for n in range(26)]
    for call in (raw_sm.batch_reboot_cluster_nodes, raw_sm.batch_replace_cluster_nodes):
        with pytest.raises(ClientError) as exc:
            call(ClusterName=name, NodeIds=many)
        code, message = _error(exc)
        assert code == "ValidationException"
        assert "nodeIds" in message and "less than or equal to 25" in message
    with pytest.raises(ClientError) as exc:
        raw_sm.batch_delete_cluster_nodes(ClusterName=name,
                                          NodeIds=[f"i-0{n:016x}" for n in range(100)])
    code, message = _error(exc)
    assert code == "ValidationException" and "99" in message
    with pytest.raises(ClientError) as exc:
        raw_sm.batch_delete_cluster_nodes(ClusterName=name)
    assert "NodeIds" in _error(exc)[1]
    answer = sm.batch_delete_cluster_nodes(ClusterName=name, NodeIds=["i-0123456789abcdef0"])
    assert answer["Failed"][0]["Code"] == "NodeIdNotFound"


def test_reboot_replace_and_delete_move_nodes_over_time(slow: Slow) -> None:
    sm, lab, ctl = slow.sm, slow.lab, slow.ctl
    name = _running_cluster(sm, lab, ctl)
    first, second, third = sorted(n["InstanceId"] for n in nodes(sm, name))

    answer = sm.batch_reboot_cluster_nodes(ClusterName=name, NodeIds=[first])
    assert answer["Successful"] == [first]
    status = sm.describe_cluster_node(ClusterName=name, NodeId=first)["NodeDetails"][
        "InstanceStatus"]
    assert status["Status"] == "Pending"
    again = sm.batch_reboot_cluster_nodes(ClusterName=name, NodeIds=[first])
    assert again["Failed"][0]["ErrorCode"] == "InvalidInstanceStatus"

    answer = sm.batch_replace_cluster_nodes(ClusterName=name, NodeIds=[second])
    assert answer["Successful"] == [second]
    assert sm.describe_cluster_node(ClusterName=name, NodeId=second)["NodeDetails"][
        "InstanceStatus"]["Status"] == "ShuttingDown"

    answer = sm.batch_delete_cluster_nodes(ClusterName=name, NodeIds=[third])
    assert answer["Successful"] == [third]
    group = sm.describe_cluster(ClusterName=name)["InstanceGroups"][0]
    assert group["TargetCount"] == 2

    ctl.advance_clock(400)
    ids = {n["InstanceId"]: n["InstanceStatus"]["Status"] for n in nodes(sm, name)}
    assert ids[first] == "Running"
    assert second not in ids and third not in ids
    (replacement,) = set(ids) - {first}
    assert INSTANCE_ID.match(replacement) and ids[replacement] == "Pending"
    ctl.advance_clock(500)
    _wait_running(sm, name, 2)


def test_batch_add_nodes_needs_continuous_provisioning_and_honours_client_tokens(
    sm: Any, lab: Lab, ctl: SandboxControl
) -> None:
    name = _running_cluster(sm, lab, ctl, count=1)
    add = {"ClusterName": name, "ClientToken": unique("tok"),
           "NodesToAdd": [{"InstanceGroupName": "gpu", "IncrementTargetCountBy": 2},
                          {"InstanceGroupName": "nope", "IncrementTargetCountBy": 1}]}
    answer = sm.batch_add_cluster_nodes(**add)
    assert [s["Status"] for s in answer["Successful"]] == ["Pending", "Pending"]
    assert answer["Failed"][0]["ErrorCode"] == "InstanceGroupNotFound"
    assert sm.batch_add_cluster_nodes(**add)["Successful"] == answer["Successful"]
    assert sm.describe_cluster(ClusterName=name)["InstanceGroups"][0]["TargetCount"] == 3
    assert len(nodes(sm, name)) == 3


def test_update_adds_and_deletes_groups(slow: Slow) -> None:
    sm, lab, ctl = slow.sm, slow.lab, slow.ctl
    name = _running_cluster(sm, lab, ctl, count=1)
    cpu = {"InstanceGroupName": "system", "InstanceType": "ml.m5.2xlarge", "InstanceCount": 1,
           "ExecutionRole": lab.execution_role, "LifeCycleConfig": lab.lifecycle}
    sm.update_cluster(ClusterName=name, InstanceGroups=[cpu])
    groups = {g["InstanceGroupName"]: g for g in
              sm.describe_cluster(ClusterName=name)["InstanceGroups"]}
    assert groups["system"]["Status"] == "Creating"
    assert groups["gpu"]["Status"] == "InService"
    ctl.advance_clock(500)
    wait_for(lambda: {g["InstanceGroupName"]: g["Status"] for g in
                      sm.describe_cluster(ClusterName=name)["InstanceGroups"]}["system"]
             == "InService")
    sm.update_cluster(ClusterName=name, InstanceGroupsToDelete=["gpu"])
    statuses_by_group = {g["InstanceGroupName"]: g["Status"] for g in
                         sm.describe_cluster(ClusterName=name)["InstanceGroups"]}
    assert statuses_by_group["gpu"] == "Deleting"
    ctl.advance_clock(121)
    wait_for(lambda: [g["InstanceGroupName"] for g in
                      sm.describe_cluster(ClusterName=name)["InstanceGroups"]] == ["system"])


def test_software_update_and_events(slow: Slow) -> None:
    sm, lab, ctl = slow.sm, slow.lab, slow.ctl
    name = _running_cluster(sm, lab, ctl, count=1)
    sm.update_cluster_software(ClusterName=name)
    assert sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "SystemUpdating"
    assert statuses(sm, name) == ["SystemUpdating"]
    with pytest.raises(ClientError) as exc:
        sm.update_cluster_software(ClusterName=name)
    assert _error(exc)[0] == "ConflictException"
    ctl.advance_clock(601)
    wait_for(lambda: sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService")
    group = sm.describe_cluster(ClusterName=name)["InstanceGroups"][0]
    assert group["SoftwareUpdateStatus"] == "Succeeded"
    assert nodes(sm, name)[0]["LastSoftwareUpdateTime"]
    events = sm.list_cluster_events(ClusterName=name, MaxResults=100)["Events"]
    assert events[0]["EventTime"] >= events[-1]["EventTime"]  # newest first
    assert {e["ResourceType"] for e in events} >= {"Cluster", "InstanceGroup", "Instance"}


# --- listing and tags ----------------------------------------------------------------------


def test_list_clusters_pages_and_filters(sm: Any, lab: Lab) -> None:
    prefix = unique("page")
    names = [f"{prefix}-{i}" for i in range(3)]
    for name in names:
        sm.create_cluster(**cluster_request(lab, name=name,
                                            groups=[gpu_group(lab, InstanceCount=0)]))
    first = sm.list_clusters(NameContains=prefix, MaxResults=2)
    assert [s["ClusterName"] for s in first["ClusterSummaries"]] == names[:2]
    rest = sm.list_clusters(NameContains=prefix, MaxResults=2, NextToken=first["NextToken"])
    assert [s["ClusterName"] for s in rest["ClusterSummaries"]] == names[2:]
    assert "NextToken" not in rest
    newest = sm.list_clusters(NameContains=prefix, SortOrder="Descending")["ClusterSummaries"]
    assert [s["ClusterName"] for s in newest] == names[::-1]


def test_tags_on_clusters_are_the_sandboxs_and_on_other_resources_motos(
    sm: Any, lab: Lab
) -> None:
    request = cluster_request(lab)
    arn = sm.create_cluster(**request)["ClusterArn"]
    assert sm.list_tags(ResourceArn=arn)["Tags"] == request["Tags"]
    missing = arn[:-12] + "zzzzzzzzzzzz"
    with pytest.raises(ClientError):
        sm.list_tags(ResourceArn=missing)
    model = sm.create_model(
        ModelName=unique("model"),
        ExecutionRoleArn=lab.execution_role,
        PrimaryContainer={"Image": "123456789012.dkr.ecr.us-west-2.amazonaws.com/x:1"},
    )["ModelArn"]
    sm.add_tags(ResourceArn=model, Tags=[{"Key": "a", "Value": "b"}])
    assert {"Key": "a", "Value": "b"} in sm.list_tags(ResourceArn=model)["Tags"]


def test_managed_autoscaling_can_be_enabled_later_on_a_cluster_made_ready_for_it(
    sm: Any, lab: Lab, ctl: SandboxControl
) -> None:
    group = gpu_group(lab, InstanceCount=1)
    del group["OnStartDeepHealthChecks"]
    request = cluster_request(lab, groups=[group])
    del request["AutoScaling"]
    name = request["ClusterName"]
    sm.create_cluster(**request)
    assert "AutoScaling" not in sm.describe_cluster(ClusterName=name)
    ctl.advance_clock(700)
    _wait_in_service(sm, name)
    sm.update_cluster(ClusterName=name, AutoScaling={"Mode": "Enable",
                                                     "AutoScalerType": "Karpenter"})
    described = sm.describe_cluster(ClusterName=name)
    assert described["AutoScaling"] == {"Mode": "Enable", "AutoScalerType": "Karpenter",
                                        "Status": "InService"}
    with pytest.raises(ClientError) as exc:
        sm.update_cluster(ClusterName=name, NodeRecovery="None")
    assert "NodeRecovery Automatic" in _error(exc)[1]
    assert sm.describe_cluster(ClusterName=name)["NodeRecovery"] == "Automatic"
