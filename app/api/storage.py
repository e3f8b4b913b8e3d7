"""Storage in a cluster: S3 buckets and FSx for Lustre file systems, each mounted as a
PersistentVolume + PersistentVolumeClaim named after the item.

Adding and removing are operations (`storage.create`, `storage.delete`, target
`cluster/<c>/storage/<s>`); the cluster create's storage stage runs the same steps. What a
read shows is app/readmodels/storage.py's; a new item's checks (its namespace, its name free
in the cluster, an existing bucket) are this module's.
"""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from app import audit, mutations
from app.errors import ApiError
from app.permissions import access
from app.readmodels import clusters as readmodel
from app.readmodels import dependents
from app.readmodels import storage as storage_model
from app.readmodels.clusters import ClusterRef
from app.readmodels.kubeapi import api_for, talking_to
from cloud import aws, kube, storage
from cloud.errors import Invalid
from schemas.common import MutationReplySchema
from schemas.dependents import DestroyQuerySchema
from schemas.storage import (
    FsxSchema,
    S3Schema,
    StorageCreateSchema,
    StorageListSchema,
    StorageSchema,
)
from tasks.storage import STORAGE_CREATE, STORAGE_DELETE
from vocabulary.roles import Role

blp = Blueprint("storage", __name__, url_prefix="/api/v1/clusters",
                description="Storage mounted in a cluster: S3 buckets and FSx for Lustre file "
                            "systems, each as a PV + PVC")
audit.declare_target(blp, "cluster/<cluster>/storage/<name>")


# checks for a new item ----------------------------------------------------------------------------

def _check_new(cluster: ClusterRef, body: dict[str, Any]) -> None:
    name, namespace = body["name"], body["namespace"]
    api = api_for(cluster)
    with talking_to(cluster):
        if kube.get_object(api, "v1", "Namespace", namespace) is None:
            raise Invalid(f"namespace {namespace!r} does not exist in cluster {cluster.name}",
                          field="namespace")
        items, _ = storage_model.items(cluster)
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
                raise Invalid(problem, field="s3.bucket")
            try:
                info = storage.bucket_info(aws.client("s3", region=region), bucket)
            except storage.StorageError as exc:
                raise Invalid(exc.message, field="s3.bucket") from exc
            if info is None:
                raise Invalid(f"bucket {bucket!r} does not exist; leave bucket unset for hypd "
                              "to make one", field="s3.bucket")
        if body["kind"] == "fsx":
            storage.fsx_placement(aws.client("ec2", region=region), cluster.name,
                                  cluster.eks)


# routes -------------------------------------------------------------------------------------------

@blp.route("/<string:cluster>/storage")
class StorageItems(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, StorageListSchema)
    @blp.doc(operationId="list_storage")
    def get(self, cluster):
        """List a cluster's storage: what is mounted (hypd's PV + PVC) with its bucket or file
        system and state, the workloads using each, and items being created or deleted."""
        found = readmodel.find(cluster)
        items, why = storage_model.items(found)
        return {"cluster": cluster, "items": sorted(items.values(), key=lambda i: i["name"]),
                "note": why}

    @blp.arguments(StorageCreateSchema)
    @blp.response(202, MutationReplySchema)
    @blp.alt_response(409, description="the name is taken, or the cluster is busy or not "
                                       "ACTIVE")
    @mutations.changing(blp)
    @blp.doc(operationId="add_storage")
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
    @blp.doc(operationId="get_storage")
    def get(self, cluster, name):
        """One storage item: its claim, bucket or file system, state and users."""
        items, _ = storage_model.items(readmodel.find(cluster))
        if name not in items:
            raise ApiError(404, "not_found", f"no storage named {name!r} on cluster {cluster!r}")
        return items[name]

    @mutations.destructive(blp, DestroyQuerySchema)
    @blp.doc(operationId="remove_storage")
    def delete(self, query, cluster, name):
        """Remove storage: its PVC and PV, and the bucket or file system only if hypd made it
        for this item. Refused (409 in_use, naming each) while a running pod, job,
        deployment or statefulset mounts it; there is no force: stop them first."""
        params: dict[str, Any] = {"cluster": cluster, "name": name,
                                  "region": readmodel.region_of(cluster)}

        def impact() -> mutations.Impact:
            found = readmodel.find(cluster)
            api = api_for(found)  # its claims and users are read from its Kubernetes: ACTIVE
            items, _ = storage_model.items(found)
            item = items.get(name)
            if item is None:
                raise ApiError(404, "not_found",
                               f"no storage named {name!r} on cluster {cluster!r}")
            params.update(kind=item["kind"], namespace=item["namespace"] or "default",
                          bucket=(item["s3"] or {}).get("bucket"))
            return dependents.storage_item(found, api, item)

        return mutations.destroy(STORAGE_DELETE, f"cluster/{cluster}/storage/{name}", params,
                                 impact, query)
