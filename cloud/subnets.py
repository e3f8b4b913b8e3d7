"""The one subnet allocator, used by every path that needs a subnet.

`next_free_block` is pure: the first block of the requested size, aligned, inside the VPC's
CIDR, overlapping nothing taken. `allocate_subnet` reads the VPC's CIDRs and subnets from
EC2, picks a block and creates the subnet, all inside a caller-supplied lock (the engine
passes a short per-VPC lock); if EC2 still answers `InvalidSubnet.Conflict` (a subnet made
outside hypd in between), it re-reads and tries again, a bounded number of times.
"""

from __future__ import annotations

import contextlib
import ipaddress
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any

from botocore.exceptions import ClientError

from cloud.errors import Refusal

COMPUTE_PREFIX = 20
"""Compute subnets for accelerator fleets: /20 (4,091 usable addresses)."""
PUBLIC_PREFIX = 24
"""Public subnets (NAT gateway, load balancers): /24."""
MIN_PREFIX = 16
MAX_PREFIX = 28
"""AWS subnet sizes run from /16 to /28."""

CONFLICT_RETRIES = 5

LockFactory = Callable[[], AbstractContextManager[Any]]


class SubnetSpaceExhausted(Refusal):
    """No free block of the requested size is left in the VPC's address space."""

    default_code = "subnet_space_exhausted"

    def __init__(self, vpc_cidrs: Iterable[str], prefix: int, taken: int) -> None:
        self.vpc_cidrs = list(vpc_cidrs)
        self.prefix = prefix
        cidrs = ", ".join(self.vpc_cidrs) or "(no IPv4 CIDR)"
        super().__init__(
            f"no free /{prefix} block is left in {cidrs} ({taken} existing subnets use its "
            f"space): delete unused subnets or associate a secondary CIDR with the VPC"
        )


def next_free_block(vpc_cidr: str, taken: Iterable[str], prefix: int) -> ipaddress.IPv4Network:
    """The lowest `/prefix` block inside `vpc_cidr` that overlaps none of `taken`.

    Entries of `taken` that are not IPv4 or lie outside the VPC are ignored. Raises
    `ValueError` for a prefix that cannot fit and `SubnetSpaceExhausted` when none is free.
    """
    vpc = ipaddress.IPv4Network(vpc_cidr, strict=True)
    if not isinstance(prefix, int) or isinstance(prefix, bool):
        raise ValueError(f"prefix must be an int, got {prefix!r}")
    if not MIN_PREFIX <= prefix <= MAX_PREFIX:
        raise ValueError(f"/{prefix} is not a valid subnet size (AWS allows /16 to /28)")
    if prefix < vpc.prefixlen:
        raise ValueError(f"a /{prefix} block cannot fit in {vpc}")

    busy: list[tuple[int, int]] = []
    count = 0
    for cidr in taken:
        try:
            net = ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            continue
        if not isinstance(net, ipaddress.IPv4Network):
            continue
        count += 1
        if net.overlaps(vpc):
            busy.append((int(net.network_address), int(net.broadcast_address)))
    busy.sort()

    size = 1 << (32 - prefix)
    start, last = int(vpc.network_address), int(vpc.broadcast_address)
    candidate = start
    while candidate + size - 1 <= last:
        end = candidate + size - 1
        blocker = next((hi for lo, hi in busy if lo <= end and hi >= candidate), None)
        if blocker is None:
            return ipaddress.IPv4Network((candidate, prefix))
        # jump past the blocker, to the next aligned block (the VPC start is aligned to the
        # VPC size, which is at least the block size, so absolute alignment is enough)
        candidate = ((blocker + 1 + size - 1) // size) * size
    raise SubnetSpaceExhausted([str(vpc)], prefix, count)


def vpc_cidrs(ec2: Any, vpc_id: str) -> list[str]:
    """The VPC's associated IPv4 CIDR blocks, primary first."""
    vpc = ec2.describe_vpcs(VpcIds=[vpc_id])["Vpcs"][0]
    cidrs = [vpc["CidrBlock"]]
    for assoc in vpc.get("CidrBlockAssociationSet") or ():
        state = (assoc.get("CidrBlockState") or {}).get("State", "associated")
        if state == "associated" and assoc["CidrBlock"] not in cidrs:
            cidrs.append(assoc["CidrBlock"])
    return cidrs


def subnet_cidrs(ec2: Any, vpc_id: str) -> list[str]:
    """Every IPv4 CIDR used by a subnet of the VPC (any state)."""
    pages = ec2.get_paginator("describe_subnets").paginate(
        Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])
    return [s["CidrBlock"] for page in pages for s in page["Subnets"] if s.get("CidrBlock")]


def pick_block(ec2: Any, vpc_id: str, prefix: int) -> ipaddress.IPv4Network:
    """Read the VPC and its subnets and choose the first free block in any of its CIDRs."""
    cidrs = vpc_cidrs(ec2, vpc_id)
    taken = subnet_cidrs(ec2, vpc_id)
    for cidr in cidrs:
        if ipaddress.IPv4Network(cidr).prefixlen > prefix:
            continue
        try:
            return next_free_block(cidr, taken, prefix)
        except SubnetSpaceExhausted:
            continue
    raise SubnetSpaceExhausted(cidrs, prefix, len(taken))


def allocate_subnet(
    ec2: Any,
    vpc_id: str,
    availability_zone: str,
    prefix: int,
    tags: list[dict[str, str]],
    lock: LockFactory | AbstractContextManager[Any] = contextlib.nullcontext,
    existing: Callable[[], dict[str, Any] | None] | None = None,
) -> dict[str, Any]:
    """Create a `/prefix` subnet in `availability_zone` at the first free block of the VPC.

    `lock` is a context manager, or a callable returning one, held while reading and
    creating (the engine's per-VPC lock). `existing`, asked first *under the lock*, answers
    the subnet if it was made already (by tags), so that two attempts of one step that race
    never both create it. Returns the EC2 `Subnet` description.
    """
    if not tags:
        raise ValueError("a hypd subnet is created with its tags, never untagged")
    cm = lock if isinstance(lock, AbstractContextManager) else lock()
    with cm:
        found = existing() if existing is not None else None
        if found is not None:
            return found
        for attempt in range(CONFLICT_RETRIES):
            block = pick_block(ec2, vpc_id, prefix)
            try:
                return ec2.create_subnet(
                    VpcId=vpc_id,
                    CidrBlock=str(block),
                    AvailabilityZone=availability_zone,
                    TagSpecifications=[{"ResourceType": "subnet", "Tags": list(tags)}],
                )["Subnet"]
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code")
                if code != "InvalidSubnet.Conflict" or attempt == CONFLICT_RETRIES - 1:
                    raise
    raise AssertionError("unreachable")  # pragma: no cover
