"""An EKS control plane for a hypd cluster: create/adopt, access, OIDC, tokens, the client.

Builders are *ensures*: each looks its resource up first and creates it only when it provably
does not exist. An existing EKS cluster is adopted only when its tags say hypd made it for
this cluster (`hypd:managed-by=hypd`, `hypd:cluster=<name>`); any other cluster of that name
is a conflict the user must resolve. `CreateCluster` carries a `clientRequestToken`, so a
replayed request is answered by AWS instead of making a second cluster.

Authentication to the Kubernetes API is what `aws eks get-token` does: a presigned STS
`GetCallerIdentity` URL whose signature covers the header `x-k8s-aws-id: <cluster>`, base64url
encoded behind `k8s-aws-v1.`. EKS accepts such a token for 15 minutes; `ClusterClient` mints a
new one after 14, so a long-lived kubernetes client keeps working.

Access is API-mode only: the cluster is created with `authenticationMode=API` and without
bootstrap admin rights for its creator; the panel's own principal gets an access entry *and*
the `AmazonEKSClusterAdminPolicy` association (an entry alone grants nothing).
"""

from __future__ import annotations

import base64
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from botocore.exceptions import ClientError
from kubernetes.client import ApiClient, Configuration

from cloud import aws
from cloud.aws import CLUSTER_TAG, MANAGED_BY, MANAGED_BY_VALUE, error_code, is_not_found
from cloud.errors import NotYet, Refusal
from cloud.settings import Settings
from vocabulary import kubernetes_versions

# ---------------------------------------------------------------------------------------
# constants
# ---------------------------------------------------------------------------------------

AUTHENTICATION_MODE = "API"
"""HyperPod supports API and API_AND_CONFIG_MAP; hypd never writes aws-auth, so API."""

ADMIN_ACCESS_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
OIDC_AUDIENCE = "sts.amazonaws.com"

TOKEN_PREFIX = "k8s-aws-v1."
CLUSTER_ID_HEADER = "x-k8s-aws-id"
PRESIGN_EXPIRES_S = 60
TOKEN_LIFETIME_S = 15 * 60
TOKEN_REFRESH_AFTER_S = 14 * 60
"""EKS accepts a token 15 minutes after it was signed; hypd treats it as expired after 14."""

ACTIVE = "ACTIVE"
CREATING = "CREATING"
DELETING = "DELETING"
FAILED = "FAILED"
UPDATING = "UPDATING"
PENDING = "PENDING"


class EksError(Refusal):
    """A permanent problem the user must resolve (a name taken by another cluster, a failed
    cluster)."""


def cluster_tags(cluster: str, **extra: str) -> dict[str, str]:
    """hypd's tags for an EKS resource (EKS takes tags as a map)."""
    return {t["Key"]: t["Value"] for t in aws.tags_for(CLUSTER_TAG, cluster, **extra)}


def made_by_hypd_for(tags: Mapping[str, str] | None, cluster: str) -> bool:
    tags = tags or {}
    return tags.get(MANAGED_BY) == MANAGED_BY_VALUE and tags.get(CLUSTER_TAG) == cluster


# ---------------------------------------------------------------------------------------
# the control plane
# ---------------------------------------------------------------------------------------


def describe(eks: Any, name: str) -> dict[str, Any] | None:
    """`describe_cluster`'s cluster, or None when there is none of that name."""
    try:
        return eks.describe_cluster(name=name)["cluster"]
    except ClientError as exc:
        if is_not_found(exc):
            return None
        raise


def list_cluster_names(eks: Any, page_size: int | None = None) -> list[str]:
    """Every EKS cluster name in the client's region. `ListClusters` answers a page at a
    time (at most 100 names): a single call silently drops the clusters past the first page,
    so the paginator follows `nextToken` to the end. `page_size` is for tests."""
    config = {"PageSize": page_size} if page_size else {}
    pages = eks.get_paginator("list_clusters").paginate(PaginationConfig=config)
    return [name for page in pages for name in page.get("clusters") or ()]


def managed_clusters(eks: Any) -> list[dict[str, Any]]:
    """`describe_cluster`'s cluster for each EKS cluster hypd made (by its tags) in the
    client's region, in listing order; one deleted between the list and the describe is
    left out."""
    found = []
    for name in list_cluster_names(eks):
        described = describe(eks, name)
        if described is not None and made_by_hypd_for(described.get("tags"), name):
            found.append(described)
    return found


