"""The declared MCP tool table: one row per tool, each a call of the hypd REST API.

A row says everything the server needs to publish and run a tool: its name, the HTTP method
and path template it calls, its arguments (JSON type, required or not, a description, and
where each one goes: the path, the query string or the JSON body), a description written for
an agent, whether it is read-only or mutating, and for a mutating tool the status tool that
tells when the change is done (and where its arguments come from in the REST reply).

Nothing here runs anything: `mcp_server/server.py` turns the rows into tools. Adding a
resource adds rows here and nothing else in this package.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

JsonType = Literal["string", "integer", "number", "boolean", "array", "object"]
Location = Literal["path", "query", "body", "header", "local"]
"""Where an argument goes: the URL path, the query string, the JSON body, a header, or
nowhere ("local": the MCP server itself uses it, e.g. wait_operation's timeout)."""
Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]

NAME_PATTERN = r"^[a-z][a-z0-9-]{0,31}$"
"""The one rule for every user-chosen name (DESIGN.md, Contracts: Names)."""

TERMINAL_STATUSES = ("succeeded", "failed", "cancelled")
OPERATION_STATUSES = ("queued", "running", *TERMINAL_STATUSES)

WAIT_MAX_SECONDS = 60
WAIT_DEFAULT_SECONDS = 30


@dataclass(frozen=True)
class Arg:
    """One tool argument."""

    name: str
    type: JsonType
    description: str
    location: Location = "body"
    required: bool = False
    items: JsonType | None = None  # item type of an array
    enum: tuple[str, ...] | None = None
    pattern: str | None = None
    minimum: int | None = None
    maximum: int | None = None
    min_items: int | None = None
    max_items: int | None = None
    default: Any = None

    def json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": self.type, "description": self.description}
        if self.items:
            schema["items"] = {"type": self.items}
        if self.enum:
            schema["enum"] = list(self.enum)
        if self.pattern:
            schema["pattern"] = self.pattern
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        if self.min_items is not None:
            schema["minItems"] = self.min_items
        if self.max_items is not None:
            schema["maxItems"] = self.max_items
        if self.default is not None:
            schema["default"] = self.default
        return schema


IDEMPOTENCY_ARG = Arg(
    "idempotency_key",
    "string",
    "Optional. Leave unset: the server derives a key from the tool name and arguments that "
    "stays the same for 10 minutes, so repeating this exact call (for example after a lost "
    "reply) returns the same operation instead of starting a second one. Pass a new value "
    "only to deliberately repeat a change you already made in the last 10 minutes (for "
    "example re-creating something you deleted).",
    location="header",
)


@dataclass(frozen=True)
class ToolSpec:
    """One row of the table."""

    name: str
    method: Method
    path: str  # template, e.g. "/api/v1/networks/{name}"
    title: str
    description: str
    args: tuple[Arg, ...] = ()
    mutating: bool = False
    destructive: bool = False
    # For a mutating tool: the tool that tells when the change is done, and where each of
    # its arguments is found in the REST reply (dotted paths). The REST 202 reply already
    # carries status_tool/status_args; these fill them in when a reply lacks them.
    status_tool: str | None = None
    status_args_from: dict[str, str] = field(default_factory=dict)
    # A tool whose behaviour is more than one REST call names its runner in server.py.
    runner: str | None = None
    # Query parameters always sent (e.g. dry_run=true for a planning tool).
    fixed_query: dict[str, str] = field(default_factory=dict)

    @property
    def read_only(self) -> bool:
        return not self.mutating

    @property
    def all_args(self) -> tuple[Arg, ...]:
        """The arguments an agent may pass (mutating tools also take `idempotency_key`)."""
        return (*self.args, IDEMPOTENCY_ARG) if self.mutating else self.args

    def input_schema(self) -> dict[str, Any]:
        args = self.all_args
        return {
            "type": "object",
            "properties": {a.name: a.json_schema() for a in args},
            "required": [a.name for a in args if a.required],
            "additionalProperties": False,
        }

    def output_schema(self) -> dict[str, Any]:
        if not self.mutating:
            return {"type": "object", "additionalProperties": True}
        return {
            "type": "object",
            "properties": {
                "operation": {"type": "object", "description": "The operation record."},
                "changed": {"type": "boolean"},
                "resource_url": {"type": ["string", "null"]},
                "status_route": {"type": ["string", "null"]},
                "status_tool": {
                    "type": ["string", "null"],
                    "description": "Call this tool with status_args until a terminal status "
                    "(null when nothing needed doing).",
                },
                "status_args": {"type": "object"},
                "poll_after_seconds": {"type": "number"},
                "idempotency_key": {"type": "string"},
                "replayed": {"type": "boolean"},
                "note": {"type": "string"},
            },
            "required": ["status_tool", "status_args", "poll_after_seconds"],
            "additionalProperties": True,
        }


