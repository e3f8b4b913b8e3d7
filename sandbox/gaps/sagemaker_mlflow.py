"""SageMaker managed MLflow tracking servers (moto 5.2.5 has none of these calls).

CreateMlflowTrackingServer, DescribeMlflowTrackingServer, ListMlflowTrackingServers,
DeleteMlflowTrackingServer and CreatePresignedMlflowTrackingServerUrl, shaped by botocore's
model (the gap path checks each request against it), plus ListTags for tracking server ARNs
(sagemaker.py's ListTags hands them here). As AWS checks them: the role must exist in IAM, the
artifact store's bucket in S3, the name must be free in the account and region
(`ResourceInUse`). A new tracking server is `Creating` for MLFLOW_CREATING_S simulated seconds
(about 20 minutes on AWS, scaled by the sandbox speed), then `Created` with its URL; a delete
is refused while it is Creating or Updating, and a deleted one is `Deleting` for
MLFLOW_DELETING_S, then gone (`ResourceNotFound`). A presigned UI URL is answered only for a
usable tracking server. State lives on the local AWS (`TRACKING_SERVERS`); timed changes are
scheduled after this module's lock is released.
"""

from __future__ import annotations

import re
import secrets
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sandbox.gaps import AwsError, GapContext, GapState, answers
from sandbox.gaps.sagemaker_common import iam_role, s3_bucket, split_s3_uri, validation

SERVICE = "sagemaker"
STATE_KEY = "mlflow_tracking_servers"
MLFLOW_CREATING_S = 1200.0
MLFLOW_DELETING_S = 300.0
MLFLOW_VERSION = "2.16.2"
ARN_RE = re.compile(r"^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:\d{12}:mlflow-tracking-server/.+$")
USABLE = ("Created", "Updated", "Started", "MaintenanceComplete")
NOT_DELETABLE = ("Creating", "Updating", "Starting", "Stopping")


@dataclass
class TrackingServers:
    lock: threading.Lock = field(default_factory=threading.Lock)
    # (account, region, name) -> the DescribeMlflowTrackingServer answer, and its tags
    servers: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    tags: dict[str, list[dict[str, str]]] = field(default_factory=dict)


TRACKING_SERVERS: GapState[TrackingServers] = GapState(STATE_KEY, lambda app: TrackingServers())


def _key(ctx: GapContext, name: str) -> tuple[str, str, str]:
    return (ctx.call.account, ctx.call.region, name)


def _not_found(name: str) -> AwsError:
    return AwsError("ResourceNotFound", f"Tracking server with name {name} not found.")


def _found(book: TrackingServers, ctx: GapContext, name: str) -> dict[str, Any]:
    """The tracking server of that name in the caller's account and region (hold the lock)."""
    server = book.servers.get(_key(ctx, name))
    if server is None:
        raise _not_found(name)
    return server


def _change(book: TrackingServers, key: tuple[str, str, str], frm: str, to: str | None) -> Any:
    def change() -> None:
        with book.lock:
            server = book.servers.get(key)
            if server is None or server["TrackingServerStatus"] != frm:
                return
            if to is None:
                del book.servers[key]
                book.tags.pop(server["TrackingServerArn"], None)
                return
            server["TrackingServerStatus"] = to
            server["IsActive"] = "Active"
            server["LastModifiedTime"] = datetime.now(UTC)

    return change


