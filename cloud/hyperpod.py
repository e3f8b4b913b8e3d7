"""SageMaker HyperPod clusters on EKS: the create request, ensure, readers, delete.

Every cluster hypd creates is ready for managed autoscaling from its first day, because AWS
fixes these at creation: `NodeProvisioningMode: Continuous`, `NodeRecovery: Automatic`
(node auto-recovery) and a `ClusterRole` HyperPod assumes to add and delete nodes
(`sagemaker:BatchAddClusterNodes` / `BatchDeleteClusterNodes`). Managed autoscaling itself
(`AutoScaling: {Mode: Enable, AutoScalerType: Karpenter}`) manages HyperPod instance groups
only, not general EC2 capacity.

botocore fields used (sagemaker): CreateCluster `ClusterName`, `InstanceGroups`,
`VpcConfig.{SecurityGroupIds, Subnets}`, `Tags`, `Orchestrator.Eks.ClusterArn`,
`NodeRecovery`, `NodeProvisioningMode`, `ClusterRole`, `AutoScaling.{Mode, AutoScalerType}`;
DescribeCluster `ClusterStatus`, `FailureMessage`, `InstanceGroups[].{CurrentCount,
TargetCount, Status, ...}`; ListClusterNodes `ClusterNodeSummaries[].InstanceStatus.Status`;
ListClusterEvents `Events[]`; ListTags; DeleteCluster.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import botocore.session
from botocore.exceptions import ClientError

from cloud.aws import (
    CLUSTER_TAG,
    MANAGED_BY,
    MANAGED_BY_VALUE,
    error_code,
    is_not_found,
    is_transient,
    tag_dict,
    tags_for,
)
from cloud.capacity import capacity_type_of, interface_mode_of, labels_of, taints_of
from cloud.errors import NotYet, Refusal
from vocabulary import patterns

NODE_RECOVERY = "Automatic"
NODE_PROVISIONING_MODE = "Continuous"
AUTOSCALER_TYPE = "Karpenter"
MAX_INSTANCE_GROUPS = 100

# ClusterStatus values
CREATING = "Creating"
IN_SERVICE = "InService"
UPDATING = "Updating"
SYSTEM_UPDATING = "SystemUpdating"
DELETING = "Deleting"
FAILED = "Failed"
ROLLING_BACK = "RollingBack"
READY_STATUSES = frozenset({IN_SERVICE})
BUSY_STATUSES = frozenset({CREATING, UPDATING, SYSTEM_UPDATING, DELETING, ROLLING_BACK})
FAILED_STATUSES = frozenset({FAILED})

EVENTS_SHOWN = 20


class HyperPodError(Refusal):
    """A HyperPod request hypd refuses, or a cluster that is not hypd's to touch."""

    default_code = "hyperpod_conflict"


# -- the request -------------------------------------------------------------------------------


def cluster_tags(cluster: str, **extra: str) -> list[dict[str, str]]:
    """`hypd:managed-by=hypd`, `hypd:cluster=<cluster>` and extras."""
    return tags_for(CLUSTER_TAG, cluster, **extra)


