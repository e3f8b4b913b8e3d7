"""The declared MCP tool table: one row per tool, each a call of the hypd REST API.

A row holds what is the MCP server's own: the tool's name and title, the HTTP method and path
template it calls, a description written for an agent (and notes on arguments, for advice
only an agent needs, such as "ask the user"), whether it is mutating, and for a mutating
tool the status tool that tells when the change is done. What a tool's arguments may be is
not here: their types, enums, patterns, bounds, defaults and which are required come from
the API's OpenAPI document (mcp_server/routes.py), as do the replies' schemas (each tool's
output schema, with what the MCP server adds to a reply) and who may call each route.

Each row names its toolset (`toolset="spaces"`), the group a session publishes it in
(`hypd mcp --toolsets`); mcp_server/toolsets.py holds only each toolset's name and summary
and reads its tools from the rows.

Nothing here runs anything: `mcp_server/server.py` turns the rows into tools. Adding a
resource adds rows here (each with its toolset) and nothing else in this package.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp_server import lean
from mcp_server.routes import Param, Route, RouteBook, RouteBookError, may_call

Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]

WAIT_MAX_SECONDS = 60
WAIT_DEFAULT_SECONDS = 30

IDEMPOTENCY_KEY = "idempotency_key"
IDEMPOTENCY_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 255,
    "description": "Leave unset: the server derives one from the call.",
}
"""Sent as the Idempotency-Key header of a mutating tool's call (its bounds are the API's),
as the server checks it (`input_schema(published=False)`). Published as IDEMPOTENCY_ARG on
every mutating tool: the server's instructions say once to leave it unset, what the server
derives instead and its bounds (server.py's INSTRUCTIONS)."""
IDEMPOTENCY_ARG: dict[str, Any] = {"type": "string"}

SHARED_ARGS: dict[str, str | None] = {
    "dry_run": None,
    "force": "Only when the user says so.",
    "region": None,
}
"""Arguments many tools take, published with one short description in place of their
route's (and of any note), or with none: the server's instructions say once what they mean
and when to use them (dry_run's rehearsal and when to show it, force only by the user's
decision, a region left unset is the panel's), so tools/list does not carry the explanation
on every row. The document keeps the routes' own words."""

SHARED_WORDING: dict[str, str] = {
    "A name that must start with a lowercase letter, contain only lowercase letters, digits "
    "and hyphens, not end with a hyphen, and be at most 32 characters.": "",
    "lowercase letters, digits and hyphens, starting and ending with a letter or digit, at "
    "most 40 characters.": "",
    "private IPv4 block for a new VPC, /16 to /18 (room for two /20 compute subnets and two "
    "public subnets)": "Private IPv4 block, /16 to /18; only if the user asks.",
    "fixed for the group's life: accepted only with the value the group has (anything else "
    "is refused with immutable_field)": "fixed (immutable_field)",
}
"""Wording the document repeats on many inputs that the schema, the row or the instructions
already say (the name rules are the patterns; a group's fixed field is refused when changed,
with the code its row names; a CIDR is the panel's choice), published in a few words or none
wherever it stands in an input's description. A refused argument is still explained in the
document's words (`BoundTool.input_schema(published=False)`, which the server checks
arguments with)."""


def _reworded(text: str | None) -> str | None:
    for long, short in SHARED_WORDING.items():
        if text and long in text:
            text = text.replace(long, short).strip().rstrip(":;,").strip()
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
    # The toolset the tool is published in (`hypd mcp --toolsets`): one of those
    # mcp_server/toolsets.py names; a row in none, or in one it does not name, stops the import.
    toolset: str = ""
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
        """`role`: a session's (routes.session_role)."""
        return may_call(role, self.route, self.needs)

    def input_schema(self, published: bool = True) -> dict[str, Any]:
        """The tool's arguments: the route's inputs as the document types them, without its
        `x-` extensions. `published=False` is what the server checks a call with: the
        document's words (and the row's notes, which explain a refused argument), the key's
        bounds, and no argument but these (`additionalProperties: false`). Published
        (tools/list), the same rules say only what the schema and the server's instructions do
        not: the descriptions are short or none where the instructions or another tool say the
        rest (SHARED_ARGS, SHARED_WORDING, `inputs_as`: create_cluster's arguments are
        plan_cluster's, described there), the key is IDEMPOTENCY_ARG, and what JSON Schema
        presumes is left unsaid (an empty `required`; that no other argument is taken, which
        the instructions say once and the check holds)."""
        properties: dict[str, Any] = {}
        required: list[str] = []
        for param in self.params:
            schema = _without_extensions(param.schema)
            documented = schema.get("description")
            if published:
                documented = _reworded(documented)
            said: str | None = _sentences(documented, self.spec.notes.get(param.name))
            if published and param.name in SHARED_ARGS:
                said = SHARED_ARGS[param.name]
            elif published and self.spec.inputs_as:
                said = None
            if said:
                schema["description"] = said
            else:
                schema.pop("description", None)
            properties[param.name] = schema
            if param.required:
                required.append(param.name)
        for local in self.spec.local_args:
            properties[local.name] = dict(local.schema)
            if local.required:
                required.append(local.name)
        if self.spec.mutating:
            properties[IDEMPOTENCY_KEY] = dict(IDEMPOTENCY_ARG if published
                                               else IDEMPOTENCY_SCHEMA)
        if published:
            return {"type": "object", "properties": properties,
                    **({"required": required} if required else {})}
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

_CONFIRM = " Confirm with the user."

_CLUSTER_NOTES = {  # the zone, type, count and capacity type: the instructions' "ask the user"
    "fsx": "Only if the user asks for one (billed per GiB-month).",
}

CLUSTER_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_clusters", method="GET", path="/api/v1/clusters", title="List clusters",
        toolset="clusters",
        description="Clusters hypd made or imported. Look here before proposing one (then "
        "list_availability_zones, plan_cluster); get_cluster reads one.",
    ),
    ToolSpec(
        name="get_cluster", method="GET", path="/api/v1/clusters/{name}", title="Get a cluster",
        toolset="clusters",
        description="One cluster now. A create or delete failed or cancelled: left_in_aws (what "
        "remains, its hourly cost) and next_actions (retry_operation or delete_cluster): ask the "
        "user. A failed stage or sick nodes: diagnose_cluster.",
    ),
    ToolSpec(
        name="plan_cluster", method="POST", path="/api/v1/clusters",
        toolset="clusters",
        fixed_query={"dry_run": "true"}, title="Plan a cluster (dry run)",
        description="What create_cluster would make, its hourly cost and the quota and "
        "reservation preflight; changes nothing. Show the user, then create_cluster with the "
        "same arguments.",
        notes=_CLUSTER_NOTES,
    ),
    ToolSpec(
        name="create_cluster", method="POST", path="/api/v1/clusters", title="Create a cluster",
        toolset="clusters",
        description="Create an EKS + HyperPod cluster in stages. Its arguments are "
        "plan_cluster's (described there): plan first and show the user." + _FOLLOW,
        hidden=("dry_run",), notes=_CLUSTER_NOTES, inputs_as="plan_cluster",
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="delete_cluster", method="DELETE", path="/api/v1/clusters/{name}",
        toolset="clusters",
        title="Delete a cluster",
        description="Delete what hypd made for a cluster (the bucket only with delete_data); an "
        "imported one is only forgotten. in_use while work runs on it, or (even with force) "
        "while another cluster uses its network." + _CONFIRM + _FOLLOW,
        notes={"delete_data": "Only if the user asks."},
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="run_cluster_stage", method="POST",
        toolset="clusters",
        path="/api/v1/clusters/{name}/stages/{stage}/run", title="Re-run a cluster stage",
        description="Run one create stage again once why it failed is fixed; it adopts what "
        "exists." + _FOLLOW,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="import_cluster", method="POST", path="/api/v1/clusters/import",
        toolset="clusters",
        title="Import an existing cluster",
        description="Adopt an existing EKS cluster (and its HyperPod cluster) read-only; hypd "
        "never deletes its AWS resources. Immediate: confirm with get_cluster.",
        mutating=True, status_tool="get_cluster", status_args_from={"name": "name"},
    ),
    ToolSpec(
        name="get_kubeconfig", method="GET", path="/api/v1/clusters/{name}/kubeconfig",
        toolset="clusters",
        title="Get a kubeconfig",
        description="A kubeconfig that signs in with `aws eks get-token` (the user's AWS "
        "credentials). Offer it once get_cluster shows the cluster ready.",
        hidden=("format",),
    ),
    ToolSpec(
        name="get_active_cluster", method="GET", path="/api/v1/active-cluster",
        toolset="clusters",
        title="Get the active cluster",
        description="The cluster this token works on by default (null: none); a create sets it, "
        "set_active_cluster changes it.",
    ),
    ToolSpec(
        name="set_active_cluster", method="PUT", path="/api/v1/active-cluster",
        toolset="clusters",
        title="Set the active cluster",
        description="Choose the cluster this token works on by default. Immediate: confirm with "
        "get_active_cluster.",
        mutating=True, status_tool="get_active_cluster",
    ),
    ToolSpec(
        name="preflight", method="GET", path="/api/v1/preflight", title="Preflight capacity",
        toolset="capacity",
        description="Whether quotas and training-plan reservations cover a capacity request, and "
        "how to ask for what is missing. Before proposing high-end GPUs; a check fails: report "
        "it and stop before plan_cluster.",
    ),
    ToolSpec(
        name="get_cluster_cost", method="GET", path="/api/v1/clusters/{name}/cost",
        toolset="capacity",
        title="A cluster's running cost",
        description="What a cluster costs per hour now (each price with its source; spot and "
        "unknown prices have none) and at least what it has cost so far. When the user asks, or "
        "before add_instance_group.",
    ),
    ToolSpec(
        name="get_cluster_budget", method="GET", path="/api/v1/clusters/{name}/budget",
        toolset="capacity",
        title="A cluster's monthly budget",
        description="A cluster's monthly budget against what it has cost this month, its state "
        "and the warnings raised (80 % and 100 %). Before add_instance_group on a budgeted "
        "cluster; set_cluster_budget sets it.",
    ),
    ToolSpec(
        name="set_cluster_budget", method="PUT", path="/api/v1/clusters/{name}/budget",
        toolset="capacity",
        title="Set a cluster's monthly budget",
        description="Set a cluster's monthly budget in US dollars, when the user names one. "
        "Immediate: confirm with get_cluster_budget.",
        mutating=True, status_tool="get_cluster_budget", status_args_from={"name": "cluster"},
    ),
    ToolSpec(
        name="clear_cluster_budget", method="DELETE", path="/api/v1/clusters/{name}/budget",
        toolset="capacity",
        title="Clear a cluster's monthly budget",
        description="Remove a cluster's monthly budget and its warnings. Confirm with the user; "
        "immediate: get_cluster_budget shows it unset.",
        mutating=True, destructive=True, status_tool="get_cluster_budget",
        status_args_from={"name": "cluster"},
    ),
    ToolSpec(
        name="get_team_budget", method="GET",
        path="/api/v1/clusters/{cluster}/teams/{name}/budget", toolset="teams",
        title="A team's monthly budget",
        description="A team's monthly budget against its work's cost this month, its state and "
        "warnings (80 %, 100 %); set_team_budget sets it.",
    ),
    ToolSpec(
        name="set_team_budget", method="PUT",
        path="/api/v1/clusters/{cluster}/teams/{name}/budget", toolset="teams",
        title="Set a team's monthly budget",
        description="Set a team's monthly budget (USD) the user names. Immediate: confirm with "
        "get_team_budget.",
        mutating=True, status_tool="get_team_budget",
        status_args_from={"cluster": "cluster", "name": "team"},
    ),
    ToolSpec(
        name="clear_team_budget", method="DELETE",
        path="/api/v1/clusters/{cluster}/teams/{name}/budget", toolset="teams",
        title="Clear a team's monthly budget",
        description="Remove a team's monthly budget. Confirm with the user; immediate: "
        "get_team_budget shows it unset.",
        mutating=True, destructive=True, status_tool="get_team_budget",
        status_args_from={"cluster": "cluster", "name": "team"},
    ),
)



