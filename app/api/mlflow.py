"""A cluster's MLflow: SageMaker's managed MLflow tracking server, made by hypd or attached
(cloud/mlflow.py, tasks/mlflow.py).

`PUT` creates hypd's own tracking server or attaches an existing one (an operation on
`cluster/<c>/mlflow`; already so: `200 changed: false`), `GET` reads what is attached
(app/readmodels/mlflow.py: the cluster's record and SageMaker), `DELETE` detaches (the
tracking server is deleted only when hypd made it for this cluster). Jobs submitted while
one is attached log to it (app/api/jobs.py). The MLflow UI opens through a presigned URL
made on request (`GET …/mlflow/ui-url`): a credential, so it is answered to an operator and
never kept.
"""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from app import audit, context, mutations
from app.errors import ApiError
from app.permissions import access
from app.readmodels import clusters as readmodel
from app.readmodels import dependents
from app.readmodels import mlflow as mlflow_model
from app.readmodels.clusters import ClusterRef
from app.readmodels.kubeapi import api_for
from cloud import aws, iam, mlflow
from cloud.errors import Invalid
from schemas.common import MutationReplySchema, NoChangeSchema
from schemas.mlflow import MlflowSchema, MlflowSetSchema, MlflowUiUrlSchema
from tasks.mlflow import MLFLOW_ATTACH, MLFLOW_DETACH, target
from vocabulary.roles import Role

blp = Blueprint("mlflow", __name__, url_prefix="/api/v1/clusters",
                description="A cluster's MLflow tracking server (SageMaker managed MLflow), "
                            "which training jobs log their metrics to")
audit.declare_target(blp, "cluster/<cluster>")


def _url(cluster: str) -> str:
    return f"/api/v1/clusters/{cluster}/mlflow"


def _changeable(cluster: str) -> ClusterRef:
    ref = readmodel.find(cluster)
    if ref.imported:
        raise ApiError(409, "conflict", f"cluster {cluster!r} was imported: hypd reads it but "
                                        "does not change it")
    api_for(ref)  # ACTIVE only: the record and the jobs' identity live in its Kubernetes
    return ref


@blp.route("/<string:cluster>/mlflow")
class Mlflow(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, MlflowSchema)
    @blp.doc(operationId="get_mlflow")
    def get(self, cluster):
        """The cluster's MLflow tracking server: state (none, creating, attaching, ready,
        settling, detaching, failed, unavailable), its ARN, URL and status in SageMaker,
        whether hypd made it, and the role and service account jobs log as."""
        return mlflow_model.read(readmodel.find(cluster))

    @mutations.changing(blp, own_200=(
        NoChangeSchema, "that tracking server is attached already: nothing sent"))
    @blp.arguments(MlflowSetSchema)
    @blp.response(202, MutationReplySchema)
    @blp.alt_response(409, description="another tracking server is attached (detach it "
                                       "first), or the cluster is busy or not ACTIVE")
    @blp.doc(operationId="set_mlflow")
    def put(self, body, cluster):
        """Create hypd's MLflow tracking server for the cluster (no tracking_server: named
        hypd-<cluster>, artifacts under mlflow/ of the cluster's bucket, about 20 minutes on
        AWS) or attach an existing one by name or ARN. Then every job submitted gets
        MLFLOW_TRACKING_URI (the tracking server's ARN), MLFLOW_EXPERIMENT_NAME and an
        identity allowed to log to that tracking server only."""
        replayed = mutations.replayed()
        if replayed is not None:
            return replayed
        context.engine().store.ensure_target_free(target(cluster))
        ref = _changeable(cluster)
        record = mlflow_model.record(ref)
        wanted = mlflow.parse_ref(body["tracking_server"], ref.region) \
            if body.get("tracking_server") else None
        if record is not None:
            if wanted in (None, record["tracking_server_name"]) and \
                    (wanted is not None or record["made_by_hypd"]):
                attached = record["tracking_server_name"]
                return mutations.no_change(_url(cluster),
                                           f"tracking server {attached} is attached already")
            raise ApiError(409, "conflict", f"cluster {cluster} already has tracking server "
                                            f"{record['tracking_server_name']}; detach it first "
                                            f"(DELETE {_url(cluster)})")
        params: dict[str, Any] = {"cluster": cluster, "region": ref.region,
                                  "size": body["size"]}
        if wanted is not None:
            params["tracking_server_name"] = wanted

        def precheck() -> None:
            if wanted is None:
                return
            found = mlflow.describe(aws.client("sagemaker", region=ref.region), wanted)
            given = body["tracking_server"]
            if found is None or (given.startswith("arn:") and found["TrackingServerArn"] != given):
                # an ARN of another account names a server this panel's account does not hold
                raise Invalid(f"no tracking server {given} in {ref.region} of this panel's "
                              "account", field="tracking_server")

        return mutations.submit(MLFLOW_ATTACH, target(cluster), params, precheck)

    @mutations.destructive(blp)
    @blp.alt_response(404, description="no tracking server is attached")
    @blp.doc(operationId="detach_mlflow")
    def delete(self, query, cluster):
        """Detach the cluster's tracking server: new jobs stop logging to it, the jobs' role,
        service accounts and Pod Identity associations go, and the tracking server itself
        (with its role) is deleted only when hypd made it; one attached is left as it is.
        Refused (409 in_use, naming them) while jobs log to it (their pods' tracking URI
        names it: they would lose their identity mid-run), unless force=true."""
        params: dict[str, Any] = {"cluster": cluster, "region": readmodel.region_of(cluster)}

        def impact() -> mutations.Impact:
            ref = _changeable(cluster)
            record = mlflow_model.record(ref)
            if record is not None:
                params["tracking_server_name"] = record["tracking_server_name"]
                return dependents.mlflow(ref, record)
            # a create that failed half-way leaves hypd's server or role: detach cleans up
            sm = aws.client("sagemaker", region=ref.region)
            role = iam.role_state(aws.client("iam", region=ref.region),
                                  iam.role_name(cluster, iam.PURPOSE_MLFLOW))
            if mlflow.describe(sm, mlflow.server_name(cluster)) is None and role is None:
                raise ApiError(404, "not_found",
                               f"cluster {cluster} has no MLflow tracking server attached")
            return dependents.mlflow(ref, None)

        return mutations.destroy(MLFLOW_DETACH, target(cluster), params, impact, query)


@blp.route("/<string:cluster>/mlflow/ui-url")
class MlflowUiUrl(MethodView):
    @access(Role.OPERATOR)
    @blp.response(200, MlflowUiUrlSchema)
    @blp.alt_response(404, description="no tracking server is attached")
    @blp.doc(operationId="get_mlflow_ui_url")
    def get(self, cluster):
        """A presigned URL of the attached tracking server's MLflow UI (experiments, runs
        and their metrics), to open within 5 minutes. It is a credential: made on request,
        answered to an operator only, never stored."""
        ref = readmodel.find(cluster)
        record = mlflow_model.record(ref)
        if record is None:
            raise ApiError(404, "not_found",
                           f"cluster {cluster} has no MLflow tracking server attached")
        url = mlflow.ui_url(aws.client("sagemaker", region=ref.region),
                            record["tracking_server_name"])
        return {"url": url, "expires_in_seconds": mlflow.UI_URL_SECONDS}