def cluster_request(
    name: str,
    eks_cluster_arn: str,
    security_group_ids: Sequence[str],
    subnet_ids: Sequence[str],
    instance_groups: Sequence[Mapping[str, Any]],
    cluster_role_arn: str,
    *,
    owner: str | None = None,
    tags: Mapping[str, str] | None = None,
    autoscaling: bool = False,
) -> dict[str, Any]:
    """CreateCluster's parameters for a HyperPod cluster named `name` on the EKS cluster.

    `instance_groups` come from `cloud.capacity.instance_group_spec` (each carries its own
    `OverrideVpcConfig` and deep health checks); `security_group_ids` / `subnet_ids` are the
    cluster's `VpcConfig`. `owner` is the hypd cluster the tags name (default: `name`).
    `autoscaling` turns managed autoscaling on now; otherwise it can be enabled later with
    UpdateCluster, since the cluster is created ready for it.
    """
    if not patterns.fits(patterns.HYPERPOD_CLUSTER_NAME, name):
        raise HyperPodError(f"HyperPod cluster name {name!r} must be 1-63 letters, digits and "
                            "hyphens, starting and ending with a letter or digit",
                            "validation_failed")
    if not patterns.fits(patterns.EKS_CLUSTER_ARN, eks_cluster_arn):
        raise HyperPodError(f"{eks_cluster_arn!r} is not an EKS cluster ARN", "validation_failed")
    if not patterns.fits(patterns.ROLE_ARN, cluster_role_arn):
        raise HyperPodError(f"cluster role {cluster_role_arn!r} is not an IAM role ARN",
                            "validation_failed")
    groups = [dict(g) for g in instance_groups]
    if not 1 <= len(groups) <= MAX_INSTANCE_GROUPS:
        raise HyperPodError(f"a HyperPod cluster needs 1-{MAX_INSTANCE_GROUPS} instance groups",
                            "validation_failed")
    names = [g.get("InstanceGroupName") for g in groups]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise HyperPodError(f"instance group names must differ: {', '.join(duplicates)}",
                            "validation_failed")
    sgs = list(dict.fromkeys(security_group_ids))
    subnets = list(dict.fromkeys(subnet_ids))
    if not 1 <= len(sgs) <= 5 or not 1 <= len(subnets) <= 16:
        raise HyperPodError("a HyperPod cluster needs 1-5 security groups and 1-16 subnets",
                            "validation_failed")
    extra = {k: v for k, v in (tags or {}).items()
             if k not in (MANAGED_BY, CLUSTER_TAG)}
    request: dict[str, Any] = {
        "ClusterName": name,
        "InstanceGroups": groups,
        "VpcConfig": {"SecurityGroupIds": sgs, "Subnets": subnets},
        "Orchestrator": {"Eks": {"ClusterArn": eks_cluster_arn}},
        "NodeRecovery": NODE_RECOVERY,
        "NodeProvisioningMode": NODE_PROVISIONING_MODE,
        "ClusterRole": cluster_role_arn,
        "Tags": cluster_tags(owner or name, **extra),
    }
    if autoscaling:
        request["AutoScaling"] = {"Mode": "Enable", "AutoScalerType": AUTOSCALER_TYPE}
    return request


# -- ensure ------------------------------------------------------------------------------------


def ensure_cluster(sm: Any, request: Mapping[str, Any]) -> str:
    """The HyperPod cluster `request` describes: created if absent, adopted if a cluster of
    that name exists and carries the request's `hypd:managed-by` / `hypd:cluster` tags.
    Returns its ARN. A same-named cluster that is not this hypd cluster's is refused."""
    name = request["ClusterName"]
    owner = tag_dict(request).get(CLUSTER_TAG)
    if not owner:
        raise ValueError("a hypd HyperPod cluster request carries the hypd:cluster tag")
    existing = _describe(sm, name)
    if existing is None:
        try:
            return sm.create_cluster(**request)["ClusterArn"]
        except ClientError as exc:
            if error_code(exc) not in ("ResourceInUse", "ResourceInUseException"):
                raise
            existing = _describe(sm, name)  # made by a concurrent retry: adopt it below
            if existing is None:
                raise
    _check_owner(sm, existing, owner)
    return existing["ClusterArn"]


def _check_owner(sm: Any, cluster: Mapping[str, Any], owner: str) -> None:
    tags = _tags(sm, cluster["ClusterArn"])
    if tags.get(MANAGED_BY) != MANAGED_BY_VALUE or tags.get(CLUSTER_TAG) != owner:
        raise HyperPodError(
            f"a HyperPod cluster named {cluster['ClusterName']!r} already exists and is not "
            f"hypd cluster {owner!r}'s (its tags say "
            f"{tags.get(CLUSTER_TAG) or 'nothing about hypd'}): choose another name")


