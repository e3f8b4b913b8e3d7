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
    "description": "Leave unset.",
}
"""Sent as the Idempotency-Key header of a mutating tool's call (its bounds are the API's).
Written once for every mutating tool, so its description is short; the server's
instructions say the rest (server.py's INSTRUCTIONS: derived, the same for 10 minutes; a
new value repeats a change on purpose)."""

SHARED_ARGS: dict[str, str] = {
    "dry_run": "true: the plan only; changes nothing.",
    "force": "Only when the user says so.",
}
"""Arguments many mutating tools take, each published with one short description in place
of its route's (and of any note): the server's instructions say once what they mean and
when to use them (dry_run first, force only by the user's decision), so tools/list does
not carry the explanation on every row. The document keeps the routes' own words."""

SHARED_WORDING: dict[str, str] = {
    "A name that must start with a lowercase letter, contain only lowercase letters, digits "
    "and hyphens, not end with a hyphen, and be at most 32 characters.":
        "Lowercase letters, digits and hyphens; at most 32.",
    "lowercase letters, digits and hyphens, starting and ending with a letter or digit, at "
    "most 40 characters.": "lowercase letters, digits and hyphens; at most 40.",
    "AWS region, e.g. us-west-2; default: the panel's region.": "Default: the panel's.",
    "private IPv4 block for a new VPC, /16 to /18 (room for two /20 compute subnets and two "
    "public subnets)": "Private IPv4 block, /16 to /18; only if the user asks.",
    "fixed for the group's life: accepted only with the value the group has (anything else "
    "is refused with immutable_field)": "fixed for the group's life (immutable_field)",
}
"""Wording the document repeats on many inputs and their schema already says (the name rules
are the patterns; a region is its pattern; a CIDR is the panel's choice; a fixed field's
refusal is named), published in a few words wherever it stands in an input's description.
A refused argument is still explained in the document's words
(`BoundTool.input_schema(published=False)`, which the server checks arguments with)."""


def _reworded(text: str | None) -> str | None:
    for long, short in SHARED_WORDING.items():
        if text and long in text:
            text = text.replace(long, short)
    return text


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
    # The tool whose arguments (the same route's) this row's are: their descriptions are
    # published there, and here only as "As in <tool>." (create_cluster takes plan_cluster's).
    inputs_as: str | None = None

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

    def input_schema(self, published: bool = True) -> dict[str, Any]:
        """The tool's arguments: the route's inputs as the document types them, without its
        `x-` extensions. Published (tools/list), the descriptions are short where the
        server's instructions or another tool say the rest (SHARED_ARGS, SHARED_WORDING,
        `inputs_as`); `published=False` keeps the document's words (and the row's notes),
        which explain a refused argument."""
        properties: dict[str, Any] = {}
        required: list[str] = []
        for param in self.params:
            schema = _without_extensions(param.schema)
            documented = schema.get("description")
            if published:
                documented = _reworded(documented)
            said = _sentences(documented, self.spec.notes.get(param.name))
            if published and param.name in SHARED_ARGS:
                said = SHARED_ARGS[param.name]
            elif published and self.spec.inputs_as:
                said = f"As in {self.spec.inputs_as}."
            if said:
                schema["description"] = said
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


def _without_extensions(schema: dict[str, Any]) -> dict[str, Any]:
    """An input's schema without the document's `x-` extensions on it (the dashboard's
    hints, such as node_ids' batch size, which the input's description states for an
    agent). Nested schemas are the document's as they are."""
    return {key: value for key, value in schema.items() if not key.startswith("x-")}


def _sentences(*parts: str | None) -> str:
    """The document's description and the row's note as one text, each a sentence, each
    said once (a note naming a path input the document already describes adds nothing)."""
    said: list[str] = []
    for part in parts:
        if part and part.strip() and part.strip().rstrip(".").lower() not in [
                p.rstrip(".").lower() for p in said]:
            said.append(part.strip())
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
_FOLLOW = " Follow with wait_operation."
_BY_OPERATION = {"operation_id": "operation.id"}

_IN_USE = " in_use names each dependent: show the user."
_CONFIRM = " Confirm with the user."

_CLUSTER_NOTES = {  # the zone, type, count and capacity type: the instructions' "ask the user"
    "fsx": "Only if the user asks for one (billed per GiB-month).",
}

