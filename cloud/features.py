"""Managed features as they actually are: read from EKS (add-ons, Pod Identity
associations), IAM (roles, trust, policies), HyperPod (DescribeCluster's
`TieredStorageConfig`, `AutoScaling`, `ClusterRole`) and the cluster (service accounts,
manifests, Karpenter NodePools) — never from a stored copy of what was once asked.

Each managed feature (`toggle: true` in cloud/data/dependencies.yaml) is shown as its parts,
each present or not and as hypd wants it or not, and a state:

- `on`: every part is there as wanted (`settling` while an add-on or setting is still
  converging);
- `off`: none of the feature's own parts is there (a shared part — the cluster's own
  ClusterRole — does not count);
- `partial`: some are (a half-made chain: re-running the toggle finishes or removes it);
- `failed`: AWS reports a part failed.

`matches` is the explicit diff: whether a requested change already holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes.client import ApiClient

from cloud import addons, autoscaling, dependencies, hyperpod, iam, identity
from cloud.dependencies import (
    ADDON,
    CLUSTER_ROLE,
    HYPERPOD,
    IRSA,
    MANIFESTS,
    POD_IDENTITY,
    TIERED_STORAGE,
    Dependency,
)
from vocabulary.capacity import ON_DEMAND

ON = "on"
OFF = "off"
PARTIAL = "partial"
SETTLING = "settling"
FAILED = "failed"
STATES = (ON, OFF, PARTIAL, SETTLING, FAILED)
ENABLED_STATES = (ON, SETTLING)

ENABLE = "Enable"
DISABLE = "Disable"
AUTOSCALER = "Karpenter"
SETTLING_AUTOSCALING = ("Creating", "Updating", "Pending", "InProgress")
FAILED_AUTOSCALING = ("Failed",)

TIERED_CHECKPOINTING = "tiered_checkpointing"
AUTOSCALING_FEATURE = "autoscaling"


@dataclass(frozen=True)
class Sources:
    """Where a feature's state is read from (and what a change acts on)."""

    eks: Any
    iam: Any
    sagemaker: Any
    api: ApiClient | None
    """The cluster's Kubernetes API; None when it cannot be reached now."""
    facts: identity.ClusterFacts
    hyperpod_name: str
    s3: Any = None
    """For a consumer's TLS bucket (None: not read)."""


@dataclass(frozen=True)
class Snapshot:
    """One read of everything the features depend on (a few calls, shared by all)."""

    installed: dict[str, dict[str, Any]]
    settings: dict[str, Any] | None
    oidc_provider: str | None
    bounds: dict[str, autoscaling.Bounds]


def relevant() -> list[Dependency]:
    """The managed features' entries and what they need, in install order: all a features
    view reads (the rest of the base set is the cluster create's business)."""
    names = {d.name for f in dependencies.toggles() for d in
             (*dependencies.entries(f), *dependencies.requirements(f))}
    return [d for d in dependencies.catalog() if d.name in names]


def snapshot(src: Sources) -> Snapshot:
    cluster = src.facts.cluster
    kinds = [d for d in relevant() if d.kind in (ADDON, MANIFESTS)]
    bounds: dict[str, autoscaling.Bounds] = {}
    if src.api is not None:
        bounds = autoscaling.read(src.api)
    return Snapshot(
        installed=addons.installed(src.eks, src.api, cluster, kinds),
        settings=hyperpod.settings(src.sagemaker, src.hyperpod_name),
        oidc_provider=identity.oidc_provider(src.iam, src.facts, create=False),
        bounds=bounds,
    )


# -- parts -----------------------------------------------------------------------------------


def _part(kind: str, name: str, present: bool, ok: bool, status: str | None = None,
          detail: str | None = None, shared: bool = False, hypds: bool | None = None
          ) -> dict[str, Any]:
    return {"kind": kind, "name": name, "present": present, "ok": ok, "status": status,
            "detail": detail, "shared": shared, "hypds": hypds}


def _setting(settings: Mapping[str, Any] | None, setting: str) -> dict[str, Any] | None:
    if settings is None:
        return None
    return settings.get("tiered_storage" if setting == TIERED_STORAGE else "autoscaling")


