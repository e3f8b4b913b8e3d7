"""Operation kinds for storage: `storage.create` and `storage.delete`, target
`cluster/<c>/storage/<s>`, and the storage steps a cluster's create and delete share.

A storage item is a named volume claim in a cluster, backed by an S3 bucket (through the
Mountpoint for S3 CSI driver) or an FSx for Lustre file system (through the FSx CSI driver).
The steps take the item they work on from a resolver (`Item` from the step's context), so one
implementation serves a `storage.create` (the item is the request) and the cluster create's
storage stage (the shared bucket `hypd-s3`, and `hypd-fsx` when the create asked for FSx):

- `s3_bucket`: a new bucket hypd makes and tags for the item, or the user's existing bucket,
  only checked (hypd never changes or deletes a bucket it did not make);
- `s3_volume`, `fsx_volume`: the PV + PVC, by server-side apply (for FSx, the FSx CSI driver
  add-on is installed first when the cluster lacks it: without it no pod can mount the
  volume);
- `fsx`: the file system, adopted by its tags or created with a client token, then waited
  for until AVAILABLE (a FAILED one is deleted and made again).

`storage.delete` refuses (fails with `conflict`) while a workload mounts the claim, deletes
the PVC and PV, then the bucket or file system only when its tags say hypd made it for this
item. The cluster delete reuses `delete_file_systems` for every file system of the cluster.

Storage items, as built.

`GET/POST /api/v1/clusters/<c>/storage`, `GET/DELETE …/storage/<s>`: items of kind `s3` (a
bucket hypd makes, or an existing one the user names — then only its PV/PVC are hypd's) or
`fsx` (FSx for Lustre in the compute subnet with the nodes' security group), each mounted as
PVC `<s>`; creates and deletes are operations on `cluster/<c>/storage/<s>`. A delete is
refused (409 `in_use`, naming each user; no force) while a running pod, job, deployment or
statefulset mounts the claim. The create's storage stage runs the same step
functions (`fsx`, `fsx_volume` when the request has `fsx`). The sandbox answers FSx through
`sandbox/gaps/fsx.py` (moto's lacks lifecycle, mount name and client tokens). Every bucket
hypd makes (`cloud.storage.ensure_bucket`: items, the shared bucket, lifecycle scripts) is
tagged by its CreateBucket (`CreateBucketConfiguration.Tags`; hypd's role has
`s3:TagResource` for it) and adopted on a re-run only when it carries hypd's tags, so a crash
right after the create leaves a bucket the retry adopts (sandbox/moto_fidelity.py keeps
those tags, which moto drops).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from cloud import dependencies, eks, iam, identity, kube, requirements, storage
from cloud.aws import CLUSTER_TAG, tags_for
from tasks.engine.kinds import OperationKind, Step, StepContext, StepFailed, StepRetry
from tasks.outcomes import guarded, output

SHARED_CLAIM = storage.DEFAULT_CLAIM  # the cluster create's shared bucket, at /s3
FSX_CLAIM = "hypd-fsx"  # the cluster create's file system
FSX_MOUNT_PATH = "/fsx"
FSX_FAILED = ("FAILED", "MISCONFIGURED", "MISCONFIGURED_UNAVAILABLE")


@dataclasses.dataclass(frozen=True)
class Item:
    """One storage item: a claim `name` in `namespace` of `cluster`, and what backs it."""

    cluster: str
    name: str
    kind: str  # "s3" | "fsx"
    namespace: str = storage.DEFAULT_NAMESPACE
    # s3
    bucket: str | None = None
    """An existing bucket the user named: checked and mounted, never changed or deleted."""
    shared: bool = False
    """The cluster's shared bucket (named and tagged as the cluster create always did)."""
    prefix: str | None = None
    read_only: bool = False
    mount_path: str | None = None
    # fsx
    capacity_gib: int = 1200
    deployment_type: str = "PERSISTENT_2"
    throughput: int | None = None
    subnet_id: str | None = None
    security_group_id: str | None = None

    def owner_tags(self) -> list[dict[str, str]]:
        return storage_tags(self.cluster, self.name)

    def bucket_tags(self) -> list[dict[str, str]]:
        if self.shared:
            return tags_for(CLUSTER_TAG, self.cluster, role="shared-bucket")
        return tags_for(CLUSTER_TAG, self.cluster, role="storage", storage=self.name)

    def fsx_tags(self) -> list[dict[str, str]]:
        return tags_for(CLUSTER_TAG, self.cluster, role="storage", storage=self.name,
                        Name=f"hypd-{self.cluster}-{self.name}")


Resolve = Callable[[StepContext], Item]