def described_clusters(eks: Any) -> list[dict[str, Any]]:
    """`describe_cluster`'s cluster for every EKS cluster in the client's region (one gone
    between the list and its describe is left out)."""
    found = (describe(eks, name) for name in list_cluster_names(eks))
    return [cluster for cluster in found if cluster is not None]


def clusters_in_vpc(eks: Any, vpc_id: str, subnet_ids: Sequence[str] = (),
                    described: Sequence[dict[str, Any]] | None = None
                    ) -> list[dict[str, Any]]:
    """`describe_cluster`'s cluster for every EKS cluster in the client's region that runs in
    the VPC — whoever made it — by its `resourcesVpcConfig.vpcId`, or by its subnets when an
    endpoint leaves the VPC id out. What a network's delete must not pull from under.
    `described`: the region's clusters already described (`described_clusters`), so that a
    read of many networks describes each cluster once."""
    subnets = set(subnet_ids)
    found = []
    for cluster in described_clusters(eks) if described is None else described:
        config = cluster.get("resourcesVpcConfig") or {}
        if config.get("vpcId") == vpc_id or subnets & set(config.get("subnetIds") or ()):
            found.append(cluster)
    return found


def ensure_cluster(eks: Any, name: str, role_arn: str, subnet_ids: list[str],
                   security_group_ids: list[str], version: str | None = None,
                   tags: Mapping[str, str] | None = None, client_request_token: str | None = None,
                   authentication_mode: str = AUTHENTICATION_MODE,
                   endpoint_public_access: bool = True) -> dict[str, Any]:
    """The EKS cluster `name`, created if it does not exist. Returns `describe_cluster`'s
    cluster. Raises `EksError` when a cluster of that name exists that hypd did not make for
    this cluster, `NotYet` while one of that name is still being deleted. Without a
    `version`, the newest offered (vocabulary/kubernetes_versions.py)."""
    if authentication_mode not in ("API", "API_AND_CONFIG_MAP"):
        raise ValueError("HyperPod needs authenticationMode API or API_AND_CONFIG_MAP")
    found = describe(eks, name)
    if found is not None:
        return _adopt(found, name)
    all_tags = {**cluster_tags(name), **(tags or {})}
    request: dict[str, Any] = {
        "name": name,
        "version": version or kubernetes_versions.default(),
        "roleArn": role_arn,
        "resourcesVpcConfig": {
            "subnetIds": list(subnet_ids),
            "securityGroupIds": list(security_group_ids),
            "endpointPublicAccess": endpoint_public_access,
            "endpointPrivateAccess": True,
        },
        "accessConfig": {
            "authenticationMode": authentication_mode,
            "bootstrapClusterCreatorAdminPermissions": False,
        },
        "tags": all_tags,
    }
    if client_request_token:
        request["clientRequestToken"] = client_request_token
    try:
        return eks.create_cluster(**request)["cluster"]
    except ClientError as exc:
        # a replay of the same token, or a racing creator: look again and adopt if it is ours
        if error_code(exc) != "ResourceInUseException":
            raise
        found = describe(eks, name)
        if found is None:
            raise NotYet(f"EKS cluster {name} is being created or deleted", 15.0) from exc
        return _adopt(found, name)


def _adopt(found: dict[str, Any], name: str) -> dict[str, Any]:
    if not made_by_hypd_for(found.get("tags"), name):
        raise EksError(
            f"an EKS cluster named {name!r} already exists in this region and hypd did not "
            "create it; choose another name, or import the existing cluster instead")
    if found.get("status") == DELETING:
        raise NotYet(f"EKS cluster {name} is still being deleted", 30.0)
    return found


