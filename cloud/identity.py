"""The identity chain of a managed feature's consumer: its IAM role (trust by mechanism,
least-privilege policy by role key), and — for a service account hypd makes itself — the
Kubernetes service account annotated with that role.

Mechanisms (cloud/dependencies.py): Pod Identity trusts `pods.eks.amazonaws.com` for this
cluster and is bound by the add-on's association; IRSA trusts the cluster's OIDC provider for
one `system:serviceaccount:<ns>:<name>` and is bound by the add-on's `serviceAccountRoleArn`
or the service account's `eks.amazonaws.com/role-arn` annotation; `hyperpod` is the cluster's
own ClusterRole, shared with the cluster: ensured, never removed here. The OIDC provider is
the cluster's (made by its eks stage), shared by every IRSA consumer: this module finds it
(and makes it only when a cluster lacks it) and never deletes it.

A consumer with `tls_bucket` (the inference operator) also has its `hyperpod-tls-hypd-*`
bucket, made and removed with its role (tagged as the cluster's, emptied before deletion).

Every call adopts: a role, bucket or service account that exists as wanted is left alone, so
a step re-run after a crash converges without making anything twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes.client import ApiClient

from cloud import eks, iam, kube, storage
from cloud.aws import CLUSTER_TAG, tags_for
from cloud.dependencies import CLUSTER_ROLE, IRSA, POD_IDENTITY, SERVICE_ACCOUNT, Dependency
from cloud.errors import Refusal

ROLE_ANNOTATION = "eks.amazonaws.com/role-arn"
DEPENDENCY_LABEL = "hypd/dependency"
TLS_BUCKET_ROLE = "inference-tls"
SYSTEM_NAMESPACES = ("default", "kube-system")


class IdentityError(Refusal):
    """An identity chain cannot be made as asked (the cluster has no OIDC issuer yet)."""

    default_code = "precondition_failed"


@dataclass(frozen=True)
class ClusterFacts:
    """What a consumer's role is scoped to: read once per operation."""

    cluster: str
    region: str
    account: str
    eks_cluster_arn: str
    oidc_issuer: str | None
    bucket: str | None


def facts(eks_client: Any, cluster: str, region: str, account: str,
          bucket: str | None) -> ClusterFacts:
    found = eks.describe(eks_client, cluster) or {}
    issuer = ((found.get("identity") or {}).get("oidc") or {}).get("issuer")
    return ClusterFacts(cluster=cluster, region=region, account=account,
                        eks_cluster_arn=found.get("arn") or "", oidc_issuer=issuer,
                        bucket=bucket)


def role_name(dep: Dependency, cluster: str) -> str:
    if dep.identity is None:
        raise ValueError(f"{dep.name} has no identity")
    return iam.role_name(cluster, dep.identity.role)


def tls_bucket(dep: Dependency, facts: ClusterFacts) -> str | None:
    """The consumer's TLS-certificate bucket, or None when it keeps none."""
    if dep.identity is None or not dep.identity.tls_bucket:
        return None
    return storage.tls_bucket_name(facts.cluster, facts.account, facts.region)


def tls_bucket_tags(cluster: str) -> list[dict[str, str]]:
    return tags_for(CLUSTER_TAG, cluster, role=TLS_BUCKET_ROLE)


def oidc_provider(iam_client: Any, facts: ClusterFacts, create: bool) -> str | None:
    """The cluster's OIDC provider ARN (made by the eks stage; made here only when missing
    and `create`). Shared: never deleted by a feature."""
    if not facts.oidc_issuer:
        if create:
            raise IdentityError(f"EKS cluster {facts.cluster} reports no OIDC issuer yet, so "
                                "no IRSA role can trust it; try again once it is ACTIVE")
        return None
    found = eks.find_oidc_provider(iam_client, facts.oidc_issuer)
    if found is None and create:
        found = eks.ensure_oidc_provider(iam_client, facts.oidc_issuer, facts.cluster)
    return found


