"""Preflight: quota shortfalls and training-plan reservations, read-only, with the fix named."""

from __future__ import annotations

import datetime

import boto3
import pytest
from botocore.stub import Stubber

from cloud import preflight
from tests.cloud.netkit import Spy

REGION = "us-west-2"
ACCOUNT = "123456789012"
PLAN = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-plan/p5-week"
READ_ONLY = ("list_", "describe_", "get_", "can_paginate")


def quota(name, value, code, adjustable=True):
    return {"ServiceCode": "sagemaker", "ServiceName": "Amazon SageMaker", "QuotaCode": code,
            "QuotaName": name, "Value": float(value), "Adjustable": adjustable}


DEFAULTS = [
    quota("ml.p5.48xlarge for cluster usage", 0, "L-8762A75F"),
    quota("ml.p5.48xlarge for cluster spot instance usage", 0, "L-F742E2D7"),
    quota("ml.g5.8xlarge for cluster usage", 4, "L-1619F5B7"),
    quota(preflight.TOTAL_QUOTA, 20, "L-3308CCC7"),
    quota(preflight.TOTAL_SPOT_QUOTA, 10, "L-97A2C724"),
    quota(preflight.PER_CLUSTER_QUOTA, 16, "L-2CE978FC"),
    quota(preflight.EBS_QUOTA, 2000, "L-E13DF72A"),
]


def clients(applied=(), clusters=(), plan=None, plan_error=None, defaults=DEFAULTS):
    """Stubbed Service Quotas and SageMaker clients that answer exactly the reads preflight
    makes: a stubber fails on any call it was not given, so no mutation can slip through."""
    quotas = boto3.client("service-quotas", region_name=REGION, aws_access_key_id="x",
                          aws_secret_access_key="x")
    sm = boto3.client("sagemaker", region_name=REGION, aws_access_key_id="x",
                      aws_secret_access_key="x")
    q, s = Stubber(quotas), Stubber(sm)
    # defaults come in two pages: preflight must follow NextToken
    half = len(defaults) // 2
    q.add_response("list_aws_default_service_quotas",
                   {"Quotas": list(defaults[:half]), "NextToken": "t"},
                   {"ServiceCode": "sagemaker", "MaxResults": 100})
    q.add_response("list_aws_default_service_quotas", {"Quotas": list(defaults[half:])},
                   {"ServiceCode": "sagemaker", "MaxResults": 100, "NextToken": "t"})
    q.add_response("list_service_quotas", {"Quotas": list(applied)},
                   {"ServiceCode": "sagemaker", "MaxResults": 100})
    now = datetime.datetime(2026, 11, 1)
    s.add_response("list_clusters", {"ClusterSummaries": [
        {"ClusterArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/{n:0>12}",
         "ClusterName": n, "CreationTime": now, "ClusterStatus": status}
        for n, status, _ in clusters]})
    for name, status, groups in clusters:
        if status in ("Failed", "Deleting"):
            continue
        s.add_response("describe_cluster", {
            "ClusterArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/{name:0>12}",
            "ClusterName": name, "ClusterStatus": status, "CreationTime": now,
            "InstanceGroups": groups}, {"ClusterName": name})
    if plan is not None:
        s.add_response("describe_training_plan", plan, {"TrainingPlanName": "p5-week"})
    if plan_error is not None:
        s.add_client_error("describe_training_plan", plan_error, "no such plan")
    return quotas, sm, q, s


def run(quotas, sm, q, s, *args, **kwargs):
    spy_q, spy_s = Spy(quotas), Spy(sm)
    with q, s:
        result = preflight.check(spy_q, spy_s, REGION, *args, **kwargs)
    q.assert_no_pending_responses()
    s.assert_no_pending_responses()
    for call in spy_q.calls + spy_s.calls:
        assert call.startswith(READ_ONLY), f"preflight called {call}"
    return result


def by_name(result):
    return {c["name"]: c for c in result["checks"]}


def test_quota_shortfall_is_reported_with_how_to_ask_for_more():
    result = run(*clients(), "ml.p5.48xlarge", 2, "on-demand")
    assert result["ok"] is False
    check = by_name(result)["instance_quota"]
    assert check == {
        "name": "instance_quota", "ok": False, "status": "fail", "required": 2,
        "available": 0, "message": check["message"], "how_to_fix": check["how_to_fix"]}
    assert "'ml.p5.48xlarge for cluster usage' (L-8762A75F)" in check["message"]
    assert "request-service-quota-increase --service-code sagemaker" in check["how_to_fix"]
    assert "--quota-code L-8762A75F --desired-value 2 --region us-west-2" in check["how_to_fix"]
    assert "Service Quotas console" in check["how_to_fix"]
    # the other quotas have room
    assert by_name(result)["total_instances"]["ok"]
    assert by_name(result)["instances_per_cluster"]["ok"]
    assert "total_spot_instances" not in by_name(result)
    assert preflight.failed(result) == [check]
    assert "ml.p5.48xlarge for cluster usage" in preflight.summary(result["checks"])