def cluster_state(eks: Any, name: str) -> dict[str, Any] | None:
    """What a stage needs to know about the cluster, or None when it does not exist:
    {name, arn, status, version, endpoint, certificate_authority, oidc_issuer,
    authentication_mode, platform_version, tags, managed, health_issues}."""
    found = describe(eks, name)
    if found is None:
        return None
    tags = found.get("tags") or {}
    return {
        "name": found["name"],
        "arn": found.get("arn"),
        "status": found.get("status"),
        "version": found.get("version"),
        "endpoint": found.get("endpoint"),
        "certificate_authority": (found.get("certificateAuthority") or {}).get("data"),
        "oidc_issuer": ((found.get("identity") or {}).get("oidc") or {}).get("issuer"),
        "authentication_mode": (found.get("accessConfig") or {}).get("authenticationMode"),
        "platform_version": found.get("platformVersion"),
        "tags": tags,
        "managed": made_by_hypd_for(tags, name),
        "health_issues": [i.get("message", "") for i in
                          (found.get("health") or {}).get("issues") or ()],
    }


def cluster_wait(eks: Any, name: str) -> float | None:
    """None when the cluster is ACTIVE with an endpoint; otherwise seconds to ask again.
    Raises `EksError` when it failed or is gone."""
    state = cluster_state(eks, name)
    if state is None:
        raise EksError(f"EKS cluster {name} does not exist (deleted while being created?)",
                       "upstream_error")
    status = state["status"]
    if status == FAILED:
        issues = "; ".join(state["health_issues"]) or "no details from EKS"
        raise EksError(f"EKS cluster {name} failed to create: {issues}", "upstream_error")
    if status == ACTIVE and state["endpoint"] and state["certificate_authority"]:
        return None
    if status == DELETING:
        raise EksError(f"EKS cluster {name} is being deleted", "conflict")
    return 60.0 if status == CREATING else 15.0


# -- Kubernetes version -------------------------------------------------------------------------

VERSION_UPDATE = "VersionUpdate"
UPDATE_DONE = "Successful"
UPDATE_FAILED = ("Failed", "Cancelled")


def minor(version: str) -> tuple[int, int]:
    major, _, rest = version.partition(".")
    return int(major), int(rest.split(".")[0])


def next_minor(version: str) -> str:
    """The only version EKS upgrades `version` to: one minor version up."""
    major, minor_number = minor(version)
    return f"{major}.{minor_number + 1}"


def _updates(eks: Any, name: str) -> list[dict[str, Any]]:
    ids, kwargs = [], {"name": name}
    while True:
        reply = eks.list_updates(**kwargs)
        ids += reply.get("updateIds") or []
        if not reply.get("nextToken"):
            break
        kwargs["nextToken"] = reply["nextToken"]
    return [eks.describe_update(name=name, updateId=i)["update"] for i in ids]


def version_update(eks: Any, name: str, version: str) -> dict[str, Any] | None:
    """The cluster's update to `version` that is under way or done, if any: the evidence an
    earlier attempt's UpdateClusterVersion went through."""
    for update in _updates(eks, name):
        params = {p.get("type"): p.get("value") for p in update.get("params") or ()}
        if update.get("type") == VERSION_UPDATE and params.get("Version") == version and (
                update.get("status") not in UPDATE_FAILED):
            return update
    return None


def start_version_update(eks: Any, name: str, version: str, token: str) -> str | None:
    """Ask EKS to upgrade the cluster to `version` (one minor version above its own);
    answers the update's id, None when the cluster runs `version` already. An update to
    `version` already under way is followed, not asked for again (`clientRequestToken` keeps
    a replay of the same call from starting a second one)."""
    found = describe(eks, name)
    if found is None:
        raise EksError(f"EKS cluster {name} does not exist", "not_found")
    if not made_by_hypd_for(found.get("tags"), name):
        raise EksError(f"EKS cluster {name} was not created by hypd: hypd does not upgrade it")
    current = found.get("version") or ""
    if current == version:
        return None
    if next_minor(current) != version:
        raise EksError(f"EKS upgrades one minor version at a time: cluster {name} runs "
                       f"{current}, so the next version is {next_minor(current)}, not {version}",
                       "validation_failed")
    running = version_update(eks, name, version)
    if running is not None:
        return running["id"]
    if found.get("status") != ACTIVE:
        raise NotYet(f"EKS cluster {name} is {found.get('status')}; it can be upgraded once "
                     "ACTIVE", 30.0)
    try:
        reply = eks.update_cluster_version(name=name, version=version,
                                           clientRequestToken=token)
    except ClientError as exc:
        if error_code(exc) == "ResourceInUseException":
            raise NotYet(f"EKS cluster {name} is busy with another update", 30.0) from exc
        raise
    return reply["update"]["id"]