# -- readers -----------------------------------------------------------------------------------


def cluster_state(sm: Any, name: str) -> dict[str, Any] | None:
    """{name, arn, status, failure_message, ready, failed} or None when there is none."""
    described = _describe(sm, name)
    if described is None:
        return None
    status = described.get("ClusterStatus")
    return {
        "name": described.get("ClusterName", name),
        "arn": described.get("ClusterArn"),
        "status": status,
        "failure_message": described.get("FailureMessage") or None,
        "ready": status in READY_STATUSES,
        "failed": status in FAILED_STATUSES,
    }


def describe(sm: Any, name: str, events: int = EVENTS_SHOWN) -> dict[str, Any] | None:
    """A clean view of the cluster, or None when there is none: status, settings, instance
    groups with counts, nodes (all of them, paginated) and node counts by status, and the
    `events` most recent cluster events (`events_available` False where the API has none)."""
    described = _describe(sm, name)
    if described is None:
        return None
    nodes = list_nodes(sm, name)
    by_group: dict[str, Counter[str]] = {}
    for node in nodes:
        by_group.setdefault(node["instance_group"], Counter())[node["status"]] += 1
    groups = [_group_view(g, by_group.get(g.get("InstanceGroupName", ""), Counter()))
              for g in described.get("InstanceGroups") or ()]
    recent, available = _events(sm, name, events)
    eks = ((described.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn")
    autoscaling = described.get("AutoScaling") or {}
    return {
        "name": described.get("ClusterName", name),
        "arn": described.get("ClusterArn"),
        "status": described.get("ClusterStatus"),
        "failure_message": described.get("FailureMessage") or None,
        "created_at": _iso(described.get("CreationTime")),
        "eks_cluster_arn": eks,
        "node_recovery": described.get("NodeRecovery"),
        "node_provisioning_mode": described.get("NodeProvisioningMode"),
        "cluster_role": described.get("ClusterRole"),
        "autoscaling": {"mode": autoscaling.get("Mode"), "status": autoscaling.get("Status"),
                        "failure_message": autoscaling.get("FailureMessage")}
        if autoscaling else None,
        "tiered_storage": (described.get("TieredStorageConfig") or {}).get("Mode"),
        "vpc": {"security_group_ids": list((described.get("VpcConfig") or {})
                                           .get("SecurityGroupIds") or ()),
                "subnet_ids": list((described.get("VpcConfig") or {}).get("Subnets") or ())},
        "instance_groups": groups,
        "nodes": nodes,
        "node_counts": {"total": len(nodes),
                        "by_status": dict(sorted(Counter(n["status"] for n in nodes).items()))},
        "events": recent,
        "events_available": available,
    }


def list_nodes(sm: Any, name: str) -> list[dict[str, Any]]:
    """Every node of the cluster (ListClusterNodes, all pages, as large as AWS allows)."""
    nodes = []
    pages = sm.get_paginator("list_cluster_nodes").paginate(
        ClusterName=name,
        PaginationConfig={"PageSize": model_limit("ListClusterNodes", "MaxResults")})
    for page in pages:
        nodes += [node_view(node) for node in page.get("ClusterNodeSummaries") or ()]
    return nodes


def node_view(node: Mapping[str, Any]) -> dict[str, Any]:
    """A node as ListClusterNodes or DescribeClusterNode reports it, in hypd's words."""
    status = node.get("InstanceStatus") or {}
    return {
        "id": node.get("InstanceId"),
        "instance_group": node.get("InstanceGroupName"),
        "instance_type": node.get("InstanceType"),
        "status": status.get("Status") or "Unknown",
        "message": status.get("Message") or None,
        "launched_at": _iso(node.get("LaunchTime")),
        "software_updated_at": _iso(node.get("LastSoftwareUpdateTime")),
        "hostname": node.get("PrivateDnsHostname"),
    }


def list_clusters(sm: Any, managed_only: bool = False) -> list[dict[str, Any]]:
    """Every HyperPod cluster in the region with its tags: {name, arn, status, created_at,
    tags, managed, hypd_cluster}. `managed_only` keeps hypd's."""
    found = []
    for page in sm.get_paginator("list_clusters").paginate():
        for summary in page.get("ClusterSummaries") or ():
            arn = summary["ClusterArn"]
            try:
                tags = _tags(sm, arn)
            except ClientError as exc:
                if is_not_found(exc) or _absent(exc):
                    continue  # deleted between the two calls
                raise
            managed = tags.get(MANAGED_BY) == MANAGED_BY_VALUE
            if managed_only and not managed:
                continue
            found.append({
                "name": summary.get("ClusterName"),
                "arn": arn,
                "status": summary.get("ClusterStatus"),
                "created_at": _iso(summary.get("CreationTime")),
                "tags": tags,
                "managed": managed,
                "hypd_cluster": tags.get(CLUSTER_TAG) if managed else None,
            })
    return sorted(found, key=lambda c: c["name"] or "")


def subnets_of(described: Mapping[str, Any]) -> set[str]:
    """Every subnet a HyperPod cluster (as DescribeCluster answers) puts nodes in: its own
    VpcConfig's and its groups' OverrideVpcConfig's."""
    subnets = set((described.get("VpcConfig") or {}).get("Subnets") or ())
    for group in described.get("InstanceGroups") or ():
        subnets |= set((group.get("OverrideVpcConfig") or {}).get("Subnets") or ())
    return subnets


def described_clusters(sm: Any) -> list[dict[str, Any]]:
    """`DescribeCluster`'s answer for every HyperPod cluster in the client's region (one gone
    between the list and its describe is left out)."""
    found = []
    for page in sm.get_paginator("list_clusters").paginate():
        for summary in page.get("ClusterSummaries") or ():
            described = _describe(sm, summary["ClusterName"])
            if described is not None:
                found.append(described)
    return found


def clusters_in_subnets(sm: Any, subnet_ids: Sequence[str],
                        described: Sequence[dict[str, Any]] | None = None
                        ) -> list[dict[str, Any]]:
    """{name, arn, status} of every HyperPod cluster in the region with nodes placed in one
    of these subnets, whoever made it (a network's delete must not pull them from under).
    `described`: the region's clusters already described (`described_clusters`), so that a
    read of many networks describes each cluster once."""
    wanted = set(subnet_ids)
    found = [{"name": cluster.get("ClusterName"), "arn": cluster.get("ClusterArn"),
              "status": cluster.get("ClusterStatus")}
             for cluster in (described_clusters(sm) if described is None else described)
             if subnets_of(cluster) & wanted]
    return sorted(found, key=lambda c: c["name"] or "")


def instances_in_use(sm: Any) -> dict[tuple[str, str], int]:
    """Instances the region's HyperPod clusters hold, by (instance type, capacity type):
    target counts of the groups of clusters that are not failed or being deleted."""
    used: Counter[tuple[str, str]] = Counter()
    for page in sm.get_paginator("list_clusters").paginate():
        for summary in page.get("ClusterSummaries") or ():
            if summary.get("ClusterStatus") in (FAILED, DELETING):
                continue
            described = _describe(sm, summary["ClusterName"])
            for group in (described or {}).get("InstanceGroups") or ():
                count = group.get("TargetCount")
                if count is None:
                    count = group.get("CurrentCount") or 0
                used[(group.get("InstanceType"), capacity_type_of(group))] += int(count)
    return dict(used)


# -- instance groups ---------------------------------------------------------------------------


def described(sm: Any, name: str) -> dict[str, Any] | None:
    """`DescribeCluster`'s answer as it is (None: no cluster), for a reader that needs the
    groups and the cluster's settings from one call (cloud.fit)."""
    return _describe(sm, name)


def group_details(sm: Any, name: str) -> list[dict[str, Any]] | None:
    """The cluster's instance groups as `DescribeCluster` reports them (None: no cluster)."""
    described = _describe(sm, name)
    return None if described is None else list(described.get("InstanceGroups") or ())


def update_instance_groups(sm: Any, name: str, groups: Sequence[Mapping[str, Any]],
                           delete: Sequence[str] = (), owner: str | None = None) -> None:
    """UpdateCluster with the whole list of groups (`groups`: specs, the unchanged ones as
    `cloud.capacity.spec_from_details` gives them) and the names in `delete`.

    While deep health checks run, or while the cluster is busy with another update, AWS
    refuses: that is `NotYet` (the caller waits), not a failure. Refuses (HyperPodError) a
    cluster that is not hypd cluster `owner`'s (default: `name`)."""
    request: dict[str, Any] = {"InstanceGroups": [dict(g) for g in groups]}
    if delete:
        request["InstanceGroupsToDelete"] = list(delete)
    _update_cluster(sm, name, request, owner)


def update_settings(sm: Any, name: str, settings: Mapping[str, Any],
                    owner: str | None = None) -> None:
    """UpdateCluster with cluster-level members only (`TieredStorageConfig`,
    `AutoScaling`, `ClusterRole`): the instance groups are left as they are. Waits and
    refusals as `update_instance_groups`."""
    unknown = set(settings) - {"TieredStorageConfig", "AutoScaling", "ClusterRole"}
    if unknown:
        raise ValueError(f"not a cluster setting: {', '.join(sorted(unknown))}")
    _update_cluster(sm, name, dict(settings), owner)


def _update_cluster(sm: Any, name: str, members: Mapping[str, Any], owner: str | None) -> None:
    described = _describe(sm, name)
    if described is None:
        raise HyperPodError(f"HyperPod cluster {name} does not exist", "not_found")
    _check_owner(sm, described, owner or name)
    if described.get("ClusterStatus") in BUSY_STATUSES - {UPDATING, SYSTEM_UPDATING} or (
            described.get("ClusterStatus") in (UPDATING, SYSTEM_UPDATING)
            and described.get("NodeProvisioningMode") != NODE_PROVISIONING_MODE):
        raise NotYet(f"HyperPod cluster {name} is {described.get('ClusterStatus')}", 30.0)
    try:
        sm.update_cluster(ClusterName=name, **members)
    except ClientError as exc:
        message = (exc.response.get("Error") or {}).get("Message") or ""
        if "deep health check" in message.lower():
            raise NotYet(f"deep health checks are running on cluster {name}; AWS accepts "
                         "changes once they finish", 60.0) from exc
        if error_code(exc) in ("ConflictException", "ResourceInUse"):
            raise NotYet(f"HyperPod cluster {name} is busy: {message}", 30.0) from exc
        raise


def settings(sm: Any, name: str) -> dict[str, Any] | None:
    """The cluster-level settings managed features turn on and off, as DescribeCluster
    reports them now (None: no cluster): {status, cluster_role, tiered_storage: {mode,
    memory_percent} | None, autoscaling: {mode, type, status, failure_message} | None,
    groups: [{name, instance_type, current_count, target_count, capacity_type,
    training_plan_arn, deep_health_checks, status}]}."""
    described = _describe(sm, name)
    if described is None:
        return None
    tiered = described.get("TieredStorageConfig") or {}
    scaling = described.get("AutoScaling") or {}
    return {
        "status": described.get("ClusterStatus"),
        "cluster_role": described.get("ClusterRole"),
        "tiered_storage": {"mode": tiered.get("Mode"),
                           "memory_percent": tiered.get("InstanceMemoryAllocationPercentage")}
        if tiered else None,
        "autoscaling": {"mode": scaling.get("Mode"), "type": scaling.get("AutoScalerType"),
                        "status": scaling.get("Status"),
                        "failure_message": scaling.get("FailureMessage")}
        if scaling else None,
        "groups": [{"name": g.get("InstanceGroupName"), "instance_type": g.get("InstanceType"),
                    "current_count": g.get("CurrentCount"),
                    "target_count": g.get("TargetCount"),
                    "capacity_type": capacity_type_of(g),
                    "training_plan_arn": g.get("TrainingPlanArn"),
                    "deep_health_checks": list(g.get("OnStartDeepHealthChecks") or ()),
                    "status": g.get("Status")}
                   for g in described.get("InstanceGroups") or ()],
    }


# -- node software -----------------------------------------------------------------------------

SOFTWARE_BUSY = frozenset({"Pending", "InProgress", "RollbackInProgress"})
SOFTWARE_FAILED = frozenset({"Failed", "RollbackComplete"})


def software_state(sm: Any, name: str) -> dict[str, Any] | None:
    """{status (the cluster's), groups: {group: SoftwareUpdateStatus or None}} or None."""
    described = _describe(sm, name)
    if described is None:
        return None
    return {"status": described.get("ClusterStatus"),
            "groups": {g.get("InstanceGroupName"): g.get("SoftwareUpdateStatus")
                       for g in described.get("InstanceGroups") or ()}}


def last_software_update(sm: Any, name: str, groups: Sequence[str] | None = None) -> str | None:
    """The newest `LastSoftwareUpdateTime` among the nodes of `groups` (None: all), ISO 8601:
    recorded before an update is asked for, a newer one afterwards shows it went through."""
    times = [n["software_updated_at"] for n in list_nodes(sm, name)
             if n["software_updated_at"] and (not groups or n["instance_group"] in groups)]
    return max(times) if times else None


def software_update_running(state: Mapping[str, Any], groups: Sequence[str] | None) -> bool:
    """Whether an update of the software of `groups` (None: all) is under way: the evidence
    an earlier attempt's call went through."""
    names = groups or list(state["groups"])
    return state["status"] == SYSTEM_UPDATING or any(
        state["groups"].get(g) in SOFTWARE_BUSY for g in names)


def start_software_update(sm: Any, name: str, groups: Sequence[str] | None = None,
                          image_id: str | None = None, owner: str | None = None) -> None:
    """UpdateClusterSoftware: the nodes of `groups` (None: every group) get the newest
    HyperPod software (or `image_id`), node by node. Deep health checks running, or the
    cluster not InService, is a wait (`NotYet`)."""
    described = _describe(sm, name)
    if described is None:
        raise HyperPodError(f"HyperPod cluster {name} does not exist", "not_found")
    _check_owner(sm, described, owner or name)
    if described.get("ClusterStatus") != IN_SERVICE:
        raise NotYet(f"HyperPod cluster {name} is {described.get('ClusterStatus')}; its "
                     "software can be updated once it is InService", 30.0)
    request: dict[str, Any] = {"ClusterName": name}
    if groups:
        request["InstanceGroups"] = [{"InstanceGroupName": g} for g in groups]
    if image_id:
        request["ImageId"] = image_id
    try:
        sm.update_cluster_software(**request)
    except ClientError as exc:
        message = (exc.response.get("Error") or {}).get("Message") or ""
        if "deep health check" in message.lower():
            raise NotYet(f"deep health checks are running on cluster {name}; the software "
                         "update starts once they finish", 60.0) from exc
        if error_code(exc) in ("ConflictException", "ResourceInUse"):
            raise NotYet(f"HyperPod cluster {name} is busy: {message}", 30.0) from exc
        raise


# -- delete ------------------------------------------------------------------------------------


def delete_cluster(sm: Any, name: str, owner: str | None = None) -> bool:
    """Delete the HyperPod cluster if hypd made it for `owner` (default: `name`). False when
    it is already gone (or already being deleted); HyperPodError when it is not hypd's."""
    described = _describe(sm, name)
    if described is None:
        return False
    if described.get("ClusterStatus") == DELETING:
        return False
    _check_owner(sm, described, owner or name)
    try:
        sm.delete_cluster(ClusterName=name)
    except ClientError as exc:
        if _absent(exc):
            return False
        raise
    return True


# -- helpers -----------------------------------------------------------------------------------


@functools.cache
def _model() -> Any:
    return botocore.session.get_session().get_service_model("sagemaker")


def model_limit(operation: str, member: str) -> int:
    """The `max` botocore's model sets on a request member (a list's length, a page size)."""
    return int(_model().operation_model(operation).input_shape.members[member].metadata["max"])


def _absent(exc: ClientError) -> bool:
    """HyperPod answers ResourceNotFound for an unknown cluster; some emulators answer a
    ValidationException saying it could not find it."""
    if is_not_found(exc):
        return True
    message = (exc.response.get("Error") or {}).get("Message") or ""
    return error_code(exc) in ("ValidationException", "ValidationError") and (
        "could not find" in message.lower() or "not found" in message.lower())


def _describe(sm: Any, name: str) -> dict[str, Any] | None:
    try:
        return sm.describe_cluster(ClusterName=name)
    except ClientError as exc:
        if _absent(exc):
            return None
        raise


def _tags(sm: Any, arn: str) -> dict[str, str]:
    tags: dict[str, str] = {}
    kwargs: dict[str, Any] = {"ResourceArn": arn}
    while True:
        reply = sm.list_tags(**kwargs)
        tags.update({t["Key"]: t["Value"] for t in reply.get("Tags") or ()})
        token = reply.get("NextToken")
        if not token:
            return tags
        kwargs["NextToken"] = token


def _events(sm: Any, name: str, limit: int) -> tuple[list[dict[str, Any]], bool]:
    if limit <= 0:
        return [], True
    try:
        reply = sm.list_cluster_events(ClusterName=name, SortOrder="Descending",
                                       MaxResults=min(limit, 100))
    except ClientError as exc:
        if is_transient(exc):
            raise
        return [], False  # this endpoint (or emulator) has no cluster events
    except NotImplementedError:
        return [], False
    events = [{
        "id": e.get("EventId"),
        "at": _iso(e.get("EventTime")),
        "level": e.get("EventLevel"),
        "resource_type": e.get("ResourceType"),
        "instance_group": e.get("InstanceGroupName"),
        "instance_id": e.get("InstanceId"),
        "description": e.get("Description"),
    } for e in reply.get("Events") or ()]
    return events[:limit], True


def _group_view(group: Mapping[str, Any], node_status: Counter[str]) -> dict[str, Any]:
    vpc = group.get("OverrideVpcConfig") or {}
    storage = [c.get("EbsVolumeConfig") for c in group.get("InstanceStorageConfigs") or ()
               if c.get("EbsVolumeConfig")]
    lifecycle = group.get("LifeCycleConfig") or {}
    return {
        "name": group.get("InstanceGroupName"),
        "instance_type": group.get("InstanceType"),
        "status": group.get("Status"),
        "current_count": group.get("CurrentCount"),
        "target_count": group.get("TargetCount"),
        "min_count": group.get("MinCount"),
        "capacity_type": capacity_type_of(group),
        "training_plan_arn": group.get("TrainingPlanArn"),
        "training_plan_status": group.get("TrainingPlanStatus"),
        "efa_mode": interface_mode_of(group),
        "subnet_ids": list(vpc.get("Subnets") or ()),
        "security_group_ids": list(vpc.get("SecurityGroupIds") or ()),
        "deep_health_checks": list(group.get("OnStartDeepHealthChecks") or ()),
        "threads_per_core": group.get("ThreadsPerCore"),
        "execution_role": group.get("ExecutionRole"),
        "lifecycle": {"source_s3_uri": lifecycle.get("SourceS3Uri"),
                      "on_create": lifecycle.get("OnCreate")},
        "volume_size_gb": storage[0].get("VolumeSizeInGB") if storage else None,
        "labels": labels_of(group),
        "taints": taints_of(group),
        "nodes_by_status": dict(sorted(node_status.items())),
    }


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)