def test_applied_values_win_and_existing_clusters_count():
    applied = [quota("ml.p5.48xlarge for cluster usage", 8, "L-8762A75F")]
    held = [("busy", "InService", [{"InstanceGroupName": "a", "InstanceType": "ml.p5.48xlarge",
                                    "CurrentCount": 5, "TargetCount": 6}]),
            ("gone", "Deleting", [])]
    result = run(*clients(applied, held), "ml.p5.48xlarge", 2, "on-demand")
    check = by_name(result)["instance_quota"]
    assert result["ok"] and check["available"] == 2
    short = run(*clients(applied, held), "ml.p5.48xlarge", 3, "on-demand")
    check = by_name(short)["instance_quota"]
    assert not short["ok"] and check["available"] == 2 and check["required"] == 3
    assert "6 in use" in check["message"]
    assert "--desired-value 9" in check["how_to_fix"]


def test_spot_uses_the_spot_quotas():
    applied = [quota("ml.p5.48xlarge for cluster spot instance usage", 4, "L-F742E2D7")]
    result = run(*clients(applied), "ml.p5.48xlarge", 4, "spot")
    checks = by_name(result)
    assert result["ok"]
    assert "spot instance usage" in checks["instance_quota"]["message"]
    assert checks["total_spot_instances"]["available"] == 10
    too_many = run(*clients(applied), "ml.p5.48xlarge", 12, "spot")
    assert {c["name"] for c in preflight.failed(too_many)} == {
        "instance_quota", "total_spot_instances"}


def test_total_and_per_cluster_limits_and_ebs_size():
    result = run(*clients(), "ml.g5.8xlarge", 4, "on-demand", volume_size_gb=500)
    assert result["ok"] and by_name(result)["instance_volume_size"]["ok"]
    big = run(*clients(), "ml.g5.8xlarge", 17, "on-demand", volume_size_gb=4000)
    assert {c["name"] for c in preflight.failed(big)} == {
        "instance_quota", "instances_per_cluster", "instance_volume_size"}


def test_an_instance_type_without_a_quota_is_not_offered():
    result = run(*clients(), "ml.trn1.32xlarge", 1, "on-demand")
    check = by_name(result)["instance_quota"]
    assert not check["ok"]
    assert "no quota named 'ml.trn1.32xlarge for cluster usage'" in check["message"]


def test_unreadable_quotas_are_unknown_not_a_failure():
    quotas = boto3.client("service-quotas", region_name=REGION, aws_access_key_id="x",
                          aws_secret_access_key="x")
    sm = boto3.client("sagemaker", region_name=REGION, aws_access_key_id="x",
                      aws_secret_access_key="x")
    q, s = Stubber(quotas), Stubber(sm)
    q.add_client_error("list_aws_default_service_quotas", "AccessDeniedException", "denied")
    s.add_response("list_clusters", {"ClusterSummaries": []})
    result = run(quotas, sm, q, s, "ml.p5.48xlarge", 1, "on-demand")
    check = by_name(result)["instance_quota"]
    assert result["ok"] and check["status"] == "unknown" and check["ok"]
    assert "AccessDeniedException" in check["message"]
    assert "servicequotas:ListServiceQuotas" in check["how_to_fix"]


# -- training plans ------------------------------------------------------------------------


def plan(status="Active", instance_type="ml.p5.48xlarge", total=4, available=4,
         targets=("hyperpod-cluster",)):
    return {
        "TrainingPlanArn": PLAN, "TrainingPlanName": "p5-week", "Status": status,
        "TotalInstanceCount": total, "AvailableInstanceCount": available,
        "TargetResources": list(targets),
        "ReservedCapacitySummaries": [{
            "ReservedCapacityArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:reserved-capacity/rc-1",
            "InstanceType": instance_type, "TotalInstanceCount": total, "Status": status,
            "AvailabilityZone": "us-west-2b"}],
    }


def test_training_plan_that_fits_passes_and_skips_the_on_demand_quota():
    result = run(*clients(plan=plan()), "ml.p5.48xlarge", 4, "training-plan", PLAN)
    checks = by_name(result)
    assert result["ok"], result
    assert "instance_quota" not in checks  # reserved capacity, not the on-demand pool
    assert checks["training_plan"]["available"] == 4
    assert "us-west-2b" in checks["training_plan"]["message"]
    assert checks["training_plan"]["availability_zones"] == ["us-west-2b"]
    scheduled = run(*clients(plan=plan(status="Scheduled", available=0)), "ml.p5.48xlarge", 4,
                    "training-plan", PLAN)
    assert scheduled["ok"]  # a scheduled plan reserves its total


