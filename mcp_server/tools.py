"""The declared MCP tool table: one row per tool, each a call of the hypd REST API.

A row holds what is the MCP server's own: the tool's name and title, the HTTP method and path
template it calls, a description written for an agent (and notes on arguments, for advice
only an agent needs, such as "ask the user"), whether it is mutating, and for a mutating
tool the status tool that tells when the change is done. What a tool's arguments may be is
not here: their types, enums, patterns, bounds, defaults and which are required come from
the API's OpenAPI document (mcp_server/routes.py), as do the replies' schemas (each tool's
output schema, with what the MCP server adds to a reply) and who may call each route.

Nothing here runs anything: `mcp_server/server.py` turns the rows into tools. Adding a
resource adds rows here and nothing else in this package.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp_server import lean
from mcp_server.routes import Param, Route, RouteBook, RouteBookError, may

Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]

WAIT_MAX_SECONDS = 60
WAIT_DEFAULT_SECONDS = 30

IDEMPOTENCY_KEY = "idempotency_key"
IDEMPOTENCY_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 255,
    "description": "Leave unset; a new one repeats a change on purpose.",
}
"""Sent as the Idempotency-Key header of a mutating tool's call (its bounds are the API's).
Written once for every mutating tool, so its description is short; the server's
instructions say the rest (server.py's INSTRUCTIONS: derived, the same for 10 minutes)."""


@dataclass(frozen=True)
class LocalArg:
    """An argument the MCP server itself uses and never sends (wait_operation's timeout)."""

    name: str
    schema: dict[str, Any]
    required: bool = False


@dataclass(frozen=True)
class ToolSpec:
    """One row of the table."""

    name: str
    method: Method
    path: str  # template, e.g. "/api/v1/networks/{name}"
    title: str
    description: str
    mutating: bool = False
    destructive: bool = False
    # For a mutating tool: the tool that tells when the change is done, and where each of
    # its arguments is found in the REST reply (dotted paths). A reply naming a
    # status_route (an operation) is followed with the tool that route maps to
    # (mcp_server/routemap.py); these name it for a reply without one (a change made at once).
    status_tool: str | None = None
    status_args_from: dict[str, str] = field(default_factory=dict)
    # The tool to follow its route with, where several call it: a route a reply names to be
    # followed (status_route) is waited on, not read once.
    follows: bool = False
    # A tool whose behaviour is more than one REST call names its runner in server.py.
    runner: str | None = None
    # Query parameters always sent (e.g. dry_run=true for a planning tool); not arguments.
    fixed_query: dict[str, str] = field(default_factory=dict)
    # Route inputs this tool does not offer (its runner sets them, or they belong to
    # another tool: create_cluster leaves dry_run to plan_cluster).
    hidden: tuple[str, ...] = ()
    local_args: tuple[LocalArg, ...] = ()
    # Advice for an agent appended to an argument's description from the document.
    notes: dict[str, str] = field(default_factory=dict)

    @property
    def read_only(self) -> bool:
        return not self.mutating


@dataclass(frozen=True)
class BoundTool:
    """A row together with its route as the OpenAPI document describes it."""

    spec: ToolSpec
    route: Route

    @property
    def params(self) -> tuple[Param, ...]:
        """The route's inputs this tool offers, in the document's order."""
        left_out = set(self.spec.hidden) | set(self.spec.fixed_query)
        return tuple(p for p in self.route.params if p.name not in left_out)

    @property
    def needs(self) -> str:
        """The role a call of this tool needs, from the route's declaration."""
        return self.route.role_for(self.spec.fixed_query)

    def visible_to(self, role: str) -> bool:
        return may(role, self.needs)

    def input_schema(self) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        required: list[str] = []
        for param in self.params:
            schema = dict(param.schema)
            note = self.spec.notes.get(param.name)
            if note:
                schema["description"] = _sentences(schema.get("description"), note)
            properties[param.name] = schema
            if param.required:
                required.append(param.name)
        for local in self.spec.local_args:
            properties[local.name] = dict(local.schema)
            if local.required:
                required.append(local.name)
        if self.spec.mutating:
            properties[IDEMPOTENCY_KEY] = dict(IDEMPOTENCY_SCHEMA)
        return {"type": "object", "properties": properties, "required": required,
                "additionalProperties": False}

    def output_schema(self) -> dict[str, Any]:
        """The reply as this tool returns it: its route's 2xx reply schemas from the
        document, with what the MCP server adds (the tools a reply's routes map to,
        mcp_server/routemap.py; a mutation's status_tool/status_args/poll_after_seconds and
        idempotency fields). Where the route answers more than one shape, any of them."""
        replies = [_as_returned(reply) for reply in self.route.replies] or [_ANY_OBJECT]
        if self.spec.runner == "wait_operation":
            return _waited(replies)
        if self.spec.mutating:
            replies = [_with_status(reply) for reply in replies]
        return _one_object(replies)

    def published_output_schema(self) -> dict[str, Any]:
        """What `tools/list` carries: the reply's top level (mcp_server/lean.py), which
        admits every reply `output_schema()` admits."""
        return lean.output(self.output_schema())


def _sentences(*parts: str | None) -> str:
    """The document's description and the row's note as one text, each a sentence."""
    said = [p.strip() for p in parts if p and p.strip()]
    return " ".join(p if p[-1] in ".!?" or p is said[-1] else p + "." for p in said)


_ANY_OBJECT: dict[str, Any] = {"type": "object"}

_STATUS_PROPERTIES: dict[str, Any] = {
    "status_tool": {
        "type": ["string", "null"],
        "description": "Call this tool with status_args until a terminal status (null when "
        "nothing needed doing). The MCP server's name for the REST reply's status_route.",
    },
    "status_args": {"type": "object"},
    "poll_after_seconds": {"type": "number"},
    "idempotency_key": {"type": "string"},
    "replayed": {"type": "boolean"},
    "note": {"type": "string"},
}
_STATUS_REQUIRED = ("status_tool", "status_args", "poll_after_seconds")
_ROUTE_SUFFIX = "_route"  # mcp_server/routemap.py's: a reply's path to read next
_ROUTE_TOOL: dict[str, Any] = {"type": "string", "description": "The tool that reads it."}
_ROUTE_ARGS: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}
_SUGGESTED = {"tool": {"type": "string", "description": "The tool that makes this call."},
              "args": {"type": "object", "description": "Its arguments."}}


def _is_object(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) or (
        kind is None and "properties" in schema)


