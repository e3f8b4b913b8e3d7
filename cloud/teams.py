"""Task governance through SageMaker: a team's compute quota and the cluster's scheduler
config (CreateComputeQuota, CreateClusterSchedulerConfig and their Describe, List, Update and
Delete), and what the task-governance add-on makes of them on the cluster (the team's
namespace and Kueue queues).

What AWS does that we rely on (the sandbox plays it, sandbox/gaps/sagemaker_governance.py):
- both are asynchronous: Creating → Created, Updating → Updated, Deleting → gone; an Update
  names the `TargetVersion` it changes (a stale one is ConflictException) and answers the new
  version, so an update is exactly one version step and a re-run can tell it went through;
- neither call takes a client token: a create is adopted by its name on the cluster (one
  scheduler config per cluster, one quota per team per cluster) and its tags say it is hypd's;
- a quota's instance types must be the cluster's (ValidationException otherwise);
- the add-on makes, per team, namespace `hyperpod-ns-<team>` with LocalQueue
  `hyperpod-ns-<team>-localqueue` and ClusterQueue `hyperpod-ns-<team>-clusterqueue`
  (vocabulary/teams.py); hypd only reads them.

A team as hypd asks it (`Team`) maps onto ComputeQuotaConfig: `lend_idle` and
`borrow_limit_percent` are ResourceSharingConfig's Strategy (LendAndBorrow, Lend when the
limit is 0, DontLend) and BorrowLimit; `may_preempt` is PreemptTeamTasks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from botocore.exceptions import ClientError

from cloud import aws, kube
from cloud.errors import Refusal
from vocabulary import teams as words

TEAM_TAG = "hypd:team"
KUEUE_VERSIONS = ("kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2")
"""The versions of Kueue's API a ClusterQueue is read in (the first served wins)."""


class NoSuchTeam(Refusal):
    default_code = "not_found"


def scheduler_name(cluster: str) -> str:
    """The scheduler config's name: one per cluster, so the cluster's name says which."""
    return f"hypd-{cluster}"


@dataclass(frozen=True)
class Team:
    """A team's quota as asked (a create's body; an update applied to what is there)."""

    name: str
    quota: tuple[tuple[str, int], ...]
    """(instance type, count) pairs, in the order given"""
    borrow_limit_percent: int
    lend_idle: bool
    may_preempt: bool
    fair_share_weight: int

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Team:
        return cls(name=params["name"],
                   quota=tuple((q["instance_type"], int(q["count"])) for q in params["quota"]),
                   borrow_limit_percent=int(params["borrow_limit_percent"]),
                   lend_idle=bool(params["lend_idle"]), may_preempt=bool(params["may_preempt"]),
                   fair_share_weight=int(params["fair_share_weight"]))

    def params(self) -> dict[str, Any]:
        found = asdict(self)
        found["quota"] = [{"instance_type": t, "count": c} for t, c in self.quota]
        return found

    def config(self) -> dict[str, Any]:
        """ComputeQuotaConfig."""
        if not self.lend_idle:
            sharing: dict[str, Any] = {"Strategy": words.DONT_LEND}
        elif self.borrow_limit_percent == 0:
            sharing = {"Strategy": words.LEND}
        else:
            sharing = {"Strategy": words.LEND_AND_BORROW,
                       "BorrowLimit": self.borrow_limit_percent}
        return {"ComputeQuotaResources": [{"InstanceType": t, "Count": c}
                                          for t, c in self.quota],
                "ResourceSharingConfig": sharing,
                "PreemptTeamTasks": words.PREEMPT if self.may_preempt else words.NEVER_PREEMPT}

    def target(self) -> dict[str, Any]:
        return {"TeamName": self.name, "FairShareWeight": self.fair_share_weight}


def team_name_of(quota: Mapping[str, Any]) -> str:
    """The team a quota (a List answer's summary or a Describe answer) is for."""
    return (quota.get("ComputeQuotaTarget") or {}).get("TeamName") or quota.get("Name") or ""


