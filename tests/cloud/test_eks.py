"""cloud/eks.py: the control plane (moto), access entries and add-ons (an in-memory EKS for
what moto lacks), the token (decoded and checked), the cluster client (TLS, refresh with a
fake clock), kubeconfig, OIDC provider (moto)."""

from __future__ import annotations

import base64
import json
import urllib.request
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from botocore.exceptions import ClientError
from kubernetes.client import CoreV1Api

from cloud import aws, eks
from tests.cloud.conftest import AWS_MODE, REGION
from tests.cloud.test_kube import FakeKube
from vocabulary import kubernetes_versions

SUBNETS = ["subnet-aaaa", "subnet-bbbb"]
GROUPS = ["sg-1111"]
ROLE = "arn:aws:iam::123456789012:role/hypd-lab-eks-cluster"


@pytest.fixture
def eks_client(moto_aws):
    return aws.client("eks", REGION, AWS_MODE)


@pytest.fixture
def sts(moto_aws):
    return aws.client("sts", REGION, AWS_MODE)


@pytest.fixture
def iam(moto_aws):
    return aws.client("iam", REGION, AWS_MODE)


def decode(token: str) -> str:
    assert token.startswith("k8s-aws-v1.")
    body = token[len("k8s-aws-v1."):]
    assert "=" not in body
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()


# ---------------------------------------------------------------------------------------
# an in-memory EKS for access entries and add-ons (moto 5.2.5 has neither)
# ---------------------------------------------------------------------------------------


def _error(code: str, message: str, status: int = 400) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message},
                        "ResponseMetadata": {"HTTPStatusCode": status}}, "Fake")


class FakeEks:
    """describe_cluster, access entries, access policies and add-ons, with the error codes
    EKS answers. `calls` lists every mutating call."""

    def __init__(self, clusters: dict[str, dict[str, Any]] | None = None) -> None:
        self.clusters = clusters or {"lab": {"name": "lab", "version": "1.33",
                                             "status": "ACTIVE", "tags": {}}}
        self.entries: dict[tuple[str, str], dict[str, Any]] = {}
        self.policies: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.addons: dict[tuple[str, str], dict[str, Any]] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.default_versions = {"vpc-cni": "v1.20.4-eksbuild.2"}

    def _cluster(self, name: str) -> dict[str, Any]:
        if name not in self.clusters:
            raise _error("ResourceNotFoundException", f"No cluster found for name: {name}.", 404)
        return self.clusters[name]

    def describe_cluster(self, name: str) -> dict[str, Any]:
        return {"cluster": self._cluster(name)}

    def create_access_entry(self, **kw: Any) -> dict[str, Any]:
        self._cluster(kw["clusterName"])
        self.calls.append(("create_access_entry", kw))
        key = (kw["clusterName"], kw["principalArn"])
        if key in self.entries:
            raise _error("ResourceInUseException", "The specified access entry resource is "
                                                   "already in use on this cluster.", 409)
        self.entries[key] = {"principalArn": kw["principalArn"], "tags": kw.get("tags", {}),
                             "type": kw.get("type", "STANDARD")}
        return {"accessEntry": self.entries[key]}

    def describe_access_entry(self, clusterName: str, principalArn: str) -> dict[str, Any]:
        if (clusterName, principalArn) not in self.entries:
            raise _error("ResourceNotFoundException", "access entry not found", 404)
        return {"accessEntry": self.entries[(clusterName, principalArn)]}

    def delete_access_entry(self, clusterName: str, principalArn: str) -> dict[str, Any]:
        self.calls.append(("delete_access_entry", {"principalArn": principalArn}))
        if self.entries.pop((clusterName, principalArn), None) is None:
            raise _error("ResourceNotFoundException", "access entry not found", 404)
        self.policies.pop((clusterName, principalArn), None)
        return {}

    def associate_access_policy(self, **kw: Any) -> dict[str, Any]:
        self.calls.append(("associate_access_policy", kw))
        key = (kw["clusterName"], kw["principalArn"])
        if key not in self.entries:
            raise _error("ResourceNotFoundException", "access entry not found", 404)
        listed = self.policies.setdefault(key, [])
        listed[:] = [p for p in listed if p["policyArn"] != kw["policyArn"]]
        listed.append({"policyArn": kw["policyArn"], "accessScope": kw["accessScope"]})
        return {}

    def list_associated_access_policies(self, clusterName: str, principalArn: str,
                                        nextToken: str | None = None) -> dict[str, Any]:
        if (clusterName, principalArn) not in self.entries:
            raise _error("ResourceNotFoundException", "access entry not found", 404)
        return {"associatedAccessPolicies": list(self.policies.get((clusterName,
                                                                    principalArn), []))}

    # add-ons

    def list_addons(self, clusterName: str, nextToken: str | None = None) -> dict[str, Any]:
        self._cluster(clusterName)
        return {"addons": sorted(n for c, n in self.addons if c == clusterName)}

    def describe_addon(self, clusterName: str, addonName: str) -> dict[str, Any]:
        self._cluster(clusterName)
        if (clusterName, addonName) not in self.addons:
            raise _error("ResourceNotFoundException", f"No addon: {addonName} found in "
                                                      f"cluster: {clusterName}", 404)
        return {"addon": self.addons[(clusterName, addonName)]}

    def create_addon(self, **kw: Any) -> dict[str, Any]:
        self._cluster(kw["clusterName"])
        self.calls.append(("create_addon", kw))
        key = (kw["clusterName"], kw["addonName"])
        if key in self.addons:
            raise _error("ResourceInUseException", "Addon already exists.", 409)
        self.addons[key] = {"addonName": kw["addonName"], "clusterName": kw["clusterName"],
                            "status": "CREATING", "tags": kw.get("tags", {}),
                            "addonVersion": kw.get("addonVersion") or
                            self.default_versions.get(kw["addonName"], "v1.0.0-eksbuild.1"),
                            "health": {"issues": []}}
        return {"addon": self.addons[key]}

    def update_addon(self, **kw: Any) -> dict[str, Any]:
        self.calls.append(("update_addon", kw))
        addon = self.addons[(kw["clusterName"], kw["addonName"])]
        if kw.get("addonVersion"):
            addon["addonVersion"] = kw["addonVersion"]
        addon["status"] = "UPDATING"
        return {"update": {"id": "upd-1", "status": "InProgress"}}

    def delete_addon(self, clusterName: str, addonName: str, **_: Any) -> dict[str, Any]:
        self.calls.append(("delete_addon", {"addonName": addonName}))
        if self.addons.pop((clusterName, addonName), None) is None:
            raise _error("ResourceNotFoundException", "no addon", 404)
        return {}

    def describe_addon_versions(self, addonName: str, kubernetesVersion: str) -> dict[str, Any]:
        return {"addons": [{"addonName": addonName, "addonVersions": [
            {"addonVersion": "v9.9.9-eksbuild.1", "compatibilities": [
                {"clusterVersion": kubernetesVersion, "defaultVersion": False}]},
            {"addonVersion": self.default_versions.get(addonName, "v1.0.0-eksbuild.1"),
             "compatibilities": [{"clusterVersion": kubernetesVersion,
                                  "defaultVersion": True}]},
        ]}]}

    def mutations(self, name: str) -> list[dict[str, Any]]:
        return [kw for call, kw in self.calls if call == name]