CLUSTER_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_clusters", method="GET", path="/api/v1/clusters", title="List clusters",
        description="Clusters hypd made or imported, with EKS status, stages and state. Look here "
        "before proposing one (then list_availability_zones, plan_cluster); get_cluster reads one.",
    ),
    ToolSpec(
        name="get_cluster", method="GET", path="/api/v1/clusters/{name}", title="Get a cluster",
        description="One cluster: EKS and HyperPod status, create stages, instance groups, nodes "
        "by health, features, events. A create or delete failed or cancelled: left_in_aws (what "
        "remains and its hourly cost; unknown stays unknown) and next_actions (retry_operation or "
        "delete_cluster): ask the user. A failed stage or sick nodes: diagnose_cluster.",
        notes={"name": "Name of the cluster."},
    ),
    ToolSpec(
        name="plan_cluster", method="POST", path="/api/v1/clusters",
        fixed_query={"dry_run": "true"}, title="Plan a cluster (dry run)",
        description="What create_cluster would make, its hourly cost from AWS list prices (unknown "
        "stays unknown: never guess) and the quota/reservation preflight; changes nothing. Show it "
        "to the user before create_cluster, same arguments.",
        notes=_CLUSTER_NOTES,
    ),
    ToolSpec(
        name="create_cluster", method="POST", path="/api/v1/clusters", title="Create a cluster",
        description="Create an EKS + HyperPod cluster in stages (network, eks, activate, "
        "dependencies, hyperpod, storage). Takes plan_cluster's arguments: plan first and show the "
        "user. A quota short: precondition_failed." + _FOLLOW,
        hidden=("dry_run",), notes=_CLUSTER_NOTES, inputs_as="plan_cluster",
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="delete_cluster", method="DELETE", path="/api/v1/clusters/{name}",
        title="Delete a cluster",
        description="Delete what hypd made for the cluster, in reverse order; the bucket stays "
        "unless delete_data; an imported one is only forgotten. Refused while work runs on it or "
        "(even with force) another cluster uses its network." + _IN_USE + _CONFIRM + _FOLLOW,
        notes={"name": "Name of the cluster.",
               "delete_data": "Only if the user asks."},
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="run_cluster_stage", method="POST",
        path="/api/v1/clusters/{name}/stages/{stage}/run", title="Re-run a cluster stage",
        description="Run one create stage again after fixing why it failed; it adopts what exists "
        "and makes what is missing." + _FOLLOW,
        notes={"name": "Name of the cluster."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="import_cluster", method="POST", path="/api/v1/clusters/import",
        title="Import an existing cluster",
        description="Adopt an existing EKS cluster (and its HyperPod cluster) read-only; hypd "
        "never deletes its AWS resources. Immediate: confirm with get_cluster.",
        mutating=True, status_tool="get_cluster", status_args_from={"name": "name"},
    ),
    ToolSpec(
        name="get_kubeconfig", method="GET", path="/api/v1/clusters/{name}/kubeconfig",
        title="Get a kubeconfig",
        description="A kubeconfig (JSON) using `aws eks get-token`: the user's AWS credentials "
        "decide what kubectl may do. Offer it once get_cluster shows the cluster ready.",
        notes={"name": "Name of the cluster."}, hidden=("format",),
    ),
    ToolSpec(
        name="get_active_cluster", method="GET", path="/api/v1/active-cluster",
        title="Get the active cluster",
        description="The cluster this token works on by default (null if none); a create makes it "
        "the creator's; set_active_cluster changes it.",
    ),
    ToolSpec(
        name="set_active_cluster", method="PUT", path="/api/v1/active-cluster",
        title="Set the active cluster",
        description="Choose the cluster this token works on by default. Immediate: confirm with "
        "get_active_cluster.",
        mutating=True, status_tool="get_active_cluster",
    ),
    ToolSpec(
        name="preflight", method="GET", path="/api/v1/preflight", title="Preflight capacity",
        description="Read-only: do service quotas and training-plan reservations cover a capacity "
        "request; what is missing and how to ask for it. Before proposing high-end GPUs; if a "
        "check fails, report it and stop before plan_cluster.",
    ),
    ToolSpec(
        name="get_cluster_cost", method="GET", path="/api/v1/clusters/{name}/cost",
        title="A cluster's running cost",
        description="What a cluster costs now per hour (instances per group, EKS, NAT; each "
        "priced from AWS list prices with its source; spot and unknown have no figure: never "
        "guess) and a lower bound of what it has cost since it was made. When the user asks "
        "what a cluster costs, or before add_instance_group.",
        notes={"name": "Name of the cluster."},
    ),
)


