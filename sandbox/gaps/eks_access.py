"""EKS access entries, access policies and pod identity associations (moto 5.2.5 has none).

Access entries feed the cluster's local Kubernetes (`KubeRegistry.set_access`), which
authenticates and authorizes exactly from them, so "an entry alone grants nothing" holds end
to end. As on EKS: the cluster must be ACTIVE and in `API` or `API_AND_CONFIG_MAP` mode; the
principal must be an IAM role or user that exists (the sandbox's own caller counts as one);
only STANDARD entries take Kubernetes groups, usernames and access policies; creating with a
`clientRequestToken` already used for the same entry answers that entry again.
"""

from __future__ import annotations

import re
import secrets
import string
import uuid
from typing import Any

from sandbox.gaps import GapContext, answers
from sandbox.gaps.eks_state import (
    ClusterRecord,
    arn,
    existing,
    in_use,
    invalid,
    invalid_request,
    not_found,
    now,
    state,
)
from sandbox.kube import access as policies
from sandbox.kube import identity

ENTRY_TYPES = (
    "STANDARD",
    "FARGATE_LINUX",
    "EC2_LINUX",
    "EC2_WINDOWS",
    "EC2",
    "HYBRID_LINUX",
    "HYPERPOD_LINUX",
)
_PRINCIPAL = re.compile(r"^arn:aws[a-z-]*:iam::(\d{12}):(role|user)/(.+)$")
_RESERVED_PREFIXES = ("system:", "eks:", "aws:", "amazon:", "iam:")
_NODE_USERNAMES = {
    "EC2_LINUX": "system:node:{{EC2PrivateDNSName}}",
    "EC2_WINDOWS": "system:node:{{EC2PrivateDNSName}}",
    "EC2": "system:node:{{EC2PrivateDNSName}}",
    "FARGATE_LINUX": "system:node:{{SessionName}}",
    "HYBRID_LINUX": "system:node:{{SessionName}}",
    "HYPERPOD_LINUX": "system:node:hyperpod-{{SessionName}}",
}
_STANDARD_ONLY = 'This operation can only be performed on Access Entries with a type of "STANDARD".'
_NOT_FOUND_ENTRY = "The specified access entry resource could not be found."


def _api_mode(rec: ClusterRecord) -> None:
    if rec.access_config.get("authenticationMode") == "CONFIG_MAP":
        raise invalid_request(
            "The cluster's authentication mode must be set to one of [API, API_AND_CONFIG_MAP] "
            "to perform this operation."
        )


def _principal_exists(ctx: GapContext, principal: str) -> bool:
    found = _PRINCIPAL.match(principal)
    if found is None:
        return False
    scope = identity_of_caller(ctx)
    if scope is not None and identity.same_principal(principal, scope):
        return True
    from moto.iam.models import iam_backends

    account, kind, rest = found.groups()
    iam = iam_backends[account]["aws"]
    name = rest.split("/")[-1]
    if kind == "role":
        return any(r.name == name for r in list(iam.roles.values()))
    return name in iam.users


def identity_of_caller(ctx: GapContext) -> str | None:
    """The IAM principal (access-entry form) of whoever signed this request."""
    from sandbox.identify import credential_scope

    scope = credential_scope(ctx.environ)
    if scope is None:
        return None
    return identity.principal_arn(identity.caller_arn(scope[0], scope[1]))


def _sync(ctx: GapContext, rec: ClusterRecord, principal: str) -> None:
    """Tell the local Kubernetes what this entry now grants."""
    entry = rec.access_entries.get(principal)
    if entry is None:
        ctx.app.kubes.set_access(rec.name, principal, None)
        return
    granted = {
        arn_: dict(assoc["accessScope"])
        for arn_, assoc in rec.access_policies.get(principal, {}).items()
    }
    ctx.app.kubes.set_access(
        rec.name,
        principal,
        granted,
        entry["type"],
        entry.get("username", ""),
        tuple(entry.get("kubernetesGroups") or ()),
    )


def add_entry(
    ctx: GapContext,
    rec: ClusterRecord,
    principal: str,
    entry_type: str = "STANDARD",
    username: str | None = None,
    groups: list[str] | None = None,
    tags: dict[str, str] | None = None,
) -> dict[str, Any]:
    match = _PRINCIPAL.match(principal)
    assert match is not None
    account, kind, rest = match.groups()
    stamp = now()
    if username is None:
        if entry_type in _NODE_USERNAMES:
            username = _NODE_USERNAMES[entry_type]
        elif kind == "role":
            username = (
                f"arn:aws:sts::{account}:assumed-role/{rest.split('/')[-1]}/{{{{SessionName}}}}"
            )
        else:
            username = principal
    if entry_type in _NODE_USERNAMES and not groups:
        groups = (
            ["system:nodes"]
            if entry_type != "EC2_WINDOWS"
            else ["system:nodes", "eks:kube-proxy-windows"]
        )
    entry = {
        "clusterName": rec.name,
        "principalArn": principal,
        "kubernetesGroups": list(groups or []),
        "accessEntryArn": arn(
            ctx, "access-entry", rec.name, kind, account, rest.split("/")[-1], str(uuid.uuid4())
        ),
        "createdAt": stamp,
        "modifiedAt": stamp,
        "tags": dict(tags or {}),
        "username": username,
        "type": entry_type,
    }
    rec.access_entries[principal] = entry
    _sync(ctx, rec, principal)
    return entry


