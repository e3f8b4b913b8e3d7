"""Discovery: what a user may choose from (zones, accelerator instance types)."""

from __future__ import annotations

from marshmallow import Schema, fields

from schemas.common import Pattern, Region
from vocabulary import patterns


class ZoneQuerySchema(Schema):
    region = Region()


class InstanceTypeQuerySchema(Schema):
    availability_zone = fields.String(
        required=True,
        validate=Pattern(patterns.ZONE, error="not an availability zone name (e.g. us-west-2a)"),
        metadata={"description": "availability zone name, e.g. us-west-2a"},
    )
    region = Region()


class ZoneSchema(Schema):
    name = fields.String(required=True)
    zone_id = fields.String(allow_none=True)
    state = fields.String()


class ZoneListSchema(Schema):
    region = fields.String(required=True)
    items = fields.List(fields.Nested(ZoneSchema))


class InstanceTypeSchema(Schema):
    name = fields.String(required=True, metadata={"description": "HyperPod name, ml.*"})
    ec2_name = fields.String(required=True)
    vcpus = fields.Integer(allow_none=True)
    memory_gib = fields.Float(allow_none=True)
    accelerator = fields.String(allow_none=True)
    accelerator_name = fields.String(allow_none=True)
    accelerator_count = fields.Integer(allow_none=True)
    accelerator_memory_gib = fields.Float(allow_none=True)
    efa_supported = fields.Boolean()
    max_efa_interfaces = fields.Integer(allow_none=True)


class InstanceTypeListSchema(Schema):
    region = fields.String(required=True)
    availability_zone = fields.String(required=True)
    items = fields.List(fields.Nested(InstanceTypeSchema))
