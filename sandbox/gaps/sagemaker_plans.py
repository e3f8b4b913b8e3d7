"""SageMaker training plans: reservations a test or demo declares, read back through the API.

Nobody can buy a training plan in the sandbox; a test says which plans the account holds
(`POST /_sandbox/training-plans`). ListTrainingPlans and DescribeTrainingPlan answer from that,
shaped by botocore's model; the HyperPod gap
checks an instance group's `TrainingPlanArn` against it (the plan must exist, be `Active` or
`Scheduled`, reserve the group's instance type in the group's availability zone, and have
room for the group's count).
"""

from __future__ import annotations

import re
import threading
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from moto.core import DEFAULT_ACCOUNT_ID

from sandbox.gaps import AwsError, GapContext, GapState, answers
from sandbox.gaps.sagemaker_model import parse_time, shape_named

STATE_KEY = "training_plans"
PLAN_STATUSES = ("Pending", "Active", "Scheduled", "Expired", "Failed")
USABLE_STATUSES = ("Active", "Scheduled")
DEFAULT_REGION = "us-west-2"


@dataclass
class Plan:
    name: str
    arn: str
    account: str
    region: str
    instance_type: str
    count: int
    availability_zone: str
    status: str
    start: datetime
    end: datetime
    target_resources: list[str]
    upfront_fee: str
    reserved_capacity_arn: str
    in_use: int = 0

    def describe(self) -> dict[str, Any]:
        duration = self.end - self.start
        hours, rest = divmod(int(duration.total_seconds()), 3600)
        return {
            "TrainingPlanArn": self.arn,
            "TrainingPlanName": self.name,
            "Status": self.status,
            "DurationHours": hours,
            "DurationMinutes": rest // 60,
            "StartTime": self.start,
            "EndTime": self.end,
            "UpfrontFee": self.upfront_fee,
            "CurrencyCode": "USD",
            "TotalInstanceCount": self.count,
            "AvailableInstanceCount": max(0, self.count - self.in_use),
            "InUseInstanceCount": self.in_use,
            "TargetResources": list(self.target_resources),
            "ReservedCapacitySummaries": [
                {
                    "ReservedCapacityArn": self.reserved_capacity_arn,
                    "ReservedCapacityType": "Instance",
                    "InstanceType": self.instance_type,
                    "TotalInstanceCount": self.count,
                    "Status": self.status,
                    "AvailabilityZone": self.availability_zone,
                    "DurationHours": hours,
                    "DurationMinutes": rest // 60,
                    "StartTime": self.start,
                    "EndTime": self.end,
                }
            ],
        }

    def describe_json(self) -> dict[str, Any]:
        """The DescribeTrainingPlan answer with ISO times (for the control routes)."""
        return _jsonable(self.describe())


@dataclass
class PlanBook:
    lock: threading.RLock = field(default_factory=threading.RLock)
    plans: dict[tuple[str, str], dict[str, Plan]] = field(default_factory=dict)

    def in_region(self, account: str, region: str) -> dict[str, Plan]:
        return self.plans.setdefault((account, region), {})

    def find(self, account: str, region: str, name_or_arn: str) -> Plan | None:
        plans = self.in_region(account, region)
        if name_or_arn.startswith("arn:"):
            return next((p for p in plans.values() if p.arn == name_or_arn), None)
        return plans.get(name_or_arn)


PLANS: GapState[PlanBook] = GapState(STATE_KEY, lambda app: PlanBook())


def plan_book(owner: Any) -> PlanBook:
    """The training plans of a local AWS (`owner`: the app, or a GapContext on it)."""
    return PLANS.of(owner)


# --- control routes ------------------------------------------------------------------------


class PlanControlError(ValueError):
    pass


def _time(value: Any, what: str) -> datetime | None:
    try:
        return parse_time(value)
    except (TypeError, ValueError) as exc:
        raise PlanControlError(f"{what} must be epoch seconds or ISO 8601") from exc


def _common(body: dict[str, Any]) -> tuple[str, int, str, datetime, datetime]:
    instance_type = body.get("instance_type")
    allowed = shape_named("sagemaker", "ReservedCapacityInstanceType").enum
    if instance_type not in allowed:
        raise PlanControlError(f"instance_type must be one of {', '.join(allowed)}")
    count = body.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise PlanControlError("count must be a positive integer")
    zone = body.get("availability_zone")
    if not isinstance(zone, str) or not zone:
        raise PlanControlError("availability_zone is required (e.g. us-west-2a)")
    start = _time(body.get("start"), "start") or datetime.now(UTC)
    hours = body.get("duration_hours", 24)
    if not isinstance(hours, int | float) or hours <= 0:
        raise PlanControlError("duration_hours must be a positive number")
    end = _time(body.get("end"), "end") or start + timedelta(hours=float(hours))
    if end <= start:
        raise PlanControlError("end must be after start")
    return instance_type, count, zone, start, end