def _as_returned(reply: dict[str, Any]) -> dict[str, Any]:
    """A reply schema as the tool returns it: a reply that is not an object is wrapped as
    `{"result": ...}` (server.py's `_reply`), and beside each `<what>_route` a reply names
    stand the `<what>_tool`/`<what>_args` the route map adds (and `tool`/`args` beside a
    suggested `rest` call)."""
    if not _is_object(reply) and not any(k in reply for k in ("oneOf", "anyOf")):
        reply = {"type": "object", "properties": {"result": reply}, "required": ["result"],
                 "additionalProperties": False}
    return _routed(reply)


def _routed(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_routed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: (_routed(value) if key not in ("properties", "enum", "required", "const",
                                                 "default", "example", "examples")
                 else value)
           for key, value in schema.items()}
    properties = schema.get("properties")
    if isinstance(properties, dict):
        props = {name: _routed(value) for name, value in properties.items()}
        for name in list(properties):
            if name.endswith(_ROUTE_SUFFIX):
                what = name[:-len(_ROUTE_SUFFIX)]
                props.setdefault(f"{what}_tool", dict(_ROUTE_TOOL))
                props.setdefault(f"{what}_args", dict(_ROUTE_ARGS))
        if "rest" in properties:
            for name, extra in _SUGGESTED.items():
                props.setdefault(name, dict(extra))
        out["properties"] = props
    return out


def _with_status(reply: dict[str, Any]) -> dict[str, Any]:
    """A mutation reply's schema with the fields server.py's `_mutation_reply` adds."""
    for branches in ("oneOf", "anyOf"):
        if isinstance(reply.get(branches), list):
            return {**reply, branches: [_with_status(b) for b in reply[branches]]}
    properties = {**(reply.get("properties") or {})}
    for name, schema in _STATUS_PROPERTIES.items():
        properties.setdefault(name, dict(schema))
    required = [*(reply.get("required") or [])]
    required += [name for name in _STATUS_REQUIRED if name not in required]
    return {**reply, "type": "object", "properties": properties, "required": required}


def _one_object(replies: list[dict[str, Any]]) -> dict[str, Any]:
    """MCP wants an output schema to be an object's: one shape as it is, several as anyOf."""
    if len(replies) == 1 and replies[0].get("type") == "object":
        return replies[0]
    return {"type": "object", "anyOf": replies}


def _waited(operation: list[dict[str, Any]]) -> dict[str, Any]:
    """wait_operation's reply (server.py's `_wait_operation`): the operation read last,
    its status, whether it is final, and how to go on waiting if it is not."""
    return {
        "type": "object",
        "properties": {
            "operation": _one_object(operation),
            "status": {"type": "string"},
            "terminal": {"type": "boolean"},
            "waited_seconds": {"type": "number"},
            "status_tool": {"type": "string"},
            "status_args": {"type": "object"},
            "poll_after_seconds": {"type": "number"},
            "note": {"type": "string"},
        },
        "required": ["operation", "status", "terminal", "waited_seconds"],
        "additionalProperties": False,
    }


def bind(book: RouteBook, specs: tuple[ToolSpec, ...] | None = None) -> dict[str, BoundTool]:
    """Every row with its route; raises RouteBookError when the document lacks a route, or
    a row names an input (hidden, noted) that its route does not have."""
    bound: dict[str, BoundTool] = {}
    for spec in specs if specs is not None else TOOLS:
        tool = BoundTool(spec, book.route(spec.method, spec.path))
        names = {p.name for p in tool.route.params}
        unknown = (set(spec.hidden) | set(spec.notes) | set(spec.fixed_query)) - names
        if unknown:
            raise RouteBookError(f"tool {spec.name}: {spec.method} {spec.path} has no input "
                                 f"named {', '.join(sorted(unknown))}")
        bound[spec.name] = tool
    return bound


def published(tools: Mapping[str, BoundTool], role: str, read_only: bool = False,
              only: Collection[str] | None = None) -> list[BoundTool]:
    """The tools a session publishes: those its role may call (by the routes' declarations),
    with `read_only` only the ones that change nothing, and with `only` (the tools of the
    session's toolsets, mcp_server/toolsets.py) only those."""
    return [t for t in tools.values()
            if t.visible_to(role) and not (read_only and t.spec.mutating)
            and (only is None or t.spec.name in only)]


# The sentences below end many descriptions; each says once, shortly, what the server's
# instructions (server.py's INSTRUCTIONS, read once per session) explain in full, so
# tools/list does not carry the explanation thirty times.
_FOLLOW = " Follow its operation with wait_operation to a terminal status."
_BY_OPERATION = {"operation_id": "operation.id"}

_IN_USE = (
    " Refused first with in_use naming each dependent (details.dependents): show the user "
    "what would break."
)
_FORCEABLE = " force=true breaks them: only when the user says so."
_DESTROY_NOTES = {
    "dry_run": "Call it first; show the user the plan.",
    "force": "Only when the user says so, having seen them.",
}

_CLUSTER_NOTES = {
    "availability_zone": "Ask the user; see list_availability_zones and list_instance_types.",
    "instance_type": "Ask the user.",
    "capacity_type": "Ask the user.",
    "fsx": "Only if the user asks for a shared file system; it costs per GiB-month.",
    "cidr": "Leave unset unless the user asked for one.",
}

