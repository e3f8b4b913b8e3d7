"""EC2 deletions AWS refuses while something still depends on the resource, and moto 5.2.5
allows: each is checked here, then moto answers (`ctx.moto()`).

- DeleteSubnet: refused while a network interface is in the subnet — an EKS control plane's,
  a HyperPod instance's, a NAT gateway's (until it is `deleted`), an interface endpoint's, an
  instance's, one made by hand (moto deletes the subnet regardless).
- DeleteSecurityGroup: refused while a network interface uses the group, or another group's
  rule names it (a group's rules naming itself do not count); moto deletes regardless.
- DeleteVpc: refused while it has subnets, an attached internet or egress-only internet
  gateway, security groups other than its default, route tables other than its main one, or
  VPC endpoints not deleted (moto checks only subnets, VPN gateways and route tables).
- DeleteNetworkInterface: refused while the interface is attached (`in-use`) — a service's
  interface goes when its owner does (sandbox/interfaces.py); DetachNetworkInterface of a
  service's attachment: `OperationNotPermitted` (only the service releases it).

Refusals are AWS's: `DependencyViolation` with AWS's messages ("The subnet 'subnet-…' has
dependencies and cannot be deleted.", "resource sg-… has a dependent object", "The vpc
'vpc-…' has dependencies and cannot be deleted."), and `InvalidNetworkInterface.InUse`. A
`DryRun` request deletes nothing and answers `DryRunOperation` (412), as AWS does for a caller
allowed to make the call (moto's DeleteSubnet and DeleteVpc ignored the flag and deleted). An
unknown id is moto's to answer.

Also CreateVpcEndpoint: an interface endpoint's network interfaces get AWS's fields and the
endpoint's security groups (moto's were plain, with the VPC's default group).

Age: a jump of the sandbox's clock moves moto's `CreateTime` of every NAT gateway (what the
product bills a gateway from) that far into the past (sandbox/timing.py says why). Other EC2
times are left as moto keeps them (instances' `LaunchTime`, VPC endpoints' and network
interfaces' times): nothing the product measures a duration from.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from sandbox import interfaces
from sandbox.gaps import AwsError, GapContext, ages, answers, moto_backends
from sandbox.reply import Reply

_ENDPOINT_ID = re.compile(rb"<vpcEndpointId>(vpce-[0-9a-f]+)</vpcEndpointId>")


def _backend(ctx: GapContext) -> Any:
    return interfaces.ec2_backend(ctx.call.account, ctx.call.region)


def _dependency(message: str) -> AwsError:
    return AwsError("DependencyViolation", message)


def _no_dry_run(p: dict[str, Any]) -> None:
    if p.get("DryRun"):
        raise AwsError("DryRunOperation",
                       "Request would have succeeded, but DryRun flag is set.", 412)


@answers("ec2", "DeleteSubnet")
def delete_subnet(ctx: GapContext, p: dict[str, Any]) -> Reply:
    _no_dry_run(p)
    subnet_id = p.get("SubnetId")
    if subnet_id and interfaces.in_subnet(_backend(ctx), subnet_id):
        raise _dependency(f"The subnet '{subnet_id}' has dependencies and cannot be deleted.")
    return ctx.moto()


def _group(backend: Any, p: dict[str, Any]) -> Any | None:
    if p.get("GroupId"):
        return backend.get_security_group_from_id(p["GroupId"])
    if p.get("GroupName"):
        return backend.get_security_group_from_name(p["GroupName"])
    return None


def referenced_by(backend: Any, group_id: str) -> list[str]:
    """The other security groups whose rules name `group_id`."""
    found = []
    for groups in list(backend.groups.values()):
        for other in list(groups.values()):
            if other.id == group_id:
                continue
            rules = [*other.ingress_rules, *other.egress_rules]
            if any((r.source_group or {}).get("GroupId") == group_id for r in rules):
                found.append(other.id)
    return found


@answers("ec2", "DeleteSecurityGroup")
def delete_security_group(ctx: GapContext, p: dict[str, Any]) -> Reply:
    _no_dry_run(p)
    backend = _backend(ctx)
    group = _group(backend, p)
    if group is not None and (interfaces.using_group(backend, group.id)
                              or referenced_by(backend, group.id)):
        raise _dependency(f"resource {group.id} has a dependent object")
    return ctx.moto()


def vpc_dependents(backend: Any, vpc_id: str) -> list[str]:
    """What keeps a VPC from being deleted, by id."""
    found = [s.id for s in backend.describe_subnets(filters={"vpc-id": vpc_id})]
    found += [g.id for g in list(backend.internet_gateways.values())
              if g.vpc is not None and g.vpc.id == vpc_id]
    found += [g.id for g in list(backend.egress_only_internet_gateways.values())
              if g.vpc_id == vpc_id]
    found += [g.id for g in list(backend.groups.get(vpc_id, {}).values()) if g.name != "default"]
    found += [t.id for t in list(backend.route_tables.values())
              if t.vpc_id == vpc_id and t.main_association_id is None]
    found += [e.id for e in list(backend.vpc_end_points.values())
              if e.vpc_id == vpc_id and e.state != "deleted"]
    return found


@answers("ec2", "DeleteVpc")
def delete_vpc(ctx: GapContext, p: dict[str, Any]) -> Reply:
    _no_dry_run(p)
    vpc_id = p.get("VpcId")
    if vpc_id and vpc_dependents(_backend(ctx), vpc_id):
        raise _dependency(f"The vpc '{vpc_id}' has dependencies and cannot be deleted.")
    return ctx.moto()


@answers("ec2", "DeleteNetworkInterface")
def delete_network_interface(ctx: GapContext, p: dict[str, Any]) -> Reply:
    _no_dry_run(p)
    eni = _backend(ctx).enis.get(p.get("NetworkInterfaceId") or "")
    if eni is not None and eni.status == "in-use":
        raise AwsError("InvalidNetworkInterface.InUse",
                       f"The network interface '{eni.id}' is currently in use.")
    return ctx.moto()


@answers("ec2", "DetachNetworkInterface")
def detach_network_interface(ctx: GapContext, p: dict[str, Any]) -> Reply:
    _no_dry_run(p)
    attachment = p.get("AttachmentId") or ""
    for eni in list(_backend(ctx).enis.values()):
        if eni.attachment_id == attachment and eni.requester_managed:
            prefix = attachment.rsplit("-", 1)[0]
            raise AwsError("OperationNotPermitted",
                           f"You are not allowed to manage '{prefix}' attachments.")
    return ctx.moto()


@answers("ec2", "CreateVpcEndpoint")
def create_vpc_endpoint(ctx: GapContext, p: dict[str, Any]) -> Reply:
    reply = ctx.moto()
    found = _ENDPOINT_ID.search(reply.body) if reply.status < 400 else None
    backend = _backend(ctx)
    endpoint = backend.vpc_end_points.get(found.group(1).decode()) if found else None
    if endpoint is not None:
        interfaces.vpc_endpoint_interfaces(backend, endpoint)
    return reply


@ages
def _age_nat_gateways(app: Any, delta: timedelta) -> None:
    """The sandbox's clock jumped: every NAT gateway moto holds (in every account and region:
    its state is per process) was made `delta` earlier."""
    from moto.ec2.models import ec2_backends

    for moto_backend in moto_backends(ec2_backends):
        for nat in list(moto_backend.nat_gateways.values()):
            nat._created_at -= delta
