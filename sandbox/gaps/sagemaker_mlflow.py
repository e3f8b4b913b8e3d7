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
usable tracking server, and is valid for its `ExpiresInSeconds` (wall-clock, as AWS's: the
sandbox clock scales AWS's long waits, not a link's life). State lives
on the local AWS (`TRACKING_SERVERS`); timed changes are scheduled after this module's lock is
released.

The sandbox has no MLflow UI. AWS's presigned URL opens the tracking server's MLflow web app
signed in; the sandbox's opens a page of the local AWS itself (`ui_page`, served at
`/_sandbox/mlflow-ui/<token>`: a browser on this machine reaches it) that names the tracking
server and says what the link would open on AWS — so the dashboard's "Open" leads somewhere
honest instead of to a host that does not exist. An unknown or expired link is 403, as AWS
answers one.
"""

from __future__ import annotations

import html
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sandbox.env import CONTROL_PATH
from sandbox.gaps import AwsError, GapContext, GapState, answers
from sandbox.gaps.sagemaker_common import iam_role, s3_bucket, split_s3_uri, validation
from sandbox.reply import Reply

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
    # presigned UI links: token -> (the server's key, the monotonic second it expires at)
    links: dict[str, tuple[tuple[str, str, str], float]] = field(default_factory=dict)


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
        token = secrets.token_urlsafe(24)
        book.links[token] = (_key(ctx, p["TrackingServerName"]),
                             time.monotonic() + int(p.get("ExpiresInSeconds") or 300))
    environ = ctx.environ
    here = f"{environ.get('wsgi.url_scheme', 'http')}://{environ.get('HTTP_HOST', '127.0.0.1')}"
    return {"AuthorizedUrl": f"{here}{CONTROL_PATH}/mlflow-ui/{token}"}


def ui_page(app: Any, token: str) -> Reply:
    """What a presigned UI link opens on the sandbox: a page naming the tracking server and
    what AWS would show there (403 for a link unknown or past its expiry)."""
    book = TRACKING_SERVERS.of(app)
    with book.lock:
        link = book.links.get(token)
        server = book.servers.get(link[0]) if link else None
        valid = bool(link and server and time.monotonic() <= link[1])
        found = dict(server) if valid and server else None
    if found is None:
        return _page(403, "This link has expired or is not valid",
                     "<p>A presigned MLflow URL is valid for the seconds it was made for. "
                     "Ask for a new one (the dashboard's MLflow link does).</p>")
    name = html.escape(found["TrackingServerName"])
    return _page(200, f"MLflow tracking server {name} (sandbox)", f"""
<p>On AWS this link opens the MLflow web app of SageMaker's managed tracking server
<b>{name}</b>, signed in: experiments, runs, metrics and artifacts.</p>
<p>The sandbox has no MLflow UI. What AWS would serve:</p>
<dl>
<dt>Tracking server</dt><dd><code>{html.escape(found["TrackingServerArn"])}</code></dd>
<dt>Status</dt><dd>{html.escape(found["TrackingServerStatus"])}</dd>
<dt>MLflow version</dt><dd>{html.escape(found["MlflowVersion"])}</dd>
<dt>Artifact store</dt><dd><code>{html.escape(found["ArtifactStoreUri"])}</code></dd>
</dl>""")


def _page(status: int, title: str, body: str) -> Reply:
    text = (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}"
            f"</title></head><body><main><h1>{title}</h1>{body}</main></body></html>")
    return Reply(status, text.encode(), [("Content-Type", "text/html; charset=utf-8")])


def is_tracking_server_arn(arn: str) -> bool:
    return ARN_RE.match(arn) is not None


def tags_of(ctx: GapContext, arn: str) -> dict[str, Any]:
    """ListTags of a tracking server (sagemaker.py's ListTags hands these ARNs here)."""
    book = TRACKING_SERVERS.of(ctx)
    with book.lock:
        if arn not in book.tags:
            raise AwsError("ResourceNotFound", f"Resource {arn} not found.")
        return {"Tags": [dict(t) for t in book.tags[arn]]}
