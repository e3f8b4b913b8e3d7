"""What a diagnosis reads, read-only: the cluster's operations (Redis), HyperPod's cluster,
nodes and events (AWS), the Kubernetes Nodes' health labels and conditions, and — for the
nccl kind — the pods' events, container states and last log lines (every workload's, one
namespace's or one training job's; a restarted container's previous run too). Each source
that cannot be read now is named, not fatal: a diagnosis says what it could not see.

`app/readmodels/findings.py` turns what is gathered into findings and suggestions.

Diagnostics, as built.

`GET /api/v1/clusters/<c>/diagnostics/<kind>` (viewer) reads and changes nothing; it
answers findings, each citing its evidence verbatim, and suggested commands that hypd never
runs. Two modules: `app/readmodels/diagnostics.py` gathers — the cluster's lifecycle
operations (Redis), HyperPod's DescribeCluster, its nodes and its last 100 cluster events
(ListClusterEvents; an endpoint without them is named in `sources`, not an error), the
nodes joined with their Kubernetes Nodes read now (`app/readmodels/nodes.read_now`, never the
listing's cache), and for each suspect node (Failure, a health label other than
`Schedulable`, or Running and not Ready) its HyperPod events and its Node's conditions that
are off; for `nccl`, the pods of one training job (`job`: found by `cloud.jobs.find`, its
pods by their `hypd.io/job` label — `404 not_found` when the cluster has no such job, or
not in the `namespace` also given), of one namespace, or of every non-system one (at most
50, the most recently started first), their Warning events, container states and each
container's last `tail_lines` log lines (`cloud.kube.pod_log`) — and, for a container that
restarted, its previous run's too (cited as `<ns>/<pod>/<container> (previous run)`): an
NCCL timeout kills the process, so the error is in the run that died. A source that cannot be read
is listed in
`sources` with the reason. `app/readmodels/findings.py` is the rules, pure functions:
- `creation`: each stage whose newest run failed (`stage_failed`, evidence the failed step's
  detail and the operation's error, remedy `retry`); a create (or re-run) that was cancelled
  (`cancelled_create`), never finished (`unfinished_create`), or a delete that stopped
  (`stopped_delete`) — from `lifecycle.state`, so a stopped create is never "healthy";
  HyperPod `Failed` or error events (`cluster_failed`); nodes in Failure (`node_failed`,
  remedy `replace`).
- `node-health`: `node_failed` (replace), `node_unhealthy` — labelled
  `UnschedulablePendingReplacement` (replace), `UnschedulablePendingReboot` (reboot),
  `Unschedulable` (a warning, no action: deep health checks) — and `node_not_ready` (reboot);
  and what the failure pattern table finds in those nodes' HyperPod events and conditions
  (a fatal Xid the health agent reported makes the node a replacement, not a reboot).
- `nccl`: every log line, event (`reason: message`) and container state matched against the
  failure pattern table `cloud/data/failure_patterns.yaml` (NCCL timeouts and errors, EFA
  errors, NVIDIA Xid errors — fatal Xids apart —, out of memory; the first matching row
  wins), one finding per pattern and node with at most 5 lines cited; plus the node-health
  findings of the nodes named.
Suggestions follow one order, `investigate → reboot → replace → retry → delete`:
`get_operation` for a failed stage, `get_cluster` then `retry_operation` (resume) and
`delete_cluster` for a stopped create, `get_cluster` for a failed HyperPod cluster, `get_node` (with
`kubectl
describe node`) per node named; `reboot_nodes` for the Running nodes whose hardest remedy is a
reboot; `replace_nodes` for those needing a replacement and, "only if it comes back", the
rebooted ones; `run_cluster_stage` per failed stage. Each carries its MCP tool and
arguments and the same REST call (`app/readmodels/calls.py` `TOOL_CALLS`, held equal to the
tool table by a test; the cluster read's `next_actions` use the same table). MCP:
`diagnose_cluster`; dashboard: the Diagnostics card on the cluster page
(`static/js/views/cluster_diagnostics.js`, on request; NCCL narrowed to one job or namespace
as REST and MCP allow); playbooks `skills/node-health.md`,
`nccl-failures.md`, `failed-creation.md`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from app.errors import ApiError
from app.readmodels import findings
from app.readmodels import nodes as nodes_model
from app.readmodels.clusters import ClusterRef, find
from cloud import aws, hyperpod, jobs, kube
from cloud import nodes as cloud_nodes
from schemas.diagnostics import MAX_PODS

SYSTEM_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease",
                               "cert-manager", "amazon-cloudwatch", "aws-hyperpod",
                               "hyperpod-observability", "hyperpod-inference-system",
                               "kueue-system"})
"""Namespaces of the cluster's own components: an nccl diagnosis reads workloads only."""
EVENTS_READ = 100
UNREADABLE = (ClientError, BotoCoreError, kube.KubeError, OSError, ValueError)


