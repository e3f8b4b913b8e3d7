"""EKS clusters as AWS has them, on top of moto's: idempotent creation, accessConfig, the
local Kubernetes behind each cluster, a timed DELETING, and tags on the sandbox's own
resources.

- CreateCluster: refused as EKS refuses it (bad subnets or fewer than two zones, unknown role
  or security group, `bootstrapClusterCreatorAdminPermissions=false` with `CONFIG_MAP`);
  the same name with the same `clientRequestToken` answers the existing cluster (200, no
  second cluster), with another token `ResourceInUseException`. The cluster gets a local
  Kubernetes (`app.kubes.ensure`), its `accessConfig` (default `CONFIG_MAP`, bootstrap on),
  and — bootstrap on and mode `API*` — an access entry for its creator with
  AmazonEKSClusterAdminPolicy, as EKS makes; in `CONFIG_MAP` mode the creator is an
  implicit admin.
- DescribeCluster: `endpoint` is the local Kubernetes (`https://127.0.0.1:<port>`) and
  `certificateAuthority.data` its CA (base64 PEM) once the cluster is ACTIVE (absent while
  CREATING); `identity.oidc.issuer` is `https://oidc.eks.<region>.amazonaws.com/id/<32 hex>`,
  one per cluster; `accessConfig` as created.
- DeleteCluster: DELETING for `EKS_CLUSTER_DELETING_S` simulated seconds, then gone with its
  local Kubernetes, add-ons, access entries and pod identity associations.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from sandbox.gaps import GapContext, answers, rewrites
from sandbox.gaps.eks_access import add_entry, associate, identity_of_caller
from sandbox.gaps.eks_addons import KUBERNETES_VERSIONS
from sandbox.gaps.eks_model import EksError, in_use, invalid, request
from sandbox.gaps.eks_state import (
    DEFAULT_KUBERNETES_VERSION,
    ClusterRecord,
    backend,
    forward,
    moto_cluster_json,
    new_issuer_id,
    ok,
    record,
    state,
)
from sandbox.kube.access import CLUSTER_ADMIN
from sandbox.reply import Reply

EKS_CLUSTER_DELETING_S = 300.0
_SERVING = ("ACTIVE", "UPDATING", "DELETING")


def decorate(
    ctx: GapContext, rec: ClusterRecord, cluster: dict[str, Any], creating: bool = False
) -> dict[str, Any]:
    """moto's cluster answer with what EKS reports and moto does not."""
    out = dict(cluster)
    out["accessConfig"] = dict(rec.access_config)
    out["identity"] = {"oidc": {"issuer": rec.issuer}}
    out["version"] = rec.kubernetes_version
    kube = ctx.app.kubes.get(rec.name)
    if not creating and out.get("status") in _SERVING and kube is not None:
        out["endpoint"] = kube.url
        out["certificateAuthority"] = {"data": base64.b64encode(kube.ca_pem).decode()}
    else:
        out.pop("endpoint", None)
        out.pop("certificateAuthority", None)
    return out


def _check_network(ctx: GapContext, config: dict[str, Any]) -> None:
    from moto.ec2.models import ec2_backends

    ec2 = ec2_backends[ctx.call.account][ctx.call.region]
    zones: set[str] = set()
    vpcs: set[str] = set()
    for subnet_id in config.get("subnetIds") or []:
        try:
            subnet = ec2.get_subnet(subnet_id)
        except Exception as exc:
            raise invalid(f"The subnet ID '{subnet_id}' does not exist") from exc
        zones.add(subnet.availability_zone)
        vpcs.add(subnet.vpc_id)
    if len(zones) < 2:
        raise invalid("Subnets specified must be in at least two different AZs")
    if len(vpcs) > 1:
        raise invalid("Subnets specified must be in the same VPC")
    for group_id in config.get("securityGroupIds") or []:
        if ec2.get_security_group_from_id(group_id) is None:
            raise invalid(f"The security group '{group_id}' does not exist")


def _check_role(ctx: GapContext, role_arn: str) -> None:
    from moto.iam.models import iam_backends

    account = role_arn.split(":")[4] if role_arn.count(":") >= 5 else ctx.call.account
    try:
        iam_backends[account]["aws"].get_role_by_arn(role_arn)
    except Exception as exc:
        raise invalid(
            f"Role with arn: {role_arn}, could not be assumed because it does not exist or the "
            "trusted entity is not correct"
        ) from exc


@answers("eks", "CreateCluster")
def create_cluster(ctx: GapContext) -> Reply:
    try:
        p = request(ctx)
        name = p["name"]
        token = p.get("clientRequestToken")
        rec = record(ctx, name)
        if rec is not None:
            if token and rec.token == token:
                return ok({"cluster": decorate(ctx, rec, moto_cluster_json(ctx, name))})
            raise in_use(f"Cluster already exists with name: {name}")
        _check_network(ctx, p["resourcesVpcConfig"])
        _check_role(ctx, p["roleArn"])
        access = p.get("accessConfig") or {}
        mode = access.get("authenticationMode") or "CONFIG_MAP"
        bootstrap = access.get("bootstrapClusterCreatorAdminPermissions", True)
        if mode == "CONFIG_MAP" and not bootstrap:
            raise invalid(
                "bootstrapClusterCreatorAdminPermissions must be true if cluster authentication "
                "mode is set to CONFIG_MAP"
            )
        version = p.get("version") or DEFAULT_KUBERNETES_VERSION
        if version not in KUBERNETES_VERSIONS:
            raise invalid(f"unsupported Kubernetes version {version}")
        body = json.loads(ctx.body or b"{}")
        body["version"] = version
        reply = forward(ctx, body=json.dumps(body).encode())
        if reply.status >= 400:
            return reply
        obj = backend(ctx).clusters[name]
        rec = ClusterRecord(
            account=ctx.call.account,
            region=ctx.call.region,
            name=name,
            obj=obj,
            token=token,
            access_config={
                "authenticationMode": mode,
                "bootstrapClusterCreatorAdminPermissions": bool(bootstrap),
            },
            issuer_id=new_issuer_id(),
            kubernetes_version=version,
        )
        st = state(ctx)
        with st.lock:
            st.clusters[(rec.account, rec.region, name)] = rec
            kube = ctx.app.kubes.ensure(name, version)
            kube.access.set_mode(mode)
            creator = identity_of_caller(ctx)
            if creator and bootstrap and mode == "CONFIG_MAP":
                kube.access.set_creator(creator)
            elif creator and bootstrap:
                add_entry(ctx, rec, creator)
                associate(ctx, rec, creator, CLUSTER_ADMIN, {"type": "cluster"})
        answer = json.loads(reply.body)
        answer["cluster"] = decorate(ctx, rec, answer["cluster"], creating=True)
        return reply.with_body(json.dumps(answer).encode())
    except EksError as exc:
        return exc.reply()


