"""SageMaker HyperPod clusters, answered entirely by the sandbox.

moto 5.2's cluster model drops `Orchestrator`, `NodeRecovery` and every newer field, names
nodes `group-0`, creates clusters `InService` at once and lacks UpdateCluster and the node
batch calls. The product depends on all of that, so this gap answers the whole HyperPod
cluster API from its own state (`sagemaker_state`): CreateCluster, DescribeCluster,
ListClusters, UpdateCluster, DeleteCluster, ListClusterNodes, DescribeClusterNode,
BatchAddClusterNodes, BatchDeleteClusterNodes, BatchRebootClusterNodes,
BatchReplaceClusterNodes, UpdateClusterSoftware, ListClusterEvents, and ListTags for cluster
ARNs (other ARNs stay moto's).

Every request is checked against botocore's model first, then against the rest of the local
AWS as AWS checks it: the EKS cluster must exist and be ACTIVE, subnets and security groups
must exist in one VPC (the EKS cluster's), roles must exist in IAM, the lifecycle bucket in
S3, a training plan must cover the group, and quotas must allow the instances. What the
product sets is stored and returned as sent. Clusters, instance groups and instances move
through their states over simulated time; instances that boot become Kubernetes Nodes in the
EKS cluster's local Kubernetes (sandbox.simulator). A jump of the sandbox's clock ages every
cluster: its CreationTime and its nodes' LaunchTime move that far into the past (`Cluster.age`
says what stays; sandbox/timing.py says why).
"""

from __future__ import annotations

import copy
import re
import uuid
from collections import Counter
from typing import Any

from sandbox import simulator
from sandbox.gaps import (
    GapContext,
    answers,
    karpenter,
    sagemaker_governance,
    sagemaker_mlflow,
    sagemaker_network,
)
from sandbox.gaps import quotas as q
from sandbox.gaps.sagemaker_common import (
    AwsError,
    eks_cluster,
    iam_role,
    s3_bucket,
    s3_object_exists,
    security_group,
    split_s3_uri,
    subnet,
    validation,
)
from sandbox.gaps.sagemaker_model import parse_time
from sandbox.gaps.sagemaker_plans import USABLE_STATUSES, plan_book
from sandbox.gaps.sagemaker_state import (
    CLUSTER_CREATING_S,
    CLUSTER_DELETING_S,
    CLUSTER_UPDATING_S,
    DEEP_HEALTH_CHECK_S,
    NODE_LAUNCH_S,
    NODE_REBOOT_S,
    NODE_SHUTDOWN_S,
    SOFTWARE_UPDATE_S,
    Batch,
    Cluster,
    ClusterStatus,
    Group,
    GroupStatus,
    HyperPod,
    Node,
    NodeStatus,
    hyperpod,
    mint_cluster_id,
    mint_instance_id,
    now,
)
from sandbox.reply import Reply
from sandbox.simulator import DeepHealthCheck, Health, NodeView, instance_info

SERVICE = "sagemaker"
# AWS documents at most 99 nodes per BatchDeleteClusterNodes ("contact Support" beyond), though
# the model allows 3000 ids.
MAX_DELETE_NODES = 99
CLUSTER_ARN = re.compile(
    r"arn:aws[a-z\-]*:sagemaker:([a-z0-9\-]*):([0-9]{12}):cluster/[a-z0-9]{12}"
)
EKS_ARN = re.compile(r"arn:aws[a-z\-]*:eks:([a-z0-9\-]*):([0-9]{12}):cluster/(.+)")
# Cluster-level fields UpdateCluster may change.
UPDATABLE = (
    "NodeRecovery",
    "TieredStorageConfig",
    "NodeProvisioningMode",
    "ClusterRole",
    "AutoScaling",
)
# Instance-group fields fixed for the group's life (AWS refuses to change them).
IMMUTABLE = ("OverrideVpcConfig", "CapacityRequirements", "NetworkInterface")


def _state(ctx: GapContext) -> HyperPod:
    return hyperpod(ctx.app)


def _not_found(name: str) -> AwsError:
    return AwsError("ResourceNotFound", f"Cluster {name} not found.")


def _cluster(hp: HyperPod, ctx: GapContext, name: str) -> Cluster:
    cluster = hp.find(ctx.call.account, ctx.call.region, name)
    if cluster is None:
        raise _not_found(name)
    return cluster


def _conflict(message: str) -> AwsError:
    return AwsError("ConflictException", message)


# --- checks against the rest of the local AWS ---------------------------------------------


def _check_role(ctx: GapContext, arn: str, where: str) -> None:
    account = arn.split(":")[4] if arn.count(":") >= 5 else ""
    if account != ctx.call.account or iam_role(account, arn) is None:
        raise validation(
            f"{where}: the IAM role {arn} does not exist in account "
            f"{ctx.call.account}. Create the role before using it."
        )


def _check_lifecycle(ctx: GapContext, config: dict[str, Any], where: str) -> None:
    uri = config.get("SourceS3Uri")
    if uri is None:
        return
    parsed = split_s3_uri(uri)
    if parsed is None or not parsed[0]:
        raise validation(f"{where}.SourceS3Uri: {uri!r} is not an S3 URI (s3://bucket/prefix).")
    if s3_bucket(ctx.call.account, parsed[0]) is None:
        raise validation(
            f"{where}.SourceS3Uri: the S3 bucket {parsed[0]} of {uri} does not "
            "exist or is not readable. Create it and upload the lifecycle scripts "
            "first."
        )


def _check_vpc(ctx: GapContext, config: dict[str, Any], where: str) -> tuple[str, list[Any]]:
    """(VPC id, moto subnets) of a VpcConfig, refusing unknown ids and mixed VPCs."""
    subnets = []
    for subnet_id in config["Subnets"]:
        found = subnet(ctx.call.account, ctx.call.region, subnet_id)
        if found is None:
            raise validation(
                f"{where}.Subnets: subnet {subnet_id} does not exist in {ctx.call.region}."
            )
        subnets.append(found)
    vpcs = {s.vpc_id for s in subnets}
    for group_id in config["SecurityGroupIds"]:
        found = security_group(ctx.call.account, ctx.call.region, group_id)
        if found is None:
            raise validation(
                f"{where}.SecurityGroupIds: security group {group_id} does not "
                f"exist in {ctx.call.region}."
            )
        vpcs.add(found.vpc_id)
    if len(vpcs) > 1:
        raise validation(
            f"{where}: subnets and security groups must all belong to one VPC "
            f"(found {', '.join(sorted(vpcs))})."
        )
    return vpcs.pop(), subnets


def _check_orchestrator(ctx: GapContext, request: dict[str, Any]) -> Any | None:
    """moto's EKS cluster named by Orchestrator.Eks.ClusterArn (None for Slurm clusters)."""
    eks = (request.get("Orchestrator") or {}).get("Eks")
    if not eks:
        return None
    arn = eks["ClusterArn"]
    found = EKS_ARN.fullmatch(arn)
    if found is None or found.group(1) != ctx.call.region or found.group(2) != ctx.call.account:
        raise validation(
            f"Orchestrator.Eks.ClusterArn: {arn} is not an EKS cluster of account "
            f"{ctx.call.account} in {ctx.call.region}."
        )
    cluster = eks_cluster(ctx.call.account, ctx.call.region, found.group(3))
    if cluster is None:
        raise validation(
            f"Orchestrator.Eks.ClusterArn: the EKS cluster {found.group(3)} does not exist."
        )
    if cluster.status != "ACTIVE":
        raise validation(
            f"Orchestrator.Eks.ClusterArn: the EKS cluster {found.group(3)} is "
            f"{cluster.status}; HyperPod needs an ACTIVE EKS cluster."
        )
    return cluster


def _eks_vpc(ctx: GapContext, cluster: Any) -> str | None:
    for subnet_id in (cluster.resources_vpc_config or {}).get("subnetIds") or []:
        found = subnet(ctx.call.account, ctx.call.region, subnet_id)
        if found is not None:
            return str(found.vpc_id)
    return None


