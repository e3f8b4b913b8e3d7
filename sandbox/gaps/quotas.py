"""Service Quotas for SageMaker HyperPod (and the EC2/VPC quotas a cluster's network needs).

moto 5.2 knows no SageMaker quotas, so a preflight check could not find "ml.p5.48xlarge for
cluster usage" at all. This gap answers ListServiceQuotas and ListAWSDefaultServiceQuotas
(what the preflight reads) for the service codes `sagemaker`, `ec2` and `vpc` from the table
below; other service codes go to moto unchanged.

Quota names are AWS's. Codes are AWS's where known (recorded from real accounts: see
sandbox/README.md); the other per-instance-type codes are minted deterministically
(`L-` + 8 hex digits from the name), so look quotas up by name, or list them, rather than
hard-coding codes. Every quota starts at a generous value; a test sets a shortfall through
`/_sandbox/quotas`. The SageMaker gap enforces the HyperPod quotas on CreateCluster,
UpdateCluster and BatchAddClusterNodes (ResourceLimitExceeded), as AWS does.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from typing import Any

from sandbox.gaps import GapContext, GapState, answers
from sandbox.gaps.sagemaker_model import shape_named
from sandbox.reply import Reply

STATE_KEY = "quotas"

PER_CLUSTER = "Maximum number instances allowed per SageMaker HyperPod cluster"
TOTAL = "Total number of instances allowed across SageMaker HyperPod clusters"
TOTAL_SPOT = "Total number of Spot instances allowed across SageMaker HyperPod clusters"
EBS_SIZE = "Maximum size of EBS volume in GB for a SageMaker HyperPod cluster instance"
TRAINING_PLANS = "Number of training plans per Region"

# Generous starting values: the sandbox's account is one whose quotas were all raised.
DEFAULT_INSTANCE_QUOTA = 100.0
DEFAULT_PER_CLUSTER = 1000.0
DEFAULT_TOTAL = 2000.0
DEFAULT_EBS_GB = 16384.0


def cluster_usage(instance_type: str) -> str:
    """The on-demand quota name of an instance type, e.g. "ml.p5.48xlarge for cluster usage"."""
    return f"{instance_type} for cluster usage"


def cluster_spot_usage(instance_type: str) -> str:
    return f"{instance_type} for cluster spot instance usage"


def reserved_capacity(instance_type: str) -> str:
    return (
        f"Number of {instance_type} instances in reserved capacity across training plans per Region"
    )


# Quota codes seen in real accounts (AWS publishes names; codes are stable per quota).
KNOWN_CODES: dict[str, str] = {
    PER_CLUSTER: "L-2CE978FC",
    TOTAL: "L-3308CCC7",
    EBS_SIZE: "L-E13DF72A",
    TOTAL_SPOT: "L-97A2C724",
    TRAINING_PLANS: "L-867702E6",
    cluster_usage("ml.p4d.24xlarge"): "L-47E0BC8F",
    cluster_usage("ml.p4de.24xlarge"): "L-BEF3120E",
    cluster_usage("ml.p5.48xlarge"): "L-8762A75F",
    cluster_usage("ml.p5e.48xlarge"): "L-FD431820",
    cluster_usage("ml.p5en.48xlarge"): "L-6EF3AE05",
    cluster_usage("ml.p6-b200.48xlarge"): "L-44097F05",
    cluster_usage("ml.p6-b300.48xlarge"): "L-9883FE68",
    cluster_usage("ml.p6e-gb200.36xlarge"): "L-5DB70460",
    cluster_usage("ml.g5.8xlarge"): "L-1619F5B7",
    cluster_usage("ml.g5.12xlarge"): "L-24E5A1B2",
    cluster_usage("ml.g6.4xlarge"): "L-1474CE56",
    cluster_usage("ml.g6.48xlarge"): "L-19BBECED",
    cluster_usage("ml.g6e.12xlarge"): "L-A15DF696",
    cluster_usage("ml.g6e.48xlarge"): "L-177AF1AD",
    cluster_usage("ml.c5.12xlarge"): "L-15BCD638",
    cluster_usage("ml.m5.16xlarge"): "L-048C491E",
    cluster_usage("ml.m6i.xlarge"): "L-03FD2ADF",
    cluster_usage("ml.c6i.12xlarge"): "L-06DD0DBC",
    cluster_usage("ml.m7i.12xlarge"): "L-064E954E",
    cluster_usage("ml.r6i.4xlarge"): "L-176526F4",
    cluster_usage("ml.r7i.2xlarge"): "L-0BE2F5A1",
    cluster_usage("ml.i3en.xlarge"): "L-1252146D",
    cluster_usage("ml.i3en.2xlarge"): "L-0D57F08E",
    cluster_spot_usage("ml.p5.48xlarge"): "L-F742E2D7",
    reserved_capacity("ml.p5.48xlarge"): "L-9EF527CA",
}

SERVICE_NAMES = {
    "sagemaker": "Amazon SageMaker",
    "ec2": "Amazon Elastic Compute Cloud (Amazon EC2)",
    "vpc": "Amazon Virtual Private Cloud (Amazon VPC)",
}


@dataclass(frozen=True)
class QuotaDef:
    service_code: str
    code: str
    name: str
    default: float
    unit: str = "None"
    description: str = ""


def minted_code(name: str) -> str:
    """A stable stand-in code for a quota whose real code the sandbox does not know."""
    return "L-" + hashlib.sha256(name.encode()).hexdigest()[:8].upper()


def _sagemaker_quotas() -> list[QuotaDef]:
    def q(name: str, default: float, description: str = "") -> QuotaDef:
        return QuotaDef(
            "sagemaker",
            KNOWN_CODES.get(name) or minted_code(name),
            name,
            default,
            "None",
            description,
        )

    quotas = [
        q(PER_CLUSTER, DEFAULT_PER_CLUSTER, "Instances in one SageMaker HyperPod cluster."),
        q(TOTAL, DEFAULT_TOTAL, "Instances across all SageMaker HyperPod clusters."),
        q(TOTAL_SPOT, DEFAULT_TOTAL, "Spot instances across all SageMaker HyperPod clusters."),
        q(EBS_SIZE, DEFAULT_EBS_GB, "Size of one additional EBS volume per cluster instance."),
        q(TRAINING_PLANS, 25.0),
    ]
    instance_types = shape_named("sagemaker", "ClusterInstanceType").enum
    for instance_type in instance_types:
        quotas.append(q(cluster_usage(instance_type), DEFAULT_INSTANCE_QUOTA))
        quotas.append(q(cluster_spot_usage(instance_type), DEFAULT_INSTANCE_QUOTA))
    for instance_type in shape_named("sagemaker", "ReservedCapacityInstanceType").enum:
        quotas.append(q(reserved_capacity(instance_type), 256.0))
    return quotas


# EC2 and VPC quotas the network and EKS stages depend on (AWS's codes and usual defaults,
# raised where a lab would need more).
_NETWORK_QUOTAS = [
    QuotaDef("ec2", "L-0263D0A3", "EC2-VPC Elastic IPs", 5.0),
    QuotaDef(
        "ec2",
        "L-1216C47A",
        "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances",
        1152.0,
        "None",
        "vCPUs",
    ),
    QuotaDef("ec2", "L-DB2E81BA", "Running On-Demand G and VT instances", 768.0, "None", "vCPUs"),
    QuotaDef("ec2", "L-417A185B", "Running On-Demand P instances", 768.0, "None", "vCPUs"),
    QuotaDef("vpc", "L-F678F1CE", "VPCs per Region", 5.0),
    QuotaDef("vpc", "L-A4707A72", "Internet gateways per Region", 5.0),
    QuotaDef("vpc", "L-FE5A380F", "NAT gateways per Availability Zone", 5.0),
    QuotaDef("vpc", "L-407747CB", "Subnets per VPC", 200.0),
    QuotaDef("vpc", "L-DF5E4CA3", "Network interfaces per Region", 5000.0),
]


class QuotaTable:
    """All modelled quotas, by service code and by code and name."""

    def __init__(self) -> None:
        self.by_service: dict[str, list[QuotaDef]] = {}
        self.by_code: dict[tuple[str, str], QuotaDef] = {}
        self.by_name: dict[tuple[str, str], QuotaDef] = {}
        for quota in _sagemaker_quotas() + _NETWORK_QUOTAS:
            self.by_service.setdefault(quota.service_code, []).append(quota)
            self.by_code[(quota.service_code, quota.code)] = quota
            self.by_name[(quota.service_code, quota.name.lower())] = quota
        for quotas in self.by_service.values():
            quotas.sort(key=lambda quota: quota.code)

    def find(
        self, service_code: str, code: str | None = None, name: str | None = None
    ) -> QuotaDef | None:
        if code:
            return self.by_code.get((service_code, code))
        if name:
            return self.by_name.get((service_code, name.lower()))
        return None


_TABLE: QuotaTable | None = None
_TABLE_LOCK = threading.Lock()


def table() -> QuotaTable:
    """The quota table (built from botocore's instance-type enum on first use)."""
    global _TABLE
    with _TABLE_LOCK:
        if _TABLE is None:
            _TABLE = QuotaTable()
        return _TABLE


class QuotaBook:
    """Applied values set through `/_sandbox/quotas`: (service, code, region or "*") → value."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[tuple[str, str, str], float] = {}

    def set(self, quota: QuotaDef, value: float, region: str | None) -> None:
        with self._lock:
            self._values[(quota.service_code, quota.code, region or "*")] = float(value)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()

    def value(self, quota: QuotaDef, region: str) -> float:
        with self._lock:
            for key in (
                (quota.service_code, quota.code, region),
                (quota.service_code, quota.code, "*"),
            ):
                if key in self._values:
                    return self._values[key]
        return quota.default

    def overrides(self) -> list[dict[str, Any]]:
        with self._lock:
            items = sorted(self._values.items())
        found = table()
        return [
            {
                "service_code": service,
                "quota_code": code,
                "quota_name": found.by_code[(service, code)].name,
                "region": None if region == "*" else region,
                "value": value,
            }
            for (service, code, region), value in items
        ]


QUOTAS: GapState[QuotaBook] = GapState(STATE_KEY, lambda app: QuotaBook())


def applied(app: Any, region: str, service_code: str, name: str) -> float | None:
    """The applied value of a quota by name in `region` (None if the sandbox does not model it)."""
    quota = table().find(service_code, name=name)
    if quota is None:
        return None
    return QUOTAS.of(app).value(quota, region)


# --- control routes (called by sandbox.control_api) ----------------------------------------


class QuotaControlError(ValueError):
    pass


def control_set(app: Any, body: dict[str, Any]) -> dict[str, Any]:
    """Set one quota's applied value: {"service_code", "quota_name"|"quota_code", "value",
    "region"?} (no region: every region)."""
    service_code = body.get("service_code") or "sagemaker"
    value = body.get("value")
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        raise QuotaControlError("value must be a non-negative number")
    quota = table().find(service_code, body.get("quota_code"), body.get("quota_name"))
    if quota is None:
        wanted = body.get("quota_code") or body.get("quota_name")
        raise QuotaControlError(f"no quota {wanted!r} for service code {service_code!r}")
    region = body.get("region")
    QUOTAS.of(app).set(quota, float(value), region)
    return {**_quota_view(quota, QUOTAS.of(app).value(quota, region or "*")), "region": region}


def control_list(
    app: Any, service_code: str | None, region: str | None, overridden: bool
) -> dict[str, Any]:
    quotas_book = QUOTAS.of(app)
    if overridden:
        return {"quotas": quotas_book.overrides()}
    services = [service_code] if service_code else sorted(table().by_service)
    items = []
    for service in services:
        for quota in table().by_service.get(service, []):
            items.append(_quota_view(quota, quotas_book.value(quota, region or "*")))
    return {"quotas": items, "overrides": quotas_book.overrides()}


def control_reset(app: Any) -> None:
    QUOTAS.of(app).clear()


def _quota_view(quota: QuotaDef, value: float) -> dict[str, Any]:
    return {
        "service_code": quota.service_code,
        "quota_code": quota.code,
        "quota_name": quota.name,
        "value": value,
        "default": quota.default,
    }


# --- the Service Quotas API ----------------------------------------------------------------


def _quota(ctx: GapContext, quota: QuotaDef, value: float) -> dict[str, Any]:
    call = ctx.call
    answer: dict[str, Any] = {
        "ServiceCode": quota.service_code,
        "ServiceName": SERVICE_NAMES[quota.service_code],
        "QuotaArn": (
            f"arn:aws:servicequotas:{call.region}:{call.account}:{quota.service_code}/{quota.code}"
        ),
        "QuotaCode": quota.code,
        "QuotaName": quota.name,
        "Value": value,
        "Unit": quota.unit,
        "Adjustable": True,
        "GlobalQuota": False,
        "QuotaAppliedAtLevel": "ACCOUNT",
    }
    if quota.description:
        answer["Description"] = quota.description
    return answer


def _list(ctx: GapContext, params: dict[str, Any], applied_values: bool) -> dict[str, Any] | Reply:
    quotas = table().by_service.get(params["ServiceCode"])
    if quotas is None:  # a service code the table does not model: moto's answer
        return ctx.moto()
    if params.get("QuotaCode"):
        quotas = [q for q in quotas if q.code == params["QuotaCode"]]
    quota_book = QUOTAS.of(ctx)
    return ctx.page(
        [_quota(ctx, q, quota_book.value(q, ctx.call.region) if applied_values else q.default)
         for q in quotas],
        "Quotas",
        default=100,
    )


@answers("servicequotas", "ListServiceQuotas")
def list_service_quotas(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any] | Reply:
    return _list(ctx, params, applied_values=True)


@answers("servicequotas", "ListAWSDefaultServiceQuotas")
def list_default_quotas(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any] | Reply:
    return _list(ctx, params, applied_values=False)
