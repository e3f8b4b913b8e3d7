"""The one subnet allocator: properties of the pure block picker, and the EC2 path."""

from __future__ import annotations

import contextlib
import ipaddress

import pytest
from botocore.exceptions import ClientError
from hypothesis import given, settings
from hypothesis import strategies as st

from cloud import aws
from cloud.subnets import (
    COMPUTE_PREFIX,
    SubnetSpaceExhausted,
    allocate_subnet,
    next_free_block,
)

# -- strategies ----------------------------------------------------------------------------


@st.composite
def vpc_and_taken(draw):
    """A VPC CIDR, a block size that fits it, and a list of taken CIDRs: mostly inside the
    VPC (any size, possibly overlapping each other), some straddling or outside it."""
    vpc_prefix = draw(st.integers(16, 24))
    base = draw(st.integers(0, 2**32 - 1)) & ~((1 << (32 - vpc_prefix)) - 1)
    vpc = ipaddress.IPv4Network((base, vpc_prefix))
    prefix = draw(st.integers(max(vpc_prefix, 16), min(vpc_prefix + 6, 28)))
    taken = []
    for _ in range(draw(st.integers(0, 24))):
        kind = draw(st.sampled_from(["inside"] * 6 + ["around", "anywhere"]))
        if kind == "inside":
            p = draw(st.integers(min(vpc_prefix + 2, 28), 28))
            offset = draw(st.integers(0, vpc.num_addresses - 1))
            net = ipaddress.IPv4Network((base + offset, p), strict=False)
        elif kind == "around":
            p = draw(st.integers(max(vpc_prefix - 4, 8), vpc_prefix))
            net = ipaddress.IPv4Network((base, p), strict=False)
            if draw(st.booleans()):
                continue  # usually skip: a supernet of the VPC leaves nothing free
        else:
            p = draw(st.integers(8, 28))
            net = ipaddress.IPv4Network((draw(st.integers(0, 2**32 - 1)), p), strict=False)
        taken.append(str(net))
    return str(vpc), prefix, taken


def brute_force_first(vpc: str, taken: list[str], prefix: int):
    nets = [ipaddress.ip_network(t) for t in taken]
    for block in ipaddress.IPv4Network(vpc).subnets(new_prefix=prefix):
        if not any(block.overlaps(n) for n in nets):
            return block
    return None


# -- properties ----------------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(vpc_and_taken())
def test_block_is_inside_aligned_sized_free_and_first(case):
    vpc, prefix, taken = case
    expected = brute_force_first(vpc, taken, prefix)
    if expected is None:
        with pytest.raises(SubnetSpaceExhausted):
            next_free_block(vpc, taken, prefix)
        return
    block = next_free_block(vpc, taken, prefix)
    assert block.prefixlen == prefix
    assert block.subnet_of(ipaddress.IPv4Network(vpc))
    assert int(block.network_address) % block.num_addresses == 0  # aligned
    assert not any(block.overlaps(ipaddress.ip_network(t)) for t in taken)
    assert block == expected  # the lowest free block: packing stays predictable


@settings(max_examples=100, deadline=None)
@given(st.integers(16, 20), st.data())
def test_repeated_allocation_never_overlaps_until_exhausted(vpc_prefix, data):
    vpc = f"10.0.0.0/{vpc_prefix}"
    prefixes = data.draw(st.lists(st.integers(max(vpc_prefix, 18), 26), min_size=1, max_size=40))
    taken: list[str] = []
    for prefix in prefixes:
        try:
            block = next_free_block(vpc, taken, prefix)
        except SubnetSpaceExhausted:
            assert brute_force_first(vpc, taken, prefix) is None
            continue
        assert all(not block.overlaps(ipaddress.ip_network(t)) for t in taken)
        taken.append(str(block))
    used = sum(ipaddress.ip_network(t).num_addresses for t in taken)
    assert used <= ipaddress.ip_network(vpc).num_addresses


def test_compute_blocks_fill_a_slash_16_then_exhaust():
    taken: list[str] = []
    for i in range(16):
        block = next_free_block("10.0.0.0/16", taken, COMPUTE_PREFIX)
        assert str(block) == f"10.0.{16 * i}.0/20"
        taken.append(str(block))
    with pytest.raises(SubnetSpaceExhausted, match=r"no free /20 block is left in 10\.0\.0\.0/16"):
        next_free_block("10.0.0.0/16", taken, COMPUTE_PREFIX)


def test_small_subnets_push_the_next_block_to_the_next_boundary():
    assert str(next_free_block("10.0.0.0/16", ["10.0.0.0/24"], 20)) == "10.0.16.0/20"
    assert str(next_free_block("10.0.0.0/16", ["10.0.0.0/20"], 24)) == "10.0.16.0/24"
    assert str(next_free_block("10.0.0.0/16", ["10.0.0.0/20", "10.0.16.0/24"], 24)) == \
        "10.0.17.0/24"


def test_ignores_ipv6_garbage_and_outside_cidrs():
    taken = ["2600:1f14::/64", "not a cidr", "192.168.0.0/16", "10.1.0.0/20"]
    assert str(next_free_block("10.0.0.0/16", taken, 20)) == "10.0.0.0/20"


