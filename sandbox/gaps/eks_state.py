"""What the sandbox keeps about each EKS cluster beside moto's model: the fields moto drops
(accessConfig, a per-cluster OIDC issuer), and the add-ons, access entries, access policies
and pod identity associations moto does not implement. Kept on the LocalAwsApp
(`app.gap_state["eks"]`), one record per (account, region, cluster name), tied to moto's
cluster object: a record whose cluster moto no longer has (deleted, or moto reset) is
dropped with its local Kubernetes.
"""

from __future__ import annotations

import io
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from sandbox.gaps import GapContext
from sandbox.gaps.eks_model import EksError, invalid_request, not_found
from sandbox.reply import Reply

DEFAULT_KUBERNETES_VERSION = "1.33"


@dataclass
class ClusterRecord:
    account: str
    region: str
    name: str
    obj: Any  # moto.eks.models.Cluster
    token: str | None
    access_config: dict[str, Any]
    issuer_id: str
    kubernetes_version: str
    addons: dict[str, dict[str, Any]] = field(default_factory=dict)
    access_entries: dict[str, dict[str, Any]] = field(default_factory=dict)  # principal → entry
    access_policies: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    pod_identities: dict[str, dict[str, Any]] = field(default_factory=dict)  # id → association
    updates: dict[str, dict[str, Any]] = field(default_factory=dict)  # id → add-on update
    tokens: dict[tuple[str, str], str] = field(default_factory=dict)  # (kind, token) → id
    tags: dict[str, dict[str, str]] = field(default_factory=dict)  # arn → tags

    @property
    def status(self) -> str:
        return str(getattr(self.obj, "status", "ACTIVE"))

    @property
    def issuer(self) -> str:
        return f"https://oidc.eks.{self.region}.amazonaws.com/id/{self.issuer_id}"

    def require_active(self) -> None:
        if self.status != "ACTIVE":
            raise invalid_request(f"Cluster '{self.name}' is not in ACTIVE status")


class EksState:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.clusters: dict[tuple[str, str, str], ClusterRecord] = {}


def state(ctx: GapContext) -> EksState:
    return ctx.app.gap_state.setdefault("eks", EksState())  # type: ignore[no-any-return]


def backend(ctx: GapContext) -> Any:
    from moto.eks.models import eks_backends

    return eks_backends[ctx.call.account][ctx.call.region]


def new_issuer_id() -> str:
    return secrets.token_hex(16).upper()


def record(ctx: GapContext, name: str, adopt: bool = True) -> ClusterRecord | None:
    """The cluster's record, if moto has the cluster (adopting one the gap did not see made)."""
    obj = backend(ctx).clusters.get(name)
    st = state(ctx)
    key = (ctx.call.account, ctx.call.region, name)
    with st.lock:
        rec = st.clusters.get(key)
        if rec is not None and rec.obj is not obj:
            del st.clusters[key]
            ctx.app.kubes.remove(name)
            rec = None
        if obj is None or rec is not None or not adopt:
            return rec
        rec = ClusterRecord(
            account=ctx.call.account,
            region=ctx.call.region,
            name=name,
            obj=obj,
            token=getattr(obj, "client_request_token", None),
            access_config={
                "authenticationMode": "CONFIG_MAP",
                "bootstrapClusterCreatorAdminPermissions": True,
            },
            issuer_id=new_issuer_id(),
            kubernetes_version=str(getattr(obj, "version", DEFAULT_KUBERNETES_VERSION)),
        )
        st.clusters[key] = rec
    kube = ctx.app.kubes.ensure(name, rec.kubernetes_version)
    kube.access.set_mode(rec.access_config["authenticationMode"])
    return rec


def existing(ctx: GapContext, name: str) -> ClusterRecord:
    rec = record(ctx, name)
    if rec is None:
        raise not_found(f"No cluster found for name: {name}.")
    return rec


def drop(ctx: GapContext, rec: ClusterRecord) -> None:
    st = state(ctx)
    with st.lock:
        if st.clusters.get((rec.account, rec.region, rec.name)) is rec:
            del st.clusters[(rec.account, rec.region, rec.name)]


def arn(ctx: GapContext, kind: str, *parts: str) -> str:
    return f"arn:aws:eks:{ctx.call.region}:{ctx.call.account}:{kind}/" + "/".join(parts)


def now() -> float:
    return round(time.time(), 3)


def ok(value: Any, status: int = 200) -> Reply:
    return Reply.json(value, status)


def forward(
    ctx: GapContext, method: str | None = None, path: str | None = None, body: bytes | None = None
) -> Reply:
    """Let moto answer this request, or another one on the same connection details.

    (The layer's forwarder is the one way into moto; gap answers that build on moto's state
    use it rather than a second copy of the dispatch.)
    """
    environ = dict(ctx.environ)
    payload = ctx.body if body is None else body
    if method is not None:
        environ["REQUEST_METHOD"] = method
    if path is not None:
        environ["PATH_INFO"] = environ["RAW_URI"] = environ["REQUEST_URI"] = path
        environ["QUERY_STRING"] = ""
    environ["wsgi.input"] = io.BytesIO(payload)
    return ctx.app._forward(environ, payload, "rest-json")  # type: ignore[no-any-return]


def moto_cluster_json(ctx: GapContext, name: str) -> dict[str, Any]:
    reply = forward(ctx, "GET", f"/clusters/{name}", b"")
    if reply.status >= 400:
        raise EksError("ResourceNotFoundException", f"No cluster found for name: {name}.", 404)
    return json.loads(reply.body)["cluster"]  # type: ignore[no-any-return]


def page(items: list[Any], params: dict[str, Any]) -> tuple[list[Any], str | None]:
    """One page of a list (maxResults/nextToken as EKS pages: an opaque token)."""
    start = 0
    token = params.get("nextToken")
    if token:
        try:
            start = int(token)
        except ValueError as exc:
            from sandbox.gaps.eks_model import invalid

            raise invalid("The nextToken is not valid.") from exc
    size = int(params.get("maxResults") or 100)
    chunk = items[start : start + size]
    following = start + size
    return chunk, (str(following) if following < len(items) else None)
