"""Availability zones and accelerator instance types, against moto's EC2 catalogue."""

from __future__ import annotations

import pytest

from cloud import discovery


def test_availability_zones(ec2):
    zones = discovery.availability_zones(ec2)
    assert zones[:2] == [
        {"name": "us-west-2a", "zone_id": "usw2-az2", "state": "available"},
        {"name": "us-west-2b", "zone_id": "usw2-az1", "state": "available"},
    ]
    assert [z["name"] for z in zones] == sorted(z["name"] for z in zones)
    assert all(set(z) == {"name", "zone_id", "state"} for z in zones)


def test_instance_types_shapes(ec2):
    types = {t["name"]: t for t in discovery.instance_types(ec2, "us-west-2a")}
    assert types["ml.p5.48xlarge"] == {
        "name": "ml.p5.48xlarge",
        "ec2_name": "p5.48xlarge",
        "vcpus": 192,
        "memory_gib": 2048.0,
        "accelerator": "gpu",
        "accelerator_name": "H100",
        "accelerator_count": 8,
        "accelerator_memory_gib": 640.0,
        "efa_supported": True,
        "max_efa_interfaces": 32,
    }
    p4d = types["ml.p4d.24xlarge"]
    assert (p4d["accelerator_name"], p4d["accelerator_count"], p4d["accelerator_memory_gib"],
            p4d["max_efa_interfaces"]) == ("A100", 8, 320.0, 4)
    g5 = types["ml.g5.xlarge"]
    assert (g5["accelerator"], g5["accelerator_name"], g5["accelerator_count"]) == (
        "gpu", "A10G", 1)
    assert (g5["efa_supported"], g5["max_efa_interfaces"]) == (False, 0)
    inf2 = types["ml.inf2.xlarge"]
    assert (inf2["accelerator"], inf2["accelerator_name"], inf2["accelerator_count"],
            inf2["accelerator_memory_gib"]) == ("inferentia", "Inferentia2", 1, 32.0)
    assert "ml.m5.xlarge" not in types  # no accelerator
    assert all(t["accelerator"] in ("gpu", "trainium", "inferentia") for t in types.values())


def test_instance_types_are_per_zone(ec2):
    in_a = {t["name"] for t in discovery.instance_types(ec2, "us-west-2a")}
    in_b = {t["name"]: t for t in discovery.instance_types(ec2, "us-west-2b")}
    assert "ml.trn1.32xlarge" not in in_a  # moto offers trn1 in 2b and 2d only
    trn1 = in_b["ml.trn1.32xlarge"]
    assert (trn1["accelerator"], trn1["accelerator_name"], trn1["accelerator_count"],
            trn1["accelerator_memory_gib"], trn1["efa_supported"], trn1["max_efa_interfaces"]) \
        == ("trainium", "Trainium", 16, 512.0, True, 8)


class CountingEc2:
    def __init__(self, ec2):
        self._ec2 = ec2
        self.batches: list[int] = []

    def __getattr__(self, name):
        return getattr(self._ec2, name)

    def get_paginator(self, name):
        paginator = self._ec2.get_paginator(name)
        if name != "describe_instance_types":
            return paginator
        outer = self

        class Counting:
            def paginate(self, **kwargs):
                outer.batches.append(len(kwargs["InstanceTypes"]))
                return paginator.paginate(**kwargs)

        return Counting()


def test_only_accelerator_families_are_described_and_nothing_is_lost(ec2):
    counting = CountingEc2(ec2)
    found = discovery.instance_types(counting, "us-west-2a")
    assert 0 < sum(counting.batches) <= 200 and len(counting.batches) <= 2
    # describing the whole catalogue (in batches of at most 100) finds the same types
    offered = discovery.offered_instance_types(ec2, "us-west-2a")
    assert len(offered) > 1000
    counting.batches.clear()
    everything = [discovery.instance_type_info(d)
                  for d in discovery.describe_instance_types(counting, offered)]
    assert max(counting.batches) == 100 and sum(counting.batches) == len(offered)
    assert sorted(t["name"] for t in found) == sorted(
        t["name"] for t in everything if t["accelerator"])


def test_instance_type_info_from_a_neuron_only_description():
    info = discovery.instance_type_info({
        "InstanceType": "trn2.48xlarge",
        "VCpuInfo": {"DefaultVCpus": 192},
        "MemoryInfo": {"SizeInMiB": 2097152},
        "NeuronInfo": {"NeuronDevices": [{"Count": 16, "Name": "Trainium2",
                                          "MemoryInfo": {"SizeInMiB": 98304}}]},
        "NetworkInfo": {"EfaSupported": True, "EfaInfo": {"MaximumEfaInterfaces": 16}},
    })
    assert info["accelerator"] == "trainium"
    assert info["accelerator_memory_gib"] == 1536.0  # computed when no total is given
    assert info["max_efa_interfaces"] == 16


def test_one_instance_type_by_either_name(ec2):
    info = discovery.instance_type(ec2, "ml.g5.8xlarge")
    assert info["name"] == "ml.g5.8xlarge" and info["accelerator"] == "gpu"
    assert discovery.instance_type(ec2, "g5.8xlarge") == info


def test_instance_type_info_without_accelerator():
    info = discovery.instance_type_info({"InstanceType": "m5.large", "NetworkInfo": {}})
    assert info["accelerator"] is None and info["accelerator_count"] == 0


@pytest.mark.parametrize("name,ec2_name", [
    ("ml.p5.48xlarge", "p5.48xlarge"),
    ("ml.p6-b200.48xlarge", "p6-b200.48xlarge"),
    ("ml.trn1n.32xlarge", "trn1n.32xlarge"),
    ("g5.xlarge", "g5.xlarge"),
])
def test_ec2_instance_type(name, ec2_name):
    assert discovery.ec2_instance_type(name) == ec2_name
    assert discovery.sagemaker_instance_type(ec2_name) == "ml." + ec2_name


@pytest.mark.parametrize("bad", ["", "ml.", "p5", "ml.p5", "ML.P5.48XLARGE", "ml.p5.48xlarge ",
                                 "ml.p5.48xlarge;rm", "../p5.48xlarge"])
def test_ec2_instance_type_refuses_non_names(bad):
    with pytest.raises(ValueError, match="not an instance type name"):
        discovery.ec2_instance_type(bad)
