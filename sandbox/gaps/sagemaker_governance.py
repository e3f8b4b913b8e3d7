"""SageMaker HyperPod task governance: compute quotas and cluster scheduler configs (moto 5.2.5
has none of these calls).

CreateComputeQuota, DescribeComputeQuota, ListComputeQuotas, UpdateComputeQuota,
DeleteComputeQuota and the same five for ClusterSchedulerConfig, shaped by botocore's model
(the gap path checks each request against it: names, the team-name pattern, enums such as
Strategy and PreemptTeamTasks, ranges such as FairShareWeight 0-100, counts ≥ 0, at most 15
resource configs and 10 priority classes), plus ListTags of their ARNs (sagemaker.py's
ListTags hands them here). State lives on the local AWS (`GOVERNANCE`); timed changes are
scheduled after this module's lock is released.

Taken from botocore's model and AWS's API reference:
- ids are 12 lower-case letters and digits; ARNs are
  `arn:aws:sagemaker:<region>:<account>:compute-quota/<id>` and
  `…:cluster-scheduler-config/<id>`; `ClusterArn` names a HyperPod cluster
  (`…:cluster/<12 chars>`); task governance is for EKS-orchestrated clusters (the
  CloudFormation/CDK reference of AWS::SageMaker::ComputeQuota);
- versions start at 1; an Update names the `TargetVersion` and answers the new version;
  Describe may ask for an earlier version; `Status` is one of SchedulerResourceStatus;
- the errors each call may answer: Create — ConflictException, ResourceLimitExceeded;
  Update — ConflictException, ResourceNotFound, ResourceLimitExceeded; Describe and Delete —
  ResourceNotFound (and any call ValidationException);
- the documented defaults, which Describe shows: ResourceSharingConfig Strategy
  `LendAndBorrow` with BorrowLimit 50, PreemptTeamTasks `LowerPriority`, FairShareWeight 0,
  ActivationState `Enabled`, SchedulerConfig FairShare `Enabled`; BorrowLimit is "1 - 500
  percent" (the model allows 0-10000: the sandbox refuses outside 1-500).

Inferred (not documented; what the sandbox plays):
- a ClusterArn the account and region do not have, a cluster that is not EKS-orchestrated,
  or one Deleting or Failed, is `ValidationException` (Create's model lists no
  ResourceNotFound);
- a quota's instance types (ComputeQuotaResources and AbsoluteBorrowLimits) must be types of
  the cluster's instance groups, each at most once per list, and each entry must give an
  amount (Count, Accelerators, VCpu, MemoryInGiB or AcceleratorPartition) —
  `ValidationException`; the sandbox does not check that the quotas of all teams fit in the
  cluster's instances;
- one quota per team per cluster, and one quota name per cluster, one scheduler config per
  cluster: `ConflictException` (the model's error for Create); a Deleting one still counts
  until it is gone;
- an Update naming a `TargetVersion` other than the current one, or made while the resource
  is Creating, Updating or Deleting, is `ConflictException`; an Update replaces the members it
  gives and keeps the others, and may move a quota to a team only if that team has no quota
  on the cluster; a Describe of a version never made is `ResourceNotFound`; the priority
  classes of a scheduler config must have distinct names (`ValidationException`);
- timing: `Creating` → `Created` and `Updating` → `Updated` after GOVERNANCE_CHANGING_S,
  `Deleting` → gone (ResourceNotFound) after GOVERNANCE_DELETING_S simulated seconds — a
  stand-in figure (AWS documents none); the sandbox never shows `Deleted` or the *Failed
  states; a Delete of a resource already Deleting answers again and changes nothing;
- deleting the HyperPod cluster leaves its quotas and scheduler config in the sandbox (what
  AWS does then is not known here);
- lists answer newest first unless SortOrder says Ascending, filtered by ClusterArn,
  NameContains (case-insensitive), Status, CreatedAfter/CreatedBefore, and page with
  NextToken like the other gaps.
"""

from __future__ import annotations

import copy
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sandbox.gaps import AwsError, GapContext, GapState, answers
from sandbox.gaps.sagemaker_common import validation
from sandbox.gaps.sagemaker_model import parse_time
from sandbox.gaps.sagemaker_state import Cluster, ClusterStatus, hyperpod, mint_cluster_id

SERVICE = "sagemaker"
STATE_KEY = "task_governance"
GOVERNANCE_CHANGING_S = 30.0  # stand-in: Creating → Created, Updating → Updated
GOVERNANCE_DELETING_S = 30.0  # stand-in: Deleting → gone
ARN_RE = re.compile(
    r"^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:\d{12}:(compute-quota|cluster-scheduler-config)"
    r"/[a-z0-9]{12}$")