CLUSTER_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_clusters", method="GET", path="/api/v1/clusters", title="List clusters",
        description="Clusters hypd created (found by tags, or by their operations when the "
        "create stopped before EKS existed) and imported ones, with EKS status, each stage's "
        "status and the cluster's state (created, being created, or its create cancelled or "
        "failed at a stage). Look here first before proposing a new cluster (then "
        "list_availability_zones and plan_cluster); get_cluster shows one in full.",
    ),
    ToolSpec(
        name="get_cluster", method="GET", path="/api/v1/clusters/{name}", title="Get a cluster",
        description="One cluster: EKS and HyperPod status, each create stage's status "
        "(succeeded, failed with its error, cancelled, skipped, pending, running), the "
        "cluster's state in words, instance groups, node counts by health, features and "
        "recent HyperPod events. After a create (or a delete) that was cancelled or failed, "
        "left_in_aws lists what it made that still exists in AWS and its hourly cost (priced "
        "as plan_cluster prices; an unknown price stays unknown — say so), and next_actions "
        "names the two ways on, as tool calls: resume (retry_operation) or delete what was "
        "made (delete_cluster). Tell the user what is left and what it costs per hour, and "
        "ask which way to go. A failed stage: diagnose_cluster kind creation; unhealthy "
        "nodes: list_nodes or diagnose_cluster kind node-health.",
        notes={"name": "Name of the cluster."},
    ),
    ToolSpec(
        name="plan_cluster", method="POST", path="/api/v1/clusters",
        fixed_query={"dry_run": "true"}, title="Plan a cluster (dry run)",
        description="What create_cluster would make (every stage, step and resource), an "
        "hourly cost estimate and the quota/reservation preflight, changing nothing. The cost "
        "comes from AWS's on-demand list prices (the AWS Price List): each item names its "
        "source (SKU, when it was read); basis spot or training-plan has no hourly figure, "
        "and unknown means the price could not be read — say so, never fill in a figure. "
        "The eks_cluster resource's support says whether its Kubernetes version is in EKS "
        "standard or extended support (extended adds an eks_extended_support cost item). "
        "Show this to the user before create_cluster.",
        notes=_CLUSTER_NOTES,
    ),
    ToolSpec(
        name="create_cluster", method="POST", path="/api/v1/clusters", title="Create a cluster",
        description="Create an EKS + HyperPod cluster in stages: network, eks (8-12 minutes "
        "on AWS), activate, dependencies, hyperpod, storage (the shared S3 bucket at /s3). "
        "Ask the user only the decisions (zone, instance type, count, capacity type); CIDRs, "
        "subnets, route tables and security groups are the panel's job. Refused with "
        "precondition_failed when a quota or reservation does not cover the request." + _FOLLOW,
        hidden=("dry_run",), notes=_CLUSTER_NOTES,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="delete_cluster", method="DELETE", path="/api/v1/clusters/{name}",
        title="Delete a cluster",
        description="Delete everything hypd made for the cluster, in reverse order (load "
        "balancers and volume claims first). The shared S3 bucket is kept unless delete_data "
        "is true. An imported cluster is only forgotten; its AWS resources are untouched. "
        "Refused while work runs on it (training jobs, endpoints, downloads, workloads using "
        "its storage), and — force or not — while another cluster runs in the network it "
        "would remove." + _IN_USE + _FORCEABLE + " Confirm with the user first." + _FOLLOW,
        notes={"name": "Name of the cluster.",
               "delete_data": "Only when the user explicitly asks to delete the data.",
               **_DESTROY_NOTES},
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="run_cluster_stage", method="POST",
        path="/api/v1/clusters/{name}/stages/{stage}/run", title="Re-run a cluster stage",
        description="Run one stage of the cluster's create again on its own (after fixing "
        "what made it fail). It adopts what exists and creates only what is missing." + _FOLLOW,
        notes={"name": "Name of the cluster."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="import_cluster", method="POST", path="/api/v1/clusters/import",
        title="Import an existing cluster",
        description="Adopt an existing EKS cluster (and its HyperPod cluster) read-only: it "
        "becomes listable and usable; deleting it in hypd never deletes its AWS resources. "
        "Takes effect at once; confirm with get_cluster.",
        mutating=True, status_tool="get_cluster", status_args_from={"name": "name"},
    ),
    ToolSpec(
        name="get_kubeconfig", method="GET", path="/api/v1/clusters/{name}/kubeconfig",
        title="Get a kubeconfig",
        description="A kubeconfig for the cluster that authenticates with `aws eks get-token` "
        "(the user's own AWS credentials decide what kubectl may do). It is JSON, which "
        "kubectl reads as it is; the same file as YAML is GET "
        "/api/v1/clusters/{name}/kubeconfig?format=yaml (the dashboard's download). Offer it "
        "after get_cluster shows the cluster ready.",
        notes={"name": "Name of the cluster."}, hidden=("format",),
    ),
    ToolSpec(
        name="get_active_cluster", method="GET", path="/api/v1/active-cluster",
        title="Get the active cluster",
        description="The cluster this token works on by default (each token has its own; "
        "null when none is chosen). Creating a cluster makes it the creator's active one; "
        "set_active_cluster changes it.",
    ),
    ToolSpec(
        name="set_active_cluster", method="PUT", path="/api/v1/active-cluster",
        title="Set the active cluster",
        description="Choose the cluster this token works on by default. Takes effect at once; "
        "confirm with get_active_cluster.",
        mutating=True, status_tool="get_active_cluster",
    ),
    ToolSpec(
        name="preflight", method="GET", path="/api/v1/preflight", title="Preflight capacity",
        description="Read-only checks that service quotas and training-plan reservations cover "
        "a capacity request, with what is missing and how to ask for it. Run before proposing "
        "a cluster with high-end GPUs; if a check fails, report it and stop before "
        "plan_cluster or create_cluster.",
    ),
)


_GROUP_NOTES = {"cluster": "Name of the cluster.", "name": "Name of the instance group."}

