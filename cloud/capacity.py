"""The one capacity function: a HyperPod instance group for every capacity path.

`instance_group_spec` builds the `ClusterInstanceGroupSpecification` that `CreateCluster`
(the first group) and `UpdateCluster` (groups added later) both take, unchanged, from the
decisions a user makes: instance type and count, capacity type, network interface mode,
the subnet it lives in. It is pure: it validates every decision and answers a dict in
botocore's exact shape, or raises `CapacityError` naming the field at fault.

botocore fields used (sagemaker, `ClusterInstanceGroupSpecification`): `InstanceGroupName`,
`InstanceType`, `InstanceCount`, `MinInstanceCount`, `ExecutionRole`, `ThreadsPerCore`,
`LifeCycleConfig.{SourceS3Uri, OnCreate}`, `CapacityRequirements.{OnDemand, Spot}` (empty
structures: their presence is the choice), `TrainingPlanArn`, `NetworkInterface.InterfaceType`
(`efa` | `efa-only`), `OverrideVpcConfig.{SecurityGroupIds, Subnets}`,
`OnStartDeepHealthChecks` (`InstanceStress`, `InstanceConnectivity`),
`InstanceStorageConfigs[].EbsVolumeConfig.VolumeSizeInGB`.

Capacity type and EFA-only mode are fixed for a group's life: `immutable_changes` compares
two specs (or a spec with what `DescribeCluster` reports for the group) and names what a
request would change that it may not.

`allocate_compute_subnet` is the thin EC2 side: a /20 compute subnet for a group in its
zone, through the one allocator (`cloud.subnets.allocate_subnet`), adopted by its tags when
it already exists; `delete_compute_subnets` removes a cluster's, by the same tags.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import botocore.session
from botocore.exceptions import ClientError

from cloud.aws import (
    CLUSTER_TAG,
    MANAGED_BY,
    MANAGED_BY_VALUE,
    ROLE_TAG,
    is_not_found,
    tag_dict,
    tag_filters,
    tag_key,
    tags_for,
)
from cloud.discovery import ACCELERATOR_FAMILY, ec2_instance_type
from cloud.errors import Refusal
from cloud.subnets import COMPUTE_PREFIX, LockFactory, allocate_subnet
from vocabulary import patterns
from vocabulary.capacity import (
    CAPACITY_TYPES,
    EFA_MODES,
    EFA_ONLY,
    ON_DEMAND,
    SPOT,
    TAINT_EFFECTS,
    TRAINING_PLAN,
    efa_interfaces,
    efa_refusal,
)

# -- the decisions (their words: vocabulary.capacity) ----------------------------------------

INSTANCE_STRESS = "InstanceStress"
INSTANCE_CONNECTIVITY = "InstanceConnectivity"
DEEP_HEALTH_CHECKS = (INSTANCE_STRESS, INSTANCE_CONNECTIVITY)
"""The on-start deep health checks hypd offers (the API also has MultiNodeTrainingValidation,
which hypd does not expose). AWS runs them on GPU and Trainium instances only."""

DEFAULT_ON_CREATE = "on_create.sh"
DEFAULT_THREADS_PER_CORE = 1
"""1 is valid for every instance type (types without SMT accept only 1); 2 turns SMT on."""

MAX_INSTANCE_COUNT = 6758
MAX_VOLUME_GB = 16384
MAX_SECURITY_GROUPS = 5

_S3_URI = re.compile(r"^s3://([^/]+)(/.*)?$")
LIFECYCLE_BUCKET_PREFIX = "sagemaker-"
"""HyperPod's execution role carries the managed AmazonSageMakerClusterInstanceRolePolicy,
which reads lifecycle scripts only from buckets named `sagemaker-*` (AWS documents
`SourceS3Uri` must start with `s3://sagemaker-`)."""


class CapacityError(Refusal):
    """A capacity decision AWS would refuse (or hypd forbids), with the request field."""

    default_code = "validation_failed"

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message, field=field)


@functools.lru_cache(maxsize=1)
def hyperpod_instance_types() -> frozenset[str]:
    """The instance types botocore's model allows in a HyperPod instance group."""
    model = botocore.session.get_session().get_service_model("sagemaker")
    return frozenset(model.shape_for("ClusterInstanceType").enum)