def storage_tags(cluster: str, name: str) -> list[dict[str, str]]:
    """The tags that say hypd made a bucket or file system for this storage item: removing
    the item deletes what carries all of them, and nothing else."""
    return tags_for(CLUSTER_TAG, cluster, storage=name)


def carries(tags: dict[str, str], wanted: list[dict[str, str]]) -> bool:
    return all(tags.get(t["Key"]) == t["Value"] for t in wanted)


def requested(ctx: StepContext) -> Item:
    """The item a `storage.*` operation works on: its request."""
    p = ctx.params
    s3 = p.get("s3") or {}
    fsx = p.get("fsx") or {}
    return Item(
        cluster=p["cluster"], name=p["name"], kind=p["kind"],
        namespace=p.get("namespace") or storage.DEFAULT_NAMESPACE,
        bucket=s3.get("bucket"), prefix=s3.get("prefix"), read_only=bool(s3.get("read_only")),
        capacity_gib=fsx.get("storage_capacity_gib") or 1200,
        deployment_type=fsx.get("deployment_type") or "PERSISTENT_2",
        throughput=fsx.get("per_unit_storage_throughput"),
    )


def _account(ctx: StepContext) -> str:
    return iam.account_id(ctx.client("sts"))


def _api(ctx: StepContext, cluster: str) -> Any:
    return eks.api_client(cluster, ctx.region)


def _applied(objects: list[dict[str, Any]]) -> list[str]:
    return [f"{o['kind']}/{o['metadata']['name']}" for o in objects]


# s3 -----------------------------------------------------------------------------------------

@guarded
def ensure_s3_bucket(ctx: StepContext, item: Resolve) -> dict[str, Any]:
    it = item(ctx)
    s3 = ctx.client("s3")
    if it.bucket:
        info = storage.bucket_info(s3, it.bucket)
        if info is None:
            raise StepFailed(f"bucket {it.bucket!r} does not exist (or this panel's role may "
                             "not see it)", "not_found")
        return {"bucket": it.bucket, "region": info["region"], "made_by_hypd": False}
    if it.shared:
        name = storage.shared_bucket_name(it.cluster, _account(ctx), ctx.region)
    else:
        name = storage.storage_bucket_name(it.cluster, it.name, _account(ctx), ctx.region)
    storage.ensure_bucket(s3, name, ctx.region, it.bucket_tags())
    return {"bucket": name, "region": ctx.region, "made_by_hypd": True}


@guarded
def apply_s3_volume(ctx: StepContext, item: Resolve) -> dict[str, Any]:
    """The bucket as a PV + PVC (Mountpoint for S3 CSI)."""
    it = item(ctx)
    bucket = output(ctx, "s3_bucket", "bucket")
    region = ctx.outputs["s3_bucket"].get("region") or ctx.region
    manifests = storage.s3_volume(bucket, region, claim_name=it.name, namespace=it.namespace,
                                  prefix=it.prefix, read_only=it.read_only, cluster=it.cluster)
    api = _api(ctx, it.cluster)
    done = {"objects": _applied([kube.server_side_apply(api, m) for m in manifests]),
            "claim": it.name, "namespace": it.namespace}
    if it.mount_path:
        done["mount_path"] = it.mount_path
    return done


# fsx ----------------------------------------------------------------------------------------

def _placement(ctx: StepContext, it: Item) -> dict[str, str]:
    if it.subnet_id and it.security_group_id:
        return {"subnet_id": it.subnet_id, "security_group_id": it.security_group_id}
    found = eks.describe(ctx.client("eks"), it.cluster)
    if found is None:
        raise StepFailed(f"EKS cluster {it.cluster} does not exist in {ctx.region}", "not_found")
    return storage.fsx_placement(ctx.client("ec2"), it.cluster, found)


@guarded
def ensure_fsx(ctx: StepContext, item: Resolve) -> dict[str, Any]:
    """The file system: adopted by its tags, or created (subnet beside the instances, the
    nodes' security group)."""
    it = item(ctx)
    fsx = ctx.client("fsx")
    failed = next((f for f in storage.find_fsx(fsx, it.fsx_tags())
                   if f.get("Lifecycle") in FSX_FAILED), None)
    if failed is not None:
        # A failed file system is not adopted: delete it, then create it again.
        storage.delete_fsx(fsx, failed["FileSystemId"], it.owner_tags())
        raise StepRetry(f"deleting the failed file system {failed['FileSystemId']} before "
                        "creating it again", 30.0)
    place = _placement(ctx, it)
    made = storage.ensure_fsx(fsx, place["subnet_id"], place["security_group_id"],
                              it.capacity_gib, it.deployment_type, it.fsx_tags(),
                              ctx.token("fsx"), per_unit_throughput=it.throughput)
    return {"file_system_id": made["id"], **place, "capacity_gib": made["capacity_gib"],
            "deployment_type": made["deployment_type"]}