_GROUP_NOTES = {"cluster": "Name of the cluster.", "name": "Name of the instance group."}

GROUP_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_instance_groups", method="GET",
        path="/api/v1/clusters/{cluster}/instance-groups",
        title="List instance groups",
        description="A cluster's instance groups: type, current and target counts, capacity type, "
        "EFA mode, zone, labels, taints, nodes by status, the operation changing each. Before "
        "add_instance_group or update_instance_group.",
        notes={"cluster": "Name of the cluster."},
    ),
    ToolSpec(
        name="get_instance_group", method="GET",
        path="/api/v1/clusters/{cluster}/instance-groups/{name}", title="Get an instance group",
        description="One instance group of a cluster, as list_instance_groups shows each.",
        notes=_GROUP_NOTES,
    ),
    ToolSpec(
        name="add_instance_group", method="POST",
        path="/api/v1/clusters/{cluster}/instance-groups", title="Add an instance group",
        description="Add capacity as a new instance group. Ask the user type, count, capacity type "
        "and zone: fixed for the group's life, as are EFA mode and subnet (hypd makes one: leave "
        "subnet_id unset). A quota or plan short: precondition_failed." + _FOLLOW,
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
        description="Change only what the user asked (count, threads per core, labels, taints, "
        "deep health checks, lifecycle script); type, capacity type, EFA mode and placement are "
        "fixed (immutable_field: add a group). Already so: changed false." + _FOLLOW,
        notes=_GROUP_NOTES,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="delete_instance_group", method="DELETE",
        path="/api/v1/clusters/{cluster}/instance-groups/{name}",
        title="Delete an instance group",
        description="Delete a group, its nodes and its subnet; never the cluster's last group, nor "
        "while pods that would not come back elsewhere (bare, a training job's) run on it."
        + _IN_USE + _CONFIRM + _FOLLOW,
        notes=_GROUP_NOTES,
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
)