def instance_group_spec(
    *,
    name: str,
    instance_type: str,
    count: int,
    execution_role_arn: str,
    lifecycle_s3_uri: str,
    subnet_id: str,
    security_group_ids: Sequence[str],
    capacity_type: str = ON_DEMAND,
    training_plan_arn: str | None = None,
    interface_mode: str | None = None,
    instance_info: Mapping[str, Any] | None = None,
    on_create: str = DEFAULT_ON_CREATE,
    threads_per_core: int = DEFAULT_THREADS_PER_CORE,
    deep_health_checks: Iterable[str] = (),
    volume_size_gb: int | None = None,
    autoscaling: bool = False,
    min_count: int | None = None,
    region: str | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] | None = None,
) -> dict[str, Any]:
    """A `ClusterInstanceGroupSpecification` for one instance group.

    - `capacity_type`: `on-demand` / `spot` → `CapacityRequirements` `{"OnDemand": {}}` /
      `{"Spot": {}}`; `training-plan` → `TrainingPlanArn` (then required).
    - `interface_mode`: None leaves HyperPod's default network interface; `efa` needs an
      EFA-capable type; `efa-only` a type with several EFA interfaces. Both need
      `instance_info` (cloud.discovery's InstanceType shape) to decide.
    - `subnet_id` (from `allocate_compute_subnet`) and `security_group_ids` →
      `OverrideVpcConfig`, which places the group in its zone.
    - `count` ≥ 1; 0 only with `autoscaling` (managed autoscaling scales from zero).
    - `deep_health_checks`: a subset of `InstanceStress`, `InstanceConnectivity`, run before
      nodes take work; GPU and Trainium types only.
    - `volume_size_gb`: the extra EBS volume HyperPod mounts at /opt/sagemaker (the lifecycle
      script moves container and kubelet storage there).
    - `region`: when given, a training plan must be in it.
    - `labels` / `taints`: Kubernetes labels and taints HyperPod puts on the group's nodes
      (`KubernetesConfig`); taints are `{key, value?, effect}`.
    """
    if not patterns.fits(patterns.INSTANCE_GROUP_NAME, name):
        raise CapacityError(
            f"instance group name {name!r} must be 1-63 letters, digits and hyphens, starting "
            f"and ending with a letter or digit", "name")
    _check_instance_type(instance_type, instance_info)
    _check_count(count, autoscaling, min_count)
    if not patterns.fits(patterns.ROLE_ARN, execution_role_arn):
        raise CapacityError(f"execution role {execution_role_arn!r} is not an IAM role ARN",
                            "execution_role_arn")
    _check_lifecycle(lifecycle_s3_uri, on_create)
    if not isinstance(subnet_id, str) or not patterns.SUBNET_ID.fullmatch(subnet_id):
        raise CapacityError(f"{subnet_id!r} is not a subnet id", "subnet_id")
    groups = _check_security_groups(security_group_ids)
    if threads_per_core not in (1, 2) or isinstance(threads_per_core, bool):
        raise CapacityError(f"threads per core must be 1 or 2, got {threads_per_core!r}",
                            "threads_per_core")

    spec: dict[str, Any] = {
        "InstanceGroupName": name,
        "InstanceType": instance_type,
        "InstanceCount": count,
        "ExecutionRole": execution_role_arn,
        "ThreadsPerCore": threads_per_core,
        "LifeCycleConfig": {"SourceS3Uri": lifecycle_s3_uri, "OnCreate": on_create},
        "OverrideVpcConfig": {"SecurityGroupIds": groups, "Subnets": [subnet_id]},
    }
    if min_count is not None:
        spec["MinInstanceCount"] = min_count
    spec.update(_capacity(capacity_type, training_plan_arn, region))
    if interface_mode is not None:
        _check_interface(interface_mode, instance_type, instance_info)
        spec["NetworkInterface"] = {"InterfaceType": interface_mode}
    checks = _deep_health_checks(deep_health_checks, instance_type, instance_info)
    if checks:
        spec["OnStartDeepHealthChecks"] = checks
    if volume_size_gb is not None:
        if (isinstance(volume_size_gb, bool) or not isinstance(volume_size_gb, int)
                or not 1 <= volume_size_gb <= MAX_VOLUME_GB):
            raise CapacityError(
                f"instance volume size must be 1-{MAX_VOLUME_GB} GB, got {volume_size_gb!r}",
                "volume_size_gb")
        spec["InstanceStorageConfigs"] = [{"EbsVolumeConfig": {"VolumeSizeInGB": volume_size_gb}}]
    kubernetes = kubernetes_config(labels, taints)
    if kubernetes:
        spec["KubernetesConfig"] = kubernetes
    return spec


