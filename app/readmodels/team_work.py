"""Which team a piece of work — a training job or a Dev space — runs for, and who may change
it (task governance's "work goes through the team's queue").

Work runs for a team when Kueue admits it through the team's LocalQueue: it is made in the
team's namespace (`hyperpod-ns-<team>`, where the add-on puts the queue) labelled with the
queue, and with the priority class the request names. So:
- a team member's work runs for the member's team; naming another is `forbidden`;
- an operator outside any team names the team;
- on a cluster whose instances are shared between teams all work runs for one: work
  outside the queues would take what the quotas promise to the teams (422 on `team`);
- the team must have a quota on the cluster, the namespace (if named) must be the team's,
  and the priority a class of the cluster's scheduler config (422 on the field, naming what
  there is);
- a member changes only its team's work (`may_change`): another team's job or space, or one
  outside any team, is `forbidden` to a member's token — and so cancels or retries only the
  operations of its team's jobs and spaces (`may_follow_up`).
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
    """Where work goes: its team (None: no team), priority class and namespace."""

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


def place(ref: ClusterRef, body: dict[str, Any], principal: Principal,
          default_namespace: str = storage.DEFAULT_NAMESPACE) -> Placement:
    """The placement of submitted work (a job's or a space's body: `team`, `priority`, a
    job's `namespace`), or the refusal (see the module docstring). Work outside any team goes
    to the body's namespace, else `default_namespace`."""
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
                          f"({', '.join(holders)}): name the team the work runs for (work "
                          "outside their queues would take what their quotas promise)",
                          field="team")
        return Placement(None, None, body.get("namespace") or default_namespace)
    gov = teams_readmodel.governed(ref)
    quota = teams.find_quota(gov.sm, gov.arn, team)
    if quota is None or quota.get("Status") == words.DELETING:
        holders = _team_names(ref)
        raise Invalid(f"cluster {ref.name} has no team {team!r} (its teams: "
                      f"{', '.join(holders) or 'none'})", field="team")
    namespace = words.namespace(team)
    if body.get("namespace") not in (None, namespace):
        raise Invalid(f"team {team}'s work runs in its namespace {namespace}, where its queue "
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


def may_change(principal: Principal, name: str, namespace: str | None,
               what: str = "job") -> None:
    """A member's token changes only its team's work (403 otherwise): `what` (a job, a
    space) `name`, in `namespace`."""
    if principal.team is None:
        return
    team = words.team_of_namespace(namespace)
    if team != principal.team:
        whose = f"team {team}'s work" if team else "not a team's work"
        raise ApiError(403, "forbidden", f"token {principal.name!r} is a member of team "
                                         f"{principal.team}: it changes only its team's work, "
                                         f"and {what} {name} is {whose}", {what: name})


WORK_KINDS = {"job": ("job.create", "job.delete"),
              "space": ("space.create", "space.update", "space.stop", "space.start",
                        "space.delete")}
"""The operations of a team's work, by what they change: a member may cancel and retry
these, for its team (each records the work's name and namespace)."""


def may_follow_up(principal: Principal, op: dict[str, Any]) -> None:
    """A member's token cancels or retries only its team's work's operations (403
    otherwise)."""
    if principal.team is None:
        return
    params = op.get("params") or {}
    what = next((w for w, kinds in WORK_KINDS.items() if op.get("kind") in kinds), None)
    if what is None:
        raise ApiError(403, "forbidden", f"token {principal.name!r} is a member of team "
                                         f"{principal.team}: it changes only its team's work, "
                                         f"and operation {op.get('id')} ({op.get('kind')}) is "
                                         "not a job's or a space's",
                       {"operation_id": op.get("id")})
    may_change(principal, str(params.get("name")), params.get("namespace"), what)