BUSY = ("Creating", "Updating", "Deleting")
DEFAULT_SHARING = {"Strategy": "LendAndBorrow", "BorrowLimit": 50}
AMOUNTS = ("Count", "Accelerators", "VCpu", "MemoryInGiB", "AcceleratorPartition")


@dataclass(frozen=True)
class Kind:
    """What differs between compute quotas and scheduler configs."""

    noun: str  # in messages
    operation: str  # as the calls spell it: Describe<operation>, List<plural>, <operation>Id
    plural: str
    arn_type: str
    summary_keys: tuple[str, ...]

    @property
    def id_key(self) -> str:
        return f"{self.operation}Id"

    @property
    def arn_key(self) -> str:
        return f"{self.operation}Arn"

    @property
    def version_key(self) -> str:
        return f"{self.operation}Version"

    @property
    def summaries_key(self) -> str:
        return f"{self.operation}Summaries"


QUOTA = Kind("Compute quota", "ComputeQuota", "ComputeQuotas", "compute-quota",
             ("ComputeQuotaArn", "ComputeQuotaId", "Name", "ComputeQuotaVersion", "Status",
              "ClusterArn", "ComputeQuotaConfig", "ComputeQuotaTarget", "ActivationState",
              "CreationTime", "LastModifiedTime"))
SCHEDULER = Kind("Cluster scheduler config", "ClusterSchedulerConfig",
                 "ClusterSchedulerConfigs", "cluster-scheduler-config",
                 ("ClusterSchedulerConfigArn", "ClusterSchedulerConfigId", "Name",
                  "ClusterSchedulerConfigVersion", "CreationTime", "LastModifiedTime",
                  "Status", "ClusterArn"))


@dataclass
class Governance:
    lock: threading.Lock = field(default_factory=threading.Lock)
    # id -> {"account", "region", "current": the Describe answer, "versions": {n: answer}}
    quotas: dict[str, dict[str, Any]] = field(default_factory=dict)
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    tags: dict[str, list[dict[str, str]]] = field(default_factory=dict)

    def book(self, kind: Kind) -> dict[str, dict[str, Any]]:
        return self.quotas if kind is QUOTA else self.configs


GOVERNANCE: GapState[Governance] = GapState(STATE_KEY, lambda app: Governance())


def _conflict(message: str) -> AwsError:
    return AwsError("ConflictException", message)


def _not_found(kind: Kind, ident: str) -> AwsError:
    return AwsError("ResourceNotFound", f"{kind.noun} with id {ident} not found.")


def _found(gov: Governance, kind: Kind, ctx: GapContext, ident: str) -> dict[str, Any]:
    """The record of that id in the caller's account and region (hold the lock)."""
    record = gov.book(kind).get(ident)
    if record is None or (record["account"], record["region"]) != (ctx.call.account,
                                                                   ctx.call.region):
        raise _not_found(kind, ident)
    return record


def _cluster(ctx: GapContext, arn: str) -> tuple[str, set[str]]:
    """The HyperPod cluster's ARN and its instance groups' types, if governance may use it."""
    hp = hyperpod(ctx)
    with hp.lock:
        cluster: Cluster | None = hp.find(ctx.call.account, ctx.call.region, arn)
        if cluster is None:
            raise validation(f"Cluster {arn} does not exist.")
        if cluster.eks_arn is None:
            raise validation(f"Cluster {arn} is not orchestrated by Amazon EKS: task "
                             "governance is only for EKS-orchestrated clusters.")
        if cluster.status in (ClusterStatus.DELETING, ClusterStatus.FAILED):
            raise validation(f"Cluster {arn} is {cluster.status.value}.")
        types: set[str] = set()
        for group in cluster.groups.values():
            types.add(group.instance_type)
            requirements = group.spec.get("InstanceRequirements") or {}
            types.update(requirements.get("InstanceTypes") or ())
        return cluster.arn, types