_FOLLOW = (
    " Returns at once with an operation; call wait_operation with status_args until the "
    "status is succeeded, failed or cancelled, and report that outcome, not the submission."
)

_CLUSTER_NAME = Arg("name", "string", "Name of the cluster.", location="path", required=True)
_CREATE_CLUSTER_ARGS = (
    Arg("name", "string", "Name of the cluster (lowercase letters, digits and '-', starting "
        "with a letter, at most 32 characters).", required=True, pattern=NAME_PATTERN),
    Arg("availability_zone", "string", "Zone for the accelerator instances (ask the user; "
        "see list_availability_zones and list_instance_types).", required=True),
    Arg("instance_type", "string", "HyperPod instance type offered in that zone, e.g. "
        "ml.p5.48xlarge (ask the user).", required=True),
    Arg("instance_count", "integer", "Number of instances in the first group.", required=True,
        minimum=1, maximum=500),
    Arg("capacity_type", "string", "on-demand, spot, or training-plan (ask the user).",
        enum=("on-demand", "spot", "training-plan")),
    Arg("training_plan_arn", "string", "The training plan reservation, with capacity_type "
        "training-plan."),
    Arg("efa_mode", "string", "efa (default), or efa-only for types with several EFA "
        "interfaces.", enum=("efa", "efa-only")),
    Arg("deep_health_checks", "boolean", "Run GPU stress and EFA connectivity checks before "
        "nodes accept work (slower start)."),
    Arg("region", "string", "AWS region. Default: the panel's region."),
    Arg("existing_vpc", "object", "Use an existing VPC instead of creating a network: "
        "{vpc_id, subnet_ids (two zones or more), security_group_id?}."),
    Arg("kubernetes_version", "string", "EKS Kubernetes version; default 1.33.",
        enum=("1.31", "1.32", "1.33")),
    Arg("fsx", "object", "Also make an FSx for Lustre file system beside the instances, "
        "mounted as claim hypd-fsx: {storage_capacity_gib (1200 or a multiple of 2400, "
        "default 1200), deployment_type (PERSISTENT_2 default, or SCRATCH_2)}. Only if the "
        "user asks for a shared file system; it costs per GiB-month."),
)

