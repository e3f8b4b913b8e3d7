"""What a cluster costs while it runs: its hourly rate now, and what it has cost so far.

Priced as a plan is priced (`dry_run.priced`: the AWS Price List through the read cache,
each item with its source; a price that cannot be had is unknown, with the reason, never a
guess). The rate counts what AWS bills by the hour for the cluster now: HyperPod's instances
per group at the count running (spot and training-plan capacity labelled as the plan labels
them, without a figure), the EKS control plane (and extended support while its version is
in it), and the NAT gateways of its VPC (a hypd network's are shared by every cluster in it:
the item says so).

What it has cost so far comes from the cluster's own history and is a lower bound: each node
HyperPod lists now, since its launch (HyperPod lists no node it replaced or removed), the
control plane since EKS made the cluster, each NAT gateway since it was made. Extended
support is counted from the day the version entered it, or the cluster's creation if later.
The same count from the first of the month (00:00 UTC) is what a monthly budget holds the
cluster to (app/readmodels/budgets.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from app.readmodels import dry_run
from app.readmodels.clusters import ClusterRef
from cloud import aws, hyperpod
from cloud import nodes as cloud_nodes
from vocabulary import kubernetes_versions
from vocabulary.capacity import (
    EKS_CONTROL_PLANE,
    EKS_EXTENDED_SUPPORT,
    HYPERPOD_INSTANCES,
    NAT_GATEWAY,
    ON_DEMAND,
)

BILLED_NAT_STATES = frozenset({"pending", "available", "deleting"})
LOWER_BOUND = ("A lower bound from the cluster's own history: each node HyperPod lists now "
               "since its launch (nodes it replaced or removed are not listed), the control "
               "plane since EKS made the cluster, each NAT gateway since it was made. Items "
               "without a price are not in the total.")


def described_of(ref: ClusterRef) -> dict[str, Any] | None:
    """HyperPod's cluster as cloud.hyperpod shapes it (None: none yet): what `read` prices,
    and what the teams' cost (app/readmodels/team_cost.py) reads its groups and ARN from."""
    return hyperpod.describe(aws.client("sagemaker", region=ref.region), ref.hyperpod_name,
                             events=0)


def read(ref: ClusterRef, described: dict[str, Any] | None = None) -> dict[str, Any]:
    """{cluster, region, as_of, hourly (CostSchema), accrued, month_start, month, days}
    (ClusterCostSchema): `days` splits `month` by UTC day, for a chart of spend over time.
    `described`: HyperPod's cluster already read (`described_of`), else read here."""
    now = datetime.now(UTC)
    region = ref.region
    sm = aws.client("sagemaker", region=region)
    if described is None:
        described = described_of(ref)
    groups = (described or {}).get("instance_groups") or []
    try:
        nodes = list(cloud_nodes.nodes_by_id(sm, ref.hyperpod_name).values())
    except cloud_nodes.NoHyperPodCluster:
        nodes = []
    eks_found = ref.eks or {}
    vpc_id = (eks_found.get("resourcesVpcConfig") or {}).get("vpcId")
    nats = _nat_gateways(region, vpc_id) if vpc_id else []
    version = eks_found.get("version") if eks_found else None
    hourly = dry_run.priced({
        "region": region,
        "eks_control_plane": bool(eks_found),
        "kubernetes_version": version,
        "nat_gateways": len(nats),
        "instance_groups": [{"name": g["name"], "instance_type": g["instance_type"],
                             "count": g.get("current_count") or 0,
                             "capacity_type": g.get("capacity_type") or ON_DEMAND}
                            for g in groups],
    })
    for item in hourly["items"]:
        if item["kind"] == NAT_GATEWAY:
            item["note"] = ((item.get("note") or "") + f"; the NAT gateways of VPC {vpc_id}, "
                            "shared by every cluster in it").lstrip("; ")
    accrued = _accrued(hourly["items"], nodes, eks_found, version, nats, now)
    month_start = month_start_of(now)
    month = _accrued(hourly["items"], nodes, eks_found, version, nats, now, floor=month_start)
    days = []
    for start in days_of(month_start, now):
        end = min(start + timedelta(days=1), now)
        day = _accrued(hourly["items"], nodes, eks_found, version, nats, end, floor=start)
        days.append({"date": start.date().isoformat(), "usd": day["usd"]})
    return {"cluster": ref.name, "region": region, "as_of": iso(now), "hourly": hourly,
            "accrued": accrued, "month_start": iso(month_start), "month": month,
            "days": days}


