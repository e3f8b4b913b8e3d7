"""Whether a workload can ever fit on a cluster: the one capacity-fit check, before anything
is made.

A workload is asked as `Ask`s — N identical pods, each requesting resources (Kubernetes
names: `nvidia.com/gpu`, `vpc.amazonaws.com/efa`, `aws.amazon.com/neuron`, `cpu` in cores,
`memory` in bytes), on one instance group or one instance type, or anywhere. A cluster is
its instance groups (`NodeGroup`): how many nodes each can ever have — its count, or its
managed-autoscaling maximum when HyperPod's autoscaler is on and scales it — and what one
node of its instance type offers (EC2's facts: GPUs, EFA interfaces, Neuron devices, vCPUs,
memory).

`check` answers how many of the asked pods the cluster could hold with every node it can
ever have and nothing else running, and refuses (`Misfit`, `exceeds_capacity`, 422) when
that is fewer than asked, naming the numbers per group; a group or instance type the cluster
does not have is refused (`validation_failed` on the field) naming what it has. What fits
but must wait for capacity (other workloads hold it, autoscaling has not added the nodes
yet) passes: the scheduler says why it waits (FailedScheduling), and the workload's read
shows it.

Only HyperPod's groups are sized: where the cluster has other compute (Nodes without
HyperPod's label: an EKS node group, self-managed nodes — `elsewhere`), a pod pinned to no
group or type is not bounded.

It is an upper bound on purpose: a node's allocatable is a little less than its capacity
(kube-reserved, system pods), pods may not pack perfectly, and pods per node are bounded by
the node's network addresses — none of which is refused here, because refusing what might
fit is worse than accepting what then waits with the scheduler's reason. A pod that asks
for no resource at all can always share a node, so only the group it names is checked.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cloud.errors import Invalid, Refusal

GPU = "nvidia.com/gpu"
EFA = "vpc.amazonaws.com/efa"
NEURON = "aws.amazon.com/neuron"
CPU = "cpu"
MEMORY = "memory"
GIB = 2**30

WORDS = {GPU: ("GPU", "GPUs"), EFA: ("EFA interface", "EFA interfaces"),
         NEURON: ("Neuron device", "Neuron devices"), CPU: ("vCPU", "vCPUs"),
         MEMORY: ("GiB of memory", "GiB of memory")}
"""How a message names each resource, one and several (memory in GiB)."""

AUTOSCALING_ENABLED = "Enable"
"""DescribeCluster's `AutoScaling.Mode` when HyperPod's managed autoscaling is on."""
DELETING = "Deleting"
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


class Misfit(Refusal):
    """A request the cluster can never hold, with the numbers (`details`)."""

    default_code = "exceeds_capacity"


class UnknownPlacement(Invalid):
    """A request naming an instance group (or instance type) the cluster does not have."""


@dataclass(frozen=True)
class NodeGroup:
    """One instance group as far as fitting is concerned."""

    name: str
    instance_type: str
    current: int
    target: int
    autoscaling_max: int | None = None
    """The managed autoscaler's maximum for the group (None: it does not scale it)."""
    per_node: Mapping[str, float] | None = None
    """What one node offers (None: EC2 does not describe the type, so it is not judged)."""
    taints: tuple[Mapping[str, str], ...] = ()
    status: str | None = None

    @property
    def max_nodes(self) -> int:
        """The most nodes the group can ever have (0 while it is being deleted)."""
        if self.status == DELETING:
            return 0
        return max(self.current, self.target, self.autoscaling_max or 0)


@dataclass(frozen=True)
class Ask:
    """`count` identical pods, each requesting `per_pod`, placed by `instance_group` or
    `instance_type` (or anywhere); `field` is the request field a refusal names and `what`
    the words for the pods in its message ("nodes", "replicas", "Ray workers")."""

    count: int
    per_pod: Mapping[str, float]
    field: str
    what: str
    instance_group: str | None = None
    instance_type: str | None = None
    note: str | None = None
    """Said after the numbers (e.g. that a RayJob's head takes no GPU)."""
    tolerations: tuple[Mapping[str, str], ...] = ()

    @property
    def needs(self) -> dict[str, float]:
        return {name: float(amount) for name, amount in self.per_pod.items() if amount > 0}


@dataclass(frozen=True)
class GroupFit:
    group: NodeGroup
    eligible: bool
    per_node: int | None  # asked pods one node can hold (None: unbounded or unknown)
    holds: int | None  # asked pods the group can hold (None: unbounded or unknown)
    why: str | None  # why it holds none (a taint, deletion, a node too small)


@dataclass(frozen=True)
class Fit:
    """How many of the asked pods the cluster can ever hold (None: no bound found)."""

    ask: Ask
    can_hold: int | None
    groups: tuple[GroupFit, ...] = field(default_factory=tuple)

    @property
    def fits(self) -> bool:
        return self.can_hold is None or self.ask.count <= self.can_hold


# -- what a node offers, what a cluster is ------------------------------------------------------