GROUP_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_instance_groups", method="GET",
        path="/api/v1/clusters/{cluster}/instance-groups",
        title="List instance groups",
        description="A cluster's instance groups read from AWS: instance type, current and "
        "target counts, capacity type (on-demand, spot, training-plan), EFA mode, zone, "
        "labels and taints, nodes by status, and the operation changing each. Look here "
        "before add_instance_group or update_instance_group.",
        notes={"cluster": "Name of the cluster."},
    ),
    ToolSpec(
        name="get_instance_group", method="GET",
        path="/api/v1/clusters/{cluster}/instance-groups/{name}", title="Get an instance group",
        description="One instance group of a cluster, read from AWS (see list_instance_groups "
        "for what it carries).",
        notes=_GROUP_NOTES,
    ),
    ToolSpec(
        name="add_instance_group", method="POST",
        path="/api/v1/clusters/{cluster}/instance-groups", title="Add an instance group",
        description="Add capacity to a cluster as a new instance group (HyperPod UpdateCluster). "
        "Ask the user the decisions: instance type, count, capacity type (on-demand, spot, or a "
        "training plan's ARN), zone; these, the EFA mode and the subnet are fixed for the "
        "group's life. hypd makes the group's /20 subnet in the zone (a training plan's zone "
        "wins); leave subnet_id unset unless the user names one. Refused with "
        "precondition_failed when a quota or the plan does not cover it." + _FOLLOW,
        notes={"cluster": "Name of the cluster.",
               "instance_type": "Ask the user; see list_instance_types for the zone.",
               "capacity_type": "Ask the user.",
               "availability_zone": "Ask the user, or leave unset for the cluster's zone."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="update_instance_group", method="PATCH",
        path="/api/v1/clusters/{cluster}/instance-groups/{name}",
        title="Change an instance group",
        description="Change an instance group: pass only what the user wants changed (count, "
        "threads per core, labels, taints, deep health checks, lifecycle script). Instance "
        "type, capacity type, EFA mode and placement cannot change (immutable_field: add a new "
        "group instead). Already as asked: changed false and no status tool." + _FOLLOW,
        notes=_GROUP_NOTES,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="delete_instance_group", method="DELETE",
        path="/api/v1/clusters/{cluster}/instance-groups/{name}",
        title="Delete an instance group",
        description="Delete an instance group, its nodes and its own compute subnet. Refused "
        "for the cluster's last group, and while pods that would not come back elsewhere "
        "(bare pods, a training job's) run on it." + _IN_USE + _FORCEABLE
        + " Confirm with the user first." + _FOLLOW,
        notes={**_GROUP_NOTES, **_DESTROY_NOTES},
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
)


SOFTWARE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="update_cluster_software", method="POST",
        path="/api/v1/clusters/{name}/software-update", title="Update node software",
        description="Update the HyperPod software (AMI, drivers, agents) of a cluster's nodes "
        "(every group, or the ones named), rolled out node by node by AWS; pods on a node being "
        "updated are disrupted, so confirm with the user and prefer a quiet time. Refused while "
        "another change holds the cluster." + _FOLLOW,
        notes={"name": "Name of the cluster."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="upgrade_kubernetes", method="POST",
        path="/api/v1/clusters/{name}/kubernetes-version", title="Upgrade Kubernetes",
        description="Upgrade a cluster's EKS Kubernetes version by one minor version (EKS allows "
        "no bigger step; get_cluster shows the current one), then move its EKS add-ons to the "
        "new version's defaults. The control plane stays available; it takes 10-20 minutes on "
        "AWS and cannot be undone: confirm with the user. Already at that version: changed "
        "false." + _FOLLOW,
        notes={"name": "Name of the cluster."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
)


_NODE_NOTES = {"cluster": "Name of the cluster.",
               "node_ids": "Node ids from list_nodes or get_node, each once."}
_NODE_FOLLOW = (" Sent in batches of AWS's limit, each waited on before the next; per-node "
                "refusals fail the operation and are named in the failed step's detail."
                + _FOLLOW)

NODE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_nodes", method="GET", path="/api/v1/clusters/{cluster}/nodes",
        title="List a cluster's nodes",
        description="A cluster's nodes, a page at a time: each HyperPod instance (group, "
        "type, status and message) with its Kubernetes Node (ready, health label, "
        "cordoned). Filter with health (e.g. UnschedulablePendingReboot, Unknown), status "
        "(e.g. Failure) or instance_group; pass next_cursor as cursor until it is null. "
        "Start every node investigation here, then get_node; it changes nothing.",
        notes={"cluster": "Name of the cluster."},
    ),
    ToolSpec(
        name="get_node", method="GET", path="/api/v1/clusters/{cluster}/nodes/{node_id}",
        title="Get a node",
        description="One node in full: HyperPod's status and message, zone, IP, capacity "
        "type, its Kubernetes conditions and taints, the pods on it (what a reboot, replace "
        "or delete would disrupt) and its recent HyperPod events. Read-only: investigate "
        "with it before proposing reboot_nodes, then replace_nodes.",
        notes={"cluster": "Name of the cluster.", "node_id": "From list_nodes."},
    ),
    ToolSpec(
        name="reboot_nodes", method="POST", path="/api/v1/clusters/{cluster}/nodes/reboot",
        title="Reboot nodes",
        description="Reboot Running nodes (soft recovery: the OS restarts, the instance and "
        "its disks stay). Pods on them are disrupted and rescheduled by their controllers; "
        "bare pods are lost. The first remedy after get_node, before replace_nodes; confirm "
        "with the user and name the pods get_node lists." + _NODE_FOLLOW,
        notes=_NODE_NOTES,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="replace_nodes", method="POST", path="/api/v1/clusters/{cluster}/nodes/replace",
        title="Replace nodes",
        description="Replace Running or Failure nodes: each instance is terminated and a new "
        "one (a new node id) joins the same group. Data on its local disks is lost; pods are "
        "evicted and rescheduled by their controllers. Only when a reboot did not help or "
        "the node is in Failure. Refused while pods that would not come back elsewhere (bare "
        "pods, a training job's) run on them." + _IN_USE + _FORCEABLE
        + " Confirm with the user first." + _NODE_FOLLOW,
        notes={**_NODE_NOTES, **_DESTROY_NOTES},
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="delete_nodes", method="POST", path="/api/v1/clusters/{cluster}/nodes/delete",
        title="Delete nodes",
        description="Delete nodes for good: the instances are terminated, not replaced, and "
        "each one's instance group shrinks by one. Pods are evicted; local data is lost. "
        "Only to shrink a group by chosen nodes, never as a remedy for a sick node (use "
        "replace_nodes). Refused while pods that would not come back elsewhere (bare pods, a "
        "training job's) run on them." + _IN_USE + _FORCEABLE
        + " Confirm with the user first." + _NODE_FOLLOW,
        notes={**_NODE_NOTES, **_DESTROY_NOTES},
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
)


_STORAGE_NOTES = {"cluster": "Name of the cluster.",
                  "name": "Name of the storage item (its claim's name)."}

STORAGE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_storage", method="GET", path="/api/v1/clusters/{cluster}/storage",
        title="List a cluster's storage",
        description="Storage mounted in a cluster: S3 buckets and FSx for Lustre file systems, "
        "each a PersistentVolumeClaim pods mount by name (the create's shared bucket is "
        "hypd-s3, at /s3), with the bucket or file system, its state (creating, available, "
        "deleting, failed, incomplete) and the workloads using it. Look here before "
        "add_storage; get_storage shows one item.",
        notes={"cluster": "Name of the cluster."},
    ),
    ToolSpec(
        name="get_storage", method="GET", path="/api/v1/clusters/{cluster}/storage/{name}",
        title="Get a storage item",
        description="One storage item of a cluster: its claim and namespace, bucket or file "
        "system (lifecycle, DNS and mount name), state, the workloads mounting it, and whether "
        "removing it deletes data (deletes_data). Read it before remove_storage.",
        notes=_STORAGE_NOTES,
    ),
    ToolSpec(
        name="add_storage", method="POST", path="/api/v1/clusters/{cluster}/storage",
        title="Add storage to a cluster",
        description="Mount storage in a cluster as a PersistentVolumeClaim named after it: "
        "kind s3 (a new bucket hypd makes, or an existing bucket the user names in "
        "s3.bucket, which hypd never deletes) or kind fsx (an FSx for Lustre file system, "
        "5-10 minutes on AWS, billed per GiB-month: confirm with the user)." + _FOLLOW,
        notes={"cluster": "Name of the cluster.", "namespace": "It must exist."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="remove_storage", method="DELETE",
        path="/api/v1/clusters/{cluster}/storage/{name}", title="Remove storage",
        description="Unmount a storage item: delete its claim and volume, and its bucket or "
        "file system only if hypd made it for this item (get_storage says so in "
        "deletes_data; a bucket the user named is never deleted). Refused while running "
        "workloads mount it: they must stop first (there is no force)." + _IN_USE
        + " Confirm with the user first." + _FOLLOW,
        notes={**_STORAGE_NOTES, "dry_run": _DESTROY_NOTES["dry_run"]},
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
)


_OPERATION_NOTES = {"operation_id": "Operation id (op_...)."}

_CORE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="whoami", method="GET", path="/api/v1/auth/whoami", title="Who am I",
        description="Name and role (viewer or operator) of the token this server calls the "
        "hypd API with. A viewer can read and diagnose; only an operator can change things. "
        "Call it first when unsure whether a change is possible; then list_clusters.",
    ),
    ToolSpec(
        name="list_availability_zones", method="GET",
        path="/api/v1/discovery/availability-zones", title="List availability zones",
        description="Availability zones of a region, with zone id and state. Call this before "
        "asking the user to choose a zone, and offer only zones whose state is available; "
        "then list_instance_types for the zone chosen.",
    ),
    ToolSpec(
        name="list_instance_types", method="GET", path="/api/v1/discovery/instance-types",
        title="List instance types in a zone",
        description="HyperPod instance types offered in one availability zone, with vCPUs, "
        "memory, accelerator kind/name/count/memory and EFA support (max_efa_interfaces > 1 "
        "allows the efa-only interface mode). Call this before proposing an instance type; "
        "for high-end GPUs run preflight next, then plan_cluster or add_instance_group.",
        notes={"availability_zone": "From list_availability_zones."},
    ),
    ToolSpec(
        name="create_network", method="POST", path="/api/v1/networks",
        title="Create a network",
        description="Create a network for clusters: a VPC with public and private subnets in "
        "each chosen availability zone, internet and NAT gateways, routes, a security group "
        "and an S3 endpoint, all tagged as managed by hypd. CIDRs, route tables and security "
        "groups are the panel's job: leave cidr unset unless the user asked for one. Ask the "
        "user only which availability zones to use (see list_availability_zones), or leave "
        "them unset for the first two available." + _FOLLOW,
        notes={"cidr": "Set it only when the user asks or it overlaps a network they must "
               "peer with."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="list_networks", method="GET", path="/api/v1/networks", title="List networks",
        description="Networks managed by hypd in a region (read from AWS by their tags), with "
        "VPC, subnets, gateways and state. Look here before create_network: reuse one if "
        "it fits; get_network shows one in full.",
    ),
    ToolSpec(
        name="get_network", method="GET", path="/api/v1/networks/{name}", title="Get a network",
        description="One network managed by hypd: VPC id, CIDR, state, availability zones, "
        "subnets (id, CIDR, zone, public or private), gateways, security group, S3 endpoint. "
        "Read-only; delete_network removes it.",
        notes={"name": "Name of the network."},
    ),
    ToolSpec(
        name="delete_network", method="DELETE", path="/api/v1/networks/{name}",
        title="Delete a network",
        description="Delete a hypd-managed network and everything in it that hypd created "
        "(found by tags, never by name alone). Refused while a cluster (hypd's, imported or "
        "anyone's) or any other network interface is in its VPC, or another operation runs on "
        "it. There is no force: AWS would refuse to delete the VPC anyway, after the NAT "
        "gateway had gone." + _IN_USE + " Confirm with the user first." + _FOLLOW,
        notes={"name": "Name of the network.", "dry_run": _DESTROY_NOTES["dry_run"]},
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="list_operations", method="GET", path="/api/v1/operations",
        title="List operations",
        description="Operations (the panel's long-running changes), newest first, with status "
        "and steps. Filter by status, kind (e.g. network.create) or target (e.g. network/lab). "
        "Use it to find what is running before starting a change on the same target; follow "
        "a running one with wait_operation.",
    ),
    ToolSpec(
        name="get_operation", method="GET", path="/api/v1/operations/{operation_id}",
        title="Get an operation",
        description="One operation now: status (queued, running, succeeded, failed, "
        "cancelled), each step's phase, attempts and detail, and the error if it failed. "
        "To wait for it to finish, use wait_operation instead of calling this repeatedly.",
        hidden=("wait", "after"), notes=_OPERATION_NOTES,
    ),
    ToolSpec(
        name="wait_operation", method="GET", path="/api/v1/operations/{operation_id}",
        title="Wait for an operation",
        description="Wait until an operation reaches a terminal status (succeeded, failed, "
        "cancelled) or timeout_seconds pass, then return it; no need to sleep between calls. "
        "If terminal is false, call wait_operation again with the same operation_id. A cluster "
        "takes 10-20 minutes on AWS: keep calling until it is terminal. If it failed, read "
        "operation.error and the failed step's detail before proposing retry_operation; a "
        "cluster's create that failed or was cancelled: get_cluster says what it left in AWS "
        "and what that costs per hour.",
        hidden=("wait", "after"), notes=_OPERATION_NOTES,
        local_args=(LocalArg("timeout_seconds", {
            "type": "integer", "minimum": 1, "maximum": WAIT_MAX_SECONDS,
            "default": WAIT_DEFAULT_SECONDS,
            "description": "How long to wait at most, in seconds."}),),
        runner="wait_operation",
        follows=True,
    ),
    ToolSpec(
        name="cancel_operation", method="POST", path="/api/v1/operations/{operation_id}/cancel",
        title="Cancel an operation",
        description="Ask a queued or running operation to stop. A queued one is cancelled at "
        "once; a running one stops at its next step boundary (what a finished step created "
        "stays in AWS, and is billed). Follow it with wait_operation until it is terminal. "
        "For a cluster's create the reply's next_actions point on: get_cluster (once "
        "cancelled: each stage as it ended, what is left in AWS and its hourly cost), then "
        "retry_operation (resume) or delete_cluster (delete what was made) — the user "
        "chooses. Confirm with the user before cancelling.",
        notes=_OPERATION_NOTES,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="retry_operation", method="POST", path="/api/v1/operations/{operation_id}/retry",
        title="Retry an operation",
        description="Run a failed or cancelled operation again from its failed step, keeping "
        "the same operation id and what earlier steps created; the steps a cancel skipped "
        "run. A cluster's operation is refused once the cluster was deleted after it. Fix "
        "the cause reported in its error first (quota, permissions, a conflicting "
        "resource)." + _FOLLOW,
        notes=_OPERATION_NOTES,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
)

FEATURE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="get_features", method="GET", path="/api/v1/clusters/{cluster}/features",
        title="Get a cluster's managed features",
        description="The managed features (training_operator, inference_operator, "
        "tiered_checkpointing, autoscaling, observability, task_governance, spaces) as they "
        "actually "
        "are: state on/off/partial/settling/failed, each part (add-on, IAM role and its trust, "
        "service account, Pod Identity association, HyperPod setting) present and as wanted "
        "or not, what each needs from other features (requires), its identity mechanism, and "
        "each instance group's autoscaling min/max/current. Read it before update_features; "
        "it changes nothing.",
        notes={"cluster": "Name of the cluster."},
    ),
    ToolSpec(
        name="update_features", method="PATCH", path="/api/v1/clusters/{cluster}/features",
        title="Turn managed features on or off",
        description="Turn one managed feature on or off or change its options, passing only "
        "what the user wants changed, e.g. {\"training_operator\": {\"enabled\": true}} or "
        "{\"autoscaling\": {\"enabled\": true, \"groups\": {\"workers\": {\"min\": 0, "
        "\"max\": 4}}}}. What the feature needs (cert-manager, the Pod Identity agent, its IAM "
        "role) is installed first; turning it off removes its own parts and keeps what another "
        "enabled feature still needs. One differing feature per call. Managed autoscaling "
        "manages HyperPod instance groups only, not general EC2 capacity: say so to the user. "
        "Already as asked: changed false and no status tool. Turning one off is refused while "
        "work uses it (training_operator: jobs not finished; inference_operator: managed "
        "endpoints; tiered_checkpointing: pods writing checkpoints; autoscaling: pods on "
        "autoscaled nodes; task_governance: pods admitted through a queue; spaces: every "
        "space on the cluster)." + _IN_USE
        + _FORCEABLE + _FOLLOW,
        notes={"cluster": "Name of the cluster.", **_DESTROY_NOTES},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
)


