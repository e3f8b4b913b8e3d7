"""Plays HyperPod-managed Karpenter's decisions: how many nodes each autoscaled instance
group should have, from what the cluster's local Kubernetes holds.

Karpenter reads `NodePool`s (karpenter.sh/v1) and the `HyperpodNodeClass` each references
(its `spec.instanceGroups`). For a group:

- a static pool (`spec.replicas`) keeps that many nodes at all times;
- a dynamic pool adds nodes for the pods that ask for its capacity — pods not finished whose
  node selector names the pool (`karpenter.sh/nodepool`), a label of its node template, or
  the group (`sagemaker.amazonaws.com/instance-group-name`), or that run on one of the
  group's nodes — up to `spec.limits.nodes`, and gives them back `consolidateAfter` after
  they are no longer needed.

Pods are packed onto the instance type's capacity (CPU, memory, GPUs, pods per node) first
fit, biggest first. Nothing here changes state: sandbox/gaps/karpenter.py acts on the answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

NODEPOOL = ("karpenter.sh/v1", "NodePool")
NODECLASS = ("karpenter.sagemaker.amazonaws.com/v1", "HyperpodNodeClass")
NODEPOOL_LABEL = "karpenter.sh/nodepool"
GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
FINISHED = ("Succeeded", "Failed")
GPU = "nvidia.com/gpu"

_DURATION = re.compile(r"(\d+)([smh])")
_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(m|k|Ki|M|Mi|G|Gi|T|Ti)?$")
_FACTORS = {None: 1, "m": 0.001, "k": 1e3, "Ki": 1024, "M": 1e6, "Mi": 1024 ** 2,
            "G": 1e9, "Gi": 1024 ** 3, "T": 1e12, "Ti": 1024 ** 4}


@dataclass
class GroupPlan:
    """What Karpenter wants for one instance group."""

    group: str
    minimum: int = 0
    """nodes the static pools keep"""
    burst: int = 0
    """nodes the dynamic pools may add"""
    pools: list[str] = field(default_factory=list)
    template_labels: dict[str, str] = field(default_factory=dict)
    consolidate_after_s: float | None = 0.0
    """None: never give nodes back"""

    @property
    def maximum(self) -> int:
        return self.minimum + self.burst


def seconds(value: Any) -> float | None:
    """A Karpenter duration ("60s", "1h30m", "Never") in seconds; None for Never."""
    if value is None:
        return 0.0
    if str(value) == "Never":
        return None
    return float(sum(int(n) * {"s": 1, "m": 60, "h": 3600}[u]
                     for n, u in _DURATION.findall(str(value))))


def quantity(value: Any) -> float:
    """A Kubernetes quantity ("500m", "2", "8Gi") as a number (cores, bytes, devices)."""
    found = _QUANTITY.match(str(value).strip())
    if not found:
        return 0.0
    return float(found.group(1)) * _FACTORS[found.group(2)]


def plans(pools: Iterable[Mapping[str, Any]],
          classes: Iterable[Mapping[str, Any]]) -> dict[str, GroupPlan]:
    """{group: GroupPlan} from the cluster's NodePools and HyperpodNodeClasses."""
    groups_of = {c["metadata"]["name"]: list((c.get("spec") or {}).get("instanceGroups") or ())
                 for c in classes}
    out: dict[str, GroupPlan] = {}
    for pool in pools:
        spec = pool.get("spec") or {}
        template = spec.get("template") or {}
        ref = (template.get("spec") or {}).get("nodeClassRef") or {}
        for group in groups_of.get(ref.get("name"), ()):
            plan = out.setdefault(group, GroupPlan(group))
            plan.pools.append(pool["metadata"]["name"])
            plan.template_labels.update((template.get("metadata") or {}).get("labels") or {})
            if spec.get("replicas") is not None:
                plan.minimum += int(spec["replicas"])
                continue
            plan.burst += int(quantity((spec.get("limits") or {}).get("nodes", 0)))
            plan.consolidate_after_s = seconds(
                (spec.get("disruption") or {}).get("consolidateAfter"))
    return out


def _asks_for(pod: Mapping[str, Any], plan: GroupPlan, group_nodes: set[str]) -> bool:
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        # the cluster's own pods (kube-system: coredns's replicas) can run elsewhere and do
        # not hold a node: Karpenter consolidates them away
        namespace = (pod.get("metadata") or {}).get("namespace")
        return spec["nodeName"] in group_nodes and namespace != "kube-system"
    selector = spec.get("nodeSelector") or {}
    if not selector:
        return False
    wanted = {NODEPOOL_LABEL: set(plan.pools), GROUP_LABEL: {plan.group}}
    for key, value in plan.template_labels.items():
        wanted.setdefault(key, set()).add(value)
    return all(value in wanted.get(key, ()) for key, value in selector.items())


def demand(pods: Iterable[Mapping[str, Any]], plan: GroupPlan,
           group_nodes: set[str]) -> list[Mapping[str, Any]]:
    """The pods that need this group's capacity: not finished, not being deleted, and
    selecting it (or running on one of its nodes)."""
    return [p for p in pods
            if (p.get("status") or {}).get("phase") not in FINISHED
            and not (p.get("metadata") or {}).get("deletionTimestamp")
            and _asks_for(p, plan, group_nodes)]


def _requests(pod: Mapping[str, Any]) -> tuple[float, float, float]:
    cpu = memory = gpus = 0.0
    for container in (pod.get("spec") or {}).get("containers") or ():
        requests = (container.get("resources") or {}).get("requests") or {}
        limits = (container.get("resources") or {}).get("limits") or {}
        cpu += quantity(requests.get("cpu", 0))
        memory += quantity(requests.get("memory", 0))
        gpus += quantity(requests.get(GPU, limits.get(GPU, 0)))
    return cpu, memory, gpus


def nodes_needed(pods: Iterable[Mapping[str, Any]], vcpus: int, memory_mib: int, gpus: int,
                 max_pods: int) -> int:
    """How many nodes of this capacity hold the pods (first fit, biggest first); a pod that
    fits on no node of this type asks for one node of its own, as Karpenter would try."""
    nodes: list[list[float]] = []
    capacity = (float(vcpus), float(memory_mib) * 1024 ** 2, float(gpus), float(max_pods))
    for cpu, memory, gpu in sorted((_requests(p) for p in pods), reverse=True):
        need = (cpu, memory, gpu, 1.0)
        for node in nodes:
            if all(node[i] + need[i] <= capacity[i] for i in range(4)):
                for i in range(4):
                    node[i] += need[i]
                break
        else:
            nodes.append(list(need))
    return len(nodes)


def desired(plan: GroupPlan, needed: int) -> int:
    """The group's node count: its minimum, plus what the pods need beyond it, capped."""
    return plan.minimum + min(plan.burst, max(0, needed - plan.minimum))
