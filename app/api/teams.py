"""Task governance: the cluster's scheduler config (priority classes, fair share) and its
teams (a SageMaker compute quota each, which the task-governance add-on runs as a Kueue
ClusterQueue in namespace `hyperpod-ns-<team>`) — read, create, change (an explicit diff, from
the version read: an Update names it) and delete, each change an operation
(tasks/teams.py).

A change needs an EKS-orchestrated HyperPod cluster with the `task_governance` feature on
(412 otherwise). A quota or config someone made outside hypd (without hypd's tags) is read
(`managed: false`), never changed or deleted here (409). A team's delete is refused while
work runs in its namespace, the scheduler config's while any team has a quota (409 in_use
naming them), unless `force=true`."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from app import audit, context, mutations
from app.errors import ApiError
from app.permissions import access
from app.readmodels import clusters as readmodel
from app.readmodels import teams as teams_readmodel
from cloud import teams
from schemas.common import ErrorSchema, MutationReplySchema, NoChangeSchema
from schemas.teams import (
    SchedulerPutSchema,
    SchedulerSchema,
    TeamCreateSchema,
    TeamListSchema,
    TeamSchema,
    TeamUpdateSchema,
)
from tasks.teams import (
    SCHEDULER_DELETE,
    SCHEDULER_PUT,
    TEAM_CREATE,
    TEAM_DELETE,
    TEAM_UPDATE,
    scheduler_target,
    scheduler_url,
    team_target,
    team_url,
)
from vocabulary import teams as words
from vocabulary.roles import Role

blp = Blueprint("teams", __name__, url_prefix="/api/v1/clusters",
                description="Teams: a compute quota each on a shared HyperPod cluster "
                            "(SageMaker task governance)")
audit.declare_target(blp, "cluster/<cluster>/team/<name>")
scheduler_blp = Blueprint("scheduler", __name__, url_prefix="/api/v1/clusters",
                          description="The cluster's scheduler config: priority classes and "
                                      "fair share (SageMaker task governance)")
audit.declare_target(scheduler_blp, "cluster/<cluster>/scheduler")

PRECONDITIONS = ("the cluster is not an EKS-orchestrated HyperPod cluster, or the "
                 "task_governance feature is off")


def _governed(cluster: str, changing: bool = False) -> teams_readmodel.Governed:
    return teams_readmodel.governed(readmodel.find(cluster), changing)


def _diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """{field: {from, to}} of the fields that change: the diff the operation shows."""
    return {k: {"from": before[k], "to": after[k]} for k in after if before.get(k) != after[k]}


def _busy(status: str, what: str) -> None:
    if status == words.DELETING:
        raise ApiError(409, "conflict", f"{what} is being deleted")


def _ours(gov: teams_readmodel.Governed, arn: str, what: str) -> None:
    """hypd changes and deletes only what it made (its tags): another's is read-only here."""
    if not teams.ours(gov.sm, arn, gov.ref.name):
        raise ApiError(409, "conflict", f"{what} was not made by hypd (it lacks hypd's tags "
                                        "for this cluster): change it where it was made")


