"""Teams and the scheduler config as REST, MCP and the dashboard show them: SageMaker's
compute quotas and scheduler config of the cluster now (their state, version and settings),
each team's ClusterQueue as Kueue reports it (admitted and pending work, usage — or plainly
that the add-on has not made it yet), and each one's newest operation. A team whose create
runs, or ended, without a quota reads as `creating` or `failed` from its operation, as a Dev
space does.

What a change needs of the cluster is checked here too (`governed`): a HyperPod cluster
orchestrated by EKS (412 otherwise) and, for a change, the task-governance add-on ACTIVE
(412: turn the feature on first)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app import auth, context
from app.errors import ApiError
from app.readmodels.clusters import ClusterRef
from app.readmodels.kubeapi import talking_to
from cloud import addons, aws, dependencies, dependents, eks, hyperpod, teams
from cloud.dependents import Dependent
from cloud.errors import Invalid
from tasks import team_ledger
from tasks.teams import SCHEDULER_DELETE, SCHEDULER_PUT, TEAM_CREATE
from vocabulary import teams as words
from vocabulary.operations import OpStatus

FEATURE = "task_governance"
CREATING = "creating"
FAILED = "failed"


@dataclass(frozen=True)
class Governed:
    """A cluster task governance may act on: its SageMaker client and HyperPod ARN, the
    instance types of its groups."""

    ref: ClusterRef
    sm: Any
    arn: str
    instance_types: frozenset[str]


def _iso(value: Any) -> str | None:
    return value.isoformat() if hasattr(value, "isoformat") else (str(value) if value else None)


def governed(ref: ClusterRef, changing: bool = False) -> Governed:
    """The cluster, if task governance may act on it; 412 naming what is missing."""
    sm = aws.client("sagemaker", region=ref.region)
    found = hyperpod.described(sm, ref.hyperpod_name)
    if found is None:
        raise ApiError(412, "precondition_failed",
                       f"cluster {ref.name} has no HyperPod cluster yet: task governance "
                       "shares a HyperPod cluster's instances")
    if not ((found.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn"):
        raise ApiError(412, "precondition_failed",
                       f"HyperPod cluster {ref.hyperpod_name} is not orchestrated by EKS: "
                       "task governance needs an EKS-orchestrated cluster")
    if changing:
        addon = next(d.name for d in dependencies.entries(FEATURE) if d.kind == "addon")
        state = addons.addon_state(aws.client("eks", region=ref.region), ref.name, addon)
        if (state or {}).get("status") != addons.ADDON_ACTIVE:
            raise ApiError(412, "precondition_failed",
                           f"cluster {ref.name} does not run task governance (add-on {addon} "
                           f"is {(state or {}).get('status') or 'not installed'}): turn the "
                           f"{FEATURE} feature on first (PATCH …/features)")
    types: set[str] = set()
    for group in found.get("InstanceGroups") or ():
        types.add(group.get("InstanceType"))
        types.update((group.get("InstanceRequirements") or {}).get("InstanceTypes") or ())
    return Governed(ref, sm, found["ClusterArn"], frozenset(t for t in types if t))


def check_types(gov: Governed, quota: list[dict[str, Any]]) -> None:
    """Every instance type of a quota is one of the cluster's (422 naming the entry)."""
    for i, entry in enumerate(quota):
        if entry["instance_type"] not in gov.instance_types:
            raise Invalid(f"cluster {gov.ref.name} has no instance group of type "
                          f"{entry['instance_type']} (its groups have "
                          f"{', '.join(sorted(gov.instance_types)) or 'none'})",
                          field=f"quota.{i}.instance_type")


# -- the scheduler config ------------------------------------------------------------------------

def scheduler_view(gov: Governed, found: dict[str, Any]) -> dict[str, Any]:
    asked = teams.scheduler_of(found)
    op = context.engine().store.newest_by_child(
        f"cluster/{gov.ref.name}", (SCHEDULER_PUT.name, SCHEDULER_DELETE.name)).get("scheduler")
    return {"cluster": gov.ref.name, "name": found["Name"],
            "id": found["ClusterSchedulerConfigId"], "arn": found["ClusterSchedulerConfigArn"],
            "status": found["Status"], "version": found["ClusterSchedulerConfigVersion"],
            **asked.params(),
            "managed": teams.ours(gov.sm, found["ClusterSchedulerConfigArn"], gov.ref.name),
            "created_at": _iso(found.get("CreationTime")),
            "modified_at": _iso(found.get("LastModifiedTime")),
            "operation_id": op["id"] if op else None}


def scheduler(gov: Governed) -> dict[str, Any] | None:
    found = teams.find_scheduler(gov.sm, gov.arn)
    return None if found is None else scheduler_view(gov, found)


def quota_holders(gov: Governed) -> list[Dependent]:
    """The teams with a quota on the cluster: a scheduler config's delete breaks them (their
    priorities and fair share go)."""
    return [Dependent("team", teams.team_name_of(q),
                      f"its compute quota {q['ComputeQuotaId']} is {q['Status']}")
            for q in teams.quotas(gov.sm, gov.arn) if q.get("Status") != words.DELETING]


