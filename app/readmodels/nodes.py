"""A cluster's nodes as the routes answer them: HyperPod's instances (every
ListClusterNodes page) joined with their Kubernetes Nodes (Ready, HyperPod's health label,
cordoned), and one node in full.

The joined listing of a cluster is kept in Redis for a few seconds (`CACHE_S`, one key per
cluster, dropped by every node action), so paging through a large cluster reads AWS and
Kubernetes once, not once per page: a page is one Redis GET, a filter and a slice. Pages
are cut by node id (keyset), so a page boundary never repeats or skips a node while nodes
come and go between pages.
"""

from __future__ import annotations

import bisect
import json
from datetime import UTC, datetime
from typing import Any

from app import context
from app.errors import ApiError
from app.readmodels import clusters as readmodel
from app.readmodels.clusters import ClusterRef
from cloud import aws, eks, kube
from cloud import nodes as cloud_nodes
from schemas.nodes import UNKNOWN_HEALTH
from tasks.nodes import listing_cache_key
from vocabulary import patterns

CACHE_S = 5


def instances(ref: ClusterRef) -> dict[str, dict[str, Any]]:
    """The cluster's HyperPod nodes now, by id (AWS, never the cache); 409 without a
    HyperPod cluster."""
    return cloud_nodes.nodes_by_id(aws.client("sagemaker", region=ref.region),
                                   ref.hyperpod_name)


def kube_api(ref: ClusterRef) -> Any | None:
    """The cluster's Kubernetes client, when its EKS cluster is ACTIVE."""
    if (ref.eks or {}).get("status") != eks.ACTIVE:
        return None
    return eks.api_client(ref.name, ref.region)


def read_now(ref: ClusterRef) -> dict[str, Any]:
    """The joined listing read now (never the cache)."""
    found = instances(ref)
    as_of = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    try:
        api = kube_api(ref)
        by_instance = cloud_nodes.kube_nodes(api) if api is not None else None
    except (kube.KubeError, OSError, ValueError):
        by_instance = None
    return {"as_of": as_of, "kubernetes_readable": by_instance is not None,
            "items": cloud_nodes.join(found.values(), by_instance)}


def listing(cluster: str) -> dict[str, Any]:
    """{as_of, kubernetes_readable, items (every node, by id)}: from the cache while it is
    fresh (a few seconds), else read and kept. Only a found cluster's listing is kept, so a
    hit needs no look-up of the cluster."""
    conn = context.redis_conn()
    key = listing_cache_key(cluster)
    raw = conn.get(key)
    if raw is not None:
        return json.loads(raw)
    value = read_now(readmodel.find(cluster))
    conn.set(key, json.dumps(value, separators=(",", ":")), ex=CACHE_S)
    return value


def forget(cluster: str) -> None:
    """Drop the cluster's cached listing (a node action changes it)."""
    context.redis_conn().delete(listing_cache_key(cluster))


def _matches(node: dict[str, Any], query: dict[str, Any]) -> bool:
    if query.get("instance_group") and node.get("instance_group") != query["instance_group"]:
        return False
    if query.get("status") and node.get("status") != query["status"]:
        return False
    health = query.get("health")
    return not health or (node.get("health") or UNKNOWN_HEALTH) == health


def page(cluster: str, query: dict[str, Any]) -> dict[str, Any]:
    """One page of the listing (NodeListSchema): the nodes matching the filters after the
    cursor's id, at most `limit`."""
    found = listing(cluster)
    matching = [n for n in found["items"] if _matches(n, query)]
    start = bisect.bisect_right(matching, query["cursor"], key=lambda n: n["id"]) \
        if query.get("cursor") else 0
    items = matching[start:start + query["limit"]]
    more = start + len(items) < len(matching)
    return {"cluster": cluster, "items": items, "total": len(matching),
            "next_cursor": items[-1]["id"] if more and items else None,
            "as_of": found["as_of"], "kubernetes_readable": found["kubernetes_readable"]}


# -- one node ----------------------------------------------------------------------------------

def _pods(api: Any, node_name: str) -> list[dict[str, Any]]:
    found = []
    for pod in kube.iter_objects(api, "v1", "Pod", field_selector=f"spec.nodeName={node_name}"):
        if (pod.get("spec") or {}).get("nodeName") != node_name:
            continue
        meta = pod["metadata"]
        owner = next((o for o in meta.get("ownerReferences") or () if o.get("controller")),
                     None)
        found.append({"namespace": meta.get("namespace") or "default", "name": meta["name"],
                      "phase": (pod.get("status") or {}).get("phase"),
                      "owner": f"{owner['kind']}/{owner['name']}" if owner else None})
    return sorted(found, key=lambda p: (p["namespace"], p["name"]))


def _kubernetes(ref: ClusterRef, node_id: str) -> dict[str, Any]:
    """The Node's view, conditions and taints and the pods on it (None fields and empty
    lists when there is no Node or Kubernetes cannot be read)."""
    empty = {**cloud_nodes.NO_NODE, "conditions": [], "pods": []}
    try:
        api = kube_api(ref)
        node = kube.get_object(api, "v1", "Node", cloud_nodes.NODE_NAME_PREFIX + node_id) \
            if api is not None else None
        if node is None:
            return empty
        view = cloud_nodes.kube_view(node)
        return {**view, "conditions": list((node.get("status") or {}).get("conditions") or ()),
                "taints": list((node.get("spec") or {}).get("taints") or ()),
                "pods": _pods(api, view["node_name"])}
    except (kube.KubeError, OSError, ValueError):
        return empty


def detail(cluster: str, node_id: str) -> dict[str, Any]:
    """One node (NodeDetailSchema): DescribeClusterNode, its Kubernetes Node (its taints
    when there is one, else the group's) with the pods on it, and its recent HyperPod
    events."""
    ref = readmodel.find(cluster)
    sm = aws.client("sagemaker", region=ref.region)
    described = cloud_nodes.describe_node(sm, ref.hyperpod_name, node_id) \
        if patterns.fits(patterns.NODE_ID, node_id) else None
    if described is None:
        raise ApiError(404, "not_found", f"cluster {cluster!r} has no node {node_id!r}")
    return {**described, **_kubernetes(ref, node_id),
            "events": cloud_nodes.node_events(sm, ref.hyperpod_name, node_id)}
