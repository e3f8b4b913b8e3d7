"""The one way to write a gap (`sandbox.gaps`): its request path for JSON-protocol and
REST-JSON services (input checked against botocore's model, output cut to its shape, errors in
AWS's), and a reset that leaves no gap state behind."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sandbox import gaps
from sandbox.control import SandboxControl
from sandbox.gaps import AwsError, GapContext, answers
from sandbox.gaps.eks_state import EKS
from sandbox.gaps.fsx import FILE_SYSTEMS
from sandbox.gaps.quotas import QUOTAS
from sandbox.gaps.sagemaker_governance import GOVERNANCE
from sandbox.gaps.sagemaker_plans import PLANS
from sandbox.gaps.sagemaker_state import HYPERPOD
from sandbox.local_aws import LocalAws
from tests.sandbox.hyperpodkit import cluster_request, gpu_group, make_lab, unique

P5 = "ml.p5.48xlarge for cluster usage"
ACCOUNT = "123456789012"  # moto's, for the sandbox's credentials


def _code(caught: pytest.ExceptionInfo[ClientError]) -> tuple[str, int]:
    response = caught.value.response
    return response["Error"]["Code"], response["ResponseMetadata"]["HTTPStatusCode"]


@pytest.fixture
def scratch_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Answers registered by a test are forgotten after it."""
    monkeypatch.setattr(gaps, "_ANSWERS", dict(gaps._ANSWERS))


def test_a_json_protocol_gap_is_checked_and_answered_in_the_models_shapes(
    scratch_answers: None, client_factory: Any, control: SandboxControl
) -> None:
    # signed "servicequotas", modelled as "service-quotas"
    @answers("servicequotas", "GetServiceQuota")
    def get_quota(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any]:
        if params["QuotaCode"] == "L-00000000":
            raise AwsError("NoSuchResourceException", "no such quota")
        return {"Quota": {"QuotaCode": params["QuotaCode"], "Value": 7.0, "NotInModel": 1}}

    quotas = client_factory("service-quotas")
    quota = quotas.get_service_quota(ServiceCode="sagemaker", QuotaCode="L-12345678")["Quota"]
    assert quota == {"QuotaCode": "L-12345678", "Value": 7.0}  # cut to the output shape
    with pytest.raises(ClientError) as caught:
        quotas.get_service_quota(ServiceCode="sagemaker", QuotaCode="L-00000000")
    assert _code(caught) == ("NoSuchResourceException", 400)
    with pytest.raises(ClientError) as caught:  # the model: ServiceCode is at most 63 long
        quotas.get_service_quota(ServiceCode="s" * 64, QuotaCode="L-12345678")
    assert _code(caught) == ("ValidationException", 400)
    assert "at 'serviceCode' failed to satisfy constraint" in str(caught.value)
    logged = control.calls(service="servicequotas", action="GetServiceQuota")
    assert [c["status"] for c in logged] == [200, 400, 400]