def team_of(quota: Mapping[str, Any]) -> Team:
    """The team as its quota (DescribeComputeQuota's answer) says it."""
    config = quota.get("ComputeQuotaConfig") or {}
    sharing = config.get("ResourceSharingConfig") or {}
    strategy = sharing.get("Strategy") or words.LEND_AND_BORROW
    target = quota.get("ComputeQuotaTarget") or {}
    return Team(name=team_name_of(quota),
                quota=tuple((r["InstanceType"], int(r.get("Count") or 0))
                            for r in config.get("ComputeQuotaResources") or ()),
                borrow_limit_percent=int(sharing.get("BorrowLimit") or 0)
                if strategy == words.LEND_AND_BORROW else 0,
                lend_idle=strategy != words.DONT_LEND,
                may_preempt=config.get("PreemptTeamTasks") != words.NEVER_PREEMPT,
                fair_share_weight=int(target.get("FairShareWeight") or 0))


@dataclass(frozen=True)
class Scheduler:
    """The cluster's scheduler config as asked."""

    priority_classes: tuple[tuple[str, int], ...]
    fair_share: bool

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Scheduler:
        return cls(priority_classes=tuple((p["name"], int(p["weight"]))
                                          for p in params["priority_classes"]),
                   fair_share=bool(params["fair_share"]))

    def params(self) -> dict[str, Any]:
        return {"priority_classes": [{"name": n, "weight": w} for n, w in self.priority_classes],
                "fair_share": self.fair_share}

    def config(self) -> dict[str, Any]:
        return {"PriorityClasses": [{"Name": n, "Weight": w} for n, w in self.priority_classes],
                "FairShare": words.ENABLED if self.fair_share else words.DISABLED}


def scheduler_of(described: Mapping[str, Any]) -> Scheduler:
    config = described.get("SchedulerConfig") or {}
    return Scheduler(priority_classes=tuple((p["Name"], int(p["Weight"]))
                                            for p in config.get("PriorityClasses") or ()),
                     fair_share=config.get("FairShare") != words.DISABLED)


# -- SageMaker -----------------------------------------------------------------------------------

def _pages(call: Any, key: str, **kwargs: Any) -> list[dict[str, Any]]:
    found, token = [], None
    while True:
        reply = call(**kwargs, **({"NextToken": token} if token else {}))
        found += reply.get(key) or []
        token = reply.get("NextToken")
        if not token:
            return found


def quotas(sm: Any, cluster_arn: str) -> list[dict[str, Any]]:
    """The cluster's compute quotas (summaries), a Deleting one included."""
    return _pages(sm.list_compute_quotas, "ComputeQuotaSummaries", ClusterArn=cluster_arn)


def _described(call: Any, **ident: Any) -> dict[str, Any] | None:
    try:
        return dict(call(**ident))
    except ClientError as exc:
        if aws.is_not_found(exc) or aws.error_code(exc) == "ResourceNotFound":
            return None
        raise


def describe_quota(sm: Any, quota_id: str) -> dict[str, Any] | None:
    return _described(sm.describe_compute_quota, ComputeQuotaId=quota_id)


def find_quota(sm: Any, cluster_arn: str, team: str) -> dict[str, Any] | None:
    """The team's quota on the cluster (Describe's answer), whoever made it; None if none."""
    for summary in quotas(sm, cluster_arn):
        if summary.get("Name") == team or (summary.get("ComputeQuotaTarget") or {}).get(
                "TeamName") == team:
            return describe_quota(sm, summary["ComputeQuotaId"])
    return None


def find_scheduler(sm: Any, cluster_arn: str) -> dict[str, Any] | None:
    """The cluster's scheduler config (Describe's answer), whoever made it; None if none."""
    found = _pages(sm.list_cluster_scheduler_configs, "ClusterSchedulerConfigSummaries",
                   ClusterArn=cluster_arn)
    if not found:
        return None
    return _described(sm.describe_cluster_scheduler_config,
                      ClusterSchedulerConfigId=found[0]["ClusterSchedulerConfigId"])


def ours(sm: Any, arn: str, cluster: str) -> bool:
    """True when the quota or config carries hypd's tags for the cluster."""
    tags = {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=arn).get("Tags") or ()}
    return tags.get(aws.MANAGED_BY) == aws.MANAGED_BY_VALUE and tags.get(aws.CLUSTER_TAG) == cluster


def create_quota(sm: Any, cluster: str, cluster_arn: str, team: Team) -> dict[str, Any]:
    return dict(sm.create_compute_quota(
        Name=team.name, ClusterArn=cluster_arn, ComputeQuotaConfig=team.config(),
        ComputeQuotaTarget=team.target(), ActivationState=words.ENABLED,
        Description=f"hypd team {team.name} on cluster {cluster}",
        Tags=aws.tags_for(aws.CLUSTER_TAG, cluster, team=team.name)))