def _check_cluster_level(ctx: GapContext, request: dict[str, Any]) -> tuple[Any, str | None]:
    """Cluster-wide rules; returns (EKS cluster or None, VPC id or None)."""
    eks = _check_orchestrator(ctx, request)
    vpc_id = None
    if request.get("VpcConfig"):
        vpc_id, _ = _check_vpc(ctx, request["VpcConfig"], "VpcConfig")
    if eks is not None:
        if vpc_id is None:
            raise validation(
                "VpcConfig: a cluster orchestrated by Amazon EKS needs a VpcConfig "
                "(private subnets and security groups in the EKS cluster's VPC)."
            )
        eks_vpc = _eks_vpc(ctx, eks)
        if eks_vpc is not None and eks_vpc != vpc_id:
            raise validation(
                f"VpcConfig: the subnets are in {vpc_id} but the EKS cluster "
                f"{eks.name} is in {eks_vpc}; HyperPod must use the EKS "
                "cluster's VPC."
            )
    if request.get("NodeProvisioningMode") == "Continuous" and eks is None:
        raise validation(
            "NodeProvisioningMode: Continuous is only supported for clusters "
            "orchestrated by Amazon EKS."
        )
    if request.get("ClusterRole"):
        _check_role(ctx, request["ClusterRole"], "ClusterRole")
    autoscaling = request.get("AutoScaling") or {}
    if autoscaling.get("Mode") == "Enable":
        missing = []
        if eks is None:
            missing.append("an EKS orchestrator")
        if request.get("NodeProvisioningMode") != "Continuous":
            missing.append("NodeProvisioningMode Continuous")
        if request.get("NodeRecovery") != "Automatic":
            missing.append("NodeRecovery Automatic")
        if not request.get("ClusterRole"):
            missing.append("a ClusterRole allowed to add and delete nodes")
        if missing:
            raise validation("AutoScaling: Mode Enable requires " + ", ".join(missing) + ".")
    return eks, vpc_id


def _pick_subnet(subnets: list[Any], zone: str | None) -> Any | None:
    """HyperPod puts a group in one subnet of its list (in the plan's zone, if it has one)."""
    if zone is None:
        return subnets[0] if subnets else None
    return next((s for s in subnets if s.availability_zone == zone), None)


def _check_group(
    ctx: GapContext,
    hp: HyperPod,
    request: dict[str, Any],
    spec: dict[str, Any],
    where: str,
    cluster_vpc: str | None,
    continuous: bool,
    cluster_name: str,
) -> dict[str, str]:
    """An instance group's own rules; returns its placement."""
    has_type = bool(spec.get("InstanceType"))
    has_requirements = bool(spec.get("InstanceRequirements"))
    if has_type == has_requirements:
        raise validation(f"{where}: give exactly one of InstanceType and InstanceRequirements.")
    if has_requirements and not continuous:
        raise validation(
            f"{where}.InstanceRequirements: flexible instance groups need "
            "NodeProvisioningMode Continuous."
        )
    instance_type = spec.get("InstanceType") or spec["InstanceRequirements"]["InstanceTypes"][0]
    if (
        spec.get("MinInstanceCount") is not None
        and spec["MinInstanceCount"] > spec["InstanceCount"]
    ):
        raise validation(
            f"{where}.MinInstanceCount: {spec['MinInstanceCount']} is more than "
            f"InstanceCount {spec['InstanceCount']}."
        )
    _check_role(ctx, spec["ExecutionRole"], f"{where}.ExecutionRole")
    if spec.get("LifeCycleConfig"):
        _check_lifecycle(ctx, spec["LifeCycleConfig"], f"{where}.LifeCycleConfig")
    info = instance_info(instance_type)
    interface = (spec.get("NetworkInterface") or {}).get("InterfaceType")
    efa = info.efa_interfaces if info else 0
    if interface == "efa" and efa < 1:
        raise validation(
            f"{where}.NetworkInterface.InterfaceType: {instance_type} does not support EFA."
        )
    if interface == "efa-only" and efa < 2:
        raise validation(
            f"{where}.NetworkInterface.InterfaceType: efa-only needs an instance "
            f"type with several EFA interfaces; {instance_type} has {efa}."
        )
    if spec.get("OnStartDeepHealthChecks") and not (info and info.accelerated):
        raise validation(
            f"{where}.OnStartDeepHealthChecks: deep health checks run on GPU and "
            f"Trainium instances only, not {instance_type}."
        )
    capacity = spec.get("CapacityRequirements")
    if capacity is not None and len(capacity) != 1:
        raise validation(f"{where}.CapacityRequirements: give exactly one of Spot and OnDemand.")
    if capacity and "Spot" in capacity and spec.get("TrainingPlanArn"):
        raise validation(
            f"{where}: a group on a training plan (TrainingPlanArn) cannot use Spot capacity."
        )
    if spec.get("OverrideVpcConfig"):
        vpc_id, subnets = _check_vpc(ctx, spec["OverrideVpcConfig"], f"{where}.OverrideVpcConfig")
        if cluster_vpc is not None and vpc_id != cluster_vpc:
            raise validation(
                f"{where}.OverrideVpcConfig: the subnets are in {vpc_id}, not the "
                f"cluster's VPC {cluster_vpc}."
            )
    elif request.get("VpcConfig"):
        _, subnets = _check_vpc(ctx, request["VpcConfig"], "VpcConfig")
    else:
        subnets = []
    zone = None
    if spec.get("TrainingPlanArn"):
        zone = _check_plan(ctx, hp, spec, where, instance_type, cluster_name)
    chosen = _pick_subnet(subnets, zone)
    if zone is not None and chosen is None and subnets:
        raise validation(
            f"{where}.TrainingPlanArn: the training plan reserves capacity in "
            f"{zone}, but none of the group's subnets is in {zone}."
        )
    for storage in spec.get("InstanceStorageConfigs") or []:
        size = (storage.get("EbsVolumeConfig") or {}).get("VolumeSizeInGB")
        limit = q.applied(ctx.app, ctx.call.region, "sagemaker", q.EBS_SIZE)
        if size is not None and limit is not None and size > limit:
            raise AwsError(
                "ResourceLimitExceeded",
                f"{where}.InstanceStorageConfigs: the account-level service limit "
                f"'{q.EBS_SIZE}' is {limit:g} GB; {size} GB was requested.",
            )
    if chosen is None:
        return {}
    return {
        "SubnetId": chosen.id,
        "Cidr": chosen.cidr_block,
        "Zone": chosen.availability_zone,
        "ZoneId": chosen.availability_zone_id,
    }


def _check_plan(
    ctx: GapContext,
    hp: HyperPod,
    spec: dict[str, Any],
    where: str,
    instance_type: str,
    cluster_name: str,
) -> str:
    book = plan_book(ctx)
    arn = spec["TrainingPlanArn"]
    with book.lock:
        plan = book.find(ctx.call.account, ctx.call.region, arn)
    if plan is None:
        raise validation(f"{where}.TrainingPlanArn: training plan {arn} does not exist.")
    if plan.status not in USABLE_STATUSES:
        raise validation(
            f"{where}.TrainingPlanArn: training plan {plan.name} is {plan.status}; "
            "only Active or Scheduled plans can be used."
        )
    if "hyperpod-cluster" not in plan.target_resources:
        raise validation(
            f"{where}.TrainingPlanArn: training plan {plan.name} does not target hyperpod-cluster."
        )
    if plan.instance_type != instance_type:
        raise validation(
            f"{where}.TrainingPlanArn: training plan {plan.name} reserves "
            f"{plan.instance_type}, not {instance_type}."
        )
    used = sum(
        g.target
        for c in hp.in_region(ctx.call.account, ctx.call.region).values()
        if c.status != ClusterStatus.DELETING
        for g in c.groups.values()
        if g.spec.get("TrainingPlanArn") == plan.arn
        and not (c.name == cluster_name and g.name == spec["InstanceGroupName"])
    )
    if used + spec["InstanceCount"] > plan.count:
        raise AwsError(
            "ResourceLimitExceeded",
            f"{where}.TrainingPlanArn: training plan {plan.name} reserves {plan.count} "
            f"instances; {used} are in use and {spec['InstanceCount']} were "
            "requested.",
        )
    return plan.availability_zone


