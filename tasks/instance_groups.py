"""Operation kinds `instance_group.create`, `instance_group.update`, `instance_group.delete`
(each on target `cluster/<c>/group/<g>`).

A group is added, changed and deleted by HyperPod's `UpdateCluster` with the whole list of
the cluster's groups. The ones a change leaves alone go as `DescribeCluster` reports them
(`cloud.capacity.spec_from_details`, which also turns the reported `KubernetesConfig`,
`DesiredLabels`/`DesiredTaints`, back into a spec's `Labels`/`Taints`); the new or changed
one goes as the one capacity function (`cloud.capacity.instance_group_spec`, which the
cluster's first group also goes through) builds it.

Each step adopts before it applies: a group already in DescribeCluster, already as asked (a
crashed attempt's call went through) or already gone is not sent again. While deep health
checks run AWS refuses UpdateCluster; `cloud.hyperpod.update_instance_groups` turns that into
cloud's `NotYet`, so the step waits.

The kinds:

- `instance_group.create`: `subnet` (an existing subnet of the cluster's VPC, or the group's
  own /20 from the one allocator in its zone under the per-VPC mutex, tagged
  `hypd:instance-group=<g>` and routed through the cluster's private route table), then
  `instance_group` (UpdateCluster; waits InService/Degraded at the target count);
- `instance_group.update`: an explicit diff: the changed spec is compared with the group as
  it is, and nothing is sent when they match;
- `instance_group.delete`: `InstanceGroupsToDelete`, waits until the group is gone, then
  deletes its own compute subnet (DependencyViolation while its interfaces go is a wait).

The route (app/api/instance_groups.py) reads the request's context from the cluster once,
when the operation is recorded, into its params, so every attempt sends the same request:
the execution role, lifecycle scripts, security groups and route table of its existing
groups, the VPC of its EKS cluster, and the zone. Placement: an existing subnet's zone, else
the zone asked for, else a training plan's zone (from the preflight check of the plan), else
the cluster's; a training plan's zone wins and a request naming another is 422. The zone must
offer the type and the EFA mode must suit it (`app/choices.py`, the checks the cluster create
uses too); quotas and the plan are preflighted (412).

Fixed for a group's life (`schemas.instance_groups.IMMUTABLE`): instance type, capacity type,
training plan, EFA mode, zone, subnet. A PATCH carrying one with another value is `422
immutable_field` naming it, before anything is sent. A delete is refused for the last group
(409 `conflict`), and while pods that would not come back elsewhere run on its nodes (no
controller that recreates them, a training job's, or pinned to the group by node selector),
409 `in_use` naming them (see cloud/dependents.py), unless `?force=true`. Imported clusters
are read, never changed.

Cluster software (the kinds are in tasks/cluster_software.py, on target `cluster/<c>`):

- `cluster.software_update`: `UpdateClusterSoftware`, followed until every named group's
  `SoftwareUpdateStatus` is `Succeeded`. The call has no client token: the step records the
  newest `LastSoftwareUpdateTime` of the nodes before it calls, and an attempt after a crash
  that finds the update running, or nodes updated since, follows that update instead of
  starting a second (tests/app/test_cluster_software_api.py kills the worker right after AWS
  accepted the call).
- `cluster.kubernetes_upgrade` (`POST .../kubernetes-version`): the route answers
  `200 {"changed": false}` for the version the cluster runs and refuses anything but the
  next minor version (422, nothing sent). The operation sends `UpdateClusterVersion` with the
  step's client token (an update to that version already under way, found through
  `ListUpdates`/`DescribeUpdate`, is followed, not asked again), waits for the cluster to be
  `ACTIVE` on it, then moves every EKS add-on whose version is not the new version's default
  (`DescribeAddonVersions`) with `UpdateAddon` and waits for them. Tested against the
  sandbox's EKS (which plays the upgrade), over REST and MCP, with the worker killed after
  EKS accepted.
"""

from __future__ import annotations

from typing import Any

from cloud import capacity, discovery, hyperpod
from tasks.engine.kinds import OperationKind, Step, StepContext, StepFailed
from tasks.outcomes import guarded, output
from vocabulary.capacity import ON_DEMAND

GROUP_POLL_S = 20.0
DONE_STATUSES = ("InService", "Degraded")
"""Degraded: the group runs, short of some capacity AWS keeps trying to provision
(continuous provisioning); the operation is done and the group's view says so."""


def _cluster(ctx: StepContext) -> str:
    return ctx.params["cluster"]


