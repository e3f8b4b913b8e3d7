"""Models in a cluster's bucket: list what is under `models/` (and what is being
downloaded), download one — an operation on `cluster/<c>/model/<m>` running a Kubernetes
Job (tasks/models.py) — and remove one (`model.delete` on the same target), refused while
endpoints serve it. A hub token is named by its Secret, never sent."""

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
from app.readmodels.kubeapi import api_for, talking_to
from cloud import aws, iam, kube, models, storage
from schemas.common import MutationReplySchema
from schemas.models import ModelDownloadSchema, ModelListSchema
from tasks.models import MODEL_DELETE, MODEL_DOWNLOAD, target
from vocabulary.operations import OpStatus
from vocabulary.roles import Role

blp = Blueprint("models", __name__, url_prefix="/api/v1/clusters",
                description="Models in a cluster's bucket, and their download as a Job")


def _bucket(found: ClusterRef) -> str:
    account = iam.account_id(aws.client("sts", region=found.region))
    return storage.shared_bucket_name(found.name, account, found.region)


def _field_error(field: str, message: str) -> ApiError:
    return ApiError(422, "validation_failed", f"{field}: {message}",
                    {"fields": {field: [message]}})


def _downloads(cluster: str) -> dict[str, dict[str, Any]]:
    """The newest download operation of each model."""
    newest: dict[str, dict[str, Any]] = {}
    prefix = f"cluster/{cluster}/model/"
    for op in context.engine().store.list(target=f"cluster/{cluster}/model", limit=500):
        if op["kind"] == MODEL_DOWNLOAD.name and op["target"].startswith(prefix):
            newest.setdefault(op["target"][len(prefix):], op)
    return newest


def _progress(op: dict[str, Any]) -> dict[str, int]:
    step = next((s for s in op.get("steps") or () if s["name"] == "job"), None) or {}
    resources = step.get("resources") or {}
    return {"files": int(resources.get("files") or 0), "bytes": int(resources.get("bytes") or 0)}


@blp.route("/<string:cluster>/models")
class Models(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, ModelListSchema)
    def get(self, cluster):
        """The models under models/ in the cluster's bucket (files and bytes), and the
        downloads running or failed, with their progress."""
        found = readmodel.find(cluster)
        bucket = _bucket(found)
        present = models.listing(aws.client("s3", region=found.region), bucket)
        items: dict[str, dict[str, Any]] = {
            name: {"name": name, "state": "available", **counts,
                   "location": f"s3://{bucket}/models/{name}/", "operation_id": None,
                   "message": None} for name, counts in present.items()}
        for name, op in _downloads(cluster).items():
            running = op["status"] in OpStatus.active()
            failed = op["status"] in OpStatus.unsuccessful()
            if not (running or failed or name in items):
                continue
            item = items.setdefault(name, {"name": name, "state": "available",
                                           "location": f"s3://{bucket}/models/{name}/",
                                           "message": None, **_progress(op)})
            item["operation_id"] = op["id"]
            if running:
                item.update(state="downloading", **_progress(op))
            elif failed and name not in present:
                item.update(state="failed", message=(op.get("error") or {}).get("message"))
        return {"cluster": cluster, "bucket": bucket,
                "items": sorted(items.values(), key=lambda i: i["name"])}

    @access(Role.OPERATOR)
    @blp.arguments(ModelDownloadSchema)
    @blp.response(202, MutationReplySchema)
    def post(self, body, cluster):
        """Download a model into the cluster's bucket under models/<name>/: a Hugging Face
        model (id and revision; a hub token only by the Secret holding it) or an S3 prefix,
        as a Kubernetes Job uploading through the S3 API. The operation reports files and
        bytes in the bucket and finishes when the Job does."""
        params: dict[str, Any] = {**body, "cluster": cluster}

        def precheck() -> None:
            found = readmodel.find(cluster)
            params["region"] = found.region
            params["bucket"] = _bucket(found)
            if models.progress(aws.client("s3", region=found.region), params["bucket"],
                               body["name"])["files"]:
                raise ApiError(409, "conflict", f"model {body['name']!r} is already in "
                                                f"s3://{params['bucket']}/models/; choose "
                                                "another name")
            ref = body.get("hub_token_secret")
            if ref:
                api = api_for(found)
                with talking_to(found):
                    secret = kube.get_object(api, "v1", "Secret", ref["name"],
                                             models.NAMESPACE)
                if secret is None or ref["key"] not in (secret.get("data") or {}):
                    raise _field_error("hub_token_secret",
                                       f"no key {ref['key']!r} in Secret {ref['name']!r} of "
                                       f"namespace {models.NAMESPACE}")

        return mutations.submit(MODEL_DOWNLOAD, target(cluster, body["name"]), params,
                                precheck)


@blp.route("/<string:cluster>/models/<string:name>")
class Model(MethodView):
    @mutations.destructive(blp)
    @blp.alt_response(404, description="nothing under models/<name>/ in the bucket")
    def delete(self, query, cluster, name):
        """Remove a model from the cluster's bucket: every file under models/<name>/ (an
        operation on the model, so not while it downloads). Refused (409 in_use, naming
        them) while endpoints serve it — a server restarting or scaling out would find no
        weights — unless force=true."""
        params: dict[str, Any] = {"cluster": cluster, "name": name}

        def impact() -> mutations.Impact:
            found = readmodel.find(cluster)
            params.update(region=found.region, bucket=_bucket(found))
            return dependents.model(found, params["bucket"], name)

        return mutations.destroy(MODEL_DELETE, target(cluster, name), params, impact, query)
