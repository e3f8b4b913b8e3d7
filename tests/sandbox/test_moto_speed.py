"""sandbox/moto_speed.py answers what moto's own code answers, on the same state."""

from __future__ import annotations

import os

import boto3
import moto.backends
import moto.core.responses
import moto.eks.utils
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.utils import method_names_from_class
from moto.ec2 import ec2_backends
from moto.ec2.responses import EC2Response
from moto.eks.responses import EKSResponse

from sandbox import moto_speed

REGION = "us-west-2"


def _world() -> tuple[object, list[str]]:
    """A VPC with tagged subnets whose ids and keys overlap (`Name` on each, one subnet with
    no tags, one tag on the VPC too)."""
    ec2 = boto3.client("ec2", region_name=REGION)
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    ec2.create_tags(Resources=[vpc], Tags=[{"Key": "Name", "Value": "lab"}])
    subnets = []
    for i in range(12):
        tags = [] if i == 5 else [{"ResourceType": "subnet", "Tags": [
            {"Key": "Name", "Value": f"s{i}"}, {"Key": "hypd:role", "Value": f"r{i % 3}"}]}]
        subnets.append(ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24",
                                         TagSpecifications=tags)["Subnet"]["SubnetId"])
    return ec2, [vpc, *subnets]


def test_a_resources_tags_are_what_describe_tags_answers_for_its_id():
    with mock_aws():
        _, ids = _world()
        backend = ec2_backends[DEFAULT_ACCOUNT_ID][REGION]
        resources = [backend.vpcs[ids[0]], *(backend.get_subnet(i) for i in ids[1:])]
        for resource in resources:
            expected = backend.describe_tags(filters={"resource-id": [resource.id]})
            assert moto_speed._own_tags(resource) == expected, resource.id
        assert moto_speed._own_tags(backend.get_subnet(ids[6])) == []  # the untagged one


def test_tag_filters_answer_the_same_after_apply():
    with mock_aws():
        ec2, _ = _world()
        filters = [{"Name": "tag:hypd:role", "Values": ["r1"]}]

        def answer() -> list[tuple[str, list]]:
            found = ec2.describe_subnets(Filters=filters)["Subnets"]
            return sorted((s["SubnetId"], sorted(t["Key"] + t["Value"] for t in s["Tags"]))
                          for s in found)

        before = answer()
        moto_speed.apply()
        assert answer() == before
        assert len(before) == 4  # 1, 4, 7, 10 (5 is untagged)


def test_the_cached_lookups_hold_what_moto_computes():
    moto_speed.apply()
    assert "ec2" in moto.backends.list_of_moto_modules()
    folder = os.path.dirname(moto.__file__)
    assert set(moto.backends.list_of_moto_modules()) == {
        d for d in os.listdir(folder)
        if os.path.isdir(os.path.join(folder, d)) and not d.startswith("__")}
    for response in (EC2Response, EKSResponse):
        assert moto.core.responses.method_names_from_class(response) == \
            method_names_from_class(response)
    partitions = moto.eks.utils.Session().get_available_partitions()
    assert partitions == boto3.Session().get_available_partitions()
    assert "aws" in partitions
