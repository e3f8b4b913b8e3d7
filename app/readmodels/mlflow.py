"""A cluster's MLflow as REST, MCP and the dashboard show it: the record of what is
attached (kept in the cluster's Kubernetes, cloud/mlflow.py), the tracking server as
SageMaker describes it now, and the attach or detach operation running on it."""

from __future__ import annotations

from typing import Any

from app import context
from app.readmodels.clusters import ClusterRef
from app.readmodels.kubeapi import api_for, not_active, talking_to
from cloud import aws, mlflow
from tasks.mlflow import target
from vocabulary.operations import OpStatus

RUNNING_STATE = {"mlflow.attach": "attaching", "mlflow.detach": "detaching"}


def record(ref: ClusterRef) -> dict[str, Any] | None:
    """The record of the tracking server attached to the cluster, or None (409 while the
    cluster's Kubernetes cannot be reached: the record lives there)."""
    with talking_to(ref):
        return mlflow.read_record(api_for(ref))


def _newest_op(cluster: str) -> dict[str, Any] | None:
    """The newest attach or detach of the cluster (its one target: no children)."""
    found = context.engine().store.list(target=target(cluster), limit=1)
    return found[0] if found else None


def read(ref: ClusterRef) -> dict[str, Any]:
    """What is attached (MlflowSchema), read from the cluster's record and SageMaker now."""
    out: dict[str, Any] = {"cluster": ref.name, "state": "none", "made_by_hypd": None,
                           "tracking_server": None, "role_arn": None, "service_account": None,
                           "operation_id": None, "message": not_active(ref)}
    op = _newest_op(ref.name)
    if op is not None:
        out["operation_id"] = op["id"]
    kept = record(ref) if out["message"] is None else None
    if op is not None and op["status"] in OpStatus.active():
        out["state"] = RUNNING_STATE.get(op["kind"], "attaching")
        if op["kind"] == "mlflow.attach" and not op["params"].get("tracking_server_name"):
            out["state"] = "creating"
    if kept is not None:
        found = mlflow.describe(aws.client("sagemaker", region=ref.region),
                                kept["tracking_server_name"])
        out.update(made_by_hypd=kept["made_by_hypd"], role_arn=kept["role_arn"],
                   service_account=mlflow.SERVICE_ACCOUNT,
                   tracking_server=mlflow.server_view(found) or
                   {"name": kept["tracking_server_name"],
                    "arn": kept["tracking_server_arn"]})
        if out["state"] == "none":
            status = (found or {}).get("TrackingServerStatus")
            out["state"] = "ready" if status in mlflow.USABLE else \
                "settling" if status in mlflow.UPDATING or status in mlflow.CREATING else \
                "unavailable"
            if found is None:
                out["message"] = (f"tracking server {kept['tracking_server_name']} no "
                                  "longer exists; detach it")
            elif out["state"] == "unavailable":
                out["message"] = f"tracking server is {status}"
    elif out["state"] == "none" and op is not None and op["kind"] == "mlflow.attach" \
            and op["status"] in OpStatus.unsuccessful():
        out["state"] = "failed"
        out["message"] = (op.get("error") or {}).get("message") or f"operation {op['status']}"
    return out