CLUSTER_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_clusters", method="GET", path="/api/v1/clusters", title="List clusters",
        description="Clusters hypd created (found by tags) and imported ones, with EKS "
        "status. Look here first before proposing a new cluster.",
    ),
    ToolSpec(
        name="get_cluster", method="GET", path="/api/v1/clusters/{name}", title="Get a cluster",
        description="One cluster: EKS and HyperPod status, each create stage's status, "
        "instance groups, node counts by health, features and recent HyperPod events.",
        args=(_CLUSTER_NAME,),
    ),
    ToolSpec(
        name="plan_cluster", method="POST", path="/api/v1/clusters",
        fixed_query={"dry_run": "true"}, title="Plan a cluster (dry run)",
        description="What create_cluster would make (every stage, step and resource), an "
        "hourly cost estimate and the quota/reservation preflight, changing nothing. Show "
        "this to the user before create_cluster.",
        args=_CREATE_CLUSTER_ARGS,
    ),
    ToolSpec(
        name="create_cluster", method="POST", path="/api/v1/clusters", title="Create a cluster",
        description="Create an EKS + HyperPod cluster in stages: network, eks (8-12 minutes "
        "on AWS), activate, dependencies, hyperpod, storage (the shared S3 bucket at /s3). "
        "Ask the user only the decisions (zone, instance type, count, capacity type); CIDRs, "
        "subnets, route tables and security groups are the panel's job. Refused with "
        "precondition_failed when a quota or reservation does not cover the request." + _FOLLOW,
        args=_CREATE_CLUSTER_ARGS, mutating=True, status_tool="wait_operation",
        status_args_from={"operation_id": "operation.id"},
    ),
    ToolSpec(
        name="delete_cluster", method="DELETE", path="/api/v1/clusters/{name}",
        title="Delete a cluster",
        description="Delete everything hypd made for the cluster, in reverse order (load "
        "balancers and volume claims first). The shared S3 bucket is kept unless delete_data "
        "is true. An imported cluster is only forgotten; its AWS resources are untouched. "
        "Confirm with the user first." + _FOLLOW,
        args=(_CLUSTER_NAME,
              Arg("delete_data", "boolean", "Also delete the shared S3 bucket and its data.",
                  location="query")),
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from={"operation_id": "operation.id"},
    ),
    ToolSpec(
        name="run_cluster_stage", method="POST",
        path="/api/v1/clusters/{name}/stages/{stage}/run", title="Re-run a cluster stage",
        description="Run one stage of the cluster's create again on its own (after fixing "
        "what made it fail). It adopts what exists and creates only what is missing." + _FOLLOW,
        args=(_CLUSTER_NAME,
              Arg("stage", "string", "The stage.", location="path", required=True,
                  enum=("network", "eks", "activate", "dependencies", "hyperpod", "storage"))),
        mutating=True, status_tool="wait_operation",
        status_args_from={"operation_id": "operation.id"},
    ),
    ToolSpec(
        name="import_cluster", method="POST", path="/api/v1/clusters/import",
        title="Import an existing cluster",
        description="Adopt an existing EKS cluster (and its HyperPod cluster) read-only: it "
        "becomes listable and usable; deleting it in hypd never deletes its AWS resources. "
        "Takes effect at once; confirm with get_cluster.",
        args=(Arg("name", "string", "The EKS cluster's name.", required=True),
              Arg("hyperpod_cluster", "string", "The HyperPod cluster on it, if any."),
              Arg("region", "string", "AWS region. Default: the panel's region.")),
        mutating=True, status_tool="get_cluster", status_args_from={"name": "name"},
    ),
    ToolSpec(
        name="get_kubeconfig", method="GET", path="/api/v1/clusters/{name}/kubeconfig",
        title="Get a kubeconfig",
        description="A kubeconfig for the cluster that authenticates with `aws eks get-token` "
        "(the user's own AWS credentials decide what kubectl may do).",
        args=(_CLUSTER_NAME,),
    ),
    ToolSpec(
        name="get_active_cluster", method="GET", path="/api/v1/active-cluster",
        title="Get the active cluster",
        description="The cluster this token works on by default (each token has its own; "
        "null when none is chosen). Creating a cluster makes it the creator's active one.",
    ),
    ToolSpec(
        name="set_active_cluster", method="PUT", path="/api/v1/active-cluster",
        title="Set the active cluster",
        description="Choose the cluster this token works on by default. Takes effect at once; "
        "confirm with get_active_cluster.",
        args=(Arg("name", "string", "Name of the cluster.", required=True,
                  pattern=NAME_PATTERN),),
        mutating=True, status_tool="get_active_cluster",
    ),
    ToolSpec(
        name="preflight", method="GET", path="/api/v1/preflight", title="Preflight capacity",
        description="Read-only checks that service quotas and training-plan reservations cover "
        "a capacity request, with what is missing and how to ask for it. Run before proposing "
        "a cluster with high-end GPUs.",
        args=(
            Arg("instance_type", "string", "e.g. ml.p5.48xlarge", location="query",
                required=True),
            Arg("count", "integer", "Number of instances.", location="query", required=True,
                minimum=1, maximum=500),
            Arg("capacity_type", "string", "on-demand, spot or training-plan.",
                location="query", enum=("on-demand", "spot", "training-plan")),
            Arg("training_plan_arn", "string", "With training-plan.", location="query"),
            Arg("region", "string", "AWS region.", location="query"),
        ),
    ),
)


