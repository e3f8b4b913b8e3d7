"""Operation kinds `network.create` and `network.delete`.

Each step is one resource group and an *ensure* (cloud/networks.py adopts by tags before it
creates), so a step re-run after a crash adopts what the crashed attempt made. Every resource
is created with `TagSpecifications` (`hypd:managed-by=hypd`, `hypd:network=<name>`,
`hypd:role=<role>`, `Name`) and adopted by those tags before anything is created. Ids are
recorded through `ctx.record` the moment AWS returns them; AWS client tokens are derived from
the operation, step and resource (`ctx.token`). moto ignores `tag:` filters on NAT gateways
and client tokens on NAT gateways and endpoints, so every lookup re-checks tags on our side.
Waiting (on the NAT gateway, say) is a `wait` that answers "ask again in N seconds"; the
engine re-schedules, never sleeps.

`network.create` steps:

- `vpc`: DNS support and hostnames on;
- `subnets`: per zone a private /20 compute subnet and a public /24, all through the one
  allocator `cloud/subnets.py`, under the per-VPC mutex;
- `internet_gateway`;
- `nat_gateway`: EIP + NAT in the first public subnet; waits until `available`;
- `route_tables`: public 0.0.0.0/0 -> IGW; private 0.0.0.0/0 -> NAT, added only once the NAT
  gateway is available;
- `security_group`: `hypd-<name>`, self-referencing all traffic in and out for EFA/NCCL, all
  egress;
- `s3_endpoint`: a gateway endpoint on both route tables.

`network.delete` first runs `in_use`: what the route checked, again (see
cloud/dependents.py). Nothing is deleted while something runs in the VPC: a cluster (hypd's,
imported or anyone's), one hypd is creating into it, or a network interface that is not the
network's own NAT gateway's or endpoint's and not settling. Those refuse the step at once
with `in_use`, naming them. Settling interfaces (`cloud.networks.settling`: an AWS service's
interface let go of by what it served, an EKS control plane's or HyperPod instance's after
their cluster went, which AWS deletes minutes later) are waited for, up to 30 looks 30 s
apart, then `in_use` too (a retry waits afresh). Without this step the NAT gateway went first
and AWS then refused the subnets: a half-deleted network, its nodes cut off.

Then the teardown, in reverse order and by tags only (a cluster's delete runs it too,
`TEARDOWN`): `s3_endpoint`, `security_group`, `route_tables`, `nat_gateway` (waits for
`deleted`), `elastic_ip`, `internet_gateway`, `subnets`, `vpc`. `DependencyViolation`
retries the step within the engine's attempts: the compute subnets of `cluster.delete` and
`instance_group.delete` wait this way for their instances' interfaces.

Network `state`: `pending`, `available`, `incomplete`, `deleting`, `failed`.

Nearby: discovery (cloud/discovery.py) describes only accelerator families (`p`, `g`, `gr`,
`trn`, `inf`, `dl`): a zone offers over 1,300 types and describing them all costs 14 calls.
`cloud/aws.py` shares one botocore session per process (created under a lock, dropped after
a fork) and thread-safe clients keyed by (mode, service, region, endpoint).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cloud import dependents
from cloud import networks as net
from cloud.dependents import Dependent
from cloud.discovery import availability_zones
from tasks.engine.kinds import OperationKind, Step, StepContext, StepFailed, StepRetry
from tasks.engine.store import live_operations
from tasks.outcomes import guarded

NAT_POLL_S = 15.0
"""How often to look at a NAT gateway that is being created or deleted (AWS: 1-3 minutes)."""
INTERFACE_POLL_S = 30.0
INTERFACE_LOOKS = 30
"""How long network.delete waits for AWS services' network interfaces to leave the VPC before
it refuses (30 looks, 30 s apart on AWS: an EKS control plane's or HyperPod instance's go
minutes after their cluster)."""


def _name(ctx: StepContext) -> str:
    return ctx.params["name"]


def _vpc_id(ctx: StepContext) -> str:
    vpc_id = (ctx.outputs.get("vpc") or {}).get("vpc_id")
    if vpc_id:
        return vpc_id
    vpc = net.find_vpc(ctx.client("ec2"), _name(ctx))
    if vpc is None:
        raise StepFailed(f"network {_name(ctx)!r} has no VPC (the vpc step did not run)",
                         "not_found")
    return vpc["VpcId"]


def _subnets(ctx: StepContext, role: str) -> list[str]:
    subnets = (ctx.outputs.get("subnets") or {}).get("subnets") or []
    ids = [s["id"] for s in subnets if s["role"] == role]
    if not ids:
        raise StepFailed(f"network {_name(ctx)!r} has no {role} subnets (the subnets step did "
                         f"not run)", "not_found")
    return ids


def _output(ctx: StepContext, step: str, key: str) -> str:
    value = (ctx.outputs.get(step) or {}).get(key)
    if not value:
        raise StepFailed(f"step {step!r} recorded no {key}", "not_found")
    return value


# ---------------------------------------------------------------------------------------
# network.create
# ---------------------------------------------------------------------------------------


@guarded
def create_vpc(ctx: StepContext) -> dict[str, Any]:
    cidr = ctx.params.get("cidr") or net.DEFAULT_CIDR
    ctx.detail(f"VPC {cidr}")
    return net.ensure_vpc(ctx.client("ec2"), _name(ctx), cidr, record=ctx.record)


@guarded
def create_subnets(ctx: StepContext) -> dict[str, Any]:
    ec2 = ctx.client("ec2")
    vpc_id = _vpc_id(ctx)
    zones = ctx.params.get("availability_zones") or ctx.resources.get("availability_zones")
    if not zones:
        available = [z["name"] for z in availability_zones(ec2) if z["state"] == "available"]
        zones = available[:net.MIN_ZONES]
        if len(zones) < net.MIN_ZONES:
            raise StepFailed(f"region {ctx.region} has fewer than {net.MIN_ZONES} available "
                             f"availability zones", "validation_failed")
    ctx.record(availability_zones=list(zones))  # fixed for every later attempt
    ctx.detail(f"subnets in {', '.join(zones)}")
    subnets = net.ensure_subnets(ec2, _name(ctx), vpc_id, list(zones),
                                 lock=lambda: ctx.lock(f"vpc/{vpc_id}"), record=ctx.record)
    return {
        "availability_zones": list(zones),
        "subnets": subnets,
        "public_subnet_ids": [s["id"] for s in subnets if s["role"] == "public"],
        "private_subnet_ids": [s["id"] for s in subnets if s["role"] == "private"],
    }


@guarded
def create_internet_gateway(ctx: StepContext) -> dict[str, Any]:
    return net.ensure_internet_gateway(ctx.client("ec2"), _name(ctx), _vpc_id(ctx),
                                       record=ctx.record)


@guarded
def create_nat_gateway(ctx: StepContext) -> dict[str, Any]:
    ec2 = ctx.client("ec2")
    name = _name(ctx)
    # a gateway that failed is answered again for the same token: derive a fresh one
    token = ctx.token("nat_gateway", *net.failed_nat_gateways(ec2, name))
    result = net.ensure_nat_gateway(ec2, name, _vpc_id(ctx), _subnets(ctx, "public")[0], token,
                                    record=ctx.record)
    return {"nat_gateway_id": result["nat_gateway_id"], "allocation_id": result["allocation_id"]}


@guarded
def wait_nat_gateway(ctx: StepContext) -> float | None:
    nat_id = ctx.resources.get("nat_gateway_id")
    if not nat_id:
        raise StepFailed("the NAT gateway step recorded no gateway id", "not_found")
    state, message = net.nat_gateway_state(ctx.client("ec2"), nat_id)
    if state == "available":
        return None
    if state == "failed":
        raise StepFailed(f"NAT gateway {nat_id} failed: {message or 'no reason given'}",
                         "nat_gateway_failed")
    if state in ("deleting", "deleted"):
        raise StepFailed(f"NAT gateway {nat_id} was deleted while hypd waited for it",
                         "nat_gateway_failed")
    ctx.detail(f"NAT gateway {nat_id} is {state}")
    return NAT_POLL_S


@guarded
def create_route_tables(ctx: StepContext) -> dict[str, Any]:
    result = net.ensure_route_tables(
        ctx.client("ec2"), _name(ctx), _vpc_id(ctx),
        internet_gateway_id=_output(ctx, "internet_gateway", "internet_gateway_id"),
        nat_gateway_id=_output(ctx, "nat_gateway", "nat_gateway_id"),
        public_subnet_ids=_subnets(ctx, "public"),
        private_subnet_ids=_subnets(ctx, "private"),
        tokens={"public": ctx.token("public"), "private": ctx.token("private")},
        record=ctx.record,
    )
    if not result["private_default_route"]:
        raise StepRetry("the NAT gateway is not available yet; the private default route "
                        "waits for it", NAT_POLL_S)
    return {k: v for k, v in result.items() if k != "private_default_route"}


@guarded
def create_security_group(ctx: StepContext) -> dict[str, Any]:
    return net.ensure_security_group(ctx.client("ec2"), _name(ctx), _vpc_id(ctx),
                                     record=ctx.record)


@guarded
def create_s3_endpoint(ctx: StepContext) -> dict[str, Any]:
    tables = [_output(ctx, "route_tables", "public_route_table_id"),
              _output(ctx, "route_tables", "private_route_table_id")]
    return net.ensure_s3_endpoint(ctx.client("ec2"), _name(ctx), _vpc_id(ctx), ctx.region,
                                  tables, ctx.token("s3_endpoint"), record=ctx.record)


def network_url(params: dict[str, Any]) -> str | None:
    name = params.get("name")
    return f"/api/v1/networks/{name}" if name else None


NETWORK_CREATE = OperationKind(
    name="network.create",
    steps=(
        Step("vpc", "Create the VPC", create_vpc),
        Step("subnets", "Create public and private subnets", create_subnets),
        Step("internet_gateway", "Create and attach the internet gateway",
             create_internet_gateway),
        Step("nat_gateway", "Create the NAT gateway", create_nat_gateway, wait_nat_gateway),
        Step("route_tables", "Create route tables and routes", create_route_tables),
        Step("security_group", "Create the security group", create_security_group),
        Step("s3_endpoint", "Create the S3 gateway endpoint", create_s3_endpoint),
    ),
    resource_url=network_url,
)


# ---------------------------------------------------------------------------------------
# network.delete (nothing while something else is in the VPC; then reverse order, by tags)
# ---------------------------------------------------------------------------------------


BUILDS = ("cluster.create", "cluster.stage")


def in_use(ec2: Any, eks: Any, sm: Any, conn: Any, view: dict[str, Any], *,
           interfaces: bool = True, leaving: str | None = None,
           clusters: dependents.RegionClusters | None = None) -> list[Dependent]:
    """What runs in the network now (cloud/dependents.py: clusters and network interfaces),
    and the clusters hypd is creating into it, whose EKS cluster may not exist yet (their
    running create: its own network is named after it, or it was given this VPC).
    `clusters`: the region's, described once for many networks."""
    found = dependents.in_network(ec2, eks, sm, view, interfaces=interfaces, leaving=leaving,
                                  clusters=clusters)
    named = {d.name for d in found} | ({leaving} if leaving else set())
    for op in live_operations(conn, "cluster/"):
        params = op.get("params") or {}
        given = (params.get("existing_vpc") or {}).get("vpc_id")
        into = given == view["vpc_id"] if given else params.get("name") == view["name"]
        if op["kind"] in BUILDS and into and params.get("name") not in named:
            found.append(Dependent("cluster", params["name"], "being created in this network "
                                   f"(operation {op['id']})", forceable=False))
    return found