# -- Kubernetes labels and taints of a group's nodes -------------------------------------------

RESERVED_LABEL_PREFIXES = ("sagemaker.amazonaws.com/", "kubernetes.io/", "k8s.io/")
"""Label keys HyperPod and Kubernetes set themselves (health status, instance group, zone,
hostname): a user's label there would fight them."""
MAX_LABELS = 50
MAX_TAINTS = 50


def kubernetes_config(labels: Mapping[str, str] | None,
                      taints: Sequence[Mapping[str, str]] | None) -> dict[str, Any]:
    """`KubernetesConfig` for labels and taints, checked as Kubernetes checks them; empty
    when neither is given."""
    config: dict[str, Any] = {}
    if labels:
        if len(labels) > MAX_LABELS:
            raise CapacityError(f"at most {MAX_LABELS} labels", "labels")
        for key, value in labels.items():
            _check_label(key, value)
        config["Labels"] = dict(labels)
    if taints:
        if len(taints) > MAX_TAINTS:
            raise CapacityError(f"at most {MAX_TAINTS} taints", "taints")
        out, seen = [], set()
        for taint in taints:
            key, value, effect = taint.get("key"), taint.get("value"), taint.get("effect")
            _check_label(key, value or "", "taints")
            if effect not in TAINT_EFFECTS:
                raise CapacityError(f"taint effect must be one of {', '.join(TAINT_EFFECTS)}, "
                                    f"got {effect!r}", "taints")
            if (key, effect) in seen:
                raise CapacityError(f"taint {key}:{effect} is given twice", "taints")
            seen.add((key, effect))
            out.append({"Key": key, "Effect": effect, **({"Value": value} if value else {})})
        config["Taints"] = out
    return config


def _check_label(key: Any, value: Any, field: str = "labels") -> None:
    if not isinstance(key, str) or len(key) > 316 or not patterns.LABEL_KEY.fullmatch(key):
        raise CapacityError(f"{key!r} is not a Kubernetes label key (an optional DNS prefix "
                            "and '/', then up to 63 letters, digits, '-', '_' or '.')", field)
    if key.startswith(RESERVED_LABEL_PREFIXES) or ("/" in key and key.split("/")[0].endswith(
            (".kubernetes.io", ".k8s.io"))):
        raise CapacityError(f"label key {key!r} is one Kubernetes or HyperPod sets itself",
                            field)
    if not isinstance(value, str) or not patterns.LABEL_VALUE.fullmatch(value):
        raise CapacityError(f"{value!r} is not a Kubernetes label value (up to 63 letters, "
                            "digits, '-', '_' or '.', starting and ending alphanumeric)", field)


def _kubernetes(group: Mapping[str, Any]) -> tuple[dict[str, str], list[dict[str, str]]]:
    """Labels and taints of a spec (`Labels`, `Taints`) or of a group as DescribeCluster
    reports it (`DesiredLabels`, `DesiredTaints`: what was asked, which the nodes follow)."""
    config = group.get("KubernetesConfig") or {}
    labels = config.get("Labels", config.get("DesiredLabels")) or {}
    taints = config.get("Taints", config.get("DesiredTaints")) or []
    return dict(labels), [dict(t) for t in taints]


def labels_of(group: Mapping[str, Any]) -> dict[str, str]:
    return _kubernetes(group)[0]


def taints_of(group: Mapping[str, Any]) -> list[dict[str, str]]:
    return [{"key": t["Key"], "effect": t["Effect"], **({"value": t["Value"]}
                                                         if t.get("Value") else {})}
            for t in _kubernetes(group)[1]]