def associate(
    ctx: GapContext, rec: ClusterRecord, principal: str, policy_arn: str, scope: dict[str, Any]
) -> dict[str, Any]:
    stamp = now()
    held = rec.access_policies.setdefault(principal, {})
    previous = held.get(policy_arn)
    assoc = {
        "policyArn": policy_arn,
        "accessScope": {"type": scope["type"], "namespaces": list(scope.get("namespaces") or [])},
        "associatedAt": previous["associatedAt"] if previous else stamp,
        "modifiedAt": stamp,
    }
    held[policy_arn] = assoc
    _sync(ctx, rec, principal)
    return assoc


def _entry(rec: ClusterRecord, principal: str) -> dict[str, Any]:
    for arn_, entry in rec.access_entries.items():
        if arn_ == principal:
            return entry
    raise not_found(_NOT_FOUND_ENTRY)


def _check_names(username: str | None, groups: list[str] | None) -> None:
    if username is not None and username.startswith(_RESERVED_PREFIXES):
        raise invalid(f"username can't start with {', '.join(_RESERVED_PREFIXES)}")
    for group in groups or []:
        if group.startswith("system:"):
            raise invalid(
                f"The kubernetes group {group} is not allowed: groups can't start with system:."
            )


# --- access entries ----------------------------------------------------------------------


