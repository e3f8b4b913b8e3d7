"""Self reviews: "may I?" (`SelfSubjectAccessReview`, what `kubectl auth can-i` asks), "what
may I do here?" (`SelfSubjectRulesReview`, `can-i --list`) and "who am I?"
(`SelfSubjectReview`, `kubectl auth whoami`).

Answered from the same access entries and access policies that decide every request
(`AccessBook.authorize`), so a "yes" here is a request that goes through and a "no" one that
is refused with 403. As on any cluster, every authenticated user may ask these (the
`system:basic-user` role); the answers are not stored.
"""

from __future__ import annotations

from typing import Any

from sandbox.kube.access import ADMIN_VIEW, CLUSTER_ADMIN, READ_VERBS, AccessBook, Identity
from sandbox.kube.catalog import ALL_VERBS, Catalog
from sandbox.kube.errors import bad_request

ACCESS_REVIEW = ("authorization.k8s.io", "selfsubjectaccessreviews")
RULES_REVIEW = ("authorization.k8s.io", "selfsubjectrulesreviews")
WHOAMI = ("authentication.k8s.io", "selfsubjectreviews")
SELF_REVIEWS = frozenset({ACCESS_REVIEW, RULES_REVIEW, WHOAMI})

# What every authenticated user may read and ask (system:discovery, system:basic-user).
_DISCOVERY_URLS = ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
                   "/openapi/*", "/readyz", "/version", "/version/"]
_BASIC_RULES = [
    {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
     "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
    {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"],
     "resources": ["selfsubjectreviews"]},
]


def _echo(body: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in body.items() if k in ("apiVersion", "kind", "spec")}
    out["metadata"] = {"creationTimestamp": None}
    return out


def _namespaced(catalog: Catalog, group: str, resource: str, namespace: str | None) -> bool:
    for rt in catalog.all():
        if rt.group == group and rt.plural == resource:
            return rt.namespaced
    return bool(namespace)


def access_review(body: dict[str, Any], who: Identity, catalog: Catalog) -> dict[str, Any]:
    spec = body.get("spec") or {}
    attrs, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if bool(attrs) == bool(non_resource):
        raise bad_request(
            "SelfSubjectAccessReview.authorization.k8s.io is invalid: spec: Invalid value: "
            "exactly one of nonResourceAttributes or resourceAttributes must be specified"
        )
    reply = _echo(body)
    if non_resource:
        allowed = who.masters or non_resource.get("verb") == "get" or _admin(who)
        reply["status"] = {"allowed": bool(allowed)}
        if allowed:
            reply["status"]["reason"] = "allowed to discover the API"
        return reply
    verb = str(attrs.get("verb") or "")
    group = str(attrs.get("group") or "")
    resource = str(attrs.get("resource") or "")
    namespace = attrs.get("namespace") or None
    namespaced = _namespaced(catalog, group, resource, namespace)
    allowed = AccessBook.authorize(who, verb, group, resource, namespace, namespaced) or (
        verb == "*" and all(
            AccessBook.authorize(who, v, group, resource, namespace, namespaced)
            for v in ALL_VERBS))
    status: dict[str, Any] = {"allowed": bool(allowed)}
    if allowed:
        status["reason"] = f"EKS access policy of {who.principal} allows it"
    reply["status"] = status
    return reply


def _admin(who: Identity) -> bool:
    grant = who.grant
    return bool(grant and any(p == CLUSTER_ADMIN and (s or {}).get("type", "cluster") == "cluster"
                              for p, s in grant.policies.items()))


def rules_review(body: dict[str, Any], who: Identity, catalog: Catalog) -> dict[str, Any]:
    spec = body.get("spec") or {}
    namespace = spec.get("namespace") or None
    rules: list[dict[str, Any]] = list(_BASIC_RULES)
    non_resource = [{"verbs": ["get"], "nonResourceURLs": list(_DISCOVERY_URLS)}]
    if who.masters or _admin(who):
        rules.insert(0, {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})
        non_resource.insert(0, {"verbs": ["*"], "nonResourceURLs": ["*"]})
    else:
        grant = who.grant
        if grant and ADMIN_VIEW in grant.policies:
            rules.insert(0, {"verbs": sorted(READ_VERBS), "apiGroups": ["*"],
                             "resources": ["*"]})
        by_group: dict[tuple[str, tuple[str, ...]], list[str]] = {}
        for group, resource, namespaced in sorted(
            {(rt.group, rt.plural, rt.namespaced) for rt in catalog.all()}
        ):
            verbs = tuple(sorted(
                v for v in ALL_VERBS
                if AccessBook.authorize(who, v, group, resource,
                                        namespace if namespaced else None, namespaced)
            ))
            if verbs:
                by_group.setdefault((group, verbs), []).append(resource)
        for (group, verbs), resources in sorted(by_group.items()):
            rules.append({"verbs": list(verbs), "apiGroups": [group], "resources": resources})
    reply = _echo(body)
    reply["status"] = {"resourceRules": rules, "nonResourceRules": non_resource,
                       "incomplete": False}
    return reply


def whoami(body: dict[str, Any], who: Identity) -> dict[str, Any]:
    reply = _echo(body)
    reply.pop("spec", None)
    reply["status"] = {"userInfo": {
        "username": who.user,
        "groups": list(who.groups),
        "extra": {"arn": [who.principal], "canonicalArn": [who.principal]},
    }}
    return reply


def answer(kind: tuple[str, str], body: dict[str, Any], who: Identity,
           catalog: Catalog) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise bad_request("the body of the request is not a Kubernetes object")
    if kind == ACCESS_REVIEW:
        return access_review(body, who, catalog)
    if kind == RULES_REVIEW:
        return rules_review(body, who, catalog)
    return whoami(body, who)
