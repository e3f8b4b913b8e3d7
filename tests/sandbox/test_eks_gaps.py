"""EKS through the local AWS, as the product calls it (boto3 over HTTP with the sandbox's
credentials): what moto lacks or gets wrong — idempotent CreateCluster, accessConfig, the
local Kubernetes behind each cluster (endpoint, CA, EKS tokens), timed DELETING, add-ons,
access entries and policies, pod identity associations, request validation."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3
from botocore.exceptions import ClientError
from kubernetes import client as k8s

from sandbox.control import SandboxControl
from sandbox.local_aws import LocalAws
from tests.sandbox.ekskit import REGION, api_client, aws_client, eks_token

ME = "arn:aws:iam::123456789012:user/moto"  # the sandbox's own caller, as an access entry names it
ADMIN = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
VIEW = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy"
EKS_TRUST = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "eks.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
)


@pytest.fixture(scope="module")
def aws() -> Iterator[LocalAws]:
    local = LocalAws(speed=1000)
    local.start()
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture
def control(aws: LocalAws) -> SandboxControl:
    ctl = SandboxControl(aws.url)
    ctl.reset()
    return ctl


@pytest.fixture(scope="module")
def clients(aws: LocalAws) -> dict[str, Any]:
    return {s: aws_client(aws.url, s) for s in ("ec2", "iam", "eks", "sts")}


@pytest.fixture(scope="module")
def slow(aws: LocalAws) -> Iterator[tuple[Any, SandboxControl]]:
    """A second endpoint whose clock runs at wall speed, so "not yet" is not a race; it shares
    moto's state (and the network above) with the fast one, and moves only when told."""
    local = LocalAws(speed=1)
    local.start()
    try:
        yield aws_client(local.url, "eks"), SandboxControl(local.url)
    finally:
        local.stop()


@pytest.fixture(scope="module")
def eks(clients: dict[str, Any]) -> Any:
    return clients["eks"]


@pytest.fixture(scope="module")
def network(clients: dict[str, Any]) -> dict[str, Any]:
    """A VPC with subnets in two zones, a security group and the cluster role."""
    ec2, iam = clients["ec2"], clients["iam"]
    vpc = ec2.create_vpc(CidrBlock="10.77.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(
            VpcId=vpc, CidrBlock=f"10.77.{i * 16}.0/20", AvailabilityZone=f"{REGION}{z}"
        )["Subnet"]["SubnetId"]
        for i, z in enumerate("ab")
    ]
    group = ec2.create_security_group(GroupName="eks-gaps", Description="t", VpcId=vpc)["GroupId"]
    role = iam.create_role(  # a name of its own: moto's IAM outlives this module's fixtures
        RoleName=f"eks-gaps-{uuid.uuid4().hex[:8]}", AssumeRolePolicyDocument=EKS_TRUST
    )["Role"]["Arn"]
    return {"vpc": vpc, "subnets": subnets, "group": group, "role": role}


def _create(
    eks: Any, network: dict[str, Any], name: str | None = None, **extra: Any
) -> dict[str, Any]:
    params: dict[str, Any] = {
        "name": name or f"c-{uuid.uuid4().hex[:8]}",
        "roleArn": network["role"],
        "resourcesVpcConfig": {
            "subnetIds": network["subnets"],
            "securityGroupIds": [network["group"]],
        },
        "accessConfig": {
            "authenticationMode": "API",
            "bootstrapClusterCreatorAdminPermissions": False,
        },
    }
    params.update(extra)
    return eks.create_cluster(**params)["cluster"]  # type: ignore[no-any-return]


@pytest.fixture
def active(eks: Any, network: dict[str, Any], control: SandboxControl) -> dict[str, Any]:
    """An ACTIVE cluster (API mode, no bootstrap admin) and its DescribeCluster."""
    name = _create(eks, network)["name"]
    control.advance_clock(600)
    return eks.describe_cluster(name=name)["cluster"]  # type: ignore[no-any-return]


def _code(caught: pytest.ExceptionInfo[ClientError]) -> str:
    return str(caught.value.response["Error"]["Code"])


# --- clusters ----------------------------------------------------------------------------