# -- a group as it is, for UpdateCluster ---------------------------------------------------------

SPEC_FIELDS = ("InstanceGroupName", "InstanceType", "LifeCycleConfig", "ExecutionRole",
               "ThreadsPerCore", "InstanceStorageConfigs", "OnStartDeepHealthChecks",
               "TrainingPlanArn", "OverrideVpcConfig", "CapacityRequirements",
               "NetworkInterface")
"""The fields of `ClusterInstanceGroupSpecification` that `DescribeCluster` reports back for
a group under the same names."""


def spec_from_details(group: Mapping[str, Any]) -> dict[str, Any]:
    """The `ClusterInstanceGroupSpecification` that keeps a group as it is, from its
    `ClusterInstanceGroupDetails`: UpdateCluster takes the whole list of groups, so the ones
    a change does not touch are sent as they are."""
    spec = {key: group[key] for key in SPEC_FIELDS if group.get(key) not in (None, [], {})}
    labels, taints = _kubernetes(group)
    if labels or taints:
        spec["KubernetesConfig"] = {**({"Labels": labels} if labels else {}),
                                    **({"Taints": taints} if taints else {})}
    target = group.get("TargetCount")
    spec["InstanceCount"] = int(target if target is not None else group.get("CurrentCount") or 0)
    if group.get("MinCount") is not None:
        spec["MinInstanceCount"] = int(group["MinCount"])
    return spec


# -- reading a spec back ---------------------------------------------------------------------


def capacity_type_of(group: Mapping[str, Any]) -> str:
    """The capacity type of a spec, or of a group as `DescribeCluster` reports it (a group
    made without `CapacityRequirements` and without a training plan is on-demand)."""
    if group.get("TrainingPlanArn"):
        return TRAINING_PLAN
    requirements = group.get("CapacityRequirements") or {}
    if "Spot" in requirements:
        return SPOT
    return ON_DEMAND


def interface_mode_of(group: Mapping[str, Any]) -> str | None:
    return (group.get("NetworkInterface") or {}).get("InterfaceType")


def immutable_changes(old_spec: Mapping[str, Any], new_spec: Mapping[str, Any]) -> list[str]:
    """The decisions `new_spec` would change that are fixed for the group's life:
    `capacity_type`, `training_plan_arn` (another reservation is another capacity),
    `efa_only` (turning EFA-only mode on or off), `instance_type` (HyperPod keeps a group's
    type). Empty when the change is allowed. Either side may be a spec or a group from
    `DescribeCluster`; a field the new spec leaves out is not a change."""
    changes = []
    if capacity_type_of(old_spec) != capacity_type_of(new_spec) and (
            "CapacityRequirements" in new_spec or "TrainingPlanArn" in new_spec):
        changes.append("capacity_type")
    elif (capacity_type_of(old_spec) == TRAINING_PLAN
          and new_spec.get("TrainingPlanArn")
          and old_spec.get("TrainingPlanArn") != new_spec.get("TrainingPlanArn")):
        changes.append("training_plan_arn")
    if "NetworkInterface" in new_spec and (
            (interface_mode_of(old_spec) == EFA_ONLY) != (interface_mode_of(new_spec) == EFA_ONLY)):
        changes.append("efa_only")
    if new_spec.get("InstanceType") and old_spec.get("InstanceType") and (
            old_spec["InstanceType"] != new_spec["InstanceType"]):
        changes.append("instance_type")
    return changes


def check_immutable(old_spec: Mapping[str, Any], new_spec: Mapping[str, Any]) -> None:
    """Raise `CapacityError` (with a readable reason) when `immutable_changes` finds any."""
    changes = immutable_changes(old_spec, new_spec)
    if not changes:
        return
    group = old_spec.get("InstanceGroupName") or new_spec.get("InstanceGroupName") or "?"
    said = {
        "capacity_type": f"capacity type ({capacity_type_of(old_spec)} → "
                         f"{capacity_type_of(new_spec)})",
        "training_plan_arn": "training plan",
        "efa_only": f"EFA-only mode ({interface_mode_of(old_spec) or 'default'} → "
                    f"{interface_mode_of(new_spec) or 'default'})",
        "instance_type": f"instance type ({old_spec.get('InstanceType')} → "
                         f"{new_spec.get('InstanceType')})",
    }
    raise CapacityError(
        f"instance group {group!r}: {', '.join(said[c] for c in changes)} cannot change for "
        f"the group's life; add a new instance group instead", changes[0])