def _check_quotas(
    ctx: GapContext, hp: HyperPod, cluster_name: str, desired: list[tuple[str, str, int, bool]]
) -> None:
    """Refuse a change that would take HyperPod instances beyond the account's quotas.

    `desired` is the cluster's groups after the change: (instance type, capacity type,
    target count, on a training plan)."""
    region, account = ctx.call.region, ctx.call.account
    before: Counter[str] = Counter()
    after: Counter[str] = Counter()

    def add(counter: Counter[str], items: list[tuple[str, str, int, bool]]) -> int:
        total = 0
        for instance_type, capacity, target, on_plan in items:
            total += target
            counter[q.TOTAL] += target
            if capacity == "Spot":
                counter[q.TOTAL_SPOT] += target
                counter[q.cluster_spot_usage(instance_type)] += target
            elif not on_plan:
                counter[q.cluster_usage(instance_type)] += target
        return total

    def groups_of(cluster: Cluster) -> list[tuple[str, str, int, bool]]:
        return [
            (g.instance_type, g.capacity_type, g.target, bool(g.spec.get("TrainingPlanArn")))
            for g in cluster.groups.values()
        ]

    for cluster in hp.in_region(account, region).values():
        if cluster.status == ClusterStatus.DELETING:
            continue
        add(before, groups_of(cluster))
        if cluster.name != cluster_name:
            add(after, groups_of(cluster))
    in_cluster = add(after, desired)
    limit = q.applied(ctx.app, region, "sagemaker", q.PER_CLUSTER)
    if limit is not None and in_cluster > limit:
        raise AwsError(
            "ResourceLimitExceeded",
            f"The account-level service limit '{q.PER_CLUSTER}' is {limit:g} "
            f"Instances; the cluster would have {in_cluster} Instances. Please use "
            "AWS Service Quotas to request an increase for this quota.",
        )
    for name, count in sorted(after.items()):
        limit = q.applied(ctx.app, region, "sagemaker", name)
        if limit is not None and count > limit and count > before[name]:
            raise AwsError(
                "ResourceLimitExceeded",
                f"The account-level service limit '{name}' is {limit:g} Instances, with current "
                f"utilization of {before[name]} Instances and a request delta of "
                f"{count - before[name]} Instances. Please use AWS Service Quotas to request an "
                "increase for this quota. If AWS Service Quotas is not available, contact AWS "
                "support to request an increase for this quota.",
            )


# --- instances over time ------------------------------------------------------------------


def _kubelet_version(cluster: Cluster) -> str:
    eks = eks_cluster(cluster.account, cluster.region, cluster.eks_name or "")
    version = getattr(eks, "version", None) or "1.32"
    return f"v{version}.0-eks-hypd"


def _view(cluster: Cluster, node: Node) -> NodeView:
    group = cluster.groups.get(node.group)
    config = ((group.spec if group else {}).get("KubernetesConfig")) or {}
    labels = dict(config.get("Labels") or {})
    stale = tuple(k for k in node.applied_labels if k not in labels)
    node.applied_labels = tuple(labels)
    return NodeView(
        instance_id=node.instance_id,
        instance_type=node.instance_type,
        instance_group=node.group,
        region=cluster.region,
        zone=node.zone,
        zone_id=node.zone_id,
        private_ip=node.private_ip,
        private_dns=_dns(cluster, node),
        health=node.health,
        ready=node.status in (NodeStatus.RUNNING, NodeStatus.DEEP_HEALTH_CHECK),
        launch_time=node.launch_time,
        kubelet_version=_kubelet_version(cluster),
        deep_health_check=node.deep_health_check,
        labels=labels,
        taints=list(config.get("Taints") or []),
        stale_labels=stale,
    )


def _sync(hp: HyperPod, batch: Batch, cluster: Cluster, node: Node) -> None:
    """Have the simulator write this instance's Node (once its kubelet has joined)."""
    eks = cluster.eks_name
    if eks is None or not node.registered:
        return
    view = _view(cluster, node)
    app = hp.app
    batch.effect(lambda: simulator.apply_node(app, eks, view))


def _unsync(hp: HyperPod, batch: Batch, cluster: Cluster, node: Node) -> None:
    eks = cluster.eks_name
    if eks is None or not node.registered:
        return
    app, instance_id = hp.app, node.instance_id
    batch.effect(lambda: simulator.delete_node(app, eks, instance_id))


def _dns(cluster: Cluster, node: Node) -> str:
    return f"ip-{node.private_ip.replace('.', '-')}.{cluster.region}.compute.internal"


def _ips_per_node(cluster: Cluster, instance_type: str) -> int:
    """Addresses one instance takes from its subnet. On EKS a node holds every address of its
    primary interface for pods, plus one per further network card (a p5.48xlarge: 50 + 31)."""
    info = instance_info(instance_type)
    if info is None:
        return 1
    if cluster.eks_name:
        return info.max_pods + 1 + max(0, info.efa_interfaces - 1)
    return max(1, info.efa_interfaces)


def _lifecycle_problem(cluster: Cluster, group: Group | None) -> str | None:
    """Why the group's lifecycle script cannot run (checked when an instance boots)."""
    config = (group.spec.get("LifeCycleConfig") if group else None) or {}
    uri, script = config.get("SourceS3Uri"), config.get("OnCreate")
    if not uri or not script:
        return None
    parsed = split_s3_uri(uri)
    if parsed is None:
        return f"Lifecycle configuration {uri} is not an S3 URI."
    bucket, prefix = parsed
    key = f"{prefix.strip('/')}/{script}" if prefix.strip("/") else script
    if not s3_object_exists(cluster.account, bucket, key):
        return (
            f"Lifecycle script {script} was not found at {uri} (s3://{bucket}/{key}); the "
            "instance could not run its OnCreate script."
        )
    return None


def _new_node(hp: HyperPod, cluster: Cluster, group: Group, instance_id: str) -> Node:
    placement = group.placement
    count = _ips_per_node(cluster, group.instance_type)
    ip, fits = ("10.0.0.4", True)
    if placement:
        ip, fits = hp.allocate_ip(placement["SubnetId"], placement["Cidr"], count)
    node = Node(
        instance_id=instance_id,
        group=group.name,
        instance_type=group.instance_type,
        capacity_type=group.capacity_type,
        launch_time=now(),
        subnet_id=placement.get("SubnetId", ""),
        zone=placement.get("Zone", f"{cluster.region}a"),
        zone_id=placement.get("ZoneId", ""),
        private_ip=ip,
        ip_count=count,
        ip_reserved=fits and bool(placement),
        logical_id=f"{group.name}-{uuid.uuid4().hex[:12]}" if cluster.continuous else None,
    )
    if fits and placement:
        sagemaker_network.attach(cluster, group, node)
    if not fits:
        node.fail_reason = (
            f"InsufficientFreeAddressesInSubnet: subnet {placement['SubnetId']} "
            f"({placement['Cidr']}) has no room for the {count} addresses a "
            f"{group.instance_type} takes."
        )
    return node


def _release(hp: HyperPod, batch: Batch, cluster: Cluster, node: Node) -> None:
    """An instance is gone (terminated, failed, or its cluster deleted): its subnet addresses
    and network interfaces are let go."""
    hp.release_ips(node)
    sagemaker_network.release(hp.app, batch, cluster, node)


def _launch(
    hp: HyperPod,
    batch: Batch,
    cluster: Cluster,
    group: Group,
    at: float = 0.0,
    operation: str | None = None,
) -> tuple[str, float]:
    """Schedule one new instance of `group`, launched `at` seconds from now.
    Returns its id and the seconds from now until it is ready (Running)."""
    instance_id = mint_instance_id()
    with_checks = bool(group.deep_health_checks)

    def create(b: Batch) -> None:
        if not hp.alive(cluster) or cluster.status == ClusterStatus.DELETING:
            return
        if cluster.groups.get(group.name) is not group:
            return
        node = _new_node(hp, cluster, group, instance_id)
        cluster.nodes[instance_id] = node
        cluster.event(
            "Instance",
            f"Launching instance {instance_id} ({group.instance_type}).",
            group=group.name,
            instance_id=instance_id,
            operation_id=operation,
        )

    if at <= 0:
        create(batch)
    else:
        batch.after(at, create)
    ready = at + NODE_LAUNCH_S
    batch.after(ready, lambda b: _boot(hp, b, cluster, instance_id, with_checks))
    if with_checks:
        ready += DEEP_HEALTH_CHECK_S
        batch.after(ready, lambda b: _checked(hp, b, cluster, instance_id))
    return instance_id, ready


