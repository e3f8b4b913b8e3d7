"""Storage in a cluster: S3 buckets and FSx for Lustre file systems, each mounted as a
PersistentVolume + PersistentVolumeClaim named after the item.

Adding and removing are operations (`storage.create`, `storage.delete`, target
`cluster/<c>/storage/<s>`); the cluster create's storage stage runs the same steps. Reads
come from the cluster's Kubernetes (hypd's labelled PVs and PVCs, the workloads that mount
them) and from AWS (the bucket, the file system and its state), plus the operations still
running on an item.
"""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from app import context, mutations
from app.errors import ApiError
from app.permissions import access
from app.readmodels import clusters as readmodel
from app.readmodels import dependents
from app.readmodels.clusters import ClusterRef
from app.readmodels.kubeapi import api_for, not_active, talking_to
from cloud import aws, eks, kube, storage
from cloud.aws import CLUSTER_TAG, tag_dict, tags_for
from schemas.common import MutationReplySchema
from schemas.dependents import DestroyQuerySchema
from schemas.storage import (
    FsxSchema,
    S3Schema,
    StorageCreateSchema,
    StorageListSchema,
    StorageSchema,
)
from tasks.storage import STORAGE_CREATE, STORAGE_DELETE, carries, storage_tags
from vocabulary.operations import OpStatus
from vocabulary.roles import Role

blp = Blueprint("storage", __name__, url_prefix="/api/v1/clusters",
                description="Storage mounted in a cluster: S3 buckets and FSx for Lustre file "
                            "systems, each as a PV + PVC")

STORAGE_TAG = "hypd:storage"
RUNNING = OpStatus.active()


# reading items ----------------------------------------------------------------------------------

def _ops(cluster: str) -> dict[str, dict[str, Any]]:
    """The newest storage operation of each storage name of the cluster."""
    newest: dict[str, dict[str, Any]] = {}
    prefix = f"cluster/{cluster}/storage/"
    for op in context.engine().store.list(target=f"cluster/{cluster}/storage", limit=500):
        if op["kind"].startswith("storage.") and op["target"].startswith(prefix):
            newest.setdefault(op["target"][len(prefix):], op)
    return newest


def _blank(cluster: str, name: str, kind: str, namespace: str | None) -> dict[str, Any]:
    return {"name": name, "cluster": cluster, "kind": kind, "namespace": namespace,
            "claim": None, "volume": None, "mounted": False, "state": "incomplete",
            "s3": None, "fsx": None, "users": [], "operation_id": None, "message": None,
            "deletes_data": False}


def _collect(cluster: ClusterRef, api: Any | None) -> dict[str, dict[str, Any]]:
    """Every storage item of the cluster, by name."""
    name, region = cluster.name, cluster.region
    volumes = storage.volumes(api) if api is not None else []
    workloads = storage.workloads(api) if api is not None else []
    fsx = aws.client("fsx", region=region)
    systems = {f["FileSystemId"]: f for f in storage.find_fsx(fsx, tags_for(CLUSTER_TAG, name))}
    ops = _ops(name)
    items: dict[str, dict[str, Any]] = {}
    for v in volumes:
        item = items[v["name"]] = _blank(name, v["name"], v["kind"], v["namespace"])
        item.update(claim=v["claim"], volume=v["volume"],
                    mounted=v["claim_exists"] and v["volume_exists"])
        if v["kind"] == "s3":
            item["s3"] = {"bucket": v["bucket"], "prefix": v["prefix"],
                          "read_only": v["read_only"]}
        else:
            item["fsx"] = {"file_system_id": v["file_system_id"]}
    for fs in systems.values():
        owner = tag_dict(fs).get(STORAGE_TAG)
        if owner and owner not in items:  # a file system whose volume is gone
            items[owner] = _blank(name, owner, "fsx", None)
            items[owner]["fsx"] = {"file_system_id": fs["FileSystemId"]}
    for owner, op in ops.items():
        if owner in items or op["kind"] != "storage.create" or op["status"] == OpStatus.SUCCEEDED:
            continue
        params = op["params"]
        item = items[owner] = _blank(name, owner, params["kind"], params.get("namespace"))
        if params["kind"] == "s3":
            s3 = params.get("s3") or {}
            item["s3"] = {"bucket": s3.get("bucket"), "prefix": s3.get("prefix"),
                          "read_only": s3.get("read_only")}
        else:
            item["fsx"] = {"file_system_id": None}
    for item in items.values():
        _backing(item, region, systems)
        _state(item, ops.get(item["name"]))
        if item["claim"]:
            item["users"] = storage.storage_users(workloads, item["claim"], item["namespace"])
    return items