@scheduler_blp.route("/<string:cluster>/scheduler")
class Scheduler(MethodView):
    @access(Role.VIEWER)
    @scheduler_blp.response(200, SchedulerSchema)
    @scheduler_blp.doc(operationId="get_scheduler")
    def get(self, cluster):
        """The cluster's scheduler config as SageMaker has it now: priority classes with
        their weights, fair share on or off, its status and version (404: none yet)."""
        found = teams_readmodel.scheduler(_governed(cluster))
        if found is None:
            raise ApiError(404, "not_found", f"cluster {cluster} has no scheduler config: "
                                             "PUT one")
        return found

    @mutations.changing(scheduler_blp, own_200=(NoChangeSchema, "already as asked: nothing "
                                                                "sent"))
    @scheduler_blp.arguments(SchedulerPutSchema)
    @scheduler_blp.response(202, MutationReplySchema)
    @scheduler_blp.alt_response(412, schema=ErrorSchema, description=PRECONDITIONS)
    @scheduler_blp.doc(operationId="put_scheduler")
    def put(self, body, cluster):
        """Set the cluster's scheduler config: its priority classes (name and weight; work
        names one to run ahead of lower weights) and fair share. Creates it, or updates it
        from the version read now — the operation's params show the diff and that version.
        Already as asked: 200, nothing sent."""
        replayed = mutations.replayed()
        if replayed is not None:
            return replayed
        context.engine().store.ensure_target_free(scheduler_target(cluster))
        gov = _governed(cluster, changing=True)
        wanted = teams.Scheduler.from_params(body)
        params: dict[str, Any] = {**wanted.params(), "cluster": cluster,
                                  "region": gov.ref.region, "cluster_arn": gov.arn,
                                  "target_version": None}
        found = teams.find_scheduler(gov.sm, gov.arn)
        if found is not None:
            _busy(found["Status"], f"the scheduler config of cluster {cluster}")
            _ours(gov, found["ClusterSchedulerConfigArn"],
                  f"the scheduler config of cluster {cluster}")
            before = teams.scheduler_of(found)
            if before == wanted:
                return mutations.no_change(scheduler_url(params), "the scheduler config of "
                                           f"cluster {cluster} is already as asked")
            params.update(target_version=found["ClusterSchedulerConfigVersion"],
                          config_id=found["ClusterSchedulerConfigId"],
                          changes=_diff(before.params(), wanted.params()))
        return mutations.submit(SCHEDULER_PUT, scheduler_target(cluster), params)

    @mutations.destructive(scheduler_blp)
    @scheduler_blp.doc(operationId="delete_scheduler")
    def delete(self, query, cluster):
        """Delete the cluster's scheduler config (its priority classes and fair share go).
        Refused (409 in_use) while any team has a quota on the cluster, unless force=true."""
        params: dict[str, Any] = {"cluster": cluster}

        def impact() -> mutations.Impact:
            gov = _governed(cluster)
            found = teams.find_scheduler(gov.sm, gov.arn)
            if found is None:
                raise ApiError(404, "not_found", f"cluster {cluster} has no scheduler config")
            _ours(gov, found["ClusterSchedulerConfigArn"],
                  f"the scheduler config of cluster {cluster}")
            params.update(region=gov.ref.region, cluster_arn=gov.arn)
            return mutations.Impact(
                f"the scheduler config of cluster {cluster}",
                [f"scheduler config {found['Name']} ({found['ClusterSchedulerConfigId']}): its "
                 "priority classes and fair share"], teams_readmodel.quota_holders(gov))

        return mutations.destroy(SCHEDULER_DELETE, scheduler_target(cluster), params, impact,
                                 query)


@blp.route("/<string:cluster>/teams")
class Teams(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, TeamListSchema)
    @blp.doc(operationId="list_teams")
    def get(self, cluster):
        """The cluster's teams: each one's quota (instances per type, borrowing, lending,
        preemption, fair-share weight) and its state in SageMaker, its namespace and queues;
        and the cluster's scheduler config."""
        gov = _governed(cluster)
        return {"cluster": cluster, "scheduler": teams_readmodel.scheduler(gov),
                "items": teams_readmodel.listing(gov)}

    @mutations.changing(blp)
    @blp.arguments(TeamCreateSchema)
    @blp.response(202, MutationReplySchema)
    @blp.alt_response(409, description="the team has a quota on the cluster already")
    @blp.alt_response(412, schema=ErrorSchema, description=PRECONDITIONS)
    @blp.alt_response(422, schema=ErrorSchema, description=(
        "validation_failed: an instance type the cluster's groups do not have"))
    @blp.doc(operationId="create_team")
    def post(self, body, cluster):
        """Create a team on the cluster: its compute quota (per instance type the instances
        guaranteed to it), how much idle capacity it may borrow (percent), whether it lends
        its own idle capacity, whether its work may preempt its lower-priority work, and its
        fair-share weight. The task-governance add-on then makes its namespace
        hyperpod-ns-<team> and Kueue queues. Answers 202; the operation ends when SageMaker
        has the quota."""
        params: dict[str, Any] = {**body, "cluster": cluster}

        def precheck() -> None:
            gov = _governed(cluster, changing=True)
            params.update(region=gov.ref.region, cluster_arn=gov.arn)
            teams_readmodel.check_types(gov, body["quota"])
            if teams.find_quota(gov.sm, gov.arn, body["name"]) is not None:
                raise ApiError(409, "conflict", f"team {body['name']!r} already has a compute "
                                                f"quota on cluster {cluster}")

        return mutations.submit(TEAM_CREATE, team_target(cluster, body["name"]), params,
                                precheck)