def _live_node(
    hp: HyperPod, cluster: Cluster, instance_id: str, epoch: int, status: NodeStatus
) -> Node | None:
    if not hp.alive(cluster):
        return None
    node = cluster.nodes.get(instance_id)
    if node is None or node.epoch != epoch or node.status != status:
        return None
    return node


def _boot(
    hp: HyperPod, batch: Batch, cluster: Cluster, instance_id: str, with_checks: bool
) -> None:
    node = _live_node(hp, cluster, instance_id, 0, NodeStatus.PENDING)
    if node is None:
        return
    group = cluster.groups.get(node.group)
    problem = node.fail_reason or _lifecycle_problem(cluster, group)
    if problem:
        _launch_failed(hp, batch, cluster, node, problem)
        return
    node.registered = True
    if with_checks:
        node.status = NodeStatus.DEEP_HEALTH_CHECK
        node.health = Health.UNSCHEDULABLE
        node.deep_health_check = DeepHealthCheck.IN_PROGRESS
        cluster.event(
            "Instance",
            f"Instance {instance_id} started deep health checks "
            f"({', '.join(group.deep_health_checks if group else [])}).",
            group=node.group,
            instance_id=instance_id,
        )
    else:
        node.status = NodeStatus.RUNNING
        node.health = Health.SCHEDULABLE
        cluster.event(
            "Instance",
            f"Instance {instance_id} is running.",
            group=node.group,
            instance_id=instance_id,
        )
    _sync(hp, batch, cluster, node)


def _checked(hp: HyperPod, batch: Batch, cluster: Cluster, instance_id: str) -> None:
    node = _live_node(hp, cluster, instance_id, 0, NodeStatus.DEEP_HEALTH_CHECK)
    if node is None:
        return
    node.status = NodeStatus.RUNNING
    node.health = Health.SCHEDULABLE
    node.deep_health_check = DeepHealthCheck.PASSED
    cluster.event(
        "Instance",
        f"Instance {instance_id} passed deep health checks.",
        group=node.group,
        instance_id=instance_id,
    )
    _sync(hp, batch, cluster, node)


def _launch_failed(hp: HyperPod, batch: Batch, cluster: Cluster, node: Node, reason: str) -> None:
    node.status = NodeStatus.FAILURE
    node.message = reason
    _release(hp, batch, cluster, node)
    cluster.event(
        "Instance",
        f"Instance {node.instance_id} failed to launch: {reason}",
        level="Error",
        group=node.group,
        instance_id=node.instance_id,
    )
    if cluster.continuous or cluster.status != ClusterStatus.CREATING:
        return
    # Without continuous provisioning one failed instance fails the whole creation.
    cluster.status = ClusterStatus.FAILED
    cluster.failure_message = reason
    group = cluster.groups.get(node.group)
    if group is not None:
        group.status = GroupStatus.FAILED
    for other in list(cluster.nodes.values()):
        other.bump()
        _unsync(hp, batch, cluster, other)
        _release(hp, batch, cluster, other)
        del cluster.nodes[other.instance_id]
    cluster.event("Cluster", f"Cluster creation failed: {reason}", level="Error")


def _shutdown(
    hp: HyperPod, batch: Batch, cluster: Cluster, node: Node, health: Health | None = None
) -> None:
    """Terminate an instance: ShuttingDown now, gone after NODE_SHUTDOWN_S."""
    node.status = NodeStatus.SHUTTING_DOWN
    node.message = None
    if health is not None:
        node.health = health
    epoch = node.bump()
    _sync(hp, batch, cluster, node)
    instance_id = node.instance_id

    def terminate(b: Batch) -> None:
        gone = _live_node(hp, cluster, instance_id, epoch, NodeStatus.SHUTTING_DOWN)
        if gone is None:
            return
        _unsync(hp, b, cluster, gone)
        _release(hp, b, cluster, gone)
        del cluster.nodes[instance_id]
        cluster.event(
            "Instance",
            f"Instance {instance_id} terminated.",
            group=gone.group,
            instance_id=instance_id,
        )
        group = cluster.groups.get(gone.group)
        if (
            group is not None
            and group.status == GroupStatus.DELETING
            and not cluster.nodes_of(group.name)
        ):
            del cluster.groups[group.name]

    batch.after(NODE_SHUTDOWN_S, terminate)


# --- describing ---------------------------------------------------------------------------


def _current_count(cluster: Cluster, group: Group) -> int:
    return sum(1 for n in cluster.nodes_of(group.name) if n.counted)


def _plan_status(ctx: GapContext, arn: str) -> str | None:
    book = plan_book(ctx)
    with book.lock:
        plan = book.find(ctx.call.account, ctx.call.region, arn)
    return plan.status if plan else None


_DETAIL_RENAMED = (
    "InstanceCount",
    "MinInstanceCount",
    "KubernetesConfig",
    "InstanceRequirements",
    "AutoPatchConfig",
    "ImageId",
    "ImageReleaseVersion",
)


def _group_details(ctx: GapContext, cluster: Cluster, group: Group) -> dict[str, Any]:
    spec = group.spec
    details: dict[str, Any] = {k: v for k, v in spec.items() if k not in _DETAIL_RENAMED}
    current = _current_count(cluster, group)
    details.update(TargetCount=group.target, CurrentCount=current, Status=str(group.status))
    if spec.get("MinInstanceCount") is not None:
        details["MinCount"] = spec["MinInstanceCount"]
    if spec.get("InstanceRequirements"):
        types = spec["InstanceRequirements"]["InstanceTypes"]
        details["InstanceRequirements"] = {
            "CurrentInstanceTypes": types,
            "DesiredInstanceTypes": types,
        }
        counts = Counter(n.instance_type for n in cluster.nodes_of(group.name) if n.counted)
        details["InstanceTypeDetails"] = [
            {
                "InstanceType": t,
                "CurrentCount": counts[t],
                **(
                    {"ThreadsPerCore": spec["ThreadsPerCore"]} if spec.get("ThreadsPerCore") else {}
                ),
            }
            for t in types
        ]
    config = spec.get("KubernetesConfig")
    if config:
        labels, taints = config.get("Labels"), config.get("Taints")
        details["KubernetesConfig"] = {
            "CurrentLabels": labels,
            "DesiredLabels": labels,
            "CurrentTaints": taints,
            "DesiredTaints": taints,
        }
    patch = spec.get("AutoPatchConfig")
    if patch:
        renamed = {k: v for k, v in patch.items() if k != "PatchSchedule"}
        if patch.get("PatchSchedule"):
            renamed["CurrentPatchSchedule"] = renamed["DesiredPatchSchedule"] = patch[
                "PatchSchedule"
            ]
        details["AutoPatchConfig"] = renamed
    if spec.get("ImageId"):
        details["CurrentImageId"] = details["DesiredImageId"] = spec["ImageId"]
    if spec.get("ImageReleaseVersion"):
        details["CurrentImageReleaseVersion"] = spec["ImageReleaseVersion"]
        details["DesiredImageReleaseVersion"] = spec["ImageReleaseVersion"]
    if spec.get("TrainingPlanArn"):
        status = _plan_status(ctx, spec["TrainingPlanArn"])
        if status:
            details["TrainingPlanStatus"] = status
    if group.software_update_status:
        details["SoftwareUpdateStatus"] = group.software_update_status
    if cluster.continuous and group.status != GroupStatus.DELETING and current != group.target:
        details["ActiveOperations"] = {"Scaling": 1}
    return details


def _describe(ctx: GapContext, cluster: Cluster) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "ClusterArn": cluster.arn,
        "ClusterName": cluster.name,
        "ClusterStatus": str(cluster.status),
        "CreationTime": cluster.created,
        "InstanceGroups": [_group_details(ctx, cluster, g) for g in cluster.groups.values()],
    }
    if cluster.failure_message:
        answer["FailureMessage"] = cluster.failure_message
    for key in (
        "VpcConfig",
        "Orchestrator",
        "NodeRecovery",
        "NodeProvisioningMode",
        "ClusterRole",
        "TieredStorageConfig",
    ):
        if cluster.request.get(key) is not None:
            answer[key] = cluster.request[key]
    if cluster.request.get("AutoScaling"):
        answer["AutoScaling"] = {
            **cluster.request["AutoScaling"],
            "Status": cluster.autoscaling_status or "InService",
        }
    return answer