def test_cluster_reports_its_local_kubernetes_once_active(
    eks: Any, network: dict[str, Any], control: SandboxControl
) -> None:
    created = _create(eks, network)
    name = created["name"]
    assert created["status"] == "CREATING"
    assert "endpoint" not in created and "certificateAuthority" not in created
    assert created["accessConfig"] == {
        "authenticationMode": "API",
        "bootstrapClusterCreatorAdminPermissions": False,
    }
    issuer = created["identity"]["oidc"]["issuer"]
    assert issuer.startswith(f"https://oidc.eks.{REGION}.amazonaws.com/id/")
    assert len(issuer.rsplit("/", 1)[1]) == 32 and int(issuer.rsplit("/", 1)[1], 16) >= 0
    assert created["version"] == "1.33"
    assert "endpoint" not in eks.describe_cluster(name=name)["cluster"]

    control.advance_clock(600)
    cluster = eks.describe_cluster(name=name)["cluster"]
    assert cluster["status"] == "ACTIVE"
    assert cluster["endpoint"].startswith("https://127.0.0.1:")
    assert base64.b64decode(cluster["certificateAuthority"]["data"]).startswith(
        b"-----BEGIN CERTIFICATE-----"
    )
    assert cluster["identity"]["oidc"]["issuer"] == issuer  # stable
    other = _create(eks, network)
    control.advance_clock(600)
    second = eks.describe_cluster(name=other["name"])["cluster"]
    assert second["endpoint"] != cluster["endpoint"]
    assert second["identity"]["oidc"]["issuer"] != issuer


def test_client_request_token_makes_create_idempotent(
    eks: Any, network: dict[str, Any], control: SandboxControl
) -> None:
    name = f"c-{uuid.uuid4().hex[:8]}"
    first = _create(eks, network, name, clientRequestToken="tok-1")
    again = _create(eks, network, name, clientRequestToken="tok-1")
    assert again["arn"] == first["arn"] and again["status"] == "CREATING"
    control.advance_clock(600)
    after = _create(eks, network, name, clientRequestToken="tok-1")
    assert after["status"] == "ACTIVE"  # a replay never sends it back to CREATING
    assert eks.describe_cluster(name=name)["cluster"]["status"] == "ACTIVE"
    assert eks.list_clusters()["clusters"].count(name) == 1
    with pytest.raises(ClientError) as caught:
        _create(eks, network, name, clientRequestToken="tok-2")
    assert _code(caught) == "ResourceInUseException"
    with pytest.raises(ClientError) as caught:
        _create(eks, network, name)
    assert _code(caught) == "ResourceInUseException"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"name": "bad_name!"}, "regular expression pattern"),
        ({"accessConfig": {"authenticationMode": "TOKENS"}}, "enum value set"),
        (
            {
                "accessConfig": {
                    "authenticationMode": "CONFIG_MAP",
                    "bootstrapClusterCreatorAdminPermissions": False,
                }
            },
            "CONFIG_MAP",
        ),
        ({"roleArn": "arn:aws:iam::123456789012:role/absent"}, "could not be assumed"),
        ({"version": "1.19"}, "unsupported Kubernetes version"),
        ({"resourcesVpcConfig": {"subnetIds": ["subnet-0000000000000000a"]}}, "does not exist"),
        ("one-zone", "two different AZs"),
    ],
)
def test_create_cluster_is_refused_as_eks_refuses_it(
    eks: Any, network: dict[str, Any], clients: dict[str, Any], change: Any, message: str
) -> None:
    if change == "one-zone":
        subnet = network["subnets"][0]
        change = {"resourcesVpcConfig": {"subnetIds": [subnet]}}
    with pytest.raises(ClientError) as caught:
        _create(eks, network, **change)
    assert _code(caught) == "InvalidParameterException"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert message in caught.value.response["Error"]["Message"]


def test_delete_cluster_is_timed_and_takes_its_kubernetes(
    slow: tuple[Any, SandboxControl], network: dict[str, Any], clients: dict[str, Any]
) -> None:
    eks, control = slow
    name = _create(eks, network)["name"]
    control.advance_clock(600)
    active = eks.describe_cluster(name=name)["cluster"]
    assert eks.delete_cluster(name=name)["cluster"]["status"] == "DELETING"
    assert eks.describe_cluster(name=name)["cluster"]["status"] == "DELETING"
    assert name in eks.list_clusters()["clusters"]
    with pytest.raises(ClientError) as caught:
        eks.delete_cluster(name=name)
    assert _code(caught) == "ResourceInUseException"
    control.advance_clock(300)
    with pytest.raises(eks.exceptions.ResourceNotFoundException):
        eks.describe_cluster(name=name)
    v1 = k8s.CoreV1Api(api_client(active, eks_token(clients["sts"], name)))
    with pytest.raises(urllib3.exceptions.MaxRetryError):  # nobody listens there any more
        v1.list_namespace()


