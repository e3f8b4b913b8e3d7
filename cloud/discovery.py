"""Read-only discovery: availability zones and the accelerator instance types in a zone.

HyperPod names instance types `ml.<ec2 type>`; EC2 knows them without the prefix, so every
question to EC2 strips it (`ec2_instance_type`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

DESCRIBE_BATCH = 100
"""DescribeInstanceTypes accepts at most 100 names per call."""

_NAME = re.compile(r"^(?:ml\.)?((?!ml\.)[a-z][a-z0-9-]*\.[a-z0-9-]+)$")

ACCELERATOR_FAMILY = re.compile(r"^(?:p|g|gr|trn|inf|dl)\d")
"""Instance families that carry GPUs (p, g, gr, dl), Trainium (trn) or Inferentia (inf).
A zone offers over a thousand types and DescribeInstanceTypes takes 100 per call, so only
these families are described; the description then decides (GpuInfo / NeuronInfo)."""


def ec2_instance_type(name: str) -> str:
    """`ml.p5.48xlarge` → `p5.48xlarge` (an EC2 name passes through). Raises ValueError for
    anything that is not an instance type name."""
    match = _NAME.match(name or "")
    if match is None:
        raise ValueError(
            f"{name!r} is not an instance type name (expected e.g. 'ml.p5.48xlarge')")
    return match.group(1)


def sagemaker_instance_type(ec2_name: str) -> str:
    """`p5.48xlarge` → `ml.p5.48xlarge`."""
    return "ml." + ec2_instance_type(ec2_name)


def availability_zones(ec2: Any) -> list[dict[str, str]]:
    """The region's availability zones (not local or wavelength zones), by name."""
    reply = ec2.describe_availability_zones(
        Filters=[{"Name": "zone-type", "Values": ["availability-zone"]}])
    zones = [
        {"name": z["ZoneName"], "zone_id": z.get("ZoneId", ""), "state": z.get("State", "")}
        for z in reply["AvailabilityZones"]
        if z.get("ZoneType", "availability-zone") == "availability-zone"
    ]
    return sorted(zones, key=lambda z: z["name"])


def offered_instance_types(ec2: Any, availability_zone: str) -> list[str]:
    """EC2 names of every instance type offered in the zone."""
    pages = ec2.get_paginator("describe_instance_type_offerings").paginate(
        LocationType="availability-zone",
        Filters=[{"Name": "location", "Values": [availability_zone]}],
    )
    names = {o["InstanceType"] for page in pages for o in page["InstanceTypeOfferings"]
             if o.get("Location", availability_zone) == availability_zone}
    return sorted(names)


def describe_instance_types(ec2: Any, names: Iterable[str]) -> list[dict[str, Any]]:
    """EC2's descriptions of the named types (EC2 names), in batches of 100."""
    names = sorted(set(names))
    found: list[dict[str, Any]] = []
    paginator = ec2.get_paginator("describe_instance_types")
    for i in range(0, len(names), DESCRIBE_BATCH):
        for page in paginator.paginate(InstanceTypes=names[i:i + DESCRIBE_BATCH]):
            found.extend(page["InstanceTypes"])
    return found


def instance_type(ec2: Any, name: str) -> dict[str, Any] | None:
    """One instance type (`ml.` or EC2 name) in hypd's InstanceType shape, or None when EC2
    does not describe it."""
    described = describe_instance_types(ec2, [ec2_instance_type(name)])
    return instance_type_info(described[0]) if described else None


def instance_types(ec2: Any, availability_zone: str) -> list[dict[str, Any]]:
    """The accelerator (GPU, Trainium, Inferentia) instance types offered in the zone."""
    offered = offered_instance_types(ec2, availability_zone)
    described = describe_instance_types(ec2, [n for n in offered if ACCELERATOR_FAMILY.match(n)])
    shaped = [instance_type_info(d) for d in described]
    return sorted((s for s in shaped if s["accelerator"]), key=_sort_key)


def instance_type_info(described: dict[str, Any]) -> dict[str, Any]:
    """One EC2 `InstanceTypeInfo` in hypd's InstanceType shape."""
    ec2_name = described["InstanceType"]
    network = described.get("NetworkInfo") or {}
    efa = bool(network.get("EfaSupported"))
    kind, acc_name, count, memory_mib = _accelerator(described)
    return {
        "name": "ml." + ec2_name,
        "ec2_name": ec2_name,
        "vcpus": (described.get("VCpuInfo") or {}).get("DefaultVCpus"),
        "memory_gib": _gib((described.get("MemoryInfo") or {}).get("SizeInMiB")),
        "accelerator": kind,
        "accelerator_name": acc_name,
        "accelerator_count": count,
        "accelerator_memory_gib": _gib(memory_mib),
        "efa_supported": efa,
        "max_efa_interfaces": (
            int((network.get("EfaInfo") or {}).get("MaximumEfaInterfaces") or 0) if efa else 0),
    }


def _accelerator(d: dict[str, Any]) -> tuple[str | None, str | None, int, int | None]:
    """(kind, name, count, total memory MiB) of the type's accelerators."""
    neuron = d.get("NeuronInfo") or {}
    devices = neuron.get("NeuronDevices") or []
    if devices:
        name = devices[0].get("Name") or ""
        count = sum(int(dev.get("Count") or 0) for dev in devices)
        memory = neuron.get("TotalNeuronDeviceMemoryInMiB") or sum(
            int(dev.get("Count") or 0) * int((dev.get("MemoryInfo") or {}).get("SizeInMiB") or 0)
            for dev in devices) or None
        kind = "trainium" if "trainium" in name.lower() else "inferentia"
        return kind, name, count, memory
    gpu = d.get("GpuInfo") or {}
    gpus = gpu.get("Gpus") or []
    if gpus:
        count = sum(int(g.get("Count") or 0) for g in gpus)
        memory = gpu.get("TotalGpuMemoryInMiB") or sum(
            int(g.get("Count") or 0) * int((g.get("MemoryInfo") or {}).get("SizeInMiB") or 0)
            for g in gpus) or None
        return "gpu", gpus[0].get("Name"), count, memory
    inference = d.get("InferenceAcceleratorInfo") or {}
    accelerators = [a for a in inference.get("Accelerators") or []
                    if "inferentia" in (a.get("Name") or "").lower()]
    if accelerators:
        count = sum(int(a.get("Count") or 0) for a in accelerators)
        memory = inference.get("TotalInferenceMemoryInMiB") or None
        return "inferentia", accelerators[0].get("Name"), count, memory
    return None, None, 0, None


def _gib(mib: int | float | None) -> float | None:
    if mib is None:
        return None
    return round(float(mib) / 1024, 1)


def _sort_key(info: dict[str, Any]) -> tuple[str, str, int]:
    family = info["ec2_name"].partition(".")[0]
    return (info["accelerator"] or "", family, info["vcpus"] or 0)