SOFTWARE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="update_cluster_software", method="POST",
        path="/api/v1/clusters/{name}/software-update", title="Update node software",
        description="Update the nodes' HyperPod software (AMI, drivers, agents), node by node; "
        "their pods are disrupted: confirm with the user." + _FOLLOW,
        notes={"name": "Name of the cluster."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="upgrade_kubernetes", method="POST",
        path="/api/v1/clusters/{name}/kubernetes-version", title="Upgrade Kubernetes",
        description="Upgrade EKS Kubernetes by one minor version (get_cluster shows the current) "
        "and its add-ons; 10-20 minutes, no undo: confirm with the user. Already there: changed "
        "false." + _FOLLOW,
        notes={"name": "Name of the cluster."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
)


_NODE_NOTES = {"cluster": "Name of the cluster.",
               "node_ids": "From list_nodes."}
_NODE_FOLLOW = " Per-node refusals fail the operation, named in its step." + _FOLLOW

NODE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_nodes", method="GET", path="/api/v1/clusters/{cluster}/nodes",
        title="List a cluster's nodes",
        description="A cluster's nodes, a page at a time (pass next_cursor as cursor until null): "
        "HyperPod status, group, type, Kubernetes readiness, health label, cordoned. Start node "
        "investigations here, then get_node.",
        notes={"cluster": "Name of the cluster."},
    ),
    ToolSpec(
        name="get_node", method="GET", path="/api/v1/clusters/{cluster}/nodes/{node_id}",
        title="Get a node",
        description="One node: HyperPod status, zone, IP, conditions, taints, its pods (what a "
        "reboot, replace or delete disrupts), events. Investigate with it before reboot_nodes, "
        "then replace_nodes.",
        notes={"cluster": "Name of the cluster.", "node_id": "From list_nodes."},
    ),
    ToolSpec(
        name="reboot_nodes", method="POST", path="/api/v1/clusters/{cluster}/nodes/reboot",
        title="Reboot nodes",
        description="Reboot Running nodes (the OS restarts; instance and disks stay); pods are "
        "disrupted, bare pods lost. The first remedy after get_node, before replace_nodes: confirm "
        "with the user, naming the pods." + _NODE_FOLLOW,
        notes=_NODE_NOTES,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="replace_nodes", method="POST", path="/api/v1/clusters/{cluster}/nodes/replace",
        title="Replace nodes",
        description="Replace Running or Failure nodes by new instances (new ids) in the same "
        "group; local data is lost. When a reboot did not help or the node is in Failure. Refused "
        "while pods that would not come back (bare, a training job's) run on them."
        + _IN_USE + _CONFIRM + _NODE_FOLLOW,
        notes=_NODE_NOTES,
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="delete_nodes", method="POST", path="/api/v1/clusters/{cluster}/nodes/delete",
        title="Delete nodes",
        description="Terminate nodes for good, each group shrinking by one; local data is lost. "
        "Only to shrink by chosen nodes, never as a remedy (replace_nodes). Refused while pods "
        "that would not come back (bare, a training job's) run on them."
        + _IN_USE + _CONFIRM + _NODE_FOLLOW,
        notes=_NODE_NOTES,
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
        description="A cluster's storage: S3 buckets and FSx for Lustre, each a claim pods mount "
        "(the shared bucket: hypd-s3 at /s3), its state and the workloads using it. Before "
        "add_storage; get_storage reads one.",
        notes={"cluster": "Name of the cluster."},
    ),
    ToolSpec(
        name="get_storage", method="GET", path="/api/v1/clusters/{cluster}/storage/{name}",
        title="Get a storage item",
        description="One storage item: claim, bucket or file system, state, the workloads mounting "
        "it, and whether removing it deletes data (deletes_data). Read it before remove_storage.",
        notes=_STORAGE_NOTES,
    ),
    ToolSpec(
        name="add_storage", method="POST", path="/api/v1/clusters/{cluster}/storage",
        title="Add storage to a cluster",
        description="Mount storage as a claim named after it: s3 (a new bucket, or the user's own, "
        "never deleted) or fsx (FSx for Lustre, 5-10 minutes, billed per GiB-month: confirm with "
        "the user)." + _FOLLOW,
        notes={"cluster": "Name of the cluster.", "namespace": "It must exist."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="remove_storage", method="DELETE",
        path="/api/v1/clusters/{cluster}/storage/{name}", title="Remove storage",
        description="Delete a storage item's claim and volume, and its bucket or file system only "
        "if hypd made it (deletes_data). Workloads mounting it must stop first (no force)."
        + _IN_USE + _CONFIRM + _FOLLOW,
        notes=_STORAGE_NOTES,
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
)


_OPERATION_NOTES = {"operation_id": "Operation id (op_...)."}

_CORE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="whoami", method="GET", path="/api/v1/auth/whoami", title="Who am I",
        description="Name and role (viewer or operator) of this server's token; only an operator "
        "changes things. Call it when unsure a change is possible; then list_clusters.",
    ),
    ToolSpec(
        name="list_availability_zones", method="GET",
        path="/api/v1/discovery/availability-zones", title="List availability zones",
        description="A region's availability zones with id and state. Before asking the user for a "
        "zone (offer only available ones); then list_instance_types.",
    ),
    ToolSpec(
        name="list_instance_types", method="GET", path="/api/v1/discovery/instance-types",
        title="List instance types in a zone",
        description="HyperPod instance types in one zone: vCPUs, memory, accelerators, EFA "
        "(max_efa_interfaces > 1 allows efa-only). Before proposing a type; for high-end GPUs "
        "preflight, then plan_cluster or add_instance_group.",
        notes={"availability_zone": "From list_availability_zones."},
    ),
    ToolSpec(
        name="create_network", method="POST", path="/api/v1/networks",
        title="Create a network",
        description="Create a network for clusters: a VPC with subnets per zone, gateways, routes, "
        "a security group, an S3 endpoint. Ask the user only the zones (list_availability_zones), "
        "or leave them unset." + _FOLLOW,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="list_networks", method="GET", path="/api/v1/networks", title="List networks",
        description="hypd's networks in a region: VPC, subnets, gateways, state. Before "
        "create_network: reuse one that fits; get_network reads one.",
    ),
    ToolSpec(
        name="get_network", method="GET", path="/api/v1/networks/{name}", title="Get a network",
        description="One hypd network: VPC, CIDR, state, zones, subnets, gateways, security group, "
        "S3 endpoint. delete_network removes it.",
        notes={"name": "Name of the network."},
    ),
    ToolSpec(
        name="delete_network", method="DELETE", path="/api/v1/networks/{name}",
        title="Delete a network",
        description="Delete a hypd network and what hypd made in it; refused while any cluster or "
        "network interface is in its VPC (no force)." + _IN_USE + _CONFIRM + _FOLLOW,
        notes={"name": "Name of the network."},
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="list_operations", method="GET", path="/api/v1/operations",
        title="List operations",
        description="Operations (the panel's long-running changes), newest first, with status and "
        "steps; filter by status, kind (network.create) or target (network/lab). Check before "
        "changing a target; follow one with wait_operation.",
    ),
    ToolSpec(
        name="get_operation", method="GET", path="/api/v1/operations/{operation_id}",
        title="Get an operation",
        description="One operation now: status, each step's phase, attempts and detail, its error. "
        "To wait for it, use wait_operation instead of polling this.",
        hidden=("wait", "after"), notes=_OPERATION_NOTES,
    ),
    ToolSpec(
        name="wait_operation", method="GET", path="/api/v1/operations/{operation_id}",
        title="Wait for an operation",
        description="Wait until an operation is terminal (succeeded, failed, cancelled) or "
        "timeout_seconds pass; not terminal: call again (a cluster takes 10-20 minutes). Failed: "
        "read its error and failed step before retry_operation; a cluster create failed or "
        "cancelled: get_cluster says what it left in AWS.",
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
        description="Stop a queued or running operation at its next step (what finished steps made "
        "stays in AWS, billed). Confirm with the user. A cluster create's reply names "
        "next_actions: get_cluster, then retry_operation or delete_cluster, as the user chooses."
        + _FOLLOW,
        notes=_OPERATION_NOTES,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="retry_operation", method="POST", path="/api/v1/operations/{operation_id}/retry",
        title="Retry an operation",
        description="Run a failed or cancelled operation again from its failed step (same id, "
        "keeping what earlier steps made); fix the cause in its error first. Refused for a cluster "
        "deleted since." + _FOLLOW,
        notes=_OPERATION_NOTES,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
)

