"""Models in a cluster's bucket: list what is under `models/` and what is being downloaded
(app/readmodels/models.py), download one — an operation on `cluster/<c>/model/<m>` running
a Kubernetes Job (tasks/models.py) — and remove one (`model.delete` on the same target),
refused while endpoints serve it. A hub token is named by its Secret, never sent."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from app import audit, mutations
from app.errors import ApiError
from app.permissions import access
from app.readmodels import clusters as readmodel
from app.readmodels import dependents
from app.readmodels import models as models_model
from app.readmodels.kubeapi import api_for, talking_to
from cloud import aws, kube, models
from cloud.errors import Invalid
from schemas.common import MutationReplySchema
from schemas.models import ModelDownloadSchema, ModelListSchema
from tasks.models import MODEL_DELETE, MODEL_DOWNLOAD, target
from vocabulary.roles import Role

blp = Blueprint("models", __name__, url_prefix="/api/v1/clusters",
                description="Models in a cluster's bucket, and their download as a Job")
audit.declare_target(blp, "cluster/<cluster>/model/<name>")


@blp.route("/<string:cluster>/models")
class Models(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, ModelListSchema)
    @blp.doc(operationId="list_models")
    def get(self, cluster):
        """The models under models/ in the cluster's bucket (files and bytes), and the
        downloads running or failed, with their progress."""
        return models_model.listing(readmodel.find(cluster))

    @mutations.changing(blp)
    @blp.arguments(ModelDownloadSchema)
    @blp.response(202, MutationReplySchema)
    @blp.doc(operationId="download_model")
    def post(self, body, cluster):
        """Download a model into the cluster's bucket under models/<name>/: a Hugging Face
        model (id and revision; a hub token only by the Secret holding it) or an S3 prefix,
        as a Kubernetes Job uploading through the S3 API. The operation reports files and
        bytes in the bucket and finishes when the Job does."""
        params: dict[str, Any] = {**body, "cluster": cluster}

        def precheck() -> None:
            found = readmodel.find(cluster)
            params["region"] = found.region
            params["bucket"] = models_model.bucket(found)
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
                    raise Invalid(f"no key {ref['key']!r} in Secret {ref['name']!r} of "
                                  f"namespace {models.NAMESPACE}", field="hub_token_secret")

        return mutations.submit(MODEL_DOWNLOAD, target(cluster, body["name"]), params,
                                precheck)


@blp.route("/<string:cluster>/models/<string:name>")
class Model(MethodView):
    @mutations.destructive(blp)
    @blp.alt_response(404, description="nothing under models/<name>/ in the bucket")
    @blp.doc(operationId="remove_model")
    def delete(self, query, cluster, name):
        """Remove a model from the cluster's bucket: every file under models/<name>/ (an
        operation on the model, so not while it downloads). Refused (409 in_use, naming
        them) while endpoints serve it — a server restarting or scaling out would find no
        weights — unless force=true."""
        params: dict[str, Any] = {"cluster": cluster, "name": name}

        def impact() -> mutations.Impact:
            found = readmodel.find(cluster)
            params.update(region=found.region, bucket=models_model.bucket(found))
            return dependents.model(found, params["bucket"], name)

        return mutations.destroy(MODEL_DELETE, target(cluster, name), params, impact, query)