# -- the compute subnet ----------------------------------------------------------------------

ROLE_COMPUTE_SUBNET = "compute-subnet"


def compute_subnet_tags(cluster: str, group: str, availability_zone: str) -> list[dict[str, str]]:
    """Tags of an instance group's compute subnet (they also find it again)."""
    return tags_for(CLUSTER_TAG, cluster, role=ROLE_COMPUTE_SUBNET, instance_group=group,
                    Name=f"hypd-{cluster}-{group}-{availability_zone}",
                    **{"kubernetes.io/role/internal-elb": "1"})


def allocate_compute_subnet(
    ec2: Any,
    vpc_id: str,
    az: str,
    tags: list[dict[str, str]],
    lock: LockFactory | AbstractContextManager[Any] = contextlib.nullcontext,
    route_table_id: str | None = None,
) -> dict[str, Any]:
    """A /20 compute subnet in zone `az` of the VPC, carrying `tags`.

    Under `lock` (the engine's per-VPC mutex), a subnet of the VPC in that zone carrying every
    one of `tags` is adopted; otherwise the one allocator makes a new one. With
    `route_table_id` (the network's private route table, see `route_table_of_subnet`) the
    subnet is associated with it, so the group's nodes reach AWS through the NAT gateway.
    Returns {id, cidr, availability_zone, created}.
    """
    if not tags:
        raise ValueError("a compute subnet is found again by its tags: give some")
    cm = lock if isinstance(lock, AbstractContextManager) else lock()
    with cm:
        subnet = _find_tagged_subnet(ec2, vpc_id, az, tags)
        created = subnet is None
        if subnet is None:
            subnet = allocate_subnet(ec2, vpc_id, az, COMPUTE_PREFIX, tags,
                                     lock=contextlib.nullcontext)
    if route_table_id:
        _associate(ec2, vpc_id, route_table_id, subnet["SubnetId"])
    return {"id": subnet["SubnetId"], "cidr": subnet["CidrBlock"],
            "availability_zone": subnet["AvailabilityZone"], "created": created}


def delete_compute_subnets(ec2: Any, cluster: str, group: str | None = None) -> list[str]:
    """Delete every compute subnet of the cluster, or of one of its instance groups (found by
    their tags, which are checked again here: a deletion never acts on a subnet that is not
    this cluster's compute subnet). Returns the ids deleted; one already gone is not an
    error; one still in use answers DependencyViolation (a "not yet" for the engine)."""
    extra = {"instance_group": group} if group else {}
    pages = ec2.get_paginator("describe_subnets").paginate(
        Filters=tag_filters(CLUSTER_TAG, cluster, role=ROLE_COMPUTE_SUBNET, **extra))
    wanted = {MANAGED_BY: MANAGED_BY_VALUE, CLUSTER_TAG: cluster, ROLE_TAG: ROLE_COMPUTE_SUBNET}
    if group:
        wanted[tag_key("instance_group")] = group
    ids = [s["SubnetId"] for page in pages for s in page["Subnets"]
           if all(tag_dict(s).get(k) == v for k, v in wanted.items())]
    deleted = []
    for subnet_id in ids:
        try:
            ec2.delete_subnet(SubnetId=subnet_id)
        except ClientError as exc:
            if not is_not_found(exc):
                raise
            continue
        deleted.append(subnet_id)
    return deleted


