"""Monthly budgets: a cluster's (`/clusters/<c>/budget`) and each team's
(`/clusters/<c>/teams/<t>/budget`) — read, set, clear.

A budget is a panel record (tasks/budgets.py), not something on AWS: setting or clearing it
answers at once (200), as choosing the active cluster does, and the audit log records who
did it. The read holds this month's cost against it — the cluster's (the cost read's
`month`) or the team's (its `month` in the cost read's `teams`: node-hours by dominant
share x price) — and raises a crossed warning once (app/readmodels/budgets.py)."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from app import audit, auth, context
from app.errors import ApiError
from app.permissions import access
from app.readmodels import budgets as readmodel
from app.readmodels import clusters as clusters_readmodel
from app.readmodels import cost as cost_model
from schemas.budgets import BudgetSchema, BudgetSetSchema
from tasks import budgets as records
from tasks.engine.model import now_iso
from vocabulary.roles import Role

blp = Blueprint("budgets", __name__, url_prefix="/api/v1/clusters",
                description="A cluster's monthly budget and its warnings")
audit.declare_target(blp, "cluster/<name>/budget")
team_blp = Blueprint("team_budgets", __name__, url_prefix="/api/v1/clusters",
                     description="A team's monthly budget and its warnings")
audit.declare_target(team_blp, "cluster/<cluster>/team/<name>/budget")


@blp.route("/<string:name>/budget")
class Budget(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, BudgetSchema)
    @blp.doc(operationId="get_cluster_budget")
    def get(self, name):
        """The cluster's monthly budget against what it has cost since the first of the month
        (a lower bound from its own history, as the cost read's `month`), its state and the
        warnings raised this month (at 80 % and 100 %, once each)."""
        return readmodel.read(clusters_readmodel.find(name))

    @access(Role.OPERATOR)
    @blp.arguments(BudgetSetSchema)
    @blp.response(200, BudgetSchema)
    @blp.doc(operationId="set_cluster_budget")
    def put(self, body, name):
        """Set the cluster's monthly budget in US dollars. A new figure warns again at its own
        thresholds this month. Answers at once: a budget is hypd's record, not AWS's."""
        ref = clusters_readmodel.find(name)
        cost = cost_model.read(ref)
        records.set_budget(context.redis_conn(), ref.name, body["monthly_usd"],
                           auth.current().name, now_iso(), cost["month_start"][:7])
        return readmodel.of_cost(ref.name, cost)

    @access(Role.OPERATOR)
    @blp.response(200, BudgetSchema)
    @blp.doc(operationId="clear_cluster_budget")
    def delete(self, name):
        """Clear the cluster's monthly budget (and this month's warnings)."""
        ref = clusters_readmodel.find(name)
        records.clear(context.redis_conn(), ref.name)
        return readmodel.read(ref)


def _team(cluster: str, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The cluster's cost read and the team's entry in it (404: no such team this month)."""
    cost = readmodel.cluster_cost(clusters_readmodel.find(cluster))
    for team in cost["teams"]:
        if team["team"] == name:
            return cost, team
    raise ApiError(404, "not_found", f"cluster {cluster} has no team {name!r} (no compute "
                                     "quota, and no spend this month)")


def _again(cost: dict[str, Any], team: dict[str, Any]) -> dict[str, Any]:
    """The team's budget read again after a change, against the same month's figure."""
    return readmodel.view(cost["cluster"], team["team"], cost["month_start"], team["month"],
                          cost["as_of"])


@team_blp.route("/<string:cluster>/teams/<string:name>/budget")
class TeamBudget(MethodView):
    @access(Role.VIEWER)
    @team_blp.response(200, BudgetSchema)
    @team_blp.doc(operationId="get_team_budget")
    def get(self, cluster, name):
        """The team's monthly budget against what its admitted work has cost since the first
        of the month (node-hours by dominant share x price, as the cost read's `teams`), its
        state and the warnings raised this month (at 80 % and 100 %, once each)."""
        return _team(cluster, name)[1]["budget"]

    @access(Role.OPERATOR)
    @team_blp.arguments(BudgetSetSchema)
    @team_blp.response(200, BudgetSchema)
    @team_blp.doc(operationId="set_team_budget")
    def put(self, body, cluster, name):
        """Set the team's monthly budget in US dollars. A new figure warns again at its own
        thresholds this month. Answers at once: a budget is hypd's record, not AWS's."""
        cost, team = _team(cluster, name)
        records.set_budget(context.redis_conn(), records.subject(cluster, name),
                           body["monthly_usd"], auth.current().name, now_iso(),
                           cost["month_start"][:7])
        return _again(cost, team)

    @access(Role.OPERATOR)
    @team_blp.response(200, BudgetSchema)
    @team_blp.doc(operationId="clear_team_budget")
    def delete(self, cluster, name):
        """Clear the team's monthly budget (and this month's warnings)."""
        cost, team = _team(cluster, name)
        records.clear(context.redis_conn(), records.subject(cluster, name))
        return _again(cost, team)