@answers("eks", "CreateAccessEntry")
def create_access_entry(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    rec = existing(ctx, p["clusterName"])
    principal = p["principalArn"]
    entry_type = p.get("type") or "STANDARD"
    with state(ctx).lock:
        made = rec.replay("access-entry", p, rec.access_entries)
        if made is not None and made["principalArn"] == principal:
            return {"accessEntry": made}
        rec.require_active()
        _api_mode(rec)
        if entry_type not in ENTRY_TYPES:
            raise invalid(
                f"Value '{entry_type}' at 'type' failed to satisfy constraint: Member must "
                f"satisfy enum value set: [{', '.join(ENTRY_TYPES)}]"
            )
        if not _PRINCIPAL.match(principal):
            raise invalid(
                f"The specified principalArn is invalid: {principal} is not an IAM role or "
                "user ARN."
            )
        if not _principal_exists(ctx, principal):
            raise invalid(f"The specified principal {principal} does not exist.")
        if entry_type != "STANDARD" and (p.get("kubernetesGroups") or p.get("username")):
            raise invalid(
                "kubernetesGroups and username can't be set for an access entry of type "
                f"{entry_type}."
            )
        _check_names(p.get("username"), p.get("kubernetesGroups"))
        if principal in rec.access_entries:
            raise in_use("The specified access entry resource is already in use on this cluster.")
        entry = add_entry(
            ctx,
            rec,
            principal,
            entry_type,
            p.get("username"),
            p.get("kubernetesGroups"),
            p.get("tags"),
        )
        rec.remember("access-entry", p, principal)
        return {"accessEntry": entry}


@answers("eks", "DescribeAccessEntry")
def describe_access_entry(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    rec = existing(ctx, p["clusterName"])
    return {"accessEntry": _entry(rec, p["principalArn"])}


@answers("eks", "ListAccessEntries")
def list_access_entries(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    rec = existing(ctx, p["clusterName"])
    wanted = p.get("associatedPolicyArn")
    names = [
        principal
        for principal in rec.access_entries
        if wanted is None or wanted in rec.access_policies.get(principal, {})
    ]
    return ctx.page(names, "accessEntries", default=100)


@answers("eks", "DeleteAccessEntry")
def delete_access_entry(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    rec = existing(ctx, p["clusterName"])
    with state(ctx).lock:
        _entry(rec, p["principalArn"])
        del rec.access_entries[p["principalArn"]]
        rec.access_policies.pop(p["principalArn"], None)
        _sync(ctx, rec, p["principalArn"])
    return {}


@answers("eks", "AssociateAccessPolicy")
def associate_access_policy(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    rec = existing(ctx, p["clusterName"])
    with state(ctx).lock:
        entry = _entry(rec, p["principalArn"])
        if entry["type"] != "STANDARD":
            raise invalid(_STANDARD_ONLY)
        if p["policyArn"] not in policies.KNOWN_POLICIES:
            raise not_found(f"The specified policy {p['policyArn']} could not be found.")
        scope = p["accessScope"]
        kind = scope.get("type")
        if kind not in ("cluster", "namespace"):
            raise invalid(
                f"Value '{kind}' at 'accessScope.type' failed to satisfy constraint: Member "
                "must satisfy enum value set: [cluster, namespace]"
            )
        if kind == "namespace" and not scope.get("namespaces"):
            raise invalid("namespaces must be specified when the access scope type is namespace.")
        if kind == "cluster" and scope.get("namespaces"):
            raise invalid("namespaces can't be specified when the access scope type is cluster.")
        assoc = associate(ctx, rec, p["principalArn"], p["policyArn"], scope)
        return {
            "clusterName": rec.name,
            "principalArn": p["principalArn"],
            "associatedAccessPolicy": assoc,
        }


@answers("eks", "ListAssociatedAccessPolicies")
def list_associated_access_policies(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    rec = existing(ctx, p["clusterName"])
    _entry(rec, p["principalArn"])
    items = list(rec.access_policies.get(p["principalArn"], {}).values())
    return {
        "clusterName": rec.name,
        "principalArn": p["principalArn"],
        **ctx.page(items, "associatedAccessPolicies", default=100),
    }


# --- pod identity associations -----------------------------------------------------------


def _association_id() -> str:
    return "a-" + "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(17))


def _association(rec: ClusterRecord, association_id: str) -> dict[str, Any]:
    found = rec.pod_identities.get(association_id)
    if found is None:
        raise not_found(f"No Pod Identity Association found for id: {association_id}.")
    return found


def add_association(
    ctx: GapContext,
    rec: ClusterRecord,
    namespace: str,
    service_account: str,
    role_arn: str,
    tags: dict[str, str] | None = None,
    owner_arn: str | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    for other in rec.pod_identities.values():
        if (other["namespace"], other["serviceAccount"]) == (namespace, service_account):
            raise in_use(
                f"Association already exists: {other['associationId']}",
            )
    association_id = _association_id()
    stamp = now()
    association = {
        "clusterName": rec.name,
        "namespace": namespace,
        "serviceAccount": service_account,
        "roleArn": role_arn,
        "associationArn": arn(ctx, "podidentityassociation", rec.name, association_id),
        "associationId": association_id,
        "tags": dict(tags or {}),
        "createdAt": stamp,
        "modifiedAt": stamp,
        "disableSessionTags": False,
        **(extra or {}),
    }
    if owner_arn:
        association["ownerArn"] = owner_arn
    rec.pod_identities[association_id] = association
    return association


@answers("eks", "CreatePodIdentityAssociation")
def create_pod_identity_association(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    rec = existing(ctx, p["clusterName"])
    with state(ctx).lock:
        made = rec.replay("pod-identity", p, rec.pod_identities)
        if made is not None:
            return {"association": made}
        rec.require_active()
        if not re.match(r"^arn:aws[a-z-]*:iam::\d{12}:role/.+$", p["roleArn"]):
            raise invalid(f"The roleArn {p['roleArn']} is not a valid IAM role ARN.")
        optional = ("disableSessionTags", "targetRoleArn", "policy")
        extra = {k: p[k] for k in optional if p.get(k) is not None}
        association = add_association(
            ctx,
            rec,
            p["namespace"],
            p["serviceAccount"],
            p["roleArn"],
            p.get("tags"),
            extra=extra,
        )
        rec.remember("pod-identity", p, association["associationId"])
        return {"association": association}


@answers("eks", "DescribePodIdentityAssociation")
def describe_pod_identity_association(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    rec = existing(ctx, p["clusterName"])
    return {"association": _association(rec, p["associationId"])}


@answers("eks", "DeletePodIdentityAssociation")
def delete_pod_identity_association(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    rec = existing(ctx, p["clusterName"])
    with state(ctx).lock:
        association = _association(rec, p["associationId"])
        if association.get("ownerArn"):
            raise invalid_request(
                f"The association {p['associationId']} is owned by {association['ownerArn']}; "
                "delete it through its owner."
            )
        del rec.pod_identities[p["associationId"]]
        return {"association": association}


@answers("eks", "ListPodIdentityAssociations")
def list_pod_identity_associations(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    rec = existing(ctx, p["clusterName"])
    items = [
        a
        for a in rec.pod_identities.values()
        if p.get("namespace") in (None, a["namespace"])
        and p.get("serviceAccount") in (None, a["serviceAccount"])
    ]
    return ctx.page(items, "associations", default=100)
