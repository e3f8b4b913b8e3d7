"""What the sandbox keeps about each EKS cluster beside moto's model: the fields moto drops
(accessConfig, a per-cluster OIDC issuer, the version once upgraded), and the add-ons, access
entries, access policies, pod identity associations and updates moto does not implement.
Kept on the LocalAwsApp (the gap state `EKS`), one record per (account, region, cluster name),
tied to moto's cluster object: a record whose cluster moto no longer has (deleted, or moto
reset) is dropped with its local Kubernetes. Also EKS's errors, as the gap raises them.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from sandbox.gaps import AwsError, GapContext, GapState

DEFAULT_KUBERNETES_VERSION = "1.33"


def invalid(message: str) -> AwsError:
    return AwsError("InvalidParameterException", message)


def not_found(message: str) -> AwsError:
    return AwsError("ResourceNotFoundException", message, 404)


def in_use(message: str) -> AwsError:
    return AwsError("ResourceInUseException", message, 409)


def invalid_request(message: str) -> AwsError:
    return AwsError("InvalidRequestException", message)


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
    updates: dict[str, dict[str, Any]] = field(default_factory=dict)  # id → update
    tokens: dict[tuple[str, str], str] = field(default_factory=dict)  # (kind, token) → id
    # what EKS put in the cluster's VPC: its cluster security group and control-plane
    # network interfaces (sandbox/interfaces.py), gone after the cluster
    cluster_security_group: str | None = None
    vpc_id: str | None = None
    """its subnets' VPC: EKS reports it as resourcesVpcConfig.vpcId (moto does not)"""
    interfaces: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        return str(getattr(self.obj, "status", "ACTIVE"))

    @property
    def issuer(self) -> str:
        return f"https://oidc.eks.{self.region}.amazonaws.com/id/{self.issuer_id}"

    def replay(self, kind: str, request: dict[str, Any], made: dict[str, Any]) -> Any | None:
        """What an earlier request of `kind` with this request's `clientRequestToken` made, if
        `made` (where such things are kept, by key) still holds it."""
        token = request.get("clientRequestToken")
        key = self.tokens.get((kind, token)) if token else None
        return made.get(key) if key is not None else None

    def remember(self, kind: str, request: dict[str, Any], key: str) -> None:
        """Answer a later request of `kind` with this request's token by what `key` names."""
        if request.get("clientRequestToken"):
            self.tokens[(kind, request["clientRequestToken"])] = key

    def require_active(self) -> None:
        if self.status != "ACTIVE":
            raise invalid_request(f"Cluster '{self.name}' is not in ACTIVE status")


class EksState:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.clusters: dict[tuple[str, str, str], ClusterRecord] = {}


EKS: GapState[EksState] = GapState("eks", lambda app: EksState())


def state(owner: Any) -> EksState:
    """The EKS records of a local AWS (`owner`: the app, or a GapContext on it)."""
    return EKS.of(owner)


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


def arn(ctx: GapContext, kind: str, *parts: str) -> str:
    return f"arn:aws:eks:{ctx.call.region}:{ctx.call.account}:{kind}/" + "/".join(parts)


def now() -> float:
    return round(time.time(), 3)


def new_update(
    rec: ClusterRecord,
    kind: str,
    params: list[dict[str, str]],
    request: dict[str, Any],
    addon: str | None = None,
) -> dict[str, Any]:
    """A new InProgress update of the cluster (`addon`: of that add-on), as DescribeUpdate
    shows it; the request's `clientRequestToken`, if any, answers it again (call under the
    lock)."""
    update = {
        "id": str(uuid.uuid4()),
        "status": "InProgress",
        "type": kind,
        "params": params,
        "createdAt": now(),
        "errors": [],
        "_addon": addon,
    }
    rec.updates[update["id"]] = update
    rec.remember("addon-update" if addon else "cluster-update", request, update["id"])
    return update


def moto_cluster_json(ctx: GapContext, name: str) -> dict[str, Any]:
    reply = ctx.moto("GET", f"/clusters/{name}", b"")
    if reply.status >= 400:
        raise not_found(f"No cluster found for name: {name}.")
    return json.loads(reply.body)["cluster"]  # type: ignore[no-any-return]
