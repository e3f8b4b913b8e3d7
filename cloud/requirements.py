"""Installing a set of dependency entries (cloud/data/dependencies.yaml) with everything they
need, in install order: each consumer's identity first (its IAM role, TLS bucket, the service
account hypd makes for it), then the add-ons and manifests that are missing. One way for every
caller that installs on demand — a managed feature's requirements, an endpoint's load balancer
controller or autoscaler — so a requirement with an identity is never installed without it.

Callers hold the cluster's features mutex around `ensure`: installing and releasing shared
dependencies never interleave.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubernetes.client import ApiClient

from cloud import addons, dependencies, identity, kube
from cloud.dependencies import Dependency


def ensure(eks_client: Any, iam_client: Any, s3: Any, api: ApiClient | None,
           deps: list[Dependency], facts: identity.ClusterFacts, region: str,
           token: Callable[[str], str], values: Mapping[str, str] | None = None
           ) -> dict[str, Any]:
    """Each entry's identity (made once, adopted after), then what is missing installed.
    `token(name)` is the client request token of an add-on's create. Returns {roles,
    actions} for the step's record."""
    roles: dict[str, str] = {}
    for dep in deps:
        if dep.identity is not None:
            made = identity.ensure(iam_client, api, dep, facts, s3=s3)
            roles[dep.identity.role] = made["role_arn"]
    present = addons.installed(eks_client, api, facts.cluster, deps)
    actions = [addons.apply(action, eks_client, api, facts.cluster, region, roles=roles,
                            client_token=token(action.dependency.name), values=values)
               for action in addons.plan(deps, present)]
    return {"roles": roles, "actions": actions}


def not_running(api: ApiClient, deps: Iterable[Dependency], region: str) -> str | None:
    """The first entry whose manifests' Deployments are not available yet (None: all run):
    a controller an add-on or endpoint relies on must run before that is installed."""
    for dep in deps:
        if dep.kind != dependencies.MANIFESTS:
            continue
        for obj in (o for o in addons.render(dep, region) if o["kind"] == "Deployment"):
            found = kube.get_object(api, "apps/v1", "Deployment", obj["metadata"]["name"],
                                    obj["metadata"].get("namespace"))
            if not found or not (found.get("status") or {}).get("availableReplicas"):
                return dep.name
    return None
