"""Networks: a VPC with public and private subnets in at least two zones."""

from __future__ import annotations

import ipaddress

from marshmallow import Schema, ValidationError, fields, validate, validates

from schemas.common import Name, Pattern, Region
from schemas.dependents import DestroyQuerySchema
from vocabulary import patterns


def _valid_cidr(value: str) -> None:
    try:
        net = ipaddress.IPv4Network(value, strict=True)
    except ValueError as exc:
        raise ValidationError(f"not an IPv4 CIDR block: {exc}") from exc
    if not net.is_private:
        raise ValidationError("must be a private (RFC 1918) range, e.g. 10.0.0.0/16")
    if not 16 <= net.prefixlen <= 18:
        raise ValidationError("prefix must be /16 to /18: two /20 compute subnets must fit")


def Cidr(**kwargs) -> fields.String:
    return fields.String(
        validate=_valid_cidr,
        metadata={"description": "private IPv4 block for a new VPC, /16 to /18 (room for two "
                                 "/20 compute subnets and two public subnets)"},
        **kwargs,
    )


class NetworkCreateSchema(Schema):
    name = Name(required=True)
    region = Region()
    cidr = Cidr(load_default="10.0.0.0/16")
    availability_zones = fields.List(
        fields.String(validate=Pattern(patterns.ZONE, error="not an availability zone name")),
        validate=validate.Length(min=2, max=6,
                                 error="give 2 to 6 availability zones (EKS needs two)"),
        metadata={"description": "default: the region's first two available zones"},
    )

    @validates("availability_zones")
    def _zones(self, value: list[str], **_: object) -> None:
        if len(set(value)) != len(value):
            raise ValidationError("availability zones must be distinct")


class SubnetSchema(Schema):
    id = fields.String()
    cidr = fields.String()
    availability_zone = fields.String()
    role = fields.String()


class NetworkUserSchema(Schema):
    kind = fields.String(required=True, metadata={
        "description": "cluster (an EKS cluster, or one hypd is creating into the network) "
                       "or hyperpod_cluster"})
    name = fields.String(required=True)
    why = fields.String(required=True, metadata={"description": "how it uses the network"})


class NetworkSchema(Schema):
    name = fields.String(required=True)
    region = fields.String()
    vpc_id = fields.String(allow_none=True)
    cidr = fields.String(allow_none=True)
    state = fields.String(allow_none=True)
    availability_zones = fields.List(fields.String())
    subnets = fields.List(fields.Nested(SubnetSchema))
    internet_gateway_id = fields.String(allow_none=True)
    nat_gateway_id = fields.String(allow_none=True)
    security_group_id = fields.String(allow_none=True)
    s3_endpoint_id = fields.String(allow_none=True)
    used_by = fields.List(fields.Nested(NetworkUserSchema), required=True, metadata={
        "description": "the clusters in it now, whoever made them, and those hypd is "
                       "creating into it (what its delete would refuse for)"})


class NetworkListSchema(Schema):
    items = fields.List(fields.Nested(NetworkSchema))


class NetworkQuerySchema(Schema):
    region = Region()


class NetworkDeleteQuerySchema(NetworkQuerySchema, DestroyQuerySchema):
    """No force: while a cluster or anything else runs in the network, AWS would refuse to
    delete its VPC — after the NAT gateway, every node's way out, was gone."""