def version_wait(eks: Any, name: str, version: str, update_id: str | None) -> float | None:
    """None once the cluster runs `version` and is ACTIVE; seconds to look again while the
    update runs; EksError when EKS reports it failed."""
    if update_id:
        update = eks.describe_update(name=name, updateId=update_id)["update"]
        if update.get("status") in UPDATE_FAILED:
            errors = "; ".join(e.get("errorMessage", "") for e in update.get("errors") or ())
            raise EksError(f"the upgrade of EKS cluster {name} to {version} "
                           f"{update['status'].lower()}: {errors or 'no details from EKS'}",
                           "upstream_error")
    found = describe(eks, name) or {}
    if found.get("version") == version and found.get("status") == ACTIVE:
        return None
    return 60.0


def delete_cluster(eks: Any, name: str) -> bool:
    """Start deleting the cluster if hypd made it. False when it is already gone; True when
    deletion was started or is under way. Refuses (EksError) a cluster hypd did not make."""
    found = describe(eks, name)
    if found is None:
        return False
    if not made_by_hypd_for(found.get("tags"), name):
        raise EksError(f"EKS cluster {name!r} was not created by hypd; refusing to delete it")
    if found.get("status") == DELETING:
        return True
    try:
        eks.delete_cluster(name=name)
    except ClientError as exc:
        if is_not_found(exc):
            return False
        if error_code(exc) == "ResourceInUseException":
            raise NotYet(f"EKS cluster {name} cannot be deleted yet: "
                         f"{exc.response['Error'].get('Message', '')}", 30.0) from exc
        raise
    return True


def cluster_gone(eks: Any, name: str) -> float | None:
    """None when the cluster no longer exists, else seconds to ask again."""
    return None if describe(eks, name) is None else 30.0


# ---------------------------------------------------------------------------------------
# access entries
# ---------------------------------------------------------------------------------------


def ensure_access(eks: Any, cluster: str, principal_arn: str,
                  policy_arn: str = ADMIN_ACCESS_POLICY) -> dict[str, Any]:
    """An access entry for `principal_arn` plus `policy_arn` associated at cluster scope.
    Both are idempotent; an entry someone else made is kept and given the policy.
    Returns {principal_arn, policy_arn, entry_created, policy_associated}."""
    created = False
    try:
        eks.create_access_entry(clusterName=cluster, principalArn=principal_arn,
                                type="STANDARD", tags=cluster_tags(cluster, role="panel-access"))
        created = True
    except ClientError as exc:
        if error_code(exc) != "ResourceInUseException":
            raise
    associated = False
    if not _has_policy(eks, cluster, principal_arn, policy_arn):
        eks.associate_access_policy(clusterName=cluster, principalArn=principal_arn,
                                    policyArn=policy_arn, accessScope={"type": "cluster"})
        associated = True
    return {"principal_arn": principal_arn, "policy_arn": policy_arn,
            "entry_created": created, "policy_associated": associated}


def _has_policy(eks: Any, cluster: str, principal_arn: str, policy_arn: str) -> bool:
    token = None
    while True:
        kwargs: dict[str, Any] = {"clusterName": cluster, "principalArn": principal_arn}
        if token:
            kwargs["nextToken"] = token
        reply = eks.list_associated_access_policies(**kwargs)
        for item in reply.get("associatedAccessPolicies") or ():
            if (item.get("policyArn") == policy_arn
                    and (item.get("accessScope") or {}).get("type") == "cluster"):
                return True
        token = reply.get("nextToken")
        if not token:
            return False


def access_state(eks: Any, cluster: str, principal_arn: str,
                 policy_arn: str = ADMIN_ACCESS_POLICY) -> dict[str, bool]:
    """{entry, policy}: whether the principal has an entry, and the policy at cluster scope."""
    try:
        eks.describe_access_entry(clusterName=cluster, principalArn=principal_arn)
    except ClientError as exc:
        if is_not_found(exc):
            return {"entry": False, "policy": False}
        raise
    return {"entry": True, "policy": _has_policy(eks, cluster, principal_arn, policy_arn)}


