"""Each face keeps its own words: the MCP server is the only place that knows tool names.

The REST API, its engine and its adapters name routes; the MCP server maps routes to tools
(mcp_server/routemap.py). These tests take the tool names from the MCP tool table and look
for them where they must not be: in any string the app's parts use as a value (a reply's
field, a message, a schema's description), and anywhere in the OpenAPI document (which also
holds the routes' docstrings). So a new tool, or an old habit, cannot slip a tool's name into
what the REST face says.

Documentation is not the face: a string that is a statement of its own (a module's, class's
or function's docstring, or an attribute's) may point a reader at the MCP tool that calls a
route, as the modules' "Faces" paragraphs do.

What is not a tool's name although it is spelled like one:
- a tool named after its own route's last segment (`whoami`, `preflight`): the word is the
  route's, the REST face's own;
- a dotted name (`networks.get_network`): a Python function's, not a tool's;
- the operation name given to boto3's `get_paginator("list_clusters")`: AWS's word.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mcp_server.tools import TOOLS
from tests.mcp_server.mcp_fake_api import real_openapi

REPO = Path(__file__).resolve().parents[1]
PARTS = ("app", "tasks", "cloud", "schemas", "vocabulary")
"""The parts that may not know MCP (DESIGN.md: the folder table): the vocabulary holds the
words every face shares, and a tool's name is MCP's alone."""


def _tool_words() -> re.Pattern[str]:
    routes_own = {t.name for t in TOOLS if t.path.rstrip("/").rsplit("/", 1)[-1] == t.name}
    names = sorted({t.name for t in TOOLS} - routes_own, key=len, reverse=True)
    alternatives = "|".join(map(re.escape, names))
    return re.compile(rf"(?<![\w.])({alternatives})\b")


TOOL_WORDS = _tool_words()


def _literals(source: str) -> Iterator[ast.Constant]:
    """Every string a module uses as a value: not its documentation (a string statement),
    nor boto3's paginator names."""
    tree = ast.parse(source)
    aws = {id(arg) for node in ast.walk(tree) if isinstance(node, ast.Call)
           and isinstance(node.func, ast.Attribute) and node.func.attr == "get_paginator"
           for arg in node.args}
    docs = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in aws | docs:
            yield node


def tool_names_in(source: str) -> list[tuple[int, str]]:
    """(line, tool) of each tool name a module's string literals spell."""
    return [(node.lineno, found.group(1)) for node in _literals(source)
            for found in TOOL_WORDS.finditer(node.value)]


def _strings(data: Any) -> Iterator[str]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield str(key)
            yield from _strings(value)
    elif isinstance(data, list):
        for item in data:
            yield from _strings(item)
    elif isinstance(data, str):
        yield data


def test_the_app_s_parts_spell_no_mcp_tool_name() -> None:
    found = [f"{path.relative_to(REPO)}:{line}: {tool}"
             for part in PARTS for path in sorted((REPO / part).rglob("*.py"))
             for line, tool in tool_names_in(path.read_text())]
    assert not found, "MCP tool names outside mcp_server/ (name the route instead):\n" + \
        "\n".join(found)


def test_the_openapi_document_names_no_mcp_tool() -> None:
    found = sorted({m.group(1) for text in _strings(real_openapi())
                    for m in TOOL_WORDS.finditer(text)})
    assert not found, f"the OpenAPI document names MCP tools: {found}"


def test_the_check_finds_a_tool_name_and_lets_the_look_alikes_pass() -> None:
    """The rule above is only as good as its matcher: it must see a tool in a reply, a
    message and a schema's description, and leave the look-alikes and documentation alone."""
    caught = tool_names_in('REPLY = {"status_tool": "wait_operation"}\n'
                           'MESSAGE = f"see {x} (list_jobs names them)"\n'
                           'name = fields.String(metadata={"description": "as get_job says"})\n')
    assert caught == [(1, "wait_operation"), (2, "list_jobs"), (3, "get_job")]
    assert tool_names_in('"""Faces: MCP `get_network`; as `networks.get_network` answers."""\n'
                         'pages = eks.get_paginator("list_clusters")\n'
                         'BODY = {"preflight": [], "who": "/auth/whoami"}\n'
                         'LIMIT = 3\n"""Read by get_job."""\n') == []
