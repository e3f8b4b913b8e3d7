"""Operation kinds for clusters: `cluster.create` (staged), `cluster.stage` (one stage again)
and `cluster.delete`.

`cluster.create` is one operation whose steps carry a `stage`. Stages, in order, each a group
of steps: network -> eks -> activate -> dependencies -> hyperpod -> storage. Every step is an
ensure (cloud/ adopts by tags, names or client tokens before it creates), so a step re-run
after a crash, a retry from a failed step, or a whole stage re-run never makes anything
twice. Long waits (EKS ACTIVE, add-ons, HyperPod InService) are `wait`s: the engine
re-schedules them, no worker sleeps. Outputs flow by step name (`ctx.outputs`).

An operation kind may `select` its steps from the params when it is recorded (an existing VPC
replaces the seven network steps with `existing_network`). Stages and steps:

- network: the `network.create` steps (the network named after the cluster), or
  `existing_network`;
- eks: `eks_role`; `eks_cluster` (API auth, no creator admin, `clientRequestToken`; waits
  ACTIVE); `eks_access` (access entry + AmazonEKSClusterAdminPolicy for the panel's own
  principal; OIDC provider);
- activate: `activate` (once ACTIVE: the creator token's active cluster);
- dependencies: `dependencies`, the base set of `cloud/data/dependencies.yaml`
  (`cloud.dependencies.desired()`, the same data and `cloud/addons.py` functions the features
  switch uses). It installs only what is missing, waits until add-ons settle, and never
  installs nor removes a managed feature;
- hyperpod: `lifecycle` (bucket `sagemaker-hypd-...` + scripts); `hyperpod_roles` (execution
  role, autoscaling-ready cluster role); `compute_subnet` (/20 from the one allocator, on the
  private route table); `hyperpod_cluster` (NodeRecovery Automatic, NodeProvisioningMode
  Continuous; the first group from `cloud.capacity.instance_group_spec`, the one capacity
  function; waits InService; a Failed cluster is deleted and made again);
- storage: `s3_bucket` (shared bucket), `s3_volume` (PV + PVC `hypd-s3` via Mountpoint for S3
  CSI, mounted at `/s3`); with `fsx`, also `fsx` and `fsx_volume` (tasks/storage.py).

The create's dry run (`POST /clusters?dry_run=true`) changes nothing, and the route declares
it open to viewers (`@access(Role.OPERATOR, dry_run=True)`). The create runs
`cloud.preflight.check` first (412 `precondition_failed` with the checks) and refuses a zone
or an instance type AWS would refuse (422).

A stage re-run (`POST /clusters/<c>/stages/<s>/run`) is a `cluster.stage` operation holding
only that stage's steps, with the other steps' resources and outputs from the cluster's create
(and later re-runs) as its `inputs`.

`cluster.delete` goes in reverse. Its first step, `in_use` (no stage: it builds nothing, so a
refusal never reads as a stage's state), checks again what the route checked (see
cloud/dependents.py). Then LoadBalancer Services and hypd's claims, hypd's MLflow tracking
server (in the storage stage), HyperPod, compute subnets, lifecycle bucket, EKS, OIDC
provider and roles. Then the network if the create made it, after `network_in_use`: no other
cluster may have come to run in it, and the cluster's own settling interfaces are waited
for. In a VPC the user gave, only the security group the create made there goes: recorded by
the `existing_network` step as `made_security_group_id` and passed as the delete's
`security_group_id` (`delete_params`). The shared bucket is kept unless `?delete_data=true`.
Every delete step finds its resources by name or tags and treats "already gone" as done, so a
delete works from any point a create stopped at: before EKS existed (the Kubernetes steps
see no ACTIVE cluster and skip), mid-network (the network steps delete whatever carries the
network's tags), with EKS still CREATING (EKS's `ResourceInUseException` is a "not yet").

Imported clusters live in `hypd:imported-clusters` (tasks/registry.py): forgetting one never
calls AWS. The active cluster is `hypd:active-cluster:<token name>` (tasks/active.py).

The Kubernetes client (`cloud/eks.py`) is built from `describe_cluster` (endpoint, CA; TLS
always verified) with a token made as `aws eks get-token` makes it (presigned STS
GetCallerIdentity with `x-k8s-aws-id`), re-minted after 14 minutes; server-side apply and
reads go through `cloud/kube.py`.

Kubernetes versions are one table in the vocabulary, `vocabulary/kubernetes_versions.py`
(sources beside it): the minor versions SageMaker HyperPod documents for EKS, each with the EKS
release calendar's end of standard support (from then the cluster is billed for extended
support) and end of extended support (from then EKS no longer creates or runs it). The API
offers, as the create's and the upgrade's enum, the versions EKS still runs on the day the
process starts, and defaults to the newest. It refuses one past its extended support (422, with
the date) even if it ended while the process runs, before anything is made, since EKS would
refuse it only after hypd had made the network. The plan shows the version's support (`support`:
standard | extended, both dates) beside the EKS cluster and prices extended support when it
applies; `GET /clusters/<c>` shows the running version's (`eks.support`), and the cluster page
badges it (amber in extended support). When HyperPod documents a new version, one line is added
there; the Kubernetes upgrade tests need three offered versions and say so. """

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from cloud import (
    addons,
    capacity,
    dependencies,
    dependents,
    discovery,
    eks,
    hyperpod,
    iam,
    identity,
    kube,
    lifecycle,
    storage,
)
from cloud import networks as net
from cloud.aws import CLUSTER_TAG, MANAGED_BY, MANAGED_BY_VALUE, tags_for
from cloud.dependents import Dependent
from tasks import active, budgets, team_ledger
from tasks import mlflow as mlflow_kind
from tasks import networks as network_kind
from tasks import storage as storage_kind
from tasks.engine.kinds import OperationKind, Step, StepContext, StepFailed, StepRetry
from tasks.networks import NETWORK_CREATE
from tasks.outcomes import guarded, output
from vocabulary import stage_times
from vocabulary.capacity import ON_DEMAND