_CLUSTER = Arg("cluster", "string", "Name of the cluster.", location="path", required=True)
_STORAGE_NAME = Arg("name", "string", "Name of the storage item (its claim's name).",
                    location="path", required=True)

STORAGE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_storage", method="GET", path="/api/v1/clusters/{cluster}/storage",
        title="List a cluster's storage",
        description="Storage mounted in a cluster: S3 buckets and FSx for Lustre file systems, "
        "each a PersistentVolumeClaim pods mount by name (the create's shared bucket is "
        "hypd-s3, at /s3), with the bucket or file system, its state (creating, available, "
        "deleting, failed, incomplete) and the workloads using it.",
        args=(_CLUSTER,),
    ),
    ToolSpec(
        name="get_storage", method="GET", path="/api/v1/clusters/{cluster}/storage/{name}",
        title="Get a storage item",
        description="One storage item of a cluster: its claim and namespace, bucket or file "
        "system (lifecycle, DNS and mount name), state, the workloads mounting it, and whether "
        "removing it deletes data (deletes_data).",
        args=(_CLUSTER, _STORAGE_NAME),
    ),
    ToolSpec(
        name="add_storage", method="POST", path="/api/v1/clusters/{cluster}/storage",
        title="Add storage to a cluster",
        description="Mount storage in a cluster as a PersistentVolumeClaim named after it: "
        "kind s3 (a new bucket hypd makes, or an existing bucket the user names in "
        "s3.bucket, which hypd never deletes) or kind fsx (an FSx for Lustre file system, "
        "5-10 minutes on AWS, billed per GiB-month: confirm with the user)." + _FOLLOW,
        args=(
            _CLUSTER,
            Arg("name", "string", "Name of the storage item and of its claim (lowercase "
                "letters, digits and '-', starting with a letter, at most 32 characters).",
                required=True, pattern=NAME_PATTERN),
            Arg("kind", "string", "s3 or fsx.", required=True, enum=("s3", "fsx")),
            Arg("namespace", "string", "Kubernetes namespace of the claim; default `default` "
                "(it must exist)."),
            Arg("s3", "object", "With kind s3: {bucket? (an existing bucket to mount; unset "
                "for a new one), prefix? (mount only this prefix), read_only? (default "
                "false)}."),
            Arg("fsx", "object", "With kind fsx: {storage_capacity_gib (1200 or a multiple of "
                "2400, default 1200), deployment_type (PERSISTENT_2 default, or SCRATCH_2), "
                "per_unit_storage_throughput? (125, 250, 500 or 1000 MB/s/TiB, PERSISTENT_2)}."),
        ),
        mutating=True, status_tool="wait_operation",
        status_args_from={"operation_id": "operation.id"},
    ),
    ToolSpec(
        name="remove_storage", method="DELETE",
        path="/api/v1/clusters/{cluster}/storage/{name}", title="Remove storage",
        description="Unmount a storage item: delete its claim and volume, and its bucket or "
        "file system only if hypd made it for this item (get_storage says so in "
        "deletes_data; a bucket the user named is never deleted). Refused with conflict, "
        "naming them, while running workloads mount it: stop those first. Confirm with the "
        "user first." + _FOLLOW,
        args=(_CLUSTER, _STORAGE_NAME),
        mutating=True, destructive=True, status_tool="wait_operation",
        status_args_from={"operation_id": "operation.id"},
    ),
)


