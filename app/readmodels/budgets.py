"""Monthly budgets — a cluster's and each team's — against what they cost this month, and
their warnings.

What a cluster has cost this month is the cost read's `month` (app/readmodels/cost.py): a
lower bound from the cluster's own history since 00:00 UTC on the first, the same figure the
cost panel shows. What a team has cost is its `month` in the cost read's `teams`
(app/readmodels/team_cost.py: node-hours by dominant share x price). Each time a figure is
read — a budget's own read, the cost read (which the dashboard's cluster list makes once a
minute per live cluster), and the web processes' periodic check (app/budget_watch.py) — a
threshold crossed (vocabulary.budgets.WARN_AT: 80 % and 100 %) is raised if it was not yet
this month: one audit entry (method `HYPD`, outcome `warning`, target
`cluster/<c>/budget` or `cluster/<c>/team/<t>/budget`), one count of
`hypd_budget_warnings_total` (labels cluster, team — empty for the cluster's own — and at),
and the read lists it. tasks/budgets.py's `raise_once` makes it once across every process.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app import audit, context
from app.readmodels import cost as cost_model
from app.readmodels import team_cost
from app.readmodels.clusters import ClusterRef
from cloud import metrics
from tasks import budgets as records
from vocabulary.budgets import WARN_AT, state_of

AUDIT_METHOD = "HYPD"
AUDIT_ROUTE = "HYPD budget check"


def read(ref: ClusterRef) -> dict[str, Any]:
    """BudgetSchema: the cluster's budget, this month's cost against it, its warnings
    (raising any crossed since the last look)."""
    return of_cost(ref.name, cost_model.read(ref))


def cluster_cost(ref: ClusterRef) -> dict[str, Any]:
    """ClusterCostSchema: the cost read with its teams' cost, each budget held against its
    figure (raising what crossed). What the cost route answers and the watcher checks."""
    described = cost_model.described_of(ref)
    cost = cost_model.read(ref, described)
    teams = [{**t, "budget": view(ref.name, t["team"], cost["month_start"], t["month"],
                                  cost["as_of"])}
             for t in team_cost.read(ref, described, cost)]
    return {**cost, "budget": of_cost(ref.name, cost), "teams": teams}


def of_cost(cluster: str, cost: Mapping[str, Any]) -> dict[str, Any]:
    """The cluster's budget from a cost read already made, raising what it crossed."""
    return view(cluster, None, cost["month_start"], cost["month"], cost["as_of"])


def view(cluster: str, team: str | None, month_start: str, month: Mapping[str, Any],
         as_of: str) -> dict[str, Any]:
    """BudgetSchema of the cluster's (team None) or the team's budget against `month`
    ({usd, complete}), raising what it crossed."""
    conn = context.redis_conn()
    of = records.subject(cluster, team)
    record = records.get_budget(conn, of)
    month_key = month_start[:7]
    spent = month["usd"]
    budget = record["monthly_usd"] if record else None
    fraction = spent / budget if budget else None
    if budget:
        _raise_crossed(conn, cluster, team, month_key, spent, budget, as_of)
    raised = records.raised(conn, of, month_key) if budget else {}
    return {
        "cluster": cluster, "team": team, "monthly_usd": budget, "month_start": month_start,
        "spent_usd": spent, "complete": month["complete"],
        "fraction": round(fraction, 4) if fraction is not None else None,
        "state": state_of(fraction), "warn_at": list(WARN_AT),
        "warnings": [{"at": at, "raised_at": when} for at, when in sorted(raised.items())],
        "set_by": (record or {}).get("set_by"), "set_at": (record or {}).get("set_at"),
        "as_of": as_of,
    }


def _raise_crossed(conn: Any, cluster: str, team: str | None, month: str, spent: float,
                   budget: float, as_of: str) -> None:
    of = records.subject(cluster, team)
    whose = f"team {team} of {cluster}'s" if team else f"{cluster}'s"
    path = (f"/api/v1/clusters/{cluster}/teams/{team}/budget" if team
            else f"/api/v1/clusters/{cluster}/budget")
    target = f"cluster/{cluster}/team/{team}/budget" if team else f"cluster/{cluster}/budget"
    for at in WARN_AT:
        if spent >= at * budget and records.raise_once(conn, of, month, at, as_of):
            metrics.BUDGET_WARNINGS.labels(cluster=cluster, team=team or "", at=str(at)).inc()
            words = "exceeded" if at >= 1 else f"{at:.0%} reached"
            entry = audit.entry(None, AUDIT_METHOD, AUDIT_ROUTE, path, target, None, "warning",
                                200, f"budget_{round(at * 100)}")
            entry["message"] = (f"{whose} monthly budget of ${budget:,.2f} {words}: "
                                f"${spent:,.2f} spent this month (at least) as of {as_of}")
            try:
                audit.record(entry)
            except Exception:  # the warning stands (the read lists it); the log says why
                audit.log.exception("could not write the budget warning's audit entry")