def role_spec(iam_client: Any, dep: Dependency, facts: ClusterFacts,
              create: bool = True, provider: str | None = None) -> iam.RoleSpec:
    """The role `dep`'s consumer runs as, exactly as hypd makes it (`provider`: the OIDC
    provider's ARN when the caller has it already)."""
    identity = dep.identity
    if identity is None:
        raise ValueError(f"{dep.name} has no identity")
    if identity.mechanism == CLUSTER_ROLE:
        return iam.hyperpod_cluster_role(facts.cluster, facts.region, facts.account)
    if identity.mechanism == POD_IDENTITY:
        trust = iam.pod_identity_trust(facts.account, facts.eks_cluster_arn)
    elif identity.mechanism == IRSA:
        provider = provider or oidc_provider(iam_client, facts, create) or ""
        trust = iam.irsa_trust(provider, facts.oidc_issuer or "", identity.namespace or "",
                               identity.service_account or "")
    else:  # pragma: no cover - the data is validated on load
        raise ValueError(f"unknown mechanism {identity.mechanism}")
    return iam.feature_role(facts.cluster, facts.region, facts.account, identity.role, trust,
                            facts.bucket)


def service_account(dep: Dependency, role_arn: str) -> dict[str, Any]:
    """The service account hypd makes for an IRSA consumer of its own, annotated with the
    role it is bound to."""
    identity = dep.identity
    if identity is None or dep.kind != SERVICE_ACCOUNT:
        raise ValueError(f"{dep.name} is not a service account hypd makes")
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": identity.service_account,
            "namespace": identity.namespace,
            "labels": kube.labels({DEPENDENCY_LABEL: dep.name}),
            "annotations": {ROLE_ANNOTATION: role_arn},
        },
    }


# -- ensure / remove -------------------------------------------------------------------------


def ensure(iam_client: Any, api: ApiClient | None, dep: Dependency,
           facts: ClusterFacts, s3: Any = None) -> dict[str, Any]:
    """The consumer's role (created once, converged after), its TLS bucket if it keeps one
    (`s3` needed then), then its own service account with the annotation binding them (its
    namespace made first when missing). Returns {role, role_arn, tls_bucket?,
    service_account?}."""
    spec = role_spec(iam_client, dep, facts)
    arn = iam.ensure_role_spec(iam_client, spec)
    out: dict[str, Any] = {"role": spec.name, "role_arn": arn}
    bucket = tls_bucket(dep, facts)
    if bucket is not None:
        if s3 is None:
            raise ValueError(f"{dep.name} keeps a TLS bucket: give an S3 client")
        storage.ensure_bucket(s3, bucket, facts.region, tls_bucket_tags(facts.cluster))
        out["tls_bucket"] = bucket
    if dep.kind == SERVICE_ACCOUNT:
        if api is None:
            raise ValueError("a service account needs the cluster's Kubernetes API")
        namespace = dep.identity.namespace if dep.identity else None
        if namespace and namespace not in SYSTEM_NAMESPACES and kube.get_object(
                api, "v1", "Namespace", namespace) is None:
            # made, never applied: the controller's own manifest owns its namespace after
            kube.create_object(api, {"apiVersion": "v1", "kind": "Namespace",
                                     "metadata": {"name": namespace}})
        found = _service_account(api, dep)
        if found is not None and not kube.managed_by_hypd(found):
            raise IdentityError(f"service account {dep.identity.subject} exists and hypd did "
                                "not make it; delete or rename it first", "conflict")
        if found is None or _annotation(found) != arn:
            kube.server_side_apply(api, service_account(dep, arn))
        out["service_account"] = dep.identity.subject if dep.identity else None
    return out


def remove(iam_client: Any, api: ApiClient | None, dep: Dependency,
           cluster: str, s3: Any = None, facts: ClusterFacts | None = None) -> dict[str, Any]:
    """Undo `ensure`: the service account (and so its annotation) if hypd made it, the TLS
    bucket (emptied first; `s3` and `facts` needed then), then the role if hypd made it for
    this cluster. A shared role (the cluster's own) stays."""
    out: dict[str, Any] = {"service_account_deleted": False, "role_deleted": False}
    identity = dep.identity
    if identity is None:
        return out
    if identity.tls_bucket:
        if s3 is None or facts is None:
            raise ValueError(f"{dep.name} keeps a TLS bucket: give an S3 client and facts")
        bucket = tls_bucket(dep, facts) or ""
        out["tls_bucket_deleted"] = storage.delete_bucket(s3, bucket, tls_bucket_tags(cluster))
    if dep.kind == SERVICE_ACCOUNT and api is not None:
        found = _service_account(api, dep)
        if found is not None and kube.managed_by_hypd(found):
            out["service_account_deleted"] = kube.delete_object(
                api, "v1", "ServiceAccount", identity.service_account or "",
                identity.namespace)
    if not identity.shared:
        out["role_deleted"] = iam.delete_role(iam_client, role_name(dep, cluster), cluster)
    return out


