"""The capacity decisions a request makes, checked against what AWS offers before anything is
made: an available zone, an instance type offered in it, the EFA mode the type can do.

A cluster's first group and every group added later are checked here, the same way.
"""

from __future__ import annotations

from typing import Any

from app.api.discovery import zones_in
from app.cache import cached
from cloud import aws, discovery
from cloud.errors import Invalid
from vocabulary.capacity import default_efa_mode, efa_interfaces, efa_refusal

TYPES_CACHE_S = 300


def available_zones(region: str) -> list[str]:
    return [z["name"] for z in zones_in(region) if z.get("state") == "available"]


def check_zone(region: str, zone: str, field: str = "availability_zone") -> list[str]:
    """The region's available zones, when `zone` is one of them; 422 otherwise."""
    available = available_zones(region)
    if zone not in available:
        raise Invalid(f"{zone} is not an available zone of {region}; choose one of "
                      f"{', '.join(available)}", field=field)
    return available


def offered_type(region: str, zone: str, instance_type: str) -> dict[str, Any]:
    """The instance type as offered in `zone` (cloud.discovery's InstanceType), or 422."""
    offered = cached(f"instance-types:{region}:{zone}", TYPES_CACHE_S,
                     lambda: discovery.instance_types(aws.client("ec2", region=region), zone))
    chosen = next((t for t in offered if t["name"] == instance_type), None)
    if chosen is None:
        raise Invalid(f"{instance_type} is not offered in {zone}; see "
                      f"GET /api/v1/discovery/instance-types?availability_zone={zone}",
                      field="instance_type")
    return chosen


def efa_mode(requested: str | None, chosen: dict[str, Any]) -> str | None:
    """EFA as the type allows (vocabulary.capacity's rule): unset means EFA where the type
    has it, none where it has not; a mode the type cannot do is refused now, not after AWS
    refuses it."""
    if requested is None:
        return default_efa_mode(chosen.get("efa_supported"))
    refusal = efa_refusal(requested, chosen["name"], efa_interfaces(
        chosen.get("efa_supported"), chosen.get("max_efa_interfaces")))
    if refusal:
        raise Invalid(refusal, field="efa_mode")
    return requested
