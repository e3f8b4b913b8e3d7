"""A hypd network: VPC, subnets, gateways, routes, security group, S3 endpoint.

Every builder is an *ensure*: it looks its resource up by hypd's tags
(`hypd:managed-by=hypd`, `hypd:network=<name>`, `hypd:role=<role>`) and creates it only when
none exists, always with `TagSpecifications` so no resource ever exists untagged, and with a
`ClientToken` where the API has one (the caller passes a deterministic token). Running a
builder twice creates nothing the second time.

Readers find networks by those tags only, never by names. Deletion helpers act on tagged
resources only, treat "already gone" as success, and raise `NotYet` when AWS is still
settling (DependencyViolation, a NAT gateway still deleting) so the caller can retry later.
"""

from __future__ import annotations

import contextlib
import ipaddress
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from botocore.exceptions import ClientError

from cloud.aws import (
    MANAGED_BY,
    MANAGED_BY_VALUE,
    NETWORK_TAG,
    ROLE_TAG,
    error_code,
    is_not_found,
    tag_dict,
    tag_filters,
    tags_for,
)
from cloud.errors import NotYet, Refusal
from cloud.subnets import COMPUTE_PREFIX, PUBLIC_PREFIX, LockFactory, allocate_subnet

DEFAULT_CIDR = "10.0.0.0/16"
MIN_ZONES = 2

ROLE_VPC = "vpc"
ROLE_PUBLIC_SUBNET = "public-subnet"
ROLE_PRIVATE_SUBNET = "private-subnet"
ROLE_INTERNET_GATEWAY = "internet-gateway"
ROLE_NAT_EIP = "nat-eip"
ROLE_NAT_GATEWAY = "nat-gateway"
ROLE_PUBLIC_ROUTE_TABLE = "public-route-table"
ROLE_PRIVATE_ROUTE_TABLE = "private-route-table"
ROLE_SECURITY_GROUP = "security-group"
ROLE_S3_ENDPOINT = "s3-endpoint"

SUBNET_ROLES = {ROLE_PUBLIC_SUBNET: "public", ROLE_PRIVATE_SUBNET: "private"}
LIVE_NAT_STATES = ("pending", "available")
GONE_ENDPOINT_STATES = ("deleting", "deleted", "failed", "rejected", "expired")
DEFAULT_ROUTE = "0.0.0.0/0"

Record = Callable[..., None]
"""Called with resource ids (keyword arguments) as soon as they exist (the engine persists)."""


class NetworkError(Refusal):
    """A permanent problem the user must resolve (a conflicting resource, a failed NAT)."""

    default_code = "network_conflict"


# ---------------------------------------------------------------------------------------
# tags and lookups
# ---------------------------------------------------------------------------------------


def network_tags(name: str, role: str, zone: str | None = None,
                 **extra: str) -> list[dict[str, str]]:
    """The tags of a network resource; `Name` makes it readable in the AWS console."""
    label = f"hypd-{name}" if role == ROLE_VPC else f"hypd-{name}-{role}"
    if zone:
        label += f"-{zone}"
    return tags_for(NETWORK_TAG, name, role=role, Name=label, **extra)


def _specs(resource_type: str, tags: list[dict[str, str]]) -> list[dict[str, Any]]:
    return [{"ResourceType": resource_type, "Tags": tags}]


_DESCRIBE = {
    # kind: (operation, result key, name of the filter parameter, paginated)
    "vpc": ("describe_vpcs", "Vpcs", "Filters", True),
    "subnet": ("describe_subnets", "Subnets", "Filters", True),
    "igw": ("describe_internet_gateways", "InternetGateways", "Filters", True),
    "eip": ("describe_addresses", "Addresses", "Filters", False),
    "nat": ("describe_nat_gateways", "NatGateways", "Filter", True),
    "rt": ("describe_route_tables", "RouteTables", "Filters", True),
    "sg": ("describe_security_groups", "SecurityGroups", "Filters", True),
    "endpoint": ("describe_vpc_endpoints", "VpcEndpoints", "Filters", True),
    "eni": ("describe_network_interfaces", "NetworkInterfaces", "Filters", True),
}