DIAGNOSTIC_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="diagnose_cluster", method="GET",
        path="/api/v1/clusters/{cluster}/diagnostics/{kind}", title="Diagnose a cluster",
        description="Read-only diagnosis; a viewer may run it. kind creation: why a create "
        "failed (the failed stage's step and AWS's message, HyperPod's failure and error "
        "events, nodes in Failure), or that it was cancelled or never finished (never "
        "healthy then: what it made stays in AWS; suggestions get_cluster, retry_operation, "
        "delete_cluster). kind node-health: nodes in Failure, marked "
        "UnschedulablePendingReboot/UnschedulablePendingReplacement by HyperPod's health "
        "label, or not Ready, with their events. kind nccl: the pods' last log lines, "
        "warning events and container states matched against known failures (NCCL "
        "timeouts/errors, EFA errors, NVIDIA Xid errors, out of memory). Returns findings, "
        "each citing its evidence, and suggestions ordered investigate -> reboot -> replace "
        "(-> retry a stage), each naming the tool and arguments to call (get_node, "
        "reboot_nodes, replace_nodes, run_cluster_stage). Nothing is run: present the "
        "findings, run the investigate steps, and call a mutating suggestion only after the "
        "user agrees. Ask the user nothing first; for nccl, pass job when the user names the "
        "failing training job (list_jobs lists them): only its pods are read, so another job's "
        "errors are never cited; else namespace when they name the workload's.",
        notes={"cluster": "Name of the cluster."},
    ),
)


