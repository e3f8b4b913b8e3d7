"""Where a pod may run: the default scheduler's filters, as pure functions.

Per node, the first filter that fails names the reason, in the default profile's order:
NodeUnschedulable ("node(s) were unschedulable"), TaintToleration ("node(s) had untolerated
taint {key: value}"), NodeAffinity ("node(s) didn't match Pod's node affinity/selector":
`nodeSelector` and required node affinity), NodeResourcesFit ("Insufficient cpu",
"Insufficient nvidia.com/gpu", "Too many pods", … — requests against the node's
allocatable less what its pods request). A pod whose claims are missing or unbound does not
get that far. Among the nodes that fit, the least allocated is chosen (ties by name).
When none fits, the message is the scheduler's: "0/3 nodes are available: 1 Insufficient
nvidia.com/gpu, 2 node(s) didn't match Pod's node affinity/selector. preemption: …".
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")
_SUFFIXES = {
    "": 1.0, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
    "P": 1e15, "E": 1e18, "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40,
    "Pi": 2.0**50, "Ei": 2.0**60,
}
TERMINAL = frozenset({"Succeeded", "Failed"})
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"


def quantity(value: Any) -> float:
    """A resource quantity ("100m", "2", "16Gi", "1e3") as a number of base units."""
    if isinstance(value, (int, float)):
        return float(value)
    found = _QUANTITY.match(str(value).strip())
    if not found or found.group(2) not in _SUFFIXES:
        return 0.0
    return float(found.group(1)) * _SUFFIXES[found.group(2)]


def _container_requests(container: dict[str, Any]) -> dict[str, float]:
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {}
    requests = {**limits, **(resources.get("requests") or {})}  # requests default to limits
    return {name: quantity(v) for name, v in requests.items()}


def requests(pod: dict[str, Any]) -> dict[str, float]:
    """What a pod asks of its node: its containers' sum, or its largest init container."""
    spec = pod.get("spec") or {}
    total: Counter[str] = Counter()
    for container in spec.get("containers") or []:
        total.update(_container_requests(container))
    for container in spec.get("initContainers") or []:
        for name, amount in _container_requests(container).items():
            total[name] = max(total[name], amount)
    return dict(total)


def _tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    for tol in tolerations:
        effect = tol.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        operator = tol.get("operator") or "Equal"
        key = tol.get("key")
        if not key:
            if operator == "Exists":
                return True
            continue
        if key != taint.get("key"):
            continue
        if operator == "Exists" or (tol.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _expression_matches(labels: dict[str, str], expr: dict[str, Any]) -> bool:
    key, operator, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    present = key in labels
    value = labels.get(key or "")
    if operator == "In":
        return present and value in values
    if operator == "NotIn":
        return not present or value not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and values:
        try:
            number, bound = int(value or ""), int(values[0])
        except ValueError:
            return False
        return number > bound if operator == "Gt" else number < bound
    return False


def _affinity_matches(pod: dict[str, Any], node: dict[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    name = (node.get("metadata") or {}).get("name")
    for term in terms:
        exprs_ok = all(_expression_matches(labels, e) for e in term.get("matchExpressions") or [])
        fields_ok = all(
            _expression_matches({"metadata.name": name or ""}, e)
            for e in term.get("matchFields") or []
        )
        if exprs_ok and fields_ok and (term.get("matchExpressions") or term.get("matchFields")):
            return True
    return False


def _taint_text(taint: dict[str, Any]) -> str:
    return f"{{{taint.get('key')}: {taint.get('value') or ''}}}"


@dataclass(frozen=True)
class Verdict:
    """Why a node cannot take a pod (empty: it can), and how free it would be after."""

    reasons: tuple[str, ...]
    resource_shortage: bool = False
    free_fraction: float = 0.0


def check(pod: dict[str, Any], node: dict[str, Any], used: dict[str, float],
          pod_count: int) -> Verdict:
    """Run the filters for one node; `used` is what the pods already on it request."""
    spec = pod.get("spec") or {}
    tolerations = spec.get("tolerations") or []
    node_spec = node.get("spec") or {}
    unschedulable_taint = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    if node_spec.get("unschedulable") and not _tolerates(tolerations, unschedulable_taint):
        return Verdict(("node(s) were unschedulable",))
    for taint in node_spec.get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(
            tolerations, taint
        ):
            return Verdict((f"node(s) had untolerated taint {_taint_text(taint)}",))
    if not _affinity_matches(pod, node):
        return Verdict(("node(s) didn't match Pod's node affinity/selector",))
    allocatable = {k: quantity(v) for k, v in
                   ((node.get("status") or {}).get("allocatable") or {}).items()}
    short = []
    if pod_count + 1 > allocatable.get("pods", 110):
        short.append("Too many pods")
    fractions = []
    for name, amount in sorted(requests(pod).items()):
        if amount <= 0:
            continue
        have = allocatable.get(name, 0.0) - used.get(name, 0.0)
        if amount > have:
            short.append(f"Insufficient {name}")
    for name in ("cpu", "memory"):
        total = allocatable.get(name, 0.0)
        if total > 0:
            fractions.append(1 - (used.get(name, 0.0) + requests(pod).get(name, 0.0)) / total)
    if short:
        return Verdict(tuple(short), resource_shortage=True)
    return Verdict((), free_fraction=sum(fractions) / len(fractions) if fractions else 1.0)


def usage(pods: list[dict[str, Any]]) -> tuple[dict[str, dict[str, float]], Counter[str]]:
    """Per node: what its non-terminated pods request, and how many there are."""
    used: dict[str, dict[str, float]] = {}
    counts: Counter[str] = Counter()
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or (pod.get("status") or {}).get("phase") in TERMINAL:
            continue
        counts[node] += 1
        bucket = used.setdefault(node, {})
        for name, amount in requests(pod).items():
            bucket[name] = bucket.get(name, 0.0) + amount
    return used, counts


@dataclass(frozen=True)
class Placement:
    node: str | None  # the chosen node, or None
    message: str = ""  # the FailedScheduling message when none fits


def place(pod: dict[str, Any], nodes: list[dict[str, Any]],
          pods: list[dict[str, Any]]) -> Placement:
    if not nodes:
        return Placement(None, "no nodes available to schedule pods")
    used, counts = usage(pods)
    fits: list[tuple[float, str]] = []
    reasons: Counter[str] = Counter()
    preemption: Counter[str] = Counter()
    for node in nodes:
        name = str((node.get("metadata") or {}).get("name"))
        verdict = check(pod, node, used.get(name, {}), counts[name])
        if not verdict.reasons:
            fits.append((-verdict.free_fraction, name))
            continue
        reasons.update(verdict.reasons)
        preemption[NO_VICTIMS if verdict.resource_shortage else NOT_HELPFUL] += 1
    if fits:
        return Placement(min(fits)[1])
    total = len(nodes)
    return Placement(None, (
        f"0/{total} nodes are available: {_histogram(reasons)}. "
        f"preemption: 0/{total} nodes are available: {_histogram(preemption)}."
    ))


def _histogram(counts: Counter[str]) -> str:
    return ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items()))