GROUP_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_instance_groups", method="GET",
        toolset="capacity",
        path="/api/v1/clusters/{cluster}/instance-groups",
        title="List instance groups",
        description="A cluster's instance groups, with nodes by status and the operation "
        "changing each. Before add_instance_group or update_instance_group.",
    ),
    ToolSpec(
        name="get_instance_group", method="GET",
        toolset="capacity",
        path="/api/v1/clusters/{cluster}/instance-groups/{name}", title="Get an instance group",
        description="One instance group of a cluster, as list_instance_groups shows each.",
    ),
    ToolSpec(
        name="add_instance_group", method="POST",
        toolset="capacity",
        path="/api/v1/clusters/{cluster}/instance-groups", title="Add an instance group",
        description="Add capacity as a new instance group. Ask the user type, count, capacity "
        "type and zone: fixed for the group's life, as are EFA mode and subnet (leave subnet_id "
        "unset: hypd makes one)." + _FOLLOW,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="update_instance_group", method="PATCH",
        toolset="capacity",
        path="/api/v1/clusters/{cluster}/instance-groups/{name}",
        title="Change an instance group",
        description="Change only what the user asked; type, capacity type, EFA mode and "
        "placement are fixed (immutable_field: add a group instead)." + _FOLLOW,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="delete_instance_group", method="DELETE",
        toolset="capacity",
        path="/api/v1/clusters/{cluster}/instance-groups/{name}",
        title="Delete an instance group",
        description="Delete a group, its nodes and its subnet; never the cluster's last. in_use "
        "while pods that would not come back elsewhere (bare, a training job's) run on it." +
        _CONFIRM + _FOLLOW,
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
)