@blp.route("/<string:cluster>/teams/<string:name>")
class Team(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, TeamSchema)
    @blp.doc(operationId="get_team")
    def get(self, cluster, name):
        """One team: its quota and SageMaker's state of it, its namespace and queues, and
        what Kueue says of its ClusterQueue (admitted and pending work, usage and borrowing
        — or that the add-on has not made it yet)."""
        return teams_readmodel.one(_governed(cluster), name)

    @mutations.changing(blp, own_200=(NoChangeSchema, "already as asked: nothing sent"))
    @blp.arguments(TeamUpdateSchema)
    @blp.response(202, MutationReplySchema)
    @blp.alt_response(412, schema=ErrorSchema, description=PRECONDITIONS)
    @blp.doc(operationId="update_team")
    def patch(self, body, cluster, name):
        """Change a team's quota, borrowing, lending, preemption or fair-share weight (only
        the fields present). The operation updates the quota from the version read now (its
        params show the diff). Already as asked: 200, nothing sent."""
        replayed = mutations.replayed()
        if replayed is not None:
            return replayed
        context.engine().store.ensure_target_free(team_target(cluster, name))
        gov = _governed(cluster, changing=True)
        found = teams_readmodel.quota_of(gov, name)
        _busy(found["Status"], f"team {name!r} of cluster {cluster}")
        _ours(gov, found["ComputeQuotaArn"], f"team {name!r}'s compute quota")
        before = teams.team_of(found).params()
        after = {**before, **body}
        if after.get("lend_idle") is False and after.get("borrow_limit_percent"):
            if "borrow_limit_percent" in body:
                raise ApiError(422, "validation_failed", "a team that does not lend its idle "
                               "capacity may not borrow", {"fields": {
                                   "borrow_limit_percent": ["send 0, or lend_idle true"]}})
            after["borrow_limit_percent"] = 0  # not lending: nothing borrowed either
        if "quota" in body:
            teams_readmodel.check_types(gov, body["quota"])
        if after == before:
            return mutations.no_change(team_url({"cluster": cluster, "name": name}),
                                       f"team {name!r} is already as asked")
        params = {**after, "cluster": cluster, "region": gov.ref.region, "cluster_arn": gov.arn,
                  "quota_id": found["ComputeQuotaId"],
                  "target_version": found["ComputeQuotaVersion"],
                  "changes": _diff(before, after)}
        return mutations.submit(TEAM_UPDATE, team_target(cluster, name), params)

    @mutations.destructive(blp)
    @blp.doc(operationId="delete_team")
    def delete(self, query, cluster, name):
        """Delete a team's compute quota (the add-on then removes its queues). Refused (409
        in_use) while work runs in its namespace — each job or pod named — unless
        force=true."""
        params: dict[str, Any] = {"cluster": cluster, "name": name}

        def impact() -> mutations.Impact:
            gov = _governed(cluster)
            found = teams_readmodel.quota_of(gov, name)
            _ours(gov, found["ComputeQuotaArn"], f"team {name!r}'s compute quota")
            params.update(region=gov.ref.region, cluster_arn=gov.arn)
            return mutations.Impact(
                f"team {name} of cluster {cluster}",
                [f"compute quota {found['Name']} ({found['ComputeQuotaId']})",
                 f"its Kueue queues {words.local_queue(name)} and "
                 f"{words.cluster_queue(name)} (the add-on removes them)"],
                teams_readmodel.running_work(gov, name))

        return mutations.destroy(TEAM_DELETE, team_target(cluster, name), params, impact,
                                 query)