_JOB_NOTES = {"cluster": "Name of the cluster.", "job": "Name of the job."}

JOB_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="get_training_limits", method="GET", path="/api/v1/training/limits",
        title="Training recipes and limits",
        description="The recipes a job can be submitted with (torchrun, llama-factory, "
        "ms-swift, verl, or an own pytorch/ray command) and what each needs, and what elastic "
        "training (max_nodes above nodes) cannot be combined with: spot capacity, managed "
        "tiered checkpointing, checkpointless training, with the source. Read it before "
        "proposing a job; submit_job follows.",
    ),
    ToolSpec(
        name="submit_job", method="POST", path="/api/v1/clusters/{cluster}/jobs",
        title="Submit a training job",
        description="Submit a training job from a recipe. torchrun (script under /s3), "
        "llama-factory and ms-swift (config under /s3) run as HyperPodPyTorchJob under HyperPod's "
        "training operator: the cluster's training_operator feature must be on (else "
        "precondition_failed naming it: turn it on with update_features), the image must "
        "contain the HyperPod elastic agent and the job launches with hyperpodrun. verl runs as "
        "a RayJob (KubeRay is installed first when missing). Every pod mounts the cluster's "
        "bucket at /s3; output and "
        "checkpoints go to /s3/jobs/<job>/. run_policy.job_max_retry_count is the recovery "
        "budget. A job the cluster can never hold is refused with exceeds_capacity: its "
        "message and details give the numbers (asked, can_hold, per group); tell the user "
        "and propose fewer nodes or GPUs, or more capacity — never resubmit it unchanged. "
        "Returns the operation that makes the job (namespace, MLflow identity, KubeRay when "
        "needed, the job): follow it with wait_operation, then read the job with get_job (its "
        "waiting field says why pods wait for capacity; it reads submitting until the "
        "operation has made it).",
        notes={"cluster": "Name of the cluster.",
               "max_nodes": "Elastic training only; see get_training_limits for what it "
               "excludes."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="list_jobs", method="GET", path="/api/v1/clusters/{cluster}/jobs",
        title="List training jobs",
        description="A cluster's training jobs with state (submitting, pending, running, "
        "restarting, succeeded, failed, deleting), recipe, pods and restarts; filter by state "
        "or recipe. get_job reads one in full.",
        notes={"cluster": "Name of the cluster."},
    ),
    ToolSpec(
        name="get_job", method="GET", path="/api/v1/clusters/{cluster}/jobs/{job}",
        title="Get a training job",
        description="One training job now: state and message, pods with their nodes and "
        "restarts, the recovery budget (restarts used of job_max_retry_count, remaining), "
        "waiting (each pod the scheduler cannot place yet, with its reason and message, "
        "e.g. Insufficient nvidia.com/gpu), "
        "recent events, its paths under /s3, and its mlflow block (tracking server and "
        "experiment it logs to; get_mlflow_ui_url opens the MLflow UI). Call it again to "
        "follow a job; read get_job_logs for what it printed.",
        notes=_JOB_NOTES,
    ),
    ToolSpec(
        name="delete_job", method="DELETE", path="/api/v1/clusters/{cluster}/jobs/{job}",
        title="Delete a training job",
        description="Stop and delete a training job; its pods go with it (what it wrote under "
        "/s3 stays). A job that has not finished is live work: refused, naming its pods."
        + _IN_USE + _FORCEABLE + " Confirm with the user first. Returns the operation that "
        "deletes it and waits until its pods are gone: follow it with wait_operation.",
        notes={**_JOB_NOTES, **_DESTROY_NOTES},
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="get_job_logs", method="GET", path="/api/v1/clusters/{cluster}/jobs/{job}/logs",
        title="Read a training job's logs",
        description="The last lines a job printed (tail, at most 10000; default 100), each "
        "tagged with its pod and time, oldest first; since (RFC 3339) reads from a time on, "
        "pod narrows to one pod, previous=true reads a restarted container's previous run "
        "(why it failed). Bounded: ask for a small tail first. get_job shows the job's state.",
        notes=_JOB_NOTES,
    ),
)

