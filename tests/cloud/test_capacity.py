"""The one capacity function: every capacity path, checked against botocore's own shape."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cloud import aws, networks
from cloud.capacity import (
    CAPACITY_TYPES,
    DEEP_HEALTH_CHECKS,
    CapacityError,
    allocate_compute_subnet,
    capacity_type_of,
    check_immutable,
    compute_subnet_tags,
    delete_compute_subnets,
    hyperpod_instance_types,
    immutable_changes,
    instance_group_spec,
    route_table_of_subnet,
)
from tests.cloud.botocore_shape import shape, validate, validate_input

ROLE = "arn:aws:iam::123456789012:role/hypd-lab-hp-exec"
URI = "s3://sagemaker-hypd-lab-0123456789/lifecycle/"
PLAN = "arn:aws:sagemaker:us-west-2:123456789012:training-plan/p5-reservation-1"
SUBNET = "subnet-0123456789abcdef0"
SG = "sg-0123456789abcdef0"

INFO = {
    "ml.p5.48xlarge": {"name": "ml.p5.48xlarge", "accelerator": "gpu", "efa_supported": True,
                       "max_efa_interfaces": 32},
    "ml.g5.8xlarge": {"name": "ml.g5.8xlarge", "accelerator": "gpu", "efa_supported": True,
                      "max_efa_interfaces": 1},
    "ml.g5.xlarge": {"name": "ml.g5.xlarge", "accelerator": "gpu", "efa_supported": False,
                     "max_efa_interfaces": 0},
    "ml.trn1.32xlarge": {"name": "ml.trn1.32xlarge", "accelerator": "trainium",
                         "efa_supported": True, "max_efa_interfaces": 8},
    "ml.c5.large": {"name": "ml.c5.large", "accelerator": None, "efa_supported": False,
                    "max_efa_interfaces": 0},
}

GROUP_SHAPE = shape("sagemaker", "ClusterInstanceGroupSpecification")


def spec(**overrides):
    decisions = {
        "name": "workers",
        "instance_type": "ml.p5.48xlarge",
        "count": 2,
        "execution_role_arn": ROLE,
        "lifecycle_s3_uri": URI,
        "subnet_id": SUBNET,
        "security_group_ids": [SG],
    }
    decisions.update(overrides)
    if "instance_info" not in overrides:
        decisions["instance_info"] = INFO.get(decisions["instance_type"])
    return instance_group_spec(**decisions)


def refused(field, **overrides):
    with pytest.raises(CapacityError) as caught:
        spec(**overrides)
    assert caught.value.field == field, caught.value.message
    assert caught.value.code == "validation_failed"
    return caught.value.message


# -- shapes --------------------------------------------------------------------------------


def test_on_demand_group_has_the_models_exact_shape():
    group = spec()
    assert validate(group, GROUP_SHAPE) == []
    assert group["CapacityRequirements"] == {"OnDemand": {}}
    assert group["OverrideVpcConfig"] == {"SecurityGroupIds": [SG], "Subnets": [SUBNET]}
    assert group["LifeCycleConfig"] == {"SourceS3Uri": URI, "OnCreate": "on_create.sh"}
    assert group["ThreadsPerCore"] == 1
    assert "TrainingPlanArn" not in group and "NetworkInterface" not in group


def test_spot_and_training_plan_paths():
    spot = spec(capacity_type="spot")
    assert spot["CapacityRequirements"] == {"Spot": {}}
    plan = spec(capacity_type="training-plan", training_plan_arn=PLAN, region="us-west-2")
    assert plan["TrainingPlanArn"] == PLAN
    assert "CapacityRequirements" not in plan
    for group in (spot, plan):
        assert validate(group, GROUP_SHAPE) == []
    assert [capacity_type_of(g) for g in (spec(), spot, plan)] == list(CAPACITY_TYPES)


def test_every_option_at_once_validates_in_a_create_cluster_request():
    group = spec(interface_mode="efa-only", deep_health_checks=["InstanceConnectivity",
                                                                 "InstanceStress"],
                 volume_size_gb=500, threads_per_core=2, min_count=1)
    assert group["NetworkInterface"] == {"InterfaceType": "efa-only"}
    assert group["OnStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
    assert group["InstanceStorageConfigs"] == [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}]
    assert group["MinInstanceCount"] == 1
    request = {
        "ClusterName": "lab",
        "InstanceGroups": [group],
        "VpcConfig": {"SecurityGroupIds": [SG], "Subnets": [SUBNET]},
        "Orchestrator": {"Eks": {"ClusterArn":
                                 "arn:aws:eks:us-west-2:123456789012:cluster/lab"}},
        "NodeRecovery": "Automatic",
        "NodeProvisioningMode": "Continuous",
    }
    assert validate_input("sagemaker", "CreateCluster", request) == []


# -- the shape validator itself catches what AWS refuses -----------------------------------


def test_shape_validator_finds_misspelt_missing_and_out_of_range_fields():
    group = spec()
    bad = dict(group, Capacity={"Spot": {}}, ThreadsPerCore=3, InstanceType="ml.p9.huge")
    del bad["ExecutionRole"]
    errors = validate(bad, GROUP_SHAPE)
    assert any("unknown member Capacity" in e for e in errors)
    assert any("missing required member ExecutionRole" in e for e in errors)
    assert any("ThreadsPerCore: 3 is above the maximum 2" in e for e in errors)
    assert any("InstanceType: 'ml.p9.huge' is not one of" in e for e in errors)
    assert any("does not match" in e for e in validate(dict(group, InstanceGroupName="-x-"),
                                                       GROUP_SHAPE))
    assert any("fewer than the minimum 1" in e for e in validate(
        dict(group, OnStartDeepHealthChecks=[]), GROUP_SHAPE))


# -- decisions refused with the field at fault ---------------------------------------------


def test_count_rules():
    refused("count", count=0)
    assert spec(count=0, autoscaling=True)["InstanceCount"] == 0
    refused("count", count=-1, autoscaling=True)
    refused("count", count=6759)
    refused("count", count=True)
    refused("count", count=2.0)
    refused("min_count", count=2, min_count=3)


def test_capacity_type_rules():
    refused("capacity_type", capacity_type="reserved")
    assert "needs the training plan" in refused("training_plan_arn", capacity_type="training-plan")
    assert "only with capacity type" in refused("training_plan_arn", capacity_type="spot",
                                                training_plan_arn=PLAN)
    refused("training_plan_arn", capacity_type="training-plan",
            training_plan_arn="arn:aws:sagemaker:us-west-2:123456789012:cluster/abc")
    assert "not in the cluster's region" in refused(
        "training_plan_arn", capacity_type="training-plan", training_plan_arn=PLAN,
        region="us-east-1")


def test_efa_interface_rules():
    assert spec(interface_mode="efa")["NetworkInterface"] == {"InterfaceType": "efa"}
    assert "several EFA interfaces" in refused("interface_mode", instance_type="ml.g5.8xlarge",
                                               interface_mode="efa-only")
    assert spec(instance_type="ml.g5.8xlarge", interface_mode="efa")["NetworkInterface"]
    assert "does not support EFA" in refused("interface_mode", instance_type="ml.g5.xlarge",
                                             interface_mode="efa")
    assert "information" in refused("interface_mode", interface_mode="efa", instance_info=None)
    refused("interface_mode", interface_mode="ena")
    refused("instance_type", instance_info=INFO["ml.g5.xlarge"])  # info of another type


def test_deep_health_checks_only_on_accelerators():
    assert spec(instance_type="ml.trn1.32xlarge",
                deep_health_checks=["InstanceStress"])["OnStartDeepHealthChecks"]
    refused("deep_health_checks", instance_type="ml.c5.large",
            deep_health_checks=["InstanceStress"])
    refused("deep_health_checks", deep_health_checks=["MultiNodeTrainingValidation"])
    # without instance information the family decides
    assert spec(instance_type="ml.g5.xlarge", instance_info=None,
                deep_health_checks=DEEP_HEALTH_CHECKS)["OnStartDeepHealthChecks"]
    refused("deep_health_checks", instance_type="ml.m5.large", instance_info=None,
            deep_health_checks=["InstanceStress"])


def test_other_fields():
    refused("name", name="Bad_Name")
    refused("instance_type", instance_type="p5.48xlarge")
    refused("instance_type", instance_type="ml.p9.48xlarge")
    refused("execution_role_arn", execution_role_arn="hypd-role")
    assert "sagemaker-" in refused("lifecycle_s3_uri", lifecycle_s3_uri="s3://my-bucket/x/")
    refused("lifecycle_s3_uri", lifecycle_s3_uri="https://example.com/x")
    refused("on_create", on_create="dir/on_create.sh")
    refused("subnet_id", subnet_id="10.0.0.0/20")
    refused("security_group_ids", security_group_ids=[])
    refused("security_group_ids", security_group_ids=["sg-1", SG])
    refused("threads_per_core", threads_per_core=4)
    refused("volume_size_gb", volume_size_gb=0)
    refused("volume_size_gb", volume_size_gb=16385)


# -- property: every valid decision set gives a request botocore's model accepts -----------

DECISIONS = st.fixed_dictionaries({
    "instance_type": st.sampled_from(sorted(INFO)),
    "count": st.integers(0, 6758),
    "autoscaling": st.booleans(),
    "capacity_type": st.sampled_from(CAPACITY_TYPES),
    "interface_mode": st.sampled_from([None, "efa", "efa-only"]),
    "deep_health_checks": st.lists(st.sampled_from(DEEP_HEALTH_CHECKS), max_size=3),
    "volume_size_gb": st.one_of(st.none(), st.integers(1, 16384)),
    "threads_per_core": st.sampled_from([1, 2]),
    "name": st.from_regex(r"[a-z][a-z0-9-]{0,30}[a-z0-9]", fullmatch=True),
})


@settings(max_examples=300, deadline=None)
@given(DECISIONS)
def test_valid_decisions_always_validate_and_invalid_ones_name_their_field(decisions):
    info = INFO[decisions["instance_type"]]
    if decisions["capacity_type"] == "training-plan":
        decisions["training_plan_arn"] = PLAN
    expect_field = None
    if decisions["count"] == 0 and not decisions["autoscaling"]:
        expect_field = "count"
    elif decisions["interface_mode"] and (
            not info["efa_supported"]
            or (decisions["interface_mode"] == "efa-only" and info["max_efa_interfaces"] < 2)):
        expect_field = "interface_mode"
    elif decisions["deep_health_checks"] and info["accelerator"] is None:
        expect_field = "deep_health_checks"
    if expect_field:
        refused(expect_field, **decisions)
        return
    group = spec(**decisions)
    assert validate(group, GROUP_SHAPE) == []
    assert capacity_type_of(group) == decisions["capacity_type"]
    assert group["InstanceType"] in hyperpod_instance_types()


# -- immutability --------------------------------------------------------------------------


def test_immutable_changes():
    on_demand = spec()
    assert immutable_changes(on_demand, spec(count=8)) == []
    assert immutable_changes(on_demand, spec(capacity_type="spot")) == ["capacity_type"]
    plan = spec(capacity_type="training-plan", training_plan_arn=PLAN)
    assert immutable_changes(plan, on_demand) == ["capacity_type"]
    other_plan = PLAN.replace("p5-reservation-1", "p5-reservation-2")
    assert immutable_changes(plan, spec(capacity_type="training-plan",
                                        training_plan_arn=other_plan)) == ["training_plan_arn"]
    efa_only = spec(interface_mode="efa-only")
    assert immutable_changes(efa_only, spec(interface_mode="efa")) == ["efa_only"]
    assert immutable_changes(spec(interface_mode="efa"), efa_only) == ["efa_only"]
    assert immutable_changes(efa_only, efa_only) == []
    assert immutable_changes(on_demand, spec(instance_type="ml.g5.8xlarge")) == ["instance_type"]
    # what DescribeCluster reports: a group made without CapacityRequirements is on-demand
    described = {"InstanceGroupName": "workers", "InstanceType": "ml.p5.48xlarge",
                 "CurrentCount": 2, "TargetCount": 2}
    assert immutable_changes(described, on_demand) == []
    assert immutable_changes(described, {"InstanceCount": 4}) == []
    with pytest.raises(CapacityError) as caught:
        check_immutable(described, spec(capacity_type="spot"))
    assert caught.value.field == "capacity_type"
    assert "on-demand → spot" in caught.value.message
    assert "add a new instance group" in caught.value.message
    check_immutable(described, spec(count=3))


# -- the compute subnet (moto) -------------------------------------------------------------


@pytest.fixture
def network(ec2):
    vpc = networks.ensure_vpc(ec2, "lab")
    zones = ["us-west-2a", "us-west-2b"]
    subnets = networks.ensure_subnets(ec2, "lab", vpc["vpc_id"], zones)
    return vpc, subnets


def test_compute_subnet_is_a_free_20_in_the_zone_and_adopted_on_rerun(ec2, network):
    vpc, existing = network
    tags = compute_subnet_tags("lab", "workers", "us-west-2b")
    locks = []

    class Lock:
        def __enter__(self):
            locks.append("in")

        def __exit__(self, *exc):
            locks.append("out")

    first = allocate_compute_subnet(ec2, vpc["vpc_id"], "us-west-2b", tags, lock=Lock)
    assert first["created"] and locks == ["in", "out"]
    block = ipaddress.IPv4Network(first["cidr"])
    assert block.prefixlen == 20 and block.subnet_of(ipaddress.IPv4Network(vpc["cidr"]))
    assert first["availability_zone"] == "us-west-2b"
    assert not any(block.overlaps(ipaddress.IPv4Network(s["cidr"])) for s in existing)
    before = len(ec2.describe_subnets()["Subnets"])
    again = allocate_compute_subnet(ec2, vpc["vpc_id"], "us-west-2b", tags, lock=Lock())
    assert again == dict(first, created=False)
    assert len(ec2.describe_subnets()["Subnets"]) == before
    # another group gets its own block
    other = allocate_compute_subnet(ec2, vpc["vpc_id"], "us-west-2b",
                                    compute_subnet_tags("lab", "spot", "us-west-2b"))
    assert other["id"] != first["id"]
    assert not ipaddress.IPv4Network(other["cidr"]).overlaps(block)
    found = ec2.describe_subnets(SubnetIds=[first["id"]])["Subnets"][0]
    assert aws.tag_dict(found)["hypd:instance-group"] == "workers"
    assert aws.tag_dict(found)["hypd:cluster"] == "lab"


def test_compute_subnet_joins_the_private_route_table(ec2, network):
    vpc, existing = network
    table = ec2.create_route_table(VpcId=vpc["vpc_id"])["RouteTable"]["RouteTableId"]
    private = next(s for s in existing if s["role"] == "private")
    ec2.associate_route_table(RouteTableId=table, SubnetId=private["id"])
    assert route_table_of_subnet(ec2, vpc["vpc_id"], private["id"]) == table
    made = allocate_compute_subnet(ec2, vpc["vpc_id"], "us-west-2a",
                                   compute_subnet_tags("lab", "workers", "us-west-2a"),
                                   route_table_id=table)
    assert route_table_of_subnet(ec2, vpc["vpc_id"], made["id"]) == table
    # re-running does not associate twice
    allocate_compute_subnet(ec2, vpc["vpc_id"], "us-west-2a",
                            compute_subnet_tags("lab", "workers", "us-west-2a"),
                            route_table_id=table)
    tables = ec2.describe_route_tables(RouteTableIds=[table])["RouteTables"]
    assert sum(a.get("SubnetId") == made["id"] for a in tables[0]["Associations"]) == 1


def test_compute_subnets_are_deleted_by_their_tags_only(ec2, network):
    vpc, existing = network
    vpc_id = vpc["vpc_id"]
    mine = [allocate_compute_subnet(ec2, vpc_id, zone, compute_subnet_tags("lab", group, zone))
            for zone, group in (("us-west-2a", "workers"), ("us-west-2b", "spot"))]
    theirs = allocate_compute_subnet(ec2, vpc_id, "us-west-2a",
                                     compute_subnet_tags("labx", "workers", "us-west-2a"))
    assert sorted(delete_compute_subnets(ec2, "lab")) == sorted(s["id"] for s in mine)
    left = {s["SubnetId"] for s in ec2.describe_subnets(
        Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["Subnets"]}
    assert theirs["id"] in left and not {s["id"] for s in mine} & left
    assert {s["id"] for s in existing} <= left  # the network's own subnets stay
    assert delete_compute_subnets(ec2, "lab") == []


def test_compute_subnet_needs_tags(ec2, network):
    with pytest.raises(ValueError):
        allocate_compute_subnet(ec2, network[0]["vpc_id"], "us-west-2a", [])


# -- labels, taints and groups as they are ---------------------------------------------------

def test_labels_and_taints_become_kubernetes_config_checked_as_kubernetes_does():
    from cloud import capacity

    config = capacity.kubernetes_config(
        {"team": "ml", "example.com/tier": "gpu"},
        [{"key": "dedicated", "value": "training", "effect": "NoSchedule"},
         {"key": "spot", "effect": "PreferNoSchedule"}])
    assert config == {"Labels": {"team": "ml", "example.com/tier": "gpu"},
                      "Taints": [{"Key": "dedicated", "Value": "training",
                                  "Effect": "NoSchedule"},
                                 {"Key": "spot", "Effect": "PreferNoSchedule"}]}
    assert capacity.kubernetes_config(None, None) == {}
    for labels, taints in (({"Bad Key": "x"}, None), ({"ok": "not ok!"}, None),
                           ({"sagemaker.amazonaws.com/node-health-status": "x"}, None),
                           ({"node-role.kubernetes.io/gpu": ""}, None),
                           (None, [{"key": "a", "effect": "Sometimes"}]),
                           (None, [{"key": "a", "effect": "NoSchedule"},
                                   {"key": "a", "effect": "NoSchedule"}])):
        with pytest.raises(capacity.CapacityError) as err:
            capacity.kubernetes_config(labels, taints)
        assert err.value.field in ("labels", "taints")


def test_a_group_described_comes_back_as_the_spec_that_keeps_it():
    from cloud import capacity

    spec = capacity.instance_group_spec(
        name="gpu", instance_type="ml.g5.8xlarge", count=3,
        execution_role_arn="arn:aws:iam::123456789012:role/hypd-lab-hp-exec",
        lifecycle_s3_uri="s3://sagemaker-hypd-lab/lifecycle/", subnet_id="subnet-0123456789abcdef0",
        security_group_ids=["sg-0123456789abcdef0"], capacity_type="spot",
        labels={"team": "ml"}, taints=[{"key": "gpu", "effect": "NoSchedule"}])
    details = {**spec, "CurrentCount": 1, "TargetCount": 3, "Status": "InService",
               "InstanceTypeDetails": {}, "ActiveOperations": {},
               "KubernetesConfig": {  # as DescribeCluster reports it
                   "CurrentLabels": {"team": "ml"}, "DesiredLabels": {"team": "ml"},
                   "CurrentTaints": [], "DesiredTaints": [{"Key": "gpu",
                                                           "Effect": "NoSchedule"}]}}
    details.pop("InstanceCount")

    assert capacity.spec_from_details(details) == spec
    assert validate_input("sagemaker", "UpdateCluster",
                          {"ClusterName": "lab", "InstanceGroups": [spec]}) == []
    assert capacity.labels_of(details) == {"team": "ml"}
    assert capacity.taints_of(details) == [{"key": "gpu", "effect": "NoSchedule"}]