def _backing(item: dict[str, Any], region: str, systems: dict[str, dict[str, Any]]) -> None:
    """The bucket or file system behind an item, from AWS."""
    owner = storage_tags(item["cluster"], item["name"])
    if item["s3"] is not None:
        bucket = item["s3"]["bucket"]
        item["s3"].update(exists=False, made_by_hypd=False)
        if bucket:
            try:
                info = storage.bucket_info(aws.client("s3", region=region), bucket)
            except storage.StorageError as exc:
                info, item["message"] = None, exc.message
            if info is not None:
                item["s3"].update(
                    exists=True,
                    made_by_hypd=eks.made_by_hypd_for(info["tags"], item["cluster"]))
                item["deletes_data"] = carries(info["tags"], owner)
        return
    file_system_id = item["fsx"]["file_system_id"]
    fs = systems.get(file_system_id or "")
    details: dict[str, Any] = {}
    if fs is not None:
        details = storage.fsx_info(fs)
        item["deletes_data"] = carries(tag_dict(fs), owner)
    elif file_system_id:  # not one of hypd's live ones: read it for its state only
        details = storage.fsx_state(aws.client("fsx", region=region), file_system_id) or {}
    item["fsx"] = {"file_system_id": file_system_id, "made_by_hypd": fs is not None,
                   **{k: details.get(k) for k in ("lifecycle", "dns_name", "mount_name",
                                                  "capacity_gib", "deployment_type",
                                                  "failure")}}


def _state(item: dict[str, Any], op: dict[str, Any] | None) -> None:
    if op is not None:
        item["operation_id"] = op["id"]
    if op is not None and op["status"] in RUNNING:
        item["state"] = "creating" if op["kind"] == "storage.create" else "deleting"
        return
    lifecycle = (item["fsx"] or {}).get("lifecycle")
    if lifecycle == "CREATING":
        item["state"] = "creating"
    elif lifecycle == "DELETING":
        item["state"] = "deleting"
    elif lifecycle in ("FAILED", "MISCONFIGURED", "MISCONFIGURED_UNAVAILABLE"):
        item["state"] = "failed"
        item["message"] = (item["fsx"] or {}).get("failure") or f"the file system is {lifecycle}"
    elif not item["mounted"]:
        failed = op is not None and op["kind"] == "storage.create" and \
            op["status"] in OpStatus.unsuccessful()
        item["state"] = "failed" if failed else "incomplete"
        item["message"] = ((op or {}).get("error") or {}).get("message") if failed else \
            "its PersistentVolume or claim is missing; remove it, or add it again"
    elif item["s3"] is not None and not item["s3"]["exists"]:
        item["state"] = "incomplete"
        item["message"] = item["message"] or f"bucket {item['s3']['bucket']} no longer exists"
    elif item["fsx"] is not None and not lifecycle:
        item["state"] = "incomplete"
        item["message"] = f"file system {item['fsx']['file_system_id']} no longer exists"
    else:
        item["state"] = "available"


def _items(cluster: ClusterRef) -> tuple[dict[str, dict[str, Any]], str | None]:
    why = not_active(cluster)
    api = None if why else api_for(cluster)
    with talking_to(cluster):
        return _collect(cluster, api), why


# checks for a new item ----------------------------------------------------------------------------

def _field_error(field: str, message: str) -> ApiError:
    return ApiError(422, "validation_failed", f"{field}: {message}",
                    {"fields": {field: [message]}})