MLFLOW_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="get_mlflow", method="GET", path="/api/v1/clusters/{cluster}/mlflow",
        title="Get a cluster's MLflow tracking server",
        description="The cluster's MLflow tracking server (SageMaker managed MLflow) that "
        "training jobs log metrics to: state (none, creating, attaching, ready, settling, "
        "detaching, failed, unavailable), ARN, URL, status, whether hypd made it, and the role "
        "jobs log as. Look here before set_mlflow; get_job shows the tracking server and "
        "experiment of one job.",
        notes={"cluster": "Name of the cluster."},
    ),
    ToolSpec(
        name="set_mlflow", method="PUT", path="/api/v1/clusters/{cluster}/mlflow",
        title="Create or attach an MLflow tracking server",
        description="Give a cluster an MLflow tracking server: without tracking_server, hypd "
        "creates one (hypd-<cluster>, artifacts under mlflow/ of the cluster's bucket; about 20 "
        "minutes on AWS and billed per hour: confirm with the user); with tracking_server (a "
        "name or ARN in the cluster's region), an existing one is attached and never deleted "
        "by hypd. Jobs submitted afterwards (submit_job) get MLFLOW_TRACKING_URI, "
        "MLFLOW_EXPERIMENT_NAME and an identity allowed to log to it. Already attached: "
        "changed false." + _FOLLOW,
        notes={"cluster": "Name of the cluster.", "tracking_server": "Ask the user whether "
               "to attach an existing one (list them with the AWS console or CLI)."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="detach_mlflow", method="DELETE", path="/api/v1/clusters/{cluster}/mlflow",
        title="Detach the MLflow tracking server",
        description="Detach a cluster's MLflow tracking server: new jobs stop logging to it; "
        "the jobs' role and Pod Identity associations are removed; the tracking server and "
        "its runs are deleted only when hypd made it (get_mlflow says so in made_by_hypd). "
        "Refused while jobs log to it (they would lose their identity mid-run)." + _IN_USE
        + _FORCEABLE + " Confirm with the user first." + _FOLLOW,
        notes={"cluster": "Name of the cluster.", **_DESTROY_NOTES},
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="get_mlflow_ui_url", method="GET", path="/api/v1/clusters/{cluster}/mlflow/ui-url",
        title="Open the MLflow UI",
        description="A presigned URL of the cluster's MLflow UI (experiments, runs, metrics "
        "such as training throughput), valid 5 minutes to open. Give it to the user to open; "
        "it is a credential: never log, store or repeat it elsewhere. get_mlflow tells whether "
        "a tracking server is attached.",
        notes={"cluster": "Name of the cluster."},
    ),
)


_ENDPOINT_NOTES = {"cluster": "Name of the cluster.", "name": "Name of the endpoint."}

ENDPOINT_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_endpoints", method="GET", path="/api/v1/clusters/{cluster}/endpoints",
        title="List a cluster's inference endpoints",
        description="Inference endpoints of a cluster: kind (managed, vllm, sglang, custom), "
        "model, replicas ready, Services and load balancer address, state (creating, "
        "deploying, ready, updating, deleting, failed, incomplete), and for a model pool "
        "which worker serves which model. Read-only; get_endpoint reads one in full.",
        notes={"cluster": "Name of the cluster."},
    ),
    ToolSpec(
        name="get_endpoint", method="GET", path="/api/v1/clusters/{cluster}/endpoints/{name}",
        title="Get an inference endpoint",
        description="One inference endpoint as the cluster holds it: its request, state, "
        "servers ready, Services, load balancer address, a pool's workers and their models, "
        "and waiting: servers the scheduler cannot place yet, with its reason. Read-only; "
        "invoke_endpoint tests it with one request.",
        notes=_ENDPOINT_NOTES,
    ),
    ToolSpec(
        name="create_endpoint", method="POST", path="/api/v1/clusters/{cluster}/endpoints",
        title="Create an inference endpoint",
        description="Deploy a model from the cluster's bucket (models/<model>, see "
        "list_models): kind managed (the HyperPod inference operator; its feature must be on, "
        "see get_features; tiered KV cache and intelligent routing) or vllm, sglang or custom "
        "(a Deployment hypd makes) behind an in-cluster Service, an external NLB "
        "(load_balancer, internet-facing: confirm with the user) or a model pool (warm "
        "workers reassigned by reassign_endpoint_worker). SGLang with several replicas gets "
        "the SGLang router and KEDA autoscaling. More replicas times GPUs than the cluster can "
        "ever hold is refused with exceeds_capacity naming the numbers." + _FOLLOW,
        notes={"cluster": "Name of the cluster.",
               "gpus": "Ask the user how many GPUs each server uses; never guess it.",
               "instance_type": "Ask the user; see list_instance_types."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="update_endpoint", method="PATCH",
        path="/api/v1/clusters/{cluster}/endpoints/{name}", title="Change an inference endpoint",
        description="Change only what the user asked: replicas, autoscaling bounds or routing. "
        "Already as asked: changed false and no status tool. A pool scales in by removing "
        "unassigned workers only (refused with conflict otherwise). Replicas or an "
        "autoscaling max the cluster can never hold: exceeds_capacity with the numbers."
        + _FOLLOW,
        notes=_ENDPOINT_NOTES,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="delete_endpoint", method="DELETE",
        path="/api/v1/clusters/{cluster}/endpoints/{name}", title="Delete an inference endpoint",
        description="Delete the endpoint and everything hypd made for it (servers, Services "
        "and load balancer, router, autoscaler). The model stays in the bucket. A model pool "
        "is refused while its workers serve models (named)." + _IN_USE + _FORCEABLE
        + " Confirm with the user first." + _FOLLOW,
        notes={**_ENDPOINT_NOTES, **_DESTROY_NOTES},
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="reassign_endpoint_worker", method="POST",
        path="/api/v1/clusters/{cluster}/endpoints/{name}/reassign",
        title="Reassign a pool worker to a model",
        description="Point one worker of a model pool at another of the pool's models (or "
        "unassigned): only its model label changes, the worker is kept and reloads. Read the "
        "workers with get_endpoint first." + _FOLLOW,
        notes=_ENDPOINT_NOTES,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="invoke_endpoint", method="POST",
        path="/api/v1/clusters/{cluster}/endpoints/{name}/invoke",
        title="Send a test completion to an endpoint",
        description="Send one OpenAI-compatible completion (a prompt and a token bound) to the "
        "endpoint's own Service and return the server's answer; a pool needs the model to "
        "ask. It uses the endpoint's GPUs, so it is an operator's; it starts no operation "
        "(get_endpoint shows the endpoint afterwards).",
        notes=_ENDPOINT_NOTES,
        mutating=True, status_tool="get_endpoint",
        status_args_from={"cluster": "cluster", "name": "endpoint"},
    ),
)