@pytest.mark.parametrize("vpc,prefix", [("10.0.0.0/20", 16), ("10.0.0.0/16", 29),
                                         ("10.0.0.0/16", 15), ("10.0.0.0/16", True)])
def test_impossible_sizes_are_refused(vpc, prefix):
    with pytest.raises(ValueError):
        next_free_block(vpc, [], prefix)


def test_a_supernet_in_taken_exhausts():
    with pytest.raises(SubnetSpaceExhausted):
        next_free_block("10.0.0.0/16", ["10.0.0.0/8"], 20)


# -- against EC2 (moto) ----------------------------------------------------------------------


TAGS = aws.tags_for(aws.CLUSTER_TAG, "c1", role="compute")


def _vpc(ec2, cidr="10.0.0.0/16"):
    return ec2.create_vpc(CidrBlock=cidr)["Vpc"]["VpcId"]


class RecordingLock:
    def __init__(self):
        self.events: list[str] = []

    @contextlib.contextmanager
    def __call__(self):
        self.events.append("enter")
        yield
        self.events.append("exit")


def test_allocate_subnet_creates_tagged_blocks_in_order(ec2):
    vpc_id = _vpc(ec2)
    ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.0.0.0/24", AvailabilityZone="us-west-2a")
    lock = RecordingLock()
    first = allocate_subnet(ec2, vpc_id, "us-west-2a", COMPUTE_PREFIX, TAGS, lock=lock)
    second = allocate_subnet(ec2, vpc_id, "us-west-2b", COMPUTE_PREFIX, TAGS, lock=lock)
    assert (first["CidrBlock"], first["AvailabilityZone"]) == ("10.0.16.0/20", "us-west-2a")
    assert (second["CidrBlock"], second["AvailabilityZone"]) == ("10.0.32.0/20", "us-west-2b")
    assert lock.events == ["enter", "exit", "enter", "exit"]
    described = ec2.describe_subnets(SubnetIds=[first["SubnetId"]])["Subnets"][0]
    assert aws.tag_dict(described) == {"hypd:managed-by": "hypd", "hypd:cluster": "c1",
                                       "hypd:role": "compute"}


def test_allocate_subnet_uses_secondary_cidrs(ec2):
    vpc_id = _vpc(ec2, "10.0.0.0/20")
    ec2.associate_vpc_cidr_block(VpcId=vpc_id, CidrBlock="10.1.0.0/16")
    got = allocate_subnet(ec2, vpc_id, "us-west-2a", 20, TAGS)
    assert got["CidrBlock"] == "10.0.0.0/20"
    got = allocate_subnet(ec2, vpc_id, "us-west-2a", 20, TAGS)
    assert got["CidrBlock"] == "10.1.0.0/20"


def test_allocate_subnet_exhaustion(ec2):
    vpc_id = _vpc(ec2, "10.0.0.0/19")
    allocate_subnet(ec2, vpc_id, "us-west-2a", 20, TAGS)
    allocate_subnet(ec2, vpc_id, "us-west-2a", 20, TAGS)
    with pytest.raises(SubnetSpaceExhausted, match=r"10\.0\.0\.0/19"):
        allocate_subnet(ec2, vpc_id, "us-west-2a", 20, TAGS)


class RacingEc2:
    """Passes calls to moto, but lets someone outside hypd grab the chosen block just before
    our CreateSubnet lands (the first `races` times), as a console user might."""

    def __init__(self, ec2, races: int):
        self._ec2 = ec2
        self.races = races
        self.creates: list[str] = []

    def __getattr__(self, name):
        return getattr(self._ec2, name)

    def create_subnet(self, **kwargs):
        self.creates.append(kwargs["CidrBlock"])
        if self.races:
            self.races -= 1
            self._ec2.create_subnet(VpcId=kwargs["VpcId"], CidrBlock=kwargs["CidrBlock"],
                                    AvailabilityZone=kwargs["AvailabilityZone"])
        return self._ec2.create_subnet(**kwargs)


def test_conflict_rereads_and_allocates_again(ec2):
    vpc_id = _vpc(ec2)
    racing = RacingEc2(ec2, races=2)
    got = allocate_subnet(racing, vpc_id, "us-west-2a", 20, TAGS)
    assert racing.creates == ["10.0.0.0/20", "10.0.16.0/20", "10.0.32.0/20"]
    assert got["CidrBlock"] == "10.0.32.0/20"
    assert aws.tag_dict(got)["hypd:cluster"] == "c1"


def test_conflict_retries_are_bounded(ec2):
    vpc_id = _vpc(ec2)
    racing = RacingEc2(ec2, races=100)
    with pytest.raises(ClientError) as info:
        allocate_subnet(racing, vpc_id, "us-west-2a", 20, TAGS)
    assert aws.error_code(info.value) == "InvalidSubnet.Conflict"
    assert len(racing.creates) == 5


def test_subnets_are_never_created_untagged(ec2):
    with pytest.raises(ValueError):
        allocate_subnet(ec2, _vpc(ec2), "us-west-2a", 20, [])