def route_table_of_subnet(ec2: Any, vpc_id: str, subnet_id: str) -> str | None:
    """The route table a subnet uses: its explicit association, else the VPC's main table."""
    tables = ec2.describe_route_tables(
        Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["RouteTables"]
    main = None
    for table in tables:
        for assoc in table.get("Associations") or ():
            if assoc.get("SubnetId") == subnet_id:
                return table["RouteTableId"]
            if assoc.get("Main"):
                main = table["RouteTableId"]
    return main


def _find_tagged_subnet(ec2: Any, vpc_id: str, az: str,
                        tags: list[dict[str, str]]) -> dict[str, Any] | None:
    filters = [{"Name": "vpc-id", "Values": [vpc_id]},
               {"Name": "availability-zone", "Values": [az]}]
    filters += [{"Name": f"tag:{t['Key']}", "Values": [t["Value"]]} for t in tags]
    pages = ec2.get_paginator("describe_subnets").paginate(Filters=filters)
    wanted = {t["Key"]: t["Value"] for t in tags}
    found = []
    for page in pages:
        for subnet in page["Subnets"]:
            have = {t["Key"]: t["Value"] for t in subnet.get("Tags") or ()}
            # re-checked here: an emulator (or a future filter change) must not make us adopt
            # a subnet that is not this group's
            if (subnet.get("VpcId") == vpc_id and subnet.get("AvailabilityZone") == az
                    and all(have.get(k) == v for k, v in wanted.items())):
                found.append(subnet)
    return min(found, key=lambda s: s["SubnetId"]) if found else None


def _associate(ec2: Any, vpc_id: str, route_table_id: str, subnet_id: str) -> None:
    tables = ec2.describe_route_tables(
        Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["RouteTables"]
    for table in tables:
        for assoc in table.get("Associations") or ():
            state = (assoc.get("AssociationState") or {}).get("State", "associated")
            if assoc.get("SubnetId") != subnet_id or state not in ("associated", "associating"):
                continue
            if table["RouteTableId"] == route_table_id:
                return
            ec2.replace_route_table_association(
                AssociationId=assoc["RouteTableAssociationId"], RouteTableId=route_table_id)
            return
    ec2.associate_route_table(RouteTableId=route_table_id, SubnetId=subnet_id)


# -- checks ------------------------------------------------------------------------------------


def _check_instance_type(instance_type: str, info: Mapping[str, Any] | None) -> None:
    if not isinstance(instance_type, str) or not instance_type.startswith("ml."):
        raise CapacityError(
            f"instance type {instance_type!r} must be a HyperPod type such as ml.p5.48xlarge",
            "instance_type")
    if instance_type not in hyperpod_instance_types():
        raise CapacityError(f"{instance_type} is not an instance type HyperPod offers",
                            "instance_type")
    if info is not None and info.get("name") not in (None, instance_type):
        raise CapacityError(
            f"instance information given is for {info.get('name')}, not {instance_type}",
            "instance_type")


def _check_count(count: int, autoscaling: bool, min_count: int | None) -> None:
    if isinstance(count, bool) or not isinstance(count, int):
        raise CapacityError(f"instance count must be a whole number, got {count!r}", "count")
    if count < 0:
        raise CapacityError("instance count cannot be negative", "count")
    if count == 0 and not autoscaling:
        raise CapacityError(
            "instance count must be at least 1 (0 is allowed only with managed autoscaling, "
            "which scales the group up from zero)", "count")
    if count > MAX_INSTANCE_COUNT:
        raise CapacityError(f"instance count must be at most {MAX_INSTANCE_COUNT}", "count")
    if min_count is not None and (isinstance(min_count, bool) or not isinstance(min_count, int)
                                  or not 0 <= min_count <= count):
        raise CapacityError(
            f"minimum instance count must be between 0 and the count ({count}), "
            f"got {min_count!r}", "min_count")


def _check_lifecycle(uri: str, on_create: str) -> None:
    match = _S3_URI.match(uri or "") if isinstance(uri, str) else None
    if match is None:
        raise CapacityError(f"lifecycle script location {uri!r} is not an s3:// URI",
                            "lifecycle_s3_uri")
    if not match.group(1).startswith(LIFECYCLE_BUCKET_PREFIX):
        raise CapacityError(
            f"lifecycle scripts must live in a bucket whose name starts with "
            f"'{LIFECYCLE_BUCKET_PREFIX}' (the HyperPod instance role's managed policy reads "
            f"only those), got {uri!r}", "lifecycle_s3_uri")
    if len(uri) > 1024:
        raise CapacityError("lifecycle script location is longer than 1024 characters",
                            "lifecycle_s3_uri")
    if not isinstance(on_create, str) or not 1 <= len(on_create) <= 128 or "/" in on_create:
        raise CapacityError(f"on-create script {on_create!r} must be a file name",
                            "on_create")


def _check_security_groups(ids: Sequence[str]) -> list[str]:
    if isinstance(ids, str):
        ids = [ids]
    groups = list(dict.fromkeys(ids or ()))
    if not 1 <= len(groups) <= MAX_SECURITY_GROUPS:
        raise CapacityError(f"an instance group needs 1-{MAX_SECURITY_GROUPS} security groups",
                            "security_group_ids")
    bad = [g for g in groups
           if not isinstance(g, str) or not patterns.SECURITY_GROUP_ID.fullmatch(g)]
    if bad:
        raise CapacityError(f"{bad[0]!r} is not a security group id", "security_group_ids")
    return groups


def _capacity(capacity_type: str, plan_arn: str | None, region: str | None) -> dict[str, Any]:
    if capacity_type not in CAPACITY_TYPES:
        raise CapacityError(
            f"capacity type must be one of {', '.join(CAPACITY_TYPES)}, got {capacity_type!r}",
            "capacity_type")
    if capacity_type != TRAINING_PLAN:
        if plan_arn:
            raise CapacityError(
                f"a training plan is used only with capacity type {TRAINING_PLAN!r}, not "
                f"{capacity_type!r}", "training_plan_arn")
        return {"CapacityRequirements": {"Spot": {}} if capacity_type == SPOT
                else {"OnDemand": {}}}
    if not plan_arn:
        raise CapacityError("capacity type 'training-plan' needs the training plan's ARN",
                            "training_plan_arn")
    if not patterns.fits(patterns.TRAINING_PLAN_ARN, plan_arn):
        raise CapacityError(f"{plan_arn!r} is not a SageMaker training plan ARN "
                            "(arn:aws:sagemaker:<region>:<account>:training-plan/<name>)",
                            "training_plan_arn")
    plan_region = plan_arn.split(":")[3]
    if region and plan_region != region:
        raise CapacityError(
            f"training plan {plan_arn} is in {plan_region}, not in the cluster's region "
            f"{region}", "training_plan_arn")
    return {"TrainingPlanArn": plan_arn}


def _check_interface(mode: str, instance_type: str, info: Mapping[str, Any] | None) -> None:
    if mode not in EFA_MODES:
        raise CapacityError(
            f"network interface mode must be one of {', '.join(EFA_MODES)}, got {mode!r}",
            "interface_mode")
    if info is None:
        raise CapacityError(
            f"cannot tell whether {instance_type} supports {mode}: its instance information "
            f"(EFA support, EFA interfaces) is needed", "interface_mode")
    refusal = efa_refusal(mode, instance_type, efa_interfaces(
        info.get("efa_supported"), info.get("max_efa_interfaces")))
    if refusal:
        raise CapacityError(refusal, "interface_mode")


def _deep_health_checks(checks: Iterable[str], instance_type: str,
                        info: Mapping[str, Any] | None) -> list[str]:
    if isinstance(checks, str):
        checks = [checks]
    asked = list(dict.fromkeys(checks or ()))
    unknown = [c for c in asked if c not in DEEP_HEALTH_CHECKS]
    if unknown:
        raise CapacityError(
            f"unknown deep health check {unknown[0]!r} (choose from "
            f"{', '.join(DEEP_HEALTH_CHECKS)})", "deep_health_checks")
    if not asked:
        return []
    if info is not None:
        accelerated = info.get("accelerator") in ("gpu", "trainium")
    else:
        accelerated = bool(ACCELERATOR_FAMILY.match(ec2_instance_type(instance_type))) and not (
            ec2_instance_type(instance_type).startswith("inf"))
    if not accelerated:
        raise CapacityError(
            f"deep health checks run on GPU and Trainium instances only, not {instance_type}",
            "deep_health_checks")
    return [c for c in DEEP_HEALTH_CHECKS if c in asked]  # canonical order