GROUP_NAME = "workers"
S3_CLAIM = storage.DEFAULT_CLAIM


# shared reads ------------------------------------------------------------------------------

def _name(ctx: StepContext) -> str:
    return ctx.params["name"]


def _network(ctx: StepContext) -> dict[str, Any]:
    """The VPC, private subnets and security group, from whichever network stage ran."""
    if "existing_network" in ctx.outputs:
        return ctx.outputs["existing_network"]
    return {
        "vpc_id": output(ctx, "vpc", "vpc_id"),
        "private_subnet_ids": output(ctx, "subnets", "private_subnet_ids"),
        "security_group_id": output(ctx, "security_group", "security_group_id"),
    }


def _account(ctx: StepContext) -> str:
    return iam.account_id(ctx.client("sts"))


def _cluster_tags(ctx: StepContext, **extra: str) -> dict[str, str]:
    return {MANAGED_BY: MANAGED_BY_VALUE, CLUSTER_TAG: _name(ctx), **extra}


# network stage -----------------------------------------------------------------------------

@guarded
def use_existing_network(ctx: StepContext) -> dict[str, Any]:
    """An existing VPC given by id: check it and its subnets (two zones at least); make a
    hypd security group in it unless one was given."""
    given = ctx.params["existing_vpc"]
    ec2 = ctx.client("ec2")
    checked = net.existing_vpc(ec2, given["vpc_id"], given["subnet_ids"])
    group = given.get("security_group_id")
    if not group:
        # recorded as made by this create, so that deleting the cluster deletes it too
        group = net.ensure_security_group(
            ec2, _name(ctx), given["vpc_id"],
            record=lambda **made: ctx.record(made_security_group_id=made["security_group_id"]),
        )["security_group_id"]
    return {"vpc_id": checked["vpc_id"], "private_subnet_ids": checked["subnet_ids"],
            "security_group_id": group, "availability_zones": checked["availability_zones"]}


# eks stage ---------------------------------------------------------------------------------

@guarded
def ensure_eks_role(ctx: StepContext) -> dict[str, Any]:
    spec = iam.eks_cluster_role(_name(ctx), ctx.region)
    return {"role_arn": iam.ensure_role_spec(ctx.client("iam"), spec)}


@guarded
def ensure_eks_cluster(ctx: StepContext) -> dict[str, Any]:
    network = _network(ctx)
    cluster = eks.ensure_cluster(
        ctx.client("eks"), _name(ctx), output(ctx, "eks_role", "role_arn"),
        network["private_subnet_ids"], [network["security_group_id"]],
        version=ctx.params.get("kubernetes_version"),
        tags=_cluster_tags(ctx), client_request_token=ctx.token("eks"),
    )
    return {"cluster_name": cluster["name"], "cluster_arn": cluster["arn"]}


@guarded
def wait_eks_cluster(ctx: StepContext) -> float | None:
    return eks.cluster_wait(ctx.client("eks"), _name(ctx))


