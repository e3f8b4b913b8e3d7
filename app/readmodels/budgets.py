"""A cluster's monthly budget against what it has cost this month, and its warnings.

What it has cost this month is the cost read's `month` (app/readmodels/cost.py): a lower
bound from the cluster's own history since 00:00 UTC on the first, the same figure the cost
panel shows. Each time that figure is read — the budget's own read, the cost read (which the
dashboard's cluster list makes once a minute per live cluster), and the web processes'
periodic check (app/budget_watch.py) — a threshold crossed (vocabulary.budgets.WARN_AT: 80 %
and 100 %) is raised if it was not yet this month: one audit entry (method `HYPD`, outcome
`warning`, target `cluster/<c>/budget`), one count of `hypd_budget_warnings_total`, and the
read lists it. tasks/budgets.py's `raise_once` makes it once across every process.
"""

from __future__ import annotations

from typing import Any

from app import audit, context
from app.readmodels import cost as cost_model
from app.readmodels.clusters import ClusterRef
from cloud import metrics
from tasks import budgets as records
from vocabulary.budgets import WARN_AT, state_of

AUDIT_METHOD = "HYPD"
AUDIT_ROUTE = "HYPD budget check"


def read(ref: ClusterRef) -> dict[str, Any]:
    """BudgetSchema: the budget, this month's cost against it, its warnings (raising any
    crossed since the last look)."""
    return of_cost(ref.name, cost_model.read(ref))


def of_cost(cluster: str, cost: dict[str, Any]) -> dict[str, Any]:
    """The budget's view from a cost read already made, raising what it crossed."""
    conn = context.redis_conn()
    record = records.get_budget(conn, cluster)
    month = cost["month"]
    month_key = cost["month_start"][:7]
    spent = month["usd"]
    budget = record["monthly_usd"] if record else None
    fraction = spent / budget if budget else None
    if budget:
        _raise_crossed(conn, cluster, month_key, spent, budget, cost["as_of"])
    raised = records.raised(conn, cluster, month_key) if budget else {}
    return {
        "cluster": cluster, "monthly_usd": budget, "month_start": cost["month_start"],
        "spent_usd": spent, "complete": month["complete"],
        "fraction": round(fraction, 4) if fraction is not None else None,
        "state": state_of(fraction), "warn_at": list(WARN_AT),
        "warnings": [{"at": at, "raised_at": when} for at, when in sorted(raised.items())],
        "set_by": (record or {}).get("set_by"), "set_at": (record or {}).get("set_at"),
        "as_of": cost["as_of"],
    }


def _raise_crossed(conn: Any, cluster: str, month: str, spent: float, budget: float,
                   as_of: str) -> None:
    for at in WARN_AT:
        if spent >= at * budget and records.raise_once(conn, cluster, month, at, as_of):
            metrics.BUDGET_WARNINGS.labels(cluster=cluster, at=str(at)).inc()
            words = "exceeded" if at >= 1 else f"{at:.0%} reached"
            path = f"/api/v1/clusters/{cluster}/budget"
            entry = audit.entry(None, AUDIT_METHOD, AUDIT_ROUTE, path,
                                f"cluster/{cluster}/budget", None, "warning", 200,
                                f"budget_{round(at * 100)}")
            entry["message"] = (f"{cluster}'s monthly budget of ${budget:,.2f} {words}: "
                                f"${spent:,.2f} spent this month (at least) as of {as_of}")
            try:
                audit.record(entry)
            except Exception:  # the warning stands (the read lists it); the log says why
                audit.log.exception("could not write the budget warning's audit entry")