# ---------------------------------------------------------------------------------------
# the control plane (moto)
# ---------------------------------------------------------------------------------------


def test_ensure_cluster_creates_with_api_access_and_tags(eks_client):
    cluster = eks.ensure_cluster(eks_client, "lab", ROLE, SUBNETS, GROUPS, "1.33",
                                 {"extra": "x"}, client_request_token="tok-lab-eks")
    assert cluster["name"] == "lab"
    described = eks.describe(eks_client, "lab")
    # moto 5.2.5 does not store accessConfig: the request shape is pinned in the next test
    assert described["tags"]["hypd:managed-by"] == "hypd"
    assert described["tags"]["hypd:cluster"] == "lab"
    assert described["tags"]["extra"] == "x"
    assert described["resourcesVpcConfig"]["subnetIds"] == SUBNETS
    assert described["version"] == "1.33"
    assert described["roleArn"] == ROLE


def test_ensure_cluster_request_shape():
    """What goes to CreateCluster: API auth, no creator bootstrap admin, the token."""
    sent: dict[str, Any] = {}

    class Spy:
        def describe_cluster(self, name):
            raise _error("ResourceNotFoundException", "none", 404)

        def create_cluster(self, **kwargs):
            sent.update(kwargs)
            return {"cluster": {"name": kwargs["name"], "status": "CREATING",
                                "tags": kwargs["tags"]}}

    eks.ensure_cluster(Spy(), "lab", ROLE, SUBNETS, GROUPS, client_request_token="tok-1")
    assert sent["accessConfig"] == {"authenticationMode": "API",
                                    "bootstrapClusterCreatorAdminPermissions": False}
    assert sent["clientRequestToken"] == "tok-1"
    assert sent["version"] == kubernetes_versions.default()
    assert sent["resourcesVpcConfig"]["endpointPrivateAccess"] is True
    with pytest.raises(ValueError):
        eks.ensure_cluster(Spy(), "lab", ROLE, SUBNETS, GROUPS, authentication_mode="CONFIG_MAP")


