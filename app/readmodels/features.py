"""A cluster's managed features as its page, REST and MCP show them: actual state from AWS
and the cluster (cloud/features.py), with the operation changing each feature now."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app import context
from cloud import aws, eks, features, iam, identity, kube, storage
from cloud.errors import Invalid

if TYPE_CHECKING:  # the cluster read model shows these features on a cluster's page
    from app.readmodels.clusters import ClusterRef


def _api(ref: ClusterRef) -> Any | None:
    """The cluster's Kubernetes API, or None when it cannot be read now."""
    if not ref.eks or ref.eks.get("status") != eks.ACTIVE:
        return None
    try:
        return eks.api_client(ref.name, ref.region)
    except (kube.KubeError, OSError, ValueError):
        return None


def sources(ref: ClusterRef) -> features.Sources:
    region = ref.region
    account = iam.account_id(aws.client("sts", region=region))
    facts = identity.facts(aws.client("eks", region=region), ref.name, region, account,
                           storage.shared_bucket_name(ref.name, account, region))
    return features.Sources(eks=aws.client("eks", region=region),
                            iam=aws.client("iam", region=region),
                            sagemaker=aws.client("sagemaker", region=region),
                            api=_api(ref), facts=facts, hyperpod_name=ref.hyperpod_name,
                            s3=aws.client("s3", region=region))


def running(cluster: str) -> dict[str, str]:
    """{feature: operation id} of the feature toggles running on the cluster now."""
    ops = context.engine().store.newest_by_child(f"cluster/{cluster}/feature", unfinished=True)
    return {feature: op["id"] for feature, op in ops.items()}


def read(ref: ClusterRef) -> dict[str, Any]:
    """The features view (FeaturesSchema). A cluster without EKS yet has every feature
    off."""
    if ref.eks is None:
        view = features.empty()
    else:
        try:
            view = features.read(sources(ref))
        except kube.KubeError:
            view = features.read(_without_kubernetes(sources(ref)))
    busy = running(ref.name)
    for name, feature in view["features"].items():
        feature["operation_id"] = busy.get(name)
    return {"cluster": ref.name, **view}


def _without_kubernetes(src: features.Sources) -> features.Sources:
    return features.Sources(eks=src.eks, iam=src.iam, sagemaker=src.sagemaker, api=None,
                            facts=src.facts, hyperpod_name=src.hyperpod_name)


# -- what a PATCH asks of the actual state -----------------------------------------------------

def _merged_groups(view: dict[str, Any], asked: dict[str, Any]) -> dict[str, Any]:
    """Each named group's bounds after the change: the fields given, the rest as now (a
    group not yet autoscaled starts at min 0). Checks that Karpenter may scale it."""
    groups = {g["name"]: g for g in view.get("groups") or ()}
    merged: dict[str, Any] = {}
    for name, bounds in asked.items():
        field = f"autoscaling.groups.{name}"
        group = groups.get(name)
        if group is None:
            raise Invalid(f"the cluster has no instance group {name!r}", field=field)
        if bounds is None:
            merged[name] = None
            continue
        if not group["eligible"]:
            raise Invalid(f"instance group {name!r} cannot be autoscaled: {group['reason']}",
                          field=field)
        minimum = bounds.get("min", group["min"] if group["autoscaled"] else 0)
        maximum = bounds.get("max", group["max"] if group["autoscaled"] else None)
        if maximum is None:
            raise Invalid(f"give the maximum of instance group {name!r}", field=field)
        if minimum > maximum:
            raise Invalid(f"instance group {name!r}: min {minimum} exceeds max {maximum}",
                          field=field)
        merged[name] = {"min": minimum, "max": maximum, "instance_type": group["instance_type"]}
    return merged


def _resolved(name: str, feature: dict[str, Any], wanted: dict[str, Any]) -> dict[str, Any]:
    """The feature's request with its options resolved against the actual state."""
    enabled = wanted.get("enabled", feature["state"] != features.OFF)
    options = {k: v for k, v in wanted.items() if k != "enabled"}
    if options and not enabled:
        raise Invalid(f"{name}: options apply to a feature that is on: send enabled true "
                      "with them", field=name)
    resolved: dict[str, Any] = {"enabled": enabled, **options}
    if "groups" in options:
        resolved["groups"] = _merged_groups(feature, options["groups"])
    return resolved


def change(view: dict[str, Any], body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The one feature whose requested fields differ from the actual state, with its
    resolved request; None when everything asked already holds (nothing to do)."""
    differing = []
    for name, wanted in body.items():
        resolved = _resolved(name, view["features"][name], wanted)
        comparable = {k: resolved[k] for k in wanted}
        if "groups" in comparable:
            comparable["groups"] = {g: None if b is None else {"min": b["min"], "max": b["max"]}
                                    for g, b in resolved["groups"].items()}
        if not features.matches(view["features"][name], comparable):
            differing.append((name, resolved))
    if len(differing) > 1:
        names = ", ".join(n for n, _ in differing)
        raise Invalid(f"{names} differ from the cluster's state: change one feature per "
                      "request (each is its own operation)", field="body")
    return differing[0] if differing else None