@dataclass
class Gathered:
    cluster: str
    life: list[dict[str, Any]]
    """the cluster's create, stage and delete operations, newest first"""
    hyperpod: dict[str, Any] | None = None
    """hyperpod.describe(): status, failure message, nodes, recent events"""
    nodes: list[dict[str, Any]] = field(default_factory=list)
    """each HyperPod node joined with its Kubernetes Node (cloud.nodes.join)"""
    conditions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """node id → its Kubernetes Node's conditions that are not as they should be"""
    node_events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """node id → its recent HyperPod events"""
    pods: list[dict[str, Any]] = field(default_factory=list)
    """nccl: {namespace, name, node_name, phase, containers, events, lines}"""
    sources: list[dict[str, Any]] = field(default_factory=list)

    def read(self, source: str, note: str | None = None) -> None:
        self.sources.append({"source": source, "read": note is None, "note": note})


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


def _hyperpod(ref: ClusterRef, found: Gathered) -> None:
    try:
        found.hyperpod = hyperpod.describe(aws.client("sagemaker", region=ref.region),
                                           ref.hyperpod_name, events=EVENTS_READ)
    except UNREADABLE as exc:
        found.read("hyperpod_cluster", _why(exc))
        return
    found.read("hyperpod_cluster", None if found.hyperpod else "no HyperPod cluster (yet)")
    if found.hyperpod and not found.hyperpod.get("events_available"):
        found.read("hyperpod_event", "this endpoint keeps no HyperPod cluster events")


def _nodes(ref: ClusterRef, found: Gathered) -> Any | None:
    """Reads the joined nodes; answers the Kubernetes client (None when unreadable)."""
    if not found.hyperpod:
        return None
    try:
        listing = nodes_model.read_now(ref)
    except UNREADABLE as exc:
        found.read("hyperpod_node", _why(exc))
        return None
    found.nodes = listing["items"]
    found.read("hyperpod_node")
    if not listing["kubernetes_readable"]:
        found.read("node_label", "the cluster's Kubernetes API cannot be read now")
        return None
    found.read("node_label")
    return nodes_model.kube_api(ref)


def _conditions(api: Any, found: Gathered, node_ids: list[str]) -> None:
    by_name = {n["node_name"]: n["id"] for n in found.nodes if n.get("node_name")}
    for name, node_id in by_name.items():
        if node_id not in node_ids:
            continue
        node = kube.get_object(api, "v1", "Node", name) or {}
        found.conditions[node_id] = [
            c for c in (node.get("status") or {}).get("conditions") or ()
            if (c.get("type") == "Ready") != (c.get("status") == "True")]


def _node_events(ref: ClusterRef, found: Gathered, node_ids: list[str]) -> None:
    sm = aws.client("sagemaker", region=ref.region)
    for node_id in node_ids:
        found.node_events[node_id] = cloud_nodes.node_events(sm, ref.hyperpod_name, node_id)


def _container_states(pod: dict[str, Any]) -> list[dict[str, Any]]:
    status = pod.get("status") or {}
    states = []
    for c in status.get("containerStatuses") or ():
        for when in ("state", "lastState"):
            for phase, detail in (c.get(when) or {}).items():
                if phase in ("terminated", "waiting") and detail.get("reason"):
                    states.append({"container": c.get("name"), "phase": phase,
                                   "reason": detail["reason"],
                                   "exit_code": detail.get("exitCode"),
                                   "message": detail.get("message")})
    return states