def _node_summary(cluster: Cluster, node: Node, logical_ids: bool = True) -> dict[str, Any]:
    status: dict[str, Any] = {"Status": str(node.status)}
    if node.message:
        status["Message"] = node.message
    summary: dict[str, Any] = {
        "InstanceGroupName": node.group,
        "InstanceId": node.instance_id,
        "InstanceType": node.instance_type,
        "LaunchTime": node.launch_time,
        "InstanceStatus": status,
        "PrivateDnsHostname": _dns(cluster, node),
    }
    if logical_ids and node.logical_id:
        summary["NodeLogicalId"] = node.logical_id
    if node.last_software_update:
        summary["LastSoftwareUpdateTime"] = node.last_software_update
    return summary


def _node_details(cluster: Cluster, node: Node) -> dict[str, Any]:
    details = _node_summary(cluster, node)
    group = cluster.groups.get(node.group)
    spec = group.spec if group else {}
    for key in (
        "LifeCycleConfig",
        "OverrideVpcConfig",
        "ThreadsPerCore",
        "InstanceStorageConfigs",
        "NetworkInterface",
    ):
        if spec.get(key) is not None:
            details[key] = spec[key]
    details["PrivatePrimaryIp"] = node.private_ip
    details["Placement"] = {"AvailabilityZone": node.zone}
    if node.zone_id:
        details["Placement"]["AvailabilityZoneId"] = node.zone_id
    details["CapacityType"] = node.capacity_type
    config = spec.get("KubernetesConfig")
    if config:
        labels, taints = config.get("Labels"), config.get("Taints")
        details["KubernetesConfig"] = {
            "CurrentLabels": labels,
            "DesiredLabels": labels,
            "CurrentTaints": taints,
            "DesiredTaints": taints,
        }
    if spec.get("ImageId"):
        details["CurrentImageId"] = details["DesiredImageId"] = spec["ImageId"]
    return details


def _find_node(cluster: Cluster, node_id: str | None, logical_id: str | None) -> Node | None:
    if node_id:
        return cluster.nodes.get(node_id)
    return next((n for n in cluster.nodes.values() if n.logical_id == logical_id), None)


# --- the API --------------------------------------------------------------------------------


def _desired(groups: list[Group]) -> list[tuple[str, str, int, bool]]:
    return [
        (g.instance_type, g.capacity_type, g.target, bool(g.spec.get("TrainingPlanArn")))
        for g in groups
    ]


def _new_group(spec: dict[str, Any], placement: dict[str, str]) -> Group:
    return Group(
        spec=copy.deepcopy(spec),
        status=GroupStatus.CREATING,
        target=int(spec["InstanceCount"]),
        placement=placement,
    )


@answers(SERVICE, "CreateCluster")
def _create_cluster(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any]:
    hp = _state(ctx)
    name = params["ClusterName"]
    if params.get("RestrictedInstanceGroups") or params.get("RestrictedInstanceGroupsConfig"):
        raise validation(
            "RestrictedInstanceGroups: restricted instance groups (Nova) are not "
            "modelled by the local AWS."
        )
    specs = params.get("InstanceGroups") or []
    if not specs:
        raise validation("InstanceGroups: a cluster needs at least one instance group.")
    names = [s["InstanceGroupName"] for s in specs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise validation(
            f"InstanceGroups: instance group names must be unique "
            f"({', '.join(duplicates)} repeated)."
        )
    request = {
        k: v for k, v in params.items() if k not in ("InstanceGroups", "Tags", "ClusterName")
    }

    def create(batch: Batch) -> dict[str, Any]:
        if hp.find(ctx.call.account, ctx.call.region, name) is not None:
            raise AwsError(
                "ResourceInUse",
                f"Resource Already Exists: Cluster with name {name} "
                "already exists. Choose a different name.",
            )
        _, vpc_id = _check_cluster_level(ctx, request)
        continuous = request.get("NodeProvisioningMode") == "Continuous"
        groups = []
        for index, spec in enumerate(specs):
            placement = _check_group(
                ctx, hp, request, spec, f"InstanceGroups.{index}", vpc_id, continuous, name
            )
            groups.append(_new_group(spec, placement))
        _check_quotas(ctx, hp, name, _desired(groups))
        arn = f"arn:aws:sagemaker:{ctx.call.region}:{ctx.call.account}:cluster/{mint_cluster_id()}"
        cluster = Cluster(
            name=name,
            arn=arn,
            account=ctx.call.account,
            region=ctx.call.region,
            created=now(),
            request=copy.deepcopy(request),
            status=ClusterStatus.CREATING,
            tags=list(params.get("Tags") or []),
        )
        if request.get("AutoScaling"):
            cluster.autoscaling_status = "Creating"
            if request["AutoScaling"].get("Mode") == "Enable":
                batch.effect(lambda: karpenter.enable(hp, cluster.eks_name, karpenter_scale))
        hp.in_region(ctx.call.account, ctx.call.region)[name] = cluster
        operation = str(uuid.uuid4())
        cluster.event("Cluster", f"Cluster {name} is being created.", operation_id=operation)
        ready = [CLUSTER_CREATING_S]
        for group in groups:
            cluster.groups[group.name] = group
            cluster.event(
                "InstanceGroup",
                f"Instance group {group.name}: {group.target} x {group.instance_type}.",
                group=group.name,
                operation_id=operation,
            )
            for _ in range(group.target):
                ready.append(_launch(hp, batch, cluster, group, operation=operation)[1])
        at = CLUSTER_CREATING_S if continuous else max(ready)
        batch.after(at, lambda b: _cluster_ready(cluster))
        return {"ClusterArn": arn}

    return hp.run(create)


def _cluster_ready(cluster: Cluster) -> None:
    if cluster.status != ClusterStatus.CREATING:
        return
    cluster.status = ClusterStatus.IN_SERVICE
    for group in cluster.groups.values():
        if group.status == GroupStatus.CREATING:
            group.status = GroupStatus.IN_SERVICE
    if cluster.autoscaling_status == "Creating":
        cluster.autoscaling_status = "InService"
    cluster.event("Cluster", f"Cluster {cluster.name} is InService.")


@answers(SERVICE, "DescribeCluster")
def _describe_cluster(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any]:
    hp = _state(ctx)
    with hp.lock:
        return _describe(ctx, _cluster(hp, ctx, params["ClusterName"]))


@answers(SERVICE, "ListClusters")
def _list_clusters(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any]:
    hp = _state(ctx)
    after = parse_time(params.get("CreationTimeAfter"))
    before = parse_time(params.get("CreationTimeBefore"))
    with hp.lock:
        clusters = [
            c
            for c in hp.in_region(ctx.call.account, ctx.call.region).values()
            if (after is None or c.created > after)
            and (before is None or c.created < before)
            and (not params.get("NameContains") or params["NameContains"] in c.name)
            and (
                not params.get("TrainingPlanArn")
                or any(
                    g.spec.get("TrainingPlanArn") == params["TrainingPlanArn"]
                    for g in c.groups.values()
                )
            )
        ]
        by_name = params.get("SortBy") == "NAME"
        clusters.sort(
            key=(lambda c: c.name) if by_name else (lambda c: c.created),
            reverse=params.get("SortOrder") == "Descending",
        )
        return ctx.page(clusters, "ClusterSummaries", render=_cluster_summary)


def _cluster_summary(cluster: Cluster) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "ClusterArn": cluster.arn,
        "ClusterName": cluster.name,
        "CreationTime": cluster.created,
        "ClusterStatus": str(cluster.status),
    }
    groups = cluster.groups.values()
    plans = sorted({g.spec["TrainingPlanArn"] for g in groups if g.spec.get("TrainingPlanArn")})
    if plans:
        summary["TrainingPlanArns"] = plans
    return summary


@answers(SERVICE, "DeleteCluster")
def _delete_cluster(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any]:
    hp = _state(ctx)

    def delete(batch: Batch) -> dict[str, Any]:
        cluster = _cluster(hp, ctx, params["ClusterName"])
        if cluster.status == ClusterStatus.DELETING:
            return {"ClusterArn": cluster.arn}
        cluster.status = ClusterStatus.DELETING
        cluster.event("Cluster", f"Cluster {cluster.name} is being deleted.")
        for node in cluster.nodes.values():
            node.status = NodeStatus.SHUTTING_DOWN
            node.bump()
            _sync(hp, batch, cluster, node)

        def gone(b: Batch) -> None:
            if not hp.alive(cluster):
                return
            for node in cluster.nodes.values():
                _unsync(hp, b, cluster, node)
                _release(hp, b, cluster, node)
            del hp.in_region(cluster.account, cluster.region)[cluster.name]

        batch.after(CLUSTER_DELETING_S, gone)
        return {"ClusterArn": cluster.arn}

    return hp.run(delete)