# --- tokens and access entries -----------------------------------------------------------


def test_kubernetes_answers_only_after_an_access_entry_and_a_policy(
    eks: Any, active: dict[str, Any], clients: dict[str, Any], control: SandboxControl
) -> None:
    name = active["name"]
    v1 = k8s.CoreV1Api(api_client(active, eks_token(clients["sts"], name)))

    def status() -> int:
        try:
            v1.list_namespaced_pod("default")
        except k8s.ApiException as exc:
            return exc.status
        return 200

    assert status() == 401  # a valid token, no access entry
    entry = eks.create_access_entry(clusterName=name, principalArn=ME)["accessEntry"]
    assert entry["type"] == "STANDARD" and entry["username"] == ME
    assert entry["accessEntryArn"].startswith(
        f"arn:aws:eks:{REGION}:123456789012:access-entry/{name}/user/"
    )
    assert status() == 403  # an entry alone grants nothing
    eks.associate_access_policy(
        clusterName=name, principalArn=ME, policyArn=VIEW, accessScope={"type": "cluster"}
    )
    assert status() == 200
    with pytest.raises(k8s.ApiException) as caught:  # view policy: no writes
        v1.create_namespaced_config_map("default", {"metadata": {"name": "x"}})
    assert caught.value.status == 403
    eks.associate_access_policy(
        clusterName=name, principalArn=ME, policyArn=ADMIN, accessScope={"type": "cluster"}
    )
    v1.create_namespaced_config_map("default", {"metadata": {"name": "x"}})
    listed = eks.list_associated_access_policies(clusterName=name, principalArn=ME)[
        "associatedAccessPolicies"
    ]
    assert sorted(p["policyArn"] for p in listed) == sorted([ADMIN, VIEW])
    assert eks.list_access_entries(clusterName=name, associatedPolicyArn=ADMIN)[
        "accessEntries"
    ] == [ME]

    eks.delete_access_entry(clusterName=name, principalArn=ME)
    assert status() == 401
    eks.create_access_entry(clusterName=name, principalArn=ME)
    assert status() == 403  # the policies went with the old entry
    eks.delete_access_entry(clusterName=name, principalArn=ME)
    # the call log names these REST calls, with the principal ARN decoded from the path
    deleted = [c for c in control.calls(service="eks") if c["action"] == "DeleteAccessEntry"]
    assert deleted[0]["params"]["principalArn"] == ME