def _check_resources(config: dict[str, Any], types: set[str], arn: str) -> None:
    sharing = config.get("ResourceSharingConfig") or {}
    for key, entries in (("ComputeQuotaResources", config.get("ComputeQuotaResources")),
                         ("AbsoluteBorrowLimits", sharing.get("AbsoluteBorrowLimits"))):
        seen: set[str] = set()
        for entry in entries or ():
            kind = entry["InstanceType"]
            if kind not in types:
                raise validation(f"Instance type {kind} in {key} is not an instance type of "
                                 f"cluster {arn} (its instance groups have "
                                 f"{', '.join(sorted(types)) or 'none'}).")
            if kind in seen:
                raise validation(f"Instance type {kind} is given more than once in {key}.")
            seen.add(kind)
            if not any(entry.get(a) is not None for a in AMOUNTS):
                raise validation(f"{key} for {kind} must give Count, Accelerators, VCpu, "
                                 "MemoryInGiB or AcceleratorPartition.")
    limit = sharing.get("BorrowLimit")
    if limit is not None and not 1 <= limit <= 500:
        raise validation(f"BorrowLimit {limit} is not valid: it is a percentage of idle "
                         "compute from 1 to 500.")


def _quota_config(given: dict[str, Any]) -> dict[str, Any]:
    """The ComputeQuotaConfig as Describe shows it: the documented defaults filled in."""
    config = copy.deepcopy(given)
    sharing = config.setdefault("ResourceSharingConfig", dict(DEFAULT_SHARING))
    if sharing.get("Strategy") == "LendAndBorrow":
        sharing.setdefault("BorrowLimit", DEFAULT_SHARING["BorrowLimit"])
    config.setdefault("PreemptTeamTasks", "LowerPriority")
    config.setdefault("ComputeQuotaResources", [])
    return config


def _target(given: dict[str, Any]) -> dict[str, Any]:
    return {"TeamName": given["TeamName"], "FairShareWeight": given.get("FairShareWeight", 0)}


def _scheduler_config(given: dict[str, Any]) -> dict[str, Any]:
    config = copy.deepcopy(given)
    config.setdefault("FairShare", "Enabled")
    config.setdefault("PriorityClasses", [])
    names = [c["Name"] for c in config["PriorityClasses"]]
    if len(set(names)) != len(names):
        raise validation("PriorityClasses names must be unique.")
    return config


def _live(gov: Governance, kind: Kind, ctx: GapContext, cluster_arn: str
          ) -> list[dict[str, Any]]:
    """The records of this kind on the cluster (hold the lock)."""
    return [r["current"] for r in gov.book(kind).values()
            if (r["account"], r["region"]) == (ctx.call.account, ctx.call.region)
            and r["current"]["ClusterArn"] == cluster_arn]


def _change(ctx: GapContext, kind: Kind, ident: str, frm: str, to: str | None,
            seconds: float) -> None:
    """Schedule `frm` → `to` (None: gone) for the record, if it is still `frm` then."""
    gov = GOVERNANCE.of(ctx)

    def change() -> None:
        with gov.lock:
            record = gov.book(kind).get(ident)
            if record is None or record["current"]["Status"] != frm:
                return
            if to is None:
                del gov.book(kind)[ident]
                gov.tags.pop(record["current"][kind.arn_key], None)
                return
            record["current"]["Status"] = to
            record["versions"][record["current"][kind.version_key]]["Status"] = to

    def change_and_sync() -> None:
        change()
        settle_kueue(ctx.app)

    ctx.app.transitions.timeline.after(seconds, change_and_sync)


def settle_kueue(app: Any) -> None:
    """Let the task-governance add-on's controller catch up (`governance_addon`: a timed
    change due at once, run once this one has let go of its locks)."""
    from sandbox.gaps.governance_addon import sync

    app.transitions.timeline.after(0, lambda: sync(app))


def _team_taken(others: list[dict[str, Any]], team: str, ident: str | None = None
                ) -> AwsError | None:
    """A ConflictException if another quota of the cluster (not `ident`) is the team's."""
    for other in others:
        if other["ComputeQuotaId"] != ident and other["ComputeQuotaTarget"]["TeamName"] == team:
            return _conflict(f"Team {team} already has a compute quota on cluster "
                             f"{other['ClusterArn']}: {other['ComputeQuotaId']}.")
    return None