def test_ensure_cluster_is_idempotent_and_survives_a_replayed_token(eks_client):
    first = eks.ensure_cluster(eks_client, "lab", ROLE, SUBNETS, GROUPS,
                               client_request_token="tok-lab-eks")
    again = eks.ensure_cluster(eks_client, "lab", ROLE, SUBNETS, GROUPS,
                               client_request_token="tok-lab-eks")
    assert again["arn"] == first["arn"]
    assert eks_client.list_clusters()["clusters"] == ["lab"]


def test_replay_race_adopts_what_the_first_request_made(eks_client):
    """describe says absent, create answers ResourceInUse (moto: same token → 409): the
    cluster the first attempt made is adopted."""
    eks.ensure_cluster(eks_client, "lab", ROLE, SUBNETS, GROUPS, client_request_token="t")
    real_describe = eks_client.describe_cluster
    calls = {"n": 0}

    class Racing:
        def describe_cluster(self, name):
            calls["n"] += 1
            if calls["n"] == 1:
                raise _error("ResourceNotFoundException", "none", 404)
            return real_describe(name=name)

        def create_cluster(self, **kwargs):
            return eks_client.create_cluster(**kwargs)

    adopted = eks.ensure_cluster(Racing(), "lab", ROLE, SUBNETS, GROUPS,
                                 client_request_token="t")
    assert adopted["name"] == "lab"


def test_a_cluster_hypd_did_not_make_is_a_conflict(eks_client):
    eks_client.create_cluster(name="lab", roleArn=ROLE, resourcesVpcConfig={"subnetIds":
                                                                           SUBNETS})
    with pytest.raises(eks.EksError) as err:
        eks.ensure_cluster(eks_client, "lab", ROLE, SUBNETS, GROUPS)
    assert err.value.code == "conflict"
    assert "hypd did not create it" in err.value.message
    eks_client.create_cluster(name="other", roleArn=ROLE,
                              resourcesVpcConfig={"subnetIds": SUBNETS},
                              tags={"hypd:managed-by": "hypd", "hypd:cluster": "someone"})
    with pytest.raises(eks.EksError):
        eks.ensure_cluster(eks_client, "other", ROLE, SUBNETS, GROUPS)
    with pytest.raises(eks.EksError, match="not created by hypd"):
        eks.delete_cluster(eks_client, "lab")
    assert eks.describe(eks_client, "lab") is not None


def test_cluster_names_follow_every_page(eks_client):
    """ListClusters answers a page at a time: with pages of two, five clusters take three
    calls and none is lost (one call would have answered two)."""
    names = [f"c{i}" for i in range(5)]
    for name in names:
        eks.ensure_cluster(eks_client, name, ROLE, SUBNETS, GROUPS)
    calls = []

    def count(**_: Any) -> None:
        calls.append(1)

    eks_client.meta.events.register("before-call.eks.ListClusters", count,
                                    unique_id="test-count-list-clusters")
    try:
        assert sorted(eks.list_cluster_names(eks_client, page_size=2)) == names
        assert len(calls) == 3
        assert len(eks_client.list_clusters(maxResults=2)["clusters"]) == 2
    finally:
        eks_client.meta.events.unregister("before-call.eks.ListClusters",
                                          unique_id="test-count-list-clusters")
    assert sorted(eks.list_cluster_names(eks_client)) == names


def test_managed_clusters_are_those_hypd_made_for_their_name(eks_client):
    eks.ensure_cluster(eks_client, "lab", ROLE, SUBNETS, GROUPS)
    eks_client.create_cluster(name="outside", roleArn=ROLE,
                              resourcesVpcConfig={"subnetIds": SUBNETS})
    eks_client.create_cluster(name="renamed", roleArn=ROLE,
                              resourcesVpcConfig={"subnetIds": SUBNETS},
                              tags={"hypd:managed-by": "hypd", "hypd:cluster": "lab"})
    found = eks.managed_clusters(eks_client)
    assert [c["name"] for c in found] == ["lab"]
    assert found[0]["status"] == "ACTIVE" and found[0]["arn"]


def test_cluster_state_and_wait(eks_client):
    assert eks.cluster_state(eks_client, "lab") is None
    with pytest.raises(eks.EksError, match="does not exist"):
        eks.cluster_wait(eks_client, "lab")
    eks.ensure_cluster(eks_client, "lab", ROLE, SUBNETS, GROUPS)
    state = eks.cluster_state(eks_client, "lab")
    assert state["managed"] is True
    assert state["status"] == "ACTIVE"  # moto: created ACTIVE
    assert state["endpoint"].startswith("https://")
    assert state["certificate_authority"]
    assert state["oidc_issuer"].startswith("https://")
    assert eks.cluster_wait(eks_client, "lab") is None


