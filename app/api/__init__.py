"""The whole API surface, one blueprint per resource, registered in one place."""

from __future__ import annotations

from flask_smorest import Api

from app.api import (
    audit,
    auth,
    budgets,
    cluster_software,
    clusters,
    diagnostics,
    discovery,
    endpoints,
    features,
    health,
    instance_groups,
    jobs,
    metrics,
    mlflow,
    models,
    networks,
    nodes,
    operations,
    spaces,
    storage,
    teams,
)

BLUEPRINTS = (health.blp, auth.blp, discovery.blp, networks.blp, clusters.blp, storage.blp,
              instance_groups.blp, cluster_software.blp, features.blp, nodes.blp,
              diagnostics.blp, jobs.blp, mlflow.blp, endpoints.blp, models.blp, spaces.blp,
              budgets.blp, budgets.team_blp, teams.scheduler_blp, teams.blp, operations.blp,
              audit.blp, metrics.blp)


def register_blueprints(api: Api) -> None:
    for blp in BLUEPRINTS:
        api.register_blueprint(blp)
