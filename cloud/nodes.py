"""HyperPod nodes: each instance joined with its Kubernetes Node, and the node batch calls
(BatchRebootClusterNodes, BatchReplaceClusterNodes, BatchDeleteClusterNodes) with what an
interrupted call leaves behind as evidence.

Why evidence: a batch call has no client token. A worker that dies after AWS acted and
before it recorded the answer cannot ask AWS "did my call go through?", so the step that
runs again looks at what the call would have left on each node — the node gone, its status
moved on to one the action no longer accepts, HyperPod's health label saying it is pending
the action, or a HyperPod event for the instance since the call — and re-sends only the
nodes without any (`evidence`). A node that shows one is never acted on twice.

botocore fields used (sagemaker): ListClusterNodes (via cloud.hyperpod.list_nodes),
DescribeClusterNode `NodeDetails`, ListClusterEvents `Events[].{InstanceId, EventTime,
Description, ResourceType}`, the batch calls' `NodeIds`, `Successful`, `Failed[].{NodeId,
ErrorCode|Code, Message}`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from cloud import kube
from cloud.aws import is_not_found, is_transient
from cloud.capacity import labels_of, taints_of
from cloud.errors import Refusal
from cloud.hyperpod import _absent, _iso, list_nodes, model_limit, node_view

HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
INSTANCE_GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
COMPUTE_TYPE_LABEL = "sagemaker.amazonaws.com/compute-type"
HYPERPOD_NODES = f"{COMPUTE_TYPE_LABEL}=hyperpod"
NODE_NAME_PREFIX = "hyperpod-"
"""HyperPod names the Kubernetes Node of instance `i-…` `hyperpod-i-…`."""
EVENT_SLACK_S = 5.0
"""Events this much before a call's recorded time still count as its evidence: the panel's
clock and AWS's may differ by a little (NTP keeps them within a second)."""
NODE_EVENTS_SHOWN = 20


class NoHyperPodCluster(Refusal):
    """The cluster has no HyperPod cluster (yet): it has no nodes to read or act on."""

    def __init__(self, name: str) -> None:
        super().__init__(f"there is no HyperPod cluster {name!r} (yet): the cluster's "
                         "hyperpod stage has not run")


@dataclass(frozen=True)
class NodeAction:
    """One node batch call and how to tell it went through."""

    name: str
    """reboot, replace or delete"""
    operation: str
    """the botocore operation"""
    method: str
    """its boto3 client method"""
    accepts: frozenset[str] | None
    """instance statuses AWS acts on; None: all but `refuses`"""
    refuses: frozenset[str] = frozenset()
    pending_label: str | None = None
    """the health label HyperPod puts on a node the action is under way on"""
    done: str = ""
    """past participle, for messages"""
    event_words: tuple[str, ...] = ()
    """what an instance event telling of this action says (any of, case-insensitive): only
    such an event is evidence of a call. Any other event of the node since — it came up
    running, a health check passed — says nothing of whether the call went through."""

    def tells_of(self, event: Mapping[str, Any]) -> bool:
        """Whether an instance event is one this action makes."""
        text = str(event.get("Description") or "").lower()
        return any(word in text for word in self.event_words)

    def acts_on(self, status: str | None) -> bool:
        if self.accepts is not None:
            return status in self.accepts
        return status not in self.refuses

    def accepted_states(self) -> str:
        if self.accepts is not None:
            return " or ".join(sorted(self.accepts))
        return "any state but " + " or ".join(sorted(self.refuses))


REBOOT = NodeAction("reboot", "BatchRebootClusterNodes", "batch_reboot_cluster_nodes",
                    accepts=frozenset({"Running"}),
                    pending_label="UnschedulablePendingReboot", done="rebooted",
                    event_words=("reboot",))
REPLACE = NodeAction("replace", "BatchReplaceClusterNodes", "batch_replace_cluster_nodes",
                     accepts=frozenset({"Running", "Failure"}),
                     pending_label="UnschedulablePendingReplacement", done="replaced",
                     event_words=("replac",))