@guarded
def ensure_eks_access(ctx: StepContext) -> dict[str, Any]:
    """The panel's own role gets an access entry *and* the cluster-admin access policy (an
    entry alone grants nothing); the OIDC provider makes IRSA possible for add-ons."""
    principal = eks.panel_principal_arn(ctx.client("sts"), ctx.client("iam"))
    access = eks.ensure_access(ctx.client("eks"), _name(ctx), principal)
    issuer = eks.describe(ctx.client("eks"), _name(ctx))["identity"]["oidc"]["issuer"]
    provider = eks.ensure_oidc_provider(ctx.client("iam"), issuer, _name(ctx))
    return {"principal_arn": access["principal_arn"], "policy_arn": access["policy_arn"],
            "oidc_issuer": issuer, "oidc_provider_arn": provider}


# activate stage ----------------------------------------------------------------------------

@guarded
def activate(ctx: StepContext) -> dict[str, Any]:
    """Only a cluster that is ACTIVE and answers becomes the caller's active cluster."""
    found = eks.describe(ctx.client("eks"), _name(ctx))
    if found is None or found.get("status") != eks.ACTIVE:
        raise StepRetry(f"EKS cluster {_name(ctx)} is not ACTIVE yet")
    active.set_active(ctx.redis, ctx.actor, _name(ctx))
    return {"active_for": ctx.actor}


# dependencies stage ------------------------------------------------------------------------

@guarded
def install_dependencies(ctx: StepContext) -> dict[str, Any]:
    """Compare installed with the base set and install only what is missing. Managed
    features are the features switch's (tasks/features.py): a re-run neither installs one
    that is off nor removes one that is on."""
    cluster = _name(ctx)
    client = ctx.client("eks")
    api = eks.api_client(cluster, ctx.region)
    wanted = dependencies.desired()
    actions = addons.plan(wanted, addons.installed(client, api, cluster, wanted))
    done = [addons.apply(action, client, api, cluster, ctx.region,
                         client_token=ctx.token(action.dependency.name))
            for action in actions]
    return {"desired": [d.name for d in wanted], "actions": done}


@guarded
def wait_dependencies(ctx: StepContext) -> float | None:
    names = [d.name for d in dependencies.desired() if d.kind == dependencies.ADDON]
    state = addons.addons_settled(ctx.client("eks"), _name(ctx), names)
    if state["failed"]:
        raise StepFailed("add-ons failed: " + "; ".join(state["failed"]), "upstream_error")
    if state["missing"]:
        raise StepRetry("add-ons not yet requested: " + ", ".join(state["missing"]))
    return 15.0 if state["pending"] else None


# hyperpod stage ----------------------------------------------------------------------------

@guarded
def ensure_lifecycle(ctx: StepContext) -> dict[str, Any]:
    s3 = ctx.client("s3")
    bucket = lifecycle.ensure_lifecycle_bucket(
        s3, _name(ctx), ctx.region, lifecycle.lifecycle_bucket_tags(_name(ctx)),
        account_id=_account(ctx))
    uploaded = lifecycle.upload_scripts(s3, bucket["name"])
    return {"bucket": bucket["name"], "uri": uploaded["uri"], "on_create": uploaded["on_create"]}


@guarded
def ensure_hyperpod_roles(ctx: StepContext) -> dict[str, Any]:
    network = _network(ctx)
    account = _account(ctx)
    client = ctx.client("iam")
    execution = iam.hyperpod_execution_role(
        _name(ctx), ctx.region, account, _name(ctx), output(ctx, "lifecycle", "bucket"),
        network["vpc_id"], network["private_subnet_ids"], [network["security_group_id"]])
    cluster_role = iam.hyperpod_cluster_role(_name(ctx), ctx.region, account)
    return {"execution_role_arn": iam.ensure_role_spec(client, execution),
            "cluster_role_arn": iam.ensure_role_spec(client, cluster_role)}


@guarded
def ensure_compute_subnet(ctx: StepContext) -> dict[str, Any]:
    """The first instance group's /20, from the one subnet allocator, in the chosen zone."""
    network = _network(ctx)
    zone = ctx.params["availability_zone"]
    ec2 = ctx.client("ec2")
    # Nodes reach out through the network's NAT gateway: use its private route table.
    route_table = (ctx.outputs.get("route_tables") or {}).get("private_route_table_id") or (
        capacity.route_table_of_subnet(ec2, network["vpc_id"], network["private_subnet_ids"][0]))
    subnet = capacity.allocate_compute_subnet(
        ec2, network["vpc_id"], zone, capacity.compute_subnet_tags(_name(ctx), GROUP_NAME, zone),
        lock=lambda: ctx.lock(f"vpc/{network['vpc_id']}"), route_table_id=route_table)
    return {"subnet_id": subnet["id"], "cidr": subnet["cidr"], "availability_zone": zone}


