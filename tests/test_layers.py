"""The import rules between hypd's parts (docs/ARCHITECTURE.md, the layers), read from the
source, lazy imports inside functions included: a part imports only what is below it, and
nothing imports the launcher, the sandbox or the MCP server but the launcher."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

MAY_IMPORT: dict[str, frozenset[str]] = {
    "launcher": frozenset({"app", "tasks", "cloud", "schemas", "sandbox", "mcp_server",
                           "spaces_router", "vocabulary"}),
    "app": frozenset({"tasks", "cloud", "schemas", "vocabulary"}),
    "tasks": frozenset({"cloud", "vocabulary"}),
    "spaces_router": frozenset({"tasks", "cloud", "vocabulary"}),
    "schemas": frozenset({"vocabulary"}),
    "cloud": frozenset({"vocabulary"}),
    "sandbox": frozenset({"vocabulary"}),
    "mcp_server": frozenset({"vocabulary"}),
    "vocabulary": frozenset(),
}
"""Each part → the other parts it may import. The vocabulary (the words and patterns every
face shares) is a leaf every part may import; it imports nothing of ours."""


def _modules(package: str, root: Path = REPO) -> Iterator[tuple[str, str]]:
    """(file, module) for every absolute import in `package`, lazy ones included."""
    for path in sorted((root / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                yield str(path.relative_to(root)), module


def _imports(package: str, root: Path = REPO) -> Iterator[tuple[str, str]]:
    """(file, part) for every import of another of hypd's parts in `package`."""
    for file, module in _modules(package, root):
        part = module.split(".")[0]
        if part in MAY_IMPORT and part != package:
            yield file, part


def test_each_part_imports_only_the_parts_below_it():
    broken = [(file, part) for package, allowed in MAY_IMPORT.items()
              for file, part in _imports(package) if part not in allowed]
    assert broken == []


def test_the_rules_see_the_imports_they_judge():
    """The reader finds the imports it must (else the rule above could never fail)."""
    assert {part for _, part in _imports("launcher")} >= {"sandbox", "mcp_server", "cloud"}
    assert {part for _, part in _imports("app")} == {"tasks", "cloud", "schemas", "vocabulary"}
    assert {part for _, part in _imports("schemas")} == {"vocabulary"}


def test_the_vocabulary_is_a_leaf_of_the_standard_library_and_botocore():
    """Not even a third-party package but botocore (whose shapes hold AWS's patterns): every
    part imports the vocabulary, so it must stay light and import nothing back."""
    import sys

    allowed = set(sys.stdlib_module_names) | {"botocore", "vocabulary"}
    found = {module.split(".")[0] for _, module in _modules("vocabulary")}
    assert found <= allowed, found - allowed
    assert {"enum", "re", "botocore"} <= found  # the reader sees the imports it judges


def test_the_reader_sees_a_planted_lazy_import(tmp_path):
    """A schemas module importing cloud inside a function is found, and not allowed."""
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "bad.py").write_text("def f():\n    from cloud import aws\n")
    assert list(_imports("schemas", tmp_path)) == [("schemas/bad.py", "cloud")]
    assert "cloud" not in MAY_IMPORT["schemas"]

