"""What a cluster create would do and cost: the reply of `POST /clusters?dry_run=true`.

The plan lists the very steps the create would record (`tasks.clusters.create_steps`), so a
dry run cannot promise a step the operation does not have. Its cost is priced from the AWS
Price List (`cloud.pricing`); each price is kept in the Redis read cache for a day, so a second
plan in that day asks AWS nothing, and a price the Price List could not give is not kept (the
next plan asks again).
"""

from __future__ import annotations

from typing import Any

from app import context
from app.cache import cached
from cloud import eks, hyperpod, networks, pricing
from tasks import clusters
from vocabulary import kubernetes_versions
from vocabulary.capacity import ON_DEMAND

PRICE_CACHE_S = 24 * 3600


def plan(body: dict[str, Any], zones: list[str]) -> list[dict[str, Any]]:
    """[{"steps": [...]}, {"resources": [...]}] for a create request (checked already; its
    network would span `zones`)."""
    name = body["name"]
    steps = [{"stage": s.stage, "step": s.name, "action": s.title}
             for s in clusters.create_steps(body)]
    resources = []
    if not body.get("existing_vpc"):
        resources.append({"type": "vpc", "name": name,
                          "cidr": body.get("cidr") or networks.DEFAULT_CIDR,
                          "availability_zones": zones})
    resources += [
        {"type": "iam_role", "name": f"hypd-{name}-eks-cluster"},
        {"type": "eks_cluster", "name": name,
         "kubernetes_version": body.get("kubernetes_version"),
         "support": kubernetes_versions.support_of(body.get("kubernetes_version"))},
        {"type": "eks_access_entry", "policy": eks.ADMIN_ACCESS_POLICY},
        {"type": "iam_oidc_provider"},
        {"type": "s3_bucket", "purpose": "lifecycle scripts"},
        {"type": "iam_role", "name": f"hypd-{name}-hp-exec"},
        {"type": "iam_role", "name": f"hypd-{name}-hp-cluster"},
        {"type": "subnet", "prefix": "/20", "availability_zone": body["availability_zone"]},
        {"type": "hyperpod_cluster", "name": name, "node_recovery": hyperpod.NODE_RECOVERY,
         "node_provisioning_mode": hyperpod.NODE_PROVISIONING_MODE,
         "instance_groups": [{"name": clusters.GROUP_NAME,
                              "instance_type": body["instance_type"],
                              "count": body["instance_count"],
                              "capacity_type": body.get("capacity_type"),
                              "efa_mode": body.get("efa_mode"),
                              "deep_health_checks": body.get("deep_health_checks")}]},
        {"type": "s3_bucket", "purpose": "shared data, mounted at /s3"},
        {"type": "kubernetes", "objects": ["PersistentVolume", "PersistentVolumeClaim"]},
    ]
    if body.get("fsx"):
        resources.append({"type": "fsx_lustre", "claim": "hypd-fsx",
                          "storage_capacity_gib": body["fsx"]["storage_capacity_gib"],
                          "deployment_type": body["fsx"]["deployment_type"],
                          "availability_zone": body["availability_zone"]})
    return [{"steps": steps}, {"resources": resources}]


def cost(body: dict[str, Any], region: str) -> dict[str, Any]:
    """The hourly estimate: the first instance group, the EKS control plane (and its extended
    support when the version is in it), and a NAT gateway for a new network."""
    return priced({
        "region": region,
        "instance_groups": [{"instance_type": body["instance_type"],
                             "count": body["instance_count"],
                             "capacity_type": body.get("capacity_type") or ON_DEMAND}],
        "nat_gateways": 0 if body.get("existing_vpc") else 1,
        "kubernetes_version": body.get("kubernetes_version"),
    })


def capacity_cost(instance_type: str, count: int, capacity_type: str,
                  region: str) -> dict[str, Any]:
    """What `count` instances add per hour to a cluster that exists: the instances alone
    (the control plane and the network are the cluster's already)."""
    return priced({
        "region": region,
        "instance_groups": [{"instance_type": instance_type, "count": count,
                             "capacity_type": capacity_type}],
        "eks_control_plane": False,
    })


def priced(plan: dict[str, Any]) -> dict[str, Any]:
    """`cloud.pricing.estimate` of a plan (its shape is that module's), each price through
    the read cache: the one way a plan and what a cluster left behind are priced."""
    price_list = pricing.PriceList(pricing.client(context.settings()))

    def quote(product: pricing.Product) -> pricing.Quote:
        return cached(product.cache_key, PRICE_CACHE_S, lambda: price_list.quote(product))

    return pricing.estimate(plan, quote)
