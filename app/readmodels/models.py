"""The models of a cluster as REST, MCP and the dashboard show them: what is under
`models/` in the cluster's bucket (files and bytes), and each model's newest download
operation — one running shows its progress, one that failed says why."""

from __future__ import annotations

from typing import Any

from app import context
from app.readmodels.clusters import ClusterRef
from cloud import aws, iam, models, storage
from tasks.models import MODEL_DOWNLOAD
from vocabulary.operations import OpStatus


def bucket(found: ClusterRef) -> str:
    """The cluster's bucket, which holds its models under `models/`."""
    account = iam.account_id(aws.client("sts", region=found.region))
    return storage.shared_bucket_name(found.name, account, found.region)


def _progress(op: dict[str, Any]) -> dict[str, int]:
    step = next((s for s in op.get("steps") or () if s["name"] == "job"), None) or {}
    resources = step.get("resources") or {}
    return {"files": int(resources.get("files") or 0), "bytes": int(resources.get("bytes") or 0)}


def listing(found: ClusterRef) -> dict[str, Any]:
    """The models view (ModelListSchema)."""
    where = bucket(found)
    present = models.listing(aws.client("s3", region=found.region), where)
    items: dict[str, dict[str, Any]] = {
        name: {"name": name, "state": "available", **counts,
               "location": f"s3://{where}/models/{name}/", "operation_id": None,
               "message": None} for name, counts in present.items()}
    downloads = context.engine().store.newest_by_child(f"cluster/{found.name}/model",
                                                       kinds={MODEL_DOWNLOAD.name})
    for name, op in downloads.items():
        running = op["status"] in OpStatus.active()
        failed = op["status"] in OpStatus.unsuccessful()
        if not (running or failed or name in items):
            continue
        item = items.setdefault(name, {"name": name, "state": "available",
                                       "location": f"s3://{where}/models/{name}/",
                                       "message": None, **_progress(op)})
        item["operation_id"] = op["id"]
        if running:
            item.update(state="downloading", **_progress(op))
        elif failed and name not in present:
            item.update(state="failed", message=(op.get("error") or {}).get("message"))
    return {"cluster": found.name, "bucket": where,
            "items": sorted(items.values(), key=lambda i: i["name"])}