def _group(ctx: StepContext) -> str:
    return ctx.params["name"]


def _find(details: list[dict[str, Any]] | None, name: str) -> dict[str, Any] | None:
    return next((g for g in details or () if g.get("InstanceGroupName") == name), None)


def _details(ctx: StepContext) -> list[dict[str, Any]]:
    details = hyperpod.group_details(ctx.client("sagemaker"), _cluster(ctx))
    if details is None:
        raise StepFailed(f"HyperPod cluster {_cluster(ctx)} does not exist", "not_found")
    return details


def _others(details: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The groups a change leaves as they are (one being deleted is no longer sent)."""
    return [capacity.spec_from_details(g) for g in details
            if g.get("InstanceGroupName") != name and g.get("Status") != "Deleting"]


# -- create ------------------------------------------------------------------------------------

@guarded
def ensure_subnet(ctx: StepContext) -> dict[str, Any]:
    """The group's subnet: the existing one the request named, or its own /20 from the one
    allocator in its zone, routed like the cluster's (through the NAT gateway)."""
    params = ctx.params
    if params.get("subnet_id"):
        return {"subnet_id": params["subnet_id"], "availability_zone": params["zone"],
                "created": False}
    zone = params["zone"]
    subnet = capacity.allocate_compute_subnet(
        ctx.client("ec2"), params["vpc_id"], zone,
        capacity.compute_subnet_tags(_cluster(ctx), _group(ctx), zone),
        lock=lambda: ctx.lock(f"vpc/{params['vpc_id']}"),
        route_table_id=params.get("route_table_id"))
    return {"subnet_id": subnet["id"], "cidr": subnet["cidr"], "availability_zone": zone,
            "created": subnet["created"]}


def group_spec(params: dict[str, Any], subnet_id: str,
               instance_info: dict[str, Any] | None) -> dict[str, Any]:
    """The new group, through the one capacity function the cluster's first group uses."""
    return capacity.instance_group_spec(
        name=params["name"],
        instance_type=params["instance_type"],
        count=params["instance_count"],
        execution_role_arn=params["execution_role_arn"],
        lifecycle_s3_uri=params["lifecycle_s3_uri"],
        on_create=params.get("on_create") or capacity.DEFAULT_ON_CREATE,
        subnet_id=subnet_id,
        security_group_ids=params["security_group_ids"],
        capacity_type=params.get("capacity_type") or ON_DEMAND,
        training_plan_arn=params.get("training_plan_arn"),
        interface_mode=params.get("efa_mode"),
        instance_info=instance_info,
        threads_per_core=params.get("threads_per_core") or capacity.DEFAULT_THREADS_PER_CORE,
        deep_health_checks=capacity.DEEP_HEALTH_CHECKS if params.get("deep_health_checks")
        else (),
        volume_size_gb=params.get("volume_size_gb"),
        labels=params.get("labels"),
        taints=params.get("taints"),
        region=params.get("region"),
    )


@guarded
def add_group(ctx: StepContext) -> dict[str, Any]:
    details = _details(ctx)
    if _find(details, _group(ctx)) is None:
        info = discovery.instance_type(ctx.client("ec2"), ctx.params["instance_type"])
        spec = group_spec(ctx.params, output(ctx, "subnet", "subnet_id"), info)
        ctx.detail(f"UpdateCluster: adding {_group(ctx)} ({spec['InstanceType']} x "
                   f"{spec['InstanceCount']})")
        hyperpod.update_instance_groups(ctx.client("sagemaker"), _cluster(ctx),
                                        [*_others(details, _group(ctx)), spec],
                                        owner=_cluster(ctx))
    return {"instance_group": _group(ctx)}


@guarded
def wait_group(ctx: StepContext) -> float | None:
    group = _find(_details(ctx), _group(ctx))
    if group is None:
        raise StepFailed(f"instance group {_group(ctx)} is not in cluster {_cluster(ctx)}: "
                         "AWS did not keep it (see the cluster's events)", "upstream_error")
    status = group.get("Status")
    if status == "Failed":
        raise StepFailed(f"instance group {_group(ctx)} failed (see the cluster's events)",
                         "upstream_error")
    want = ctx.params.get("instance_count")  # create, or an update that changed the count
    if status in DONE_STATUSES and (want is None or group.get("TargetCount") == want):
        return None
    ctx.detail(f"{_group(ctx)} is {status}: {group.get('CurrentCount') or 0} of "
               f"{group.get('TargetCount')} nodes")
    return GROUP_POLL_S


# -- update ------------------------------------------------------------------------------------

def changed_spec(current: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """The group's spec with the PATCH's changes (already checked against the fixed fields)."""
    spec = capacity.spec_from_details(current)
    if "instance_count" in changes:
        spec["InstanceCount"] = changes["instance_count"]
    if "threads_per_core" in changes:
        spec["ThreadsPerCore"] = changes["threads_per_core"]
    if "deep_health_checks" in changes:
        if changes["deep_health_checks"]:
            spec["OnStartDeepHealthChecks"] = list(capacity.DEEP_HEALTH_CHECKS)
        else:
            spec.pop("OnStartDeepHealthChecks", None)
    if "on_create" in changes:
        spec["LifeCycleConfig"] = {**spec.get("LifeCycleConfig", {}),
                                   "OnCreate": changes["on_create"]}
    if "labels" in changes or "taints" in changes:
        labels = changes.get("labels", capacity.labels_of(current))
        taints = changes.get("taints", capacity.taints_of(current))
        kubernetes = capacity.kubernetes_config(labels, taints)
        if kubernetes:
            spec["KubernetesConfig"] = kubernetes
        else:
            spec.pop("KubernetesConfig", None)
    return spec


@guarded
def change_group(ctx: StepContext) -> dict[str, Any]:
    details = _details(ctx)
    current = _find(details, _group(ctx))
    if current is None:
        raise StepFailed(f"cluster {_cluster(ctx)} has no instance group {_group(ctx)}",
                         "not_found")
    wanted = changed_spec(current, ctx.params["changes"])
    if wanted != capacity.spec_from_details(current):
        ctx.detail(f"UpdateCluster: changing {_group(ctx)}")
        hyperpod.update_instance_groups(ctx.client("sagemaker"), _cluster(ctx),
                                        [*_others(details, _group(ctx)), wanted],
                                        owner=_cluster(ctx))
    return {"instance_group": _group(ctx)}


# -- delete ------------------------------------------------------------------------------------

@guarded
def remove_group(ctx: StepContext) -> dict[str, Any]:
    details = _details(ctx)
    current = _find(details, _group(ctx))
    if current is not None and current.get("Status") != "Deleting":
        others = _others(details, _group(ctx))
        if not others:
            raise StepFailed(f"{_group(ctx)} is the last instance group of cluster "
                             f"{_cluster(ctx)}; delete the cluster instead", "conflict")
        ctx.detail(f"UpdateCluster: deleting {_group(ctx)}")
        hyperpod.update_instance_groups(ctx.client("sagemaker"), _cluster(ctx), others,
                                        delete=[_group(ctx)], owner=_cluster(ctx))
    return {"instance_group": _group(ctx)}


@guarded
def wait_group_gone(ctx: StepContext) -> float | None:
    current = _find(_details(ctx), _group(ctx))
    if current is None:
        return None
    ctx.detail(f"{_group(ctx)} is {current.get('Status')}: {current.get('CurrentCount') or 0} "
               "nodes left")
    return GROUP_POLL_S


@guarded
def delete_subnet(ctx: StepContext) -> dict[str, Any]:
    """The group's own compute subnet, if hypd made one for it (by its tags); while the
    nodes' network interfaces go, AWS answers DependencyViolation and the step waits."""
    deleted = capacity.delete_compute_subnets(ctx.client("ec2"), _cluster(ctx), _group(ctx))
    done = sorted({*(ctx.resources.get("deleted") or ()), *deleted})
    return {"deleted": done}


def group_url(params: dict[str, Any]) -> str:
    return f"/api/v1/clusters/{params['cluster']}/instance-groups/{params['name']}"


GROUP_CREATE = OperationKind(
    name="instance_group.create",
    steps=(
        Step("subnet", "Place the group: its subnet", ensure_subnet),
        Step("instance_group", "Add the instance group (UpdateCluster)", add_group,
             wait_group),
    ),
    resource_url=group_url,
)
GROUP_UPDATE = OperationKind(
    name="instance_group.update",
    steps=(Step("instance_group", "Change the instance group (UpdateCluster)", change_group,
                wait_group),),
    resource_url=group_url,
)
GROUP_DELETE = OperationKind(
    name="instance_group.delete",
    steps=(
        Step("instance_group", "Delete the instance group (UpdateCluster)", remove_group,
             wait_group_gone),
        Step("subnet", "Delete the group's compute subnet", delete_subnet),
    ),
    resource_url=group_url,
)
