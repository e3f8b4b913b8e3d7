"""Network interfaces that AWS services put in a customer's VPC, as moto network interfaces.

On AWS an EKS cluster's control plane, each HyperPod instance, each NAT gateway and each
interface VPC endpoint hold elastic network interfaces in the customer's subnets, with the
customer's security groups; the service (not the customer) made them, so they are
*requester-managed* and (but an endpoint's) attached to an instance the service owns. While
they exist the subnet, the security groups and the VPC cannot be deleted
(`DependencyViolation`, sandbox/gaps/ec2.py). They are real moto objects
(`ec2_backends[account][region].enis`), so `DescribeNetworkInterfaces` and the AWS CLI list
them with AWS's fields: Description, InterfaceType, RequesterId, RequesterManaged, Status
`in-use`, Groups, and an Attachment owned by the service's account.

When their owner goes, AWS detaches them and deletes them a little later: `release` makes
them `available` at once and deletes them `ENI_RELEASE_S` simulated seconds later, the window
in which a product that deletes the subnet or security group right after the cluster is gone
is refused and must ask again.

Nothing here holds a lock of its own: moto's models are plain dicts. `release` schedules on
the layer's timeline, so it must not be called while holding a lock a timed change takes
(HyperPod's state lock: call it from a batch effect).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

ENI_RELEASE_S = 60.0
"""Simulated seconds a service's interface stays, detached, after its owner is gone."""

# The accounts the services' interfaces name as requester and attachment owner. AWS shows a
# service-owned account id (per service and region); these are the sandbox's stand-ins.
EKS_ACCOUNT = "602401143452"
HYPERPOD_ACCOUNT = "740401143452"
NAT_GATEWAY_ACCOUNT = "036872051663"
NAT_GATEWAY_OWNER = "amazon-aws"  # a NAT gateway's Attachment.InstanceOwnerId
VPC_ENDPOINT_ACCOUNT = "727180483921"


@dataclass(frozen=True)
class Owner:
    """Who made an interface, as DescribeNetworkInterfaces shows it."""

    description: str
    requester_id: str  # RequesterId
    instance_owner_id: str  # Attachment.InstanceOwnerId
    interface_type: str = "interface"  # efa, efa-only, nat_gateway, ...
    device_index: int = 1
    attachment_prefix: str = "eni-attach"  # "ela-attach" for ELB and NAT gateway interfaces
    delete_on_termination: bool = True


class _ServiceInstance:
    """What moto reads from `eni.instance` (its Attachment, an Elastic IP's disassociation):
    the running instance the service owns, in the service's account (no `InstanceId` the
    customer could look up: AWS shows none for these)."""

    def __init__(self, owner_id: str) -> None:
        self.id = None
        self.owner_id = owner_id
        self.security_groups: list[Any] = []  # the interface's own groups are its groups
        self._state = SimpleNamespace(name="running")


def ec2_backend(account: str, region: str) -> Any:
    from moto.ec2.models import ec2_backends

    return ec2_backends[account][region]


def create(account: str, region: str, subnet_id: str, group_ids: Iterable[str], owner: Owner,
           private_ip: str | None = None, address: bool = True) -> str | None:
    """A service's interface in `subnet_id`, attached and in use; its id (None when the subnet
    is gone). Only security groups that exist are given (moto would invent the others);
    `address=False` for an EFA-only interface, which has no IP address."""
    backend = ec2_backend(account, region)
    try:
        subnet = backend.get_subnet(subnet_id)
    except Exception:  # InvalidSubnetIdError: deleted meanwhile
        return None
    groups = [g for g in group_ids if backend.get_security_group_from_id(g) is not None]
    eni = backend.create_network_interface(subnet, private_ip, group_ids=groups or None,
                                           description=owner.description)
    if not address:
        eni.private_ip_address = None
        eni.private_ip_addresses = []
        eni.private_dns_name = None
    attach(eni, owner)
    return str(eni.id)


def attach(eni: Any, owner: Owner) -> None:
    """Make a moto interface the service's: its fields and its attachment."""
    eni.description = owner.description
    eni.interface_type = owner.interface_type
    eni.requester_managed = True
    eni.requester_id = owner.requester_id
    eni.status = "in-use"
    eni.instance = _ServiceInstance(owner.instance_owner_id)
    eni.attachment_id = f"{owner.attachment_prefix}-{secrets.token_hex(8)}"
    eni.attach_time = datetime.now(UTC)
    eni.device_index = owner.device_index
    eni.delete_on_termination = owner.delete_on_termination


def _detach(eni: Any) -> None:
    eni.status = "available"
    eni.instance = None
    eni.attachment_id = None
    eni.attach_time = None


def delete(account: str, region: str, ids: Iterable[str]) -> None:
    """Delete interfaces now (already gone ones are skipped)."""
    enis = ec2_backend(account, region).enis
    for eni_id in ids:
        enis.pop(eni_id, None)


def release(app: Any, account: str, region: str, ids: Iterable[str],
            then: Callable[[], None] | None = None, after: float = ENI_RELEASE_S) -> None:
    """Their owner is gone: detach the interfaces now, delete them `after` simulated seconds
    later, then run `then` (e.g. delete a security group only they used)."""
    enis = ec2_backend(account, region).enis
    found = [(eni_id, enis[eni_id]) for eni_id in ids if eni_id in enis]
    for _, eni in found:
        _detach(eni)

    def gone() -> None:
        for eni_id, eni in found:
            if enis.get(eni_id) is eni:
                del enis[eni_id]
        if then is not None:
            then()

    app.transitions.timeline.after(after, gone)


def in_subnet(backend: Any, subnet_id: str) -> list[Any]:
    return [e for e in list(backend.enis.values()) if e.subnet.id == subnet_id]


def using_group(backend: Any, group_id: str) -> list[Any]:
    return [e for e in list(backend.enis.values())
            if any(g.id == group_id for g in e.group_set)]


# --- NAT gateways and interface endpoints ----------------------------------------------------


def nat_gateway_interface(nat: Any) -> None:
    """moto gives a NAT gateway an interface (`nat._eni`) with no fields of AWS's and the
    VPC's default security group; AWS's has none."""
    eni = getattr(nat, "_eni", None)
    if eni is None:
        return
    attach(eni, Owner(description=f"Interface for NAT Gateway {nat.id}",
                      requester_id=NAT_GATEWAY_ACCOUNT, instance_owner_id=NAT_GATEWAY_OWNER,
                      interface_type="nat_gateway", attachment_prefix="ela-attach",
                      delete_on_termination=False))
    eni._group_set = []


def drop_nat_gateway_interface(account: str, region: str, nat: Any) -> None:
    """A deleted NAT gateway's interface goes with it (moto keeps it for ever)."""
    eni = getattr(nat, "_eni", None)
    if eni is not None:
        delete(account, region, [eni.id])


def vpc_endpoint_interfaces(backend: Any, endpoint: Any) -> None:
    """moto gives an interface endpoint's interfaces no fields of AWS's and the VPC's default
    security group; AWS's are the endpoint's, with the endpoint's security groups."""
    groups = [g for g in (backend.get_security_group_from_id(i)
                          for i in endpoint.security_group_ids) if g is not None]
    for eni_id in endpoint.network_interface_ids:
        eni = backend.enis.get(eni_id)
        if eni is None:
            continue
        eni.description = f"VPC Endpoint Interface {endpoint.id}"
        eni.interface_type = "vpc_endpoint"
        eni.requester_managed = True
        eni.requester_id = VPC_ENDPOINT_ACCOUNT
        eni.status = "in-use"
        if groups:
            eni._group_set = groups
