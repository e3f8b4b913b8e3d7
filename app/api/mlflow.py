"""A cluster's MLflow: SageMaker's managed MLflow tracking server, made by hypd or attached
(cloud/mlflow.py, tasks/mlflow.py).

`PUT` creates hypd's own tracking server or attaches an existing one (an operation on
`cluster/<c>/mlflow`; already so: `200 changed: false`), `GET` reads what is attached from the
cluster's record and SageMaker, `DELETE` detaches (the tracking server is deleted only when
hypd made it for this cluster). Jobs submitted while one is attached log to it
(app/api/jobs.py). The MLflow UI opens through a presigned URL made on request
(`GET …/mlflow/ui-url`): a credential, so it is answered to an operator and never kept.
"""

from __future__ import annotations

from typing import Any

from flask import jsonify
from flask.views import MethodView
from flask_smorest import Blueprint

from app import context, mutations
from app.errors import ApiError
from app.permissions import access
from app.readmodels import clusters as readmodel
from app.readmodels import dependents
from app.readmodels.clusters import ClusterRef
from app.readmodels.kubeapi import api_for, not_active, talking_to
from cloud import aws, iam, mlflow
from schemas.common import MutationReplySchema, NoChangeSchema
from schemas.mlflow import MlflowSchema, MlflowSetSchema, MlflowUiUrlSchema
from tasks.mlflow import MLFLOW_ATTACH, MLFLOW_DETACH, target
from vocabulary.operations import OpStatus
from vocabulary.roles import Role

blp = Blueprint("mlflow", __name__, url_prefix="/api/v1/clusters",
                description="A cluster's MLflow tracking server (SageMaker managed MLflow), "
                            "which training jobs log their metrics to")

RUNNING_STATE = {"mlflow.attach": "attaching", "mlflow.detach": "detaching"}


def _url(cluster: str) -> str:
    return f"/api/v1/clusters/{cluster}/mlflow"


def _newest_op(cluster: str) -> dict[str, Any] | None:
    found = context.engine().store.list(target=target(cluster), limit=1)
    return found[0] if found else None


def read(ref: ClusterRef) -> dict[str, Any]:
    """What is attached, read from the cluster's record and SageMaker now."""
    out: dict[str, Any] = {"cluster": ref.name, "state": "none", "made_by_hypd": None,
                           "tracking_server": None, "role_arn": None, "service_account": None,
                           "operation_id": None, "message": not_active(ref)}
    op = _newest_op(ref.name)
    if op is not None:
        out["operation_id"] = op["id"]
    record = None
    if out["message"] is None:
        with talking_to(ref):
            record = mlflow.read_record(api_for(ref))
    if op is not None and op["status"] in OpStatus.active():
        out["state"] = RUNNING_STATE.get(op["kind"], "attaching")
        if op["kind"] == "mlflow.attach" and not op["params"].get("tracking_server_name"):
            out["state"] = "creating"
    if record is not None:
        found = mlflow.describe(aws.client("sagemaker", region=ref.region),
                                record["tracking_server_name"])
        out.update(made_by_hypd=record["made_by_hypd"], role_arn=record["role_arn"],
                   service_account=mlflow.SERVICE_ACCOUNT,
                   tracking_server=mlflow.server_view(found) or
                   {"name": record["tracking_server_name"],
                    "arn": record["tracking_server_arn"]})
        if out["state"] == "none":
            status = (found or {}).get("TrackingServerStatus")
            out["state"] = "ready" if status in mlflow.USABLE else \
                "settling" if status in mlflow.UPDATING or status in mlflow.CREATING else \
                "unavailable"
            if found is None:
                out["message"] = (f"tracking server {record['tracking_server_name']} no "
                                  "longer exists; detach it")
            elif out["state"] == "unavailable":
                out["message"] = f"tracking server is {status}"
    elif out["state"] == "none" and op is not None and op["kind"] == "mlflow.attach" \
            and op["status"] in OpStatus.unsuccessful():
        out["state"] = "failed"
        out["message"] = (op.get("error") or {}).get("message") or f"operation {op['status']}"
    return out


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
    def get(self, cluster):
        """The cluster's MLflow tracking server: state (none, creating, attaching, ready,
        settling, detaching, failed, unavailable), its ARN, URL and status in SageMaker,
        whether hypd made it, and the role and service account jobs log as."""
        return read(readmodel.find(cluster))

    @access(Role.OPERATOR)
    @blp.arguments(MlflowSetSchema)
    @blp.response(202, MutationReplySchema)
    @blp.alt_response(200, schema=NoChangeSchema,
                      description="that tracking server is attached already: nothing sent")
    @blp.alt_response(409, description="another tracking server is attached (detach it "
                                       "first), or the cluster is busy or not ACTIVE")
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
        with talking_to(ref):
            record = mlflow.read_record(api_for(ref))
        wanted = mlflow.parse_ref(body["tracking_server"], ref.region) \
            if body.get("tracking_server") else None
        if record is not None:
            if wanted in (None, record["tracking_server_name"]) and \
                    (wanted is not None or record["made_by_hypd"]):
                return jsonify({"changed": False, "resource_url": _url(cluster),
                                "message": f"tracking server {record['tracking_server_name']} "
                                           "is attached already"})
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
                raise ApiError(422, "validation_failed",
                               f"tracking_server: no tracking server {given} in {ref.region} "
                               "of this panel's account",
                               {"fields": {"tracking_server": ["not found"]}})

        return mutations.submit(MLFLOW_ATTACH, target(cluster), params, precheck)

    @mutations.destructive(blp)
    @blp.alt_response(404, description="no tracking server is attached")
    def delete(self, query, cluster):
        """Detach the cluster's tracking server: new jobs stop logging to it, the jobs' role,
        service accounts and Pod Identity associations go, and the tracking server itself
        (with its role) is deleted only when hypd made it; one attached is left as it is.
        Refused (409 in_use, naming them) while jobs log to it (their pods' tracking URI
        names it: they would lose their identity mid-run), unless force=true."""
        params: dict[str, Any] = {"cluster": cluster, "region": readmodel.region_of(cluster)}

        def impact() -> mutations.Impact:
            ref = _changeable(cluster)
            with talking_to(ref):
                record = mlflow.read_record(api_for(ref))
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
    def get(self, cluster):
        """A presigned URL of the attached tracking server's MLflow UI (experiments, runs
        and their metrics), to open within 5 minutes. It is a credential: made on request,
        answered to an operator only, never stored."""
        ref = readmodel.find(cluster)
        with talking_to(ref):
            record = mlflow.read_record(api_for(ref))
        if record is None:
            raise ApiError(404, "not_found",
                           f"cluster {cluster} has no MLflow tracking server attached")
        url = mlflow.ui_url(aws.client("sagemaker", region=ref.region),
                            record["tracking_server_name"])
        return {"url": url, "expires_in_seconds": mlflow.UI_URL_SECONDS}
