"""A cluster's nodes: the paged listing (HyperPod joined with Kubernetes), one node, and the
node actions — reboot, replace, delete — each an operation on `cluster/<c>/nodes`
(tasks/nodes.py) that sends the ids in batches of AWS's limit.

Escalation order, as the docs, the MCP tools and skills/node-health.md say it: investigate
(read-only: the node, its events, its pods), then reboot, then replace; delete only to
shrink a group."""

from __future__ import annotations

import json
from typing import Any

from flask import Response
from flask.views import MethodView
from flask_smorest import Blueprint

from app import audit, mutations
from app.errors import ApiError
from app.permissions import access
from app.readmodels import clusters as readmodel
from app.readmodels import dependents
from app.readmodels import nodes as nodes_model
from cloud.errors import Invalid
from cloud.nodes import ACTIONS
from schemas.common import MutationReplySchema
from schemas.nodes import NodeActionSchema, NodeDetailSchema, NodeListQuerySchema, NodeListSchema
from tasks.nodes import NODE_KINDS
from vocabulary.roles import Role

blp = Blueprint("nodes", __name__, url_prefix="/api/v1/clusters",
                description="A cluster's nodes: read them, reboot, replace or delete them")
audit.declare_target(blp, "cluster/<cluster>/nodes")


@blp.route("/<string:cluster>/nodes")
class Nodes(MethodView):
    @access(Role.VIEWER)
    # an instance, not the class: webargs would build one per request on a paging route
    @blp.arguments(NodeListQuerySchema(), location="query")
    @blp.response(200, NodeListSchema)
    @blp.doc(operationId="list_nodes")
    def get(self, query, cluster):
        """A cluster's nodes, a page at a time, ordered by node id: each HyperPod instance
        (group, type, status and its message) with its Kubernetes Node (Ready, HyperPod's
        health label, cordoned). Filter by instance group, health and status; pass
        next_cursor back as cursor for the next page. Read from AWS and Kubernetes and kept
        a few seconds (as_of says when), so paging through a large cluster is fast."""
        body = nodes_model.page(cluster, query)
        # rendered here, not by the schema: a page of a large cluster is on a hot path,
        # and its content is NodeListSchema's (checked by the tests)
        return Response(json.dumps(body, separators=(",", ":")), mimetype="application/json")


@blp.route("/<string:cluster>/nodes/<string:node_id>")
class Node(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, NodeDetailSchema)
    @blp.doc(operationId="get_node")
    def get(self, cluster, node_id):
        """One node, read now: HyperPod's description (status and message, zone, IP,
        capacity type, labels, taints), its Kubernetes Node's conditions, the pods on it
        (what an action would disrupt) and its recent HyperPod events. Start here when a
        node looks unhealthy."""
        return nodes_model.detail(cluster, node_id)


def _cluster(name: str) -> readmodel.ClusterRef:
    found = readmodel.find(name)
    if found.imported:
        raise ApiError(409, "conflict", f"cluster {name!r} was imported: hypd reads its nodes "
                                        "but does not act on them")
    return found


DISRUPTIVE = ("replace", "delete")
"""The actions that end an instance: checked for the pods they would take down (a reboot
brings the node back with its disks, so its pods are not counted)."""


def _act(cluster: str, action_name: str, body: dict[str, Any],
         query: dict[str, Any] | None = None):
    """Submit the action's operation after checking every node exists and is in a state
    AWS would act on, and — for replace and delete — that no pod that would not come back
    elsewhere runs on them (409 in_use, unless force)."""
    action, node_ids = ACTIONS[action_name], body["node_ids"]
    params: dict[str, Any] = {"cluster": cluster, "node_ids": node_ids}

    def impact() -> mutations.Impact:
        found = _cluster(cluster)
        now = nodes_model.instances(found)
        unknown = [n for n in node_ids if n not in now]
        if unknown:
            raise Invalid(f"cluster {cluster!r} has no node {', '.join(unknown)}",
                          field="node_ids", details={"unknown": unknown})
        refused = {n: now[n]["status"] for n in node_ids if not action.acts_on(now[n]["status"])}
        if refused:
            listed = ", ".join(f"{n} is {status}" for n, status in refused.items())
            raise ApiError(409, "conflict",
                           f"AWS would refuse to {action.name} these nodes: {listed}; it "
                           f"{action.name}s nodes in {action.accepted_states()}",
                           {"nodes": refused})
        params.update(region=found.region, hyperpod_cluster=found.hyperpod_name)
        if action_name not in DISRUPTIVE:
            return mutations.Impact(f"{action_name} of {len(node_ids)} node(s)", [])
        return dependents.nodes(found, action_name, node_ids, now)

    reply = mutations.destroy(NODE_KINDS[action_name], f"cluster/{cluster}/nodes", params,
                              impact, query or {})
    nodes_model.forget(cluster)
    return reply


def _action_route(action: str, refused_state: str):
    """What every node action route declares; each one's docstring says what it does.
    Each takes `dry_run`; replace and delete also `force` (they end instances)."""
    disruptive = action in DISRUPTIVE

    def register(view):
        conflict = (f"{refused_state}, the cluster was imported, or another node operation "
                    "runs")
        view = blp.alt_response(422, description="a node id is unknown (named)")(view)
        if disruptive:
            view = mutations.destructive(blp, conflict=conflict)(view)
        else:
            view = blp.alt_response(409, description=conflict)(view)
            view = blp.response(202, MutationReplySchema)(view)
            view = mutations.changing(blp)(view)
        view = blp.arguments(NodeActionSchema)(view)
        return blp.route(f"/<string:cluster>/nodes/{action}", methods=["POST"])(view)

    return register


@_action_route("reboot", "a node is not Running")
@blp.doc(operationId="reboot_nodes")
def reboot(body, cluster):
    """Reboot nodes (BatchRebootClusterNodes, a soft recovery: the OS restarts, the instance
    and its local disks stay). Pods on them are disrupted: their controllers reschedule
    them elsewhere or back onto the node once it is Ready; bare pods are lost. Only Running
    nodes. Sent in batches of 25, each waited on until its nodes run again. The first
    remedy for a node that is stuck or unhealthy, after investigating it."""
    return _act(cluster, "reboot", body)


@_action_route("replace", "a node is neither Running nor in Failure")
@blp.doc(operationId="replace_nodes")
def replace(body, query, cluster):
    """Replace nodes (BatchReplaceClusterNodes): each instance is terminated and a new one
    (a new node id) takes its place in the same group. Data on the instance's local disks
    is lost; pods on it are evicted and rescheduled by their controllers. Running or Failure
    nodes. Sent in batches of 25, each waited on until the old instances are gone. For a
    node a reboot did not fix. Refused (409 in_use, naming them) while pods that would not
    come back elsewhere run on the nodes (a training job's among them), unless
    force=true."""
    return _act(cluster, "replace", body, query)


@_action_route("delete", "a node is already shutting down")
@blp.doc(operationId="delete_nodes")
def delete(body, query, cluster):
    """Delete nodes (BatchDeleteClusterNodes): the instances are terminated and not
    replaced, and each one's instance group shrinks by one (its target count drops). Pods
    on them are evicted; local data is lost. Sent in batches of 25, each waited on until
    the nodes are gone. To shrink a group by chosen nodes; not a remedy for sick nodes.
    Refused (409 in_use, naming them) while pods that would not come back elsewhere run on
    the nodes (a training job's among them), unless force=true."""
    return _act(cluster, "delete", body, query)