def delete_access(eks: Any, cluster: str, principal_arn: str) -> bool:
    """Remove the access entry if hypd made it (by its tags). True if one was deleted."""
    try:
        entry = eks.describe_access_entry(clusterName=cluster,
                                          principalArn=principal_arn)["accessEntry"]
    except ClientError as exc:
        if is_not_found(exc):
            return False
        raise
    if not made_by_hypd_for(entry.get("tags"), cluster):
        return False
    try:
        eks.delete_access_entry(clusterName=cluster, principalArn=principal_arn)
    except ClientError as exc:
        if is_not_found(exc):
            return False
        raise
    return True


_ASSUMED_ROLE = re.compile(r"^arn:(?P<partition>[^:]+):sts::(?P<account>\d{12}):"
                           r"assumed-role/(?P<role>[^/]+)/.+$")
_STS_USER = re.compile(r"^arn:(?P<partition>[^:]+):sts::(?P<account>\d{12}):user/(?P<user>.+)$")


def panel_principal_arn(sts: Any, iam: Any | None = None) -> str:
    """The IAM principal the panel calls AWS as, in the form EKS access entries take: an
    assumed-role session is mapped to its role (`arn:aws:iam::A:role/<path>R`; the path is
    looked up with `iam` when given, since the session ARN does not carry it)."""
    arn = sts.get_caller_identity()["Arn"]
    return principal_from_caller_arn(arn, iam)


def principal_from_caller_arn(arn: str, iam: Any | None = None) -> str:
    user = _STS_USER.match(arn)
    if user:  # moto spells an IAM user's caller ARN in the sts namespace; AWS does not
        return f"arn:{user.group('partition')}:iam::{user.group('account')}:user/" \
               f"{user.group('user')}"
    match = _ASSUMED_ROLE.match(arn)
    if not match:
        return arn
    role = match.group("role")
    if iam is not None:
        try:
            return iam.get_role(RoleName=role)["Role"]["Arn"]
        except ClientError as exc:
            if error_code(exc) not in ("AccessDenied", "AccessDeniedException") \
                    and not is_not_found(exc):
                raise
    return f"arn:{match.group('partition')}:iam::{match.group('account')}:role/{role}"


# ---------------------------------------------------------------------------------------
# OIDC provider (IAM roles for service accounts)
# ---------------------------------------------------------------------------------------


def _issuer_host_path(issuer_url: str) -> str:
    parts = urlsplit(issuer_url if "://" in issuer_url else "https://" + issuer_url)
    return (parts.netloc + parts.path).rstrip("/")


def find_oidc_provider(iam: Any, issuer_url: str) -> str | None:
    """The ARN of the account's OIDC provider for this issuer, or None."""
    wanted = _issuer_host_path(issuer_url)
    for item in iam.list_open_id_connect_providers().get("OpenIDConnectProviderList") or ():
        arn = item["Arn"]
        if arn.split(":oidc-provider/", 1)[-1].rstrip("/") == wanted:
            return arn
    return None


def ensure_oidc_provider(iam: Any, issuer_url: str, cluster: str) -> str:
    """The IAM OIDC provider for the cluster's issuer (one per issuer per account), created
    with audience `sts.amazonaws.com` if missing. No thumbprint is sent: the parameter is
    optional, IAM then takes the issuer's top intermediate CA itself, and for EKS issuers
    IAM relies on its own trusted root CAs rather than the thumbprint."""
    if not issuer_url:
        raise ValueError("the cluster has no OIDC issuer yet (is it ACTIVE?)")
    found = find_oidc_provider(iam, issuer_url)
    if found:
        return found
    url = issuer_url if issuer_url.startswith("https://") else "https://" + issuer_url
    try:
        return iam.create_open_id_connect_provider(
            Url=url, ClientIDList=[OIDC_AUDIENCE],
            Tags=aws.tags_for(CLUSTER_TAG, cluster, role="oidc-provider"),
        )["OpenIDConnectProviderArn"]
    except ClientError as exc:
        if error_code(exc) != "EntityAlreadyExists":
            raise
        found = find_oidc_provider(iam, issuer_url)
        if not found:
            raise
        return found


def delete_oidc_provider(iam: Any, issuer_url: str, cluster: str) -> bool:
    """Delete the issuer's OIDC provider if hypd made it for this cluster (by tags)."""
    arn = find_oidc_provider(iam, issuer_url) if issuer_url else None
    if arn is None:
        return False
    try:
        tags = iam.list_open_id_connect_provider_tags(OpenIDConnectProviderArn=arn)["Tags"]
        if not made_by_hypd_for({t["Key"]: t["Value"] for t in tags}, cluster):
            return False
        iam.delete_open_id_connect_provider(OpenIDConnectProviderArn=arn)
    except ClientError as exc:
        if is_not_found(exc):
            return False
        raise
    return True


