"""Managed autoscaling per instance group: the Karpenter objects that give a HyperPod
instance group its minimum and maximum, and reading them back.

HyperPod-managed Karpenter scales instance groups named by a `HyperpodNodeClass` through the
`NodePool`s that reference it (AWS: the group starts at zero nodes and Karpenter scales it).
A Karpenter NodePool has a maximum (`spec.limits.nodes`) but no minimum, so a group's
bounds are two NodePools on the group's node class:

- `hypd-<group>` (dynamic): nodes for pending pods, up to `limits.nodes` = max - min, given
  back `consolidateAfter` after they are empty;
- `hypd-<group>-min` (static, only when min > 0): `replicas` = min nodes kept at all times.

So min = the static pool's replicas (0 without one) and max = min + the dynamic pool's limit,
read from the cluster, never from a copy. It manages HyperPod instance groups only, not
general EC2 capacity. The NodePool is `karpenter.sh/v1` as of Karpenter v1.14 (validated as
a closed schema in tests; `disruption.consolidateAfter` is required there). The
HyperpodNodeClass has no public CRD: its one documented field, `spec.instanceGroups`, is
built here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes.client import ApiClient

from cloud import kube

NODEPOOL_API = "karpenter.sh/v1"
NODEPOOL_KIND = "NodePool"
NODECLASS_GROUP = "karpenter.sagemaker.amazonaws.com"
NODECLASS_API = f"{NODECLASS_GROUP}/v1"
NODECLASS_KIND = "HyperpodNodeClass"
GROUP_LABEL = "hypd/instance-group"
POOL_ROLE_LABEL = "hypd/node-pool"
BURST = "burst"
MINIMUM = "minimum"
INSTANCE_TYPE_KEY = "node.kubernetes.io/instance-type"
NODEPOOL_LABEL = "karpenter.sh/nodepool"
CONSOLIDATE_AFTER = "60s"
MAX_NODES = 1000
SCOPE_NOTE = "Manages HyperPod instance groups only, not general EC2 capacity."


@dataclass(frozen=True)
class Bounds:
    minimum: int
    maximum: int


def pool_name(group: str, role: str = BURST) -> str:
    return f"hypd-{group}" if role == BURST else f"hypd-{group}-min"


def class_name(group: str) -> str:
    return f"hypd-{group}"


def _labels(group: str, role: str | None = None) -> dict[str, str]:
    extra = {GROUP_LABEL: group}
    if role:
        extra[POOL_ROLE_LABEL] = role
    return kube.labels(extra)


def node_class(group: str) -> dict[str, Any]:
    """The group's HyperpodNodeClass: the one instance group its pools may scale."""
    return {"apiVersion": NODECLASS_API, "kind": NODECLASS_KIND,
            "metadata": {"name": class_name(group), "labels": _labels(group)},
            "spec": {"instanceGroups": [group]}}


def _pool(group: str, instance_type: str, role: str) -> dict[str, Any]:
    return {
        "apiVersion": NODEPOOL_API,
        "kind": NODEPOOL_KIND,
        "metadata": {"name": pool_name(group, role), "labels": _labels(group, role)},
        "spec": {
            "template": {
                "metadata": {"labels": {GROUP_LABEL: group}},
                "spec": {
                    "nodeClassRef": {"group": NODECLASS_GROUP, "kind": NODECLASS_KIND,
                                     "name": class_name(group)},
                    "requirements": [{"key": INSTANCE_TYPE_KEY, "operator": "In",
                                      "values": [instance_type]}],
                    "expireAfter": "Never",
                },
            },
            "disruption": {"consolidationPolicy": "WhenEmpty",
                           "consolidateAfter": CONSOLIDATE_AFTER},
        },
    }