@guarded
def wait_fsx(ctx: StepContext, item: Resolve) -> float | None:
    file_system_id = ctx.resources["file_system_id"]
    state = storage.fsx_state(ctx.client("fsx"), file_system_id)
    if state is None or state["lifecycle"] == "DELETING":
        raise StepFailed(f"file system {file_system_id} disappeared while being created",
                         "upstream_error")
    if state["lifecycle"] in FSX_FAILED:
        raise StepFailed(f"file system {file_system_id} is {state['lifecycle']}: "
                         f"{state['failure'] or 'no message from FSx'}; retry to make it again",
                         "upstream_error")
    if state["lifecycle"] != "AVAILABLE":
        raise StepRetry(f"file system {file_system_id} is {state['lifecycle']} (5-10 minutes "
                        "on AWS)", 30.0)
    return None


@guarded
def apply_fsx_volume(ctx: StepContext, item: Resolve) -> dict[str, Any]:
    it = item(ctx)
    file_system_id = output(ctx, "fsx", "file_system_id")
    state = storage.fsx_state(ctx.client("fsx"), file_system_id)
    if state is None:
        raise StepFailed(f"file system {file_system_id} no longer exists; retry the fsx step",
                         "upstream_error")
    manifests = storage.fsx_volume(file_system_id, state["dns_name"], state["mount_name"],
                                   state["capacity_gib"], claim_name=it.name,
                                   namespace=it.namespace, cluster=it.cluster)
    api = _api(ctx, it.cluster)
    driver = _ensure_fsx_driver(ctx, it.cluster, api)
    done = {"objects": _applied([kube.server_side_apply(api, m) for m in manifests]),
            "claim": it.name, "namespace": it.namespace, "file_system_id": file_system_id,
            "driver": driver}
    if it.mount_path:
        done["mount_path"] = it.mount_path
    return done


FSX_DRIVER = "aws-fsx-csi-driver"


def _ensure_fsx_driver(ctx: StepContext, cluster: str, api: Any) -> list[dict[str, Any]]:
    """The FSx CSI driver add-on, installed once per cluster (under the features mutex, as
    every shared dependency; a feature turned off never removes it: `sticky`)."""
    account = _account(ctx)
    facts = identity.facts(ctx.client("eks"), cluster, ctx.region, account,
                           storage.shared_bucket_name(cluster, account, ctx.region))
    with ctx.lock(f"features/{cluster}"):
        done = requirements.ensure(ctx.client("eks"), ctx.client("iam"), ctx.client("s3"),
                                   api, dependencies.with_requirements([FSX_DRIVER]), facts,
                                   ctx.region, ctx.token)
    return done["actions"]


def s3_steps(item: Resolve, bucket_title: str, volume_title: str) -> tuple[Step, ...]:
    return (
        Step("s3_bucket", bucket_title, functools.partial(ensure_s3_bucket, item=item)),
        Step("s3_volume", volume_title, functools.partial(apply_s3_volume, item=item)),
    )


def fsx_steps(item: Resolve) -> tuple[Step, ...]:
    return (
        Step("fsx", "Create the FSx for Lustre file system (5-10 minutes on AWS)",
             functools.partial(ensure_fsx, item=item), functools.partial(wait_fsx, item=item)),
        Step("fsx_volume", "Mount the file system (PV + PVC)",
             functools.partial(apply_fsx_volume, item=item)),
    )


# delete ---------------------------------------------------------------------------------------

def _target(ctx: StepContext) -> tuple[str, str, str]:
    p = ctx.params
    return p["cluster"], p["name"], p.get("namespace") or storage.DEFAULT_NAMESPACE


@guarded
def delete_claim(ctx: StepContext) -> dict[str, Any]:
    """Refuse while a workload mounts the claim; else delete the PVC and its PV, recording
    first what backs them."""
    cluster, name, namespace = _target(ctx)
    api = _api(ctx, cluster)
    current = next((v for v in storage.volumes(api) if v["name"] == name), None)
    if current is not None:
        namespace = current["namespace"] or namespace
        ctx.record(namespace=namespace, claim=current["claim"], bucket=current["bucket"],
                   file_system_id=current["file_system_id"])
    claim = (current or {}).get("claim") or name
    users = storage.claim_users(api, claim, namespace)
    if users:
        raise StepFailed(f"storage {name} is mounted by {', '.join(users)}: stop them first",
                         "conflict")
    deleted = storage.delete_volume(api, claim, namespace)
    return {"claim_deleted": deleted["claim"], "volume_deleted": deleted["volume"]}