def _create(ctx: GapContext, kind: Kind, p: dict[str, Any], body: dict[str, Any],
            clash: Callable[[list[dict[str, Any]]], AwsError | None]) -> dict[str, Any]:
    """Store a new record (body: its kind's own members) unless `clash`, given the others of
    its kind on the cluster, names a conflict."""
    cluster_arn = body["ClusterArn"]
    gov = GOVERNANCE.of(ctx)
    ident = mint_cluster_id()
    arn = f"arn:aws:sagemaker:{ctx.call.region}:{ctx.call.account}:{kind.arn_type}/{ident}"
    now = datetime.now(UTC)
    current = {kind.arn_key: arn, kind.id_key: ident, "Name": p["Name"],
               kind.version_key: 1, "Status": "Creating", "CreationTime": now,
               "LastModifiedTime": now, **body}
    if p.get("Description") is not None:
        current["Description"] = p["Description"]
    with gov.lock:
        problem = clash(_live(gov, kind, ctx, cluster_arn))
        if problem is not None:
            raise problem
        gov.book(kind)[ident] = {"account": ctx.call.account, "region": ctx.call.region,
                                 "current": current, "versions": {1: copy.deepcopy(current)}}
        gov.tags[arn] = [dict(t) for t in p.get("Tags") or ()]
    _change(ctx, kind, ident, "Creating", "Created", GOVERNANCE_CHANGING_S)
    return {kind.arn_key: arn, kind.id_key: ident}


def _describe(ctx: GapContext, kind: Kind, p: dict[str, Any]) -> dict[str, Any]:
    gov = GOVERNANCE.of(ctx)
    with gov.lock:
        record = _found(gov, kind, ctx, p[kind.id_key])
        version = p.get(kind.version_key)
        if version is None:
            return copy.deepcopy(record["current"])
        if version not in record["versions"]:
            raise AwsError("ResourceNotFound", f"{kind.noun} {p[kind.id_key]} has no version "
                                               f"{version}.")
        return copy.deepcopy(record["versions"][version])


def _list(ctx: GapContext, kind: Kind, p: dict[str, Any]) -> dict[str, Any]:
    gov = GOVERNANCE.of(ctx)
    after, before = parse_time(p.get("CreatedAfter")), parse_time(p.get("CreatedBefore"))
    contains = (p.get("NameContains") or "").lower()
    with gov.lock:
        mine = [copy.deepcopy(r["current"]) for r in gov.book(kind).values()
                if (r["account"], r["region"]) == (ctx.call.account, ctx.call.region)]
    mine = [r for r in mine
            if p.get("ClusterArn") in (None, r["ClusterArn"])
            and p.get("Status") in (None, r["Status"])
            and contains in r["Name"].lower()
            and (after is None or r["CreationTime"] > after)
            and (before is None or r["CreationTime"] < before)]
    by = p.get("SortBy") or "CreationTime"
    mine.sort(key=lambda r: (r[by], r["CreationTime"]),
              reverse=p.get("SortOrder") != "Ascending")
    return ctx.page([{k: r[k] for k in kind.summary_keys if k in r} for r in mine],
                    kind.summaries_key)


def _update(ctx: GapContext, kind: Kind, p: dict[str, Any],
            apply: Callable[[Governance, dict[str, Any]], None]) -> dict[str, Any]:
    """Check the target version and state, let `apply` change the current answer (under
    the lock), then make it the next version, Updating."""
    gov = GOVERNANCE.of(ctx)
    ident = p[kind.id_key]
    with gov.lock:
        record = _found(gov, kind, ctx, ident)
        current = record["current"]
        if p["TargetVersion"] != current[kind.version_key]:
            raise _conflict(f"TargetVersion {p['TargetVersion']} is not the current version "
                            f"{current[kind.version_key]} of {kind.noun.lower()} {ident}.")
        if current["Status"] in BUSY:
            raise _conflict(f"{kind.noun} {ident} cannot be updated while it is "
                            f"{current['Status']}.")
        changed = copy.deepcopy(current)
        apply(gov, changed)
        if p.get("Description") is not None:
            changed["Description"] = p["Description"]
        version = changed[kind.version_key] = current[kind.version_key] + 1
        changed["Status"] = "Updating"
        changed["LastModifiedTime"] = datetime.now(UTC)
        record["current"] = changed
        record["versions"][version] = copy.deepcopy(changed)
    _change(ctx, kind, ident, "Updating", "Updated", GOVERNANCE_CHANGING_S)
    return {kind.arn_key: changed[kind.arn_key], kind.version_key: version}


def _delete(ctx: GapContext, kind: Kind, p: dict[str, Any]) -> dict[str, Any]:
    gov = GOVERNANCE.of(ctx)
    ident = p[kind.id_key]
    with gov.lock:
        current = _found(gov, kind, ctx, ident)["current"]
        started = current["Status"] != "Deleting"
        current["Status"] = "Deleting"
    if started:
        _change(ctx, kind, ident, "Deleting", None, GOVERNANCE_DELETING_S)
    return {}