def _entry_parts(dep: Dependency, src: Sources, snap: Snapshot) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    role_arn = None
    if dep.identity is not None:
        chain = identity.state(src.iam, src.api, dep, src.facts, snap.oidc_provider,
                               s3=src.s3)
        role = chain["role"]
        role_arn = role["arn"]
        ok = role["present"] and role["trust_ok"] and role["policy_ok"]
        detail = None if ok or not role["present"] else (
            "trust policy differs" if not role["trust_ok"] else "permissions policy differs")
        parts.append(_part("iam_role", role["name"], role["present"], ok, detail=detail,
                           shared=dep.identity.shared))
        bucket = chain["tls_bucket"]
        if bucket is not None:
            parts.append(_part("tls_bucket", bucket["name"], bucket["present"],
                               bucket["present"]))
        account = chain["service_account"]
        if account is not None:
            parts.append(_part("service_account", account["name"], account["present"],
                               account["annotated"],
                               detail=None if account["annotated"] or not account["present"]
                               else f"not annotated with {identity.ROLE_ANNOTATION}"))
    if dep.kind == ADDON:
        state = snap.installed.get(dep.name)
        status = state.get("status") if state else None
        failed = status in addons.ADDON_FAILED
        parts.append(_part("addon", dep.name, state is not None,
                           state is not None and not failed and status != "DELETING",
                           status, "; ".join(state["issues"]) if state and state["issues"]
                           else None, hypds=bool(state["managed"]) if state else None))
        if dep.identity is not None and dep.identity.mechanism == POD_IDENTITY:
            bound = identity.pod_identity_role(src.eks, src.facts.cluster, dep) \
                if state is not None else None
            parts.append(_part("pod_identity_association", dep.identity.subject or "",
                               bound is not None, bound is not None and bound == role_arn))
        elif dep.identity is not None and dep.identity.mechanism == IRSA and state is not None:
            bound = state.get("service_account_role_arn")
            parts.append(_part("irsa_binding", dep.identity.subject or "", bound is not None,
                               bound is not None and bound == role_arn))
    elif dep.kind == MANIFESTS:
        state = snap.installed.get(dep.name)
        parts.append(_part("manifests", dep.name, state is not None,
                           state is not None and not state["missing"],
                           detail=", ".join(state["missing"]) if state and state["missing"]
                           else None))
    elif dep.kind == HYPERPOD:
        setting = _setting(snap.settings, dep.setting or "")
        mode = (setting or {}).get("mode")
        status = (setting or {}).get("status")
        parts.append(_part("hyperpod_setting", dep.setting or "", mode == ENABLE,
                           mode == ENABLE and status not in FAILED_AUTOSCALING,
                           status or mode, (setting or {}).get("failure_message")))
        if dep.identity is not None and dep.identity.mechanism == CLUSTER_ROLE:
            actual = (snap.settings or {}).get("cluster_role")
            parts.append(_part("cluster_role", "ClusterRole", actual is not None,
                               actual is not None and actual == role_arn, detail=actual,
                               shared=True))
    return parts


def _state(parts: list[dict[str, Any]]) -> str:
    if any(p["status"] in (*addons.ADDON_FAILED, *FAILED_AUTOSCALING) for p in parts):
        return FAILED
    if parts and all(p["ok"] for p in parts):
        settling = any(p["status"] in (*addons.ADDON_SETTLING, *SETTLING_AUTOSCALING)
                       for p in parts)
        return SETTLING if settling else ON
    if not any(p["present"] for p in parts if not p["shared"]):
        return OFF
    return PARTIAL


def _requirement(dep: Dependency, snap: Snapshot) -> dict[str, Any]:
    state = snap.installed.get(dep.name)
    return {"name": dep.name, "kind": dep.kind, "feature": dep.feature,
            "present": state is not None,
            "status": (state or {}).get("status") if dep.kind == ADDON else (
                None if state is None else "missing objects" if state["missing"] else "applied"),
            "base": dep.enabled}