def test_rest_json_requests_take_the_same_path(
    scratch_answers: None, client_factory: Any
) -> None:
    eks = client_factory("eks")
    # a query-string member, read in its model type and checked against the model
    with pytest.raises(ClientError) as caught:
        eks.describe_addon_versions(maxResults=101)
    assert _code(caught) == ("InvalidParameterException", 400)
    assert "Value 101 at 'maxResults' failed to satisfy constraint" in str(caught.value)
    first = eks.describe_addon_versions(maxResults=2, kubernetesVersion="1.33")
    assert len(first["addons"]) == 2
    rest = eks.describe_addon_versions(maxResults=2, kubernetesVersion="1.33",
                                       nextToken=first["nextToken"])
    assert {a["addonName"] for a in rest["addons"]}.isdisjoint(
        {a["addonName"] for a in first["addons"]})

    @answers("eks", "ListNodegroups")
    def broken(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("a bug in a gap")

    with pytest.raises(ClientError) as caught:  # said in AWS's shape, not as an HTML page
        eks.list_nodegroups(clusterName="any")
    assert _code(caught) == ("InternalFailure", 500)
    assert "a bug in a gap" in str(caught.value)


def _fill_every_gap(local_aws: LocalAws, client_factory: Any, control: SandboxControl) -> None:
    """State in each gap: an EKS cluster with an add-on, an access entry and a pod identity
    association (and its local Kubernetes), a HyperPod cluster booting with a team's compute
    quota, an FSx file system, a quota override and a training plan."""
    lab = make_lab(client_factory, control, "reset")
    eks, sm, fsx = (client_factory(s) for s in ("eks", "sagemaker", "fsx"))
    eks.create_addon(clusterName=lab.eks_name, addonName="vpc-cni")
    eks.create_access_entry(clusterName=lab.eks_name, principalArn=lab.cluster_role)
    eks.create_pod_identity_association(clusterName=lab.eks_name, namespace="aws-hyperpod",
                                        serviceAccount="trainer", roleArn=lab.cluster_role)
    fsx.create_file_system(
        FileSystemType="LUSTRE", StorageCapacity=1200, SubnetIds=[lab.subnet_a],
        SecurityGroupIds=[lab.security_group],
        LustreConfiguration={"DeploymentType": "SCRATCH_2"})
    control.set_quota(50, P5)
    control.add_training_plan(unique("plan"), "ml.p5.48xlarge", 1, "us-west-2a")
    arn = sm.create_cluster(**cluster_request(lab, groups=[gpu_group(lab, InstanceCount=1)])
                            )["ClusterArn"]
    sm.create_compute_quota(Name="team", ClusterArn=arn, ComputeQuotaTarget={"TeamName": "team"},
                            ComputeQuotaConfig={"ComputeQuotaResources": [
                                {"InstanceType": "ml.p5.48xlarge", "Count": 1}]})

    app = local_aws.app
    assert EKS.of(app).clusters[(ACCOUNT, "us-west-2", lab.eks_name)].pod_identities
    assert HYPERPOD.of(app).in_region(ACCOUNT, "us-west-2")
    assert FILE_SYSTEMS.of(app).systems
    assert QUOTAS.of(app).overrides()
    assert PLANS.of(app).plans
    assert GOVERNANCE.of(app).quotas
    assert lab.eks_name in app.kubes.names()
    assert control.info()["pending_transitions"] > 0


def _moto_reset(local_aws: LocalAws, control: SandboxControl) -> None:
    request = urllib.request.Request(local_aws.url + "/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=30) as reply:
        assert json.loads(reply.read()) == {"status": "ok"}


@pytest.mark.parametrize(
    "reset",
    [_moto_reset, lambda aws, control: control.reset(aws=True)],
    ids=["moto-api-reset", "sandbox-control-reset"],
)
def test_a_reset_leaves_no_gap_state(
    reset: Any, local_aws: LocalAws, client_factory: Any, control: SandboxControl
) -> None:
    _fill_every_gap(local_aws, client_factory, control)
    app = local_aws.app

    reset(local_aws, control)

    assert {"eks", "sagemaker", "fsx", "quotas", "training_plans"} <= set(gaps.declared())
    assert app.gap_state == {}  # every gap's state, declared or not
    assert all(state.peek(app) is None for state in gaps._STATES.values())
    assert app.kubes.names() == []
    assert control.info()["pending_transitions"] == 0
    # and as the APIs see it
    assert client_factory("eks").list_clusters()["clusters"] == []
    assert client_factory("sagemaker").list_clusters()["ClusterSummaries"] == []
    assert client_factory("fsx").describe_file_systems()["FileSystems"] == []
    assert control.quotas(overridden=True) == []
    assert control.training_plans()["training_plans"] == []
    assert client_factory("sagemaker").list_compute_quotas()["ComputeQuotaSummaries"] == []
