"""A HyperPod instance's network interfaces in the customer's VPC (sandbox/interfaces.py).

HyperPod runs its instances in a service account and attaches each to the customer's VPC
through interfaces in the instance group's subnet (its `OverrideVpcConfig`, else the
cluster's `VpcConfig`), with those security groups, requester-managed by SageMaker: one per
network card — the first an `efa` interface (EFA with ENA) on EFA-capable types, `interface`
otherwise; each further card `efa`, or `efa-only` (no IP address) when the group's
`NetworkInterface.InterfaceType` says so. They are made when the instance is, and released
when it terminates (or fails, or its cluster goes): detached, then deleted
`interfaces.ENI_RELEASE_S` later. Clusters without a VPC config (HyperPod's own VPC) make none.
"""

from __future__ import annotations

from typing import Any

from sandbox import interfaces
from sandbox.gaps.sagemaker_state import Batch, Cluster, Group, Node
from sandbox.simulator import instance_info


def interface_types(group: Group) -> list[str]:
    """The interface type of each of an instance's network cards, the primary first."""
    info = instance_info(group.instance_type)
    cards = info.efa_interfaces if info is not None else 0
    if cards < 1:
        return ["interface"]
    further = (group.spec.get("NetworkInterface") or {}).get("InterfaceType") or "efa"
    return ["efa"] + [further] * (cards - 1)


def security_groups(cluster: Cluster, group: Group) -> list[str]:
    override = group.spec.get("OverrideVpcConfig") or {}
    config = cluster.request.get("VpcConfig") or {}
    return list(override.get("SecurityGroupIds") or config.get("SecurityGroupIds") or [])


def attach(cluster: Cluster, group: Group, node: Node) -> None:
    """Make the instance's interfaces in its group's subnet (none without a placement)."""
    if not node.subnet_id:
        return
    groups = security_groups(cluster, group)
    made = []
    for card, kind in enumerate(interface_types(group)):
        owner = interfaces.Owner(
            description=f"SageMaker HyperPod cluster {cluster.name} instance {node.instance_id}",
            requester_id=interfaces.HYPERPOD_ACCOUNT,
            instance_owner_id=interfaces.HYPERPOD_ACCOUNT,
            interface_type=kind,
            device_index=1 + card,
        )
        eni = interfaces.create(cluster.account, cluster.region, node.subnet_id, groups, owner,
                                private_ip=node.private_ip if card == 0 else None,
                                address=kind != "efa-only")
        if eni:
            made.append(eni)
    node.interfaces = tuple(made)


def release(app: Any, batch: Batch, cluster: Cluster, node: Node) -> None:
    """The instance is gone: its interfaces go (scheduled once the state lock is let go)."""
    ids, node.interfaces = node.interfaces, ()
    if ids:
        account, region = cluster.account, cluster.region
        batch.effect(lambda: interfaces.release(app, account, region, ids))