@guarded
def wait_claim_gone(ctx: StepContext) -> float | None:
    cluster, name, namespace = _target(ctx)
    namespace = ctx.resources.get("namespace") or namespace
    claim = ctx.resources.get("claim") or name
    api = _api(ctx, cluster)
    left = [o for o in (kube.get_object(api, "v1", "PersistentVolumeClaim", claim, namespace),
                        kube.get_object(api, "v1", "PersistentVolume",
                                        storage.volume_name(namespace, claim))) if o]
    if left:
        raise StepRetry(f"{', '.join(o['kind'] for o in left)} still terminating", 10.0)
    return None


@guarded
def delete_item_bucket(ctx: StepContext) -> dict[str, Any]:
    """The bucket goes only when hypd made it for this storage item (by its tags)."""
    cluster, name, _ = _target(ctx)
    bucket = (ctx.outputs.get("volume") or {}).get("bucket") or ctx.params.get("bucket") or \
        storage.storage_bucket_name(cluster, name, _account(ctx), ctx.region)
    s3 = ctx.client("s3")
    try:
        info = storage.bucket_info(s3, bucket)
    except storage.StorageError:
        info = {"tags": {}}  # not ours to see: not ours to delete
    if info is None:
        return {"bucket": bucket, "deleted": False}
    if not carries(info["tags"], storage_tags(cluster, name)):
        return {"bucket": bucket, "kept": "not made by hypd for this storage"}
    ctx.record(bucket=bucket)
    return {"bucket": bucket, "deleted": storage.delete_bucket(s3, bucket,
                                                               storage_tags(cluster, name))}


OwnerTags = Callable[[StepContext], list[dict[str, str]]]


@guarded
def delete_file_systems(ctx: StepContext, owner: OwnerTags) -> dict[str, Any]:
    """Every file system carrying all of `owner`'s tags (hypd made it for that owner)."""
    tags = owner(ctx)
    fsx = ctx.client("fsx")
    found = [f["FileSystemId"] for f in storage.find_fsx(fsx, tags)]
    ids = sorted(set(found) | set(ctx.resources.get("file_system_ids") or ()))
    ctx.record(file_system_ids=ids)  # before deleting: a retry waits for these too
    for file_system_id in found:
        storage.delete_fsx(fsx, file_system_id, tags)
    return {"file_system_ids": ids}


@guarded
def wait_file_systems_gone(ctx: StepContext, owner: OwnerTags) -> float | None:
    fsx = ctx.client("fsx")
    left = [i for i in ctx.resources.get("file_system_ids") or ()
            if storage.fsx_state(fsx, i) is not None]
    if left:
        raise StepRetry(f"file systems still being deleted: {', '.join(left)}", 30.0)
    return None


def file_system_steps(owner: OwnerTags, title: str) -> tuple[Step, ...]:
    return (Step("fsx", title, functools.partial(delete_file_systems, owner=owner),
                 functools.partial(wait_file_systems_gone, owner=owner)),)


def _item_owner(ctx: StepContext) -> list[dict[str, str]]:
    cluster, name, _ = _target(ctx)
    return storage_tags(cluster, name)


# the kinds ------------------------------------------------------------------------------------

CREATE_STEPS = (
    s3_steps(requested, "Create the bucket, or check the existing one",
             "Mount the bucket (PV + PVC)")
    + fsx_steps(requested)
)
DELETE_STEPS = (
    Step("volume", "Check nothing mounts it; delete the PVC and PV", delete_claim,
         wait_claim_gone),
    Step("s3_bucket", "Delete the bucket if hypd made it", delete_item_bucket),
    *file_system_steps(_item_owner, "Delete the file system if hypd made it"),
)


def create_steps(params: dict[str, Any]) -> tuple[Step, ...]:
    prefix = "s3_" if params["kind"] == "s3" else "fsx"
    return tuple(s for s in CREATE_STEPS if s.name.startswith(prefix))


def delete_steps(params: dict[str, Any]) -> tuple[Step, ...]:
    backing = "s3_bucket" if params["kind"] == "s3" else "fsx"
    return tuple(s for s in DELETE_STEPS if s.name in ("volume", backing))


def storage_url(params: dict[str, Any]) -> str:
    return f"/api/v1/clusters/{params['cluster']}/storage/{params['name']}"


STORAGE_CREATE = OperationKind(
    name="storage.create", steps=CREATE_STEPS, select=create_steps, resource_url=storage_url)
STORAGE_DELETE = OperationKind(
    name="storage.delete", steps=DELETE_STEPS, select=delete_steps, resource_url=storage_url)