def _settling_left(ec2: Any, view: dict[str, Any], leaving: str | None) -> list[dict[str, Any]]:
    """AWS services' interfaces still in the VPC that nothing live holds: let go of by what
    they served (or the leaving cluster's own), removed by AWS minutes later."""
    return [i for i in net.foreign_interfaces(ec2, view["name"], view["vpc_id"])
            if net.settling(i) or (leaving and leaving in (i.get("Description") or "").split())]


def unused_check(*, others_only: bool = False
                 ) -> tuple[Callable[[StepContext], dict[str, Any]],
                            Callable[[StepContext], float | None]]:
    """A delete's guard step (apply, wait): nothing may run in the network when its
    teardown starts — a cluster created in it since the request was checked, or anyone's
    network interface, stops the operation here, before the NAT gateway (every node's way
    out) goes and before AWS could refuse a subnet or the VPC half-way. What AWS services
    are still letting go of (an EKS control plane's or HyperPod instance's interfaces, which
    go minutes after their cluster) is waited for, `INTERFACE_LOOKS` looks at most, then
    refused. `others_only`: a cluster's own delete (its cluster and interfaces are leaving)."""
    def leaving(ctx: StepContext) -> str | None:
        return _name(ctx) if others_only else None

    @guarded
    def apply(ctx: StepContext) -> dict[str, Any]:
        ec2 = ctx.client("ec2")
        view = net.get_network(ec2, _name(ctx))
        if view is None:
            return {"dependents": 0}
        found = in_use(ec2, ctx.client("eks"), ctx.client("sagemaker"), ctx.redis, view,
                       leaving=leaving(ctx))
        dependents.refuse(f"network {_name(ctx)}", found)
        return {"dependents": 0}

    @guarded
    def wait(ctx: StepContext) -> float | None:
        ec2 = ctx.client("ec2")
        view = net.get_network(ec2, _name(ctx))
        left = [] if view is None else _settling_left(ec2, view, leaving(ctx))
        if not left:
            return None
        shown = ", ".join(net.describe_interface(i) for i in left[:5])
        shown += f" and {len(left) - 5} more" if len(left) > 5 else ""
        looks = int(ctx.resources.get("looks") or 0) + 1
        if looks > INTERFACE_LOOKS:
            ctx.record(looks=0)  # a retry waits afresh
            raise StepFailed(f"network {_name(ctx)!r} is in use: AWS services' network "
                             f"interfaces stayed in its VPC: {shown}; nothing was deleted — "
                             "remove them (or what uses them), then retry", "in_use")
        ctx.record(looks=looks)
        ctx.detail(f"waiting for {len(left)} network interface(s) of AWS services to leave "
                   f"the VPC: {shown}")
        return INTERFACE_POLL_S

    apply.__name__ = "check_network_unused"
    wait.__name__ = "wait_network_unused"
    return apply, wait