FEATURE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="get_features", method="GET", path="/api/v1/clusters/{cluster}/features",
        title="Get a cluster's managed features",
        description="A cluster's managed features as they are: state (on, off, partial, settling, "
        "failed), each part present and as wanted or not, what each requires, its identity, "
        "autoscaling per group. Read before update_features.",
        notes={"cluster": "Name of the cluster."},
    ),
    ToolSpec(
        name="update_features", method="PATCH", path="/api/v1/clusters/{cluster}/features",
        title="Turn managed features on or off",
        description="Turn one managed feature on or off, or change its options, passing only what "
        "changes, e.g. {\"autoscaling\": {\"enabled\": true, \"groups\": {\"workers\": {\"min\": "
        "0, \"max\": 4}}}}. What it needs is installed first; off keeps what another feature "
        "needs. Autoscaling scales HyperPod groups only, not EC2: say so. Already so: changed "
        "false. Off is refused while work uses it." + _IN_USE + _FOLLOW,
        notes={"cluster": "Name of the cluster."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
)


DIAGNOSTIC_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="diagnose_cluster", method="GET",
        path="/api/v1/clusters/{cluster}/diagnostics/{kind}", title="Diagnose a cluster",
        description="Read-only diagnosis (viewers too). kind creation: why a create failed, was "
        "cancelled or never finished; node-health: nodes in Failure, pending reboot or "
        "replacement, or not Ready; nccl: pods' logs and events against known NCCL, EFA, Xid and "
        "OOM failures (pass job or namespace if the user names one; ask nothing first). Returns "
        "findings with evidence and suggestions in order (investigate, reboot, replace, re-run a "
        "stage) as tool calls (get_node, reboot_nodes, replace_nodes, run_cluster_stage): present "
        "them; call a change only when the user agrees.",
        notes={"cluster": "Name of the cluster."},
    ),
)


_JOB_NOTES = {"cluster": "Name of the cluster.", "job": "Name of the job."}