def _refuse_while_checking(cluster: Cluster) -> None:
    checking = sorted(
        n.instance_id for n in cluster.nodes.values() if n.status == NodeStatus.DEEP_HEALTH_CHECK
    )
    if checking:
        raise validation(
            f"Deep health checks are in progress on {len(checking)} instance(s) of "
            f"cluster {cluster.name} ({', '.join(checking[:5])}); wait until they "
            "finish before updating the cluster."
        )


def _same(old: Any, new: Any) -> bool:
    return old == new


def _check_immutable(group: Group, spec: dict[str, Any], where: str) -> None:
    for key in IMMUTABLE:
        if key in spec and not _same(group.spec.get(key), spec[key]):
            what = {
                "CapacityRequirements": "capacity type (Spot or OnDemand)",
                "NetworkInterface": "network interface type",
                "OverrideVpcConfig": "subnets and security groups",
            }[key]
            raise validation(
                f"{where}.{key}: the {what} of instance group {group.name} cannot "
                "be changed after the group is created."
            )


def _scale(hp: HyperPod, batch: Batch, cluster: Cluster, group: Group, operation: str) -> float:
    """Bring the group's instances to its target; returns seconds until the new ones are ready."""
    live = [
        n
        for n in cluster.nodes_of(group.name)
        if n.status not in (NodeStatus.SHUTTING_DOWN, NodeStatus.FAILURE)
    ]
    ready = 0.0
    for _ in range(group.target - len(live)):
        ready = max(ready, _launch(hp, batch, cluster, group, operation=operation)[1])
    surplus = len(live) - group.target
    if surplus > 0:
        # Instances still launching go first, then the newest.
        victims = sorted(live, key=lambda n: (n.registered, -n.launch_time.timestamp()))
        for node in victims[:surplus]:
            _shutdown(hp, batch, cluster, node)
    return ready


def karpenter_scale(hp: HyperPod, cluster: Cluster, group_name: str, target: int) -> None:
    """HyperPod-managed Karpenter's side of BatchAddClusterNodes / BatchDeleteClusterNodes
    (as the cluster's ClusterRole, sandbox/gaps/karpenter.py): the group's target becomes
    `target` and its instances follow (launching ones and the newest go first)."""

    def scale(batch: Batch) -> None:
        group = cluster.groups.get(group_name)
        if not hp.alive(cluster) or group is None or group.target == target:
            return
        cluster.event(
            "InstanceGroup",
            f"Karpenter scales instance group {group_name} from {group.target} to {target}.",
            group=group_name,
        )
        group.target = target
        _scale(hp, batch, cluster, group, "karpenter")

    hp.run(scale)


@answers(SERVICE, "UpdateCluster")
def _update_cluster(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any]:
    hp = _state(ctx)
    if params.get("RestrictedInstanceGroups"):
        raise validation(
            "RestrictedInstanceGroups: restricted instance groups (Nova) are not "
            "modelled by the local AWS."
        )

    def update(batch: Batch) -> dict[str, Any]:
        cluster = _cluster(hp, ctx, params["ClusterName"])
        if cluster.status in (ClusterStatus.CREATING, ClusterStatus.DELETING, ClusterStatus.FAILED):
            raise _conflict(
                f"Cluster {cluster.name} is {cluster.status}; it can be updated "
                "only when InService."
            )
        if not cluster.continuous and cluster.status != ClusterStatus.IN_SERVICE:
            raise _conflict(
                f"Cluster {cluster.name} is {cluster.status}; wait until it is InService."
            )
        _refuse_while_checking(cluster)
        if params.get("Orchestrator") and params["Orchestrator"] != cluster.request.get(
            "Orchestrator"
        ):
            raise validation(
                "Orchestrator: the EKS cluster a HyperPod cluster is associated "
                "with cannot be changed after the cluster is created."
            )
        request = {**cluster.request, **{k: params[k] for k in UPDATABLE if k in params}}
        _, vpc_id = _check_cluster_level(ctx, request)
        continuous = request.get("NodeProvisioningMode") == "Continuous"
        to_delete = list(params.get("InstanceGroupsToDelete") or [])
        specs = list(params.get("InstanceGroups") or [])
        for name in to_delete:
            if name not in cluster.groups:
                raise validation(
                    f"InstanceGroupsToDelete: cluster {cluster.name} has no instance group {name}."
                )
        names = [s["InstanceGroupName"] for s in specs]
        clash = sorted(set(names) & set(to_delete))
        if clash:
            raise validation(
                f"InstanceGroups: {', '.join(clash)} cannot be both updated and deleted."
            )
        if len(set(names)) != len(names):
            raise validation("InstanceGroups: instance group names must be unique.")
        planned: dict[str, Group] = {}
        for index, spec in enumerate(specs):
            where = f"InstanceGroups.{index}"
            existing = cluster.groups.get(spec["InstanceGroupName"])
            merged = dict(spec)
            if existing is not None:
                if existing.status == GroupStatus.DELETING:
                    raise _conflict(f"Instance group {existing.name} is being deleted.")
                _check_immutable(existing, spec, where)
                for key in IMMUTABLE:
                    if key not in merged and key in existing.spec:
                        merged[key] = existing.spec[key]
            placement = _check_group(
                ctx, hp, request, merged, where, vpc_id, continuous, cluster.name
            )
            moved = existing is not None and existing.placement and placement
            if moved and placement["Zone"] != existing.placement["Zone"]:
                raise validation(
                    f"{where}.TrainingPlanArn: instance group {existing.name} runs in "
                    f"{existing.placement['Zone']}; its training plan must reserve capacity there."
                )
            group = _new_group(merged, existing.placement if existing else placement)
            planned[group.name] = group
        after = [
            planned.get(g.name, g)
            for g in cluster.groups.values()
            if g.name not in to_delete and g.status != GroupStatus.DELETING
        ]
        after += [g for name, g in planned.items() if name not in cluster.groups]
        _check_quotas(ctx, hp, cluster.name, _desired(after))

        operation = str(uuid.uuid4())
        cluster.request = copy.deepcopy(request)
        if "AutoScaling" in params:
            cluster.autoscaling_status = "InService"
            if params["AutoScaling"].get("Mode") == "Enable":
                batch.effect(lambda: karpenter.enable(hp, cluster.eks_name, karpenter_scale))
        cluster.event(
            "Cluster", f"Cluster {cluster.name} is being updated.", operation_id=operation
        )
        ready = 0.0
        changed: list[str] = []
        for name in to_delete:
            group = cluster.groups[name]
            group.status = GroupStatus.DELETING
            group.target = 0
            nodes = cluster.nodes_of(name)
            for node in nodes:
                if node.status != NodeStatus.SHUTTING_DOWN:
                    _shutdown(hp, batch, cluster, node)
            if not nodes:
                del cluster.groups[name]
            cluster.event(
                "InstanceGroup",
                f"Instance group {name} is being deleted.",
                group=name,
                operation_id=operation,
            )
        for name, planned_group in planned.items():
            existing = cluster.groups.get(name)
            if existing is None:
                cluster.groups[name] = planned_group
                group_ready = _scale(hp, batch, cluster, planned_group, operation)
                if continuous:
                    batch.after(
                        max(group_ready, CLUSTER_UPDATING_S),
                        lambda b, g=planned_group: _group_ready(cluster, g),
                    )
                else:
                    changed.append(name)
                ready = max(ready, group_ready)
                cluster.event(
                    "InstanceGroup",
                    f"Instance group {name} is being created.",
                    group=name,
                    operation_id=operation,
                )
                continue
            old_type = existing.instance_type
            labels_before = existing.spec.get("KubernetesConfig")
            existing.spec = planned_group.spec
            existing.target = planned_group.target
            if existing.instance_type != old_type:
                for node in cluster.nodes_of(name):
                    if node.status != NodeStatus.SHUTTING_DOWN:
                        node.bump()
                        _shutdown(hp, batch, cluster, node, Health.PENDING_REPLACEMENT)
            ready = max(ready, _scale(hp, batch, cluster, existing, operation))
            if existing.spec.get("KubernetesConfig") != labels_before:
                for node in cluster.nodes_of(name):
                    _sync(hp, batch, cluster, node)
            if not continuous:
                changed.append(name)
        if not continuous:
            cluster.status = ClusterStatus.UPDATING
            token = cluster.update_token = str(uuid.uuid4())
            for name in changed:
                if cluster.groups[name].status != GroupStatus.CREATING:
                    cluster.groups[name].status = GroupStatus.UPDATING
            batch.after(max(ready, CLUSTER_UPDATING_S), lambda b: _update_done(cluster, token))
        return {"ClusterArn": cluster.arn}

    return hp.run(update)