SOFTWARE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="update_cluster_software", method="POST",
        toolset="clusters",
        path="/api/v1/clusters/{name}/software-update", title="Update node software",
        description="Update the nodes' HyperPod software (AMI, drivers, agents) node by node; "
        "their pods are disrupted: confirm with the user." + _FOLLOW,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="upgrade_kubernetes", method="POST",
        toolset="clusters",
        path="/api/v1/clusters/{name}/kubernetes-version", title="Upgrade Kubernetes",
        description="Upgrade EKS Kubernetes one minor version (get_cluster shows the current) "
        "with its add-ons; 10-20 minutes, no undo: confirm with the user." + _FOLLOW,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
)


_NODE_FOLLOW = " A refused node fails the operation (its step names it)." + _FOLLOW

NODE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_nodes", method="GET", path="/api/v1/clusters/{cluster}/nodes",
        toolset="capacity",
        title="List a cluster's nodes",
        description="A cluster's nodes, a page at a time (pass next_cursor as cursor until "
        "null). Start node investigations here, then get_node.",
    ),
    ToolSpec(
        name="get_node", method="GET", path="/api/v1/clusters/{cluster}/nodes/{node_id}",
        toolset="capacity",
        title="Get a node",
        description="One node, with its pods (what a reboot, replace or delete disrupts). "
        "Investigate with it before reboot_nodes, then replace_nodes.",
    ),
    ToolSpec(
        name="reboot_nodes", method="POST", path="/api/v1/clusters/{cluster}/nodes/reboot",
        toolset="capacity",
        title="Reboot nodes",
        description="Reboot Running nodes (instance and disks stay); pods are disrupted, bare "
        "pods lost. The first remedy after get_node, before replace_nodes: confirm with the "
        "user, naming the pods." + _NODE_FOLLOW,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="replace_nodes", method="POST", path="/api/v1/clusters/{cluster}/nodes/replace",
        toolset="capacity",
        title="Replace nodes",
        description="Replace Running or Failure nodes by new instances (new ids) in their group; "
        "local data is lost. When a reboot did not help or a node is in Failure. in_use while "
        "pods that would not come back (bare, a training job's) run on them." + _CONFIRM +
        _NODE_FOLLOW,
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="delete_nodes", method="POST", path="/api/v1/clusters/{cluster}/nodes/delete",
        toolset="capacity",
        title="Delete nodes",
        description="Terminate nodes for good, each group shrinking by one; local data is lost. "
        "Only to shrink by chosen nodes, never as a remedy (replace_nodes). in_use while pods "
        "that would not come back (bare, a training job's) run on them." + _CONFIRM + _NODE_FOLLOW,
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
)



