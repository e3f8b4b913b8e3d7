"""A cluster's MLflow: SageMaker's managed MLflow tracking server, made by hypd or attached,
and what training jobs need to log to it.

The cluster holds the record (the ConfigMap `default/hypd-mlflow`: the tracking server's
name and ARN, whether hypd made it, the job role's ARN), so the jobs route reads one object
and no copy lives in Redis. A tracking server hypd made is named `hypd-<cluster>`, keeps its
artifacts under `mlflow/` of the cluster's shared bucket and carries hypd's tags; only one
carrying them for this cluster is ever deleted. An attached one is only checked.

Jobs log as the service account `hypd-mlflow` of their namespace, bound by an EKS Pod
Identity association to the role `hypd-<cluster>-mlflow` (`sagemaker-mlflow:*` on that one
ARN, and read/write under its artifact store: cloud/iam.py). Their environment gets
`MLFLOW_TRACKING_URI=<ARN>` — what the sagemaker-mlflow plugin resolves and signs for — and
`MLFLOW_EXPERIMENT_NAME`.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from cloud import kube
from cloud.aws import CLUSTER_TAG, error_code, tag_dict, tags_for
from cloud.eks import made_by_hypd_for
from cloud.errors import Invalid, NotYet
from vocabulary import patterns

RECORD_NAME = "hypd-mlflow"
RECORD_NAMESPACE = "default"
SERVICE_ACCOUNT = "hypd-mlflow"
ARTIFACT_PREFIX = "mlflow"
SIZES = ("Small", "Medium", "Large")
CREATING = ("Creating",)
UPDATING = ("Updating", "Starting", "MaintenanceInProgress", "Deleting", "Stopping")
USABLE = ("Created", "Updated", "Started", "MaintenanceComplete")
CREATE_POLL_S = 60.0
DELETE_POLL_S = 30.0
TRACKING_URI = "MLFLOW_TRACKING_URI"
EXPERIMENT = "MLFLOW_EXPERIMENT_NAME"
UI_URL_SECONDS = 300  # the presigned URL's life: AWS allows 5-300 s to open it


class MlflowError(Invalid):
    """A tracking server that cannot be used or made as asked."""


def server_name(cluster: str) -> str:
    return f"hypd-{cluster}"


def server_tags(cluster: str) -> list[dict[str, str]]:
    return tags_for(CLUSTER_TAG, cluster, role="mlflow")


def artifact_uri(bucket: str) -> str:
    return f"s3://{bucket}/{ARTIFACT_PREFIX}/"


def parse_ref(value: str, region: str) -> str:
    """The tracking server name from a name or an ARN (which must be in `region`)."""
    if patterns.fits(patterns.TRACKING_SERVER_ARN, value):
        arn_region, name = value.split(":")[3], value.split("/", 1)[1]
        if arn_region != region:
            raise MlflowError(f"tracking_server: {value} is in {arn_region}, the cluster in "
                              f"{region}; jobs log to a tracking server of their own region",
                              field="tracking_server")
        if patterns.fits(patterns.TRACKING_SERVER_NAME, name):
            return name
    if not patterns.fits(patterns.TRACKING_SERVER_NAME, value):
        raise MlflowError("tracking_server: give a tracking server's name or its ARN "
                          "(arn:aws:sagemaker:<region>:<account>:mlflow-tracking-server/<name>)",
                          field="tracking_server")
    return value


def describe(sm: Any, name: str) -> dict[str, Any] | None:
    """DescribeMlflowTrackingServer, or None when there is no such server."""
    try:
        return sm.describe_mlflow_tracking_server(TrackingServerName=name)
    except ClientError as exc:
        if error_code(exc) in ("ResourceNotFound", "ResourceNotFoundException"):
            return None
        raise


def server_view(found: dict[str, Any] | None) -> dict[str, Any] | None:
    if found is None:
        return None
    return {"name": found.get("TrackingServerName"), "arn": found.get("TrackingServerArn"),
            "status": found.get("TrackingServerStatus"), "url": found.get("TrackingServerUrl"),
            "size": found.get("TrackingServerSize"),
            "mlflow_version": found.get("MlflowVersion"),
            "artifact_store_uri": found.get("ArtifactStoreUri"),
            "is_active": found.get("IsActive")}


def made_by_hypd(sm: Any, arn: str, cluster: str) -> bool:
    """Whether the tracking server carries hypd's tags for this cluster."""
    tags: dict[str, str] = {}
    for page in sm.get_paginator("list_tags").paginate(ResourceArn=arn):
        tags.update(tag_dict(page))
    return made_by_hypd_for(tags, cluster)


