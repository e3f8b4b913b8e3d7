"""The import rules between hypd's parts (docs/ARCHITECTURE.md, the layers), read from the
source, lazy imports inside functions included: a part imports only what is below it, and
nothing imports the launcher, the sandbox or the MCP server but the launcher."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

MAY_IMPORT: dict[str, frozenset[str]] = {
    "launcher": frozenset({"app", "tasks", "cloud", "schemas", "sandbox", "mcp_server"}),
    "app": frozenset({"tasks", "cloud", "schemas"}),
    "tasks": frozenset({"cloud"}),
    # schemas/clusters.py reads cloud's Kubernetes version table: it goes to the vocabulary
    # module (issue 21, One vocabulary), and then schemas import nothing of cloud's
    "schemas": frozenset({"cloud"}),
    "cloud": frozenset(),
    "sandbox": frozenset(),
    "mcp_server": frozenset(),
}
"""Each part → the other parts it may import."""


def _imports(package: str) -> Iterator[tuple[str, str]]:
    """(file, part) for every import of another of hypd's parts in `package`."""
    for path in sorted((REPO / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                part = module.split(".")[0]
                if part in MAY_IMPORT and part != package:
                    yield str(path.relative_to(REPO)), part


def test_each_part_imports_only_the_parts_below_it():
    broken = [(file, part) for package, allowed in MAY_IMPORT.items()
              for file, part in _imports(package) if part not in allowed]
    assert broken == []


def test_the_rules_see_the_imports_they_judge():
    """The reader finds the imports it must (else the rule above could never fail)."""
    assert {part for _, part in _imports("launcher")} >= {"sandbox", "mcp_server", "cloud"}
    assert {part for _, part in _imports("app")} == {"tasks", "cloud", "schemas"}