STORAGE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_storage", method="GET", path="/api/v1/clusters/{cluster}/storage",
        toolset="capacity",
        title="List a cluster's storage",
        description="A cluster's storage, each a claim pods mount (the shared bucket: hypd-s3 at "
        "/s3), with the workloads using it. Before add_storage; get_storage reads one.",
    ),
    ToolSpec(
        name="get_storage", method="GET", path="/api/v1/clusters/{cluster}/storage/{name}",
        toolset="capacity",
        title="Get a storage item",
        description="One storage item: who mounts it and whether removing it deletes data. Read "
        "it before remove_storage.",
    ),
    ToolSpec(
        name="add_storage", method="POST", path="/api/v1/clusters/{cluster}/storage",
        toolset="capacity",
        title="Add storage to a cluster",
        description="Mount storage as a claim named after it: s3 (a new bucket, or the user's "
        "own, never deleted) or fsx (FSx for Lustre, 5-10 minutes, billed per GiB-month: confirm "
        "with the user)." + _FOLLOW,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="remove_storage", method="DELETE",
        toolset="capacity",
        path="/api/v1/clusters/{cluster}/storage/{name}", title="Remove storage",
        description="Delete a storage item's claim and volume, and its bucket or file system "
        "only if hypd made it. in_use while workloads mount it (no force)." + _CONFIRM + _FOLLOW,
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
)