def test_cluster_wait_while_creating_and_failed():
    cluster = {"name": "lab", "status": "CREATING", "tags": {}}
    fake = FakeEks({"lab": cluster})
    assert eks.cluster_wait(fake, "lab") == 60.0
    cluster.update(status="FAILED", health={"issues": [{"message": "subnets too small"}]})
    with pytest.raises(eks.EksError, match="subnets too small"):
        eks.cluster_wait(fake, "lab")


def test_delete_cluster_tolerates_absence(eks_client):
    assert eks.delete_cluster(eks_client, "lab") is False
    eks.ensure_cluster(eks_client, "lab", ROLE, SUBNETS, GROUPS)
    assert eks.delete_cluster(eks_client, "lab") is True
    assert eks.cluster_gone(eks_client, "lab") is None
    assert eks.delete_cluster(eks_client, "lab") is False


# ---------------------------------------------------------------------------------------
# access entries
# ---------------------------------------------------------------------------------------

PANEL = "arn:aws:iam::123456789012:role/hypd-panel"


def test_ensure_access_makes_entry_and_admin_policy_idempotently():
    fake = FakeEks()
    result = eks.ensure_access(fake, "lab", PANEL)
    assert result == {"principal_arn": PANEL, "policy_arn": eks.ADMIN_ACCESS_POLICY,
                      "entry_created": True, "policy_associated": True}
    entry = fake.entries[("lab", PANEL)]
    assert entry["tags"]["hypd:cluster"] == "lab"
    assert fake.policies[("lab", PANEL)] == [{
        "policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy",
        "accessScope": {"type": "cluster"}}]
    again = eks.ensure_access(fake, "lab", PANEL)
    assert again["entry_created"] is False and again["policy_associated"] is False
    assert len(fake.mutations("associate_access_policy")) == 1
    assert eks.access_state(fake, "lab", PANEL) == {"entry": True, "policy": True}


def test_ensure_access_completes_an_entry_without_policy():
    """A crash between the two calls leaves an entry that grants nothing: a re-run adds the
    policy."""
    fake = FakeEks()
    fake.create_access_entry(clusterName="lab", principalArn=PANEL, tags={})
    assert eks.access_state(fake, "lab", PANEL) == {"entry": True, "policy": False}
    result = eks.ensure_access(fake, "lab", PANEL)
    assert result["entry_created"] is False and result["policy_associated"] is True


def test_delete_access_only_removes_hypd_entries():
    fake = FakeEks()
    eks.ensure_access(fake, "lab", PANEL)
    foreign = "arn:aws:iam::123456789012:role/admin"
    fake.create_access_entry(clusterName="lab", principalArn=foreign, tags={})
    assert eks.delete_access(fake, "lab", foreign) is False
    assert ("lab", foreign) in fake.entries
    assert eks.delete_access(fake, "lab", PANEL) is True
    assert eks.delete_access(fake, "lab", PANEL) is False
    assert eks.access_state(fake, "lab", PANEL) == {"entry": False, "policy": False}


def test_panel_principal_maps_assumed_role_to_role_with_path(iam, sts):
    role = iam.create_role(RoleName="panel", Path="/hypd/ops/",
                           AssumeRolePolicyDocument=json.dumps({
                               "Version": "2012-10-17", "Statement": [{
                                   "Effect": "Allow", "Action": "sts:AssumeRole",
                                   "Principal": {"AWS": "arn:aws:iam::123456789012:root"}}]}),
                           )["Role"]
    creds = sts.assume_role(RoleArn=role["Arn"], RoleSessionName="worker-7")["Credentials"]
    import boto3

    session = boto3.session.Session(aws_access_key_id=creds["AccessKeyId"],
                                    aws_secret_access_key=creds["SecretAccessKey"],
                                    aws_session_token=creds["SessionToken"])
    as_role = session.client("sts", region_name=REGION)
    assert ":assumed-role/panel/worker-7" in as_role.get_caller_identity()["Arn"]
    assert eks.panel_principal_arn(as_role, iam) == \
        "arn:aws:iam::123456789012:role/hypd/ops/panel"
    # without IAM access the path cannot be known: the role ARN without it
    assert eks.panel_principal_arn(as_role) == "arn:aws:iam::123456789012:role/panel"
    # users and roles pass through unchanged (moto's sts-spelt user ARN becomes IAM's)
    assert eks.principal_from_caller_arn("arn:aws:sts::123456789012:user/moto") == \
        "arn:aws:iam::123456789012:user/moto"
    assert eks.principal_from_caller_arn("arn:aws:iam::123456789012:user/ada") == \
        "arn:aws:iam::123456789012:user/ada"
    assert eks.principal_from_caller_arn(
        "arn:aws-cn:sts::123456789012:assumed-role/r/s") == "arn:aws-cn:iam::123456789012:role/r"


# ---------------------------------------------------------------------------------------
# OIDC provider (moto)
# ---------------------------------------------------------------------------------------

