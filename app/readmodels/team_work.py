"""Which team a job runs for, and who may change it (task governance's "work goes through
the team's queue").

A job runs for a team when Kueue admits it through the team's LocalQueue: it is made in the
team's namespace (`hyperpod-ns-<team>`, where the add-on puts the queue) labelled with the
queue, and with the priority class the request names. So:
- a team member's job runs for the member's team; naming another is `forbidden`;
- an operator outside any team names the team;
- on a cluster whose instances are shared between teams every job runs for one: a job
  outside the queues would take what the quotas promise to the teams (422 on `team`);
- the team must have a quota on the cluster, the namespace (if named) must be the team's,
  and the priority a class of the cluster's scheduler config (422 on the field, naming what
  there is);
- a member changes only its team's work (`may_change`): another team's job, or one outside
  any team, is `forbidden` to a member's token — and so cancels or retries only the
  operations of its team's jobs (`may_follow_up`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.auth import Principal
from app.errors import ApiError
from app.readmodels import teams as teams_readmodel
from app.readmodels.clusters import ClusterRef
from cloud import aws, hyperpod, storage, teams
from cloud.errors import Invalid
from vocabulary import teams as words


@dataclass(frozen=True)
class Placement:
    """Where a job goes: its team (None: no team), priority class and namespace."""

    team: str | None
    priority: str | None
    namespace: str


def _team_names(ref: ClusterRef) -> list[str]:
    """The teams with a quota on the cluster (none for a cluster HyperPod does not run)."""
    sm = aws.client("sagemaker", region=ref.region)
    found = hyperpod.described(sm, ref.hyperpod_name)
    if found is None:
        return []
    return sorted(teams.team_name_of(q)
                  for q in teams.quotas(sm, found["ClusterArn"])
                  if q.get("Status") != words.DELETING)


def place(ref: ClusterRef, body: dict[str, Any], principal: Principal) -> Placement:
    """The placement of a submitted job, or the refusal (see the module docstring)."""
    asked, own, priority = body.get("team"), principal.team, body.get("priority")
    if own and asked and asked != own:
        raise ApiError(403, "forbidden", f"token {principal.name!r} is a member of team {own}: "
                                         f"it submits only its team's work, not team {asked}'s",
                       {"team": asked})
    team = asked or own
    if team is None:
        if priority:
            raise Invalid("a priority orders a team's work in its queue: name the team too",
                          field="priority")
        holders = _team_names(ref)
        if holders:
            raise Invalid(f"cluster {ref.name} shares its instances between teams "
                          f"({', '.join(holders)}): name the team the job runs for (a job "
                          "outside their queues would take what their quotas promise)",
                          field="team")
        return Placement(None, None, body.get("namespace") or storage.DEFAULT_NAMESPACE)
    gov = teams_readmodel.governed(ref)
    quota = teams.find_quota(gov.sm, gov.arn, team)
    if quota is None or quota.get("Status") == words.DELETING:
        holders = _team_names(ref)
        raise Invalid(f"cluster {ref.name} has no team {team!r} (its teams: "
                      f"{', '.join(holders) or 'none'})", field="team")
    namespace = words.namespace(team)
    if body.get("namespace") not in (None, namespace):
        raise Invalid(f"team {team}'s jobs run in its namespace {namespace}, where its queue "
                      "is: leave namespace out", field="namespace")
    if priority:
        _check_priority(gov, priority)
    return Placement(team, priority, namespace)


def _check_priority(gov: teams_readmodel.Governed, priority: str) -> None:
    config = teams.find_scheduler(gov.sm, gov.arn)
    if config is None:
        raise Invalid(f"cluster {gov.ref.name} has no scheduler config, so no priority "
                      "classes: PUT …/scheduler first, or leave priority out", field="priority")
    classes = [name for name, _ in teams.scheduler_of(config).priority_classes]
    if priority not in classes:
        raise Invalid(f"the scheduler config of cluster {gov.ref.name} has no priority class "
                      f"{priority!r} (its classes: {', '.join(classes) or 'none'})",
                      field="priority")


def may_change(principal: Principal, job: str, namespace: str | None) -> None:
    """A member's token changes only its team's jobs (403 otherwise)."""
    if principal.team is None:
        return
    team = words.team_of_namespace(namespace)
    if team != principal.team:
        whose = f"team {team}'s work" if team else "not a team's work"
        raise ApiError(403, "forbidden", f"token {principal.name!r} is a member of team "
                                         f"{principal.team}: it changes only its team's work, "
                                         f"and job {job} is {whose}", {"job": job})


JOB_KINDS = ("job.create", "job.delete")
"""The operations of a team's work: a member may cancel and retry these, for its team."""


def may_follow_up(principal: Principal, op: dict[str, Any]) -> None:
    """A member's token cancels or retries only its team's job operations (403 otherwise)."""
    if principal.team is None:
        return
    params = op.get("params") or {}
    if op.get("kind") not in JOB_KINDS:
        raise ApiError(403, "forbidden", f"token {principal.name!r} is a member of team "
                                         f"{principal.team}: it changes only its team's work, "
                                         f"and operation {op.get('id')} ({op.get('kind')}) is "
                                         "not a job's", {"operation_id": op.get("id")})
    may_change(principal, str(params.get("name")), params.get("namespace"))