def days_of(first: datetime, now: datetime) -> Iterator[datetime]:
    """00:00 UTC of each day from `first` to `now`'s."""
    day = first
    while day <= now:
        yield day
        day += timedelta(days=1)


def month_start_of(moment: datetime) -> datetime:
    """00:00 UTC on the first of `moment`'s month: where AWS's monthly bill starts."""
    return moment.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def _nat_gateways(region: str, vpc_id: str) -> list[dict[str, Any]]:
    found = aws.client("ec2", region=region).describe_nat_gateways(
        Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["NatGateways"]
    return [n for n in found if n.get("State") in BILLED_NAT_STATES]


def _accrued(items: list[dict[str, Any]], nodes: Iterable[Mapping[str, Any]],
             eks_found: Mapping[str, Any], version: str | None,
             nats: list[dict[str, Any]], now: datetime,
             floor: datetime | None = None) -> dict[str, Any]:
    """Each priced item's unit-hours and dollars from its start (or `floor`, if later) to
    `now`."""
    def hours(start: datetime) -> float:
        return _hours(max(start, floor) if floor else start, now)

    def first(starts: Iterable[datetime | None]) -> datetime | None:
        earliest = min((s for s in starts if s is not None), default=None)
        return max(earliest, floor) if earliest and floor else earliest

    out: list[dict[str, Any]] = []
    for item in items:
        if item["kind"] == HYPERPOD_INSTANCES:
            group = _group_of(item["name"])
            launched = [_moment(n.get("launched_at")) for n in nodes
                        if n.get("instance_group") == group]
            out.append(_line(item, sum(hours(t) for t in launched if t is not None),
                             first(launched)))
        elif item["kind"] == EKS_CONTROL_PLANE:
            created = _moment(eks_found.get("createdAt"))
            out.append(_line(item, hours(created) if created else 0.0, first([created])))
        elif item["kind"] == EKS_EXTENDED_SUPPORT:
            start = _extended_since(version, _moment(eks_found.get("createdAt")))
            out.append(_line(item, hours(start) if start else 0.0, first([start])))
        elif item["kind"] == NAT_GATEWAY:
            made = [_moment(n.get("CreateTime")) for n in nats]
            out.append(_line(item, sum(hours(t) for t in made if t is not None), first(made)))
    known = [line["usd"] for line in out if line["usd"] is not None]
    return {"usd": round(sum(known), 2), "complete": len(known) == len(out),
            "currency": "USD", "items": out, "note": LOWER_BOUND}


def _line(item: Mapping[str, Any], hours: float, since: datetime | None) -> dict[str, Any]:
    """An accrued line: `hours` are unit-hours (each node's, each gateway's, summed), so the
    unit price alone multiplies them."""
    unit = item.get("unit_usd")
    return {"name": item["name"], "kind": item["kind"], "basis": item["basis"],
            "since": iso(since) if since else None, "hours": round(hours, 2),
            "usd": round(unit * hours, 2) if unit is not None else None,
            "note": None if unit is not None else item.get("note")}


def _group_of(item_name: str) -> str | None:
    """`HyperPod ml.g5.8xlarge (workers)` → `workers` (cloud.pricing names group items so)."""
    if item_name.endswith(")") and " (" in item_name:
        return item_name.rsplit(" (", 1)[1][:-1]
    return None


def _extended_since(version: str | None, created: datetime | None) -> datetime | None:
    support = kubernetes_versions.support_of(version)
    if not support or support.get("support") != kubernetes_versions.EXTENDED:
        return None
    began = support.get("end_of_standard_support")
    start = datetime.combine(date.fromisoformat(began), time(), UTC) if began else None
    if start and created:
        return max(start, created)
    return start or created


def _moment(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str) and value:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    return None


def _hours(since: datetime, now: datetime) -> float:
    return max(0.0, (now - since).total_seconds() / 3600)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