def _group_ready(cluster: Cluster, group: Group) -> None:
    if cluster.groups.get(group.name) is group and group.status == GroupStatus.CREATING:
        group.status = GroupStatus.IN_SERVICE
        cluster.event(
            "InstanceGroup", f"Instance group {group.name} is InService.", group=group.name
        )


def _update_done(cluster: Cluster, token: str) -> None:
    if cluster.status != ClusterStatus.UPDATING or cluster.update_token != token:
        return
    cluster.status = ClusterStatus.IN_SERVICE
    cluster.update_token = None
    for group in cluster.groups.values():
        if group.status in (GroupStatus.UPDATING, GroupStatus.CREATING):
            group.status = GroupStatus.IN_SERVICE
    cluster.event("Cluster", f"Cluster {cluster.name} update finished.")


@answers(SERVICE, "ListClusterNodes")
def _list_cluster_nodes(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any]:
    hp = _state(ctx)
    after = parse_time(params.get("CreationTimeAfter"))
    before = parse_time(params.get("CreationTimeBefore"))
    contains = params.get("InstanceGroupNameContains")
    with hp.lock:
        cluster = _cluster(hp, ctx, params["ClusterName"])
        nodes = [
            n
            for n in cluster.nodes.values()
            if (after is None or n.launch_time > after)
            and (before is None or n.launch_time < before)
            and (not contains or contains in n.group)
        ]
        by_name = params.get("SortBy") == "NAME"
        nodes.sort(
            key=(lambda n: n.instance_id) if by_name else (lambda n: n.launch_time),
            reverse=params.get("SortOrder") == "Descending",
        )
        logical_ids = bool(params.get("IncludeNodeLogicalIds"))
        return ctx.page(
            nodes,
            "ClusterNodeSummaries",
            render=lambda n: _node_summary(cluster, n, logical_ids),
        )


@answers(SERVICE, "DescribeClusterNode")
def _describe_cluster_node(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any]:
    hp = _state(ctx)
    if not params.get("NodeId") and not params.get("NodeLogicalId"):
        raise validation("Either NodeId or NodeLogicalId must be provided.")
    with hp.lock:
        cluster = _cluster(hp, ctx, params["ClusterName"])
        node = _find_node(cluster, params.get("NodeId"), params.get("NodeLogicalId"))
        if node is None:
            wanted = params.get("NodeId") or params.get("NodeLogicalId")
            raise AwsError(
                "ResourceNotFound", f"Node {wanted} not found in cluster {cluster.name}."
            )
        return {"NodeDetails": _node_details(cluster, node)}


def _node_targets(params: dict[str, Any], limit: int | None = None) -> tuple[list[str], list[str]]:
    ids = list(params.get("NodeIds") or [])
    logical = list(params.get("NodeLogicalIds") or [])
    if not ids and not logical:
        raise validation("Either NodeIds or NodeLogicalIds must be provided.")
    if limit is not None and len(ids) > limit:
        raise validation(
            f"NodeIds: at most {limit} nodes can be deleted in one request "
            f"({len(ids)} given); ask AWS Support to delete more."
        )
    return ids, logical


def _batch_nodes(
    ctx: GapContext,
    params: dict[str, Any],
    act: Any,
    codes: tuple[str, str],
    limit: int | None = None,
    error_key: str = "ErrorCode",
) -> dict[str, Any]:
    """Shared shape of the node batch calls: `act(batch, cluster, node)` answers None when it
    acted, or an error message for InvalidStatus."""
    hp = _state(ctx)
    ids, logical = _node_targets(params, limit)
    not_found, bad_status = codes

    def run(batch: Batch) -> dict[str, Any]:
        cluster = _cluster(hp, ctx, params["ClusterName"])
        answer: dict[str, Any] = {}
        for key, wanted, by_logical in (("", ids, False), ("NodeLogicalIds", logical, True)):
            ok_key = f"Successful{key}" if key else "Successful"
            failed_key = f"Failed{key}" if key else "Failed"
            id_key = "NodeLogicalId" if by_logical else "NodeId"
            for node_id in wanted:
                node = _find_node(
                    cluster, None if by_logical else node_id, node_id if by_logical else None
                )
                if node is None:
                    answer.setdefault(failed_key, []).append(
                        {
                            id_key: node_id,
                            error_key: not_found,
                            "Message": f"Node {node_id} not found in cluster {cluster.name}.",
                        }
                    )
                    continue
                problem = act(batch, cluster, node)
                if problem:
                    answer.setdefault(failed_key, []).append(
                        {id_key: node_id, error_key: bad_status, "Message": problem}
                    )
                else:
                    answer.setdefault(ok_key, []).append(node_id)
        return answer

    return hp.run(run)


@answers(SERVICE, "BatchDeleteClusterNodes")
def _batch_delete(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any]:
    hp = _state(ctx)

    def act(batch: Batch, cluster: Cluster, node: Node) -> str | None:
        if node.status == NodeStatus.SHUTTING_DOWN:
            return f"Node {node.instance_id} is already shutting down."
        group = cluster.groups.get(node.group)
        if group is not None:
            group.target = max(0, group.target - 1)
        _shutdown(hp, batch, cluster, node)
        cluster.event(
            "Instance",
            f"Instance {node.instance_id} is being deleted.",
            group=node.group,
            instance_id=node.instance_id,
        )
        return None

    return _batch_nodes(
        ctx,
        params,
        act,
        ("NodeIdNotFound", "InvalidNodeStatus"),
        limit=MAX_DELETE_NODES,
        error_key="Code",
    )


@answers(SERVICE, "BatchRebootClusterNodes")
def _batch_reboot(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any]:
    hp = _state(ctx)

    def act(batch: Batch, cluster: Cluster, node: Node) -> str | None:
        if node.status != NodeStatus.RUNNING:
            return f"Node {node.instance_id} is {node.status}; only Running nodes can be rebooted."
        node.status = NodeStatus.PENDING
        node.message = "Rebooting instance"
        node.health = Health.PENDING_REBOOT
        epoch = node.bump()
        _sync(hp, batch, cluster, node)
        cluster.event(
            "Instance",
            f"Instance {node.instance_id} is rebooting.",
            group=node.group,
            instance_id=node.instance_id,
        )
        instance_id = node.instance_id

        def rebooted(b: Batch) -> None:
            back = _live_node(hp, cluster, instance_id, epoch, NodeStatus.PENDING)
            if back is None:
                return
            back.status = NodeStatus.RUNNING
            back.message = None
            back.health = Health.SCHEDULABLE
            cluster.event(
                "Instance",
                f"Instance {instance_id} rebooted and is running.",
                group=back.group,
                instance_id=instance_id,
            )
            _sync(hp, b, cluster, back)

        batch.after(NODE_REBOOT_S, rebooted)
        return None

    return _batch_nodes(ctx, params, act, ("InstanceIdNotFound", "InvalidInstanceStatus"))


@answers(SERVICE, "BatchReplaceClusterNodes")
def _batch_replace(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any]:
    hp = _state(ctx)

    def act(batch: Batch, cluster: Cluster, node: Node) -> str | None:
        if node.status not in (NodeStatus.RUNNING, NodeStatus.FAILURE):
            return (
                f"Node {node.instance_id} is {node.status}; only Running or failed nodes "
                "can be replaced."
            )
        group = cluster.groups.get(node.group)
        _shutdown(hp, batch, cluster, node, Health.PENDING_REPLACEMENT)
        cluster.event(
            "Instance",
            f"Instance {node.instance_id} is being replaced.",
            group=node.group,
            instance_id=node.instance_id,
        )
        if group is not None:
            _launch(hp, batch, cluster, group, at=NODE_SHUTDOWN_S)
        return None

    return _batch_nodes(ctx, params, act, ("InstanceIdNotFound", "InvalidInstanceStatus"))


