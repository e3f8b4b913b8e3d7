"""What a team's admitted work holds of a cluster, and what an interval of it costs:
node-hours by dominant share. Pure arithmetic (no AWS, no Kubernetes, no Redis), so a unit
test can hold it to the numbers.

A Workload Kueue admitted (`status.admission`, condition `Admitted` True) holds, per pod
set, `count` pods on the flavors Kueue assigned per resource. Its share of nodes of an
instance type is the *dominant share*: for each pod set and flavor, count x the largest,
over the resources assigned to that flavor, of (one pod's request / one node's amount) —
the part of the nodes its pods would fill by the resource they exhaust first. Kueue's
`resourceUsage` is the pod set's total (count x one pod's), so that is the largest
`resourceUsage / per node`. A flavor's instance type is its ResourceFlavor's
`nodeLabels["node.kubernetes.io/instance-type"]` (the flavor's name when it has none), and a
node's amounts are EC2's for the type (cloud/fit.py `node_resources`: vCPUs, memory, GPUs,
Neuron devices, EFA interfaces) — capacity, a little above what Kubernetes can allocate, so
a share is never overstated. A resource a node of the type has none of is not counted (Kueue
would not have admitted a request for it there); a type EC2 does not describe has no share
(None: unknown, never a guess).

What an interval costs is share x the type's hourly price x the hours it overlaps a
period (a month, a day).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from kubernetes.utils import parse_quantity

from tasks.team_ledger import Entry
from vocabulary import teams as words

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ADMITTED = "Admitted"
FINISHED = "Finished"


def flavor_types(flavors: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """ResourceFlavor name → the instance type its nodes have."""
    return {f["metadata"]["name"]: ((f.get("spec") or {}).get("nodeLabels") or {}).get(
        INSTANCE_TYPE_LABEL) or f["metadata"]["name"] for f in flavors}


def _condition(workload: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for c in (workload.get("status") or {}).get("conditions") or ():
        if c.get("type") == kind and c.get("status") == "True":
            return c
    return None


def admitted_since(workload: Mapping[str, Any]) -> str | None:
    """When Kueue admitted the Workload (its `Admitted` condition's transition), or None when
    it holds no admission now."""
    if not (workload.get("status") or {}).get("admission"):
        return None
    admitted = _condition(workload, ADMITTED)
    return admitted.get("lastTransitionTime") if admitted else None


def finished_at(workload: Mapping[str, Any]) -> str | None:
    """When its job finished (Kueue then frees the quota), or None."""
    finished = _condition(workload, FINISHED)
    return finished.get("lastTransitionTime") if finished else None


def shares(workload: Mapping[str, Any], types: Mapping[str, str],
           per_node: Callable[[str], Mapping[str, float] | None]) -> dict[str, float | None]:
    """Instance type → the nodes of it the Workload's admission holds, by dominant share
    (None: EC2 does not describe the type)."""
    out: dict[str, float | None] = defaultdict(float)
    admission = (workload.get("status") or {}).get("admission") or {}
    for pod_set in admission.get("podSetAssignments") or ():
        usage = pod_set.get("resourceUsage") or {}
        by_flavor: dict[str, list[str]] = defaultdict(list)
        for resource, flavor in (pod_set.get("flavors") or {}).items():
            by_flavor[flavor].append(resource)
        for flavor, resources in by_flavor.items():
            itype = types.get(flavor, flavor)
            node = per_node(itype)
            if node is None or out[itype] is None:
                out[itype] = None
                continue
            fractions = [float(parse_quantity(usage[r])) / node[r] for r in resources
                         if r in usage and node.get(r)]
            out[itype] += max(fractions, default=0.0)  # type: ignore[operator]
    return dict(out)


def entries_of(workloads: Iterable[Mapping[str, Any]], types: Mapping[str, str],
               per_node: Callable[[str], Mapping[str, float] | None], now: str
               ) -> list[Entry]:
    """The ledger's entries for the admitted Workloads of teams' namespaces, seen `now`
    (a finished one: seen until it finished). A type without a share is left out: it is
    said in the read, not counted."""
    found = []
    for wl in workloads:
        meta = wl.get("metadata") or {}
        team = words.team_of_namespace(meta.get("namespace") or "")
        since = admitted_since(wl)
        if team is None or since is None:
            continue
        until = min(finished_at(wl) or now, now, key=moment)
        if moment(until) < moment(since):
            continue
        for itype, share in shares(wl, types, per_node).items():
            if share:
                found.append(Entry(uid=str(meta.get("uid")), admitted_at=since, team=team,
                                   instance_type=itype, share=round(share, 6),
                                   seen_at=until))
    return found


def overlap_hours(start: datetime, end: datetime, lo: datetime, hi: datetime) -> float:
    """Hours of [start, end] inside [lo, hi]."""
    return max(0.0, (min(end, hi) - max(start, lo)).total_seconds() / 3600)


def spend(entries: Iterable[Entry], unit_usd: Mapping[str, float | None], lo: datetime,
          hi: datetime) -> dict[str, Any]:
    """{usd, node_hours, complete} of the entries over [lo, hi]: node-hours by dominant
    share, each type's at its hourly price (a type without one: in node_hours, not in usd,
    and complete false)."""
    usd, node_hours, complete = 0.0, 0.0, True
    for entry in entries:
        hours = entry.share * overlap_hours(moment(entry.admitted_at), moment(entry.seen_at),
                                            lo, hi)
        node_hours += hours
        unit = unit_usd.get(entry.instance_type)
        if unit is None:
            complete = complete and hours == 0
        else:
            usd += hours * unit
    return {"usd": round(usd, 6), "node_hours": round(node_hours, 6), "complete": complete}


def moment(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
