"""Operation kinds of task governance: the cluster's scheduler config on target
`cluster/<c>/scheduler`, each team's compute quota on `cluster/<c>/team/<t>`.

- `scheduler.put`: `config` (create the cluster's scheduler config, or update it from the
  version the request read — `target_version` in the params, with the diff in `changes`; then
  until SageMaker reports it Created or Updated);
- `scheduler.delete`: `delete` (then until SageMaker no longer has it);
- `team.create`: `quota` (the team's compute quota, named after the team and tagged
  `hypd:cluster`, `hypd:team`; then until Created); `team.update`: `quota` (an Update from
  `target_version`, then until Updated); `team.delete`: `delete` (then until gone).

Neither SageMaker call takes a client token, so each step looks first: a create finds the
cluster's config, or the team's quota, by name and adopts it when its tags are hypd's for this
cluster (a killed worker's create went through), and refuses one someone else made; an update
whose resource already reads as asked was made (by an earlier attempt) and is not sent again —
one that moved past `target_version` otherwise was changed by someone else, and the operation
fails rather than overwrite it; a delete of what is gone or already Deleting sends nothing.

A create marks the cluster as one with teams (tasks/team_ledger.py: the budget watcher
records their admitted work there), and the delete of its last team unmarks it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cloud import teams
from cloud.errors import NotYet
from tasks import team_ledger
from tasks.engine.kinds import OperationKind, Step, StepContext, StepFailed
from tasks.outcomes import guarded
from vocabulary import teams as words

POLL_S = 2.0


def scheduler_target(cluster: str) -> str:
    return f"cluster/{cluster}/scheduler"


def team_target(cluster: str, team: str) -> str:
    return f"cluster/{cluster}/team/{team}"


def scheduler_url(params: dict[str, Any]) -> str:
    return f"/api/v1/clusters/{params['cluster']}/scheduler"


def team_url(params: dict[str, Any]) -> str:
    return f"/api/v1/clusters/{params['cluster']}/teams/{params['name']}"


def _settled(ctx: StepContext, described: dict[str, Any] | None, noun: str) -> float | None:
    """Until SageMaker reports the change settled; its failed states fail the step."""
    if described is None:
        raise StepFailed(f"the {noun} is gone from SageMaker", "not_found")
    status = described.get("Status")
    if status in words.SETTLED:
        return None
    if status in words.FAILED:
        raise StepFailed(f"SageMaker reports the {noun} {status}: "
                         f"{described.get('FailureReason') or 'no reason given'}",
                         "upstream_error")
    ctx.detail(f"{noun} {status}")
    return POLL_S


def _until_gone(ctx: StepContext, described: dict[str, Any] | None, noun: str
                ) -> float | None:
    if described is None or described.get("Status") == words.GONE:
        return None
    ctx.detail(f"{noun} {described.get('Status')}")
    return POLL_S


def _not_busy(described: dict[str, Any], noun: str) -> None:
    status = described.get("Status")
    if status in (words.DELETING,):
        raise StepFailed(f"the {noun} is being deleted", "conflict")
    if status not in words.SETTLED and status not in words.FAILED:
        raise NotYet(f"the {noun} is {status}", POLL_S)


def _updated(ctx: StepContext, described: dict[str, Any] | None, noun: str, version_key: str,
             matches: bool, send: Callable[[int], dict[str, Any]]) -> dict[str, Any]:
    """An update from the version the request read: sent once (a re-run finds it made)."""
    if described is None:
        raise StepFailed(f"the {noun} is gone from SageMaker", "not_found")
    version = described[version_key]
    if matches:
        return {"version": version, "adopted": True}
    if version != ctx.params["target_version"]:
        raise StepFailed(f"the {noun} was changed by someone else since it was read (version "
                         f"{version}, the request read {ctx.params['target_version']}): read "
                         "it again and ask again", "conflict")
    _not_busy(described, noun)
    reply = send(version)
    return {"version": reply.get(version_key, version + 1)}


# -- scheduler.put / scheduler.delete ------------------------------------------------------------

SCHEDULER_NOUN = "scheduler config"


def _sm(ctx: StepContext) -> Any:
    return ctx.client("sagemaker")


def _scheduler(ctx: StepContext) -> dict[str, Any] | None:
    return teams.find_scheduler(_sm(ctx), ctx.params["cluster_arn"])


@guarded
def put_scheduler(ctx: StepContext) -> dict[str, Any]:
    sm, cluster = _sm(ctx), ctx.params["cluster"]
    wanted = teams.Scheduler.from_params(ctx.params)
    found = _scheduler(ctx)
    if ctx.params.get("target_version") is None:  # a create
        if found is not None:
            if not teams.ours(sm, found["ClusterSchedulerConfigArn"], cluster):
                raise StepFailed(f"cluster {cluster} has a scheduler config hypd did not make "
                                 f"({found['Name']})", "conflict")
            return {"id": found["ClusterSchedulerConfigId"], "adopted": True}
        made = teams.create_scheduler(sm, cluster, ctx.params["cluster_arn"], wanted)
        ctx.record(id=made["ClusterSchedulerConfigId"])
        return {"id": made["ClusterSchedulerConfigId"], "arn": made["ClusterSchedulerConfigArn"]}
    ident = ctx.params["config_id"]
    done = _updated(ctx, found, SCHEDULER_NOUN, "ClusterSchedulerConfigVersion",
                    found is not None and teams.scheduler_of(found) == wanted,
                    lambda v: teams.update_scheduler(sm, ident, v, wanted))
    return {"id": ident, **done}


@guarded
def wait_scheduler(ctx: StepContext) -> float | None:
    return _settled(ctx, _scheduler(ctx), SCHEDULER_NOUN)


@guarded
def delete_scheduler(ctx: StepContext) -> dict[str, Any]:
    found = _scheduler(ctx)
    if found is None:
        return {"deleted": None}
    if found.get("Status") != words.DELETING:
        teams.delete_scheduler(_sm(ctx), found["ClusterSchedulerConfigId"])
    return {"deleted": found["ClusterSchedulerConfigId"]}


@guarded
def wait_scheduler_gone(ctx: StepContext) -> float | None:
    return _until_gone(ctx, _scheduler(ctx), SCHEDULER_NOUN)


SCHEDULER_PUT = OperationKind(
    name="scheduler.put", resource_url=scheduler_url,
    steps=(Step("config", "Create or update the cluster's scheduler config; wait until "
                          "SageMaker has it", put_scheduler, wait_scheduler),))
SCHEDULER_DELETE = OperationKind(
    name="scheduler.delete", resource_url=scheduler_url,
    steps=(Step("delete", "Delete the cluster's scheduler config; wait until it is gone",
                delete_scheduler, wait_scheduler_gone),))


# -- team.create / team.update / team.delete -----------------------------------------------------

QUOTA_NOUN = "compute quota"


def _quota(ctx: StepContext) -> dict[str, Any] | None:
    return teams.find_quota(_sm(ctx), ctx.params["cluster_arn"], ctx.params["name"])


@guarded
def create_quota(ctx: StepContext) -> dict[str, Any]:
    sm, cluster, name = _sm(ctx), ctx.params["cluster"], ctx.params["name"]
    found = _quota(ctx)
    if found is not None:
        if not teams.ours(sm, found["ComputeQuotaArn"], cluster):
            raise StepFailed(f"team {name} has a compute quota on cluster {cluster} that hypd "
                             f"did not make ({found['ComputeQuotaId']})", "conflict")
        team_ledger.mark(ctx.redis, cluster)
        return {"id": found["ComputeQuotaId"], "adopted": True}
    team_ledger.mark(ctx.redis, cluster)  # first: a crash after the call still has it
    made = teams.create_quota(sm, cluster, ctx.params["cluster_arn"],
                              teams.Team.from_params(ctx.params))
    ctx.record(id=made["ComputeQuotaId"])
    return {"id": made["ComputeQuotaId"], "arn": made["ComputeQuotaArn"]}


@guarded
def update_quota(ctx: StepContext) -> dict[str, Any]:
    sm = _sm(ctx)
    wanted = teams.Team.from_params(ctx.params)
    found = _quota(ctx)
    ident = ctx.params["quota_id"]
    done = _updated(ctx, found, QUOTA_NOUN, "ComputeQuotaVersion",
                    found is not None and teams.team_of(found) == wanted,
                    lambda v: teams.update_quota(sm, ident, v, wanted))
    return {"id": ident, **done}


@guarded
def wait_quota(ctx: StepContext) -> float | None:
    return _settled(ctx, _quota(ctx), QUOTA_NOUN)


@guarded
def delete_quota(ctx: StepContext) -> dict[str, Any]:
    found = _quota(ctx)
    if found is None:
        return {"deleted": None}
    if found.get("Status") != words.DELETING:
        teams.delete_quota(_sm(ctx), found["ComputeQuotaId"])
    return {"deleted": found["ComputeQuotaId"]}


@guarded
def wait_quota_gone(ctx: StepContext) -> float | None:
    wait = _until_gone(ctx, _quota(ctx), QUOTA_NOUN)
    if wait is None and not teams.quotas(_sm(ctx), ctx.params["cluster_arn"]):
        team_ledger.unmark(ctx.redis, ctx.params["cluster"])  # the last team went
    return wait


TEAM_CREATE = OperationKind(
    name="team.create", resource_url=team_url,
    steps=(Step("quota", "Create the team's compute quota; wait until SageMaker has it",
                create_quota, wait_quota),))
TEAM_UPDATE = OperationKind(
    name="team.update", resource_url=team_url,
    steps=(Step("quota", "Update the team's compute quota; wait until SageMaker has it",
                update_quota, wait_quota),))
TEAM_DELETE = OperationKind(
    name="team.delete", resource_url=team_url,
    steps=(Step("delete", "Delete the team's compute quota; wait until it is gone",
                delete_quota, wait_quota_gone),))