def first_group_spec(params: dict[str, Any], outputs: dict[str, dict[str, Any]],
                     instance_info: dict[str, Any] | None, region: str) -> dict[str, Any]:
    """The first instance group, built by the one capacity function that adding groups
    later uses unchanged."""
    network = outputs.get("existing_network") or {
        "security_group_id": outputs["security_group"]["security_group_id"]}
    return capacity.instance_group_spec(
        name=GROUP_NAME,
        instance_type=params["instance_type"],
        count=params["instance_count"],
        execution_role_arn=outputs["hyperpod_roles"]["execution_role_arn"],
        lifecycle_s3_uri=outputs["lifecycle"]["uri"],
        on_create=outputs["lifecycle"]["on_create"],
        subnet_id=outputs["compute_subnet"]["subnet_id"],
        security_group_ids=[network["security_group_id"]],
        capacity_type=params.get("capacity_type") or ON_DEMAND,
        training_plan_arn=params.get("training_plan_arn"),
        interface_mode=params.get("efa_mode"),
        instance_info=instance_info,
        deep_health_checks=capacity.DEEP_HEALTH_CHECKS if params.get("deep_health_checks")
        else (),
        region=region,
    )


@guarded
def ensure_hyperpod_cluster(ctx: StepContext) -> dict[str, Any]:
    sm = ctx.client("sagemaker")
    state = hyperpod.cluster_state(sm, _name(ctx))
    if state is not None and state["failed"]:
        # A failed cluster is not adopted: delete it, then create it again.
        hyperpod.delete_cluster(sm, _name(ctx), owner=_name(ctx))
        raise StepRetry(f"deleting the failed HyperPod cluster ({state['failure_message']}) "
                        "before creating it again", 30.0)
    if state is not None and state["status"] == hyperpod.DELETING:
        raise StepRetry("the previous HyperPod cluster of that name is still being deleted",
                        30.0)
    network = _network(ctx)
    info = discovery.instance_type(ctx.client("ec2"), ctx.params["instance_type"])
    group = first_group_spec(ctx.params, ctx.outputs, info, ctx.region)
    request = hyperpod.cluster_request(
        _name(ctx), output(ctx, "eks_cluster", "cluster_arn"), [network["security_group_id"]],
        [output(ctx, "compute_subnet", "subnet_id")], [group],
        output(ctx, "hyperpod_roles", "cluster_role_arn"), owner=_name(ctx))
    arn = hyperpod.ensure_cluster(sm, request)
    return {"cluster_name": request["ClusterName"], "cluster_arn": arn,
            "instance_groups": [GROUP_NAME]}


@guarded
def wait_hyperpod_cluster(ctx: StepContext) -> float | None:
    state = hyperpod.cluster_state(ctx.client("sagemaker"), _name(ctx))
    if state is None:
        raise StepFailed(f"HyperPod cluster {_name(ctx)} disappeared while being created",
                         "upstream_error")
    if state["failed"]:
        raise StepFailed(f"HyperPod cluster {_name(ctx)} failed: "
                         f"{state['failure_message'] or 'no message from SageMaker'}",
                         "upstream_error")
    return None if state["ready"] else 30.0


# storage stage -----------------------------------------------------------------------------

def _shared_item(ctx: StepContext) -> storage_kind.Item:
    """The shared bucket, mounted by pods at /s3 (claim `hypd-s3`)."""
    return storage_kind.Item(cluster=_name(ctx), name=S3_CLAIM, kind="s3", shared=True,
                             mount_path=storage.DEFAULT_MOUNT_PATH)


def _fsx_item(ctx: StepContext) -> storage_kind.Item:
    """The create's FSx for Lustre file system (claim `hypd-fsx`), beside the instances in
    the compute subnet, in the nodes' security group."""
    fsx = ctx.params["fsx"]
    network = ctx.outputs.get("existing_network") or ctx.outputs.get("security_group") or {}
    return storage_kind.Item(
        cluster=_name(ctx), name=storage_kind.FSX_CLAIM, kind="fsx",
        mount_path=storage_kind.FSX_MOUNT_PATH,
        capacity_gib=fsx.get("storage_capacity_gib") or 1200,
        deployment_type=fsx.get("deployment_type") or "PERSISTENT_2",
        throughput=fsx.get("per_unit_storage_throughput"),
        subnet_id=(ctx.outputs.get("compute_subnet") or {}).get("subnet_id"),
        security_group_id=network.get("security_group_id"))


# delete ------------------------------------------------------------------------------------