DELETE = NodeAction("delete", "BatchDeleteClusterNodes", "batch_delete_cluster_nodes",
                    accepts=None, refuses=frozenset({"ShuttingDown"}), done="deleted",
                    event_words=("delet", "terminat"))
ACTIONS: dict[str, NodeAction] = {a.name: a for a in (REBOOT, REPLACE, DELETE)}


@functools.cache
def batch_size() -> int:
    """Node ids per batch call, the same for every action: the smallest `NodeIds` limit of
    the three calls in botocore's model (25: reboot and replace; delete's model allows 3000
    though AWS documents 99). One size keeps every action's batches, and the disruption one
    batch can cause, alike."""
    return min(model_limit(a.operation, "NodeIds") for a in ACTIONS.values())


@functools.cache
def request_limit() -> int:
    """The most ids any of the three calls' models takes (BatchDeleteClusterNodes' 3000):
    how many nodes one operation may name (schemas/nodes.py reads the same)."""
    return max(model_limit(a.operation, "NodeIds") for a in ACTIONS.values())


def batches(node_ids: list[str], size: int | None = None) -> list[list[str]]:
    """The ids in call-sized batches, in the order given."""
    size = size or batch_size()
    return [node_ids[i:i + size] for i in range(0, len(node_ids), size)]


def batch_count(count: int) -> int:
    return math.ceil(count / batch_size())


# -- reading -----------------------------------------------------------------------------------

def nodes_by_id(sm: Any, cluster: str) -> dict[str, dict[str, Any]]:
    """Every node of the HyperPod cluster (every ListClusterNodes page), by instance id;
    NoHyperPodCluster when there is no such cluster."""
    try:
        return {n["id"]: n for n in list_nodes(sm, cluster)}
    except ClientError as exc:
        if _absent(exc):
            raise NoHyperPodCluster(cluster) from exc
        raise


def instance_of(node: Mapping[str, Any]) -> str | None:
    """The instance id a Kubernetes Node stands for: its providerID's last segment
    (`aws:///<zone>/i-…`, set by the kubelet), else HyperPod's name for it."""
    provider = ((node.get("spec") or {}).get("providerID") or "").rstrip("/")
    last = provider.rsplit("/", 1)[-1]
    if last.startswith("i-"):
        return last
    name = (node.get("metadata") or {}).get("name") or ""
    return name[len(NODE_NAME_PREFIX):] if name.startswith(NODE_NAME_PREFIX) else None


def kube_view(node: Mapping[str, Any]) -> dict[str, Any]:
    """What a node's page needs of its Kubernetes Node: name, Ready, the health label,
    cordoned."""
    meta, spec = node.get("metadata") or {}, node.get("spec") or {}
    conditions = (node.get("status") or {}).get("conditions") or ()
    ready = next((c.get("status") == "True" for c in conditions if c.get("type") == "Ready"),
                 None)
    return {"node_name": meta.get("name"), "ready": ready,
            "health": (meta.get("labels") or {}).get(HEALTH_LABEL),
            "unschedulable": bool(spec.get("unschedulable"))}


def kube_nodes(api: Any) -> dict[str, dict[str, Any]]:
    """HyperPod's Kubernetes Nodes (`kube_view`), by the instance id each stands for."""
    found = {}
    for node in kube.iter_objects(api, "v1", "Node", label_selector=HYPERPOD_NODES):
        instance = instance_of(node)
        if instance:
            found[instance] = kube_view(node)
    return found


NO_NODE = {"node_name": None, "ready": None, "health": None, "unschedulable": None}


