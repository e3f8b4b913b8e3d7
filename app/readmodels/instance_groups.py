"""A cluster's instance groups as the routes answer them, and the context a change needs.

Groups are read from AWS (`DescribeCluster`), never from a stored copy: their zone from
their subnets, the operation running on each from the panel's records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app import context
from app.errors import ApiError
from app.readmodels.clusters import ClusterRef
from cloud import aws, capacity, hyperpod
from vocabulary.operations import OpStatus


@dataclass(frozen=True)
class Groups:
    """The cluster's groups now: `details` as DescribeCluster reports them, `views` as the
    API shows them (same order)."""

    cluster: ClusterRef
    details: list[dict[str, Any]]
    views: list[dict[str, Any]]
    vpc: dict[str, Any]
    """the HyperPod cluster's own VpcConfig: {security_group_ids, subnet_ids}"""

    def detail(self, name: str) -> dict[str, Any] | None:
        return next((g for g in self.details if g.get("InstanceGroupName") == name), None)

    def view(self, name: str) -> dict[str, Any]:
        found = next((g for g in self.views if g["name"] == name), None)
        if found is None:
            raise ApiError(404, "not_found", f"cluster {self.cluster.name!r} has no instance "
                                             f"group {name!r}")
        return found


def read(cluster: ClusterRef) -> Groups:
    """The groups of a cluster whose HyperPod cluster exists; 409 while it does not."""
    sm = aws.client("sagemaker", region=cluster.region)
    described = hyperpod.describe(sm, cluster.hyperpod_name, events=0)
    if described is None:
        raise ApiError(409, "conflict", f"cluster {cluster.name!r} has no HyperPod cluster yet "
                                        "(its hyperpod stage has not run)")
    details = hyperpod.group_details(sm, cluster.hyperpod_name) or []
    zones = _zones(cluster.region, {s for g in described["instance_groups"]
                                    for s in g["subnet_ids"]})
    running = _running_ops(cluster.name)
    views = [_view(g, zones, running.get(g["name"])) for g in described["instance_groups"]]
    # a group being added is not in DescribeCluster until its UpdateCluster went through
    for name, op in running.items():
        if op["kind"] == "instance_group.create" and not any(v["name"] == name for v in views):
            params = op["params"]
            views.append({"name": name, "instance_type": params.get("instance_type"),
                          "status": "Pending", "current_count": 0,
                          "target_count": params.get("instance_count"),
                          "capacity_type": params.get("capacity_type"),
                          "efa_mode": params.get("efa_mode"),
                          "availability_zone": params.get("zone"), "subnet_ids": [],
                          "labels": params.get("labels") or {},
                          "taints": params.get("taints") or [], "nodes_by_status": {},
                          "operation_id": op["id"]})
    return Groups(cluster, details, views, described["vpc"])


def _view(group: dict[str, Any], zones: dict[str, str], op: dict[str, Any] | None
          ) -> dict[str, Any]:
    subnets = group["subnet_ids"]
    return {
        "name": group["name"], "instance_type": group["instance_type"],
        "status": group["status"], "current_count": group["current_count"],
        "target_count": group["target_count"], "min_count": group["min_count"],
        "capacity_type": group["capacity_type"],
        "training_plan_arn": group["training_plan_arn"],
        "training_plan_status": group["training_plan_status"],
        "efa_mode": group["efa_mode"],
        "availability_zone": zones.get(subnets[0]) if subnets else None,
        "subnet_ids": subnets, "security_group_ids": group["security_group_ids"],
        "deep_health_checks": group["deep_health_checks"],
        "threads_per_core": group["threads_per_core"],
        "volume_size_gb": group["volume_size_gb"],
        "labels": group["labels"], "taints": group["taints"],
        "on_create": group["lifecycle"]["on_create"],
        "nodes_by_status": group["nodes_by_status"],
        "operation_id": op["id"] if op else None,
    }


def _zones(region: str, subnet_ids: set[str]) -> dict[str, str]:
    if not subnet_ids:
        return {}
    found = aws.client("ec2", region=region).describe_subnets(SubnetIds=sorted(subnet_ids))
    return {s["SubnetId"]: s["AvailabilityZone"] for s in found["Subnets"]}


def _running_ops(cluster: str) -> dict[str, dict[str, Any]]:
    """The unfinished operation on each group of the cluster, by group name."""
    prefix = f"cluster/{cluster}/group/"
    found: dict[str, dict[str, Any]] = {}
    for op in context.engine().store.list(target=f"cluster/{cluster}", limit=500):
        if op["target"].startswith(prefix) and not OpStatus(op["status"]).is_finished:
            found.setdefault(op["target"][len(prefix):], op)
    return found


def subnet_zone(cluster: ClusterRef, subnet_id: str) -> str:
    """The zone of a subnet of the cluster's VPC; 422 for a subnet elsewhere."""
    vpc_id = vpc_of(cluster)
    found = aws.client("ec2", region=cluster.region).describe_subnets(
        Filters=[{"Name": "subnet-id", "Values": [subnet_id]}])["Subnets"]
    if not found or found[0].get("VpcId") != vpc_id:
        raise ApiError(422, "validation_failed",
                       f"subnet {subnet_id} is not in the cluster's VPC {vpc_id}",
                       {"fields": {"subnet_id": [f"not in {vpc_id}"]}})
    return found[0]["AvailabilityZone"]


def vpc_of(cluster: ClusterRef) -> str:
    """The EKS cluster's VPC (`resourcesVpcConfig.vpcId`; from its subnets when an endpoint
    leaves the id out)."""
    config = (cluster.eks or {}).get("resourcesVpcConfig") or {}
    if config.get("vpcId"):
        return config["vpcId"]
    subnets = config.get("subnetIds") or []
    if subnets:
        found = aws.client("ec2", region=cluster.region).describe_subnets(
            SubnetIds=subnets[:1])["Subnets"]
        if found:
            return found[0]["VpcId"]
    raise ApiError(409, "conflict", f"cluster {cluster.name!r} has no EKS VPC to read")


def group_context(cluster: ClusterRef, groups: Groups) -> dict[str, Any]:
    """What a new group takes from the cluster's existing ones: the execution role, the
    lifecycle scripts' location, the security groups, and the route table of their subnet
    (so a new subnet reaches AWS through the same NAT gateway)."""
    first = next((g for g in groups.details if g.get("Status") != "Deleting"), None)
    if first is None:
        raise ApiError(409, "conflict", f"cluster {cluster.name!r} has no instance group to "
                                        "take its role and lifecycle scripts from")
    vpc_id = vpc_of(cluster)
    override = first.get("OverrideVpcConfig") or {}
    subnets = override.get("Subnets") or groups.vpc["subnet_ids"]
    ec2 = aws.client("ec2", region=cluster.region)
    return {
        "vpc_id": vpc_id,
        "execution_role_arn": first["ExecutionRole"],
        "lifecycle_s3_uri": first["LifeCycleConfig"]["SourceS3Uri"],
        "default_on_create": first["LifeCycleConfig"].get("OnCreate")
        or capacity.DEFAULT_ON_CREATE,
        "security_group_ids": list(override.get("SecurityGroupIds")
                                   or groups.vpc["security_group_ids"]),
        "route_table_id": capacity.route_table_of_subnet(ec2, vpc_id, subnets[0])
        if subnets else None,
        "default_zone": next((v["availability_zone"] for v in groups.views
                              if v.get("availability_zone")), None),
    }