def node_resources(info: Mapping[str, Any]) -> dict[str, float]:
    """What one node of an instance type offers, from cloud.discovery's InstanceType shape:
    its accelerators as the device plugins advertise them (GPUs as `nvidia.com/gpu`,
    Trainium and Inferentia devices as `aws.amazon.com/neuron`), its EFA interfaces
    (`vpc.amazonaws.com/efa`), vCPUs and memory."""
    kind = info.get("accelerator")
    count = float(info.get("accelerator_count") or 0)
    return {
        GPU: count if kind == "gpu" else 0.0,
        NEURON: count if kind in ("trainium", "inferentia") else 0.0,
        EFA: float(info.get("max_efa_interfaces") or 0) if info.get("efa_supported") else 0.0,
        CPU: float(info.get("vcpus") or 0),
        MEMORY: float(info.get("memory_gib") or 0) * GIB,
    }


def groups_of(described: Mapping[str, Any] | None,
              infos: Mapping[str, Mapping[str, Any] | None],
              autoscaled: Mapping[str, int],
              pending: Iterable[Mapping[str, Any]] = ()) -> list[NodeGroup]:
    """The cluster's groups from DescribeCluster's answer (`InstanceGroups`, `AutoScaling`),
    each type's facts (`infos`, by `ml.` name; None where EC2 has none), the managed
    autoscaler's maximum per group (`autoscaled`, counted only while HyperPod's autoscaling is
    on) and groups being added (`pending`: {name, instance_type, instance_count, taints}:
    not in DescribeCluster until their UpdateCluster went through)."""
    if described is None:
        return []
    scaling_on = (described.get("AutoScaling") or {}).get("Mode") == AUTOSCALING_ENABLED
    groups: list[NodeGroup] = []
    for g in described.get("InstanceGroups") or ():
        name, itype = str(g.get("InstanceGroupName")), str(g.get("InstanceType"))
        config = g.get("KubernetesConfig") or {}
        taints = config.get("Taints", config.get("DesiredTaints")) or ()
        groups.append(NodeGroup(
            name=name, instance_type=itype, current=int(g.get("CurrentCount") or 0),
            target=int(g.get("TargetCount") or 0),
            autoscaling_max=autoscaled.get(name) if scaling_on else None,
            per_node=_per_node(infos.get(itype)), status=g.get("Status"),
            taints=tuple({"key": t.get("Key"), "value": t.get("Value") or "",
                          "effect": t.get("Effect")} for t in taints)))
    known = {g.name for g in groups}
    for p in pending:
        if p.get("name") in known or not p.get("instance_type"):
            continue
        itype = str(p["instance_type"])
        groups.append(NodeGroup(
            name=str(p["name"]), instance_type=itype, current=0,
            target=int(p.get("instance_count") or 0), per_node=_per_node(infos.get(itype)),
            taints=tuple({"key": t.get("key"), "value": t.get("value") or "",
                          "effect": t.get("effect")} for t in p.get("taints") or ())))
    return groups


def _per_node(info: Mapping[str, Any] | None) -> dict[str, float] | None:
    return node_resources(info) if info else None


# -- the check -----------------------------------------------------------------------------------

def _tolerated(taint: Mapping[str, str], tolerations: Sequence[Mapping[str, str]]) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol.get("effect") != taint.get("effect"):
            continue
        if not tol.get("key"):
            if tol.get("operator") == "Exists":
                return True
            continue
        if tol.get("key") == taint.get("key") and (
                tol.get("operator") == "Exists" or tol.get("value", "") == taint.get("value")):
            return True
    return False


def _taint_text(taint: Mapping[str, str]) -> str:
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint.get('key')}{value}:{taint.get('effect')}"


def _group_fit(ask: Ask, group: NodeGroup) -> GroupFit:
    blocking = [t for t in group.taints if t.get("effect") in BLOCKING_EFFECTS
                and not _tolerated(t, ask.tolerations)]
    if blocking:
        return GroupFit(group, False, 0, 0, f"its taint {_taint_text(blocking[0])} is not "
                                            "tolerated")
    if group.status == DELETING:
        return GroupFit(group, True, None, 0, "it is being deleted")
    needs = ask.needs
    if not needs or group.per_node is None:
        return GroupFit(group, True, None, None, None)
    per_node = min(math.floor(group.per_node.get(name, 0.0) / amount + 1e-9)
                   for name, amount in needs.items())
    short = [name for name, amount in needs.items()
             if group.per_node.get(name, 0.0) + 1e-9 < amount]
    why = None
    if short:
        why = "; ".join(_lacks(group, name) for name in short)
    return GroupFit(group, True, per_node, per_node * group.max_nodes, why)


def _lacks(group: NodeGroup, name: str) -> str:
    have = (group.per_node or {}).get(name, 0.0)
    if not have:
        return f"{group.instance_type} has no {_words(name)[1]}"
    return f"{group.instance_type} has {_quantity(name, have)} per node"


def _words(name: str) -> tuple[str, str]:
    return WORDS.get(name, (name, name))


