"""cloud/iam.py: the pinned trust and permission documents, and ensure/delete against moto
(with AWS-managed policies loaded, so attaching AmazonEKSClusterPolicy is real)."""

from __future__ import annotations

import json

import pytest

from cloud import aws
from cloud import iam as roles
from tests.cloud.conftest import AWS_MODE, REGION
from tests.deploy.template import actions, boundary_misses, managed_documents

ACCOUNT = "123456789012"
SUBNETS = ["subnet-0aaa", "subnet-0bbb"]
GROUPS = ["sg-0ccc"]


BOUNDARY = f"arn:aws:iam::{ACCOUNT}:policy/hypd/test-boundary"


@pytest.fixture
def iam(moto_aws, monkeypatch):
    from moto.core.config import default_user_config

    # Replace moto's "iam" section, never change it in place: mock_aws restores its own
    # shallow copy of the config at stop, which holds that same section (changed in place,
    # the flag stayed on for every later test of the process, and each one's mock_aws
    # reset parsed ~1,000 managed policies again).
    saved = dict(default_user_config.get("iam") or {})
    default_user_config["iam"] = {**saved, "load_aws_managed_policies": True}
    monkeypatch.setenv("HYPD_ROLE_BOUNDARY_ARN", BOUNDARY)
    try:
        yield aws.client("iam", REGION, AWS_MODE)
    finally:
        default_user_config["iam"] = saved


def statements(spec: roles.RoleSpec) -> list[dict]:
    return [s for doc in spec.inline.values() for s in doc["Statement"]]


def as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def exec_role() -> roles.RoleSpec:
    return roles.hyperpod_execution_role("lab", REGION, ACCOUNT, "lab", "sagemaker-lab-bucket",
                                         "vpc-0123", SUBNETS, GROUPS)


# ---------------------------------------------------------------------------------------
# the documents, pinned
# ---------------------------------------------------------------------------------------


def test_names_and_tags():
    assert roles.role_name("lab", "eks-cluster") == "hypd-lab-eks-cluster"
    longest = "a" * 32
    for spec in (roles.eks_cluster_role(longest, REGION),
                 roles.hyperpod_execution_role(longest, REGION, ACCOUNT, longest, "b", "v", [],
                                               []),
                 roles.hyperpod_cluster_role(longest, REGION, ACCOUNT)):
        assert len(spec.name) <= 64
        assert spec.name.startswith(f"hypd-{longest}-")
        tags = {t["Key"]: t["Value"] for t in spec.tags}
        assert tags["hypd:managed-by"] == "hypd"
        assert tags["hypd:cluster"] == longest
        assert tags["hypd:role"] == spec.purpose
    with pytest.raises(ValueError):
        roles.role_name("a" * 60, "eks-cluster")


def test_eks_cluster_role_document():
    spec = roles.eks_cluster_role("lab", REGION)
    assert spec.name == "hypd-lab-eks-cluster"
    assert spec.trust == {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"},
        "Action": "sts:AssumeRole"}]}
    assert spec.managed_arns == ("arn:aws:iam::aws:policy/AmazonEKSClusterPolicy",)
    assert spec.inline == {}
    cn = roles.eks_cluster_role("lab", "cn-north-1")
    assert cn.managed_arns == ("arn:aws-cn:iam::aws:policy/AmazonEKSClusterPolicy",)