@pytest.mark.parametrize("answer, count, expected", [
    (plan(status="Expired"), 1, "Expired, not Active or Scheduled"),
    (plan(instance_type="ml.p4d.24xlarge"), 1, "reserves ml.p4d.24xlarge, not ml.p5.48xlarge"),
    (plan(available=2), 3, "has 2 ml.p5.48xlarge available"),
    (plan(targets=("training-job",)), 1, "not for HyperPod clusters"),
])
def test_training_plan_mismatches(answer, count, expected):
    result = run(*clients(plan=answer), "ml.p5.48xlarge", count, "training-plan", PLAN)
    check = by_name(result)["training_plan"]
    assert not result["ok"] and not check["ok"]
    assert expected in check["message"]
    assert check["how_to_fix"]


def test_training_plan_missing_or_not_given():
    result = run(*clients(plan_error="ResourceNotFound"), "ml.p5.48xlarge", 1, "training-plan",
                 PLAN)
    assert "does not exist" in by_name(result)["training_plan"]["message"]
    result = run(*clients(), "ml.p5.48xlarge", 1, "training-plan")
    assert "needs a training plan ARN" in by_name(result)["training_plan"]["message"]
    with pytest.raises(ValueError):
        preflight.check(None, None, REGION, "ml.p5.48xlarge", 1, "reserved")


# -- against the sandbox's Service Quotas and training plans (faithful where moto is not) ----
# These run last in this module: the local AWS keeps moto's state in this process.


@pytest.fixture(scope="module")
def local_aws():
    from sandbox.local_aws import LocalAws

    local = LocalAws(speed=1000)
    local.start()
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture
def sandbox(local_aws, monkeypatch):
    """hypd's own client factory in sandbox mode, pointed at the local AWS."""
    from cloud import aws
    from sandbox.control import SandboxControl
    from sandbox.local_aws import client_env

    for key, value in client_env(local_aws.url, REGION).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HYPD_AWS", "sandbox")
    monkeypatch.setenv("HYPD_REGION", REGION)
    aws.clear_cache()
    ctl = SandboxControl(local_aws.url)
    ctl.reset()
    ctl.reset_quotas()
    ctl.clear_training_plans()
    yield ctl
    ctl.reset_quotas()
    ctl.clear_training_plans()
    aws.clear_cache()


def _clients():
    from cloud import aws

    return aws.client("service-quotas"), aws.client("sagemaker")


def test_sandbox_quota_shortfall_is_reported_and_nothing_is_mutated(sandbox):
    sandbox.set_quota(1, quota_name="ml.p5.48xlarge for cluster usage")
    result = preflight.check(*_clients(), REGION, "ml.p5.48xlarge", 2, "on-demand")
    check = by_name(result)["instance_quota"]
    assert result["ok"] is False and check["available"] == 1 and check["required"] == 2
    assert "'ml.p5.48xlarge for cluster usage' (L-8762A75F)" in check["message"]
    assert "--quota-code L-8762A75F --desired-value 2" in check["how_to_fix"]
    assert by_name(result)["total_instances"]["ok"]
    assert by_name(result)["instances_per_cluster"]["ok"]
    # one instance fits; a shortfall on the account-wide total is found too
    sandbox.set_quota(1, quota_name=preflight.TOTAL_QUOTA)
    result = preflight.check(*_clients(), REGION, "ml.p5.48xlarge", 1, "on-demand")
    assert result["ok"] is True
    result = preflight.check(*_clients(), REGION, "ml.g5.8xlarge", 3, "on-demand")
    assert [c["name"] for c in preflight.failed(result)] == ["total_instances"]
    calls = sandbox.calls()
    assert calls and {c["service"] for c in calls} <= {"servicequotas", "sagemaker"}
    assert all(c["action"].startswith(("List", "Describe", "Get")) for c in calls)
    assert sandbox.counters()["by_action"] == {}


def test_sandbox_training_plan_reservation(sandbox):
    plan = sandbox.add_training_plan("p5-week", "ml.p5.48xlarge", 4, "us-west-2b")
    arn = plan["TrainingPlanArn"]
    result = preflight.check(*_clients(), REGION, "ml.p5.48xlarge", 4, "training-plan", arn)
    check = by_name(result)["training_plan"]
    assert result["ok"] and check["available"] == 4
    assert check["availability_zones"] == ["us-west-2b"]
    result = preflight.check(*_clients(), REGION, "ml.p5.48xlarge", 5, "training-plan", arn)
    assert not by_name(result)["training_plan"]["ok"]
    result = preflight.check(*_clients(), REGION, "ml.p4d.24xlarge", 1, "training-plan", arn)
    assert "not ml.p4d.24xlarge" in by_name(result)["training_plan"]["message"]
    expired = sandbox.add_training_plan("old-week", "ml.p5.48xlarge", 4, "us-west-2b",
                                        status="Expired")["TrainingPlanArn"]
    result = preflight.check(*_clients(), REGION, "ml.p5.48xlarge", 1, "training-plan", expired)
    assert "Expired" in by_name(result)["training_plan"]["message"]
    missing = arn.replace("p5-week", "nope")
    result = preflight.check(*_clients(), REGION, "ml.p5.48xlarge", 1, "training-plan", missing)
    assert "does not exist" in by_name(result)["training_plan"]["message"]