def join(instances: Iterable[Mapping[str, Any]],
         kube_by_instance: Mapping[str, Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """Each instance with its Kubernetes Node's view (None fields: no Node, or Kubernetes
    unreadable), ordered by instance id — the order pages are cut in."""
    joined = [{**dict(i), **(kube_by_instance or {}).get(i["id"], NO_NODE)} for i in instances]
    return sorted(joined, key=lambda n: n["id"])


def describe_node(sm: Any, cluster: str, node_id: str) -> dict[str, Any] | None:
    """One node as DescribeClusterNode reports it (a clean view), None when there is none."""
    try:
        details = sm.describe_cluster_node(ClusterName=cluster, NodeId=node_id)["NodeDetails"]
    except ClientError as exc:
        if is_not_found(exc) or _absent(exc):
            return None
        raise
    placement = details.get("Placement") or {}
    k8s = details.get("KubernetesConfig") or {}
    current = {"KubernetesConfig": {"Labels": k8s.get("CurrentLabels") or {},
                                    "Taints": k8s.get("CurrentTaints") or []}}
    return {
        **node_view(details),
        "private_ip": details.get("PrivatePrimaryIp"),
        "availability_zone": placement.get("AvailabilityZone"),
        "capacity_type": details.get("CapacityType"),
        "threads_per_core": details.get("ThreadsPerCore"),
        "last_software_update_at": _iso(details.get("LastSoftwareUpdateTime")),
        "labels": labels_of(current),
        "taints": taints_of(current),
    }


def node_events(sm: Any, cluster: str, node_id: str,
                limit: int = NODE_EVENTS_SHOWN) -> list[dict[str, Any]]:
    """The instance's most recent HyperPod events, newest first ([] where the API has
    none: AWS keeps events only for clusters with continuous provisioning)."""
    try:
        reply = sm.list_cluster_events(ClusterName=cluster, NodeId=node_id,
                                       SortOrder="Descending", MaxResults=limit)
    except ClientError as exc:
        if is_transient(exc):
            raise
        return []
    return [{"id": e.get("EventId"), "at": _iso(e.get("EventTime")),
             "level": e.get("EventLevel"), "description": e.get("Description")}
            for e in reply.get("Events") or ()]


def instance_events_since(sm: Any, cluster: str, since: datetime
                          ) -> dict[str, list[dict[str, Any]]]:
    """Instance events since `since` (every page), by instance id."""
    found: dict[str, list[dict[str, Any]]] = {}
    pages = sm.get_paginator("list_cluster_events").paginate(
        ClusterName=cluster, ResourceType="Instance",
        EventTimeAfter=since - timedelta(seconds=EVENT_SLACK_S),
        PaginationConfig={"PageSize": model_limit("ListClusterEvents", "MaxResults")})
    for page in pages:
        for event in page.get("Events") or ():
            if event.get("InstanceId"):
                found.setdefault(event["InstanceId"], []).append(event)
    return found


# -- acting ------------------------------------------------------------------------------------

def evidence(action: NodeAction, node_ids: Iterable[str],
             now: Mapping[str, Mapping[str, Any]], health: Mapping[str, str | None],
             events: Mapping[str, list[dict[str, Any]]]) -> dict[str, str]:
    """Which of `node_ids` show that a call of `action` sent for them went through, and how.
    `now`: the cluster's nodes by id; `health`: each node's health label; `events`: instance
    events since the call was sent (only those telling of the action count)."""
    shown: dict[str, str] = {}
    for node_id in node_ids:
        node = now.get(node_id)
        if node is None:
            shown[node_id] = "no longer in the cluster"
        elif not action.acts_on(node.get("status")):
            shown[node_id] = f"now {node.get('status')}"
        elif action.pending_label and health.get(node_id) == action.pending_label:
            shown[node_id] = f"labelled {action.pending_label}"
        elif told := [e for e in events.get(node_id) or () if action.tells_of(e)]:
            shown[node_id] = f"HyperPod event: {told[0].get('Description')}"
    return shown


def send(sm: Any, cluster: str, action: NodeAction, node_ids: list[str]
         ) -> tuple[list[str], list[dict[str, Any]]]:
    """One batch call: the ids AWS acted on, and its per-node failures
    `[{"node_id", "code", "message"}]`."""
    if len(node_ids) > batch_size():
        raise ValueError(f"at most {batch_size()} node ids per call")
    reply = getattr(sm, action.method)(ClusterName=cluster, NodeIds=list(node_ids))
    failed = [{"node_id": f.get("NodeId"), "code": f.get("ErrorCode") or f.get("Code"),
               "message": f.get("Message")} for f in reply.get("Failed") or ()]
    return list(reply.get("Successful") or ()), failed
