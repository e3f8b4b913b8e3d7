"""Helpers shared by the network tests (tests/cloud and tests/tasks)."""

from __future__ import annotations

from typing import Any

from moto.core import DEFAULT_ACCOUNT_ID
from moto.ec2.models import ec2_backends

MUTATING_PREFIXES = ("create_", "allocate_", "attach_", "associate_", "authorize_", "modify_",
                     "replace_", "delete_", "detach_", "disassociate_", "release_",
                     "revoke_")


class Spy:
    """An EC2 client wrapper that records every call by method name."""

    def __init__(self, ec2: Any) -> None:
        self._ec2 = ec2
        self.calls: list[str] = []
        self.meta = ec2.meta

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._ec2, name)
        if not callable(attr) or name == "get_paginator":
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return attr(*args, **kwargs)

        return call

    @property
    def mutations(self) -> list[str]:
        return [c for c in self.calls if c.startswith(MUTATING_PREFIXES)]


def set_nat_state(region: str, nat_id: str, state: str) -> None:
    """Play AWS's NAT gateway timing in moto, which makes gateways available at once."""
    ec2_backends[DEFAULT_ACCOUNT_ID][region].nat_gateways[nat_id].state = state


def snapshot(ec2: Any) -> dict[str, Any]:
    """Every EC2 network resource id, route, association and rule: to prove "nothing new"."""
    tables = ec2.describe_route_tables()["RouteTables"]
    groups = ec2.describe_security_groups()["SecurityGroups"]
    return {
        "vpcs": sorted(v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"]),
        "subnets": sorted(s["SubnetId"] for s in ec2.describe_subnets()["Subnets"]),
        "igws": sorted((g["InternetGatewayId"], tuple(a["VpcId"] for a in g["Attachments"]))
                       for g in ec2.describe_internet_gateways()["InternetGateways"]),
        "nats": sorted(n["NatGatewayId"] for n in ec2.describe_nat_gateways()["NatGateways"]),
        "eips": sorted(a["AllocationId"] for a in ec2.describe_addresses()["Addresses"]),
        "route_tables": sorted(t["RouteTableId"] for t in tables),
        "routes": sorted((t["RouteTableId"], r.get("DestinationCidrBlock")
                          or r.get("DestinationPrefixListId"),
                          r.get("GatewayId") or r.get("NatGatewayId"))
                         for t in tables for r in t["Routes"]),
        "associations": sorted((a["RouteTableId"], a.get("SubnetId"), a["RouteTableAssociationId"])
                               for t in tables for a in t["Associations"]),
        "groups": sorted(g["GroupId"] for g in groups),
        "rules": sorted((g["GroupId"], repr(g["IpPermissions"]), repr(g["IpPermissionsEgress"]))
                        for g in groups),
        "endpoints": sorted((e["VpcEndpointId"], e["State"])
                            for e in ec2.describe_vpc_endpoints()["VpcEndpoints"]),
    }


def tags(resource: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in resource.get("Tags") or ()}