def ensure_server(sm: Any, cluster: str, bucket: str, role_arn: str, size: str) -> str:
    """hypd's tracking server for the cluster, adopted by name (hypd's tags required) or
    created (CreateMlflowTrackingServer has no client token: the name is unique in the
    account and region, so a second create is refused and adopted). Returns its ARN."""
    name = server_name(cluster)
    found = describe(sm, name)
    if found is None:
        try:
            return sm.create_mlflow_tracking_server(
                TrackingServerName=name, ArtifactStoreUri=artifact_uri(bucket),
                RoleArn=role_arn, TrackingServerSize=size, AutomaticModelRegistration=False,
                Tags=server_tags(cluster))["TrackingServerArn"]
        except ClientError as exc:
            if error_code(exc) != "ResourceInUse":
                raise
            found = describe(sm, name)
            if found is None:
                raise
    if not made_by_hypd(sm, found["TrackingServerArn"], cluster):
        raise MlflowError(f"a tracking server named {name} exists and hypd did not make it for "
                          f"cluster {cluster}; attach it instead (tracking_server: {name})",
                          "conflict")
    return found["TrackingServerArn"]


def wait_usable(sm: Any, name: str) -> None:
    """Nothing when the tracking server takes requests; `NotYet` while it is being made or
    changed (about 20 minutes to create on AWS); a refusal when it failed or is stopped."""
    found = describe(sm, name)
    if found is None:
        raise MlflowError(f"tracking server {name} does not exist", "not_found")
    status = found.get("TrackingServerStatus")
    if status in USABLE:
        return
    if status in CREATING or status in UPDATING:
        raise NotYet(f"tracking server {name} is {status} (about 20 minutes on AWS)",
                     CREATE_POLL_S)
    raise MlflowError(f"tracking server {name} is {status}: "
                      + ("start it first (StartMlflowTrackingServer), then attach it again"
                         if status == "Stopped" else "see it in SageMaker Studio, or detach "
                         "and create it again"), "precondition_failed")


def delete_server(sm: Any, name: str, cluster: str) -> bool:
    """Delete the tracking server if hypd made it for this cluster (by its tags); False when
    it is gone or not hypd's. `NotYet` while it is still being created or changed."""
    found = describe(sm, name)
    if found is None or not made_by_hypd(sm, found["TrackingServerArn"], cluster):
        return False
    status = found.get("TrackingServerStatus")
    if status == "Deleting":
        return True
    if status in CREATING or (status in UPDATING and status != "Deleting"):
        raise NotYet(f"tracking server {name} is {status}; it is deleted once that ends",
                     DELETE_POLL_S)
    try:
        sm.delete_mlflow_tracking_server(TrackingServerName=name)
    except ClientError as exc:
        if error_code(exc) in ("ResourceNotFound", "ResourceNotFoundException"):
            return False
        raise
    return True


def wait_gone(sm: Any, name: str) -> None:
    found = describe(sm, name)
    if found is not None:
        raise NotYet(f"tracking server {name} is {found.get('TrackingServerStatus')}",
                     DELETE_POLL_S)


def ui_url(sm: Any, name: str) -> str:
    """A presigned URL of the tracking server's MLflow UI, valid UI_URL_SECONDS to open: a
    bearer credential, so it is answered to the caller only, never logged or cached."""
    return sm.create_presigned_mlflow_tracking_server_url(
        TrackingServerName=name, ExpiresInSeconds=UI_URL_SECONDS)["AuthorizedUrl"]


# -- the record in the cluster ------------------------------------------------------------------

def record_manifest(cluster: str, name: str, arn: str, made: bool, role_arn: str
                    ) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": RECORD_NAME, "namespace": RECORD_NAMESPACE,
                         "labels": kube.labels()},
            "data": {"tracking_server_name": name, "tracking_server_arn": arn,
                     "made_by_hypd": "true" if made else "false", "role_arn": role_arn,
                     "cluster": cluster}}