_CORE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="whoami", method="GET", path="/api/v1/auth/whoami", title="Who am I",
        toolset="operations",
        description="This token's name and role: only an operator changes things. When unsure a "
        "change is possible; then list_clusters.",
    ),
    ToolSpec(
        name="list_availability_zones", method="GET",
        toolset="capacity",
        path="/api/v1/discovery/availability-zones", title="List availability zones",
        description="A region's availability zones. Before asking the user for a zone (offer "
        "only available ones); then list_instance_types.",
    ),
    ToolSpec(
        name="list_instance_types", method="GET", path="/api/v1/discovery/instance-types",
        toolset="capacity",
        title="List instance types in a zone",
        description="HyperPod instance types in one zone (max_efa_interfaces > 1 allows "
        "efa-only). Before proposing a type; for high-end GPUs preflight, then plan_cluster or "
        "add_instance_group.",
    ),
    ToolSpec(
        name="create_network", method="POST", path="/api/v1/networks",
        toolset="clusters",
        title="Create a network",
        description="A VPC for clusters, with subnets per zone, gateways, a security group and "
        "an S3 endpoint. Ask the user only the zones (list_availability_zones), or leave them "
        "unset." + _FOLLOW,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="list_networks", method="GET", path="/api/v1/networks", title="List networks",
        toolset="clusters",
        description="hypd's networks in a region. Before create_network: reuse one that fits; "
        "get_network reads one.",
    ),
    ToolSpec(
        name="get_network", method="GET", path="/api/v1/networks/{name}", title="Get a network",
        toolset="clusters",
        description="One hypd network and what hypd made in it. delete_network removes it.",
    ),
    ToolSpec(
        name="delete_network", method="DELETE", path="/api/v1/networks/{name}",
        toolset="clusters",
        title="Delete a network",
        description="Delete a hypd network and what hypd made in it. in_use while a cluster or "
        "network interface is in its VPC (no force)." + _CONFIRM + _FOLLOW,
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="list_operations", method="GET", path="/api/v1/operations",
        toolset="operations",
        title="List operations",
        description="Operations (the panel's long-running changes), newest first. Check before "
        "changing a target; follow one with wait_operation.",
    ),
    ToolSpec(
        name="get_operation", method="GET", path="/api/v1/operations/{operation_id}",
        toolset="operations",
        title="Get an operation",
        description="One operation now: each step's phase and detail, its error. To wait for it, "
        "use wait_operation instead of polling this.",
        hidden=("wait", "after"),
    ),
    ToolSpec(
        name="wait_operation", method="GET", path="/api/v1/operations/{operation_id}",
        toolset="operations",
        title="Wait for an operation",
        description="Wait up to timeout_seconds for an operation to be terminal (succeeded, "
        "failed, cancelled); not yet: call again (a cluster takes 10-20 minutes). Failed: read "
        "its error before retry_operation; a cluster create failed or cancelled: get_cluster "
        "says what it left in AWS.",
        hidden=("wait", "after"),
        local_args=(LocalArg("timeout_seconds", {
            "type": "integer", "minimum": 1, "maximum": WAIT_MAX_SECONDS,
            "default": WAIT_DEFAULT_SECONDS,
            "description": "How long to wait at most, in seconds."}),),
        runner="wait_operation",
        follows=True,
    ),
    ToolSpec(
        name="cancel_operation", method="POST", path="/api/v1/operations/{operation_id}/cancel",
        toolset="operations",
        title="Cancel an operation",
        description="Stop a queued or running operation at its next step (what finished steps "
        "made stays, billed). Confirm with the user. A cluster create's reply names next_actions "
        "(get_cluster, then retry_operation or delete_cluster): the user chooses." + _FOLLOW,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="retry_operation", method="POST", path="/api/v1/operations/{operation_id}/retry",
        toolset="operations",
        title="Retry an operation",
        description="Run a failed or cancelled operation again from its failed step (same id); "
        "fix the cause in its error first." + _FOLLOW,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
)

FEATURE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="get_features", method="GET", path="/api/v1/clusters/{cluster}/features",
        toolset="capacity",
        title="Get a cluster's managed features",
        description="A cluster's managed features as they are, what each requires, autoscaling "
        "per group. Read before update_features.",
    ),
    ToolSpec(
        name="update_features", method="PATCH", path="/api/v1/clusters/{cluster}/features",
        toolset="capacity",
        title="Turn managed features on or off",
        description="Turn one managed feature on or off or change its options, passing only what "
        "changes, e.g. {\"autoscaling\": {\"enabled\": true, \"groups\": {\"workers\": "
        "{\"min\": 0, \"max\": 4}}}}. What it needs is installed first; off keeps what another "
        "feature needs, and is in_use while work uses it. Autoscaling scales HyperPod groups "
        "only, not EC2: say so." + _FOLLOW,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
)