def update_quota(sm: Any, quota_id: str, version: int, team: Team) -> dict[str, Any]:
    return dict(sm.update_compute_quota(ComputeQuotaId=quota_id, TargetVersion=version,
                                        ComputeQuotaConfig=team.config(),
                                        ComputeQuotaTarget=team.target()))


def delete_quota(sm: Any, quota_id: str) -> None:
    sm.delete_compute_quota(ComputeQuotaId=quota_id)


def create_scheduler(sm: Any, cluster: str, cluster_arn: str, wanted: Scheduler
                     ) -> dict[str, Any]:
    return dict(sm.create_cluster_scheduler_config(
        Name=scheduler_name(cluster), ClusterArn=cluster_arn, SchedulerConfig=wanted.config(),
        Description=f"hypd scheduler config of cluster {cluster}",
        Tags=aws.tags_for(aws.CLUSTER_TAG, cluster)))


def update_scheduler(sm: Any, config_id: str, version: int, wanted: Scheduler
                     ) -> dict[str, Any]:
    return dict(sm.update_cluster_scheduler_config(
        ClusterSchedulerConfigId=config_id, TargetVersion=version,
        SchedulerConfig=wanted.config()))


def delete_scheduler(sm: Any, config_id: str) -> None:
    sm.delete_cluster_scheduler_config(ClusterSchedulerConfigId=config_id)


# -- the cluster ---------------------------------------------------------------------------------

def _got(api: Any, kind: str, name: str, namespace: str | None = None
         ) -> dict[str, Any] | None:
    """A Kueue object by name, in the first version that has it, or None."""
    for version in KUEUE_VERSIONS:
        found = kube.get_object(api, version, kind, name, namespace)
        if found is not None:
            return found
    return None


def cluster_queue(api: Any, team: str) -> dict[str, Any] | None:
    """The team's ClusterQueue as the add-on made it, or None (not there yet, or Kueue not
    served)."""
    return cluster_queue_named(api, words.cluster_queue(team))


def cluster_queue_named(api: Any, name: str) -> dict[str, Any] | None:
    """A ClusterQueue by its own name (a Workload's admission names it)."""
    return _got(api, "ClusterQueue", name)


def local_queue(api: Any, team: str) -> dict[str, Any] | None:
    return _got(api, "LocalQueue", words.local_queue(team), words.namespace(team))


def _listed(api: Any, kind: str) -> list[dict[str, Any]]:
    """Every object of a Kueue kind in the cluster, in the first version that has any."""
    for version in KUEUE_VERSIONS:
        found = kube.list_objects(api, version, kind)
        if found:
            return found
    return []


def workloads(api: Any) -> list[dict[str, Any]]:
    """Kueue's Workloads in every namespace (a team's are in `hyperpod-ns-<team>`)."""
    return _listed(api, "Workload")


def resource_flavors(api: Any) -> list[dict[str, Any]]:
    """Kueue's ResourceFlavors: the add-on makes one per instance type of the quotas."""
    return _listed(api, "ResourceFlavor")


def queue_view(queue: Mapping[str, Any] | None) -> dict[str, Any]:
    """What Kueue says of the team's ClusterQueue: admitted and pending workloads, and per
    flavor and resource what is used and borrowed."""
    if queue is None:
        return {"present": False, "admitted_workloads": None, "pending_workloads": None,
                "reserving_workloads": None, "usage": [],
                "message": "the task-governance add-on has not made this team's ClusterQueue "
                           "yet"}
    status = queue.get("status") or {}
    usage = [{"flavor": f.get("name"), "resource": r.get("name"), "total": str(r.get("total")),
              "borrowed": str(r.get("borrowed") or 0)}
             for f in status.get("flavorsUsage") or () for r in f.get("resources") or ()]
    active = next((c for c in status.get("conditions") or () if c.get("type") == "Active"), {})
    return {"present": True, "admitted_workloads": status.get("admittedWorkloads", 0),
            "pending_workloads": status.get("pendingWorkloads", 0),
            "reserving_workloads": status.get("reservingWorkloads", 0), "usage": usage,
            "message": active.get("message")}
