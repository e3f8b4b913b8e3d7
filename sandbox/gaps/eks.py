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
- The cluster's VPC: CreateCluster makes the cluster security group EKS makes
  (`eks-cluster-sg-<name>-<digits>`, all traffic from itself; `clusterSecurityGroupId` and
  the subnets' `vpcId` in `resourcesVpcConfig`, as EKS reports them) and the control plane's
  two cross-account network interfaces ("Amazon EKS <name>", one in each of the first two
  zones' subnets, with the given security groups and the cluster's; sandbox/interfaces.py).
  Once the cluster is gone they are detached, deleted `ENI_RELEASE_S` later, and then the
  cluster security group goes: until then its subnets, security groups and VPC cannot be
  deleted (sandbox/gaps/ec2.py).

moto answers underneath (`ctx.moto()`): it keeps the cluster object, its tags and ListClusters.

Age: a jump of the sandbox's clock moves moto's `createdAt` of every EKS cluster, node group
and Fargate profile, and the `createdAt`/`modifiedAt`/`associatedAt` of the gap's add-ons,
access entries and policies and pod identity associations, that far into the past
(sandbox/timing.py says why). Updates (`DescribeUpdate`) keep their `createdAt`: they are
events of the cluster's history, not resources that run.
"""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from sandbox import interfaces
from sandbox.gaps import GapContext, ages, answers, moto_backends
from sandbox.gaps.eks_access import add_entry, associate, identity_of_caller
from sandbox.gaps.eks_addons import KUBERNETES_VERSIONS
from sandbox.gaps.eks_state import (
    DEFAULT_KUBERNETES_VERSION,
    EKS,
    ClusterRecord,
    backend,
    in_use,
    invalid,
    moto_cluster_json,
    new_issuer_id,
    record,
    state,
)
from sandbox.kube.access import CLUSTER_ADMIN
from sandbox.reply import Reply

EKS_CLUSTER_DELETING_S = 300.0
_SERVING = ("ACTIVE", "UPDATING", "DELETING")
CLUSTER_SG_DESCRIPTION = (
    "EKS created security group applied to ENI that is attached to EKS Control Plane master "
    "nodes, as well as any managed workloads.")


def decorate(
    ctx: GapContext, rec: ClusterRecord, cluster: dict[str, Any], creating: bool = False
) -> dict[str, Any]:
    """moto's cluster answer with what EKS reports and moto does not."""
    out = dict(cluster)
    out["accessConfig"] = dict(rec.access_config)
    out["identity"] = {"oidc": {"issuer": rec.issuer}}
    out["version"] = rec.kubernetes_version
    if rec.cluster_security_group:
        out["resourcesVpcConfig"] = {**(out.get("resourcesVpcConfig") or {}),
                                     "clusterSecurityGroupId": rec.cluster_security_group,
                                     "vpcId": rec.vpc_id}
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


def _place_control_plane(ctx: GapContext, rec: ClusterRecord, config: dict[str, Any]) -> None:
    """EKS's cluster security group and control-plane interfaces in the cluster's VPC."""
    account, region, name = rec.account, rec.region, rec.name
    ec2 = interfaces.ec2_backend(account, region)
    subnets = [ec2.get_subnet(s) for s in config["subnetIds"]]  # checked by _check_network
    vpc_id = subnets[0].vpc_id
    group_name = f"eks-cluster-sg-{name}-{secrets.randbelow(9 * 10**9) + 10**9}"
    group = ec2.create_security_group(group_name, CLUSTER_SG_DESCRIPTION, vpc_id, tags={
        "Name": group_name, "aws:eks:cluster-name": name, f"kubernetes.io/cluster/{name}": "owned"})
    ec2.authorize_security_group_ingress(group.id, "-1", None, None, [],
                                         source_groups=[{"GroupId": group.id}], vpc_id=vpc_id)
    rec.cluster_security_group = group.id
    rec.vpc_id = vpc_id
    first_per_zone: dict[str, str] = {}
    for subnet in subnets:
        first_per_zone.setdefault(subnet.availability_zone, subnet.id)
    owner = interfaces.Owner(description=f"Amazon EKS {name}",
                             requester_id=interfaces.EKS_ACCOUNT,
                             instance_owner_id=interfaces.EKS_ACCOUNT)
    groups = [*(config.get("securityGroupIds") or []), group.id]
    for subnet_id in list(first_per_zone.values())[:2]:
        made = interfaces.create(account, region, subnet_id, groups, owner)
        if made:
            rec.interfaces.append(made)


def _remove_control_plane(app: Any, rec: ClusterRecord) -> None:
    """The cluster is gone: its interfaces are released, then its security group goes."""
    group_id = rec.cluster_security_group

    def drop_group() -> None:
        if group_id:
            ec2 = interfaces.ec2_backend(rec.account, rec.region)
            if ec2.get_security_group_from_id(group_id) is not None:
                ec2.delete_security_group(group_id=group_id)

    interfaces.release(app, rec.account, rec.region, rec.interfaces, then=drop_group)


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
def create_cluster(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any] | Reply:
    name = p["name"]
    token = p.get("clientRequestToken")
    rec = record(ctx, name)
    if rec is not None:
        if token and rec.token == token:
            return {"cluster": decorate(ctx, rec, moto_cluster_json(ctx, name))}
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
    sent = {**json.loads(ctx.body or b"{}"), "version": version}
    reply = ctx.moto(body=json.dumps(sent).encode())
    if reply.status >= 400:
        return reply
    rec = ClusterRecord(
        account=ctx.call.account,
        region=ctx.call.region,
        name=name,
        obj=backend(ctx).clusters[name],
        token=token,
        access_config={
            "authenticationMode": mode,
            "bootstrapClusterCreatorAdminPermissions": bool(bootstrap),
        },
        issuer_id=new_issuer_id(),
        kubernetes_version=version,
    )
    _place_control_plane(ctx, rec, p["resourcesVpcConfig"])
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
    return {"cluster": decorate(ctx, rec, json.loads(reply.body)["cluster"], creating=True)}


@answers("eks", "DescribeCluster")
def describe_cluster(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any] | Reply:
    reply = ctx.moto()
    rec = record(ctx, p["name"]) if reply.status < 400 else None
    if rec is None:
        return reply
    return {"cluster": decorate(ctx, rec, json.loads(reply.body)["cluster"])}


def _finish_delete(app: Any, rec: ClusterRecord, moto_backend: Any) -> Any:
    def change() -> None:
        if moto_backend.clusters.get(rec.name) is rec.obj:
            del moto_backend.clusters[rec.name]
        st = state(app)
        with st.lock:
            if st.clusters.get((rec.account, rec.region, rec.name)) is rec:
                del st.clusters[(rec.account, rec.region, rec.name)]
                app.kubes.remove(rec.name)
        _remove_control_plane(app, rec)

    return change


@answers("eks", "DeleteCluster")
def delete_cluster(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any] | Reply:
    name = p["name"]
    rec = record(ctx, name)
    if rec is not None and rec.status == "DELETING":
        raise in_use(f"Cluster {name} is already being deleted.")
    reply = ctx.moto()
    if reply.status >= 400 or rec is None:
        return reply
    moto_backend = backend(ctx)
    moto_backend.clusters[name] = rec.obj  # moto removed it at once; EKS takes minutes
    rec.obj.status = "DELETING"
    ctx.app.transitions.timeline.after(
        EKS_CLUSTER_DELETING_S, _finish_delete(ctx.app, rec, moto_backend)
    )
    return {"cluster": decorate(ctx, rec, {**json.loads(reply.body)["cluster"],
                                           "status": "DELETING"})}


# --- age -----------------------------------------------------------------------------------

_STAMPS = ("createdAt", "modifiedAt", "associatedAt")


def _moto_clusters() -> Iterable[Any]:
    """Every EKS cluster moto holds, in every account and region (its state is per process)."""
    from moto.eks.models import eks_backends

    for moto_backend in moto_backends(eks_backends):
        yield from list(moto_backend.clusters.values())


def _age_moto_cluster(cluster: Any, delta: timedelta) -> None:
    cluster.created_at -= delta
    for part in [*cluster.nodegroups.values(), *cluster.fargate_profiles.values()]:
        part.created_at -= delta
        if getattr(part, "modified_at", None) is not None:
            part.modified_at -= delta


def _age_stamps(found: dict[str, Any], seconds: float) -> None:
    for key in _STAMPS:
        if isinstance(found.get(key), int | float):
            found[key] -= seconds


def _records_with_stamps(rec: ClusterRecord) -> Iterable[dict[str, Any]]:
    """What the gap keeps of a cluster that lives on its own (not its updates: events)."""
    yield from rec.addons.values()
    yield from rec.access_entries.values()
    for policies in rec.access_policies.values():
        yield from policies.values()
    yield from rec.pod_identities.values()


@ages
def _age_clusters(app: Any, delta: timedelta) -> None:
    """The sandbox's clock jumped: every EKS cluster there is now, and what EKS keeps of it,
    is `delta` older."""
    for cluster in _moto_clusters():
        _age_moto_cluster(cluster, delta)
    st = EKS.peek(app)
    if st is None:
        return
    with st.lock:
        for rec in st.clusters.values():
            for found in _records_with_stamps(rec):
                _age_stamps(found, delta.total_seconds())