# -- teams ---------------------------------------------------------------------------------------

def operations(cluster: str) -> dict[str, dict[str, Any]]:
    return context.engine().store.newest_by_child(f"cluster/{cluster}/team")


def _names(team: str) -> dict[str, Any]:
    """What follows from the team's name: its namespace and queues (the add-on's names) and
    its members (the tokens naming it, app/auth.py)."""
    return {"namespace": words.namespace(team), "local_queue": words.local_queue(team),
            "cluster_queue": words.cluster_queue(team), "members": auth.members(team)}


def team_view(gov: Governed, quota: dict[str, Any], op: dict[str, Any] | None,
              api: Any | None = None) -> dict[str, Any]:
    asked = teams.team_of(quota)
    return {"name": asked.name, "cluster": gov.ref.name, "state": quota["Status"],
            "message": quota.get("FailureReason"), **asked.params(),
            "compute_quota": {"id": quota["ComputeQuotaId"], "arn": quota["ComputeQuotaArn"],
                              "status": quota["Status"],
                              "version": quota["ComputeQuotaVersion"],
                              "activation": quota.get("ActivationState")},
            "managed": teams.ours(gov.sm, quota["ComputeQuotaArn"], gov.ref.name),
            **_names(asked.name),
            "queue": teams.queue_view(teams.cluster_queue(api, asked.name))
            if api is not None else None,
            "operation_id": op["id"] if op else None}


def _unmade(op: dict[str, Any] | None) -> bool:
    return (op is not None and op["kind"] == TEAM_CREATE.name
            and OpStatus(op["status"]) != OpStatus.SUCCEEDED)


def from_operation(cluster: str, op: dict[str, Any]) -> dict[str, Any]:
    """A team its create has not made a quota for: `creating`, or `failed` once it ended."""
    params = op["params"]
    status = OpStatus(op["status"])
    state, message = CREATING, f"being created (operation {op['id']})"
    if status.is_finished:
        error = (op.get("error") or {}).get("message")
        state, message = FAILED, (f"its create {status.value} (operation {op['id']})"
                                  + (f": {error}" if error else ""))
    return {"name": params["name"], "cluster": cluster, "state": state, "message": message,
            "quota": params.get("quota") or [],
            "borrow_limit_percent": params.get("borrow_limit_percent"),
            "lend_idle": params.get("lend_idle"), "may_preempt": params.get("may_preempt"),
            "fair_share_weight": params.get("fair_share_weight"),
            "compute_quota": {"id": None, "arn": None, "status": None, "version": None,
                              "activation": None},
            "managed": True, **_names(params["name"]), "queue": None,
            "operation_id": op["id"]}


def listing(gov: Governed) -> list[dict[str, Any]]:
    """Every team of the cluster with its queue (one ClusterQueue read each: a page wants
    what was admitted and what waits at a glance)."""
    ops = operations(gov.ref.name)
    found: dict[str, dict[str, Any]] = {}
    api = cluster_api(gov.ref)
    summaries = teams.quotas(gov.sm, gov.arn)
    if summaries:  # teams made before the ledger kept its list are found here
        team_ledger.mark(context.redis_conn(), gov.ref.name)
    for summary in summaries:
        quota = teams.describe_quota(gov.sm, summary["ComputeQuotaId"])
        if quota is not None:
            with talking_to(gov.ref):
                view = team_view(gov, quota, ops.get(summary["Name"]), api)
            found[view["name"]] = view
    for name, op in ops.items():
        if name not in found and _unmade(op):
            found[name] = from_operation(gov.ref.name, op)
    return [found[n] for n in sorted(found)]


def cluster_api(ref: ClusterRef) -> Any | None:
    """The cluster's Kubernetes API when its EKS cluster is ACTIVE, else None."""
    if (ref.eks or {}).get("status") != eks.ACTIVE:
        return None
    with talking_to(ref):
        return eks.api_client(ref.name, ref.region)


def one(gov: Governed, name: str) -> dict[str, Any]:
    op = operations(gov.ref.name).get(name)
    quota = teams.find_quota(gov.sm, gov.arn, name)
    if quota is not None:
        api = cluster_api(gov.ref)
        with talking_to(gov.ref):
            return team_view(gov, quota, op, api)
    if _unmade(op):
        return from_operation(gov.ref.name, op)
    raise ApiError(404, "not_found", f"cluster {gov.ref.name} has no team {name!r}")


def quota_of(gov: Governed, name: str) -> dict[str, Any]:
    quota = teams.find_quota(gov.sm, gov.arn, name)
    if quota is None:
        raise ApiError(404, "not_found", f"cluster {gov.ref.name} has no team {name!r}")
    return quota


def running_work(gov: Governed, name: str) -> list[Dependent]:
    api = cluster_api(gov.ref)
    if api is None:
        return []
    with talking_to(gov.ref):
        return dependents.team_work(api, words.namespace(name))