# -- state -----------------------------------------------------------------------------------


def state(iam_client: Any, api: ApiClient | None, dep: Dependency, facts: ClusterFacts,
          provider: str | None = None, s3: Any = None) -> dict[str, Any]:
    """Where the chain stands, read from IAM, S3 and Kubernetes: {role: {name, present, arn,
    trust_ok, policy_ok}, tls_bucket: {name, present} | None (None too without `s3`),
    service_account: {name, present, annotated} | None}."""
    name = role_name(dep, facts.cluster)
    found = iam.role_state(iam_client, name)
    role: dict[str, Any] = {"name": name, "present": found is not None,
                            "arn": found["arn"] if found else None,
                            "trust_ok": False, "policy_ok": False}
    if found is not None:
        spec = role_spec(iam_client, dep, facts, create=False, provider=provider)
        role["trust_ok"] = found["trust"] == spec.trust
        role["policy_ok"] = all(found["policies"].get(k) == v for k, v in spec.inline.items())
    account = None
    if dep.kind == SERVICE_ACCOUNT:
        sa = _service_account(api, dep) if api is not None else None
        account = {"name": dep.identity.subject if dep.identity else None,
                   "present": sa is not None,
                   "annotated": sa is not None and role["arn"] is not None
                   and _annotation(sa) == role["arn"]}
    bucket = None
    name_of_bucket = tls_bucket(dep, facts)
    if name_of_bucket is not None and s3 is not None:
        try:
            found_bucket = storage.bucket_info(s3, name_of_bucket)
        except storage.StorageError:
            found_bucket = None
        bucket = {"name": name_of_bucket,
                  "present": found_bucket is not None and found_bucket["managed"]}
    return {"role": role, "tls_bucket": bucket, "service_account": account}


def _service_account(api: ApiClient, dep: Dependency) -> dict[str, Any] | None:
    identity = dep.identity
    if identity is None:
        return None
    return kube.get_object(api, "v1", "ServiceAccount", identity.service_account or "",
                           identity.namespace)


def _annotation(obj: dict[str, Any]) -> str | None:
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(ROLE_ANNOTATION)


def pod_identity_role(eks_client: Any, cluster: str, dep: Dependency) -> str | None:
    """The role EKS Pod Identity hands the consumer's service account now (None: no
    association)."""
    identity = dep.identity
    if identity is None or identity.mechanism != POD_IDENTITY:
        return None
    reply = eks_client.list_pod_identity_associations(
        clusterName=cluster, namespace=identity.namespace,
        serviceAccount=identity.service_account)
    for item in reply.get("associations") or ():
        found = eks_client.describe_pod_identity_association(
            clusterName=cluster, associationId=item["associationId"])["association"]
        return found.get("roleArn")
    return None


def remove_association(eks_client: Any, cluster: str, dep: Dependency, role: str) -> bool:
    """A Pod Identity association of the consumer's service account to hypd's role that
    no add-on owns (one made to bind an add-on that was there before): deleted. The ones an
    add-on owns go with the add-on."""
    identity = dep.identity
    if identity is None or identity.mechanism != POD_IDENTITY:
        return False
    reply = eks_client.list_pod_identity_associations(
        clusterName=cluster, namespace=identity.namespace,
        serviceAccount=identity.service_account)
    deleted = False
    for item in reply.get("associations") or ():
        if item.get("ownerArn"):
            continue
        found = eks_client.describe_pod_identity_association(
            clusterName=cluster, associationId=item["associationId"])["association"]
        # a role's name is unique in its account whatever its path (hypd's are under /hypd/)
        if str(found.get("roleArn", "")).rpartition("/")[2] == role:
            eks_client.delete_pod_identity_association(clusterName=cluster,
                                                       associationId=item["associationId"])
            deleted = True
    return deleted