@rewrites("eks", "DescribeCluster")
def describe_cluster(ctx: GapContext, reply: Reply) -> Reply:
    if reply.status >= 400:
        return reply
    try:
        answer = json.loads(reply.body)
        name = answer["cluster"]["name"]
    except (ValueError, KeyError, TypeError):
        return reply
    rec = record(ctx, name)
    if rec is None:
        return reply
    answer["cluster"] = decorate(ctx, rec, answer["cluster"])
    return reply.with_body(json.dumps(answer).encode())


def _finish_delete(ctx: GapContext, rec: ClusterRecord, moto_backend: Any) -> Any:
    app = ctx.app

    def change() -> None:
        if moto_backend.clusters.get(rec.name) is rec.obj:
            del moto_backend.clusters[rec.name]
        with app.gap_state["eks"].lock:
            current = app.gap_state["eks"].clusters.get((rec.account, rec.region, rec.name))
            if current is rec:
                del app.gap_state["eks"].clusters[(rec.account, rec.region, rec.name)]
                app.kubes.remove(rec.name)

    return change


@answers("eks", "DeleteCluster")
def delete_cluster(ctx: GapContext) -> Reply:
    try:
        name = request(ctx)["name"]
        rec = record(ctx, name)
        if rec is not None and rec.status == "DELETING":
            raise in_use(f"Cluster {name} is already being deleted.")
        reply = forward(ctx)
        if reply.status >= 400 or rec is None:
            return reply
        moto_backend = backend(ctx)
        moto_backend.clusters[name] = rec.obj  # moto removed it at once; EKS takes minutes
        rec.obj.status = "DELETING"
        ctx.app.transitions.timeline.after(
            EKS_CLUSTER_DELETING_S, _finish_delete(ctx, rec, moto_backend)
        )
        answer = json.loads(reply.body)
        answer["cluster"]["status"] = "DELETING"
        answer["cluster"] = decorate(ctx, rec, answer["cluster"])
        return reply.with_body(json.dumps(answer).encode())
    except EksError as exc:
        return exc.reply()


# --- tags on the sandbox's own EKS resources ---------------------------------------------

_OWN_TYPES = ("addon", "access-entry", "podidentityassociation")


def _tags_of(ctx: GapContext, resource_arn: str) -> dict[str, str] | None:
    """The tag map of an add-on, access entry or pod identity association (None: not ours)."""
    try:
        resource = resource_arn.split(":", 5)[5]
    except IndexError:
        return None
    kind, _, rest = resource.partition("/")
    if kind not in _OWN_TYPES:
        return None
    rec = record(ctx, rest.split("/", 1)[0])
    if rec is None or resource_arn not in rec.tags:
        raise EksError("NotFoundException", f"Resource {resource_arn} not found", 404)
    return rec.tags[resource_arn]


def _sync_tags(ctx: GapContext, resource_arn: str, tags: dict[str, str]) -> None:
    rec = record(ctx, resource_arn.split(":", 5)[5].split("/")[1])
    if rec is None:
        return
    for item in (
        list(rec.addons.values())
        + list(rec.access_entries.values())
        + list(rec.pod_identities.values())
    ):
        if resource_arn in (
            item.get("addonArn"),
            item.get("accessEntryArn"),
            item.get("associationArn"),
        ):
            item["tags"] = dict(tags)


@answers("eks", "ListTagsForResource")
def list_tags(ctx: GapContext) -> Reply:
    try:
        p = request(ctx)
        tags = _tags_of(ctx, p["resourceArn"])
        return forward(ctx) if tags is None else ok({"tags": tags})
    except EksError as exc:
        return exc.reply()


@answers("eks", "TagResource")
def tag_resource(ctx: GapContext) -> Reply:
    try:
        p = request(ctx)
        with state(ctx).lock:
            tags = _tags_of(ctx, p["resourceArn"])
            if tags is None:
                return forward(ctx)
            tags.update(p["tags"])
            _sync_tags(ctx, p["resourceArn"], tags)
        return ok({})
    except EksError as exc:
        return exc.reply()


@answers("eks", "UntagResource")
def untag_resource(ctx: GapContext) -> Reply:
    try:
        p = request(ctx)
        with state(ctx).lock:
            tags = _tags_of(ctx, p["resourceArn"])
            if tags is None:
                return forward(ctx)
            for key in p["tagKeys"]:
                tags.pop(key, None)
            _sync_tags(ctx, p["resourceArn"], tags)
        return ok({})
    except EksError as exc:
        return exc.reply()
