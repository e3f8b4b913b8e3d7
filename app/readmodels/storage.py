"""A cluster's storage items as REST, MCP and the dashboard show them: read from the
cluster's Kubernetes (hypd's labelled PVs and PVCs, the workloads that mount them), from AWS
(the bucket, the file system and its state), and from the storage operation of each item
(an item being created shows before its volume exists)."""

from __future__ import annotations

from typing import Any

from app import context
from app.readmodels.clusters import ClusterRef
from app.readmodels.kubeapi import api_for, not_active, talking_to
from cloud import aws, eks, storage
from cloud.aws import CLUSTER_TAG, tag_dict, tags_for
from tasks.storage import STORAGE_CREATE, STORAGE_DELETE, carries, storage_tags
from vocabulary.operations import OpStatus

STORAGE_TAG = "hypd:storage"
RUNNING = OpStatus.active()


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
    ops = context.engine().store.newest_by_child(
        f"cluster/{name}/storage", kinds={STORAGE_CREATE.name, STORAGE_DELETE.name})
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


def items(cluster: ClusterRef) -> tuple[dict[str, dict[str, Any]], str | None]:
    """Every storage item of the cluster by name, and why its Kubernetes could not be read
    (None when it could: items then include what is mounted)."""
    why = not_active(cluster)
    api = None if why else api_for(cluster)
    with talking_to(cluster):
        return _collect(cluster, api), why