# ---------------------------------------------------------------------------------------
# tokens (what `aws eks get-token` prints)
# ---------------------------------------------------------------------------------------

_TOKEN_PARAM = "HypdEksClusterName"
_TOKEN_CONTEXT = "hypd_eks_cluster_name"
_handlers_lock = threading.Lock()


def _take_cluster_name(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    # runs before parameter validation: our own parameter must not reach the STS model
    if _TOKEN_PARAM in params:
        context[_TOKEN_CONTEXT] = params.pop(_TOKEN_PARAM)


def _sign_cluster_header(request: Any, **_: Any) -> None:
    name = (getattr(request, "context", None) or {}).get(_TOKEN_CONTEXT)
    if name:
        request.headers[CLUSTER_ID_HEADER] = name


def _prepare_sts(sts: Any) -> None:
    events = sts.meta.events
    with _handlers_lock:
        # unique ids make registration idempotent on a shared (cached) client
        events.register("provide-client-params.sts.GetCallerIdentity", _take_cluster_name,
                        unique_id="hypd-eks-token-params")
        events.register("before-sign.sts.GetCallerIdentity", _sign_cluster_header,
                        unique_id="hypd-eks-token-header")


def presigned_identity_url(cluster_name: str, sts: Any) -> str:
    """A GET `GetCallerIdentity` URL on the client's (regional) STS endpoint, valid 60 s,
    whose signature covers `x-k8s-aws-id: <cluster_name>`."""
    _prepare_sts(sts)
    return sts.generate_presigned_url(
        "get_caller_identity", Params={_TOKEN_PARAM: cluster_name},
        ExpiresIn=PRESIGN_EXPIRES_S, HttpMethod="GET")


def eks_token(cluster_name: str, region: str | None = None, sts: Any | None = None,
              now: float | None = None) -> tuple[str, float]:
    """(bearer token, time after which to mint a new one). `sts` defaults to hypd's STS
    client for `region` (so AWS_ENDPOINT_URL and the sandbox guard apply)."""
    sts = sts if sts is not None else aws.client("sts", region)
    url = presigned_identity_url(cluster_name, sts)
    encoded = base64.urlsafe_b64encode(url.encode("utf-8")).decode("ascii").rstrip("=")
    start = time.time() if now is None else now
    return TOKEN_PREFIX + encoded, start + TOKEN_REFRESH_AFTER_S


def exec_credential(cluster_name: str, region: str | None = None,
                    sts: Any | None = None) -> dict[str, Any]:
    """The ExecCredential `aws eks get-token --output json` prints (for a kubeconfig
    exec plugin or a CLI)."""
    token, refresh_at = eks_token(cluster_name, region, sts)
    expires = time.gmtime(refresh_at - TOKEN_REFRESH_AFTER_S + TOKEN_LIFETIME_S)
    return {
        "kind": "ExecCredential",
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "spec": {},
        "status": {"expirationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", expires),
                   "token": token},
    }


# ---------------------------------------------------------------------------------------
# kubeconfig
# ---------------------------------------------------------------------------------------


def region_of(cluster: Mapping[str, Any]) -> str | None:
    arn = cluster.get("arn") or ""
    parts = arn.split(":")
    return parts[3] if len(parts) > 3 and parts[3] else None


def kubeconfig(cluster: Mapping[str, Any], region: str | None = None) -> dict[str, Any]:
    """A kubeconfig for `describe_cluster`'s cluster that authenticates with the
    `aws eks get-token` exec plugin, as `aws eks update-kubeconfig` writes it."""
    name = cluster["name"]
    region = region or region_of(cluster)
    if not region:
        raise ValueError("the cluster's region is unknown: pass region")
    ca = (cluster.get("certificateAuthority") or {}).get("data")
    if not cluster.get("endpoint") or not ca:
        raise ValueError(f"EKS cluster {name} has no endpoint yet (is it ACTIVE?)")
    ref = cluster.get("arn") or name
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": ref, "cluster": {"server": cluster["endpoint"],
                                               "certificate-authority-data": ca}}],
        "contexts": [{"name": ref, "context": {"cluster": ref, "user": ref}}],
        "current-context": ref,
        "users": [{"name": ref, "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "aws",
            "args": ["--region", region, "eks", "get-token", "--cluster-name", name,
                     "--output", "json"],
            "interactiveMode": "IfAvailable",
            "provideClusterInfo": False,
        }}}],
    }


