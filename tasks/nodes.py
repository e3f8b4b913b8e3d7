"""Operation kinds `nodes.reboot`, `nodes.replace`, `nodes.delete` (target
`cluster/<c>/nodes`), and how the node routes read and act.

Acting: one step per batch call of at most `cloud.nodes.batch_size()` nodes, fixed when the
operation is recorded, so a worker that dies between batches resumes at the batch it was on
and never sends an earlier one again. Each batch is rolled: its call is sent, then the
step's `wait` holds the next batch back until HyperPod shows this one done, so at most one
batch of nodes is out of service at a time. Adopt before re-applying: a batch call has no
client token, so the step records what it is about to send and what AWS answered, and an
attempt after a crash sends only the nodes that show no evidence of the action.

The routes. `POST /clusters/<c>/nodes/{reboot,replace,delete}` with `{"node_ids": [...]}`
(each once, at most 3000: the largest `NodeIds` any of the three calls' models takes; the
batch size is in the OpenAPI document as `x-hypd-batch-size` on `node_ids`). Three routes
rather than one `actions` route with an `action` field: each action has its own description
of what it does to pods and its own MCP tool (replace and delete are marked destructive,
reboot is not). The route refuses, before anything is recorded, unknown ids (422 naming
them), nodes in a state AWS would refuse (409 naming each node and its state: reboot takes
Running; replace Running or Failure; delete anything but ShuttingDown) and imported
clusters (409).

The batches. `select` fixes one step per batch when the operation is recorded: `batch_1` ...
`batch_n`, in the order given, of `cloud.nodes.batch_size()` ids: the smallest `NodeIds`
limit of the three calls in botocore's model (25; delete's model allows 3000 and AWS
documents 99, but one size keeps every action's batches and the disruption one batch can
cause alike). Each step records `sending` (ids, time) before its call and `done` / `failed`
right after. Its `wait` holds the next batch until HyperPod shows this one done: rebooted
nodes Running again (one in Failure fails the step), replaced and deleted nodes gone.

Adoption. An attempt that finds `sending` without an answer (the worker died after AWS may
have acted, or the call timed out) looks for evidence on each of those nodes
(`cloud.nodes.evidence`). A node that is gone, whose status the action no longer accepts,
whose health label shows the action pending, or that has a HyperPod instance event telling
of the action (its description names the reboot, the replacement or the deletion) since the
recorded time (less 5 s for clock skew) is taken as done, and only the others are sent; when
the labels cannot be read the step retries rather than guess. Any event of the node once
counted, and the fault campaign found what that did: a replace throttled past botocore's
retries was retried, took the node's "is running" event (it had just come up) for its own,
and waited for ever for a replacement nobody had asked for.

Per-node failures in AWS's answer (`Failed`; also an id the answer does not mention) are
kept in the step's resources, named in its detail, and fail the operation; its later batches
are not sent, and a retry re-sends only the failed nodes.

Reading. `GET /clusters/<c>/nodes` joins every `ListClusterNodes` page (at botocore's largest
page size) with the cluster's Kubernetes Nodes (label
`sagemaker.amazonaws.com/compute-type=hyperpod`, matched by `spec.providerID`'s instance id,
else HyperPod's name `hyperpod-<id>`): Ready, the health label
`sagemaker.amazonaws.com/node-health-status`, `spec.unschedulable`. The joined listing is
kept in `hypd:cache:nodes:<c>` for 5 s: written only after the cluster was found, so a hit
needs no look-up; dropped when a node action is submitted and after each batch call. A page
is one GET of it, a filter (instance group; health, where `Unknown` is no label or no Node;
HyperPod status: botocore's enum) and a slice. Pages are keyset-cut by node id: `cursor` is
the last id of the previous page, so while nodes come and go a node present throughout is
neither repeated nor skipped. The page is written with `json.dumps`, not the schema's dump
(its content is `NodeListSchema`'s; the tests and the fuzzer check it).
`GET /clusters/<c>/nodes/<id>` is `DescribeClusterNode`, the Node (conditions, taints), the
pods on it (`fieldSelector=spec.nodeName`) and its recent HyperPod events; not cached. Every
reply carries `Server-Timing: app;dur=<ms>` (app/__init__.py: from before the token check to
the body), which `bench/nodes.py` reports; figures in docs/benchmarks.md.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from cloud import eks, kube
from cloud import nodes as cloud_nodes
from cloud.nodes import ACTIONS, NodeAction
from tasks.engine.kinds import OperationKind, Step, StepContext, StepFailed, StepRetry
from tasks.outcomes import guarded

POLL_S = 15.0
SHOWN_IN_DETAIL = 5


def listing_cache_key(cluster: str) -> str:
    """The node listing's short cache (app/readmodels/nodes.py): every batch call drops it."""
    return f"hypd:cache:nodes:{cluster}"


def _action(ctx: StepContext) -> NodeAction:
    return ACTIONS[ctx.kind.split(".", 1)[1]]


def _batch(ctx: StepContext) -> list[str]:
    index = int(ctx.step.rsplit("_", 1)[1]) - 1
    return cloud_nodes.batches(list(ctx.params["node_ids"]))[index]


def _named(ids: list[str]) -> str:
    more = len(ids) - SHOWN_IN_DETAIL
    return ", ".join(ids[:SHOWN_IN_DETAIL]) + (f" and {more} more" if more > 0 else "")