def feature_view(name: str, src: Sources, snap: Snapshot) -> dict[str, Any]:
    meta = dependencies.feature(name)
    own = dependencies.entries(name)
    parts = [p for dep in own for p in _entry_parts(dep, src, snap)]
    state = _state(parts)
    # the feature's main consumer: the last entry with an identity (one that needs others
    # of the feature is listed after them: the Spaces controller after the EBS CSI driver)
    consumer = next((d.identity for d in reversed(own) if d.identity is not None), None)
    view: dict[str, Any] = {
        "name": name,
        "description": meta.description,
        "enabled": state in ENABLED_STATES,
        "state": state,
        "parts": parts,
        "requires": [_requirement(d, snap) for d in dependencies.requirements(name)],
        "identity": {"mechanism": consumer.mechanism,
                     "role": iam.role_name(src.facts.cluster, consumer.role),
                     "service_account": consumer.subject, "shared": consumer.shared}
        if consumer else None,
    }
    if meta.note:
        view["note"] = meta.note
    if name == TIERED_CHECKPOINTING:
        view["memory_percent"] = ((_setting(snap.settings, TIERED_STORAGE) or {})
                                  .get("memory_percent"))
    if name == AUTOSCALING_FEATURE:
        view["groups"] = autoscaled_groups(snap)
    return view


def ineligible(group: Mapping[str, Any]) -> str | None:
    """Why HyperPod-managed Karpenter cannot scale this group (None: it can)."""
    if group.get("training_plan_arn") or group.get("capacity_type") not in (None, ON_DEMAND):
        return (f"{group.get('capacity_type')} capacity: managed autoscaling scales "
                "on-demand groups only")
    if group.get("deep_health_checks"):
        return "deep health checks run on its new nodes, which managed autoscaling does not " \
               "support"
    return None


def autoscaled_groups(snap: Snapshot) -> list[dict[str, Any]]:
    """Every instance group with its bounds when hypd autoscales it: min/max from its
    NodePools, current/target from HyperPod, and whether it may be autoscaled."""
    out = []
    for group in (snap.settings or {}).get("groups") or ():
        bounds = snap.bounds.get(group["name"])
        reason = ineligible(group)
        out.append({"name": group["name"], "instance_type": group["instance_type"],
                    "autoscaled": bounds is not None,
                    "min": bounds.minimum if bounds else None,
                    "max": bounds.maximum if bounds else None,
                    "current": group["current_count"], "target": group["target_count"],
                    "capacity_type": group["capacity_type"],
                    "eligible": reason is None, "reason": reason})
    return out


def read(src: Sources) -> dict[str, Any]:
    """Every managed feature, what they need from outside themselves (each with the features
    that need it) and the shared OIDC provider."""
    snap = snapshot(src)
    toggles = dependencies.toggles()
    deps = {}
    for dep in relevant():
        if dep.feature in toggles:
            continue
        deps[dep.name] = {**_requirement(dep, snap),
                          "needed_by": dependencies.needed_by(dep.name)}
    return {
        "features": {name: feature_view(name, src, snap) for name in toggles},
        "dependencies": deps,
        "oidc_provider": {"arn": snap.oidc_provider, "present": snap.oidc_provider is not None,
                          "shared": True},
        "kubernetes_readable": src.api is not None,
        "hyperpod_cluster": snap.settings is not None,
    }


def empty() -> dict[str, Any]:
    """The view of a cluster whose EKS cluster does not exist (yet): every feature off."""
    features_view = {}
    for name in dependencies.toggles():
        meta = dependencies.feature(name)
        features_view[name] = {"name": name, "description": meta.description, "enabled": False,
                               "state": OFF, "parts": [], "requires": [], "identity": None}
    return {"features": features_view, "dependencies": {},
            "oidc_provider": {"arn": None, "present": False, "shared": True},
            "kubernetes_readable": False, "hyperpod_cluster": False}


def summary(view: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The cluster page's short form: {feature: {enabled, state, description}}."""
    return {name: {"enabled": f["enabled"], "state": f["state"],
                   "description": f["description"]}
            for name, f in view["features"].items()}


# -- the explicit diff -------------------------------------------------------------------------


def matches(view: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """Whether a feature's requested fields (`enabled`, `memory_percent`, `groups`) already
    hold in its actual view."""
    if "enabled" in wanted:
        if wanted["enabled"] and view["state"] not in ENABLED_STATES:
            return False
        if not wanted["enabled"] and view["state"] != OFF:
            return False
    if "memory_percent" in wanted and view.get("memory_percent") != wanted["memory_percent"]:
        return False
    if "groups" in wanted:
        actual = {g["name"]: g for g in view.get("groups") or ()}
        for group, bounds in wanted["groups"].items():
            found = actual.get(group)
            if bounds is None:
                if found is not None and found["autoscaled"]:
                    return False
            elif found is None or (found["min"], found["max"]) != (bounds["min"],
                                                                   bounds["max"]):
                return False
    return True