DIAGNOSTIC_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="diagnose_cluster", method="GET",
        toolset="operations",
        path="/api/v1/clusters/{cluster}/diagnostics/{kind}", title="Diagnose a cluster",
        description="Read-only diagnosis by kind: creation (why a create failed or stopped), "
        "node-health (nodes failed, awaiting reboot or replacement, or not Ready), nccl (pods' "
        "logs and events against known NCCL, EFA, Xid and OOM failures; job or namespace if the "
        "user names one). Suggestions are calls (get_node, reboot_nodes, replace_nodes, "
        "run_cluster_stage).",
    ),
)



JOB_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="get_training_limits", method="GET", path="/api/v1/training/limits",
        toolset="training",
        title="Training recipes and limits",
        description="The recipes, what each needs, and what elastic training (max_nodes above "
        "nodes) cannot combine with. Read before proposing a job; submit_job follows.",
    ),
    ToolSpec(
        name="submit_job", method="POST", path="/api/v1/clusters/{cluster}/jobs",
        toolset="training",
        title="Submit a training job",
        description="Submit a training job: torchrun, llama-factory and ms-swift run under "
        "HyperPod's training operator (its feature on: update_features; the image with "
        "HyperPod's elastic agent), verl as a RayJob. Pods mount the bucket at /s3; output goes "
        "to /s3/jobs/<job>/. Follow with wait_operation, then get_job (waiting says why pods "
        "wait).",
        notes={"max_nodes": "See get_training_limits for what it excludes."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="list_jobs", method="GET", path="/api/v1/clusters/{cluster}/jobs",
        toolset="training",
        title="List training jobs",
        description="A cluster's training jobs; filter by state or recipe. get_job reads one.",
    ),
    ToolSpec(
        name="get_job", method="GET", path="/api/v1/clusters/{cluster}/jobs/{job}",
        toolset="training",
        title="Get a training job",
        description="One training job now: why pods wait, restarts and recovery budget, /s3 "
        "paths, its MLflow run (get_mlflow_ui_url). Call again to follow it; get_job_logs for "
        "its output.",
    ),
    ToolSpec(
        name="delete_job", method="DELETE", path="/api/v1/clusters/{cluster}/jobs/{job}",
        toolset="training",
        title="Delete a training job",
        description="Stop and delete a training job and its pods (its files under /s3 stay); "
        "in_use while it is unfinished." + _CONFIRM + _FOLLOW,
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="get_job_logs", method="GET", path="/api/v1/clusters/{cluster}/jobs/{job}/logs",
        toolset="training",
        title="Read a training job's logs",
        description="A job's last lines with pod and time (ask a small tail first); previous "
        "reads a restarted container's last run (why it failed). get_job shows its state.",
    ),
)

MLFLOW_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="get_mlflow", method="GET", path="/api/v1/clusters/{cluster}/mlflow",
        toolset="training",
        title="Get a cluster's MLflow tracking server",
        description="The cluster's MLflow tracking server (SageMaker managed MLflow), whether "
        "hypd made it, the role jobs log as. Before set_mlflow; get_job names a job's experiment.",
    ),
    ToolSpec(
        name="set_mlflow", method="PUT", path="/api/v1/clusters/{cluster}/mlflow",
        toolset="training",
        title="Create or attach an MLflow tracking server",
        description="Give a cluster MLflow tracking: without tracking_server hypd makes one "
        "(about 20 minutes, billed hourly: confirm with the user); with one, it is attached and "
        "never deleted. Jobs submitted afterwards (submit_job) log to it." + _FOLLOW,
        notes={"tracking_server": "Ask the user whether to attach one."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="detach_mlflow", method="DELETE", path="/api/v1/clusters/{cluster}/mlflow",
        toolset="training",
        title="Detach the MLflow tracking server",
        description="Detach the cluster's MLflow tracking server; it and its runs are deleted "
        "only if hypd made it (get_mlflow: made_by_hypd). in_use while jobs log to it." + _CONFIRM +
        _FOLLOW,
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="get_mlflow_ui_url", method="GET", path="/api/v1/clusters/{cluster}/mlflow/ui-url",
        toolset="training",
        title="Open the MLflow UI",
        description="A presigned MLflow UI URL, valid 5 minutes, for the user to open; a "
        "credential: never log, store or repeat it. get_mlflow says whether a server is attached.",
    ),
)