def _health_labels(ctx: StepContext) -> dict[str, str | None]:
    try:
        found = cloud_nodes.kube_nodes(eks.api_client(ctx.params["cluster"], ctx.region))
    except (kube.KubeError, OSError, ValueError) as exc:
        # without the labels a node might look untouched when its call went through
        raise StepRetry(f"cannot read the cluster's Kubernetes Nodes to check what an "
                        f"interrupted call did: {exc}") from exc
    return {instance: view["health"] for instance, view in found.items()}


def _adopt(ctx: StepContext, action: NodeAction, sent: list[str],
           since: datetime) -> dict[str, str]:
    """The nodes of an earlier attempt's call that show it went through (see module)."""
    sm = ctx.client("sagemaker")
    cluster = ctx.params["hyperpod_cluster"]
    now = cloud_nodes.nodes_by_id(sm, cluster)
    health = _health_labels(ctx) if action.pending_label else {}
    events = cloud_nodes.instance_events_since(sm, cluster, since)
    return cloud_nodes.evidence(action, sent, now, health, events)


def _failure_message(action: NodeAction, failed: list[dict[str, Any]], total: int) -> str:
    shown = "; ".join(f"{f['node_id']}: {f['code']}: {(f['message'] or '').rstrip('.')}"
                      for f in failed[:SHOWN_IN_DETAIL])
    more = len(failed) - SHOWN_IN_DETAIL
    return (f"{len(failed)} of {total} nodes were not {action.done} ({action.operation} "
            f"answered): {shown}{f'; and {more} more' if more > 0 else ''}. The later "
            "batches were not sent; resolve the cause and retry the operation (it re-sends "
            "only these nodes).")


@guarded
def send_batch(ctx: StepContext) -> dict[str, Any]:
    action, ids = _action(ctx), _batch(ctx)
    done = set(ctx.resources.get("done") or ())
    adopted: dict[str, str] = dict(ctx.resources.get("adopted") or {})
    todo = [n for n in ids if n not in done and n not in adopted]
    sending = ctx.resources.get("sending")
    if todo and sending:  # an earlier attempt may have gone through: look before re-sending
        maybe = [n for n in todo if n in sending["node_ids"]]
        adopted.update(_adopt(ctx, action, maybe, datetime.fromisoformat(sending["at"])))
        todo = [n for n in todo if n not in adopted]
    failed: list[dict[str, Any]] = []
    if todo:
        ctx.record(node_ids=ids, adopted=adopted, sending={
            "node_ids": todo, "at": datetime.now(UTC).isoformat()})
        ok, failed = cloud_nodes.send(ctx.client("sagemaker"), ctx.params["hyperpod_cluster"],
                                      action, todo)
        reported = set(ok) | {f["node_id"] for f in failed}
        failed += [{"node_id": n, "code": "NotReported",
                    "message": f"{action.operation} did not report this node"}
                   for n in todo if n not in reported]
        done |= set(ok) & set(todo)
        ctx.record(done=sorted(done), failed=failed, sending=None)
        ctx.redis.delete(listing_cache_key(ctx.params["cluster"]))
    if failed:
        raise StepFailed(_failure_message(action, failed, len(ids)), "upstream_error")
    return {"node_ids": ids, "done": sorted(done), "adopted": adopted, "failed": [],
            "sending": None}


@guarded
def batch_settled(ctx: StepContext) -> float | None:
    """None once HyperPod shows every node of the batch done: rebooted nodes Running again
    (one in Failure fails the step), replaced and deleted nodes gone."""
    action = _action(ctx)
    acted = sorted({*(ctx.resources.get("done") or ()), *(ctx.resources.get("adopted") or ())})
    now = cloud_nodes.nodes_by_id(ctx.client("sagemaker"), ctx.params["hyperpod_cluster"])
    if action is cloud_nodes.REBOOT:
        broken = [n for n in acted if (now.get(n) or {}).get("status") == "Failure"]
        if broken:
            raise StepFailed(f"{_named(broken)} did not come back from the reboot: "
                             f"{now[broken[0]].get('message') or 'Failure'}; replace "
                             "them", "upstream_error")
        waiting = [n for n in acted if n in now and now[n].get("status") != "Running"]
    else:
        waiting = [n for n in acted if n in now]
    if not waiting:
        return None
    ctx.detail(f"{len(acted) - len(waiting)} of {len(acted)} nodes {action.done}; waiting "
               f"for {_named(waiting)}")
    return POLL_S


def nodes_url(params: dict[str, Any]) -> str:
    return f"/api/v1/clusters/{params['cluster']}/nodes"


def _kind(action: NodeAction, verb: str) -> OperationKind:
    size = cloud_nodes.batch_size()
    steps = tuple(
        Step(f"batch_{i}", f"{verb} batch {i} (up to {size} nodes, {action.operation})",
             send_batch, batch_settled)
        for i in range(1, cloud_nodes.batch_count(cloud_nodes.request_limit()) + 1))

    def select(params: dict[str, Any]) -> tuple[Step, ...]:
        count = cloud_nodes.batch_count(len(params["node_ids"]))
        if not 0 < count <= len(steps):
            raise ValueError(f"{len(params['node_ids'])} node ids: 1 to "
                             f"{cloud_nodes.request_limit()} per operation")
        return steps[:count]

    return OperationKind(name=f"nodes.{action.name}", steps=steps, select=select,
                         resource_url=nodes_url)


NODES_REBOOT = _kind(cloud_nodes.REBOOT, "Reboot")
NODES_REPLACE = _kind(cloud_nodes.REPLACE, "Replace")
NODES_DELETE = _kind(cloud_nodes.DELETE, "Delete")
NODE_KINDS = {"reboot": NODES_REBOOT, "replace": NODES_REPLACE, "delete": NODES_DELETE}