def test_bootstrap_admin_and_config_map_mode(
    eks: Any, network: dict[str, Any], clients: dict[str, Any], control: SandboxControl
) -> None:
    boot = _create(eks, network, accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"})["name"]
    legacy = _create(eks, network, accessConfig={"authenticationMode": "CONFIG_MAP"})["name"]
    control.advance_clock(600)
    assert eks.list_access_entries(clusterName=boot)["accessEntries"] == [ME]
    assert [
        p["policyArn"]
        for p in eks.list_associated_access_policies(clusterName=boot, principalArn=ME)[
            "associatedAccessPolicies"
        ]
    ] == [ADMIN]
    for name in (boot, legacy):  # the creator is an admin either way
        cluster = eks.describe_cluster(name=name)["cluster"]
        v1 = k8s.CoreV1Api(api_client(cluster, eks_token(clients["sts"], name)))
        assert v1.list_namespace().items
    with pytest.raises(ClientError) as caught:
        eks.create_access_entry(clusterName=legacy, principalArn=ME)
    assert _code(caught) == "InvalidRequestException"


def test_access_entry_rules(
    eks: Any, active: dict[str, Any], clients: dict[str, Any], network: dict[str, Any]
) -> None:
    name = active["name"]
    role = clients["iam"].create_role(
        RoleName=f"panel-{uuid.uuid4().hex[:6]}", Path="/hypd/", AssumeRolePolicyDocument=EKS_TRUST
    )["Role"]["Arn"]
    first = eks.create_access_entry(clusterName=name, principalArn=role, clientRequestToken="t1")[
        "accessEntry"
    ]
    assert first["username"].endswith("/{{SessionName}}") and ":assumed-role/" in first["username"]
    again = eks.create_access_entry(clusterName=name, principalArn=role, clientRequestToken="t1")[
        "accessEntry"
    ]
    assert again["accessEntryArn"] == first["accessEntryArn"]
    refusals = [
        ({"principalArn": role}, "ResourceInUseException"),
        (
            {"principalArn": "arn:aws:sts::123456789012:assumed-role/R/s"},
            "InvalidParameterException",
        ),
        ({"principalArn": "arn:aws:iam::123456789012:role/nobody"}, "InvalidParameterException"),
        ({"principalArn": ME, "type": "SUPERUSER"}, "InvalidParameterException"),
        ({"principalArn": ME, "kubernetesGroups": ["system:masters"]}, "InvalidParameterException"),
    ]
    for params, code in refusals:
        with pytest.raises(ClientError) as caught:
            eks.create_access_entry(clusterName=name, **params)
        assert _code(caught) == code, params
    node_role = clients["iam"].create_role(
        RoleName=f"node-{uuid.uuid4().hex[:6]}", AssumeRolePolicyDocument=EKS_TRUST
    )["Role"]["Arn"]
    node = eks.create_access_entry(clusterName=name, principalArn=node_role, type="HYPERPOD_LINUX")[
        "accessEntry"
    ]
    assert node["kubernetesGroups"] == ["system:nodes"]
    with pytest.raises(ClientError) as caught:
        eks.associate_access_policy(
            clusterName=name,
            principalArn=node_role,
            policyArn=ADMIN,
            accessScope={"type": "cluster"},
        )
    assert _code(caught) == "InvalidParameterException" and "STANDARD" in str(caught.value)
    with pytest.raises(ClientError) as caught:
        eks.associate_access_policy(
            clusterName=name, principalArn=role, policyArn=VIEW, accessScope={"type": "namespace"}
        )
    assert _code(caught) == "InvalidParameterException"
    with pytest.raises(eks.exceptions.ResourceNotFoundException):
        eks.describe_access_entry(clusterName=name, principalArn=ME)
    with pytest.raises(eks.exceptions.ResourceNotFoundException):
        eks.list_access_entries(clusterName="no-such-cluster")
    assert sorted(eks.list_access_entries(clusterName=name)["accessEntries"]) == sorted(
        [role, node_role]
    )


def test_access_entries_wait_for_an_active_cluster(eks: Any, network: dict[str, Any]) -> None:
    name = _create(eks, network)["name"]
    with pytest.raises(ClientError) as caught:
        eks.create_access_entry(clusterName=name, principalArn=ME)
    assert _code(caught) == "InvalidRequestException"
    with pytest.raises(ClientError) as caught:
        eks.create_addon(clusterName=name, addonName="vpc-cni")
    assert _code(caught) == "InvalidRequestException"


# --- add-ons -----------------------------------------------------------------------------


def _status(eks: Any, cluster: str, addon: str) -> str:
    return str(eks.describe_addon(clusterName=cluster, addonName=addon)["addon"]["status"])


def test_addon_lifecycle_is_timed(
    slow: tuple[Any, SandboxControl], network: dict[str, Any]
) -> None:
    eks, control = slow
    name = _create(eks, network)["name"]
    control.advance_clock(600)
    created = eks.create_addon(
        clusterName=name,
        addonName="vpc-cni",
        clientRequestToken="a1",
        tags={"hypd:managed-by": "hypd"},
    )["addon"]
    assert created["status"] == "CREATING" and created["addonVersion"] == "v1.20.4-eksbuild.1"
    assert created["addonArn"].startswith(
        f"arn:aws:eks:{REGION}:123456789012:addon/{name}/vpc-cni/"
    )
    replay = eks.create_addon(clusterName=name, addonName="vpc-cni", clientRequestToken="a1")[
        "addon"
    ]
    assert replay["addonArn"] == created["addonArn"]
    with pytest.raises(ClientError) as caught:
        eks.create_addon(clusterName=name, addonName="vpc-cni")
    assert _code(caught) == "ResourceInUseException"
    control.advance_clock(60)
    assert _status(eks, name, "vpc-cni") == "CREATING"
    control.advance_clock(40)
    assert _status(eks, name, "vpc-cni") == "ACTIVE"
    assert eks.describe_addon(clusterName=name, addonName="vpc-cni")["addon"]["tags"] == {
        "hypd:managed-by": "hypd"
    }

    update = eks.update_addon(
        clusterName=name, addonName="vpc-cni", addonVersion="v1.19.6-eksbuild.7"
    )["update"]
    assert update["type"] == "AddonUpdate" and update["status"] == "InProgress"
    assert _status(eks, name, "vpc-cni") == "UPDATING"
    control.advance_clock(60)
    assert _status(eks, name, "vpc-cni") == "ACTIVE"
    assert (
        eks.describe_update(name=name, updateId=update["id"], addonName="vpc-cni")["update"][
            "status"
        ]
        == "Successful"
    )
    assert (
        eks.describe_addon(clusterName=name, addonName="vpc-cni")["addon"]["addonVersion"]
        == "v1.19.6-eksbuild.7"
    )

    assert eks.delete_addon(clusterName=name, addonName="vpc-cni")["addon"]["status"] == "DELETING"
    assert eks.list_addons(clusterName=name)["addons"] == ["vpc-cni"]
    control.advance_clock(60)
    assert eks.list_addons(clusterName=name)["addons"] == []
    with pytest.raises(eks.exceptions.ResourceNotFoundException):
        eks.describe_addon(clusterName=name, addonName="vpc-cni")
    for addon, version in (("no-such-addon", None), ("vpc-cni", "v0.0.1-eksbuild.1")):
        with pytest.raises(ClientError) as caught:
            eks.create_addon(
                clusterName=name, addonName=addon, **({"addonVersion": version} if version else {})
            )
        assert _code(caught) == "InvalidParameterException"


def test_addons_install_their_crds_and_wait_for_what_they_need(
    eks: Any,
    active: dict[str, Any],
    control: SandboxControl,
    clients: dict[str, Any],
    aws: LocalAws,
) -> None:
    name = active["name"]
    eks.create_access_entry(clusterName=name, principalArn=ME)
    eks.associate_access_policy(
        clusterName=name, principalArn=ME, policyArn=ADMIN, accessScope={"type": "cluster"}
    )
    custom = k8s.CustomObjectsApi(api_client(active, eks_token(clients["sts"], name)))
    with pytest.raises(k8s.ApiException) as caught:  # no HyperPodPyTorchJob before its add-on
        custom.list_namespaced_custom_object(
            "sagemaker.amazonaws.com", "v1", "default", "hyperpodpytorchjobs"
        )
    assert caught.value.status == 404

    eks.create_addon(clusterName=name, addonName="amazon-sagemaker-hyperpod-training-operator")
    control.advance_clock(90)
    training = eks.describe_addon(
        clusterName=name, addonName="amazon-sagemaker-hyperpod-training-operator"
    )["addon"]
    assert training["status"] == "DEGRADED"
    assert {i["code"] for i in training["health"]["issues"]} == {"K8sResourceNotFound"}
    assert (
        custom.list_namespaced_custom_object(
            "sagemaker.amazonaws.com", "v1", "default", "hyperpodpytorchjobs"
        )["items"]
        == []
    )

    for addon in ("cert-manager", "eks-pod-identity-agent", "coredns"):
        eks.create_addon(clusterName=name, addonName=addon)
    control.advance_clock(90)
    assert _status(eks, name, "amazon-sagemaker-hyperpod-training-operator") == "ACTIVE"
    assert _status(eks, name, "coredns") == "DEGRADED"  # its pods need a node
    kube = aws.app.kubes.get(name)
    assert kube is not None
    kube.put_object(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        }
    )
    assert _status(eks, name, "coredns") == "ACTIVE"

    eks.delete_addon(clusterName=name, addonName="amazon-sagemaker-hyperpod-training-operator")
    control.advance_clock(60)
    with pytest.raises(k8s.ApiException) as caught:
        custom.list_namespaced_custom_object(
            "sagemaker.amazonaws.com", "v1", "default", "hyperpodpytorchjobs"
        )
    assert caught.value.status == 404


