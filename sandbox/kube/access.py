"""Who may do what on one local Kubernetes: EKS access entries and access policies.

As on EKS: an IAM principal is a user of the cluster only if an access entry names it (or, in
the `CONFIG_MAP` and `API_AND_CONFIG_MAP` modes, the `kube-system/aws-auth` ConfigMap maps
it, or it created the cluster in `CONFIG_MAP` mode); any other caller, with a valid token or
not, is refused with 401. A user may do only what the access policies associated with its
entry allow, in their scope (the whole cluster, or listed namespaces — a trailing `*` is a
prefix); an entry with no policy grants nothing but discovery (403 on every resource), since
the sandbox has no RBAC for `kubernetesGroups`. An aws-auth mapping grants everything when
its groups include `system:masters`, and nothing otherwise.

The policies' rules follow the Kubernetes user-facing roles they mirror (cluster-admin,
admin, edit, view) closely, not exactly.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import yaml

from sandbox.kube.identity import same_principal

POLICY_PREFIX = "arn:aws:eks::aws:cluster-access-policy/"
CLUSTER_ADMIN = POLICY_PREFIX + "AmazonEKSClusterAdminPolicy"
ADMIN = POLICY_PREFIX + "AmazonEKSAdminPolicy"
EDIT = POLICY_PREFIX + "AmazonEKSEditPolicy"
VIEW = POLICY_PREFIX + "AmazonEKSViewPolicy"
ADMIN_VIEW = POLICY_PREFIX + "AmazonEKSAdminViewPolicy"
AUTO_NODE = POLICY_PREFIX + "AmazonEKSAutoNodePolicy"
KNOWN_POLICIES = (ADMIN, ADMIN_VIEW, CLUSTER_ADMIN, EDIT, VIEW, AUTO_NODE)
READ_VERBS = frozenset({"get", "list", "watch"})
MASTERS = "system:masters"


@dataclass
class Grant:
    """One access entry as the cluster sees it."""

    principal_arn: str
    entry_type: str = "STANDARD"
    username: str = ""
    groups: tuple[str, ...] = ()
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)  # policyArn → accessScope


@dataclass(frozen=True)
class Identity:
    user: str  # the Kubernetes user name (what a 403 names)
    principal: str  # the IAM principal ARN
    groups: tuple[str, ...] = ()
    grant: Grant | None = None

    @property
    def masters(self) -> bool:
        return MASTERS in self.groups


def _policy_allows(policy: str, verb: str, group: str, resource: str, namespaced: bool) -> bool:
    read = verb in READ_VERBS
    if policy == CLUSTER_ADMIN:
        return True
    if policy == ADMIN_VIEW:
        return read
    if policy not in (ADMIN, EDIT, VIEW):
        return False
    if not namespaced:
        return read and (group, resource) == ("", "namespaces")
    rbac = group == "rbac.authorization.k8s.io"
    if policy == VIEW:
        return read and not rbac and resource != "secrets"
    if resource in ("resourcequotas", "limitranges") and group == "":
        return read
    if policy == EDIT:
        return not rbac
    return True


def _in_scope(scope: dict[str, Any], namespace: str | None, namespaced: bool) -> bool:
    if (scope or {}).get("type", "cluster") == "cluster":
        return True
    if not namespaced or namespace is None:
        return False
    for pattern in scope.get("namespaces") or []:
        if pattern == namespace or (pattern.endswith("*") and namespace.startswith(pattern[:-1])):
            return True
    return False


def _username(grant: Grant, caller_arn: str) -> str:
    if grant.username:
        session = caller_arn.rsplit("/", 1)[-1]
        return grant.username.replace("{{SessionName}}", session)
    if ":assumed-role/" in caller_arn:
        return caller_arn
    return grant.principal_arn


class AccessBook:
    """The access configuration of one cluster (fed by the EKS gap)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.mode = "API"
        self._grants: dict[str, Grant] = {}
        self._creators: set[str] = set()  # CONFIG_MAP mode: the creator is an implicit admin

    def set_mode(self, mode: str) -> None:
        with self._lock:
            self.mode = mode

    def set_creator(self, principal_arn: str) -> None:
        with self._lock:
            self._creators.add(principal_arn)

    def set(
        self,
        principal_arn: str,
        policies: dict[str, dict[str, Any]] | None,
        entry_type: str = "STANDARD",
        username: str = "",
        groups: tuple[str, ...] = (),
    ) -> None:
        """Record an entry and its policies (policyArn → accessScope); None removes it."""
        with self._lock:
            if policies is None:
                self._grants.pop(principal_arn, None)
            else:
                self._grants[principal_arn] = Grant(
                    principal_arn, entry_type, username, tuple(groups), dict(policies)
                )

    def grants(self) -> list[Grant]:
        with self._lock:
            return list(self._grants.values())

    def authenticate(
        self, principal: str, caller_arn: str, aws_auth: dict[str, Any] | None
    ) -> Identity | None:
        """The cluster user for an IAM principal, or None (EKS answers 401)."""
        with self._lock:
            mode = self.mode
            grants = list(self._grants.values())
            creators = set(self._creators)
        if mode in ("API", "API_AND_CONFIG_MAP"):
            for grant in grants:
                if same_principal(grant.principal_arn, principal):
                    return Identity(
                        _username(grant, caller_arn), principal, ("system:authenticated",), grant
                    )
        if mode in ("CONFIG_MAP", "API_AND_CONFIG_MAP"):
            if mode == "CONFIG_MAP" and any(same_principal(c, principal) for c in creators):
                return Identity(caller_arn, principal, (MASTERS, "system:authenticated"))
            mapped = _aws_auth_lookup(aws_auth, principal)
            if mapped is not None:
                user, groups = mapped
                return Identity(user or caller_arn, principal, (*groups, "system:authenticated"))
        return None

    @staticmethod
    def authorize(
        identity: Identity,
        verb: str,
        group: str,
        resource: str,
        namespace: str | None,
        namespaced: bool,
    ) -> bool:
        if identity.masters:
            return True
        grant = identity.grant
        if grant is None:
            return False
        return any(
            _policy_allows(policy, verb, group, resource, namespaced)
            and _in_scope(scope, namespace, namespaced)
            for policy, scope in grant.policies.items()
        )


def _aws_auth_lookup(
    cm: dict[str, Any] | None, principal: str
) -> tuple[str, tuple[str, ...]] | None:
    data = (cm or {}).get("data") or {}
    for key, arn_field in (("mapRoles", "rolearn"), ("mapUsers", "userarn")):
        try:
            rows = yaml.safe_load(data.get(key) or "[]") or []
        except yaml.YAMLError:
            continue
        for row in rows if isinstance(rows, list) else []:
            if isinstance(row, dict) and same_principal(str(row.get(arn_field, "")), principal):
                return str(row.get("username") or ""), tuple(row.get("groups") or ())
    return None