@answers(SERVICE, "BatchAddClusterNodes")
def _batch_add(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any]:
    hp = _state(ctx)

    def add(batch: Batch) -> dict[str, Any]:
        cluster = _cluster(hp, ctx, params["ClusterName"])
        token = params.get("ClientToken")
        if token and (cluster.arn, token) in hp.client_tokens:
            return hp.client_tokens[(cluster.arn, token)]
        if not cluster.continuous:
            raise validation(
                "BatchAddClusterNodes is only supported for clusters whose "
                "NodeProvisioningMode is Continuous."
            )
        if cluster.status not in (ClusterStatus.IN_SERVICE, ClusterStatus.UPDATING):
            raise _conflict(f"Cluster {cluster.name} is {cluster.status}.")
        answer: dict[str, Any] = {"Successful": [], "Failed": []}
        accepted: list[tuple[Group, int, dict[str, Any]]] = []
        for item in params["NodesToAdd"]:
            group = cluster.groups.get(item["InstanceGroupName"])
            failure = None
            if group is None or group.status == GroupStatus.DELETING:
                failure = ("InstanceGroupNotFound", "Instance group not found.")
            elif (
                item.get("AvailabilityZones")
                and group.placement.get("Zone") not in item["AvailabilityZones"]
            ):
                failure = (
                    "IncompatibleAvailabilityZones",
                    f"Instance group {group.name} is in {group.placement.get('Zone')}.",
                )
            elif item.get("InstanceTypes") and group.instance_type not in item["InstanceTypes"]:
                failure = (
                    "IncompatibleInstanceTypes",
                    f"Instance group {group.name} runs {group.instance_type}.",
                )
            if failure is not None:
                answer["Failed"].append(
                    {
                        "InstanceGroupName": item["InstanceGroupName"],
                        "ErrorCode": failure[0],
                        "FailedCount": item["IncrementTargetCountBy"],
                        "Message": failure[1],
                    }
                )
                continue
            accepted.append((group, item["IncrementTargetCountBy"], item))
        desired = []
        for g in cluster.groups.values():
            extra = sum(n for grp, n, _ in accepted if grp is g)
            desired.append(
                (
                    g.instance_type,
                    g.capacity_type,
                    g.target + extra,
                    bool(g.spec.get("TrainingPlanArn")),
                )
            )
        _check_quotas(ctx, hp, cluster.name, desired)
        operation = str(uuid.uuid4())
        for group, count, item in accepted:
            group.target += count
            for _ in range(count):
                instance_id, _ready = _launch(hp, batch, cluster, group, operation=operation)
                node = cluster.nodes[instance_id]
                answer["Successful"].append(
                    {
                        "NodeLogicalId": node.logical_id,
                        "InstanceGroupName": group.name,
                        "Status": str(node.status),
                        **(
                            {"AvailabilityZones": item["AvailabilityZones"]}
                            if item.get("AvailabilityZones")
                            else {}
                        ),
                        **(
                            {"InstanceTypes": item["InstanceTypes"]}
                            if item.get("InstanceTypes")
                            else {}
                        ),
                    }
                )
        if token:
            hp.client_tokens[(cluster.arn, token)] = answer
        return answer

    return hp.run(add)


@answers(SERVICE, "UpdateClusterSoftware")
def _update_software(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any]:
    hp = _state(ctx)

    def update(batch: Batch) -> dict[str, Any]:
        cluster = _cluster(hp, ctx, params["ClusterName"])
        if cluster.status != ClusterStatus.IN_SERVICE:
            raise _conflict(
                f"Cluster {cluster.name} is {cluster.status}; the software can be "
                "updated only when it is InService."
            )
        _refuse_while_checking(cluster)
        wanted = params.get("InstanceGroups")
        names = [g["InstanceGroupName"] for g in wanted] if wanted else list(cluster.groups)
        for name in names:
            if name not in cluster.groups:
                raise validation(
                    f"InstanceGroups: cluster {cluster.name} has no instance group {name}."
                )
        versions = {g["InstanceGroupName"]: g.get("ImageReleaseVersion") for g in wanted or []}
        cluster.status = ClusterStatus.SYSTEM_UPDATING
        epochs: dict[str, int] = {}
        for name in names:
            group = cluster.groups[name]
            group.status = GroupStatus.SYSTEM_UPDATING
            group.software_update_status = "InProgress"
            if params.get("ImageId"):
                group.spec["ImageId"] = params["ImageId"]
            if versions.get(name):
                group.spec["ImageReleaseVersion"] = versions[name]
            for node in cluster.nodes_of(name):
                if node.status == NodeStatus.RUNNING:
                    node.status = NodeStatus.SYSTEM_UPDATING
                    epochs[node.instance_id] = node.bump()
                    _sync(hp, batch, cluster, node)
        cluster.event("Cluster", f"Software update of {', '.join(names)} started.")

        def done(b: Batch) -> None:
            if not hp.alive(cluster):
                return
            for instance_id, epoch in epochs.items():
                node = _live_node(hp, cluster, instance_id, epoch, NodeStatus.SYSTEM_UPDATING)
                if node is not None:
                    node.status = NodeStatus.RUNNING
                    node.last_software_update = now()
                    _sync(hp, b, cluster, node)
            for name in names:
                group = cluster.groups.get(name)
                if group is not None:
                    group.status = GroupStatus.IN_SERVICE
                    group.software_update_status = "Succeeded"
            if cluster.status == ClusterStatus.SYSTEM_UPDATING:
                cluster.status = ClusterStatus.IN_SERVICE
            cluster.event("Cluster", "Software update finished.")

        batch.after(SOFTWARE_UPDATE_S, done)
        return {"ClusterArn": cluster.arn}

    return hp.run(update)


def _event_summary(cluster: Cluster, event: Any) -> dict[str, Any]:
    summary = {
        "EventId": event.event_id,
        "ClusterArn": cluster.arn,
        "ClusterName": cluster.name,
        "ResourceType": event.resource_type,
        "EventTime": event.time,
        "Description": event.description,
        "EventLevel": event.level,
    }
    if event.group:
        summary["InstanceGroupName"] = event.group
    if event.instance_id:
        summary["InstanceId"] = event.instance_id
    if event.operation_id:
        summary["OperationId"] = event.operation_id
    return summary


@answers(SERVICE, "ListClusterEvents")
def _list_events(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any]:
    hp = _state(ctx)
    after = parse_time(params.get("EventTimeAfter"))
    before = parse_time(params.get("EventTimeBefore"))
    with hp.lock:
        cluster = _cluster(hp, ctx, params["ClusterName"])
        events = [
            e
            for e in cluster.events
            if (after is None or e.time > after)
            and (before is None or e.time < before)
            and (not params.get("InstanceGroupName") or e.group == params["InstanceGroupName"])
            and (not params.get("NodeId") or e.instance_id == params["NodeId"])
            and (not params.get("ResourceType") or e.resource_type == params["ResourceType"])
            and (not params.get("OperationId") or e.operation_id == params["OperationId"])
        ]
        events.sort(
            key=lambda e: e.time, reverse=params.get("SortOrder", "Descending") == "Descending"
        )
        return ctx.page(events, "Events", render=lambda e: _event_summary(cluster, e))


# --- tags on cluster ARNs (other SageMaker resources stay moto's) -------------------------


@answers(SERVICE, "ListTags")
def _list_tags(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any] | Reply:
    arn = params["ResourceArn"]
    if sagemaker_mlflow.is_tracking_server_arn(arn):
        return sagemaker_mlflow.tags_of(ctx, arn)
    if sagemaker_governance.is_governance_arn(arn):
        return sagemaker_governance.tags_of(ctx, arn)
    if CLUSTER_ARN.fullmatch(arn) is None:
        return ctx.moto()
    hp = _state(ctx)
    with hp.lock:
        cluster = hp.find_by_arn(arn)
        if cluster is None:
            raise AwsError("ResourceNotFound", f"Resource {arn} not found.")
        return {"Tags": list(cluster.tags)}
