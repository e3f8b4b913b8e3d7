"""Look first: the zones and accelerator instance types a user can choose from."""

from __future__ import annotations

from flask_smorest import Blueprint

from app import context
from app.cache import cached
from app.permissions import access
from cloud import aws, discovery
from cloud.errors import Invalid
from schemas.discovery import (
    InstanceTypeListSchema,
    InstanceTypeQuerySchema,
    ZoneListSchema,
    ZoneQuerySchema,
)
from vocabulary.roles import Role

blp = Blueprint("discovery", __name__, url_prefix="/api/v1/discovery",
                description="Zones and instance types, read-only")

CACHE_TTL_S = 300


def zones_in(region: str) -> list[dict]:
    return cached(f"zones:{region}", CACHE_TTL_S,
                  lambda: discovery.availability_zones(aws.client("ec2", region=region)))


@blp.route("/availability-zones")
@access(Role.VIEWER)
@blp.arguments(ZoneQuerySchema, location="query")
@blp.response(200, ZoneListSchema)
@blp.doc(operationId="list_availability_zones")
def availability_zones(query):
    """Availability zones of a region."""
    region = query.get("region") or context.settings().region
    return {"region": region, "items": zones_in(region)}


@blp.route("/instance-types")
@access(Role.VIEWER)
@blp.arguments(InstanceTypeQuerySchema, location="query")
@blp.response(200, InstanceTypeListSchema)
@blp.doc(operationId="list_instance_types")
def instance_types(query):
    """Accelerator instance types offered in an availability zone (GPU, EFA, memory)."""
    region = query.get("region") or context.settings().region
    zone = query["availability_zone"]
    known = {z["name"] for z in zones_in(region)}
    if zone not in known:
        raise Invalid(f"{zone} is not an availability zone of {region}; "
                      f"choose one of {', '.join(sorted(known))}", field="availability_zone")
    items = cached(f"instance-types:{region}:{zone}", CACHE_TTL_S,
                   lambda: discovery.instance_types(aws.client("ec2", region=region), zone))
    return {"region": region, "availability_zone": zone, "items": items}