def _quantity(name: str, value: float) -> str:
    """`8 GPUs`, `1 GPU`, `16 GiB of memory`."""
    if name == MEMORY:
        value = value / GIB
    one, several = _words(name)
    return f"{value:g} {one if value == 1 else several}"


def _placement(ask: Ask, groups: Sequence[NodeGroup], cluster: str) -> list[NodeGroup]:
    """The groups the ask may use; refuses a group or type the cluster does not have."""
    if ask.instance_group is None and ask.instance_type is None:
        return list(groups)
    if ask.instance_group is not None:
        chosen = [g for g in groups if g.name == ask.instance_group]
        field, missing = "instance_group", f"no instance group {ask.instance_group!r}"
        details: dict[str, Any] = {"groups": [g.name for g in groups]}
    else:
        chosen = [g for g in groups if g.instance_type == ask.instance_type]
        field, missing = "instance_type", f"no instance group of {ask.instance_type}"
        details = {"instance_types": sorted({g.instance_type for g in groups})}
    if not chosen:
        have = ", ".join(f"{g.name} ({g.instance_type})" for g in groups) or "none"
        raise UnknownPlacement(f"cluster {cluster!r} has {missing}; its groups: {have}",
                               field=field, details=details)
    return chosen


def fit(ask: Ask, groups: Sequence[NodeGroup], cluster: str,
        elsewhere: str | None = None) -> Fit:
    """How many of the asked pods the cluster can ever hold (refuses an unknown group or
    type; see the module docstring). `elsewhere` says the cluster has compute besides its
    HyperPod groups (EKS node groups, self-managed nodes), which hypd does not size: a pod
    not pinned to a group or type may run there, so it is not bounded."""
    pinned = ask.instance_group is not None or ask.instance_type is not None
    fits = tuple(_group_fit(ask, g) for g in _placement(ask, groups, cluster))
    if (elsewhere and not pinned) or any(
            f.holds is None for f in fits if f.eligible and f.group.max_nodes > 0):
        return Fit(ask, None, fits)
    return Fit(ask, sum(f.holds or 0 for f in fits), fits)


def check(asks: Iterable[Ask], groups: Sequence[NodeGroup], cluster: str,
          elsewhere: str | None = None) -> list[Fit]:
    """Each ask's fit; raises `Misfit` for the first the cluster can never hold."""
    found = []
    for ask in asks:
        result = fit(ask, groups, cluster, elsewhere)
        if not result.fits:
            raise Misfit(misfit_message(result), field=ask.field,
                         details=misfit_details(result))
        found.append(result)
    return found


# -- saying it -----------------------------------------------------------------------------------

def _asked(ask: Ask) -> str:
    per = " and ".join(_quantity(n, a) for n, a in ask.needs.items())
    note = f" ({ask.note})" if ask.note else ""
    return f"{ask.count} {ask.what} asked" + (f", each with {per}" if per else "") + note


def _group_text(result: GroupFit, ask: Ask) -> str:
    g = result.group
    counts = f"{g.current} now"
    if g.target != g.current:
        counts += f", target {g.target}"
    counts += (f", autoscaling max {g.autoscaling_max}" if g.autoscaling_max is not None
               else ", no managed autoscaling")
    offers = " and ".join(_quantity(n, g.per_node.get(n, 0.0))
                          for n in ask.needs) if g.per_node else ""
    shape = f"{g.max_nodes} nodes of {g.instance_type}" + (f" with {offers} each"
                                                          if offers else "")
    held = f"group {g.name!r} holds {result.holds or 0}"
    if result.per_node and result.per_node > 1:
        held += f", {result.per_node} per node"
    text = f"{held} ({shape}; {counts})"
    if result.why:
        text += f": {result.why}"
    return text


def misfit_message(result: Fit) -> str:
    ask = result.ask
    parts = [_group_text(g, ask) for g in result.groups]
    where = "; ".join(parts) if parts else "it has no instance groups"
    return f"{ask.field}: {_asked(ask)}; the cluster can hold at most {result.can_hold}: {where}"


def _numbers(amounts: Mapping[str, float]) -> dict[str, float | int]:
    """Whole amounts as integers (8 GPUs, not 8.0)."""
    return {name: int(v) if float(v).is_integer() else v for name, v in amounts.items()}


def misfit_details(result: Fit) -> dict[str, Any]:
    ask = result.ask
    return {
        "asked": {"count": ask.count, "what": ask.what, "per_unit": _numbers(ask.needs),
                  "instance_group": ask.instance_group, "instance_type": ask.instance_type},
        "can_hold": result.can_hold,
        "groups": [{"name": g.group.name, "instance_type": g.group.instance_type,
                    "current_count": g.group.current, "target_count": g.group.target,
                    "autoscaling_max": g.group.autoscaling_max,
                    "max_nodes": g.group.max_nodes,
                    "per_node": _numbers(g.group.per_node) if g.group.per_node else None,
                    "fits_per_node": g.per_node, "can_hold": g.holds, "why": g.why}
                   for g in result.groups],
    }
