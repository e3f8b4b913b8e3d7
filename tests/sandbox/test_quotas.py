"""Service Quotas and training plans as the sandbox answers them, through boto3 over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from sandbox.control import SandboxControl, SandboxControlError
from sandbox.gaps.quotas import minted_code
from sandbox.local_aws import LocalAws

P5 = "ml.p5.48xlarge for cluster usage"
P5_CODE = "L-8762A75F"  # AWS's code for it
PER_CLUSTER = "Maximum number instances allowed per SageMaker HyperPod cluster"
TOTAL = "Total number of instances allowed across SageMaker HyperPod clusters"


@pytest.fixture(scope="module")
def quotas(client_factory: Any) -> Any:
    return client_factory("service-quotas")


@pytest.fixture(scope="module")
def sm(client_factory: Any) -> Any:
    return client_factory("sagemaker")


@pytest.fixture
def ctl(control: SandboxControl) -> Iterator[SandboxControl]:
    yield control
    control.reset_quotas()
    control.clear_training_plans()


def _p5(quotas: Any) -> dict[str, Any]:
    (quota,) = quotas.list_service_quotas(ServiceCode="sagemaker", QuotaCode=P5_CODE)["Quotas"]
    return quota


def _all(quotas: Any, operation: str, service_code: str) -> dict[str, dict[str, Any]]:
    pages = quotas.get_paginator(operation).paginate(ServiceCode=service_code)
    return {q["QuotaName"]: q for page in pages for q in page["Quotas"]}


# --- quotas ---------------------------------------------------------------------------------


def test_hyperpod_quotas_exist_with_awss_names_and_generous_defaults(
    quotas: Any, ctl: SandboxControl
) -> None:
    listed = _all(quotas, "list_service_quotas", "sagemaker")
    for name in (P5, PER_CLUSTER, TOTAL,
                 "ml.p5.48xlarge for cluster spot instance usage",
                 "Total number of Spot instances allowed across SageMaker HyperPod clusters",
                 "Maximum size of EBS volume in GB for a SageMaker HyperPod cluster instance",
                 "ml.g5.8xlarge for cluster usage", "ml.trn1.32xlarge for cluster usage"):
        assert name in listed, name
        assert listed[name]["Value"] >= 100
        assert listed[name]["Adjustable"] is True
    assert listed[P5]["QuotaCode"] == P5_CODE
    assert listed[PER_CLUSTER]["QuotaCode"] == "L-2CE978FC"
    assert listed[TOTAL]["QuotaCode"] == "L-3308CCC7"
    # Codes the sandbox does not know are stable stand-ins.
    trn1 = listed["ml.trn1.32xlarge for cluster usage"]
    assert trn1["QuotaCode"] == minted_code("ml.trn1.32xlarge for cluster usage")
    quota = listed[P5]
    assert quota["QuotaArn"].endswith(f":sagemaker/{P5_CODE}")
    assert quota["ServiceName"] == "Amazon SageMaker"
    (only,) = quotas.list_service_quotas(ServiceCode="sagemaker", QuotaCode=P5_CODE)["Quotas"]
    assert only["QuotaName"] == P5


def test_a_configured_shortfall_shows_as_the_applied_value_not_the_default(
    quotas: Any, ctl: SandboxControl
) -> None:
    answer = ctl.set_quota(2, P5)
    assert answer["quota_code"] == P5_CODE and answer["value"] == 2
    assert _all(quotas, "list_service_quotas", "sagemaker")[P5]["Value"] == 2
    assert _all(quotas, "list_aws_default_service_quotas", "sagemaker")[P5]["Value"] >= 100
    assert ctl.quotas(overridden=True) == [
        {"service_code": "sagemaker", "quota_code": P5_CODE, "quota_name": P5,
         "region": None, "value": 2.0}
    ]
    ctl.reset_quotas()
    assert _p5(quotas)["Value"] >= 100


def test_a_shortfall_can_be_set_for_one_region_by_code(
    local_aws: LocalAws, quotas: Any, ctl: SandboxControl
) -> None:
    ctl.set_quota(0, quota_code=P5_CODE, region="us-east-1")
    east = boto3.client(
        "service-quotas", endpoint_url=local_aws.url, region_name="us-east-1",
        aws_access_key_id="AKIATESTSANDBOX00000", aws_secret_access_key="test-secret",
    )
    west = quotas
    assert _p5(east)["Value"] == 0
    assert _p5(west)["Value"] >= 100


def test_network_quotas_for_ec2_and_vpc(quotas: Any) -> None:
    vpc = _all(quotas, "list_service_quotas", "vpc")
    assert vpc["VPCs per Region"]["QuotaCode"] == "L-F678F1CE"
    assert "Network interfaces per Region" in vpc
    assert _all(quotas, "list_service_quotas", "ec2")["EC2-VPC Elastic IPs"]["QuotaCode"] == (
        "L-0263D0A3")


def test_unknown_quotas_list_nothing_and_bad_settings_are_refused(
    quotas: Any, ctl: SandboxControl
) -> None:
    assert quotas.list_service_quotas(ServiceCode="sagemaker", QuotaCode="L-00000000")[
        "Quotas"] == []
    for body in ({"quota_name": "no such quota", "value": 1},
                 {"quota_name": P5, "value": -1},
                 {"quota_name": P5, "value": "many"}):
        with pytest.raises(SandboxControlError) as refused:
            ctl.set_quota(**body)
        assert refused.value.status == 400


# --- training plans -----------------------------------------------------------------------


def test_declared_training_plans_are_listed_and_described(sm: Any, ctl: SandboxControl) -> None:
    start = datetime.now(UTC) + timedelta(days=1)
    active = ctl.add_training_plan("p5-now", "ml.p5.48xlarge", 4, "us-west-2a",
                                   duration_hours=72)
    ctl.add_training_plan("p5-later", "ml.p5.48xlarge", 8, "us-west-2b", status="Scheduled",
                          start=start.isoformat(), duration_hours=24)
    ctl.add_training_plan("p5-old", "ml.p5.48xlarge", 2, "us-west-2a", status="Expired")
    assert active["TrainingPlanArn"].endswith(":training-plan/p5-now")

    described = sm.describe_training_plan(TrainingPlanName="p5-now")
    assert described["Status"] == "Active"
    assert described["DurationHours"] == 72
    assert (described["TotalInstanceCount"], described["AvailableInstanceCount"],
            described["InUseInstanceCount"]) == (4, 4, 0)
    assert described["TargetResources"] == ["hyperpod-cluster"]
    (capacity,) = described["ReservedCapacitySummaries"]
    assert (capacity["InstanceType"], capacity["AvailabilityZone"]) == ("ml.p5.48xlarge",
                                                                         "us-west-2a")
    assert sm.describe_training_plan(TrainingPlanName=active["TrainingPlanArn"])[
        "TrainingPlanName"] == "p5-now"

    usable = sm.list_training_plans(Filters=[{"Name": "Status", "Value": "Active"},
                                             {"Name": "Status", "Value": "Scheduled"}])
    assert sorted(p["TrainingPlanName"] for p in usable["TrainingPlanSummaries"]) == [
        "p5-later", "p5-now"]
    everything = sm.list_training_plans(SortBy="TrainingPlanName")["TrainingPlanSummaries"]
    assert [p["TrainingPlanName"] for p in everything] == ["p5-later", "p5-now", "p5-old"]

    with pytest.raises(ClientError) as exc:
        sm.describe_training_plan(TrainingPlanName="p5-never")
    assert exc.value.response["Error"]["Code"] == "ResourceNotFound"


def test_bad_training_plans_are_refused_by_the_control_route(ctl: SandboxControl) -> None:
    for bad in ({"name": "x", "instance_type": "ml.c5.large", "count": 1,
                 "availability_zone": "us-west-2a"},
                {"name": "x", "instance_type": "ml.p5.48xlarge", "count": 0,
                 "availability_zone": "us-west-2a"},
                {"name": "bad name", "instance_type": "ml.p5.48xlarge", "count": 1,
                 "availability_zone": "us-west-2a"},
                {"name": "x", "instance_type": "ml.p5.48xlarge", "count": 1,
                 "availability_zone": "us-west-2a", "status": "Bought"}):
        with pytest.raises(SandboxControlError) as refused:
            ctl.add_training_plan(**bad)
        assert refused.value.status == 400
    ctl.add_training_plan("dup", "ml.p5.48xlarge", 1, "us-west-2a")
    with pytest.raises(SandboxControlError):
        ctl.add_training_plan("dup", "ml.p5.48xlarge", 1, "us-west-2a")