ENDPOINT_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_endpoints", method="GET", path="/api/v1/clusters/{cluster}/endpoints",
        toolset="inference",
        title="List a cluster's inference endpoints",
        description="A cluster's inference endpoints and their state. get_endpoint reads one.",
    ),
    ToolSpec(
        name="get_endpoint", method="GET", path="/api/v1/clusters/{cluster}/endpoints/{name}",
        toolset="inference",
        title="Get an inference endpoint",
        description="One inference endpoint now, with why servers wait and a pool's workers. "
        "invoke_endpoint tests it.",
    ),
    ToolSpec(
        name="create_endpoint", method="POST", path="/api/v1/clusters/{cluster}/endpoints",
        toolset="inference",
        title="Create an inference endpoint",
        description="Serve a model from the cluster's bucket (list_models) behind a Service, an "
        "internet-facing NLB (confirm with the user) or a model pool (reassign_endpoint_worker); "
        "kind managed needs its feature on (get_features)." + _FOLLOW,
        notes={"gpus": "Never guess it."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="update_endpoint", method="PATCH",
        toolset="inference",
        path="/api/v1/clusters/{cluster}/endpoints/{name}", title="Change an inference endpoint",
        description="Change only what the user asked: replicas, autoscaling or routing. A pool "
        "scales in by unassigned workers only (else conflict)." + _FOLLOW,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="delete_endpoint", method="DELETE",
        toolset="inference",
        path="/api/v1/clusters/{cluster}/endpoints/{name}", title="Delete an inference endpoint",
        description="Delete an endpoint and all hypd made for it (servers, Services, load "
        "balancer, router, autoscaler); the model stays. A pool is in_use while its workers "
        "serve models." + _CONFIRM + _FOLLOW,
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="reassign_endpoint_worker", method="POST",
        toolset="inference",
        path="/api/v1/clusters/{cluster}/endpoints/{name}/reassign",
        title="Reassign a pool worker to a model",
        description="Point one model-pool worker at another of the pool's models (or none); it "
        "reloads in place. Read the workers with get_endpoint first." + _FOLLOW,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="invoke_endpoint", method="POST",
        toolset="inference",
        path="/api/v1/clusters/{cluster}/endpoints/{name}/invoke",
        title="Send a test completion to an endpoint",
        description="Send one OpenAI-compatible completion to the endpoint and return the answer "
        "(a pool needs model). It uses the endpoint's GPUs, so it is an operator's; no "
        "operation: get_endpoint shows the endpoint.",
        mutating=True, status_tool="get_endpoint",
        status_args_from={"cluster": "cluster", "name": "endpoint"},
    ),
)