JOB_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="get_training_limits", method="GET", path="/api/v1/training/limits",
        title="Training recipes and limits",
        description="The recipes (torchrun, llama-factory, ms-swift, verl, own pytorch/ray) and "
        "what each needs, and what elastic training (max_nodes above nodes) cannot combine with. "
        "Read before proposing a job; submit_job follows.",
    ),
    ToolSpec(
        name="submit_job", method="POST", path="/api/v1/clusters/{cluster}/jobs",
        title="Submit a training job",
        description="Submit a training job from a recipe. torchrun, llama-factory and ms-swift run "
        "under HyperPod's training operator (its feature on, else precondition_failed: "
        "update_features; the image with HyperPod's elastic agent); verl as a RayJob. Pods mount "
        "the bucket at /s3; output goes to /s3/jobs/<job>/. Too big to ever fit: exceeds_capacity "
        "with the numbers: propose fewer nodes or GPUs, never resubmit unchanged. Follow with "
        "wait_operation, then get_job (waiting says why pods wait).",
        notes={"cluster": "Name of the cluster.",
               "max_nodes": "Elastic training only; see get_training_limits for what it "
               "excludes."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="list_jobs", method="GET", path="/api/v1/clusters/{cluster}/jobs",
        title="List training jobs",
        description="A cluster's training jobs: state, recipe, pods and restarts; filter by state "
        "or recipe. get_job reads one.",
        notes={"cluster": "Name of the cluster."},
    ),
    ToolSpec(
        name="get_job", method="GET", path="/api/v1/clusters/{cluster}/jobs/{job}",
        title="Get a training job",
        description="One training job now: state, pods and their nodes, restarts and recovery "
        "budget, waiting (pods not placed yet, and why), events, /s3 paths, MLflow "
        "(get_mlflow_ui_url). Call again to follow it; get_job_logs for its output.",
        notes=_JOB_NOTES,
    ),
    ToolSpec(
        name="delete_job", method="DELETE", path="/api/v1/clusters/{cluster}/jobs/{job}",
        title="Delete a training job",
        description="Stop and delete a training job and its pods (its files under /s3 stay). An "
        "unfinished job is live work: refused." + _IN_USE + _CONFIRM + _FOLLOW,
        notes=_JOB_NOTES,
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="get_job_logs", method="GET", path="/api/v1/clusters/{cluster}/jobs/{job}/logs",
        title="Read a training job's logs",
        description="A job's last lines, each with pod and time (ask a small tail first); since, "
        "pod and previous (a restarted container's last run: why it failed) narrow it. get_job "
        "shows its state.",
        notes=_JOB_NOTES,
    ),
)

MLFLOW_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="get_mlflow", method="GET", path="/api/v1/clusters/{cluster}/mlflow",
        title="Get a cluster's MLflow tracking server",
        description="The cluster's MLflow tracking server (SageMaker managed MLflow): state, ARN, "
        "URL, whether hypd made it, the role jobs log as. Before set_mlflow; get_job names a job's "
        "experiment.",
        notes={"cluster": "Name of the cluster."},
    ),
    ToolSpec(
        name="set_mlflow", method="PUT", path="/api/v1/clusters/{cluster}/mlflow",
        title="Create or attach an MLflow tracking server",
        description="Give a cluster MLflow tracking: without tracking_server hypd makes one (about "
        "20 minutes, billed hourly: confirm with the user); with one, it is attached and never "
        "deleted. Jobs submitted afterwards (submit_job) log to it. Already attached: changed "
        "false." + _FOLLOW,
        notes={"cluster": "Name of the cluster.", "tracking_server": "Ask the user whether "
               "to attach an existing one (list them with the AWS console or CLI)."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="detach_mlflow", method="DELETE", path="/api/v1/clusters/{cluster}/mlflow",
        title="Detach the MLflow tracking server",
        description="Detach the cluster's MLflow tracking server: new jobs stop logging to it; it "
        "and its runs are deleted only if hypd made it (get_mlflow: made_by_hypd). Refused while "
        "jobs log to it." + _IN_USE + _CONFIRM + _FOLLOW,
        notes={"cluster": "Name of the cluster."},
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="get_mlflow_ui_url", method="GET", path="/api/v1/clusters/{cluster}/mlflow/ui-url",
        title="Open the MLflow UI",
        description="A presigned MLflow UI URL, valid 5 minutes, for the user to open; a "
        "credential: never log, store or repeat it. get_mlflow says whether a server is attached.",
        notes={"cluster": "Name of the cluster."},
    ),
)