@answers(SERVICE, "CreateMlflowTrackingServer")
def create(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    account, region, name = _key(ctx, p["TrackingServerName"])
    if iam_role(account, p["RoleArn"]) is None:
        raise validation(f"Role {p['RoleArn']} does not exist or cannot be assumed by "
                         "SageMaker.")
    parsed = split_s3_uri(p["ArtifactStoreUri"])
    if parsed is None:
        raise validation("ArtifactStoreUri must be an S3 URI.")
    bucket = parsed[0]
    if s3_bucket(account, bucket) is None:
        raise validation(f"The artifact store bucket {bucket} does not exist.")
    book = TRACKING_SERVERS.of(ctx)
    arn = f"arn:aws:sagemaker:{region}:{account}:mlflow-tracking-server/{name}"
    now = datetime.now(UTC)
    server = {
        "TrackingServerArn": arn, "TrackingServerName": name,
        "ArtifactStoreUri": p["ArtifactStoreUri"],
        "TrackingServerSize": p.get("TrackingServerSize") or "Small",
        "MlflowVersion": p.get("MlflowVersion") or MLFLOW_VERSION, "RoleArn": p["RoleArn"],
        "TrackingServerStatus": "Creating", "IsActive": "Inactive",
        "TrackingServerUrl": f"https://t-{secrets.token_hex(6)}.{region}.experiments."
                             "sagemaker.aws",
        "WeeklyMaintenanceWindowStart": p.get("WeeklyMaintenanceWindowStart") or "Tue:03:30",
        "AutomaticModelRegistration": bool(p.get("AutomaticModelRegistration", False)),
        "CreationTime": now, "LastModifiedTime": now,
    }
    key = (account, region, name)
    with book.lock:
        if key in book.servers:
            raise AwsError("ResourceInUse", f"Tracking server {name} already exists.")
        book.servers[key] = server
        book.tags[arn] = [dict(t) for t in p.get("Tags") or ()]
    ctx.app.transitions.timeline.after(MLFLOW_CREATING_S,
                                       _change(book, key, "Creating", "Created"))
    return {"TrackingServerArn": arn}


@answers(SERVICE, "DescribeMlflowTrackingServer")
def describe(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    book = TRACKING_SERVERS.of(ctx)
    with book.lock:
        return dict(_found(book, ctx, p["TrackingServerName"]))


@answers(SERVICE, "ListMlflowTrackingServers")
def list_servers(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    book = TRACKING_SERVERS.of(ctx)
    with book.lock:
        mine = [dict(s) for k, s in book.servers.items()
                if k[:2] == (ctx.call.account, ctx.call.region)
                and p.get("TrackingServerStatus") in (None, s["TrackingServerStatus"])]
    mine.sort(key=lambda s: s["CreationTime"], reverse=p.get("SortOrder") != "Ascending")
    keys = ("TrackingServerArn", "TrackingServerName", "CreationTime", "LastModifiedTime",
            "TrackingServerStatus", "IsActive", "MlflowVersion")
    return ctx.page([{k: s[k] for k in keys} for s in mine], "TrackingServerSummaries")


@answers(SERVICE, "DeleteMlflowTrackingServer")
def delete(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    book = TRACKING_SERVERS.of(ctx)
    key = _key(ctx, p["TrackingServerName"])
    with book.lock:
        server = _found(book, ctx, p["TrackingServerName"])
        status = server["TrackingServerStatus"]
        if status in NOT_DELETABLE:
            raise validation(f"Tracking server {key[2]} cannot be deleted while it is "
                             f"{status}.")
        started = status != "Deleting"
        server["TrackingServerStatus"] = "Deleting"
        arn = server["TrackingServerArn"]
    if started:
        ctx.app.transitions.timeline.after(MLFLOW_DELETING_S,
                                           _change(book, key, "Deleting", None))
    return {"TrackingServerArn": arn}


@answers(SERVICE, "CreatePresignedMlflowTrackingServerUrl")
def presigned_url(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    book = TRACKING_SERVERS.of(ctx)
    with book.lock:
        server = _found(book, ctx, p["TrackingServerName"])
        if server["TrackingServerStatus"] not in USABLE:
            raise validation(f"Tracking server {p['TrackingServerName']} is "
                             f"{server['TrackingServerStatus']}.")
        url = server["TrackingServerUrl"]
    return {"AuthorizedUrl": f"{url}/auth?authToken={secrets.token_urlsafe(24)}"}


def is_tracking_server_arn(arn: str) -> bool:
    return ARN_RE.match(arn) is not None


def tags_of(ctx: GapContext, arn: str) -> dict[str, Any]:
    """ListTags of a tracking server (sagemaker.py's ListTags hands these ARNs here)."""
    book = TRACKING_SERVERS.of(ctx)
    with book.lock:
        if arn not in book.tags:
            raise AwsError("ResourceNotFound", f"Resource {arn} not found.")
        return {"Tags": [dict(t) for t in book.tags[arn]]}