def test_the_spaces_add_on_serves_the_workspace_kinds_with_upstreams_schema(
    eks: Any,
    active: dict[str, Any],
    control: SandboxControl,
    clients: dict[str, Any],
) -> None:
    """The Spaces add-on puts jupyter-k8s's real CRDs into the cluster (a Workspace is
    validated and pruned as on EKS), is DEGRADED until cert-manager, the Pod Identity agent and
    the EBS CSI driver are there, and takes the kinds away when it goes."""
    name = active["name"]
    eks.create_access_entry(clusterName=name, principalArn=ME)
    eks.associate_access_policy(
        clusterName=name, principalArn=ME, policyArn=ADMIN, accessScope={"type": "cluster"}
    )
    custom = k8s.CustomObjectsApi(api_client(active, eks_token(clients["sts"], name)))
    group, version = "workspace.jupyter.org", "v1alpha1"
    for plural in ("workspaces", "workspacetemplates", "workspaceaccessstrategies"):
        with pytest.raises(k8s.ApiException) as caught:  # no Workspace kinds before the add-on
            custom.list_namespaced_custom_object(group, version, "default", plural)
        assert caught.value.status == 404

    eks.create_addon(clusterName=name, addonName="amazon-sagemaker-spaces")
    control.advance_clock(90)
    spaces = eks.describe_addon(clusterName=name, addonName="amazon-sagemaker-spaces")["addon"]
    assert spaces["status"] == "DEGRADED"
    assert {i["resourceIds"][0] for i in spaces["health"]["issues"]} == {
        "certificates.cert-manager.io", "kube-system/eks-pod-identity-agent", "ebs.csi.aws.com"}
    for plural in ("workspaces", "workspacetemplates", "workspaceaccessstrategies"):
        assert custom.list_namespaced_custom_object(group, version, "default", plural)[
            "items"] == []
    for addon in ("cert-manager", "eks-pod-identity-agent", "aws-ebs-csi-driver"):
        eks.create_addon(clusterName=name, addonName=addon)
    control.advance_clock(90)
    assert _status(eks, name, "amazon-sagemaker-spaces") == "ACTIVE"

    # upstream's schema: the required displayName, a wrong type refused at its field
    workspace = {
        "apiVersion": f"{group}/{version}",
        "kind": "Workspace",
        "metadata": {"name": "nb", "namespace": "default"},
        "spec": {"displayName": "nb", "accessStrategy": {"name": "hypd-web"}},
    }
    made = custom.create_namespaced_custom_object(group, version, "default", "workspaces",
                                                  workspace)
    assert made["spec"]["accessStrategy"] == {"name": "hypd-web"}
    broken = {**workspace, "metadata": {"name": "nb2", "namespace": "default"},
              "spec": {"displayName": "nb2", "idleShutdown": {"enabled": "yes"}}}
    with pytest.raises(k8s.ApiException) as caught:
        custom.create_namespaced_custom_object(group, version, "default", "workspaces", broken)
    assert caught.value.status == 422

    eks.delete_addon(clusterName=name, addonName="amazon-sagemaker-spaces")
    control.advance_clock(60)
    with pytest.raises(k8s.ApiException) as caught:
        custom.list_namespaced_custom_object(group, version, "default", "workspaces")
    assert caught.value.status == 404