_ENDPOINT_NOTES = {"cluster": "Name of the cluster.", "name": "Name of the endpoint."}

ENDPOINT_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_endpoints", method="GET", path="/api/v1/clusters/{cluster}/endpoints",
        title="List a cluster's inference endpoints",
        description="A cluster's inference endpoints: kind, model, replicas ready, Services, load "
        "balancer, state, a pool's worker-model map. get_endpoint reads one.",
        notes={"cluster": "Name of the cluster."},
    ),
    ToolSpec(
        name="get_endpoint", method="GET", path="/api/v1/clusters/{cluster}/endpoints/{name}",
        title="Get an inference endpoint",
        description="One inference endpoint: its request, state, servers ready, Services, load "
        "balancer, a pool's workers and models, waiting (servers not placed yet, and why). "
        "invoke_endpoint tests it.",
        notes=_ENDPOINT_NOTES,
    ),
    ToolSpec(
        name="create_endpoint", method="POST", path="/api/v1/clusters/{cluster}/endpoints",
        title="Create an inference endpoint",
        description="Deploy a model from the cluster's bucket (list_models): kind managed (the "
        "HyperPod inference operator: its feature on, see get_features) or vllm, sglang, custom; "
        "behind a Service, an internet-facing NLB (confirm with the user) or a model pool "
        "(reassign_endpoint_worker). More than the cluster can ever hold: exceeds_capacity."
        + _FOLLOW,
        notes={"cluster": "Name of the cluster.",
               "gpus": "Ask the user how many GPUs each server uses; never guess it.",
               "instance_type": "Ask the user; see list_instance_types."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="update_endpoint", method="PATCH",
        path="/api/v1/clusters/{cluster}/endpoints/{name}", title="Change an inference endpoint",
        description="Change only what the user asked: replicas, autoscaling or routing. Already "
        "so: changed false. A pool scales in by unassigned workers only (else conflict); more than "
        "the cluster can hold: exceeds_capacity." + _FOLLOW,
        notes=_ENDPOINT_NOTES,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="delete_endpoint", method="DELETE",
        path="/api/v1/clusters/{cluster}/endpoints/{name}", title="Delete an inference endpoint",
        description="Delete an endpoint and all hypd made for it (servers, Services, load "
        "balancer, router, autoscaler); the model stays. A pool is refused while its workers serve "
        "models." + _IN_USE + _CONFIRM + _FOLLOW,
        notes=_ENDPOINT_NOTES,
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="reassign_endpoint_worker", method="POST",
        path="/api/v1/clusters/{cluster}/endpoints/{name}/reassign",
        title="Reassign a pool worker to a model",
        description="Point one model-pool worker at another of the pool's models (or none); it "
        "reloads in place. Read the workers with get_endpoint first." + _FOLLOW,
        notes=_ENDPOINT_NOTES,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="invoke_endpoint", method="POST",
        path="/api/v1/clusters/{cluster}/endpoints/{name}/invoke",
        title="Send a test completion to an endpoint",
        description="Send one OpenAI-compatible completion to the endpoint's Service and return "
        "the answer (a pool needs the model). It uses the endpoint's GPUs, so it is an operator's; "
        "no operation (get_endpoint shows the endpoint).",
        notes=_ENDPOINT_NOTES,
        mutating=True, status_tool="get_endpoint",
        status_args_from={"cluster": "cluster", "name": "endpoint"},
    ),
)