def _job_pods(api: Any, cluster: str, namespace: str | None, job: str
              ) -> tuple[str, list[dict[str, Any]]]:
    """The named job's namespace and pods (404 when the cluster has no such job there)."""
    found = jobs.find(api, job)
    if found is None or namespace not in (None, found["metadata"].get("namespace")):
        where = f" in namespace {namespace!r}" if namespace else ""
        raise ApiError(404, "not_found", f"no job named {job!r}{where} on cluster "
                                         f"{cluster!r} (list_jobs names its jobs)")
    return found["metadata"].get("namespace") or "default", jobs.pods(api, found)


def _logs(api: Any, pod: dict[str, Any], tail_lines: int) -> list[tuple[str, str]]:
    """(where, line) of each container's last lines — and of its run before its last
    restart, whose last words say why it died (an NCCL timeout kills the process)."""
    meta, spec = pod["metadata"], pod.get("spec") or {}
    ns = meta.get("namespace") or "default"
    restarted = {c.get("name") for c in (pod.get("status") or {}).get("containerStatuses") or ()
                 if c.get("restartCount")}
    lines = []
    for container in spec.get("containers") or ():
        name = container["name"]
        runs = [(f"{name} (previous run)", True)] if name in restarted else []
        for where, previous in [*runs, (name, False)]:
            try:
                text = kube.pod_log(api, ns, meta["name"], name, tail_lines, previous=previous)
            except kube.KubeError:
                continue  # not started yet (or no earlier run kept): no log to read
            lines += [(where, line) for line in text.splitlines() if line.strip()]
    return lines


def _pods(api: Any, found: Gathered, namespace: str | None, tail_lines: int,
          job: str | None = None) -> None:
    if job:
        namespace, pods = _job_pods(api, found.cluster, namespace, job)
    else:
        pods = [p for p in kube.iter_objects(api, "v1", "Pod", namespace)
                if namespace or (p["metadata"].get("namespace") or "default")
                not in SYSTEM_NAMESPACES]
    pods = [p for p in pods if (p.get("spec") or {}).get("nodeName")]
    pods.sort(key=lambda p: (p.get("status") or {}).get("startTime") or "", reverse=True)
    if len(pods) > MAX_PODS:
        found.read("pod_log", f"{len(pods)} pods: read the {MAX_PODS} started last "
                              "(name a namespace or a job to narrow it)")
    events: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for event in kube.iter_objects(api, "v1", "Event", namespace):
        involved = event.get("involvedObject") or {}
        if involved.get("kind") == "Pod" and event.get("type") == "Warning":
            key = (involved.get("namespace") or "default", involved.get("name"))
            events.setdefault(key, []).append({
                "reason": event.get("reason"), "message": event.get("message"),
                "at": event.get("lastTimestamp") or event.get("eventTime")})
    for pod in pods[:MAX_PODS]:
        meta = pod["metadata"]
        ns = meta.get("namespace") or "default"
        found.pods.append({"namespace": ns, "name": meta["name"],
                           "node_name": pod["spec"]["nodeName"],
                           "phase": (pod.get("status") or {}).get("phase"),
                           "containers": _container_states(pod),
                           "events": events.get((ns, meta["name"]), []),
                           "lines": _logs(api, pod, tail_lines)})
    found.read("pod_event")
    found.read("pod_log")


def gather(ref: ClusterRef, kind: str, namespace: str | None = None,
           tail_lines: int = 500, job: str | None = None) -> Gathered:
    """Everything the kind's rules read (see findings.py)."""
    found = Gathered(ref.name, list(ref.life))
    found.read("operation")
    _hyperpod(ref, found)
    api = _nodes(ref, found)
    suspects = [n["id"] for n in found.nodes if findings.node_suspect(n)]
    try:
        if kind != "creation":
            _node_events(ref, found, suspects)
        if api is not None:
            _conditions(api, found, suspects)
            if kind == "nccl":
                _pods(api, found, namespace, tail_lines, job)
    except UNREADABLE as exc:
        found.read("pod_log" if kind == "nccl" else "node_condition", _why(exc))
    return found


def diagnose(cluster: str, kind: str, query: dict[str, Any]) -> dict[str, Any]:
    """The diagnosis (DiagnosisSchema) of a found cluster; 404 for an unknown one."""
    ref = find(cluster)
    found = gather(ref, kind, query.get("namespace"), query["tail_lines"], query.get("job"))
    as_of = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {"cluster": cluster, "kind": kind, "as_of": as_of, "sources": found.sources,
            **findings.diagnosis(found, kind)}
