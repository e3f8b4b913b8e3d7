"""Toolsets: the tool table cut along what an agent does together, so a session publishes
only the tools its agent needs and pays for no other's description and schemas.

Every tool list an agent reads costs it context before its first question (`tools/list`,
docs/benchmarks.md). The largest public MCP servers let the operator pick groups of tools
(GitHub's `--toolsets repos,issues`); `hypd mcp --toolsets clusters,training` does the same
here. The grouping lives in this one table, by tool name, so the rows of tools.py stay
what they are and one glance shows what each toolset holds; `TOOLSETS` must name every row
exactly once (checked at import).

The operation-following tools (ALWAYS: get_operation, wait_operation) are published
whichever toolsets a session names: every change answers with an operation to follow, and a
session without them could start a change it cannot see end. Toolsets choose *which* tools;
the token's role and `--read-only` still filter what a session may call (tools.published).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mcp_server.tools import TOOLS, ToolSpec

ALL = "all"


@dataclass(frozen=True)
class Toolset:
    name: str
    summary: str
    tools: tuple[str, ...]


TOOLSETS: tuple[Toolset, ...] = (
    Toolset("clusters", "networks; clusters from plan to delete, their stages, import, "
            "kubeconfig, the active cluster, node software and Kubernetes upgrades",
            ("list_networks", "get_network", "create_network", "delete_network",
             "list_clusters", "get_cluster", "plan_cluster", "create_cluster",
             "delete_cluster", "run_cluster_stage", "import_cluster", "get_kubeconfig",
             "get_active_cluster", "set_active_cluster",
             "update_cluster_software", "upgrade_kubernetes")),
    Toolset("capacity", "what a zone offers and quotas allow (zones, instance types, "
            "preflight), instance groups, nodes (reboot, replace, delete), storage, "
            "managed features and what a cluster costs while it runs",
            ("list_availability_zones", "list_instance_types", "preflight",
             "list_instance_groups", "get_instance_group", "add_instance_group",
             "update_instance_group", "delete_instance_group",
             "list_nodes", "get_node", "reboot_nodes", "replace_nodes", "delete_nodes",
             "list_storage", "get_storage", "add_storage", "remove_storage",
             "get_features", "update_features", "get_cluster_cost")),
    Toolset("training", "training jobs, their recipes, logs and MLflow tracking",
            ("get_training_limits", "submit_job", "list_jobs", "get_job", "delete_job",
             "get_job_logs", "get_mlflow", "set_mlflow", "detach_mlflow",
             "get_mlflow_ui_url")),
    Toolset("inference", "models in the cluster's bucket and the endpoints serving them",
            ("list_models", "download_model", "remove_model",
             "list_endpoints", "get_endpoint", "create_endpoint", "update_endpoint",
             "delete_endpoint", "reassign_endpoint_worker", "invoke_endpoint")),
    Toolset("spaces", "Dev spaces (JupyterLab, Code Editor)",
            ("list_spaces", "get_space", "create_space", "update_space", "stop_space",
             "start_space", "delete_space")),
    Toolset("operations", "who you are; list, cancel and retry operations; read-only "
            "diagnosis (a failed create, node health, NCCL); the audit log",
            ("whoami", "list_operations", "get_operation", "wait_operation",
             "cancel_operation", "retry_operation", "diagnose_cluster", "list_audit")),
)

ALWAYS: tuple[str, ...] = ("get_operation", "wait_operation")
"""Published whatever the toolsets: the tools every change's reply names to follow it."""

TOOLSETS_BY_NAME: dict[str, Toolset] = {t.name: t for t in TOOLSETS}
NAMES: tuple[str, ...] = tuple(TOOLSETS_BY_NAME)
TOOLSET_OF: dict[str, str] = {tool: ts.name for ts in TOOLSETS for tool in ts.tools}


class UnknownToolset(ValueError):
    """A toolset name that is none of TOOLSETS' (nor `all`)."""


def _check(table: Iterable[ToolSpec] = TOOLS) -> list[str]:
    """How TOOLSETS and the tool table disagree: a row in no toolset (or in two), or a
    toolset naming no row. Empty when they agree."""
    rows = [t.name for t in table]
    named = [tool for ts in TOOLSETS for tool in ts.tools]
    problems = [f"{n}: in no toolset (add it to one in mcp_server/toolsets.py)"
                for n in rows if n not in TOOLSET_OF]
    problems += [f"{n}: in more than one toolset" for n in sorted(set(named))
                 if named.count(n) > 1]
    problems += [f"{n}: named in a toolset but no tool" for n in named if n not in rows]
    problems += [f"{n}: always published but no tool" for n in ALWAYS if n not in rows]
    return problems


def parse(text: str | Iterable[str] | None) -> frozenset[str]:
    """The toolsets a session publishes, from `--toolsets` (comma-separated, or a list):
    none given or `all` is every toolset. Raises UnknownToolset naming the valid names."""
    if text is None:
        return frozenset(NAMES)
    given = text.split(",") if isinstance(text, str) else list(text)
    names = {n.strip().lower() for n in given if n and n.strip()}
    if not names or ALL in names:
        return frozenset(NAMES)
    unknown = sorted(names - set(NAMES))
    if unknown:
        raise UnknownToolset(f"unknown toolset {', '.join(unknown)}; valid: "
                             f"{', '.join((ALL, *NAMES))}")
    return frozenset(names)


def selects(toolsets: Iterable[str], tool: str) -> bool:
    """Whether a session publishing these toolsets publishes this tool."""
    return tool in ALWAYS or TOOLSET_OF.get(tool) in set(toolsets)


def tools_of(toolsets: Iterable[str], table: Iterable[ToolSpec] = TOOLS) -> list[ToolSpec]:
    """The table's rows a session publishing these toolsets offers (theirs and ALWAYS), in
    the table's order."""
    chosen = set(toolsets)
    return [t for t in table if selects(chosen, t.name)]


def help_text() -> str:
    """What `--toolsets` accepts, for the command line's help."""
    return ("comma-separated toolsets to publish (default: all; "
            f"{' and '.join(ALWAYS)} always): " + "; ".join(
                f"{ts.name}: {ts.summary}" for ts in TOOLSETS))


_PROBLEMS = _check()
if _PROBLEMS:
    raise RuntimeError("mcp_server/toolsets.py and the tool table disagree: "
                       + "; ".join(_PROBLEMS))