def _describe(ec2: Any, kind: str, filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
    operation, key, param, paginated = _DESCRIBE[kind]
    if not paginated:
        return list(getattr(ec2, operation)(**{param: filters})[key])
    pages = ec2.get_paginator(operation).paginate(**{param: filters})
    return [item for page in pages for item in page[key]]


def _find(ec2: Any, kind: str, name: str | None, roles: Iterable[str],
          vpc_id: str | None = None) -> list[dict[str, Any]]:
    """Resources of `kind` tagged for network `name` (any network when None) with a role."""
    roles = list(roles)
    filters = tag_filters(NETWORK_TAG, name)
    filters.append({"Name": f"tag:{ROLE_TAG}", "Values": roles})
    if vpc_id is not None:
        filters.append({"Name": "vpc-id", "Values": [vpc_id]})
    # The tags are checked again here: deletion must never act on a resource that is not
    # the network's, even if a service (or an emulator: moto's DescribeNatGateways ignores
    # tag filters) answers more than was asked.
    found = []
    for item in _describe(ec2, kind, filters):
        tags = tag_dict(item)
        if (tags.get(MANAGED_BY) == MANAGED_BY_VALUE
                and (tags.get(NETWORK_TAG) == name if name is not None else NETWORK_TAG in tags)
                and tags.get(ROLE_TAG) in roles
                and (vpc_id is None or item.get("VpcId") == vpc_id)):
            found.append(item)
    return found


def _role(resource: dict[str, Any]) -> str | None:
    return tag_dict(resource).get(ROLE_TAG)


def _network(resource: dict[str, Any]) -> str | None:
    return tag_dict(resource).get(NETWORK_TAG)


@contextlib.contextmanager
def _settling(what: str) -> Iterator[None]:
    """Right after a create, AWS may not know the new id yet: NotFound means "not yet"."""
    try:
        yield
    except ClientError as exc:
        if is_not_found(exc):
            raise NotYet(f"{what} is not visible yet ({error_code(exc)})", 2.0) from exc
        raise


def _noop(**_: Any) -> None:
    return None


# ---------------------------------------------------------------------------------------
# VPC
# ---------------------------------------------------------------------------------------


def find_vpc(ec2: Any, name: str) -> dict[str, Any] | None:
    vpcs = sorted(_find(ec2, "vpc", name, [ROLE_VPC]), key=lambda v: v["VpcId"])
    return vpcs[0] if vpcs else None


def existing_vpc(ec2: Any, vpc_id: str, subnet_ids: list[str]) -> dict[str, Any]:
    """A VPC the user brings (not hypd's): it exists, the subnets are in it, and they span
    two zones at least, as EKS requires. Returns {vpc_id, subnet_ids, availability_zones};
    raises NetworkError (validation_failed) naming what is wrong."""
    vpcs = _describe(ec2, "vpc", [{"Name": "vpc-id", "Values": [vpc_id]}])
    if not vpcs:
        raise NetworkError(f"VPC {vpc_id} does not exist in {ec2.meta.region_name}",
                           "validation_failed")
    subnets = _describe(ec2, "subnet", [{"Name": "subnet-id", "Values": list(subnet_ids)}])
    found = {s["SubnetId"]: s for s in subnets}
    missing = [s for s in subnet_ids if s not in found]
    foreign = [s for s, v in found.items() if v["VpcId"] != vpc_id]
    if missing or foreign:
        raise NetworkError(f"subnets not in VPC {vpc_id}: {', '.join(missing + foreign)}",
                           "validation_failed")
    zones = sorted({s["AvailabilityZone"] for s in subnets})
    if len(zones) < 2:
        raise NetworkError("EKS needs subnets in at least two availability zones; these are "
                           f"all in {zones[0]}", "validation_failed")
    return {"vpc_id": vpc_id, "subnet_ids": list(subnet_ids), "availability_zones": zones}


def ensure_vpc(ec2: Any, name: str, cidr: str = DEFAULT_CIDR,
               record: Record | None = None) -> dict[str, Any]:
    """The network's VPC (DNS support and DNS hostnames on). Returns {vpc_id, cidr}."""
    record = record or _noop
    wanted = str(ipaddress.IPv4Network(cidr or DEFAULT_CIDR, strict=True))
    vpc = find_vpc(ec2, name)
    created = False
    if vpc is None:
        vpc = ec2.create_vpc(CidrBlock=wanted,
                             TagSpecifications=_specs("vpc", network_tags(name, ROLE_VPC)))["Vpc"]
        created = True
        record(vpc_id=vpc["VpcId"], cidr=wanted)
    elif vpc["CidrBlock"] != wanted:
        raise NetworkError(
            f"network {name!r} already exists as {vpc['VpcId']} with CIDR {vpc['CidrBlock']}, "
            f"not {wanted}: delete it first or choose another name")
    vpc_id = vpc["VpcId"]
    with _settling(vpc_id) if created else contextlib.nullcontext():
        # DNS hostnames need DNS support, so support first; one attribute per call.
        for attribute, param in (("enableDnsSupport", "EnableDnsSupport"),
                                 ("enableDnsHostnames", "EnableDnsHostnames")):
            current = ec2.describe_vpc_attribute(VpcId=vpc_id, Attribute=attribute)
            if not current.get(param, {}).get("Value"):
                ec2.modify_vpc_attribute(VpcId=vpc_id, **{param: {"Value": True}})
    return {"vpc_id": vpc_id, "cidr": vpc["CidrBlock"]}


# ---------------------------------------------------------------------------------------
# subnets
# ---------------------------------------------------------------------------------------


def subnet_info(subnet: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": subnet["SubnetId"],
        "cidr": subnet["CidrBlock"],
        "availability_zone": subnet["AvailabilityZone"],
        "role": SUBNET_ROLES.get(_role(subnet) or "", "private"),
    }


def ensure_subnets(ec2: Any, name: str, vpc_id: str, availability_zones: list[str],
                   lock: LockFactory | Any = contextlib.nullcontext,
                   record: Record | None = None) -> list[dict[str, Any]]:
    """A private /20 compute subnet and a public /24 subnet in each zone (at least two
    zones), all through the one allocator. Returns [{id, cidr, availability_zone, role}]
    ordered by zone as given, private before public."""
    record = record or _noop
    zones = list(dict.fromkeys(availability_zones))
    if len(zones) < MIN_ZONES:
        raise NetworkError(f"a network needs at least {MIN_ZONES} availability zones, got "
                           f"{zones}", "validation_failed")
    existing: dict[tuple[str, str], dict[str, Any]] = {}
    for subnet in sorted(_find(ec2, "subnet", name, SUBNET_ROLES, vpc_id),
                         key=lambda s: s["SubnetId"]):
        existing.setdefault((_role(subnet) or "", subnet["AvailabilityZone"]), subnet)
    # the large compute blocks first, so the small public ones pack behind them
    wanted = [(ROLE_PRIVATE_SUBNET, z, COMPUTE_PREFIX) for z in zones]
    wanted += [(ROLE_PUBLIC_SUBNET, z, PUBLIC_PREFIX) for z in zones]
    made: dict[tuple[str, str], dict[str, Any]] = {}
    for role, zone, prefix in wanted:
        subnet = existing.get((role, zone))
        if subnet is None:
            elb = ("kubernetes.io/role/elb" if role == ROLE_PUBLIC_SUBNET
                   else "kubernetes.io/role/internal-elb")
            tags = network_tags(name, role, zone, **{elb: "1"})

            def made_meanwhile(role: str = role, zone: str = zone) -> dict[str, Any] | None:
                found = [s for s in _find(ec2, "subnet", name, [role], vpc_id)
                         if s["AvailabilityZone"] == zone]
                return min(found, key=lambda s: s["SubnetId"]) if found else None

            subnet = allocate_subnet(ec2, vpc_id, zone, prefix, tags, lock=lock,
                                     existing=made_meanwhile)
        made[(role, zone)] = subnet
        record(subnets=[subnet_info(s) for s in made.values()])
    ordered = [made[(role, z)] for z in zones for role in (ROLE_PRIVATE_SUBNET, ROLE_PUBLIC_SUBNET)]
    return [subnet_info(s) for s in ordered]


# ---------------------------------------------------------------------------------------
# internet gateway
# ---------------------------------------------------------------------------------------


def ensure_internet_gateway(ec2: Any, name: str, vpc_id: str,
                            record: Record | None = None) -> dict[str, Any]:
    """The network's internet gateway, attached to its VPC. Returns {internet_gateway_id}."""
    record = record or _noop
    gateways = sorted(_find(ec2, "igw", name, [ROLE_INTERNET_GATEWAY]),
                      key=lambda g: g["InternetGatewayId"])
    created = False
    if gateways:
        igw = gateways[0]
    else:
        igw = ec2.create_internet_gateway(TagSpecifications=_specs(
            "internet-gateway", network_tags(name, ROLE_INTERNET_GATEWAY)))["InternetGateway"]
        created = True
        record(internet_gateway_id=igw["InternetGatewayId"])
    igw_id = igw["InternetGatewayId"]
    attached = [a["VpcId"] for a in igw.get("Attachments") or ()
                if a.get("State") not in ("detaching", "detached")]
    if vpc_id in attached:
        return {"internet_gateway_id": igw_id}
    if attached:
        raise NetworkError(f"internet gateway {igw_id} of network {name!r} is attached to "
                           f"{attached[0]}, not to the network's VPC {vpc_id}")
    with _settling(igw_id) if created else contextlib.nullcontext():
        try:
            ec2.attach_internet_gateway(InternetGatewayId=igw_id, VpcId=vpc_id)
        except ClientError as exc:
            if error_code(exc) != "Resource.AlreadyAssociated":
                raise
            again = ec2.describe_internet_gateways(InternetGatewayIds=[igw_id])
            vpcs = [a["VpcId"] for a in again["InternetGateways"][0].get("Attachments") or ()]
            if vpc_id not in vpcs:
                raise NetworkError(f"VPC {vpc_id} already has another internet gateway "
                                   f"attached; detach it first") from exc
    return {"internet_gateway_id": igw_id}


# ---------------------------------------------------------------------------------------
# NAT gateway
# ---------------------------------------------------------------------------------------


def failed_nat_gateways(ec2: Any, name: str) -> list[str]:
    """Ids of the network's NAT gateways that failed (the caller derives a fresh client
    token from them, so a retry is not answered with the same failed gateway)."""
    return sorted(n["NatGatewayId"] for n in _find(ec2, "nat", name, [ROLE_NAT_GATEWAY])
                  if n.get("State") == "failed")


def ensure_nat_gateway(ec2: Any, name: str, vpc_id: str, subnet_id: str, client_token: str,
                       record: Record | None = None) -> dict[str, Any]:
    """An Elastic IP and a public NAT gateway in `subnet_id` (the first public subnet).
    Returns {nat_gateway_id, allocation_id, state}; the state may still be `pending`."""
    record = record or _noop
    live = sorted((n for n in _find(ec2, "nat", name, [ROLE_NAT_GATEWAY], vpc_id)
                   if n.get("State") in LIVE_NAT_STATES), key=lambda n: n["NatGatewayId"])
    if live:
        nat = live[0]
        addresses = nat.get("NatGatewayAddresses") or [{}]
        return {"nat_gateway_id": nat["NatGatewayId"],
                "allocation_id": addresses[0].get("AllocationId"), "state": nat["State"]}
    addresses = _find(ec2, "eip", name, [ROLE_NAT_EIP])
    # prefer an address no NAT gateway holds (a failed gateway's address is released to us)
    addresses.sort(key=lambda a: (bool(a.get("AssociationId")), a["AllocationId"]))
    if addresses:
        allocation_id = addresses[0]["AllocationId"]
    else:
        allocation_id = ec2.allocate_address(
            Domain="vpc",
            TagSpecifications=_specs("elastic-ip", network_tags(name, ROLE_NAT_EIP)),
        )["AllocationId"]
        record(allocation_id=allocation_id)
    nat = ec2.create_nat_gateway(
        SubnetId=subnet_id,
        AllocationId=allocation_id,
        ConnectivityType="public",
        ClientToken=client_token,
        TagSpecifications=_specs("natgateway", network_tags(name, ROLE_NAT_GATEWAY)),
    )["NatGateway"]
    record(nat_gateway_id=nat["NatGatewayId"], allocation_id=allocation_id)
    if nat.get("State") == "failed":
        raise NetworkError(
            f"NAT gateway {nat['NatGatewayId']} failed: {nat.get('FailureMessage') or 'no reason'}",
            "nat_gateway_failed")
    return {"nat_gateway_id": nat["NatGatewayId"], "allocation_id": allocation_id,
            "state": nat.get("State", "pending")}


def nat_gateway_state(ec2: Any, nat_gateway_id: str) -> tuple[str, str | None]:
    """(state, failure message): pending | available | failed | deleting | deleted, or
    `missing` when EC2 does not know the id (yet)."""
    try:
        found = ec2.describe_nat_gateways(NatGatewayIds=[nat_gateway_id])["NatGateways"]
    except ClientError as exc:
        if is_not_found(exc):
            return "missing", None
        raise
    if not found:
        return "missing", None
    return found[0].get("State", "pending"), found[0].get("FailureMessage")


# ---------------------------------------------------------------------------------------
# route tables
# ---------------------------------------------------------------------------------------


def ensure_route_tables(ec2: Any, name: str, vpc_id: str, internet_gateway_id: str,
                        nat_gateway_id: str, public_subnet_ids: list[str],
                        private_subnet_ids: list[str], tokens: dict[str, str] | None = None,
                        record: Record | None = None) -> dict[str, Any]:
    """A public route table (0.0.0.0/0 → internet gateway) for the public subnets and a
    private one (0.0.0.0/0 → NAT gateway, added only once the NAT gateway is available) for
    the private subnets. Each route and association is checked before it is made.

    Returns {public_route_table_id, private_route_table_id, private_default_route}; the last
    is False while the NAT gateway is not available yet.
    """
    record = record or _noop
    tokens = tokens or {}
    tables = sorted(_find(ec2, "rt", name, [ROLE_PUBLIC_ROUTE_TABLE, ROLE_PRIVATE_ROUTE_TABLE],
                          vpc_id), key=lambda t: t["RouteTableId"])
    by_role: dict[str, dict[str, Any]] = {}
    for table in tables:
        by_role.setdefault(_role(table) or "", table)
    result: dict[str, Any] = {}
    nat_ready = nat_gateway_state(ec2, nat_gateway_id)[0] == "available"
    plan = (
        ("public", ROLE_PUBLIC_ROUTE_TABLE, public_subnet_ids,
         {"GatewayId": internet_gateway_id}, True),
        ("private", ROLE_PRIVATE_ROUTE_TABLE, private_subnet_ids,
         {"NatGatewayId": nat_gateway_id}, nat_ready),
    )
    for label, role, subnet_ids, target, route_now in plan:
        table = by_role.get(role)
        created = False
        if table is None:
            kwargs: dict[str, Any] = {}
            if tokens.get(label):
                kwargs["ClientToken"] = tokens[label]
            table = ec2.create_route_table(
                VpcId=vpc_id, TagSpecifications=_specs("route-table", network_tags(name, role)),
                **kwargs)["RouteTable"]
            created = True
        table_id = table["RouteTableId"]
        result[f"{label}_route_table_id"] = table_id
        record(**{f"{label}_route_table_id": table_id})
        with _settling(table_id) if created else contextlib.nullcontext():
            if route_now:
                _ensure_default_route(ec2, table, target)
            _ensure_associations(ec2, vpc_id, table_id, subnet_ids)
    result["private_default_route"] = nat_ready
    return result


def _ensure_default_route(ec2: Any, table: dict[str, Any], target: dict[str, str]) -> None:
    (key, value), = target.items()
    table_id = table["RouteTableId"]
    current = next((r for r in table.get("Routes") or ()
                    if r.get("DestinationCidrBlock") == DEFAULT_ROUTE), None)
    if current is not None:
        if current.get(key) == value and current.get("State", "active") == "active":
            return
        ec2.replace_route(RouteTableId=table_id, DestinationCidrBlock=DEFAULT_ROUTE, **target)
        return
    try:
        ec2.create_route(RouteTableId=table_id, DestinationCidrBlock=DEFAULT_ROUTE, **target)
    except ClientError as exc:
        if error_code(exc) != "RouteAlreadyExists":
            raise
        ec2.replace_route(RouteTableId=table_id, DestinationCidrBlock=DEFAULT_ROUTE, **target)


def _ensure_associations(ec2: Any, vpc_id: str, table_id: str, subnet_ids: list[str]) -> None:
    if not subnet_ids:
        return
    current: dict[str, tuple[str, str]] = {}  # subnet → (route table, association)
    tables = _describe(ec2, "rt", [{"Name": "vpc-id", "Values": [vpc_id]}])
    for table in tables:
        for assoc in table.get("Associations") or ():
            state = (assoc.get("AssociationState") or {}).get("State", "associated")
            if assoc.get("SubnetId") and state in ("associated", "associating"):
                current[assoc["SubnetId"]] = (table["RouteTableId"],
                                              assoc["RouteTableAssociationId"])
    for subnet_id in subnet_ids:
        held = current.get(subnet_id)
        if held is None:
            ec2.associate_route_table(RouteTableId=table_id, SubnetId=subnet_id)
        elif held[0] != table_id:
            ec2.replace_route_table_association(AssociationId=held[1], RouteTableId=table_id)


# ---------------------------------------------------------------------------------------
# security group
# ---------------------------------------------------------------------------------------


def security_group_name(name: str) -> str:
    return f"hypd-{name}"


def ensure_security_group(ec2: Any, name: str, vpc_id: str,
                          record: Record | None = None) -> dict[str, Any]:
    """Security group `hypd-<name>`: all traffic from and to itself (EFA and NCCL need both
    directions) and all egress. Returns {security_group_id}."""
    record = record or _noop
    groups = sorted(_find(ec2, "sg", name, [ROLE_SECURITY_GROUP], vpc_id),
                    key=lambda g: g["GroupId"])
    created = False
    if groups:
        group = groups[0]
    else:
        try:
            group_id = ec2.create_security_group(
                GroupName=security_group_name(name),
                Description=f"hypd network {name}: all traffic between members (EFA, NCCL)",
                VpcId=vpc_id,
                TagSpecifications=_specs("security-group",
                                         network_tags(name, ROLE_SECURITY_GROUP)),
            )["GroupId"]
        except ClientError as exc:
            if error_code(exc) == "InvalidGroup.Duplicate":
                raise NetworkError(
                    f"VPC {vpc_id} already has a security group named "
                    f"{security_group_name(name)!r} that hypd did not create") from exc
            raise
        created = True
        record(security_group_id=group_id)
        with _settling(group_id):  # the default egress rule comes with the new group
            group = ec2.describe_security_groups(GroupIds=[group_id])["SecurityGroups"][0]
    group_id = group["GroupId"]
    self_rule = [{"IpProtocol": "-1", "UserIdGroupPairs": [
        {"GroupId": group_id, "Description": "members of this hypd network (EFA, NCCL)"}]}]
    with _settling(group_id) if created else contextlib.nullcontext():
        if not _has_self_rule(group.get("IpPermissions"), group_id):
            _authorize(ec2.authorize_security_group_ingress, group_id, self_rule)
        egress = group.get("IpPermissionsEgress") or []
        if not _has_self_rule(egress, group_id):
            _authorize(ec2.authorize_security_group_egress, group_id, self_rule)
        if not any(p.get("IpProtocol") == "-1" and any(
                r.get("CidrIp") == DEFAULT_ROUTE for r in p.get("IpRanges") or ())
                for p in egress):
            _authorize(ec2.authorize_security_group_egress, group_id,
                       [{"IpProtocol": "-1", "IpRanges": [{"CidrIp": DEFAULT_ROUTE}]}])
    return {"security_group_id": group_id}


def _has_self_rule(permissions: list[dict[str, Any]] | None, group_id: str) -> bool:
    return any(p.get("IpProtocol") == "-1" and any(
        pair.get("GroupId") == group_id for pair in p.get("UserIdGroupPairs") or ())
        for p in permissions or ())


def _authorize(call: Callable[..., Any], group_id: str, permissions: list[dict[str, Any]]) -> None:
    try:
        call(GroupId=group_id, IpPermissions=permissions)
    except ClientError as exc:
        if error_code(exc) != "InvalidPermission.Duplicate":
            raise


# ---------------------------------------------------------------------------------------
# S3 gateway endpoint
# ---------------------------------------------------------------------------------------


def s3_service_name(region: str) -> str:
    prefix = "cn.com.amazonaws" if region.startswith("cn-") else "com.amazonaws"
    return f"{prefix}.{region}.s3"


def _live_endpoints(ec2: Any, name: str | None, vpc_id: str | None = None) -> list[dict]:
    return sorted((e for e in _find(ec2, "endpoint", name, [ROLE_S3_ENDPOINT], vpc_id)
                   if (e.get("State") or "").lower() not in GONE_ENDPOINT_STATES),
                  key=lambda e: e["VpcEndpointId"])


def ensure_s3_endpoint(ec2: Any, name: str, vpc_id: str, region: str,
                       route_table_ids: list[str], client_token: str,
                       record: Record | None = None) -> dict[str, Any]:
    """An S3 gateway endpoint on the network's route tables. Returns {s3_endpoint_id}."""
    record = record or _noop
    endpoints = _live_endpoints(ec2, name, vpc_id)
    if endpoints:
        endpoint = endpoints[0]
        missing = sorted(set(route_table_ids) - set(endpoint.get("RouteTableIds") or ()))
        if missing:
            ec2.modify_vpc_endpoint(VpcEndpointId=endpoint["VpcEndpointId"],
                                    AddRouteTableIds=missing)
        return {"s3_endpoint_id": endpoint["VpcEndpointId"]}
    endpoint = ec2.create_vpc_endpoint(
        VpcEndpointType="Gateway",
        VpcId=vpc_id,
        ServiceName=s3_service_name(region),
        RouteTableIds=list(route_table_ids),
        ClientToken=client_token,
        TagSpecifications=_specs("vpc-endpoint", network_tags(name, ROLE_S3_ENDPOINT)),
    )["VpcEndpoint"]
    record(s3_endpoint_id=endpoint["VpcEndpointId"])
    return {"s3_endpoint_id": endpoint["VpcEndpointId"]}


# ---------------------------------------------------------------------------------------
# readers
# ---------------------------------------------------------------------------------------


def list_networks(ec2: Any) -> list[dict[str, Any]]:
    """Every hypd network in the client's region, by name."""
    return _collect(ec2, None)


def get_network(ec2: Any, name: str) -> dict[str, Any] | None:
    """The network called `name`, or None."""
    found = _collect(ec2, name)
    return found[0] if found else None


def _collect(ec2: Any, name: str | None) -> list[dict[str, Any]]:
    vpcs: dict[str, dict[str, Any]] = {}
    for vpc in sorted(_find(ec2, "vpc", name, [ROLE_VPC]), key=lambda v: v["VpcId"]):
        vpcs.setdefault(_network(vpc) or "", vpc)
    vpcs.pop("", None)
    if not vpcs:
        return []

    def grouped(kind: str, roles: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
        groups: dict[str, list[dict[str, Any]]] = {}
        for item in _find(ec2, kind, name, roles):
            groups.setdefault(_network(item) or "", []).append(item)
        return groups

    subnets = grouped("subnet", SUBNET_ROLES)
    gateways = grouped("igw", [ROLE_INTERNET_GATEWAY])
    nats = grouped("nat", [ROLE_NAT_GATEWAY])
    groups = grouped("sg", [ROLE_SECURITY_GROUP])
    endpoints = grouped("endpoint", [ROLE_S3_ENDPOINT])
    region = ec2.meta.region_name
    return [
        _network_view(net, vpc, region, subnets.get(net, []), gateways.get(net, []),
                      nats.get(net, []), groups.get(net, []), endpoints.get(net, []))
        for net, vpc in sorted(vpcs.items())
    ]


_NAT_PREFERENCE = {"available": 0, "pending": 1, "deleting": 2, "failed": 3, "deleted": 4}


def _network_view(name: str, vpc: dict[str, Any], region: str, subnets: list[dict],
                  gateways: list[dict], nats: list[dict], groups: list[dict],
                  endpoints: list[dict]) -> dict[str, Any]:
    vpc_id = vpc["VpcId"]
    mine = sorted((subnet_info(s) for s in subnets if s.get("VpcId") == vpc_id),
                  key=lambda s: (s["availability_zone"], s["role"] != "private", s["cidr"]))
    igw = next((g for g in sorted(gateways, key=lambda g: g["InternetGatewayId"])
                if any(a.get("VpcId") == vpc_id for a in g.get("Attachments") or ())), None)
    nat = min((n for n in nats if n.get("VpcId") == vpc_id),
              key=lambda n: (_NAT_PREFERENCE.get(n.get("State", ""), 9), n["NatGatewayId"]),
              default=None)
    group = next((g for g in sorted(groups, key=lambda g: g["GroupId"])
                  if g.get("VpcId") == vpc_id), None)
    endpoint = next((e for e in sorted(endpoints, key=lambda e: e["VpcEndpointId"])
                     if e.get("VpcId") == vpc_id
                     and (e.get("State") or "").lower() not in GONE_ENDPOINT_STATES), None)
    zones = sorted({s["availability_zone"] for s in mine})
    nat_state = nat.get("State") if nat else None
    complete = (
        len(zones) >= MIN_ZONES
        and all({"public", "private"} <= {s["role"] for s in mine if s["availability_zone"] == z}
                for z in zones)
        and igw is not None and group is not None and endpoint is not None
        and nat_state == "available"
    )
    if vpc.get("State") == "pending" or nat_state == "pending":
        state = "pending"
    elif nat_state in ("deleting", "deleted"):
        state = "deleting"
    elif nat_state == "failed":
        state = "failed"
    else:
        state = "available" if complete else "incomplete"
    return {
        "name": name,
        "region": region,
        "vpc_id": vpc_id,
        "cidr": vpc["CidrBlock"],
        "state": state,
        "availability_zones": zones,
        "subnets": mine,
        "internet_gateway_id": igw["InternetGatewayId"] if igw else None,
        "nat_gateway_id": nat["NatGatewayId"] if nat and nat_state != "deleted" else None,
        "security_group_id": group["GroupId"] if group else None,
        "s3_endpoint_id": endpoint["VpcEndpointId"] if endpoint else None,
    }


def foreign_interfaces(ec2: Any, name: str, vpc_id: str) -> list[dict[str, Any]]:
    """The network interfaces in the network's VPC that are not the network's own (its NAT
    gateways' and its VPC endpoints', found by tags): whatever else runs there — a cluster's
    control plane or nodes, a load balancer, an instance. While one is there AWS refuses to
    delete its subnet and the VPC, after the NAT gateway (and with it every node's way out)
    would already be gone."""
    own = {a.get("NetworkInterfaceId")
           for nat in _find(ec2, "nat", name, [ROLE_NAT_GATEWAY], vpc_id)
           for a in nat.get("NatGatewayAddresses") or ()}
    own |= {eni for endpoint in _find(ec2, "endpoint", name, [ROLE_S3_ENDPOINT], vpc_id)
            for eni in endpoint.get("NetworkInterfaceIds") or ()}
    pages = ec2.get_paginator("describe_network_interfaces").paginate(
        Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])
    return sorted((i for page in pages for i in page.get("NetworkInterfaces") or ()
                   if i.get("NetworkInterfaceId") not in own),
                  key=lambda i: i.get("NetworkInterfaceId") or "")


# ---------------------------------------------------------------------------------------
# deletion (reverse order; tagged resources only; "already gone" is fine)
# ---------------------------------------------------------------------------------------


def settling(interface: dict[str, Any]) -> bool:
    """An AWS service's network interface that what it served has let go of (requester
    managed, no longer attached: an EKS control plane's or a HyperPod instance's after its
    cluster went). The service deletes it minutes later; a delete waits for it rather than
    refusing."""
    return bool(interface.get("RequesterManaged")) and interface.get("Status") == "available"


def describe_interface(interface: dict[str, Any]) -> str:
    """`eni-… (description, status)` for a message."""
    return (f"{interface.get('NetworkInterfaceId')} "
            f"({interface.get('Description') or 'no description'}, {interface.get('Status')})")


def _gone_ok(call: Callable[..., Any], **kwargs: Any) -> bool:
    """Make a delete call; True if it acted, False if the resource was already gone."""
    try:
        call(**kwargs)
    except ClientError as exc:
        if is_not_found(exc):
            return False
        raise
    return True


@contextlib.contextmanager
def _dependencies(what: str, hint: str = "") -> Iterator[None]:
    try:
        yield
    except ClientError as exc:
        if error_code(exc) == "DependencyViolation":
            raise NotYet(f"{what} still has dependencies{hint}: "
                         f"{exc.response['Error'].get('Message', '')}".rstrip(": ")) from exc
        raise


def delete_s3_endpoints(ec2: Any, name: str) -> list[str]:
    ids = [e["VpcEndpointId"] for e in _live_endpoints(ec2, name)]
    if not ids:
        return []
    reply = ec2.delete_vpc_endpoints(VpcEndpointIds=ids)
    for failure in reply.get("Unsuccessful") or ():
        error = failure.get("Error") or {}
        code = error.get("Code", "")
        if code.endswith("NotFound"):
            continue
        message = f"S3 endpoint {failure.get('ResourceId')}: {code} {error.get('Message', '')}"
        if code == "DependencyViolation":
            raise NotYet(message)
        raise NetworkError(message, "upstream_error")
    return ids


def delete_security_groups(ec2: Any, name: str, only: str | None = None) -> list[str]:
    """The network's security groups (`only`: just that one, if it is the network's)."""
    deleted = []
    for group in _find(ec2, "sg", name, [ROLE_SECURITY_GROUP]):
        group_id = group["GroupId"]
        if only is not None and group_id != only:
            continue
        with _dependencies(f"security group {group_id}",
                           " (network interfaces or other groups still use it)"):
            if _gone_ok(ec2.delete_security_group, GroupId=group_id):
                deleted.append(group_id)
    return deleted


def delete_route_tables(ec2: Any, name: str) -> list[str]:
    deleted = []
    for table in _find(ec2, "rt", name, [ROLE_PUBLIC_ROUTE_TABLE, ROLE_PRIVATE_ROUTE_TABLE]):
        table_id = table["RouteTableId"]
        for assoc in table.get("Associations") or ():
            if not assoc.get("Main") and assoc.get("RouteTableAssociationId"):
                _gone_ok(ec2.disassociate_route_table,
                         AssociationId=assoc["RouteTableAssociationId"])
        with _dependencies(f"route table {table_id}"):
            if _gone_ok(ec2.delete_route_table, RouteTableId=table_id):
                deleted.append(table_id)
    return deleted


def delete_nat_gateways(ec2: Any, name: str) -> list[str]:
    """Start deleting the network's NAT gateways; returns the ids asked to delete."""
    started = []
    for nat in _find(ec2, "nat", name, [ROLE_NAT_GATEWAY]):
        if nat.get("State") in LIVE_NAT_STATES and _gone_ok(
                ec2.delete_nat_gateway, NatGatewayId=nat["NatGatewayId"]):
            started.append(nat["NatGatewayId"])
    return started


def nat_gateways_remaining(ec2: Any, name: str) -> list[dict[str, str]]:
    """The network's NAT gateways not yet deleted: [{id, state}]."""
    return [{"id": n["NatGatewayId"], "state": n.get("State", "")}
            for n in _find(ec2, "nat", name, [ROLE_NAT_GATEWAY])
            if n.get("State") not in ("deleted", "failed")]


def release_nat_addresses(ec2: Any, name: str) -> list[str]:
    """Release the network's NAT Elastic IPs; NotYet while a NAT gateway still holds one."""
    released = []
    nats = _find(ec2, "nat", name, [ROLE_NAT_GATEWAY])
    dead_interfaces = {a.get("NetworkInterfaceId") for n in nats if n.get("State") == "deleted"
                       for a in n.get("NatGatewayAddresses") or ()}
    dead_interfaces.discard(None)
    for address in _find(ec2, "eip", name, [ROLE_NAT_EIP]):
        allocation_id = address["AllocationId"]
        if address.get("AssociationId"):
            if address.get("NetworkInterfaceId") not in dead_interfaces:
                raise NotYet(f"Elastic IP {allocation_id} is still held by a NAT gateway", 15.0)
            # AWS drops the association when the gateway is deleted; some emulators keep it
            _gone_ok(ec2.disassociate_address, AssociationId=address["AssociationId"])
        try:
            if _gone_ok(ec2.release_address, AllocationId=allocation_id):
                released.append(allocation_id)
        except ClientError as exc:
            if error_code(exc) in ("InvalidIPAddress.InUse", "AuthFailure"):
                raise NotYet(f"Elastic IP {allocation_id} is still in use", 15.0) from exc
            raise
    return released


def delete_internet_gateways(ec2: Any, name: str) -> list[str]:
    deleted = []
    for igw in _find(ec2, "igw", name, [ROLE_INTERNET_GATEWAY]):
        igw_id = igw["InternetGatewayId"]
        with _dependencies(f"internet gateway {igw_id}",
                           " (public addresses are still mapped in its VPC)"):
            for attachment in igw.get("Attachments") or ():
                try:
                    ec2.detach_internet_gateway(InternetGatewayId=igw_id,
                                                VpcId=attachment["VpcId"])
                except ClientError as exc:
                    if error_code(exc) != "Gateway.NotAttached" and not is_not_found(exc):
                        raise
            if _gone_ok(ec2.delete_internet_gateway, InternetGatewayId=igw_id):
                deleted.append(igw_id)
    return deleted


def delete_subnets(ec2: Any, name: str) -> list[str]:
    deleted = []
    for subnet in _find(ec2, "subnet", name, SUBNET_ROLES):
        subnet_id = subnet["SubnetId"]
        with _dependencies(f"subnet {subnet_id}", " (network interfaces remain in it)"):
            if _gone_ok(ec2.delete_subnet, SubnetId=subnet_id):
                deleted.append(subnet_id)
    return deleted


def delete_vpcs(ec2: Any, name: str) -> list[str]:
    deleted = []
    for vpc in _find(ec2, "vpc", name, [ROLE_VPC]):
        vpc_id = vpc["VpcId"]
        try:
            if _gone_ok(ec2.delete_vpc, VpcId=vpc_id):
                deleted.append(vpc_id)
        except ClientError as exc:
            if error_code(exc) != "DependencyViolation":
                raise
            raise NotYet(f"VPC {vpc_id} still has dependencies: {_leftovers(ec2, vpc_id)}") \
                from exc
    return deleted


def _leftovers(ec2: Any, vpc_id: str) -> str:
    """What still lives in a VPC, in words (for the retry message)."""
    parts = []
    vpc_filter = [{"Name": "vpc-id", "Values": [vpc_id]}]
    with contextlib.suppress(ClientError):
        subnets = _describe(ec2, "subnet", vpc_filter)
        if subnets:
            ids = ", ".join(s["SubnetId"] for s in subnets[:5])
            parts.append(f"{len(subnets)} subnet(s) ({ids})")
        interfaces = _describe(ec2, "eni", vpc_filter)
        if interfaces:
            parts.append(f"{len(interfaces)} network interface(s)")
        groups = [g for g in _describe(ec2, "sg", vpc_filter) if g.get("GroupName") != "default"]
        if groups:
            parts.append(f"{len(groups)} security group(s)")
    return ", ".join(parts) or "resources hypd did not create"
