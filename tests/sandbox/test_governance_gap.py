"""SageMaker task governance (compute quotas, cluster scheduler configs) as the sandbox answers
it, through boto3 over HTTP: versions and stale updates, AWS's refusals, lists, tags, and
Creating → Created, Updating → Updated, Deleting → gone on the sandbox's clock."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sandbox.control import SandboxControl
from sandbox.gaps.sagemaker_governance import GOVERNANCE_CHANGING_S, GOVERNANCE_DELETING_S
from sandbox.local_aws import LocalAws
from tests.sandbox.hyperpodkit import Lab, cluster_request, gpu_group, make_lab

ID = r"[a-z0-9]{12}"
QUOTA_ARN = rf"arn:aws:sagemaker:us-west-2:123456789012:compute-quota/{ID}"
CONFIG_ARN = rf"arn:aws:sagemaker:us-west-2:123456789012:cluster-scheduler-config/{ID}"
SANDBOX_SPEED = 1.0  # the conftest's local AWS at real speed: only advance_clock moves it


@pytest.fixture(scope="module")
def lab(local_aws: LocalAws, client_factory: Any) -> Lab:
    return make_lab(client_factory, SandboxControl(local_aws.url), "gov")


@pytest.fixture(scope="module")
def cluster(lab: Lab, client_factory: Any) -> str:
    """One HyperPod cluster (EKS-orchestrated, one ml.p5.48xlarge) for the module: its ARN."""
    request = cluster_request(lab, groups=[gpu_group(lab, InstanceCount=1)])
    return str(client_factory("sagemaker").create_cluster(**request)["ClusterArn"])


@pytest.fixture
def sm(client_factory: Any) -> Any:
    return client_factory("sagemaker")


def _team() -> str:
    return f"team-{uuid.uuid4().hex[:6]}"  # no AWS reset between tests: it costs seconds


def _code(exc: pytest.ExceptionInfo[ClientError]) -> str:
    return exc.value.response["Error"]["Code"]


def _quota(cluster: str, team: str, count: int = 1, **config: Any) -> dict[str, Any]:
    return {"Name": team, "ClusterArn": cluster, "ComputeQuotaTarget": {"TeamName": team},
            "ComputeQuotaConfig": {"ComputeQuotaResources": [
                {"InstanceType": "ml.p5.48xlarge", "Count": count}], **config}}


def test_a_compute_quota_is_created_versioned_updated_and_deleted(
        sm: Any, cluster: str, control: SandboxControl) -> None:
    team = _team()
    made = sm.create_compute_quota(**{
        **_quota(cluster, team), "Description": "research team",
        "ComputeQuotaTarget": {"TeamName": team, "FairShareWeight": 10},
        "Tags": [{"Key": "hypd:team", "Value": team}]})
    ident, arn = made["ComputeQuotaId"], made["ComputeQuotaArn"]
    assert re.fullmatch(QUOTA_ARN, arn) and arn.endswith("/" + ident)
    found = sm.describe_compute_quota(ComputeQuotaId=ident)
    assert (found["Status"], found["ComputeQuotaVersion"]) == ("Creating", 1)
    assert (found["ClusterArn"], found["Name"], found["Description"]) == (
        cluster, team, "research team")
    assert found["ComputeQuotaTarget"] == {"TeamName": team, "FairShareWeight": 10}
    assert found["ActivationState"] == "Enabled"
    # the documented defaults are shown
    assert found["ComputeQuotaConfig"] == {
        "ComputeQuotaResources": [{"InstanceType": "ml.p5.48xlarge", "Count": 1}],
        "ResourceSharingConfig": {"Strategy": "LendAndBorrow", "BorrowLimit": 50},
        "PreemptTeamTasks": "LowerPriority"}
    control.advance_clock(GOVERNANCE_CHANGING_S)
    assert sm.describe_compute_quota(ComputeQuotaId=ident)["Status"] == "Created"
    assert sm.list_tags(ResourceArn=arn)["Tags"] == [{"Key": "hypd:team", "Value": team}]
    listed = sm.list_compute_quotas(ClusterArn=cluster, NameContains=team)
    assert [(q["ComputeQuotaId"], q["Status"], q["ComputeQuotaVersion"])
            for q in listed["ComputeQuotaSummaries"]] == [(ident, "Created", 1)]

    updated = sm.update_compute_quota(
        ComputeQuotaId=ident, TargetVersion=1, ActivationState="Disabled",
        ComputeQuotaConfig={"ComputeQuotaResources": [
            {"InstanceType": "ml.p5.48xlarge", "Count": 0, "Accelerators": 4}],
            "ResourceSharingConfig": {"Strategy": "DontLend"}})
    assert (updated["ComputeQuotaArn"], updated["ComputeQuotaVersion"]) == (arn, 2)
    found = sm.describe_compute_quota(ComputeQuotaId=ident)
    assert (found["Status"], found["ComputeQuotaVersion"], found["ActivationState"]) == (
        "Updating", 2, "Disabled")
    assert found["ComputeQuotaConfig"]["ResourceSharingConfig"] == {"Strategy": "DontLend"}
    assert found["ComputeQuotaTarget"]["FairShareWeight"] == 10  # not given: kept
    with pytest.raises(ClientError) as busy:  # the right version, but still Updating
        sm.update_compute_quota(ComputeQuotaId=ident, TargetVersion=2, Description="x")
    assert _code(busy) == "ConflictException"
    control.advance_clock(GOVERNANCE_CHANGING_S)
    assert sm.describe_compute_quota(ComputeQuotaId=ident)["Status"] == "Updated"
    with pytest.raises(ClientError) as stale:
        sm.update_compute_quota(ComputeQuotaId=ident, TargetVersion=1, Description="stale")
    assert _code(stale) == "ConflictException"
    assert "TargetVersion 1 is not the current version 2" in str(stale.value)
    first = sm.describe_compute_quota(ComputeQuotaId=ident, ComputeQuotaVersion=1)
    assert (first["ComputeQuotaVersion"], first["ActivationState"]) == (1, "Enabled")
    with pytest.raises(ClientError) as never:
        sm.describe_compute_quota(ComputeQuotaId=ident, ComputeQuotaVersion=7)
    assert _code(never) == "ResourceNotFound"

    sm.delete_compute_quota(ComputeQuotaId=ident)
    assert sm.describe_compute_quota(ComputeQuotaId=ident)["Status"] == "Deleting"
    sm.delete_compute_quota(ComputeQuotaId=ident)  # again: nothing more happens
    control.advance_clock(GOVERNANCE_DELETING_S)
    with pytest.raises(ClientError) as gone:
        sm.describe_compute_quota(ComputeQuotaId=ident)
    assert _code(gone) == "ResourceNotFound"
    assert sm.list_compute_quotas(NameContains=team)["ComputeQuotaSummaries"] == []
    with pytest.raises(ClientError) as gone:
        sm.delete_compute_quota(ComputeQuotaId=ident)
    assert _code(gone) == "ResourceNotFound"
    # the team is free again
    sm.create_compute_quota(**_quota(cluster, team))


def test_aws_refuses_what_does_not_fit_the_cluster_or_the_model(
        sm: Any, cluster: str, lab: Lab, client_factory: Any, control: SandboxControl) -> None:
    raw = client_factory("sagemaker", parameter_validation=False)  # the server checks
    team = _team()
    unknown = cluster[:-12] + "zzzzzzzzzzzz"
    for bad, says in (
            (_quota(unknown, team), "does not exist"),
            (_quota(cluster, team, ComputeQuotaResources=[
                {"InstanceType": "ml.g5.xlarge", "Count": 1}]),
             "is not an instance type of cluster"),
            (_quota(cluster, team, ComputeQuotaResources=[  # no amount at all
                {"InstanceType": "ml.p5.48xlarge"}]), "must give Count"),
            (_quota(cluster, team, ResourceSharingConfig={
                "Strategy": "LendAndBorrow", "BorrowLimit": 600}), "from 1 to 500"),
            (_quota(cluster, team, count=-1), "greater than or equal to 0"),  # the model
            ({**_quota(cluster, team), "ComputeQuotaTarget": {"TeamName": "Team_A"}},
             "regular expression pattern"),  # the model's team-name pattern
            ({**_quota(cluster, team), "ClusterArn": "not-an-arn"},
             "regular expression pattern")):
        with pytest.raises(ClientError) as refused:
            raw.create_compute_quota(**bad)
        assert _code(refused) == "ValidationException", bad
        assert says in str(refused.value), str(refused.value)
    assert sm.list_compute_quotas(NameContains=team)["ComputeQuotaSummaries"] == []

    ident = sm.create_compute_quota(**_quota(cluster, team))["ComputeQuotaId"]
    with pytest.raises(ClientError) as taken:  # one quota per team per cluster
        sm.create_compute_quota(**{**_quota(cluster, team), "Name": f"{team}-again"})
    assert _code(taken) == "ConflictException"
    assert ident in str(taken.value)
    with pytest.raises(ClientError) as missing:
        sm.update_compute_quota(ComputeQuotaId="abcdefabcdef", TargetVersion=1)
    assert _code(missing) == "ResourceNotFound"
    with pytest.raises(ClientError) as creating:  # not while Creating
        sm.update_compute_quota(ComputeQuotaId=ident, TargetVersion=1, Description="x")
    assert _code(creating) == "ConflictException"
    other = _team()
    sm.create_compute_quota(**_quota(cluster, other))
    control.advance_clock(GOVERNANCE_CHANGING_S)
    with pytest.raises(ClientError) as renamed:  # to a team that has its quota
        sm.update_compute_quota(ComputeQuotaId=ident, TargetVersion=1,
                                ComputeQuotaTarget={"TeamName": other})
    assert _code(renamed) == "ConflictException"
    assert f"Team {other} already has a compute quota" in str(renamed.value)

    # task governance is for EKS-orchestrated clusters: not for a Slurm one
    slurm = cluster_request(lab, groups=[gpu_group(lab, InstanceCount=1)])
    for eks_only in ("Orchestrator", "AutoScaling", "NodeProvisioningMode"):
        slurm.pop(eks_only)
    slurm["InstanceGroups"][0].pop("KubernetesConfig")
    slurm_arn = sm.create_cluster(**slurm)["ClusterArn"]
    with pytest.raises(ClientError) as not_eks:
        sm.create_compute_quota(**_quota(slurm_arn, _team()))
    assert _code(not_eks) == "ValidationException"
    assert "only for EKS-orchestrated clusters" in str(not_eks.value)


def test_one_scheduler_config_per_cluster_versioned_and_timed(
        sm: Any, cluster: str, control: SandboxControl) -> None:
    made = sm.create_cluster_scheduler_config(
        Name="policy", ClusterArn=cluster, Description="hypd's policy",
        SchedulerConfig={"PriorityClasses": [{"Name": "inference", "Weight": 90},
                                             {"Name": "training", "Weight": 50}]})
    ident, arn = made["ClusterSchedulerConfigId"], made["ClusterSchedulerConfigArn"]
    assert re.fullmatch(CONFIG_ARN, arn) and arn.endswith("/" + ident)
    try:
        found = sm.describe_cluster_scheduler_config(ClusterSchedulerConfigId=ident)
        assert (found["Status"], found["ClusterSchedulerConfigVersion"]) == ("Creating", 1)
        assert found["SchedulerConfig"]["FairShare"] == "Enabled"  # the documented default
        assert [c["Name"] for c in found["SchedulerConfig"]["PriorityClasses"]] == [
            "inference", "training"]
        with pytest.raises(ClientError) as second:
            sm.create_cluster_scheduler_config(Name="other", ClusterArn=cluster,
                                               SchedulerConfig={"FairShare": "Disabled"})
        assert _code(second) == "ConflictException"
        with pytest.raises(ClientError) as twice:  # the same class name twice
            sm.update_cluster_scheduler_config(
                ClusterSchedulerConfigId=ident, TargetVersion=1,
                SchedulerConfig={"PriorityClasses": [{"Name": "a", "Weight": 1},
                                                     {"Name": "a", "Weight": 2}]})
        assert _code(twice) == "ValidationException"
        control.advance_clock(GOVERNANCE_CHANGING_S)
        listed = sm.list_cluster_scheduler_configs(ClusterArn=cluster, Status="Created")
        assert [c["ClusterSchedulerConfigId"] for c in
                listed["ClusterSchedulerConfigSummaries"]] == [ident]
        new = sm.update_cluster_scheduler_config(
            ClusterSchedulerConfigId=ident, TargetVersion=1,
            SchedulerConfig={"FairShare": "Disabled", "IdleResourceSharing": "Enabled"})
        assert new["ClusterSchedulerConfigVersion"] == 2
        assert sm.describe_cluster_scheduler_config(
            ClusterSchedulerConfigId=ident)["Status"] == "Updating"
        control.advance_clock(GOVERNANCE_CHANGING_S)
        found = sm.describe_cluster_scheduler_config(ClusterSchedulerConfigId=ident)
        assert (found["Status"], found["SchedulerConfig"]["FairShare"]) == (
            "Updated", "Disabled")
        with pytest.raises(ClientError) as stale:
            sm.update_cluster_scheduler_config(ClusterSchedulerConfigId=ident,
                                               TargetVersion=1, Description="stale")
        assert _code(stale) == "ConflictException"
    finally:  # the cluster's one scheduler config: leave the module's cluster without it
        sm.delete_cluster_scheduler_config(ClusterSchedulerConfigId=ident)
        control.advance_clock(GOVERNANCE_DELETING_S)
    with pytest.raises(ClientError) as gone:
        sm.describe_cluster_scheduler_config(ClusterSchedulerConfigId=ident)
    assert _code(gone) == "ResourceNotFound"
    again = sm.create_cluster_scheduler_config(Name="policy", ClusterArn=cluster,
                                               SchedulerConfig={})
    sm.delete_cluster_scheduler_config(ClusterSchedulerConfigId=again["ClusterSchedulerConfigId"])
    control.advance_clock(GOVERNANCE_DELETING_S)


def test_lists_filter_sort_and_page(sm: Any, cluster: str, control: SandboxControl) -> None:
    stem = f"ls{uuid.uuid4().hex[:6]}"
    made = [sm.create_compute_quota(**_quota(cluster, f"{stem}-{n}"))["ComputeQuotaId"]
            for n in ("b", "a", "c")]
    control.advance_clock(GOVERNANCE_CHANGING_S)
    sm.delete_compute_quota(ComputeQuotaId=made[2])

    pages = sm.get_paginator("list_compute_quotas").paginate(
        NameContains=stem, SortBy="Name", SortOrder="Ascending",
        PaginationConfig={"PageSize": 2})
    seen = [[q["Name"] for q in page["ComputeQuotaSummaries"]] for page in pages]
    assert seen == [[f"{stem}-a", f"{stem}-b"], [f"{stem}-c"]]
    newest_first = sm.list_compute_quotas(NameContains=stem)["ComputeQuotaSummaries"]
    assert [q["ComputeQuotaId"] for q in newest_first] == made[::-1]
    deleting = sm.list_compute_quotas(NameContains=stem.upper(), Status="Deleting")
    assert [q["ComputeQuotaId"] for q in deleting["ComputeQuotaSummaries"]] == [made[2]]
    other = cluster[:-12] + "zzzzzzzzzzzz"
    assert sm.list_compute_quotas(ClusterArn=other)["ComputeQuotaSummaries"] == []