def delete_dependents(ec2: Any, eks_client: Any, sm: Any, conn: Any, api: Any | None,
                      name: str, network: bool) -> list[Dependent]:
    """What a cluster's delete would break: the workloads running on it (when its Kubernetes
    API can be read: cloud/dependents.py), and — when the delete would remove the network
    its create made — every other cluster in that network (not forceable)."""
    found = dependents.cluster_workloads(api) if api is not None else []
    view = net.get_network(ec2, name) if network else None
    if view is not None:
        found += network_kind.in_use(ec2, eks_client, sm, conn, view, interfaces=False,
                                     leaving=name)
    return found


@guarded
def check_unused(ctx: StepContext) -> dict[str, Any]:
    """The delete's first step: what the request was checked for, again, before anything
    goes (a job submitted, or a cluster made in its network, since)."""
    found = delete_dependents(ctx.client("ec2"), ctx.client("eks"), ctx.client("sagemaker"),
                              ctx.redis, _reachable_api(ctx), _name(ctx),
                              bool(ctx.params.get("network")))
    dependents.refuse(f"cluster {_name(ctx)}", found, bool(ctx.params.get("force")))
    return {"dependents": len(found), "forced": bool(found)}


def _reachable_api(ctx: StepContext) -> Any | None:
    """The cluster's Kubernetes API, or None when the EKS cluster is gone or not ACTIVE."""
    found = eks.describe(ctx.client("eks"), _name(ctx))
    if not found or found.get("status") != eks.ACTIVE:
        return None
    return eks.api_client(_name(ctx), ctx.region)


@guarded
def delete_kubernetes_objects(ctx: StepContext) -> dict[str, Any]:
    """Services of type LoadBalancer and volume claims first, so the AWS load balancers and
    volumes behind them are released by their controllers before the cluster goes."""
    api = _reachable_api(ctx)
    if api is None:
        return {"skipped": "the EKS cluster is not reachable"}
    # What backs hypd's volumes, before they go: a delete asked to delete the data also
    # deletes the buckets hypd made for storage items (delete_shared_bucket).
    buckets = [{"storage": v["name"], "bucket": v["bucket"]} for v in storage.volumes(api)
               if v["bucket"] and v["name"] != S3_CLAIM]
    ctx.record(storage_buckets=sorted(buckets, key=lambda b: b["storage"])
               + [b for b in ctx.resources.get("storage_buckets") or () if b not in buckets])
    deleted = []
    for svc in kube.list_objects(api, "v1", "Service"):
        if (svc.get("spec") or {}).get("type") == "LoadBalancer":
            meta = svc["metadata"]
            kube.delete_object(api, "v1", "Service", meta["name"], meta.get("namespace"))
            deleted.append(f"Service/{meta.get('namespace')}/{meta['name']}")
    for claim in kube.list_objects(api, "v1", "PersistentVolumeClaim"):
        meta = claim["metadata"]
        if kube.managed_by_hypd(claim):
            storage.delete_volume(api, meta["name"], meta.get("namespace") or "default")
            deleted.append(f"PersistentVolumeClaim/{meta.get('namespace')}/{meta['name']}")
    return {"deleted": deleted}


@guarded
def wait_load_balancers_gone(ctx: StepContext) -> float | None:
    api = _reachable_api(ctx)
    if api is None:
        return None
    left = [s for s in kube.list_objects(api, "v1", "Service")
            if (s.get("spec") or {}).get("type") == "LoadBalancer"]
    return 15.0 if left else None


@guarded
def delete_hyperpod_cluster(ctx: StepContext) -> dict[str, Any]:
    started = hyperpod.delete_cluster(ctx.client("sagemaker"), _name(ctx), owner=_name(ctx))
    return {"deleting": started}


@guarded
def wait_hyperpod_gone(ctx: StepContext) -> float | None:
    return None if hyperpod.cluster_state(ctx.client("sagemaker"), _name(ctx)) is None else 30.0


@guarded
def delete_compute_subnets(ctx: StepContext) -> dict[str, Any]:
    return {"deleted": capacity.delete_compute_subnets(ctx.client("ec2"), _name(ctx))}


@guarded
def delete_lifecycle_bucket(ctx: StepContext) -> dict[str, Any]:
    name = lifecycle.lifecycle_bucket_name(_name(ctx), _account(ctx), ctx.region)
    gone = storage.delete_bucket(ctx.client("s3"), name,
                                 lifecycle.lifecycle_bucket_tags(_name(ctx)))
    return {"bucket": name, "deleted": gone}