# ---------------------------------------------------------------------------------------
# the kubernetes client
# ---------------------------------------------------------------------------------------

TokenSource = Callable[[str, str], tuple[str, float]]
Clock = Callable[[], float]


class ClusterClient:
    """A kubernetes `ApiClient` for one EKS cluster: TLS verified against the cluster's CA,
    bearer token minted again before it expires (checked before every request)."""

    def __init__(self, cluster_name: str, region: str, endpoint: str, ca_data: str,
                 token_source: TokenSource | None = None, clock: Clock = time.time) -> None:
        if not endpoint or not ca_data:
            raise ValueError(f"EKS cluster {cluster_name} has no endpoint or CA yet")
        self.cluster_name = cluster_name
        self.region = region
        self.endpoint = endpoint
        self._clock = clock
        self._token_source = token_source or (lambda name, reg: eks_token(name, reg,
                                                                          now=clock()))
        self._lock = threading.Lock()
        config = Configuration(host=endpoint.rstrip("/"))
        config.verify_ssl = True
        config.ca_cert_data = base64.b64decode(ca_data).decode("ascii")
        config.api_key_prefix = {"BearerToken": "Bearer"}
        self.expires_at = 0.0
        config.api_key = {"BearerToken": ""}
        self.configuration = config
        self._mint()
        config.refresh_api_key_hook = self._refresh
        self.api = ApiClient(config)

    def _mint(self) -> None:
        token, expires_at = self._token_source(self.cluster_name, self.region)
        self.configuration.api_key["BearerToken"] = token
        self.expires_at = expires_at

    def _refresh(self, config: Configuration) -> None:
        if self._clock() < self.expires_at:
            return
        with self._lock:
            if self._clock() >= self.expires_at:
                self._mint()

    def force_refresh(self) -> None:
        """Mint a new token now (e.g. after a 401)."""
        with self._lock:
            self._mint()

    @property
    def token(self) -> str:
        return self.configuration.api_key["BearerToken"]

    def close(self) -> None:
        self.api.close()


_clients_lock = threading.Lock()
_clients_pid = os.getpid()
_clients: dict[tuple[Any, ...], ClusterClient] = {}


def cluster_client(cluster_name: str, region: str | None = None,
                   eks: Any | None = None) -> ClusterClient:
    """The process's `ClusterClient` for (cluster, region), built from `describe_cluster`
    the first time. Cached per process and dropped after a fork."""
    region = region or Settings.from_env().region
    key = (cluster_name, region, aws.configured_endpoint("eks")[1])
    global _clients_pid
    with _clients_lock:
        if os.getpid() != _clients_pid:
            _clients_pid = os.getpid()
            _clients.clear()
        cached = _clients.get(key)
    if cached is not None:
        return cached
    eks = eks if eks is not None else aws.client("eks", region)
    found = describe(eks, cluster_name)
    if found is None:
        raise EksError(f"EKS cluster {cluster_name} does not exist in {region}", "not_found")
    ca = (found.get("certificateAuthority") or {}).get("data")
    if found.get("status") != ACTIVE or not found.get("endpoint") or not ca:
        raise NotYet(f"EKS cluster {cluster_name} is {found.get('status')}, not ACTIVE yet",
                     30.0)
    built = ClusterClient(cluster_name, region, found["endpoint"], ca)
    with _clients_lock:
        return _clients.setdefault(key, built)


def api_client(cluster_name: str, region: str | None = None) -> ApiClient:
    """A kubernetes ApiClient for the EKS cluster (see `cluster_client`)."""
    return cluster_client(cluster_name, region).api


def forget_client(cluster_name: str, region: str | None = None) -> None:
    """Drop cached clients for the cluster (after it was deleted or re-created)."""
    with _clients_lock:
        for key in [k for k in _clients if k[0] == cluster_name
                    and (region is None or k[1] == region)]:
            _clients.pop(key).close()