def _check_new(cluster: ClusterRef, body: dict[str, Any]) -> None:
    name, namespace = body["name"], body["namespace"]
    api = api_for(cluster)
    with talking_to(cluster):
        if kube.get_object(api, "v1", "Namespace", namespace) is None:
            raise _field_error("namespace", f"namespace {namespace!r} does not exist in cluster "
                                            f"{cluster.name}")
        items, _ = _items(cluster)
        if name in items and items[name]["state"] != "failed":
            raise ApiError(409, "conflict", f"storage named {name!r} already exists on cluster "
                                            f"{cluster.name}; remove it first or choose "
                                            "another name", {"name": name})
        for kind, found in (
                ("PersistentVolumeClaim",
                 kube.get_object(api, "v1", "PersistentVolumeClaim", name, namespace)),
                ("PersistentVolume", kube.get_object(api, "v1", "PersistentVolume",
                                                     storage.volume_name(namespace, name)))):
            if found is not None and name not in items:
                raise ApiError(409, "conflict", f"a {kind} named {found['metadata']['name']!r} "
                                                f"already exists in cluster {cluster.name} "
                                                "and is not hypd's; choose another name")
        region = cluster.region
        bucket = (body.get("s3") or {}).get("bucket")
        if bucket:
            problem = storage.bucket_name_problem(bucket)
            if problem:
                raise _field_error("s3.bucket", problem)
            try:
                info = storage.bucket_info(aws.client("s3", region=region), bucket)
            except storage.StorageError as exc:
                raise _field_error("s3.bucket", exc.message) from exc
            if info is None:
                raise _field_error("s3.bucket", f"bucket {bucket!r} does not exist; leave "
                                                "bucket unset for hypd to make one")
        if body["kind"] == "fsx":
            storage.fsx_placement(aws.client("ec2", region=region), cluster.name,
                                  cluster.eks)


# routes -------------------------------------------------------------------------------------------

@blp.route("/<string:cluster>/storage")
class StorageItems(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, StorageListSchema)
    def get(self, cluster):
        """List a cluster's storage: what is mounted (hypd's PV + PVC) with its bucket or file
        system and state, the workloads using each, and items being created or deleted."""
        found = readmodel.find(cluster)
        items, why = _items(found)
        return {"cluster": cluster, "items": sorted(items.values(), key=lambda i: i["name"]),
                "note": why}

    @blp.arguments(StorageCreateSchema)
    @blp.response(202, MutationReplySchema)
    @blp.alt_response(409, description="the name is taken, or the cluster is busy or not "
                                       "ACTIVE")
    @access(Role.OPERATOR)
    def post(self, body, cluster):
        """Add storage to a cluster: an S3 bucket (new, or an existing one by name) or an FSx
        for Lustre file system, mounted as a PVC named after it."""
        name = body["name"]
        params = {**body, "cluster": cluster, "region": readmodel.region_of(cluster)}
        if body["kind"] == "s3":
            params["s3"] = body.get("s3") or S3Schema().load({})
        else:
            params["fsx"] = body.get("fsx") or FsxSchema().load({})

        def precheck() -> None:
            _check_new(readmodel.find(cluster), params)

        return mutations.submit(STORAGE_CREATE, f"cluster/{cluster}/storage/{name}", params,
                                precheck)


@blp.route("/<string:cluster>/storage/<string:name>")
class StorageItem(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, StorageSchema)
    def get(self, cluster, name):
        """One storage item: its claim, bucket or file system, state and users."""
        items, _ = _items(readmodel.find(cluster))
        if name not in items:
            raise ApiError(404, "not_found", f"no storage named {name!r} on cluster {cluster!r}")
        return items[name]

    @mutations.destructive(blp, DestroyQuerySchema)
    def delete(self, query, cluster, name):
        """Remove storage: its PVC and PV, and the bucket or file system only if hypd made it
        for this item. Refused (409 in_use, naming each) while a running pod, job,
        deployment or statefulset mounts it; there is no force: stop them first."""
        params: dict[str, Any] = {"cluster": cluster, "name": name,
                                  "region": readmodel.region_of(cluster)}

        def impact() -> mutations.Impact:
            found = readmodel.find(cluster)
            api = api_for(found)  # its claims and users are read from its Kubernetes: ACTIVE
            items, _ = _items(found)
            item = items.get(name)
            if item is None:
                raise ApiError(404, "not_found",
                               f"no storage named {name!r} on cluster {cluster!r}")
            params.update(kind=item["kind"], namespace=item["namespace"] or "default",
                          bucket=(item["s3"] or {}).get("bucket"))
            return dependents.storage_item(found, api, item)

        return mutations.destroy(STORAGE_DELETE, f"cluster/{cluster}/storage/{name}", params,
                                 impact, query)