@guarded
def delete_shared_bucket(ctx: StepContext) -> dict[str, Any]:
    """The shared bucket holds the user's data (models, checkpoints): deleted only when the
    delete request asked for it."""
    name = storage.shared_bucket_name(_name(ctx), _account(ctx), ctx.region)
    if not ctx.params.get("delete_data"):
        return {"bucket": name, "kept": True}
    s3 = ctx.client("s3")
    gone = storage.delete_bucket(s3, name,
                                 tags_for(CLUSTER_TAG, _name(ctx), role="shared-bucket"))
    # ... and the buckets hypd made for storage items (not buckets users named)
    items = []
    for found in (ctx.outputs.get("kubernetes_objects") or {}).get("storage_buckets") or ():
        owner = storage_kind.storage_tags(_name(ctx), found["storage"])
        try:
            info = storage.bucket_info(s3, found["bucket"])
        except storage.StorageError:
            continue
        if info is not None and storage_kind.carries(info["tags"], owner):
            storage.delete_bucket(s3, found["bucket"], owner)
            items.append(found["bucket"])
    return {"bucket": name, "deleted": gone, "storage_buckets_deleted": items}


@guarded
def delete_eks_cluster(ctx: StepContext) -> dict[str, Any]:
    found = eks.describe(ctx.client("eks"), _name(ctx))
    issuer = ((found or {}).get("identity") or {}).get("oidc", {}).get("issuer")
    if issuer:
        ctx.record(oidc_issuer=issuer)
    return {"deleting": eks.delete_cluster(ctx.client("eks"), _name(ctx))}


@guarded
def wait_eks_gone(ctx: StepContext) -> float | None:
    delay = eks.cluster_gone(ctx.client("eks"), _name(ctx))
    if delay is None:
        eks.forget_client(_name(ctx), ctx.region)
    return delay


@guarded
def delete_identity(ctx: StepContext) -> dict[str, Any]:
    # the issuer as the EKS cluster reported it before it went — or, when an earlier delete
    # took the cluster already, as the create recorded it (params `oidc_issuer`)
    issuer = (ctx.outputs.get("eks_cluster") or {}).get("oidc_issuer") or ctx.params.get(
        "oidc_issuer")
    oidc = eks.delete_oidc_provider(ctx.client("iam"), issuer, _name(ctx)) if issuer else False
    roles = iam.delete_cluster_roles(ctx.client("iam"), _name(ctx))
    # the inference operator's TLS bucket goes with its role (a feature turned off removes
    # both; a cluster deleted with the feature on, here)
    tls = storage.tls_bucket_name(_name(ctx), _account(ctx), ctx.region)
    tls_deleted = storage.delete_bucket(ctx.client("s3"), tls,
                                        identity.tls_bucket_tags(_name(ctx)))
    return {"oidc_provider_deleted": oidc, "roles_deleted": roles,
            "tls_bucket_deleted": tls_deleted}


@guarded
def delete_made_security_group(ctx: StepContext) -> dict[str, Any]:
    """In a VPC the user gave, only the security group the create made goes (by its id and
    hypd's tags for the cluster); the VPC and its subnets are the user's."""
    group = ctx.params["security_group_id"]
    return {"deleted": net.delete_security_groups(ctx.client("ec2"), _name(ctx), only=group)}


def clear_active(ctx: StepContext) -> dict[str, Any]:
    """The panel's records of the cluster go with it: the active-cluster choices naming it,
    its budgets (its teams' too), its place among the clusters with teams."""
    active.clear_everywhere(ctx.redis, _name(ctx))
    budgets.forget_cluster(ctx.redis, _name(ctx))
    team_ledger.unmark(ctx.redis, _name(ctx))
    return {}


# the kinds ---------------------------------------------------------------------------------

def _staged(stage: str, *steps: Step) -> tuple[Step, ...]:
    return tuple(dataclasses.replace(s, stage=stage) for s in steps)


NETWORK_STEPS = _staged("network", *NETWORK_CREATE.steps)
EXISTING_NETWORK = _staged("network", Step("existing_network", "Check the existing VPC",
                                           use_existing_network))
EKS_STEPS = _staged(
    "eks",
    Step("eks_role", "Create the EKS cluster role", ensure_eks_role),
    Step("eks_cluster", "Create the EKS control plane ({}-{} minutes on AWS)".format(
        *stage_times.TYPICAL_MINUTES["eks"]),
         ensure_eks_cluster, wait_eks_cluster),
    Step("eks_access", "Grant the panel access; create the OIDC provider", ensure_eks_access),
)
ACTIVATE_STEPS = _staged("activate", Step("activate", "Make it the active cluster", activate))
DEPENDENCY_STEPS = _staged(
    "dependencies",
    Step("dependencies", "Install missing EKS add-ons and HyperPod dependencies",
         install_dependencies, wait_dependencies),
)
HYPERPOD_STEPS = _staged(
    "hyperpod",
    Step("lifecycle", "Upload lifecycle scripts to S3", ensure_lifecycle),
    Step("hyperpod_roles", "Create the HyperPod execution and cluster roles",
         ensure_hyperpod_roles),
    Step("compute_subnet", "Allocate the /20 compute subnet", ensure_compute_subnet),
    Step("hyperpod_cluster", "Create the HyperPod cluster", ensure_hyperpod_cluster,
         wait_hyperpod_cluster),
)
STORAGE_STEPS = _staged("storage", *storage_kind.s3_steps(
    _shared_item, "Create the shared S3 bucket", "Mount the bucket at /s3 (PV + PVC)"))
