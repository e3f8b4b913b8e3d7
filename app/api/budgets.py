"""A cluster's monthly budget: read it, set it, clear it (`/clusters/<c>/budget`).

A budget is a panel record (tasks/budgets.py), not something on AWS: setting or clearing it
answers at once (200), as choosing the active cluster does, and the audit log records who
did it. The read holds this month's cost (the cost read's `month`) against it and raises a
crossed warning once (app/readmodels/budgets.py)."""

from __future__ import annotations

from flask.views import MethodView
from flask_smorest import Blueprint

from app import audit, auth, context
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