MODEL_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_models", method="GET", path="/api/v1/clusters/{cluster}/models",
        title="List the models in a cluster's bucket",
        description="Models under models/ in the cluster's bucket (files, bytes) and downloads "
        "running or failed. Before create_endpoint or download_model.",
        notes={"cluster": "Name of the cluster."},
    ),
    ToolSpec(
        name="download_model", method="POST", path="/api/v1/clusters/{cluster}/models",
        title="Download a model into a cluster's bucket",
        description="Fetch a model into models/<name>/ of the cluster's bucket (a Kubernetes Job): "
        "a Hugging Face repo and revision, or an S3 prefix. Gated: name the Secret holding the "
        "user's token (hub_token_secret), never the token." + _FOLLOW,
        notes={"cluster": "Name of the cluster.",
               "repo": "Ask the user which model (and revision) they want."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="remove_model", method="DELETE", path="/api/v1/clusters/{cluster}/models/{name}",
        title="Remove a model from a cluster's bucket",
        description="Delete a model's files from the cluster's bucket for good (not while it "
        "downloads). Refused while endpoints serve it." + _IN_USE + _CONFIRM + _FOLLOW,
        notes={"cluster": "Name of the cluster.", "name": "Name of the model (list_models)."},
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
)


SPACE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_spaces", method="GET", path="/api/v1/clusters/{cluster}/spaces",
        title="List a cluster's Dev spaces",
        description="A cluster's JupyterLab and Code Editor spaces: state, owner, editor, size, "
        "instance group, URL. get_space reads one.",
        notes={"cluster": "Name of the cluster."},
    ),
    ToolSpec(
        name="get_space", method="GET", path="/api/v1/clusters/{cluster}/spaces/{name}",
        title="Read one Dev space",
        description="One space: state, owner, its URL and a remote IDE's port-forward, idle time, "
        "pod and node (or why it waits), mounts (/s3), events. stop_space frees its compute.",
        notes={"cluster": "Name of the cluster.", "name": "Name of the space (list_spaces)."},
    ),
    ToolSpec(
        name="create_space", method="POST", path="/api/v1/clusters/{cluster}/spaces",
        title="Create a Dev space",
        description="A JupyterLab or Code Editor space on one instance group, with the bucket at "
        "/s3 and its own home volume; it stops when idle. Needs the spaces feature; too big for a "
        "node: exceeds_capacity. Done when the editor runs: get_space gives the URL." + _FOLLOW,
        notes={"cluster": "Name of the cluster.",
               "instance_group": "Ask the user; see list_instance_groups.",
               "gpus": "Only if the user asks for GPUs: a space holds them while it runs."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="update_space", method="PATCH", path="/api/v1/clusters/{cluster}/spaces/{name}",
        title="Resize a Dev space or change its idle shutdown",
        description="Change only the given fields; a running space restarts its editor: tell the "
        "user unsaved kernel state is lost. Owner only. Already so: changed false." + _FOLLOW,
        notes={"cluster": "Name of the cluster.", "name": "Name of the space (list_spaces)."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="stop_space", method="POST", path="/api/v1/clusters/{cluster}/spaces/{name}/stop",
        title="Stop a Dev space",
        description="Stop a space: its pod goes, compute is freed; its home volume and settings "
        "stay for start_space. Owner only." + _FOLLOW,
        notes={"cluster": "Name of the cluster.", "name": "Name of the space (list_spaces)."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="start_space", method="POST",
        path="/api/v1/clusters/{cluster}/spaces/{name}/start",
        title="Start a Dev space",
        description="Start a stopped space (also one its idle shutdown stopped); done when the "
        "editor runs. Owner only; get_space gives the URL." + _FOLLOW,
        notes={"cluster": "Name of the cluster.", "name": "Name of the space (list_spaces)."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="delete_space", method="DELETE",
        path="/api/v1/clusters/{cluster}/spaces/{name}",
        title="Delete a Dev space",
        description="Delete a space with its home volume and every file on it (/s3 stays). Owner "
        "only, or another's with force: confirm with the user." + _FOLLOW,
        notes={"cluster": "Name of the cluster.", "name": "Name of the space (list_spaces)."},
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
)


AUDIT_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_audit", method="GET", path="/api/v1/audit", title="Read the audit log",
        description="The audit log, newest first: every mutation and refusal with the token's name "
        "and role, route, target, operation and outcome. Filter by target (cluster/lab includes "
        "what is below it), token or outcome; next_before pages back. Operators only; "
        "get_operation reads an entry's operation.",
    ),
)

TOOLS: tuple[ToolSpec, ...] = (*_CORE_TOOLS, *CLUSTER_TOOLS, *GROUP_TOOLS, *SOFTWARE_TOOLS,
                               *NODE_TOOLS, *STORAGE_TOOLS, *FEATURE_TOOLS, *DIAGNOSTIC_TOOLS,
                               *JOB_TOOLS, *MLFLOW_TOOLS, *ENDPOINT_TOOLS, *MODEL_TOOLS,
                               *SPACE_TOOLS, *AUDIT_TOOLS)

TOOLS_BY_NAME: dict[str, ToolSpec] = {t.name: t for t in TOOLS}
