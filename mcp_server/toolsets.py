"""Toolsets: the tool table cut along what an agent does together, so a session publishes
only the tools its agent needs and pays for no other's description and schemas.

Every tool list an agent reads costs it context before its first question (`tools/list`,
docs/benchmarks.md). The largest public MCP servers let the operator pick groups of tools
(GitHub's `--toolsets repos,issues`); `hypd mcp --toolsets clusters,training` does the same
here. A tool's toolset is a field of its row (`ToolSpec.toolset` in mcp_server/tools.py), so
a new tool is declared in one place; this module holds only each toolset's name and summary
(DECLARED, in the order `--toolsets` help and `NAMES` give them) and reads each toolset's
tools from the rows, in the table's order. Every row must name one of DECLARED's toolsets,
and every toolset must hold a row (checked at import).

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

DECLARED: dict[str, str] = {
    "clusters": "networks; clusters from plan to delete, their stages, import, kubeconfig, "
    "the active cluster, node software and Kubernetes upgrades",
    "capacity": "what a zone offers and quotas allow (zones, instance types, preflight), "
    "instance groups, nodes (reboot, replace, delete), storage, managed features and what a "
    "cluster costs while it runs",
    "training": "training jobs, their recipes, logs and MLflow tracking",
    "inference": "models in the cluster's bucket and the endpoints serving them",
    "spaces": "Dev spaces (JupyterLab, Code Editor)",
    "teams": "teams sharing a cluster (compute quotas, monthly budgets) and its scheduler "
    "config (priorities, fair share)",
    "operations": "who you are; list, cancel and retry operations; read-only diagnosis (a "
    "failed create, node health, NCCL); the audit log",
}
"""Each toolset's name and what it holds (for `--toolsets` help); its tools are the rows
naming it."""


@dataclass(frozen=True)
class Toolset:
    name: str
    summary: str
    tools: tuple[str, ...]
    """The rows naming this toolset, in the table's order."""


TOOLSETS: tuple[Toolset, ...] = tuple(
    Toolset(name, summary, tuple(t.name for t in TOOLS if t.toolset == name))
    for name, summary in DECLARED.items())

ALWAYS: tuple[str, ...] = ("get_operation", "wait_operation")
"""Published whatever the toolsets: the tools every change's reply names to follow it."""

TOOLSETS_BY_NAME: dict[str, Toolset] = {t.name: t for t in TOOLSETS}
NAMES: tuple[str, ...] = tuple(TOOLSETS_BY_NAME)
TOOLSET_OF: dict[str, str] = {t.name: t.toolset for t in TOOLS}


class UnknownToolset(ValueError):
    """A toolset name that is none of TOOLSETS' (nor `all`)."""


def _check(table: Iterable[ToolSpec] = TOOLS) -> list[str]:
    """How the rows and DECLARED disagree: a row naming no toolset or one DECLARED lacks, a
    toolset no row names, an ALWAYS tool that is no row. Empty when they agree."""
    rows = list(table)
    problems = [f"{t.name}: in no toolset (give its row a toolset= in mcp_server/tools.py)"
                for t in rows if not t.toolset]
    problems += [f"{t.name}: in toolset {t.toolset}, which mcp_server/toolsets.py does not "
                 f"declare ({', '.join(DECLARED)})"
                 for t in rows if t.toolset and t.toolset not in DECLARED]
    problems += [f"toolset {name}: no tool names it" for name in DECLARED
                 if not any(t.toolset == name for t in rows)]
    names = {t.name for t in rows}
    problems += [f"{n}: always published but no tool" for n in ALWAYS if n not in names]
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


def tools_of(toolsets: Iterable[str], table: Iterable[ToolSpec] = TOOLS) -> list[ToolSpec]:
    """The table's rows a session publishing these toolsets offers (theirs and ALWAYS), in
    the table's order."""
    chosen = set(toolsets)
    return [t for t in table if t.name in ALWAYS or t.toolset in chosen]


def help_text() -> str:
    """What `--toolsets` accepts, for the command line's help."""
    return ("comma-separated toolsets to publish (default: all; "
            f"{' and '.join(ALWAYS)} always): " + "; ".join(
                f"{ts.name}: {ts.summary}" for ts in TOOLSETS))


_PROBLEMS = _check()
if _PROBLEMS:
    raise RuntimeError("the tool table's toolsets and mcp_server/toolsets.py disagree: "
                       + "; ".join(_PROBLEMS))