def test_the_inference_add_on_needs_its_configuration_and_what_it_names(
    eks: Any,
    active: dict[str, Any],
    control: SandboxControl,
    clients: dict[str, Any],
    aws: LocalAws,
) -> None:
    """As AWS's HyperPod inference guides describe it: the add-on is configured with its
    execution role and TLS bucket, and is unhealthy while either is missing or while what
    it checks for (CSI drivers, cert-manager, metrics-server, the controllers) is absent."""
    name, account = active["name"], active["arn"].split(":")[4]
    addon = "amazon-sagemaker-hyperpod-inference"
    versions = eks.describe_addon_versions(addonName=addon)["addons"][0]["addonVersions"]
    assert versions[0]["requiresConfiguration"] is True
    for refused in (None, json.dumps({"tlsCertificateS3Bucket": "b"}),
                    json.dumps({"executionRoleArn": "not-an-arn",
                                "tlsCertificateS3Bucket": "b"}),
                    json.dumps({"executionRoleArn": f"arn:aws:iam::{account}:role/r",
                                "tlsCertificateS3Bucket": "b", "alb": {"enabled": "no"}})):
        extra = {} if refused is None else {"configurationValues": refused}
        with pytest.raises(ClientError) as caught:
            eks.create_addon(clusterName=name, addonName=addon, **extra)
        assert _code(caught) == "InvalidParameterException", refused
    role = f"arn:aws:iam::{account}:role/hypd/inference-{uuid.uuid4().hex[:6]}"
    bucket = f"hyperpod-tls-{uuid.uuid4().hex[:8]}"
    eks.create_addon(clusterName=name, addonName=addon, configurationValues=json.dumps({
        "executionRoleArn": role, "tlsCertificateS3Bucket": bucket,
        "alb": {"enabled": False}, "keda": {"enabled": False}}))
    control.advance_clock(90)
    found = eks.describe_addon(clusterName=name, addonName=addon)["addon"]
    assert found["status"] == "DEGRADED"
    messages = " ".join(i["message"] for i in found["health"]["issues"])
    for missing in ("s3.csi.aws.com", "fsx.csi.aws.com", "certificates.cert-manager.io",
                    "kube-system/aws-load-balancer-controller", "keda/keda-operator",
                    "kube-system/metrics-server", role, bucket):
        assert missing in messages, missing

    iam, s3 = clients["iam"], aws_client(aws.url, "s3")
    iam.create_role(Path="/hypd/", RoleName=role.rsplit("/", 1)[1],
                    AssumeRolePolicyDocument=EKS_TRUST)
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
    for needed in ("aws-mountpoint-s3-csi-driver", "aws-fsx-csi-driver", "cert-manager",
                   "metrics-server"):
        eks.create_addon(clusterName=name, addonName=needed)
    control.advance_clock(90)
    kube = aws.app.kubes.get(name)
    assert kube is not None
    for deployment, namespace in (("aws-load-balancer-controller", "kube-system"),
                                  ("keda-operator", "keda")):
        kube.put_object({"apiVersion": "apps/v1", "kind": "Deployment",
                         "metadata": {"name": deployment, "namespace": namespace},
                         "spec": {"selector": {"matchLabels": {"app": deployment}},
                                  "template": {"metadata": {"labels": {"app": deployment}},
                                               "spec": {"containers": [
                                                   {"name": "c", "image": "x"}]}}}})
    found = eks.describe_addon(clusterName=name, addonName=addon)["addon"]
    assert (found["status"], found["health"]["issues"]) == ("ACTIVE", [])