# --- compute quotas ------------------------------------------------------------------------


@answers(SERVICE, "CreateComputeQuota")
def create_quota(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    cluster_arn, types = _cluster(ctx, p["ClusterArn"])
    _check_resources(p["ComputeQuotaConfig"], types, cluster_arn)
    target = _target(p["ComputeQuotaTarget"])
    body = {"ClusterArn": cluster_arn, "ComputeQuotaConfig": _quota_config(
        p["ComputeQuotaConfig"]), "ComputeQuotaTarget": target,
        "ActivationState": p.get("ActivationState") or "Enabled"}

    def clash(others: list[dict[str, Any]]) -> AwsError | None:
        if any(other["Name"] == p["Name"] for other in others):
            return _conflict(f"A compute quota named {p['Name']} already exists on cluster "
                             f"{cluster_arn}.")
        return _team_taken(others, target["TeamName"])

    return _create(ctx, QUOTA, p, body, clash)


@answers(SERVICE, "UpdateComputeQuota")
def update_quota(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    gov = GOVERNANCE.of(ctx)
    with gov.lock:
        cluster_arn = _found(gov, QUOTA, ctx, p["ComputeQuotaId"])["current"]["ClusterArn"]
    if p.get("ComputeQuotaConfig") is not None:
        cluster_arn, types = _cluster(ctx, cluster_arn)
        _check_resources(p["ComputeQuotaConfig"], types, cluster_arn)

    def apply(gov: Governance, changed: dict[str, Any]) -> None:
        if p.get("ComputeQuotaConfig") is not None:
            changed["ComputeQuotaConfig"] = _quota_config(p["ComputeQuotaConfig"])
        if p.get("ComputeQuotaTarget") is not None:
            target = _target(p["ComputeQuotaTarget"])
            problem = _team_taken(_live(gov, QUOTA, ctx, changed["ClusterArn"]),
                                  target["TeamName"], changed["ComputeQuotaId"])
            if problem is not None:
                raise problem
            changed["ComputeQuotaTarget"] = target
        if p.get("ActivationState") is not None:
            changed["ActivationState"] = p["ActivationState"]

    return _update(ctx, QUOTA, p, apply)


# --- cluster scheduler configs --------------------------------------------------------------


@answers(SERVICE, "CreateClusterSchedulerConfig")
def create_scheduler_config(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    cluster_arn, _ = _cluster(ctx, p["ClusterArn"])
    body = {"ClusterArn": cluster_arn, "SchedulerConfig": _scheduler_config(p["SchedulerConfig"])}

    def clash(others: list[dict[str, Any]]) -> AwsError | None:
        if not others:
            return None
        return _conflict(f"Cluster {cluster_arn} already has a cluster scheduler config: "
                         f"{others[0]['ClusterSchedulerConfigId']}.")

    return _create(ctx, SCHEDULER, p, body, clash)


@answers(SERVICE, "UpdateClusterSchedulerConfig")
def update_scheduler_config(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    config = _scheduler_config(p["SchedulerConfig"]) if p.get("SchedulerConfig") else None

    def apply(gov: Governance, changed: dict[str, Any]) -> None:
        if config is not None:
            changed["SchedulerConfig"] = config

    return _update(ctx, SCHEDULER, p, apply)


# --- what both kinds answer alike -----------------------------------------------------------


def _answer_alike(kind: Kind) -> None:
    """Describe<kind>, List<kinds> and Delete<kind>: the same for quotas and configs."""
    answers(SERVICE, f"Describe{kind.operation}")(lambda ctx, p: _describe(ctx, kind, p))
    answers(SERVICE, f"List{kind.plural}")(lambda ctx, p: _list(ctx, kind, p))
    answers(SERVICE, f"Delete{kind.operation}")(lambda ctx, p: _delete(ctx, kind, p))


for _kind in (QUOTA, SCHEDULER):
    _answer_alike(_kind)


# --- tags ----------------------------------------------------------------------------------


def is_governance_arn(arn: str) -> bool:
    return ARN_RE.match(arn) is not None


def tags_of(ctx: GapContext, arn: str) -> dict[str, Any]:
    """ListTags of a compute quota or scheduler config (sagemaker.py's ListTags hands these
    ARNs here)."""
    gov = GOVERNANCE.of(ctx)
    with gov.lock:
        if arn not in gov.tags:
            raise AwsError("ResourceNotFound", f"Resource {arn} not found.")
        return {"Tags": [dict(t) for t in gov.tags[arn]]}