FSX_STEPS = _staged("storage", *storage_kind.fsx_steps(_fsx_item))
ALL_STEPS = (NETWORK_STEPS + EXISTING_NETWORK + EKS_STEPS + ACTIVATE_STEPS + DEPENDENCY_STEPS
             + HYPERPOD_STEPS + STORAGE_STEPS + FSX_STEPS)


def create_steps(params: dict[str, Any]) -> tuple[Step, ...]:
    network = EXISTING_NETWORK if params.get("existing_vpc") else NETWORK_STEPS
    return (network + EKS_STEPS + ACTIVATE_STEPS + DEPENDENCY_STEPS + HYPERPOD_STEPS
            + STORAGE_STEPS + (FSX_STEPS if params.get("fsx") else ()))


def stage_steps(params: dict[str, Any]) -> tuple[Step, ...]:
    """The steps of one stage, as the cluster's create chose them."""
    return tuple(s for s in create_steps(params) if s.stage == params["stage"])


def cluster_url(params: dict[str, Any]) -> str:
    return f"/api/v1/clusters/{params['name']}"


CHECK_UNUSED = Step("in_use", "Check that nothing runs on the cluster", check_unused)
"""No stage: it builds nothing, so a refusal never reads as a stage's state."""


def _delete_steps() -> tuple[Step, ...]:
    return (
        CHECK_UNUSED,
        *_staged("storage",
                 Step("kubernetes_objects", "Delete load balancer Services and volume claims",
                      delete_kubernetes_objects, wait_load_balancers_gone),
                 mlflow_kind.cluster_delete_step(_name),
                 *storage_kind.file_system_steps(
                     lambda ctx: tags_for(CLUSTER_TAG, _name(ctx)),
                     "Delete the FSx for Lustre file systems hypd made for the cluster"),
                 Step("s3_bucket", "Delete the shared bucket (only if asked)",
                      delete_shared_bucket)),
        *_staged("hyperpod",
                 Step("hyperpod_cluster", "Delete the HyperPod cluster",
                      delete_hyperpod_cluster, wait_hyperpod_gone),
                 Step("compute_subnet", "Delete the compute subnets", delete_compute_subnets),
                 Step("lifecycle", "Delete the lifecycle bucket", delete_lifecycle_bucket)),
        *_staged("activate", Step("activate", "Forget it as an active cluster", clear_active)),
        *_staged("eks",
                 Step("eks_cluster", "Delete the EKS cluster", delete_eks_cluster,
                      wait_eks_gone),
                 Step("identity", "Delete the OIDC provider and IAM roles", delete_identity)),
        *_staged("network",
                 Step("network_in_use", "Check that no other cluster runs in the network",
                      *network_kind.unused_check(others_only=True)),
                 *network_kind.TEARDOWN),
        *_staged("network", Step("existing_network",
                                 "Delete the security group hypd made in the existing VPC",
                                 delete_made_security_group)),
    )


DELETE_STEPS = _delete_steps()


def delete_steps(params: dict[str, Any]) -> tuple[Step, ...]:
    """The network goes too only when the cluster's create made it; in a VPC the user gave,
    only the security group the create made there (params `security_group_id`)."""
    if params.get("network"):
        return tuple(s for s in DELETE_STEPS if s.name != "existing_network")
    return tuple(s for s in DELETE_STEPS if s.stage != "network"
                 or (s.name == "existing_network" and params.get("security_group_id")))


def delete_params(name: str, region: str, create: dict[str, Any] | None,
                  delete_data: bool) -> dict[str, Any]:
    """A delete's params from the create's record: whether it made the network, which
    security group it made in an existing VPC, and the OIDC issuer it registered (so that a
    delete after one that already took the EKS cluster still finds its OIDC provider)."""
    recorded = {s["name"]: s["resources"] for s in (create or {}).get("steps") or ()}
    existing = (create or {}).get("params", {}).get("existing_vpc")
    return {"name": name, "region": region, "network": not existing,
            "security_group_id": (recorded.get("existing_network") or {}).get(
                "made_security_group_id") if existing else None,
            "oidc_issuer": (recorded.get("eks_access") or {}).get("oidc_issuer"),
            "delete_data": delete_data}


