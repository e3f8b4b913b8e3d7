"""What each team's work costs: node-hours by dominant share x the on-demand hourly price.

A team's work is what Kueue admitted in its namespace (`hyperpod-ns-<team>`): each admitted
Workload holds a share of nodes per instance type (app/readmodels/team_usage.py says how:
the dominant share of each pod set), priced at the type's hourly price from the same Price
List read as the cluster's cost (`dry_run.priced`, each figure with its source; a price that
cannot be had is unknown with why, never a guess). Work on spot or training-plan capacity —
the capacity type of the cluster's groups of that instance type — is labelled as the
cluster's cost labels it, without a figure; a type whose groups mix capacity types is
unknown, because which capacity the work ran on is not known.

Workloads vanish with their jobs and lose their admission when preempted, so every look
(`observe`: each cost read, and each turn of app/budget_watch.py for clusters with teams)
writes what is admitted now into the ledger (tasks/team_ledger.py), and what a team spent
this month and per day is read from the ledger: admission to last seen, clipped to the
period. It is a lower bound by up to one look's interval for work that ended between looks.

Which teams: those with a compute quota on the cluster now, and any the ledger holds this
month (a deleted team's spend stays).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from app import context
from app.errors import ApiError
from app.readmodels import dry_run
from app.readmodels import fit as fit_readmodel
from app.readmodels.clusters import ClusterRef
from app.readmodels.cost import days_of
from app.readmodels.kubeapi import talking_to
from app.readmodels.team_usage import entries_of, flavor_types, moment, spend
from app.readmodels.teams import cluster_api
from cloud import aws, fit, teams
from tasks import team_ledger
from tasks.team_ledger import Entry
from vocabulary.capacity import LIST_PRICE, ON_DEMAND, UNKNOWN_PRICE

log = logging.getLogger(__name__)

BASIS = ("node-hours by dominant share: for each admitted pod set, its pods x the largest "
         "of (request / one node's amount) over the resources it asks, times the instance "
         "type's hourly price")
MONTH_NOTE = (BASIS + "; from hypd's record of what Kueue admitted (admission to last "
              "seen), so work hypd did not see is not counted. Items without a price are "
              "not in usd.")


def per_node(region: str, instance_type: str) -> dict[str, float] | None:
    """What one node of the type offers (EC2's facts, cached a day), or None."""
    info = fit_readmodel.instance_facts(region, instance_type)
    return fit.node_resources(info) if info else None


def observe(ref: ClusterRef, now: str) -> list[Entry]:
    """Record what Kueue has admitted in teams' namespaces now; answers those entries."""
    api = cluster_api(ref)
    if api is None:
        return []
    with talking_to(ref):
        found = teams.workloads(api)
        types = flavor_types(teams.resource_flavors(api))
    entries = entries_of(found, types, lambda t: per_node(ref.region, t), now)
    team_ledger.record(context.redis_conn(), ref.name, entries)
    return entries


def quota_teams(ref: ClusterRef, described: Mapping[str, Any] | None) -> list[str]:
    """The teams with a compute quota on the cluster (none without an EKS-orchestrated
    HyperPod cluster)."""
    if not described or not described.get("eks_cluster_arn") or not described.get("arn"):
        return []
    sm = aws.client("sagemaker", region=ref.region)
    return sorted({teams.team_name_of(q)
                   for q in teams.quotas(sm, described["arn"])})


def _capacity(described: Mapping[str, Any] | None) -> dict[str, set[str]]:
    """Instance type → the capacity types of the cluster's groups of it."""
    found: dict[str, set[str]] = defaultdict(set)
    for group in (described or {}).get("instance_groups") or ():
        found[group["instance_type"]].add(group.get("capacity_type") or ON_DEMAND)
    return found


def prices(region: str, types: set[str], described: Mapping[str, Any] | None
           ) -> dict[str, dict[str, Any]]:
    """Instance type → its priced item for one instance (as the cluster's cost prices it)."""
    capacity = _capacity(described)
    mixed = {t for t in types if len(capacity.get(t, ())) > 1}
    plan = {"region": region, "eks_control_plane": False, "nat_gateways": 0,
            "instance_groups": [{"instance_type": t, "count": 1,
                                 "capacity_type": next(iter(capacity.get(t) or {ON_DEMAND}))}
                                for t in sorted(types - mixed)]}
    priced = dry_run.priced(plan)["items"] if plan["instance_groups"] else []
    out = {item["name"].removeprefix("HyperPod "): item for item in priced}
    for t in mixed:
        out[t] = {"basis": UNKNOWN_PRICE, "unit_usd": None, "source": None,
                  "capacity_type": None,
                  "note": f"the cluster's groups of {t} mix capacity types "
                          f"({', '.join(sorted(capacity[t]))}): which the work ran on is not "
                          "known"}
    return out


def _hourly(now_entries: list[Entry], priced: Mapping[str, dict[str, Any]],
            seen: bool) -> dict[str, Any]:
    share: dict[str, float] = defaultdict(float)
    for e in now_entries:
        share[e.instance_type] += e.share
    items = []
    for itype in sorted(share):
        item = priced[itype]
        unit = item["unit_usd"] if item["basis"] == LIST_PRICE else None
        items.append({"instance_type": itype, "capacity_type": item.get("capacity_type"),
                      "share": round(share[itype], 6), "basis": item["basis"],
                      "unit_usd": unit,
                      "hourly_usd": round(unit * share[itype], 4) if unit is not None else None,
                      "on_demand_unit_usd": item.get("on_demand_unit_usd"),
                      "note": item.get("note"), "source": item.get("source")})
    known = [i["hourly_usd"] for i in items if i["hourly_usd"] is not None]
    note = BASIS if seen else ("the cluster's Kubernetes API did not answer: what its teams "
                               "run now is not known")
    return {"usd": round(sum(known), 4), "complete": seen and len(known) == len(items),
            "items": items, "note": note}


def read(ref: ClusterRef, described: Mapping[str, Any] | None, cost: Mapping[str, Any]
         ) -> list[dict[str, Any]]:
    """Per team {team, hourly, month, days} (TeamCostSchema without its budget), for the
    cost read's moment and month (`cost`: app/readmodels/cost.py's read)."""
    conn = context.redis_conn()
    now_iso, start_iso = cost["as_of"], cost["month_start"]
    named = quota_teams(ref, described)
    now_entries: list[Entry] = []
    seen = True
    if named:
        team_ledger.mark(conn, ref.name)
        try:
            now_entries = [e for e in observe(ref, now_iso) if e.seen_at == now_iso]
        except ApiError as failed:
            log.warning("teams' work on %s not read: %s", ref.name, failed.message)
            seen = False
    ledger = team_ledger.entries(conn, ref.name, start_iso[:7])
    names = sorted(set(named) | {e.team for e in ledger})
    if not names:
        return []
    priced = prices(ref.region, {e.instance_type for e in [*ledger, *now_entries]}, described)
    unit = {t: i["unit_usd"] if i["basis"] == LIST_PRICE else None for t, i in priced.items()}
    now, start = moment(now_iso), moment(start_iso)
    out = []
    for team in names:
        mine = [e for e in ledger if e.team == team]
        month = spend(mine, unit, start, now)
        days = [{"date": day.date().isoformat(),
                 "usd": spend(mine, unit, day, min(day + timedelta(days=1), now))["usd"]}
                for day in days_of(start, now)]
        out.append({"team": team, "quota": team in named,
                    "hourly": _hourly([e for e in now_entries if e.team == team], priced, seen),
                    "month": {**month, "note": MONTH_NOTE}, "days": days})
    return out