def test_kubernetes_version_upgrades_one_minor_version_at_a_time(
    slow: tuple[Any, SandboxControl], network: dict[str, Any]
) -> None:
    eks, control = slow
    name = _create(eks, network, version="1.32")["name"]
    with pytest.raises(eks.exceptions.ResourceInUseException):  # still CREATING
        eks.update_cluster_version(name=name, version="1.33")
    control.advance_clock(600)
    eks.create_addon(clusterName=name, addonName="kube-proxy")
    control.advance_clock(90)
    assert _addon_version(eks, name) == "v1.32.0-eksbuild.1"
    for wrong in ("1.34", "1.31", "1.32", "1.35"):  # two up, down, the same, not offered
        with pytest.raises(ClientError) as caught:
            eks.update_cluster_version(name=name, version=wrong)
        assert _code(caught) == "InvalidParameterException", wrong
    assert eks.list_updates(name=name)["updateIds"] == []

    update = eks.update_cluster_version(name=name, version="1.33", clientRequestToken="v1")[
        "update"
    ]
    assert (update["type"], update["status"]) == ("VersionUpdate", "InProgress")
    assert {"type": "Version", "value": "1.33"} in update["params"]
    replay = eks.update_cluster_version(name=name, version="1.33", clientRequestToken="v1")
    assert replay["update"]["id"] == update["id"]
    with pytest.raises(eks.exceptions.ResourceInUseException):  # another update is under way
        eks.update_cluster_version(name=name, version="1.33", clientRequestToken="v2")
    during = eks.describe_cluster(name=name)["cluster"]
    assert (during["status"], during["version"]) == ("UPDATING", "1.32")
    assert during["endpoint"]  # the control plane stays available
    assert eks.list_updates(name=name)["updateIds"] == [update["id"]]
    control.advance_clock(400)
    assert eks.describe_update(name=name, updateId=update["id"])["update"]["status"] == (
        "InProgress"
    )

    control.advance_clock(100)
    after = eks.describe_cluster(name=name)["cluster"]
    assert (after["status"], after["version"]) == ("ACTIVE", "1.33")
    assert eks.describe_update(name=name, updateId=update["id"])["update"]["status"] == (
        "Successful"
    )
    version = k8s.VersionApi(api_client(after, None)).get_code()  # /version answers anyone
    assert (version.major, version.minor) == ("1", "33")
    # Add-ons keep their version until moved, to one the new Kubernetes version offers.
    assert _addon_version(eks, name) == "v1.32.0-eksbuild.1"
    offered = eks.describe_addon_versions(addonName="kube-proxy", kubernetesVersion="1.33")
    (default,) = [
        v["addonVersion"]
        for v in offered["addons"][0]["addonVersions"]
        if any(c["defaultVersion"] for c in v["compatibilities"] if c["clusterVersion"] == "1.33")
    ]
    moved = eks.update_addon(clusterName=name, addonName="kube-proxy", addonVersion=default)
    assert eks.list_updates(name=name, addonName="kube-proxy")["updateIds"] == [
        moved["update"]["id"]
    ]
    assert eks.list_updates(name=name)["updateIds"] == [update["id"]]
    control.advance_clock(60)
    assert _addon_version(eks, name) == default == "v1.33.0-eksbuild.1"