# what a create made, by step ---------------------------------------------------------------

Made = Callable[[dict[str, Any], str, bool], list[tuple[str, str]]]
"""(the step's recorded resources, the cluster's name, whether the step was attempted) →
[(type, id)] of what it made."""


def _ids(*keys: tuple[str, str]) -> Made:
    def made(resources: dict[str, Any], name: str, started: bool) -> list[tuple[str, str]]:
        return [(kind, resources[key]) for kind, key in keys if resources.get(key)]
    return made


def _named(*keys: tuple[str, str, Callable[[str], str]]) -> Made:
    """Resources whose names derive from the cluster's: as recorded, else — once the step
    started, in case it made one and stopped before recording it — by that name."""
    def made(resources: dict[str, Any], name: str, started: bool) -> list[tuple[str, str]]:
        found = [(kind, resources.get(key) or (name_of(name) if started else None))
                 for kind, key, name_of in keys]
        return [(kind, value) for kind, value in found if value]
    return made


def _subnets(resources: dict[str, Any], name: str, started: bool) -> list[tuple[str, str]]:
    return [("subnet", s["id"]) for s in resources.get("subnets") or () if s.get("id")]


def _shared_bucket(resources: dict[str, Any], name: str,
                   started: bool) -> list[tuple[str, str]]:
    """The create's bucket, not one the user named."""
    return [("s3_bucket", resources["bucket"])] if resources.get("made_by_hypd") else []


def _role(purpose: str) -> Callable[[str], str]:
    return lambda name: iam.role_name(name, purpose)


def _same(name: str) -> str:
    return name


MADE_BY_STEP: dict[str, Made] = {
    "vpc": _ids(("vpc", "vpc_id")),
    "subnets": _subnets,
    "internet_gateway": _ids(("internet_gateway", "internet_gateway_id")),
    "nat_gateway": _ids(("nat_gateway", "nat_gateway_id"), ("elastic_ip", "allocation_id")),
    "route_tables": _ids(("route_table", "public_route_table_id"),
                         ("route_table", "private_route_table_id")),
    "security_group": _ids(("security_group", "security_group_id")),
    "s3_endpoint": _ids(("vpc_endpoint", "s3_endpoint_id")),
    "existing_network": _ids(("security_group", "made_security_group_id")),
    "eks_role": _named(("iam_role", "role_arn", _role(iam.PURPOSE_EKS_CLUSTER))),
    "eks_cluster": _named(("eks_cluster", "cluster_name", _same)),
    "eks_access": _ids(("oidc_provider", "oidc_provider_arn")),
    "lifecycle": _ids(("s3_bucket", "bucket")),
    "hyperpod_roles": _named(
        ("iam_role", "execution_role_arn", _role(iam.PURPOSE_HYPERPOD_EXECUTION)),
        ("iam_role", "cluster_role_arn", _role(iam.PURPOSE_HYPERPOD_CLUSTER))),
    "compute_subnet": _ids(("subnet", "subnet_id")),
    "hyperpod_cluster": _named(("hyperpod_cluster", "cluster_name", _same)),
    "s3_bucket": _shared_bucket,
    "fsx": _ids(("fsx_file_system", "file_system_id")),
}
"""What each step of `cluster.create` makes in AWS, as (type, id) from the resources it
recorded (`started`: the step was attempted). What goes with another resource is not
listed: access entries and add-ons with the EKS cluster, routes with their tables, the
volume claims with the cluster's Kubernetes. The cluster's read lists which still exist."""


def made(step: dict[str, Any], name: str) -> list[tuple[str, str]]:
    """What one recorded step of a create (or stage re-run) made: [(type, id)]."""
    found = MADE_BY_STEP.get(step["name"])
    if found is None:
        return []
    return [(kind, value.rsplit("/", 1)[-1] if kind == "iam_role" else value)  # role name
            for kind, value in found(step.get("resources") or {}, name,
                                     bool(step.get("attempts")))]


CLUSTER_CREATE = OperationKind(
    name="cluster.create", steps=ALL_STEPS, select=create_steps, resource_url=cluster_url)
CLUSTER_STAGE = OperationKind(
    name="cluster.stage", steps=ALL_STEPS, select=stage_steps, resource_url=cluster_url)
CLUSTER_DELETE = OperationKind(
    name="cluster.delete", steps=DELETE_STEPS, select=delete_steps, resource_url=cluster_url)
