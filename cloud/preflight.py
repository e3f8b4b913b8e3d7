"""Read-only checks that the capacity a user asks for can exist before anything is made.

`check` answers {"ok", "checks": [...]}, each check {"name", "ok", "status", "required",
"available", "message", "how_to_fix"} (`status`: pass | fail | unknown — unknown when the
account does not let hypd read the quota; it does not block). It never mutates: it only calls
ListAWSDefaultServiceQuotas / ListServiceQuotas (Service Quotas, service code `sagemaker`),
ListClusters / DescribeCluster and DescribeTrainingPlan (SageMaker).

Service Quotas codes (`L-…`) differ per instance type, so quotas are found by *name* among
the service's quotas (applied values over defaults), never by a hard-coded code:
- `<type> for cluster usage` (e.g. `ml.p5.48xlarge for cluster usage`): on-demand instances
  of that type all HyperPod clusters of the account may hold in the region;
- `<type> for cluster spot instance usage`: the same for spot capacity;
- `Total number of instances allowed across SageMaker HyperPod clusters`, and for spot
  `Total number of Spot instances allowed across SageMaker HyperPod clusters`;
- `Maximum number instances allowed per SageMaker HyperPod cluster` (AWS's wording);
- `Maximum size of EBS volume in GB for a SageMaker HyperPod cluster instance`.
What the existing HyperPod clusters hold is read from DescribeCluster and subtracted.
Training-plan capacity is reserved capacity: its gate is the plan (it exists, targets
HyperPod, is Active or Scheduled, reserves this instance type with enough instances), not
the on-demand cluster-usage quota.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from botocore.exceptions import ClientError

from cloud.aws import error_code, is_not_found, is_transient
from cloud.hyperpod import instances_in_use
from vocabulary import patterns
from vocabulary.capacity import CAPACITY_TYPES, SPOT, TRAINING_PLAN

SERVICE_CODE = "sagemaker"
CONSOLE_URL = "https://console.aws.amazon.com/servicequotas/home/services/sagemaker/quotas"
USABLE_PLAN_STATUSES = ("Active", "Scheduled")
HYPERPOD_TARGET = "hyperpod-cluster"
_ACCESS_DENIED = ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation",
                  "NoSuchResourceException")

TOTAL_QUOTA = "Total number of instances allowed across SageMaker HyperPod clusters"
TOTAL_SPOT_QUOTA = "Total number of Spot instances allowed across SageMaker HyperPod clusters"
PER_CLUSTER_QUOTA = "Maximum number instances allowed per SageMaker HyperPod cluster"
EBS_QUOTA = "Maximum size of EBS volume in GB for a SageMaker HyperPod cluster instance"


def quota_name(instance_type: str, spot: bool = False) -> str:
    """The per-instance-type quota name (on-demand or spot)."""
    if spot:
        return f"{instance_type} for cluster spot instance usage"
    return f"{instance_type} for cluster usage"


def check(quotas_client: Any, sm_client: Any, region: str, instance_type: str, count: int,
          capacity_type: str, training_plan_arn: str | None = None,
          volume_size_gb: int | None = None) -> dict[str, Any]:
    """Read-only preflight of `count` `instance_type` instances as `capacity_type`."""
    if capacity_type not in CAPACITY_TYPES:
        raise ValueError(f"capacity type must be one of {', '.join(CAPACITY_TYPES)}")
    spot = capacity_type == SPOT
    checks: list[dict[str, Any]] = []
    quotas, quota_error = _read_quotas(quotas_client)
    used = _in_use(sm_client)
    used_here = used.get((instance_type, capacity_type), 0)
    used_total = sum(used.values())
    used_spot = sum(n for (_, kind), n in used.items() if kind == SPOT)

    if capacity_type != TRAINING_PLAN:
        checks.append(_instance_quota(quotas, quota_error, region, instance_type, count, spot,
                                      used_here))
    for name, label, quota_name_, in_use, what in (
            ("total_instances", None, TOTAL_QUOTA, used_total,
             f"HyperPod instances across all clusters in {region}"),
            ("total_spot_instances", SPOT, TOTAL_SPOT_QUOTA, used_spot,
             f"HyperPod spot instances across all clusters in {region}"),
            ("instances_per_cluster", None, PER_CLUSTER_QUOTA, 0,
             "instances in one HyperPod cluster")):
        if label == SPOT and not spot:
            continue
        quota = _named(quotas, quota_name_)
        if quota is not None:
            checks.append(_limit(name, quota, region, count, in_use, what))
    if volume_size_gb is not None:
        quota = _named(quotas, EBS_QUOTA)
        if quota is not None:
            checks.append(_limit("instance_volume_size", quota, region, volume_size_gb, 0,
                                 "GB of EBS volume per HyperPod instance"))
    if capacity_type == TRAINING_PLAN or training_plan_arn:
        checks.append(_training_plan(sm_client, region, instance_type, count, training_plan_arn))
    return {"ok": all(c["ok"] for c in checks), "region": region,
            "instance_type": instance_type, "count": count, "capacity_type": capacity_type,
            "checks": checks}


# -- quotas ------------------------------------------------------------------------------------


def _read_quotas(client: Any) -> tuple[dict[str, dict[str, Any]], str | None]:
    """Quota name (lowercase) → quota, applied values over defaults; or why they are
    unreadable."""
    found: dict[str, dict[str, Any]] = {}
    try:
        for operation in ("list_aws_default_service_quotas", "list_service_quotas"):
            pages = client.get_paginator(operation).paginate(
                ServiceCode=SERVICE_CODE, PaginationConfig={"PageSize": 100})
            for page in pages:
                for quota in page.get("Quotas") or ():
                    # ListServiceQuotas (second) lists only quotas with an applied value; it wins
                    found[quota["QuotaName"].lower()] = quota
    except ClientError as exc:
        if is_transient(exc):
            raise
        code = error_code(exc) or "error"
        message = (exc.response.get("Error") or {}).get("Message") or ""
        return found, f"{code}: {message}".rstrip(": ")
    return found, None


def _named(quotas: dict[str, dict[str, Any]], name: str) -> dict[str, Any] | None:
    return quotas.get(name.lower())


def _instance_quota(quotas: dict[str, dict[str, Any]], quota_error: str | None, region: str,
                    instance_type: str, count: int, spot: bool, used: int) -> dict[str, Any]:
    wanted = quota_name(instance_type, spot)
    quota = _named(quotas, wanted)
    kind = "spot " if spot else ""
    if quota is None and quota_error:
        return _result("instance_quota", "unknown", count, None,
                       f"could not read the Service Quotas of Amazon SageMaker in {region} "
                       f"({quota_error}); the quota '{wanted}' was not checked",
                       "Allow servicequotas:ListServiceQuotas and "
                       "servicequotas:ListAWSDefaultServiceQuotas to the panel's role, or "
                       f"check the quota '{wanted}' yourself in {CONSOLE_URL}")
    if quota is None:
        return _result("instance_quota", "fail", count, 0,
                       f"Amazon SageMaker has no quota named '{wanted}' in {region}: HyperPod "
                       f"does not offer {kind}{instance_type} there (or not to this account)",
                       f"Choose an instance type HyperPod offers in {region}, or ask AWS "
                       f"Support for {kind}{instance_type} capacity for cluster usage there")
    return _limit("instance_quota", quota, region, count, used,
                  f"{kind}{instance_type} instances in HyperPod clusters")


def _limit(name: str, quota: dict[str, Any], region: str, count: int, used: int,
           what: str) -> dict[str, Any]:
    value = int(quota.get("Value") or 0)
    available = max(value - used, 0)
    quota_label = f"'{quota['QuotaName']}' ({quota.get('QuotaCode', '?')})"
    in_use = f"; {used} in use, {available} free" if used else ""
    if available >= count:
        return _result(name, "pass", count, available,
                       f"{quota_label} allows {value} {what}{in_use}", None)
    needed = used + count
    fix = (f"Request an increase of the Service Quotas quota {quota_label} of Amazon SageMaker "
           f"in {region} to at least {needed}: in the Service Quotas console ({CONSOLE_URL}) "
           f"choose the quota and 'Request increase at account level', or call "
           f"`aws service-quotas request-service-quota-increase --service-code {SERVICE_CODE} "
           f"--quota-code {quota.get('QuotaCode', '<code>')} --desired-value {needed} "
           f"--region {region}`")
    if quota.get("Adjustable") is False:
        fix = (f"The quota {quota_label} is not adjustable: ask for at most {available} "
               f"{what}, or free some by scaling down other clusters")
    return _result(name, "fail", count, available,
                   f"{quota_label} allows {value} {what}{in_use}; {count} requested", fix)


def _in_use(sm: Any) -> dict[tuple[str, str], int]:
    try:
        return instances_in_use(sm)
    except ClientError as exc:
        if is_transient(exc) or error_code(exc) not in _ACCESS_DENIED:
            raise
        return {}


# -- training plans ----------------------------------------------------------------------------


def _plan_name(arn: str) -> str:
    if not patterns.fits(patterns.TRAINING_PLAN_ARN, arn):
        raise ValueError(f"{arn!r} is not a SageMaker training plan ARN")
    return arn.split(":training-plan/", 1)[1]


def _training_plan(sm: Any, region: str, instance_type: str, count: int,
                   arn: str | None) -> dict[str, Any]:
    if not arn:
        return _result("training_plan", "fail", count, None,
                       "capacity type 'training-plan' needs a training plan ARN",
                       "Reserve capacity with a SageMaker training plan for HyperPod clusters "
                       "(SearchTrainingPlanOfferings, then CreateTrainingPlan) and give its ARN")
    try:
        plan = sm.describe_training_plan(TrainingPlanName=_plan_name(arn))
    except ValueError as exc:
        return _result("training_plan", "fail", count, None, str(exc),
                       "Give the ARN DescribeTrainingPlan or ListTrainingPlans shows")
    except ClientError as exc:
        if is_transient(exc):
            raise
        if is_not_found(exc) or error_code(exc) in ("ValidationException",):
            return _result("training_plan", "fail", count, 0,
                           f"training plan {arn} does not exist in {region}",
                           "Check the ARN (ListTrainingPlans), or reserve capacity with "
                           "SearchTrainingPlanOfferings and CreateTrainingPlan")
        if error_code(exc) in _ACCESS_DENIED:
            return _result("training_plan", "unknown", count, None,
                           f"could not read training plan {arn}: {error_code(exc)}",
                           "Allow sagemaker:DescribeTrainingPlan to the panel's role")
        raise
    return _judge_plan(plan, arn, instance_type, count)


def _judge_plan(plan: dict[str, Any], arn: str, instance_type: str,
                count: int) -> dict[str, Any]:
    status = plan.get("Status")
    label = f"training plan {plan.get('TrainingPlanName') or arn}"
    if status not in USABLE_PLAN_STATUSES:
        return _result("training_plan", "fail", count, 0,
                       f"{label} is {status}, not Active or Scheduled"
                       + (f" ({plan['StatusMessage']})" if plan.get("StatusMessage") else ""),
                       "Use a plan that is Active or Scheduled, or reserve new capacity with "
                       "SearchTrainingPlanOfferings and CreateTrainingPlan")
    targets = plan.get("TargetResources") or []
    if targets and HYPERPOD_TARGET not in targets:
        return _result("training_plan", "fail", count, 0,
                       f"{label} reserves capacity for {', '.join(targets)}, not for HyperPod "
                       "clusters", "Reserve a training plan whose target is hyperpod-cluster")
    reserved = [r for r in plan.get("ReservedCapacitySummaries") or ()
                if r.get("InstanceType") == instance_type
                and r.get("Status", status) in USABLE_PLAN_STATUSES]
    if not reserved:
        kinds = sorted({r.get("InstanceType") for r in plan.get("ReservedCapacitySummaries") or ()
                        if r.get("InstanceType")})
        return _result("training_plan", "fail", count, 0,
                       f"{label} reserves {', '.join(kinds) or 'no instances'}, not "
                       f"{instance_type}",
                       f"Use the plan's instance type, or reserve {instance_type} capacity")
    total = sum(int(r.get("TotalInstanceCount") or 0) for r in reserved)
    if status == "Active" and plan.get("AvailableInstanceCount") is not None:
        available = min(total, int(plan["AvailableInstanceCount"]))
    else:
        available = total
    zones = sorted({r.get("AvailabilityZone") for r in reserved if r.get("AvailabilityZone")})
    where = f" in {', '.join(zones)}" if zones else ""
    if available < count:
        return _result("training_plan", "fail", count, available,
                       f"{label} ({status}) has {available} {instance_type} available{where}, "
                       f"{count} requested",
                       "Ask for at most the plan's available instances, or extend the plan / "
                       "reserve more with another training plan")
    passed = _result("training_plan", "pass", count, available,
                     f"{label} ({status}) has {available} {instance_type} available{where}"
                     + (f"; place the instance group{where}" if where else ""), None)
    passed["availability_zones"] = zones  # the group's subnet must be in one of them
    return passed


def _result(name: str, status: str, required: int, available: int | None, message: str,
            how_to_fix: str | None) -> dict[str, Any]:
    return {"name": name, "ok": status != "fail", "status": status, "required": required,
            "available": available, "message": message, "how_to_fix": how_to_fix}


def failed(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The checks that block (for error details)."""
    return [c for c in result.get("checks") or () if not c["ok"]]


def summary(checks: Iterable[dict[str, Any]]) -> str:
    """One line per failing check, for an error message."""
    return "; ".join(c["message"] for c in checks if not c["ok"])