def _addon_version(eks: Any, cluster: str, addon: str = "kube-proxy") -> str:
    return str(eks.describe_addon(clusterName=cluster, addonName=addon)["addon"]["addonVersion"])


def test_describe_addon_versions(eks: Any) -> None:
    everything = {a["addonName"]: a for a in eks.describe_addon_versions()["addons"]}
    assert {
        "vpc-cni",
        "coredns",
        "kube-proxy",
        "eks-pod-identity-agent",
        "aws-mountpoint-s3-csi-driver",
        "cert-manager",
        "amazon-sagemaker-hyperpod-training-operator",
        "amazon-sagemaker-hyperpod-inference",
        "amazon-sagemaker-hyperpod-taskgovernance",
        "amazon-sagemaker-hyperpod-observability",
    } <= set(everything)
    assert everything["cert-manager"]["owner"] == "community"
    proxy = eks.describe_addon_versions(addonName="kube-proxy", kubernetesVersion="1.31")["addons"][
        0
    ]
    assert [v["addonVersion"] for v in proxy["addonVersions"]] == ["v1.31.0-eksbuild.1"]
    defaults = [
        v["addonVersion"]
        for v in eks.describe_addon_versions(addonName="coredns", kubernetesVersion="1.33")[
            "addons"
        ][0]["addonVersions"]
        if any(c["clusterVersion"] == "1.33" and c["defaultVersion"] for c in v["compatibilities"])
    ]
    assert defaults == ["v1.12.1-eksbuild.2"]
    storage = eks.describe_addon_versions(types=["storage"])["addons"]
    assert {a["type"] for a in storage} == {"storage"}
    first = eks.describe_addon_versions(maxResults=2)
    assert len(first["addons"]) == 2 and first["nextToken"]


# --- pod identity ------------------------------------------------------------------------


def test_pod_identity_associations(
    eks: Any, active: dict[str, Any], clients: dict[str, Any]
) -> None:
    name = active["name"]
    role = clients["iam"].create_role(
        RoleName=f"pia-{uuid.uuid4().hex[:6]}", AssumeRolePolicyDocument=EKS_TRUST
    )["Role"]["Arn"]
    made = eks.create_pod_identity_association(
        clusterName=name,
        namespace="aws-hyperpod",
        serviceAccount="trainer",
        roleArn=role,
        clientRequestToken="p1",
    )["association"]
    assert made["associationId"].startswith("a-") and len(made["associationId"]) == 19
    prefix = f"arn:aws:eks:{REGION}:123456789012:podidentityassociation"
    assert made["associationArn"] == f"{prefix}/{name}/{made['associationId']}"
    again = eks.create_pod_identity_association(
        clusterName=name,
        namespace="aws-hyperpod",
        serviceAccount="trainer",
        roleArn=role,
        clientRequestToken="p1",
    )["association"]
    assert again["associationId"] == made["associationId"]
    with pytest.raises(ClientError) as caught:
        eks.create_pod_identity_association(
            clusterName=name, namespace="aws-hyperpod", serviceAccount="trainer", roleArn=role
        )
    assert _code(caught) == "ResourceInUseException"
    listed = eks.list_pod_identity_associations(clusterName=name, namespace="aws-hyperpod")[
        "associations"
    ]
    assert [a["associationId"] for a in listed] == [made["associationId"]]
    assert (
        eks.list_pod_identity_associations(clusterName=name, serviceAccount="other")["associations"]
        == []
    )
    described = eks.describe_pod_identity_association(
        clusterName=name, associationId=made["associationId"]
    )
    assert described["association"]["roleArn"] == role
    eks.delete_pod_identity_association(clusterName=name, associationId=made["associationId"])
    with pytest.raises(eks.exceptions.ResourceNotFoundException):
        eks.describe_pod_identity_association(clusterName=name, associationId=made["associationId"])