def test_hyperpod_execution_role_document():
    spec = exec_role()
    assert spec.name == "hypd-lab-hp-exec"
    assert spec.trust["Statement"] == [{"Effect": "Allow",
                                        "Principal": {"Service": "sagemaker.amazonaws.com"},
                                        "Action": "sts:AssumeRole"}]
    assert spec.managed_arns == (
        "arn:aws:iam::aws:policy/AmazonSageMakerClusterInstanceRolePolicy",)
    by_sid = {s["Sid"]: s for s in statements(spec)}
    ec2 = f"arn:aws:ec2:{REGION}:{ACCOUNT}"
    assert sorted(by_sid["VpcCniNetworkInterfaces"]["Resource"]) == sorted([
        f"{ec2}:instance/*", f"{ec2}:network-interface/*", f"{ec2}:vpc/vpc-0123",
        f"{ec2}:subnet/subnet-0aaa", f"{ec2}:subnet/subnet-0bbb",
        f"{ec2}:security-group/sg-0ccc"])
    assert by_sid["VpcCniSubnetsAndGroupsInVpc"]["Resource"] == [
        f"{ec2}:security-group/*", f"{ec2}:subnet/*"]
    assert by_sid["VpcCniSubnetsAndGroupsInVpc"]["Condition"] == {
        "ArnEquals": {"ec2:Vpc": f"{ec2}:vpc/vpc-0123"}}
    assert by_sid["VpcCniSubnetsAndGroupsInVpc"]["Action"] == \
        by_sid["VpcCniNetworkInterfaces"]["Action"]
    assert set(by_sid["VpcCniNetworkInterfaces"]["Action"]) == {
        "ec2:AssignPrivateIpAddresses", "ec2:AttachNetworkInterface",
        "ec2:CreateNetworkInterface", "ec2:CreateNetworkInterfacePermission",
        "ec2:DeleteNetworkInterface", "ec2:DeleteNetworkInterfacePermission",
        "ec2:DetachNetworkInterface", "ec2:ModifyNetworkInterfaceAttribute",
        "ec2:UnassignPrivateIpAddresses"}
    assert by_sid["VpcCniTagInterfaces"] == {
        "Sid": "VpcCniTagInterfaces", "Effect": "Allow", "Action": ["ec2:CreateTags"],
        "Resource": [f"{ec2}:network-interface/*"]}
    assert by_sid["PodIdentity"]["Action"] == ["eks-auth:AssumeRoleForPodIdentity"]
    assert by_sid["PodIdentity"]["Resource"] == [f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/lab"]
    assert by_sid["LifecycleScripts"]["Action"] == ["s3:ListBucket"]
    assert by_sid["LifecycleScripts"]["Resource"] == ["arn:aws:s3:::sagemaker-lab-bucket"]
    assert by_sid["LifecycleScriptObjects"]["Action"] == ["s3:GetObject"]
    assert by_sid["LifecycleScriptObjects"]["Resource"] == ["arn:aws:s3:::sagemaker-lab-bucket/*"]
    assert set(by_sid["PullImages"]["Action"]) == {
        "ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetAuthorizationToken",
        "ecr:GetDownloadUrlForLayer"}


def test_hyperpod_cluster_role_document():
    spec = roles.hyperpod_cluster_role("lab", REGION, ACCOUNT)
    assert spec.name == "hypd-lab-hp-cluster"
    assert spec.trust["Statement"][0]["Principal"] == {
        "Service": "hyperpod.sagemaker.amazonaws.com"}
    assert spec.managed_arns == ()
    (only,) = statements(spec)
    assert only["Action"] == ["sagemaker:BatchAddClusterNodes",
                              "sagemaker:BatchDeleteClusterNodes"]
    assert only["Resource"] == [f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/*"]
    assert only["Condition"] == {"StringEquals": {"aws:ResourceAccount":
                                                  "${aws:PrincipalAccount}"}}
    key = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/k1"
    with_kms = statements(roles.hyperpod_cluster_role("lab", REGION, ACCOUNT, [key]))
    assert with_kms[1]["Action"] == ["kms:CreateGrant", "kms:DescribeKey"]
    assert with_kms[1]["Resource"] == [key]
    assert with_kms[1]["Condition"]["Bool"] == {"kms:GrantIsForAWSResource": "true"}


@pytest.mark.parametrize("spec", [roles.eks_cluster_role("lab", REGION), exec_role(),
                                  roles.hyperpod_cluster_role("lab", REGION, ACCOUNT,
                                                              ["arn:aws:kms:x:1:key/k"])],
                         ids=lambda s: s.purpose)
def test_least_privilege(spec):
    """No wildcard action anywhere; Resource "*" only for actions AWS documents as
    unscopable (each listed with its reason in STAR_RESOURCE_ACTIONS)."""
    for statement in statements(spec) + spec.trust["Statement"]:
        assert statement["Effect"] == "Allow"
        assert "NotAction" not in statement and "NotResource" not in statement
        for action in as_list(statement["Action"]):
            assert "*" not in action, action
        if "Resource" in statement and "*" in as_list(statement["Resource"]):
            assert as_list(statement["Resource"]) == ["*"]
            for action in as_list(statement["Action"]):
                assert action in roles.STAR_RESOURCE_ACTIONS, action
    for statement in spec.trust["Statement"]:
        assert statement["Action"] == "sts:AssumeRole"
        assert set(statement["Principal"]) == {"Service"}


# ---------------------------------------------------------------------------------------
# managed features' consumers
# ---------------------------------------------------------------------------------------

EKS_ARN = f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/lab"
ISSUER = f"https://oidc.eks.{REGION}.amazonaws.com/id/ABC123"
PROVIDER = f"arn:aws:iam::{ACCOUNT}:oidc-provider/oidc.eks.{REGION}.amazonaws.com/id/ABC123"
BUCKET = "hypd-lab-0123456789"


def feature_roles() -> list[roles.RoleSpec]:
    pod = roles.pod_identity_trust(ACCOUNT, EKS_ARN)
    irsa = roles.irsa_trust(PROVIDER, ISSUER, "default", "hypd-tiered-checkpointing")
    return [roles.feature_role("lab", REGION, ACCOUNT, roles.PURPOSE_TRAINING_OPERATOR, pod),
            roles.feature_role("lab", REGION, ACCOUNT, roles.PURPOSE_INFERENCE_OPERATOR, irsa,
                               BUCKET),
            roles.feature_role("lab", REGION, ACCOUNT, roles.PURPOSE_OBSERVABILITY, pod),
            roles.feature_role("lab", REGION, ACCOUNT, roles.PURPOSE_TIERED_CHECKPOINTING,
                               irsa, BUCKET)]


def test_pod_identity_trust_is_this_clusters_agent_only():
    (only,) = roles.pod_identity_trust(ACCOUNT, EKS_ARN)["Statement"]
    assert only["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert only["Action"] == ["sts:AssumeRole", "sts:TagSession"]
    assert only["Condition"] == {"StringEquals": {"aws:SourceAccount": ACCOUNT},
                                 "ArnEquals": {"aws:SourceArn": EKS_ARN}}


def test_irsa_trust_is_scoped_to_one_service_account():
    (only,) = roles.irsa_trust(PROVIDER, ISSUER, "default", "hypd-tiered-checkpointing")[
        "Statement"]
    assert only["Principal"] == {"Federated": PROVIDER}
    assert only["Action"] == "sts:AssumeRoleWithWebIdentity"
    host = f"oidc.eks.{REGION}.amazonaws.com/id/ABC123"
    assert only["Condition"] == {"StringEquals": {
        f"{host}:sub": "system:serviceaccount:default:hypd-tiered-checkpointing",
        f"{host}:aud": "sts.amazonaws.com"}}


def test_tiered_checkpointing_may_use_only_the_clusters_bucket():
    spec = feature_roles()[3]
    assert spec.name == "hypd-lab-ckpt"
    assert statements(spec) == [
        {"Sid": "ListCheckpoints", "Effect": "Allow", "Action": ["s3:ListBucket"],
         "Resource": [f"arn:aws:s3:::{BUCKET}"]},
        {"Sid": "ReadWriteCheckpoints", "Effect": "Allow",
         "Action": ["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject",
                    "s3:PutObject"],
         "Resource": [f"arn:aws:s3:::{BUCKET}/*"]}]
    with pytest.raises(ValueError, match="bucket"):
        roles.feature_role("lab", REGION, ACCOUNT, roles.PURPOSE_TIERED_CHECKPOINTING,
                           spec.trust)


def test_operator_and_observability_policies_are_pinned():
    training, inference, observability, _ = feature_roles()
    assert statements(training) == [
        {"Sid": "ReadHyperPodNodes", "Effect": "Allow",
         "Action": ["sagemaker:DescribeClusterNode"],
         "Resource": [f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/*"]}]
    assert [(s["Sid"], s["Action"]) for s in statements(inference)] == [
        ("ListModelBucket", ["s3:ListBucket"]),
        ("ReadModelWeights", ["s3:GetObject"]),
        ("PassItselfToSageMaker", ["iam:PassRole"])]
    # AWS's policy passes only SageMakerHyperPodInference* roles: hypd's role passes itself,
    # to SageMaker only, as its endpoints' execution role, which SageMaker may assume
    passing = statements(inference)[2]
    assert passing["Resource"] == [f"arn:aws:iam::{ACCOUNT}:role/hypd/{inference.name}"]
    assert passing["Condition"] == {
        "StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}}
    assert {"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"},
            "Action": "sts:AssumeRole"} in inference.trust["Statement"]
    assert inference.trust["Statement"][0]["Action"] == "sts:AssumeRoleWithWebIdentity"
    # the operator's own needs (UpdateClusterInference at start, its SageMaker endpoints,
    # TLS certificates) are AWS's policy for it, which hypd's boundary lets through whole
    assert inference.managed_arns == (
        "arn:aws:iam::aws:policy/AmazonSageMakerHyperPodInferenceAccess",)
    assert boundary_misses(managed_documents(set(inference.managed_arns))) == []
    assert "sagemaker:UpdateClusterInference" in actions(
        managed_documents(set(inference.managed_arns))[0][1])
    assert (training.managed_arns, observability.managed_arns) == ((), ())
    assert statements(observability) == [
        {"Sid": "WriteMetrics", "Effect": "Allow", "Action": ["aps:RemoteWrite"],
         "Resource": [f"arn:aws:aps:{REGION}:{ACCOUNT}:workspace/*"]}]


def keda_role() -> roles.RoleSpec:
    irsa = roles.irsa_trust(PROVIDER, ISSUER, "keda", "keda-operator")
    return roles.feature_role("lab", REGION, ACCOUNT, roles.PURPOSE_KEDA, irsa)


def test_keda_may_only_read_cloudwatch_metrics():
    """The inference operator's CloudWatch triggers are read by KEDA's operator as its own
    identity; metric reads have no resource types, so "*" — and nothing else."""
    spec = keda_role()
    assert statements(spec) == [
        {"Sid": "ReadMetrics", "Effect": "Allow",
         "Action": ["cloudwatch:GetMetricData", "cloudwatch:GetMetricStatistics",
                    "cloudwatch:ListMetrics"], "Resource": "*"}]
    assert boundary_misses(list(spec.inline.items())) == []
    assert spec.managed_arns == ()


def spaces_roles() -> tuple[roles.RoleSpec, roles.RoleSpec]:
    pod = roles.pod_identity_trust(ACCOUNT, EKS_ARN)
    return (roles.feature_role("lab", REGION, ACCOUNT, roles.PURPOSE_SPACES, pod),
            roles.feature_role("lab", REGION, ACCOUNT, roles.PURPOSE_EBS_CSI, pod))


def test_the_spaces_controller_may_only_make_ssm_activations_tagged_for_its_cluster():
    """AWS's AmazonSageMakerSpacesControllerPolicy less its KMS part (the web UI router's
    token signing, which hypd's access strategy does not use): activations only with the
    tags that name this EKS cluster, and their and the sessions' upkeep."""
    spaces, _ = spaces_roles()
    assert spaces.name == "hypd-lab-spaces" and spaces.managed_arns == ()
    assert spaces.trust == roles.pod_identity_trust(ACCOUNT, EKS_ARN)
    assert statements(spaces) == [
        {"Sid": "ActivationsOfThisCluster", "Effect": "Allow",
         "Action": ["ssm:CreateActivation"], "Resource": "*",
         "Condition": {"StringEquals": {
             "aws:RequestTag/sagemaker.amazonaws.com/managed-by": "amazon-sagemaker-spaces",
             "aws:RequestTag/sagemaker.amazonaws.com/eks-cluster-arn": EKS_ARN}}},
        {"Sid": "ActivationsAndSessions", "Effect": "Allow",
         "Action": ["ssm:DeleteActivation", "ssm:DescribeActivations",
                    "ssm:DescribeSessions"], "Resource": "*"},
        {"Sid": "TagSpaceInstances", "Effect": "Allow", "Action": ["ssm:AddTagsToResource"],
         "Resource": [f"arn:aws:ssm:{REGION}:{ACCOUNT}:managed-instance/*"]}]
    assert not any(a.startswith("kms:") for s in statements(spaces) for a in s["Action"])
    assert boundary_misses(list(spaces.inline.items())) == []


def test_the_ebs_driver_may_only_change_volumes_it_made():
    _, ebs = spaces_roles()
    assert ebs.name == "hypd-lab-ebs-csi" and ebs.managed_arns == ()
    volumes = [f"arn:aws:ec2:{REGION}:{ACCOUNT}:volume/*"]
    assert statements(ebs) == [
        {"Sid": "Describe", "Effect": "Allow",
         "Action": ["ec2:DescribeAvailabilityZones", "ec2:DescribeInstances",
                    "ec2:DescribeTags", "ec2:DescribeVolumes",
                    "ec2:DescribeVolumesModifications"], "Resource": "*"},
        {"Sid": "CreateVolumes", "Effect": "Allow", "Action": ["ec2:CreateVolume"],
         "Resource": volumes,
         "Condition": {"StringEquals": {"aws:RequestTag/ebs.csi.aws.com/cluster": "true"}}},
        {"Sid": "TagNewVolumes", "Effect": "Allow", "Action": ["ec2:CreateTags"],
         "Resource": volumes,
         "Condition": {"StringEquals": {"ec2:CreateAction": "CreateVolume"}}},
        {"Sid": "AttachToInstances", "Effect": "Allow",
         "Action": ["ec2:AttachVolume", "ec2:DetachVolume"],
         "Resource": [f"arn:aws:ec2:{REGION}:{ACCOUNT}:instance/*"]},
        {"Sid": "ItsOwnVolumes", "Effect": "Allow",
         "Action": ["ec2:AttachVolume", "ec2:DeleteVolume", "ec2:DetachVolume",
                    "ec2:ModifyVolume"], "Resource": volumes,
         "Condition": {"StringEquals": {"aws:ResourceTag/ebs.csi.aws.com/cluster": "true"}}}]
    # no snapshots: hypd takes none of a space's home volume
    assert not any("Snapshot" in a for s in statements(ebs) for a in s["Action"])
    assert boundary_misses(list(ebs.inline.items())) == []


@pytest.mark.parametrize("spec", [*feature_roles(), keda_role(), *spaces_roles()],
                         ids=lambda s: s.purpose)
def test_feature_roles_are_least_privilege(spec):
    for statement in statements(spec):
        assert statement["Effect"] == "Allow" and "NotAction" not in statement
        for action in as_list(statement["Action"]):
            assert "*" not in action, action
        if "*" in as_list(statement["Resource"]):
            assert all(a in roles.STAR_RESOURCE_ACTIONS for a in as_list(statement["Action"]))
    # no AWS-managed policy but the one AWS publishes for that very consumer
    assert spec.managed_arns == tuple(roles.managed_policy_arn(name, REGION) for name in
                                      roles.FEATURE_MANAGED_POLICIES.get(spec.purpose, ()))


def test_an_unchanged_inline_policy_is_not_written_again(iam):
    spec = feature_roles()[0]
    roles.ensure_role_spec(iam, spec)
    iam.put_role_policy(RoleName=spec.name, PolicyName="hypd-training-op",
                        PolicyDocument=json.dumps({  # someone changed it
                            "Version": "2012-10-17",
                            "Statement": statements(feature_roles()[2])}))
    calls = []
    iam.meta.events.register("before-call.iam.PutRolePolicy",
                             lambda **kw: calls.append(kw["params"]))
    roles.ensure_role_spec(iam, spec)
    assert len(calls) == 1  # drifted: converged again
    roles.ensure_role_spec(iam, spec)
    assert len(calls) == 1  # as wanted: not written again


# ---------------------------------------------------------------------------------------
# ensure / delete (moto)
# ---------------------------------------------------------------------------------------


def attached(iam, name: str) -> list[str]:
    return sorted(p["PolicyArn"] for p in
                  iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"])


def test_ensure_role_creates_tagged_role_with_policies(iam):
    spec = exec_role()
    arn = roles.ensure_role_spec(iam, spec)
    assert arn == f"arn:aws:iam::{ACCOUNT}:role/hypd/hypd-lab-hp-exec"
    role = iam.get_role(RoleName=spec.name)["Role"]
    assert role["Path"] == "/hypd/"
    assert role["PermissionsBoundary"] == {"PermissionsBoundaryType": "PermissionsBoundaryPolicy",
                                           "PermissionsBoundaryArn": BOUNDARY}
    assert role["AssumeRolePolicyDocument"] == spec.trust
    tags = {t["Key"]: t["Value"] for t in iam.list_role_tags(RoleName=spec.name)["Tags"]}
    assert tags == {"hypd:managed-by": "hypd", "hypd:cluster": "lab", "hypd:role": "hp-exec"}
    assert attached(iam, spec.name) == list(spec.managed_arns)
    inline = iam.get_role_policy(RoleName=spec.name, PolicyName="hypd-hyperpod-eks-node")
    assert inline["PolicyDocument"] == spec.inline["hypd-hyperpod-eks-node"]


def test_ensure_role_is_idempotent_and_converges(iam):
    spec = roles.eks_cluster_role("lab", REGION)
    arn = roles.ensure_role_spec(iam, spec)
    assert roles.ensure_role_spec(iam, spec) == arn
    assert len([r for r in iam.list_roles()["Roles"] if r["RoleName"] == spec.name]) == 1
    # someone detached the policy and loosened the trust: a re-run puts them back
    iam.detach_role_policy(RoleName=spec.name, PolicyArn=spec.managed_arns[0])
    iam.update_assume_role_policy(RoleName=spec.name, PolicyDocument=json.dumps(
        roles.service_trust("ec2.amazonaws.com")))
    roles.ensure_role_spec(iam, spec)
    assert attached(iam, spec.name) == list(spec.managed_arns)
    assert iam.get_role(RoleName=spec.name)["Role"]["AssumeRolePolicyDocument"] == spec.trust


def test_a_role_hypd_did_not_make_is_refused(iam):
    spec = roles.eks_cluster_role("lab", REGION)
    iam.create_role(RoleName=spec.name, AssumeRolePolicyDocument=json.dumps(spec.trust))
    with pytest.raises(roles.RoleConflict, match="hypd did not create it"):
        roles.ensure_role_spec(iam, spec)
    with pytest.raises(roles.RoleConflict):
        roles.delete_role(iam, spec.name)
    assert attached(iam, spec.name) == []  # untouched
    other = roles.eks_cluster_role("lab2", REGION)
    iam.create_role(RoleName=other.name, AssumeRolePolicyDocument=json.dumps(other.trust),
                    Tags=roles.role_tags("someone-else", "eks-cluster"))
    with pytest.raises(roles.RoleConflict):
        roles.ensure_role_spec(iam, other)
    with pytest.raises(ValueError):
        roles.ensure_role(iam, "hypd-x-y", spec.trust, tags=[])


def test_delete_role_cleans_up_and_tolerates_absence(iam):
    spec = exec_role()
    roles.ensure_role_spec(iam, spec)
    iam.create_instance_profile(InstanceProfileName="hypd-lab-profile")
    iam.add_role_to_instance_profile(InstanceProfileName="hypd-lab-profile",
                                     RoleName=spec.name)
    with pytest.raises(roles.RoleConflict):
        roles.delete_role(iam, spec.name, cluster="other")
    assert roles.delete_role(iam, spec.name, cluster="lab") is True
    assert roles.delete_role(iam, spec.name, cluster="lab") is False
    assert not [r for r in iam.list_roles()["Roles"] if r["RoleName"] == spec.name]
    profile = iam.get_instance_profile(InstanceProfileName="hypd-lab-profile")
    assert profile["InstanceProfile"]["Roles"] == []


def test_cluster_roles_are_found_and_deleted_by_tags(iam):
    for spec in (roles.eks_cluster_role("lab", REGION), exec_role(),
                 roles.hyperpod_cluster_role("lab", REGION, ACCOUNT),
                 roles.eks_cluster_role("labx", REGION)):
        roles.ensure_role_spec(iam, spec)
    # same prefix, not hypd's: never touched
    iam.create_role(RoleName="hypd-lab-mine", AssumeRolePolicyDocument=json.dumps(
        roles.service_trust("ec2.amazonaws.com")))
    found = roles.cluster_roles(iam, "lab")
    assert [r["purpose"] for r in found] == ["eks-cluster", "hp-cluster", "hp-exec"]
    assert sorted(roles.delete_cluster_roles(iam, "lab")) == [
        "hypd-lab-eks-cluster", "hypd-lab-hp-cluster", "hypd-lab-hp-exec"]
    left = sorted(r["RoleName"] for r in iam.list_roles()["Roles"])
    assert "hypd-lab-mine" in left and "hypd-labx-eks-cluster" in left
    assert roles.cluster_roles(iam, "lab") == []


def test_account_id_is_the_callers_account(moto_aws):
    assert roles.account_id(aws.client("sts", REGION, AWS_MODE)) == ACCOUNT


def test_an_adopted_role_is_brought_under_the_boundary(iam, monkeypatch):
    """A role hypd made before boundaries (or under another boundary setting) gets the
    boundary in use now when its step runs again."""
    spec = roles.eks_cluster_role("lab", REGION)
    iam.create_role(RoleName=spec.name, AssumeRolePolicyDocument=json.dumps(spec.trust),
                    Tags=spec.tags)
    roles.ensure_role_spec(iam, spec)
    assert iam.get_role(RoleName=spec.name)["Role"]["PermissionsBoundary"][
        "PermissionsBoundaryArn"] == BOUNDARY
    other = f"arn:aws:iam::{ACCOUNT}:policy/hypd/other-boundary"
    monkeypatch.setenv("HYPD_ROLE_BOUNDARY_ARN", other)
    roles.ensure_role_spec(iam, spec)
    assert iam.get_role(RoleName=spec.name)["Role"]["PermissionsBoundary"][
        "PermissionsBoundaryArn"] == other


def test_the_default_boundary_is_the_templates_in_the_callers_account(moto_aws, monkeypatch):
    monkeypatch.delenv("HYPD_ROLE_BOUNDARY_ARN", raising=False)
    monkeypatch.setenv("HYPD_AWS", "aws")
    monkeypatch.setenv("HYPD_REGION", "cn-north-1")
    assert roles.permissions_boundary() == (
        f"arn:aws-cn:iam::{ACCOUNT}:policy/hypd/hypd-role-boundary")


def test_a_missing_boundary_is_a_clear_precondition_failure(iam):
    """IAM refuses a role whose boundary policy does not exist (moto does not check: the
    answer is IAM's, stubbed)."""
    from botocore.stub import Stubber

    spec = roles.eks_cluster_role("lab", REGION)
    with Stubber(iam) as stub:
        stub.add_client_error("get_role", "NoSuchEntity", http_status_code=404)
        stub.add_client_error("create_role", "NoSuchEntity", http_status_code=404,
                              service_message=f"Scope ARN: {BOUNDARY} does not exist")
        with pytest.raises(roles.BoundaryMissing) as refused:
            roles.ensure_role_spec(iam, spec)
    assert refused.value.code == "precondition_failed" and refused.value.status == 412
    assert BOUNDARY in refused.value.message and "HYPD_ROLE_BOUNDARY_ARN" in refused.value.message