MODEL_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_models", method="GET", path="/api/v1/clusters/{cluster}/models",
        toolset="inference",
        title="List the models in a cluster's bucket",
        description="Models in the cluster's bucket (models/) and downloads running or failed. "
        "Before create_endpoint or download_model.",
    ),
    ToolSpec(
        name="download_model", method="POST", path="/api/v1/clusters/{cluster}/models",
        toolset="inference",
        title="Download a model into a cluster's bucket",
        description="Fetch a model into models/<name>/ of the cluster's bucket: a Hugging Face "
        "repo and revision, or an S3 prefix. Gated: name the Secret holding the user's token "
        "(hub_token_secret), never the token." + _FOLLOW,
        notes={"repo": "Ask the user which model (and revision) they want."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="remove_model", method="DELETE", path="/api/v1/clusters/{cluster}/models/{name}",
        toolset="inference",
        title="Remove a model from a cluster's bucket",
        description="Delete a model's files from the cluster's bucket for good (not while it "
        "downloads); in_use while endpoints serve it." + _CONFIRM + _FOLLOW,
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
)


SPACE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_spaces", method="GET", path="/api/v1/clusters/{cluster}/spaces",
        toolset="spaces",
        title="List a cluster's Dev spaces",
        description="A cluster's JupyterLab and Code Editor spaces. get_space reads one.",
    ),
    ToolSpec(
        name="get_space", method="GET", path="/api/v1/clusters/{cluster}/spaces/{name}",
        toolset="spaces",
        title="Read one Dev space",
        description="One space: its URL and a remote IDE's port-forward, idle time, why it "
        "waits. stop_space frees its compute.",
    ),
    ToolSpec(
        name="create_space", method="POST", path="/api/v1/clusters/{cluster}/spaces",
        toolset="spaces",
        title="Create a Dev space",
        description="A JupyterLab or Code Editor space on one instance group, with the bucket at "
        "/s3 and its own home volume; it stops when idle. Needs the spaces feature "
        "(update_features)." + _FOLLOW + " Done when the editor runs: get_space gives the URL.",
        notes={"instance_group": "Ask the user.",
               "gpus": "Only if the user asks for GPUs: a space holds them while it runs."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="update_space", method="PATCH", path="/api/v1/clusters/{cluster}/spaces/{name}",
        toolset="spaces",
        title="Resize a Dev space or change its idle shutdown",
        description="Change only the given fields; a running space restarts its editor: tell the "
        "user unsaved kernel state is lost. Owner only." + _FOLLOW,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="stop_space", method="POST", path="/api/v1/clusters/{cluster}/spaces/{name}/stop",
        toolset="spaces",
        title="Stop a Dev space",
        description="Stop a space: its pod goes, compute is freed; its home volume and settings "
        "stay for start_space. Owner only." + _FOLLOW,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="start_space", method="POST",
        toolset="spaces",
        path="/api/v1/clusters/{cluster}/spaces/{name}/start",
        title="Start a Dev space",
        description="Start a stopped space (one its idle shutdown stopped too). Owner only; "
        "get_space gives the URL." + _FOLLOW,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="delete_space", method="DELETE",
        toolset="spaces",
        path="/api/v1/clusters/{cluster}/spaces/{name}",
        title="Delete a Dev space",
        description="Delete a space with its home volume and every file on it (/s3 stays). Owner "
        "only, or another's with force: confirm with the user." + _FOLLOW,
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
)


TEAM_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="get_scheduler", method="GET", path="/api/v1/clusters/{cluster}/scheduler",
        toolset="teams",
        title="Read a cluster's scheduler config",
        description="Priority classes with weights, fair share, SageMaker status and version; "
        "not_found until put_scheduler makes one.",
    ),
    ToolSpec(
        name="put_scheduler", method="PUT", path="/api/v1/clusters/{cluster}/scheduler",
        toolset="teams",
        title="Set a cluster's scheduler config",
        description="Create or replace the priority classes and fair share (updates from the "
        "version read now). Needs the task_governance feature (update_features)." + _FOLLOW,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="delete_scheduler", method="DELETE", path="/api/v1/clusters/{cluster}/scheduler",
        toolset="teams",
        title="Delete a cluster's scheduler config",
        description="Remove the priority classes and fair share; in_use while any team has a "
        "quota: confirm with the user." + _FOLLOW,
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="list_teams", method="GET", path="/api/v1/clusters/{cluster}/teams",
        toolset="teams",
        title="List a cluster's teams",
        description="Each team's compute quota and state, namespace and queues, and the "
        "scheduler config. get_team adds what Kueue admitted and what waits.",
    ),
    ToolSpec(
        name="get_team", method="GET", path="/api/v1/clusters/{cluster}/teams/{name}",
        toolset="teams",
        title="Read one team",
        description="A team's quota, SageMaker state, namespace, queues and its ClusterQueue's "
        "admitted and pending work and usage. update_team changes it.",
    ),
    ToolSpec(
        name="create_team", method="POST", path="/api/v1/clusters/{cluster}/teams",
        toolset="teams",
        title="Create a team",
        description="A team's compute quota: instances per type, borrowing, lending, "
        "preemption, fair-share weight. Needs the task_governance feature." + _FOLLOW,
        notes={"quota": "Ask the user: instance types of the cluster's groups."},
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="update_team", method="PATCH", path="/api/v1/clusters/{cluster}/teams/{name}",
        toolset="teams",
        title="Change a team's quota",
        description="Change only the given fields of a team's quota." + _FOLLOW,
        mutating=True, status_tool="wait_operation", status_args_from=_BY_OPERATION,
    ),
    ToolSpec(
        name="delete_team", method="DELETE", path="/api/v1/clusters/{cluster}/teams/{name}",
        toolset="teams",
        title="Delete a team",
        description="Delete a team's quota; in_use while work runs in its namespace: confirm "
        "with the user." + _FOLLOW,
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from=_BY_OPERATION,
    ),
)


AUDIT_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_audit", method="GET", path="/api/v1/audit", title="Read the audit log",
        toolset="operations",
        description="The audit log, newest first: every mutation and refusal with who, route, "
        "target, operation and outcome; next_before pages back. Operators only; get_operation "
        "reads an entry's operation.",
    ),
)

TOOLS: tuple[ToolSpec, ...] = (*_CORE_TOOLS, *CLUSTER_TOOLS, *GROUP_TOOLS, *SOFTWARE_TOOLS,
                               *NODE_TOOLS, *STORAGE_TOOLS, *FEATURE_TOOLS, *DIAGNOSTIC_TOOLS,
                               *JOB_TOOLS, *MLFLOW_TOOLS, *ENDPOINT_TOOLS, *MODEL_TOOLS,
                               *SPACE_TOOLS, *TEAM_TOOLS, *AUDIT_TOOLS)

TOOLS_BY_NAME: dict[str, ToolSpec] = {t.name: t for t in TOOLS}
