"""Networks: create (an operation), list and read (from AWS, by tags), delete."""

from __future__ import annotations

from flask.views import MethodView
from flask_smorest import Blueprint

from app import audit, context, mutations
from app.api.discovery import zones_in
from app.errors import ApiError
from app.permissions import access
from app.readmodels import dependents
from cloud import aws, networks
from cloud.errors import Invalid
from schemas.common import MutationReplySchema
from schemas.networks import (
    NetworkCreateSchema,
    NetworkDeleteQuerySchema,
    NetworkListSchema,
    NetworkQuerySchema,
    NetworkSchema,
)
from tasks.networks import NETWORK_CREATE, NETWORK_DELETE
from vocabulary.roles import Role

blp = Blueprint("networks", __name__, url_prefix="/api/v1/networks",
                description="VPCs with subnets, gateways and routes for clusters")
audit.declare_target(blp, "network/<name>")


def _region(query_or_body: dict) -> str:
    return query_or_body.get("region") or context.settings().region


@blp.route("")
class Networks(MethodView):
    @access(Role.VIEWER)
    @blp.arguments(NetworkQuerySchema, location="query")
    @blp.response(200, NetworkListSchema)
    @blp.doc(operationId="list_networks")
    def get(self, query):
        """List the networks hypd made (found by their tags), each with the clusters that
        use it."""
        region = _region(query)
        return {"items": dependents.network_users(
            region, networks.list_networks(aws.client("ec2", region=region)))}

    @mutations.changing(blp)
    @blp.arguments(NetworkCreateSchema)
    @blp.response(202, MutationReplySchema)
    @blp.alt_response(409, description="a network of that name exists or is being changed")
    @blp.doc(operationId="create_network")
    def post(self, body):
        """Create a network: VPC, public and private subnets in two or more zones, gateways,
        routes, a security group and an S3 endpoint."""
        region = _region(body)
        name = body["name"]

        def precheck() -> None:
            available = [z["name"] for z in zones_in(region) if z.get("state") == "available"]
            zones = body.get("availability_zones") or available[:2]
            unknown = [z for z in zones if z not in available]
            if unknown:
                raise Invalid(f"not available in {region}: {', '.join(unknown)}; "
                              f"choose from {', '.join(available)}", field="availability_zones")
            if len(zones) < 2:
                raise Invalid(f"{region} has fewer than two available zones; EKS needs two",
                              field="availability_zones")
            params["availability_zones"] = zones
            if networks.get_network(aws.client("ec2", region=region), name) is not None:
                raise ApiError(409, "conflict",
                               f"a network named {name!r} already exists in {region}; "
                               "retry its failed operation or delete it first", {"name": name})

        params = dict(body)
        params["region"] = region
        return mutations.submit(NETWORK_CREATE, f"network/{name}", params, precheck)


@blp.route("/<string:name>")
class Network(MethodView):
    @access(Role.VIEWER)
    @blp.arguments(NetworkQuerySchema, location="query")
    @blp.response(200, NetworkSchema)
    @blp.doc(operationId="get_network")
    def get(self, query, name):
        """One network hypd made, with its subnets and gateways and the clusters that use
        it."""
        region = _region(query)
        found = networks.get_network(aws.client("ec2", region=region), name)
        if found is None:
            raise ApiError(404, "not_found", f"no network named {name!r}")
        return dependents.network_users(region, [found])[0]

    @mutations.destructive(blp, NetworkDeleteQuerySchema)
    @blp.doc(operationId="delete_network")
    def delete(self, query, name):
        """Delete a network: every resource tagged with it, in reverse order. Refused (409
        in_use, naming each) while a cluster — made by hypd, imported or anyone's — or any
        other network interface is in its VPC; there is no force: AWS would refuse to
        delete the VPC anyway, after the NAT gateway (every node's way out) had gone."""
        region = _region(query)
        return mutations.destroy(NETWORK_DELETE, f"network/{name}",
                                 {"name": name, "region": region},
                                 lambda: dependents.network(region, name), query)