ISSUER = "https://oidc.eks.us-west-2.amazonaws.com/id/ABCDEF0123456789"


def test_oidc_provider_is_made_once_per_issuer(iam):
    arn = eks.ensure_oidc_provider(iam, ISSUER, "lab")
    assert arn.endswith(":oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/ABCDEF0123456789")
    assert eks.ensure_oidc_provider(iam, ISSUER, "lab") == arn
    assert eks.ensure_oidc_provider(iam, ISSUER.removeprefix("https://") + "/", "lab") == arn
    assert len(iam.list_open_id_connect_providers()["OpenIDConnectProviderList"]) == 1
    provider = iam.get_open_id_connect_provider(OpenIDConnectProviderArn=arn)
    assert provider["ClientIDList"] == ["sts.amazonaws.com"]
    tags = {t["Key"]: t["Value"] for t in provider["Tags"]}
    assert tags["hypd:managed-by"] == "hypd" and tags["hypd:cluster"] == "lab"
    with pytest.raises(ValueError):
        eks.ensure_oidc_provider(iam, "", "lab")


def test_oidc_provider_deletion_by_tags(iam):
    foreign = iam.create_open_id_connect_provider(Url=ISSUER, ClientIDList=["x"],
                                                  ThumbprintList=["a" * 40])
    assert eks.ensure_oidc_provider(iam, ISSUER, "lab") == foreign["OpenIDConnectProviderArn"]
    assert eks.delete_oidc_provider(iam, ISSUER, "lab") is False  # not hypd's: kept
    iam.delete_open_id_connect_provider(OpenIDConnectProviderArn=foreign[
        "OpenIDConnectProviderArn"])
    eks.ensure_oidc_provider(iam, ISSUER, "lab")
    assert eks.delete_oidc_provider(iam, ISSUER, "other") is False
    assert eks.delete_oidc_provider(iam, ISSUER, "lab") is True
    assert eks.delete_oidc_provider(iam, ISSUER, "lab") is False
    assert eks.find_oidc_provider(iam, ISSUER) is None


# ---------------------------------------------------------------------------------------
# tokens
# ---------------------------------------------------------------------------------------


def test_token_is_a_presigned_get_caller_identity_url(sts):
    token, refresh_at = eks.eks_token("lab", REGION, sts, now=1000.0)
    assert refresh_at == 1000.0 + 14 * 60
    url = decode(token)
    parts = urlsplit(url)
    assert parts.scheme == "https"
    assert parts.netloc == "sts.us-west-2.amazonaws.com"  # regional endpoint
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    assert query["Action"] == "GetCallerIdentity"
    assert query["Version"] == "2011-06-15"
    assert query["X-Amz-Expires"] == "60"
    assert query["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256"
    assert query["X-Amz-SignedHeaders"].split(";") == ["host", "x-k8s-aws-id"]
    assert query["X-Amz-Credential"].endswith(f"/{REGION}/sts/aws4_request")
    assert len(query["X-Amz-Signature"]) == 64
    # the cluster name is part of the signature: another cluster signs differently
    other = {k: v[0] for k, v in parse_qs(urlsplit(decode(eks.eks_token(
        "other", REGION, sts)[0])).query).items()}
    assert other["X-Amz-Signature"] != query["X-Amz-Signature"]


def test_token_header_is_signed_with_the_cluster_name(sts, monkeypatch):
    """Re-sign the decoded URL's request at its own timestamp: the signature matches only
    with `x-k8s-aws-id: lab` (proves the cluster header was signed)."""
    import datetime

    import botocore.auth
    from botocore.auth import SigV4QueryAuth
    from botocore.awsrequest import AWSRequest

    url = decode(eks.eks_token("lab", REGION, sts)[0])
    query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    signed_at = datetime.datetime.strptime(query["X-Amz-Date"], "%Y%m%dT%H%M%SZ")
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *a, **k: signed_at)
    creds = sts._get_credentials()

    def signature(headers: dict[str, str]) -> str:
        base = url.split("?")[0] + "?Action=GetCallerIdentity&Version=2011-06-15"
        request = AWSRequest(method="GET", url=base, headers=headers)
        SigV4QueryAuth(creds, "sts", REGION, expires=60).add_auth(request)
        return {k: v[0] for k, v in parse_qs(urlsplit(request.url).query).items()}[
            "X-Amz-Signature"]

    assert signature({"x-k8s-aws-id": "lab"}) == query["X-Amz-Signature"]
    assert signature({"x-k8s-aws-id": "other"}) != query["X-Amz-Signature"]
    assert signature({}) != query["X-Amz-Signature"]


def test_ordinary_get_caller_identity_is_unaffected(sts):
    eks.eks_token("lab", REGION, sts)
    assert sts.get_caller_identity()["Account"] == "123456789012"