def control_add_plan(app: Any, body: dict[str, Any]) -> dict[str, Any]:
    """Declare a training plan the account holds; answers it as DescribeTrainingPlan would."""
    name = body.get("name")
    pattern = shape_named("sagemaker", "TrainingPlanName").metadata["pattern"]
    if not isinstance(name, str) or not re.fullmatch(pattern, name) or len(name) > 64:
        raise PlanControlError(f"name must match {pattern} (at most 64 characters)")
    instance_type, count, zone, start, end = _common(body)
    status = body.get("status", "Active")
    if status not in PLAN_STATUSES:
        raise PlanControlError(f"status must be one of {', '.join(PLAN_STATUSES)}")
    region = body.get("region") or DEFAULT_REGION
    account = body.get("account") or DEFAULT_ACCOUNT_ID
    book = plan_book(app)
    with book.lock:
        plans = book.in_region(account, region)
        if name in plans:
            raise PlanControlError(f"a training plan named {name!r} exists in {region}")
        plan_id = uuid.uuid4().hex[:12]
        plan = Plan(
            name=name,
            arn=f"arn:aws:sagemaker:{region}:{account}:training-plan/{name}",
            account=account,
            region=region,
            instance_type=instance_type,
            count=count,
            availability_zone=zone,
            status=status,
            start=start,
            end=end,
            target_resources=list(body.get("target_resources") or ["hyperpod-cluster"]),
            upfront_fee=str(body.get("upfront_fee", "0")),
            reserved_capacity_arn=(
                f"arn:aws:sagemaker:{region}:{account}:reserved-capacity/{name}-{plan_id}"
            ),
        )
        plans[name] = plan
        return plan.describe_json()


def control_list_plans(app: Any) -> dict[str, Any]:
    book = plan_book(app)
    with book.lock:
        plans = [p for region in book.plans.values() for p in region.values()]
        return {"training_plans": [{**p.describe_json(), "Region": p.region} for p in plans]}


def control_clear_plans(app: Any) -> None:
    book = plan_book(app)
    with book.lock:
        book.plans.clear()


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


# --- the SageMaker API ---------------------------------------------------------------------


def _count_in_use(ctx: GapContext, plans: list[Plan]) -> None:
    """Set each plan's InUseInstanceCount from the HyperPod instances running on it."""
    from sandbox.gaps.sagemaker_state import hyperpod

    hp = hyperpod(ctx.app)
    with hp.lock:
        clusters = list(hp.in_region(ctx.call.account, ctx.call.region).values())
        for plan in plans:
            plan.in_use = sum(
                1
                for cluster in clusters
                for group in cluster.groups.values()
                if group.spec.get("TrainingPlanArn") == plan.arn
                for node in cluster.nodes_of(group.name)
                if node.counted
            )


@answers("sagemaker", "ListTrainingPlans")
def _list_training_plans(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any]:
    book = plan_book(ctx)
    with book.lock:
        plans = list(book.in_region(ctx.call.account, ctx.call.region).values())
    after = parse_time(params.get("StartTimeAfter"))
    before = parse_time(params.get("StartTimeBefore"))
    statuses = [f["Value"] for f in params.get("Filters") or [] if f["Name"] == "Status"]
    plans = [
        p
        for p in plans
        if (after is None or p.start > after)
        and (before is None or p.start < before)
        and (not statuses or p.status in statuses)
    ]
    sort_by = params.get("SortBy", "StartTime")
    keys = {
        "TrainingPlanName": lambda p: p.name,
        "StartTime": lambda p: p.start,
        "Status": lambda p: p.status,
    }
    plans.sort(key=keys[sort_by], reverse=params.get("SortOrder", "Ascending") == "Descending")
    _count_in_use(ctx, plans)
    return ctx.page([p.describe() for p in plans], "TrainingPlanSummaries")


@answers("sagemaker", "DescribeTrainingPlan")
def _describe_training_plan(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any]:
    book = plan_book(ctx)
    with book.lock:
        plan = book.find(ctx.call.account, ctx.call.region, params["TrainingPlanName"])
        if plan is None:
            raise AwsError(
                "ResourceNotFound", f"Training plan {params['TrainingPlanName']} does not exist."
            )
    _count_in_use(ctx, [plan])
    return plan.describe()