MODEL_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_models", method="GET", path="/api/v1/clusters/{cluster}/models",
        title="List the models in a cluster's bucket",
        description="The models under models/ in the cluster's shared bucket (files, bytes, "
        "location) and the downloads running or failed with their progress. Look here before "
        "create_endpoint or download_model. Read-only.",
        notes={"cluster": "Name of the cluster."},
    ),
    ToolSpec(
        name="download_model", method="POST", path="/api/v1/clusters/{cluster}/models",
        title="Download a model into a cluster's bucket",
        description="Fetch a model into the cluster's bucket under models/<name>/ as a "
        "Kubernetes Job: a Hugging Face model (repo org/model and revision) or an S3 prefix "
        "to copy. For a gated model, name the Kubernetes Secret holding the user's hub token "
        "(hub_token_secret); never ask for or pass the token itself. The operation reports "
        "files and bytes as they arrive." + _FOLLOW,
        notes={"cluster": "Name of the cluster.",
               "repo": "Ask the user which model (and revision) they want."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="remove_model", method="DELETE", path="/api/v1/clusters/{cluster}/models/{name}",
        title="Remove a model from a cluster's bucket",
        description="Delete every file of a model under models/<name>/ in the cluster's "
        "bucket, for good (not while it downloads). Refused while endpoints serve it (a "
        "server restarting or scaling out would find no weights)." + _IN_USE + _FORCEABLE
        + " Confirm with the user first." + _FOLLOW,
        notes={"cluster": "Name of the cluster.", "name": "Name of the model (list_models).",
               **_DESTROY_NOTES},
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
)


SPACE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_spaces", method="GET", path="/api/v1/clusters/{cluster}/spaces",
        title="List a cluster's Dev spaces",
        description="The cluster's JupyterLab and Code Editor spaces: state, owner, editor, "
        "size, instance group and URL. Read-only; get_space reads one in full.",
        notes={"cluster": "Name of the cluster."},
    ),
    ToolSpec(
        name="get_space", method="GET", path="/api/v1/clusters/{cluster}/spaces/{name}",
        title="Read one Dev space",
        description="One space: state, owner, the URL a person opens and the port-forward a "
        "remote IDE uses, idle time, its pod and node (or why it waits), mounts (/s3 is the "
        "bucket the jobs mount), recent events. Read-only; stop_space frees its compute.",
        notes={"cluster": "Name of the cluster.", "name": "Name of the space (list_spaces)."},
    ),
    ToolSpec(
        name="create_space", method="POST", path="/api/v1/clusters/{cluster}/spaces",
        title="Create a Dev space",
        description="A JupyterLab or Code Editor space for the user on one instance group, "
        "with the cluster's bucket at /s3 and its own home volume; it stops itself after "
        "idle_shutdown_minutes without activity (60 unless set). Needs the spaces feature. "
        "Refused when one node of the group can never hold it (exceeds_capacity, with the "
        "numbers). The operation ends when the editor runs; get_space then gives the URL."
        + _FOLLOW,
        notes={"cluster": "Name of the cluster.",
               "instance_group": "Ask the user; see list_instance_groups.",
               "gpus": "Only if the user asks for GPUs: a space holds them while it runs."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="update_space", method="PATCH", path="/api/v1/clusters/{cluster}/spaces/{name}",
        title="Resize a Dev space or change its idle shutdown",
        description="Change only the fields given (cpu, memory_gib, gpus, "
        "idle_shutdown_minutes). A running space restarts its editor: tell the user unsaved "
        "work in open kernels is lost. Only the space's owner may. Already as asked: changed "
        "false, nothing done." + _FOLLOW,
        notes={"cluster": "Name of the cluster.", "name": "Name of the space (list_spaces)."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="stop_space", method="POST", path="/api/v1/clusters/{cluster}/spaces/{name}/stop",
        title="Stop a Dev space",
        description="Stop a space: its pod goes and its compute is freed; its home volume and "
        "settings stay for start_space. Only the space's owner may." + _FOLLOW,
        notes={"cluster": "Name of the cluster.", "name": "Name of the space (list_spaces)."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="start_space", method="POST",
        path="/api/v1/clusters/{cluster}/spaces/{name}/start",
        title="Start a Dev space",
        description="Start a stopped space (also one its idle shutdown stopped); the "
        "operation ends when the editor runs. Only the space's owner may." + _FOLLOW,
        notes={"cluster": "Name of the cluster.", "name": "Name of the space (list_spaces)."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="delete_space", method="DELETE",
        path="/api/v1/clusters/{cluster}/spaces/{name}",
        title="Delete a Dev space",
        description="Delete a space with its home volume and every file on it (files under "
        "/s3 stay in the bucket). Only its owner, or with force=true another operator's: "
        "confirm with the user first." + _FOLLOW,
        notes={"cluster": "Name of the cluster.", "name": "Name of the space (list_spaces).",
               **_DESTROY_NOTES},
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
)


AUDIT_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_audit", method="GET", path="/api/v1/audit", title="Read the audit log",
        description="Who changed what, and who was refused: every mutation and refusal, "
        "newest first, with the token's name and role, the route, the target, the operation "
        "and the outcome (accepted, done, refused, failed). Filter by target (e.g. cluster/lab, "
        "which includes what is below it), token name or outcome; pass next_before as before "
        "for older entries. Only operator tokens may read it. Read-only; get_operation "
        "shows an entry's operation.",
    ),
)

TOOLS: tuple[ToolSpec, ...] = (*_CORE_TOOLS, *CLUSTER_TOOLS, *GROUP_TOOLS, *SOFTWARE_TOOLS,
                               *NODE_TOOLS, *STORAGE_TOOLS, *FEATURE_TOOLS, *DIAGNOSTIC_TOOLS,
                               *JOB_TOOLS, *MLFLOW_TOOLS, *ENDPOINT_TOOLS, *MODEL_TOOLS,
                               *SPACE_TOOLS, *AUDIT_TOOLS)

TOOLS_BY_NAME: dict[str, ToolSpec] = {t.name: t for t in TOOLS}