_CORE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="whoami",
        method="GET",
        path="/api/v1/auth/whoami",
        title="Who am I",
        description="Name and role (viewer or operator) of the token this server calls the "
        "hypd API with. A viewer can read and diagnose; only an operator can change things.",
    ),
    ToolSpec(
        name="list_availability_zones",
        method="GET",
        path="/api/v1/discovery/availability-zones",
        title="List availability zones",
        description="Availability zones of a region, with zone id and state. Call this before "
        "asking the user to choose a zone, and offer only zones whose state is available.",
        args=(
            Arg("region", "string", "AWS region, e.g. us-west-2. Default: the panel's region.",
                location="query"),
        ),
    ),
    ToolSpec(
        name="list_instance_types",
        method="GET",
        path="/api/v1/discovery/instance-types",
        title="List instance types in a zone",
        description="HyperPod instance types offered in one availability zone, with vCPUs, "
        "memory, accelerator kind/name/count/memory and EFA support (max_efa_interfaces > 1 "
        "allows the efa-only interface mode). Call this before proposing an instance type.",
        args=(
            Arg("availability_zone", "string", "Availability zone name, e.g. us-west-2a "
                "(from list_availability_zones).", location="query", required=True),
            Arg("region", "string", "AWS region. Default: the panel's region.",
                location="query"),
        ),
    ),
    ToolSpec(
        name="create_network",
        method="POST",
        path="/api/v1/networks",
        title="Create a network",
        description="Create a network for clusters: a VPC with public and private subnets in "
        "each chosen availability zone, internet and NAT gateways, routes, a security group "
        "and an S3 endpoint, all tagged as managed by hypd. CIDRs, route tables and security "
        "groups are the panel's job: leave cidr unset unless the user asked for one. Ask the "
        "user only which availability zones to use (see list_availability_zones), or leave "
        "them unset for the first two available." + _FOLLOW,
        args=(
            Arg("name", "string", "Name of the network (lowercase letters, digits and '-', "
                "starting with a letter, at most 32 characters).", required=True,
                pattern=NAME_PATTERN),
            Arg("region", "string", "AWS region, e.g. us-west-2. Default: the panel's region."),
            Arg("cidr", "string", "Private IPv4 block of the VPC, /16 to /18. Default "
                "10.0.0.0/16; set it only when the user asks or it overlaps a network they "
                "must peer with."),
            Arg("availability_zones", "array", "2 to 6 availability zone names of the region "
                "for the subnets. Default: the region's first two available zones.",
                items="string", min_items=2, max_items=6),
        ),
        mutating=True,
        status_tool="wait_operation",
        status_args_from={"operation_id": "operation.id"},
    ),
    ToolSpec(
        name="list_networks",
        method="GET",
        path="/api/v1/networks",
        title="List networks",
        description="Networks managed by hypd in a region (read from AWS by their tags), with "
        "VPC, subnets, gateways and state. Look here before creating a network: reuse one if "
        "it fits.",
        args=(
            Arg("region", "string", "AWS region. Default: the panel's region.",
                location="query"),
        ),
    ),
    ToolSpec(
        name="get_network",
        method="GET",
        path="/api/v1/networks/{name}",
        title="Get a network",
        description="One network managed by hypd: VPC id, CIDR, state, availability zones, "
        "subnets (id, CIDR, zone, public or private), gateways, security group, S3 endpoint.",
        args=(
            Arg("name", "string", "Name of the network.", location="path", required=True),
            Arg("region", "string", "AWS region of the network. Default: the panel's region.",
                location="query"),
        ),
    ),
    ToolSpec(
        name="delete_network",
        method="DELETE",
        path="/api/v1/networks/{name}",
        title="Delete a network",
        description="Delete a hypd-managed network and everything in it that hypd created "
        "(found by tags, never by name alone). Refused while a cluster or another operation "
        "uses it. Confirm with the user first." + _FOLLOW,
        args=(
            Arg("name", "string", "Name of the network.", location="path", required=True),
            Arg("region", "string", "AWS region of the network. Default: the panel's region.",
                location="query"),
        ),
        mutating=True,
        destructive=True,
        status_tool="wait_operation",
        status_args_from={"operation_id": "operation.id"},
    ),
    ToolSpec(
        name="list_operations",
        method="GET",
        path="/api/v1/operations",
        title="List operations",
        description="Operations (the panel's long-running changes), newest first, with status "
        "and steps. Filter by status, kind (e.g. network.create) or target (e.g. network/lab). "
        "Use it to find what is running before starting a change on the same target.",
        args=(
            Arg("status", "string", "Only operations in this status.", location="query",
                enum=OPERATION_STATUSES),
            Arg("kind", "string", "Only operations of this kind, e.g. network.create.",
                location="query"),
            Arg("target", "string", "Only operations on this target path, e.g. network/lab.",
                location="query"),
            Arg("limit", "integer", "At most this many operations (default 50).",
                location="query", minimum=1, maximum=500),
        ),
    ),
    ToolSpec(
        name="get_operation",
        method="GET",
        path="/api/v1/operations/{operation_id}",
        title="Get an operation",
        description="One operation now: status (queued, running, succeeded, failed, "
        "cancelled), each step's phase, attempts and detail, and the error if it failed. "
        "To wait for it to finish, use wait_operation instead of calling this repeatedly.",
        args=(Arg("operation_id", "string", "Operation id (op_...).", location="path",
                  required=True),),
    ),
    ToolSpec(
        name="wait_operation",
        method="GET",
        path="/api/v1/operations/{operation_id}",
        title="Wait for an operation",
        description="Wait until an operation reaches a terminal status (succeeded, failed, "
        "cancelled) or timeout_seconds pass, then return it; no need to sleep between calls. "
        "If terminal is false, call wait_operation again with the same operation_id. A cluster "
        "takes 10-20 minutes on AWS: keep calling until it is terminal. If it failed, read "
        "operation.error and the failed step's detail before proposing retry_operation.",
        args=(
            Arg("operation_id", "string", "Operation id (op_...).", location="path",
                required=True),
            Arg("timeout_seconds", "integer", "How long to wait at most, in seconds.",
                location="local", minimum=1, maximum=WAIT_MAX_SECONDS,
                default=WAIT_DEFAULT_SECONDS),
        ),
        runner="wait_operation",
    ),
    ToolSpec(
        name="cancel_operation",
        method="POST",
        path="/api/v1/operations/{operation_id}/cancel",
        title="Cancel an operation",
        description="Ask a queued or running operation to stop. A queued one is cancelled at "
        "once; a running one stops at its next step boundary (what a finished step created "
        "stays). Follow it with wait_operation until it is terminal.",
        args=(Arg("operation_id", "string", "Operation id (op_...).", location="path",
                  required=True),),
        mutating=True,
        status_tool="wait_operation",
        status_args_from={"operation_id": "operation.id"},
    ),
    ToolSpec(
        name="retry_operation",
        method="POST",
        path="/api/v1/operations/{operation_id}/retry",
        title="Retry an operation",
        description="Run a failed or cancelled operation again from its failed step, keeping "
        "the same operation id and what earlier steps created. Fix the cause reported in its "
        "error first (quota, permissions, a conflicting resource)." + _FOLLOW,
        args=(Arg("operation_id", "string", "Operation id (op_...).", location="path",
                  required=True),),
        mutating=True,
        status_tool="wait_operation",
        status_args_from={"operation_id": "operation.id"},
    ),
)

TOOLS: tuple[ToolSpec, ...] = (*_CORE_TOOLS, *CLUSTER_TOOLS, *STORAGE_TOOLS)

TOOLS_BY_NAME: dict[str, ToolSpec] = {t.name: t for t in TOOLS}


def published_tools(read_only: bool) -> tuple[ToolSpec, ...]:
    """The rows a server publishes: every row, or only the read-only ones."""
    return tuple(t for t in TOOLS if t.read_only or not read_only)