def node_pools(group: str, instance_type: str, bounds: Bounds) -> list[dict[str, Any]]:
    """The group's pools for `bounds` (see the module docstring)."""
    if not 0 <= bounds.minimum <= bounds.maximum <= MAX_NODES or bounds.maximum < 1:
        raise ValueError(f"bounds of {group} must satisfy 0 <= min <= max, 1 <= max <= "
                         f"{MAX_NODES}: {bounds}")
    burst = _pool(group, instance_type, BURST)
    burst["spec"]["limits"] = {"nodes": str(bounds.maximum - bounds.minimum)}
    pools = [burst]
    if bounds.minimum:
        floor = _pool(group, instance_type, MINIMUM)
        floor["spec"]["replicas"] = bounds.minimum
        floor["spec"]["limits"] = {"nodes": str(bounds.minimum)}
        floor["spec"]["disruption"] = {"consolidateAfter": "Never"}
        pools.append(floor)
    return pools


# -- reading -----------------------------------------------------------------------------------


def bounds_of(pools: Iterable[Mapping[str, Any]]) -> dict[str, Bounds]:
    """{group: Bounds} from hypd's NodePools as the cluster holds them."""
    found: dict[str, dict[str, int]] = {}
    for pool in pools:
        labels = (pool.get("metadata") or {}).get("labels") or {}
        group, role = labels.get(GROUP_LABEL), labels.get(POOL_ROLE_LABEL)
        if not group or role not in (BURST, MINIMUM):
            continue
        spec = pool.get("spec") or {}
        entry = found.setdefault(group, {})
        if role == MINIMUM:
            entry["minimum"] = int(spec.get("replicas") or 0)
        else:
            entry["burst"] = _int((spec.get("limits") or {}).get("nodes"))
    return {group: Bounds(v.get("minimum", 0), v.get("minimum", 0) + v.get("burst", 0))
            for group, v in found.items() if "burst" in v}


def _int(value: Any) -> int:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return 0


def read(api: ApiClient) -> dict[str, Bounds]:
    """The groups hypd autoscales and their bounds (a cluster without Karpenter's CRDs has
    none)."""
    pools = kube.list_objects(api, NODEPOOL_API, NODEPOOL_KIND, label_selector={
        kube.MANAGED_BY_LABEL: kube.MANAGED_BY_VALUE})
    return bounds_of(pools)


# -- applying ----------------------------------------------------------------------------------


def apply(api: ApiClient, group: str, instance_type: str, bounds: Bounds) -> list[str]:
    """Make the group's node class and pools as `bounds` says; a pool the bounds no longer
    need (the minimum pool when min becomes 0) is deleted. Returns what was applied."""
    done = []
    for obj in (node_class(group), *node_pools(group, instance_type, bounds)):
        kube.server_side_apply(api, obj)
        done.append(f"{obj['kind']}/{obj['metadata']['name']}")
    if not bounds.minimum:
        kube.delete_object(api, NODEPOOL_API, NODEPOOL_KIND, pool_name(group, MINIMUM))
    return done


def remove(api: ApiClient, group: str) -> list[str]:
    """The group's pools and node class gone: Karpenter stops scaling it."""
    gone = []
    for api_version, kind, name in ((NODEPOOL_API, NODEPOOL_KIND, pool_name(group, MINIMUM)),
                                    (NODEPOOL_API, NODEPOOL_KIND, pool_name(group, BURST)),
                                    (NODECLASS_API, NODECLASS_KIND, class_name(group))):
        try:
            deleted = kube.delete_object(api, api_version, kind, name)
        except kube.KubeError as exc:
            if exc.http_status != 404:
                raise
            deleted = False
        if deleted:
            gone.append(f"{kind}/{name}")
    return gone


def managed_groups(api: ApiClient) -> list[str]:
    """Every group hypd made Karpenter objects for (pools or node class)."""
    groups = set(read(api))
    for obj in kube.list_objects(api, NODECLASS_API, NODECLASS_KIND, label_selector={
            kube.MANAGED_BY_LABEL: kube.MANAGED_BY_VALUE}):
        group = ((obj.get("metadata") or {}).get("labels") or {}).get(GROUP_LABEL)
        if group:
            groups.add(group)
    return sorted(groups)