def _deleter(fn: Callable[[Any, str], list[str]]) -> Callable[[StepContext], dict[str, Any]]:
    @guarded
    def apply(ctx: StepContext) -> dict[str, Any]:
        deleted = fn(ctx.client("ec2"), _name(ctx))
        done = list(dict.fromkeys([*(ctx.resources.get("deleted") or []), *deleted]))
        if deleted:
            ctx.record(deleted=done)
        return {"deleted": done}

    apply.__name__ = f"delete_{fn.__name__}"
    return apply


@guarded
def wait_nat_deleted(ctx: StepContext) -> float | None:
    remaining = net.nat_gateways_remaining(ctx.client("ec2"), _name(ctx))
    if not remaining:
        return None
    live = [n["id"] for n in remaining if n["state"] in net.LIVE_NAT_STATES]
    if live:
        raise StepFailed(f"NAT gateway(s) {', '.join(live)} are not being deleted (made after "
                         f"this deletion began?): retry the operation", "conflict")
    ctx.detail("waiting for NAT gateway(s) to be deleted: "
               + ", ".join(f"{n['id']} ({n['state']})" for n in remaining))
    return NAT_POLL_S


TEARDOWN = (
    Step("s3_endpoint", "Delete the S3 gateway endpoint", _deleter(net.delete_s3_endpoints)),
    Step("security_group", "Delete the security group", _deleter(net.delete_security_groups)),
    Step("route_tables", "Delete route tables", _deleter(net.delete_route_tables)),
    Step("nat_gateway", "Delete the NAT gateway", _deleter(net.delete_nat_gateways),
         wait_nat_deleted),
    Step("elastic_ip", "Release the NAT gateway's Elastic IP",
         _deleter(net.release_nat_addresses)),
    Step("internet_gateway", "Detach and delete the internet gateway",
         _deleter(net.delete_internet_gateways)),
    Step("subnets", "Delete subnets", _deleter(net.delete_subnets)),
    Step("vpc", "Delete the VPC", _deleter(net.delete_vpcs)),
)
"""The network's resources, in reverse order (a cluster's delete runs them too)."""

NETWORK_DELETE = OperationKind(
    name="network.delete",
    steps=(Step("in_use", "Check that nothing runs in the network", *unused_check()),
           *TEARDOWN),
    resource_url=network_url,
)
