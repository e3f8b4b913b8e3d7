"""What the capacity-fit check (cloud/fit.py) reads of a cluster: its instance groups from
one `DescribeCluster` (with the groups still being added, from their operations), each
instance type's facts from EC2 (cached a day: they do not change), and — while HyperPod's
managed autoscaling is on — each autoscaled group's maximum from its Karpenter NodePools.

Jobs, endpoints (and dev spaces to come) call `check` before they make anything, so a
request the cluster can never hold is refused with the numbers (422 `exceeds_capacity`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from app import context
from app.cache import cached
from cloud import autoscaling, aws, discovery, fit, hyperpod, kube
from cloud.nodes import COMPUTE_TYPE_LABEL

if TYPE_CHECKING:
    from app.readmodels.clusters import ClusterRef

TYPE_FACTS_CACHE_S = 86_400
GROUP_CREATE = "instance_group.create"
OTHER_NODES = f"{COMPUTE_TYPE_LABEL}!=hyperpod"
"""Nodes that are not HyperPod's (`!=` also matches a Node without the label)."""


def instance_facts(region: str, instance_type: str) -> dict[str, Any] | None:
    """One instance type in cloud.discovery's InstanceType shape (None: EC2 does not know
    it, so the check cannot judge that group's nodes)."""
    return cached(f"instance-type:{region}:{instance_type}", TYPE_FACTS_CACHE_S,
                  lambda: discovery.instance_type(aws.client("ec2", region=region),
                                                  instance_type))


def _pending(cluster: str) -> list[dict[str, Any]]:
    """Groups being added: not in DescribeCluster until their UpdateCluster went through."""
    adding = context.engine().store.newest_by_child(f"cluster/{cluster}/group",
                                                    kinds={GROUP_CREATE}, unfinished=True)
    return [op["params"] for op in adding.values()]


def node_groups(ref: ClusterRef, api: Any | None) -> list[fit.NodeGroup]:
    """The cluster's groups as the fit check sees them (none without a HyperPod cluster).
    `api`: the cluster's Kubernetes API, for the autoscaler's maxima."""
    described = hyperpod.described(aws.client("sagemaker", region=ref.region),
                                   ref.hyperpod_name)
    if described is None:
        return []
    pending = _pending(ref.name)
    types = {g.get("InstanceType") for g in described.get("InstanceGroups") or ()}
    types |= {p.get("instance_type") for p in pending}
    infos = {t: instance_facts(ref.region, t) for t in types if t}
    maxima: dict[str, int] = {}
    scaling = (described.get("AutoScaling") or {}).get("Mode")
    if scaling == fit.AUTOSCALING_ENABLED and api is not None:
        maxima = {g: b.maximum for g, b in autoscaling.read(api).items()}
    return fit.groups_of(described, infos, maxima, pending)


def elsewhere(api: Any | None) -> str | None:
    """Compute the cluster has besides HyperPod's groups — Nodes without HyperPod's
    compute-type label (EKS node groups, self-managed nodes), which hypd does not size — or
    None. (A node group scaled to zero shows no Node: it is not seen.)"""
    if api is None:
        return None
    others = kube.list_objects(api, "v1", "Node", label_selector=OTHER_NODES)
    return f"{len(others)} nodes outside HyperPod's instance groups" if others else None


def check(ref: ClusterRef, api: Any | None, asks: Iterable[fit.Ask]) -> list[fit.Fit]:
    """Each ask's fit on the cluster; raises `fit.Misfit` (422 `exceeds_capacity`) or
    `fit.UnknownPlacement` (422 `validation_failed`) before anything is made."""
    asks = list(asks)
    if not asks:
        return []
    return fit.check(asks, node_groups(ref, api), ref.name, elsewhere(api))