def read_record(api: Any) -> dict[str, Any] | None:
    """The cluster's MLflow record: {tracking_server_name, tracking_server_arn, made_by_hypd,
    role_arn}, or None when none is attached (an object hypd did not make is ignored)."""
    found = kube.get_object(api, "v1", "ConfigMap", RECORD_NAME, RECORD_NAMESPACE)
    if found is None or not kube.managed_by_hypd(found):
        return None
    data = found.get("data") or {}
    if not data.get("tracking_server_arn"):
        return None
    return {"tracking_server_name": data.get("tracking_server_name"),
            "tracking_server_arn": data["tracking_server_arn"],
            "made_by_hypd": data.get("made_by_hypd") == "true",
            "role_arn": data.get("role_arn")}


def delete_record(api: Any) -> bool:
    return kube.delete_object(api, "v1", "ConfigMap", RECORD_NAME, RECORD_NAMESPACE)


# -- the jobs' identity -------------------------------------------------------------------------

def service_account(namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": SERVICE_ACCOUNT, "namespace": namespace,
                         "labels": kube.labels()}}


def _associations(eks: Any, cluster: str, namespace: str | None) -> list[dict[str, Any]]:
    kwargs: dict[str, Any] = {"clusterName": cluster, "serviceAccount": SERVICE_ACCOUNT}
    if namespace is not None:
        kwargs["namespace"] = namespace
    found: list[dict[str, Any]] = []
    for page in eks.get_paginator("list_pod_identity_associations").paginate(**kwargs):
        found.extend(page.get("associations") or ())
    return found


def ensure_binding(eks: Any, api: Any, cluster: str, namespace: str, role_arn: str,
                   token: str) -> dict[str, Any]:
    """The job service account of `namespace` and its Pod Identity association to the
    MLflow role: each made only when missing (an association to another role is refused)."""
    found = kube.get_object(api, "v1", "ServiceAccount", SERVICE_ACCOUNT, namespace)
    if found is not None and not kube.managed_by_hypd(found):
        raise MlflowError(f"service account {namespace}/{SERVICE_ACCOUNT} exists and hypd did "
                          "not make it; delete or rename it first", "conflict")
    if found is None:
        kube.server_side_apply(api, service_account(namespace))
    for item in _associations(eks, cluster, namespace):
        role = eks.describe_pod_identity_association(
            clusterName=cluster, associationId=item["associationId"])["association"]["roleArn"]
        if role == role_arn:
            return {"namespace": namespace, "association": item["associationId"]}
        raise MlflowError(f"service account {namespace}/{SERVICE_ACCOUNT} is associated with "
                          f"another role ({role}); remove that association first", "conflict")
    made = eks.create_pod_identity_association(
        clusterName=cluster, namespace=namespace, serviceAccount=SERVICE_ACCOUNT,
        roleArn=role_arn, tags={t["Key"]: t["Value"] for t in server_tags(cluster)},
        clientRequestToken=token)["association"]
    return {"namespace": namespace, "association": made["associationId"]}


def remove_bindings(eks: Any, api: Any, cluster: str, role_arn: str | None) -> dict[str, Any]:
    """Every Pod Identity association of a `hypd-mlflow` service account to the MLflow role,
    and every such service account hypd made, in any namespace."""
    deleted: list[str] = []
    for item in _associations(eks, cluster, None):
        found = eks.describe_pod_identity_association(
            clusterName=cluster, associationId=item["associationId"])["association"]
        if role_arn is None or found.get("roleArn") == role_arn:
            eks.delete_pod_identity_association(clusterName=cluster,
                                                associationId=item["associationId"])
            deleted.append(f"{item['namespace']}/{SERVICE_ACCOUNT}")
    accounts = [a for a in kube.list_objects(api, "v1", "ServiceAccount",
                                             label_selector={kube.MANAGED_BY_LABEL:
                                                             kube.MANAGED_BY_VALUE})
                if a["metadata"]["name"] == SERVICE_ACCOUNT]
    for account in accounts:
        kube.delete_object(api, "v1", "ServiceAccount", SERVICE_ACCOUNT,
                           account["metadata"]["namespace"])
    return {"associations_deleted": deleted,
            "service_accounts_deleted": [a["metadata"]["namespace"] for a in accounts]}


def job_env(record: dict[str, Any], experiment: str) -> dict[str, str]:
    """What a job's containers get to log to the cluster's tracking server."""
    return {TRACKING_URI: record["tracking_server_arn"], EXPERIMENT: experiment}