def test_token_honours_the_configured_endpoint(monkeypatch):
    """With AWS_ENDPOINT_URL (the sandbox) the presigned URL points there."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:45999")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    from cloud.settings import Settings

    aws.clear_cache()
    sts = aws.client("sts", REGION, Settings(aws_mode="sandbox", region=REGION))
    url = decode(eks.eks_token("lab", REGION, sts)[0])
    assert url.startswith("http://127.0.0.1:45999/?Action=GetCallerIdentity")
    aws.clear_cache()


def test_exec_credential_shape(sts):
    cred = eks.exec_credential("lab", REGION, sts)
    assert cred["apiVersion"] == "client.authentication.k8s.io/v1beta1"
    assert cred["kind"] == "ExecCredential"
    assert cred["status"]["token"].startswith("k8s-aws-v1.")
    assert cred["status"]["expirationTimestamp"].endswith("Z")


# ---------------------------------------------------------------------------------------
# kubeconfig
# ---------------------------------------------------------------------------------------


def test_kubeconfig_uses_the_get_token_exec_plugin(eks_client):
    eks.ensure_cluster(eks_client, "lab", ROLE, SUBNETS, GROUPS)
    cluster = eks.describe(eks_client, "lab")
    config = eks.kubeconfig(cluster)
    arn = cluster["arn"]
    assert config["apiVersion"] == "v1" and config["kind"] == "Config"
    assert config["current-context"] == arn
    assert config["clusters"] == [{"name": arn, "cluster": {
        "server": cluster["endpoint"],
        "certificate-authority-data": cluster["certificateAuthority"]["data"]}}]
    assert config["contexts"] == [{"name": arn, "context": {"cluster": arn, "user": arn}}]
    exec_ = config["users"][0]["user"]["exec"]
    assert exec_["apiVersion"] == "client.authentication.k8s.io/v1beta1"
    assert exec_["command"] == "aws"
    assert exec_["args"] == ["--region", REGION, "eks", "get-token", "--cluster-name", "lab",
                             "--output", "json"]
    assert "insecure-skip-tls-verify" not in json.dumps(config)
    with pytest.raises(ValueError):
        eks.kubeconfig({"name": "x", "endpoint": "https://e", "certificateAuthority": {}},
                       REGION)


# ---------------------------------------------------------------------------------------
# the cluster client
# ---------------------------------------------------------------------------------------


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_cluster_client_refreshes_its_token_before_it_expires():
    server = FakeKube()
    clock = Clock()
    minted: list[str] = []

    def source(name: str, region: str) -> tuple[str, float]:
        token = f"k8s-aws-v1.{name}-{len(minted)}"
        minted.append(token)
        return token, clock() + eks.TOKEN_REFRESH_AFTER_S

    # the server accepts a token for 15 minutes after it was minted (EKS's rule)
    issued: dict[str, float] = {}

    def accept(token: str) -> bool:
        issued.setdefault(token, clock())
        return token in minted and clock() - issued[token] < eks.TOKEN_LIFETIME_S

    server.accept_token = accept
    try:
        client = eks.ClusterClient("lab", REGION, server.url, server.ca_data, source, clock)
        core = CoreV1Api(client.api)
        core.list_namespace()
        assert server.tokens[-1] == "k8s-aws-v1.lab-0"
        for _ in range(6):  # an hour of a long-lived client, a request every 10 minutes
            clock.now += 10 * 60
            core.list_namespace()
        assert len(minted) == 4  # at 0, 20, 40 and 60 minutes (after 14 minutes each)
        assert server.tokens[-1] == minted[-1]
        clock.now += 13 * 60  # still inside 14 minutes: no new token
        core.list_namespace()
        assert len(minted) == 4
        client.force_refresh()
        assert client.token == minted[-1] == "k8s-aws-v1.lab-4"
        client.close()
    finally:
        server.stop()


def test_cluster_client_without_refresh_would_have_failed():
    """The check above is meaningful: a token kept past 15 minutes is refused."""
    server = FakeKube()
    clock = Clock()
    issued = {"k8s-aws-v1.lab": clock()}
    server.accept_token = lambda t: t in issued and clock() - issued[t] < eks.TOKEN_LIFETIME_S
    try:
        client = eks.ClusterClient("lab", REGION, server.url, server.ca_data,
                                   lambda n, r: ("k8s-aws-v1.lab", float("inf")), clock)
        core = CoreV1Api(client.api)
        core.list_namespace()
        clock.now += 16 * 60
        from kubernetes.client.exceptions import ApiException

        with pytest.raises(ApiException) as err:
            core.list_namespace()
        assert err.value.status == 401
        client.close()
    finally:
        server.stop()


def test_cluster_client_verifies_tls_against_the_cluster_ca():
    server, stranger = FakeKube(), FakeKube()
    try:
        # the right endpoint with another cluster's CA: refused
        client = eks.ClusterClient("lab", REGION, server.url, stranger.ca_data,
                                   lambda n, r: ("k8s-aws-v1.x", 1e12))
        client.configuration.retries = 0
        from urllib3.exceptions import MaxRetryError

        with pytest.raises(MaxRetryError, match="CERTIFICATE_VERIFY_FAILED"):
            CoreV1Api(client.api).list_namespace()
        assert client.configuration.verify_ssl is True
        client.close()
    finally:
        server.stop()
        stranger.stop()


def test_api_client_is_built_from_describe_cluster_and_cached(monkeypatch):
    server = FakeKube()
    fake = FakeEks({"lab": {"name": "lab", "status": "ACTIVE", "endpoint": server.url,
                            "certificateAuthority": {"data": server.ca_data}, "tags": {}},
                    "young": {"name": "young", "status": "CREATING", "tags": {}}})
    monkeypatch.setattr(eks, "eks_token", lambda name, region=None, sts=None, now=None:
                        (f"k8s-aws-v1.{name}", (now or 0) + eks.TOKEN_REFRESH_AFTER_S))
    try:
        first = eks.cluster_client("lab", REGION, fake)
        assert eks.cluster_client("lab", REGION, fake) is first
        names = [n.metadata.name for n in CoreV1Api(eks.api_client("lab", REGION))
                 .list_namespace().items]
        assert names == []
        assert server.tokens[-1] == "k8s-aws-v1.lab"
        with pytest.raises(eks.NotYet):
            eks.cluster_client("young", REGION, fake)
        with pytest.raises(eks.EksError) as err:
            eks.cluster_client("absent", REGION, fake)
        assert err.value.code == "not_found"
        eks.forget_client("lab")
        assert eks.cluster_client("lab", REGION, fake) is not first
    finally:
        eks.forget_client("lab")
        server.stop()


def test_client_cache_is_dropped_after_fork(monkeypatch):
    monkeypatch.setattr(eks, "_clients", {("lab", REGION, None): "stale"})
    monkeypatch.setattr(eks, "_clients_pid", -1)
    fake = FakeEks({"lab": {"name": "lab", "status": "CREATING", "tags": {}}})
    with pytest.raises(eks.NotYet):  # not the stale cached entry
        eks.cluster_client("lab", REGION, fake)
    assert eks._clients == {}


# ---------------------------------------------------------------------------------------
# against the sandbox: local AWS + one local Kubernetes per EKS cluster, over TLS
# ---------------------------------------------------------------------------------------


@pytest.fixture(params=["aws", "sandbox"])
def sandbox(request, monkeypatch):
    """The local AWS reached both ways a process can: `HYPD_AWS=aws` with the sandbox's
    environment (credentials from client_env), and `HYPD_AWS=sandbox`."""
    pytest.importorskip("sandbox.gaps.eks", reason="the sandbox's EKS gap is not there yet")
    from sandbox.control import SandboxControl
    from sandbox.local_aws import UNSET_ENV, LocalAws, client_env

    local = LocalAws(speed=1)  # real-time speed: the test moves the clock itself
    url = local.start()
    # moto's state is process-wide: start each run from an empty AWS
    urllib.request.urlopen(urllib.request.Request(url + "/moto-api/reset", method="POST"))
    for name in UNSET_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in client_env(url, REGION).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HYPD_AWS", request.param)
    monkeypatch.setenv("HYPD_REGION", REGION)
    aws.clear_cache()
    try:
        yield SandboxControl(url)
    finally:
        eks.forget_client("sb-lab")
        aws.clear_cache()
        local.stop()


def test_sandbox_cluster_from_create_to_server_side_apply(sandbox):
    from cloud import addons, dependencies, kube
    from cloud import iam as roles
    from cloud.kube import KubeError

    ec2, eks_api = aws.client("ec2", REGION), aws.client("eks", REGION)
    iam_api, sts_api = aws.client("iam", REGION), aws.client("sts", REGION)
    vpc = ec2.create_vpc(CidrBlock="10.8.0.0/16")["Vpc"]["VpcId"]
    subnets = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.8.{i}.0/24",
                                 AvailabilityZone=f"{REGION}{z}")["Subnet"]["SubnetId"]
               for i, z in enumerate("ab")]
    group = ec2.create_security_group(GroupName="sb", Description="sb", VpcId=vpc)["GroupId"]
    role = roles.ensure_role_spec(iam_api, roles.eks_cluster_role("sb-lab", REGION))

    created = eks.ensure_cluster(eks_api, "sb-lab", role, subnets, [group],
                                 client_request_token="tok-sb-lab")
    assert created["status"] == "CREATING"
    assert eks.cluster_wait(eks_api, "sb-lab") == 60.0
    eks.ensure_cluster(eks_api, "sb-lab", role, subnets, [group],
                       client_request_token="tok-sb-lab")  # a replay adopts
    sandbox.advance_clock(700)
    assert eks.cluster_wait(eks_api, "sb-lab") is None
    assert sandbox.counters()["by_action"].get("eks:CreateCluster") == 1
    state = eks.cluster_state(eks_api, "sb-lab")
    assert state["endpoint"].startswith("https://127.0.0.1:")
    assert state["authentication_mode"] == "API"

    # a valid token but no access entry yet: refused
    client = eks.cluster_client("sb-lab", REGION)
    with pytest.raises(KubeError) as err:
        kube.list_objects(client.api, "v1", "Namespace")
    assert err.value.http_status in (401, 403)

    principal = eks.panel_principal_arn(sts_api, iam_api)
    eks.ensure_access(eks_api, "sb-lab", principal)
    eks.ensure_access(eks_api, "sb-lab", principal)
    assert eks.access_state(eks_api, "sb-lab", principal) == {"entry": True, "policy": True}

    names = [n["metadata"]["name"] for n in kube.list_objects(client.api, "v1", "Namespace")]
    assert "kube-system" in names
    assert eks.api_client("sb-lab", REGION) is client.api
    cm = kube.server_side_apply(client.api, {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "hello", "namespace": "default"}, "data": {"a": "1"}})
    assert cm["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "hypd"
    assert kube.get_object(client.api, "v1", "ConfigMap", "hello", "default")["data"] == \
        {"a": "1"}

    arn = eks.ensure_oidc_provider(iam_api, state["oidc_issuer"], "sb-lab")
    assert eks.ensure_oidc_provider(iam_api, state["oidc_issuer"], "sb-lab") == arn

    # the dependencies stage: everything once, then nothing
    wanted = dependencies.desired()
    for action in addons.plan(wanted, addons.installed(eks_api, client.api, "sb-lab")):
        addons.apply(action, eks_api, client.api, "sb-lab", REGION,
                     client_token=f"tok-{action.dependency.name}")
    assert addons.plan(wanted, addons.installed(eks_api, client.api, "sb-lab")) == []
    names = [d.name for d in wanted if d.kind == dependencies.ADDON]
    sandbox.advance_clock(600)
    settled = addons.addons_settled(eks_api, "sb-lab", names)
    assert settled["failed"] == [] and settled["missing"] == []
    assert sandbox.counters()["by_action"].get("eks:CreateAddon") == len(names)


# -- Kubernetes version -----------------------------------------------------------------------


def _version_stub(version="1.32", status="ACTIVE"):
    from botocore.stub import Stubber

    client = aws.client("eks", REGION, AWS_MODE)
    stub = Stubber(client)
    stub.add_response("describe_cluster", {"cluster": {
        "name": "lab", "version": version, "status": status,
        "tags": {"hypd:managed-by": "hypd", "hypd:cluster": "lab"}}}, {"name": "lab"})
    return client, stub


def test_an_upgrade_goes_one_minor_version_and_sends_its_token():
    assert eks.next_minor("1.32") == "1.33" and eks.next_minor("1.9") == "1.10"
    client, stub = _version_stub()
    stub.add_response("list_updates", {"updateIds": []}, {"name": "lab"})
    stub.add_response("update_cluster_version", {"update": {"id": "u-1"}},
                      {"name": "lab", "version": "1.33", "clientRequestToken": "tok"})
    with stub:
        assert eks.start_version_update(client, "lab", "1.33", "tok") == "u-1"
    stub.assert_no_pending_responses()


def test_an_update_already_under_way_is_followed_not_asked_again():
    client, stub = _version_stub()
    stub.add_response("list_updates", {"updateIds": ["u-0", "u-9"]}, {"name": "lab"})
    stub.add_response("describe_update", {"update": {
        "id": "u-0", "type": "VersionUpdate", "status": "Failed",
        "params": [{"type": "Version", "value": "1.33"}]}}, {"name": "lab", "updateId": "u-0"})
    stub.add_response("describe_update", {"update": {
        "id": "u-9", "type": "VersionUpdate", "status": "InProgress",
        "params": [{"type": "Version", "value": "1.33"}]}}, {"name": "lab", "updateId": "u-9"})
    with stub:  # no update_cluster_version queued: calling it would fail the stub
        assert eks.start_version_update(client, "lab", "1.33", "tok") == "u-9"


def test_an_upgrade_that_skips_a_version_or_is_done_sends_nothing():
    client, stub = _version_stub(version="1.31")
    with stub, pytest.raises(eks.EksError, match=r"next version is 1\.32"):
        eks.start_version_update(client, "lab", "1.33", "tok")
    client, stub = _version_stub(version="1.33")
    with stub:
        assert eks.start_version_update(client, "lab", "1.33", "tok") is None
