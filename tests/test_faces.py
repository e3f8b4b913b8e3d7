"""Each face keeps its own words: the REST face names routes, the MCP face names tools.

An operation's `operationId` is the route's own name, declared by the route
(`@blp.doc(operationId="create_network")`, app/openapi.py) — the name a generated client's
function takes, and the name of the MCP tool that calls that route (its tool takes the route's
word, tests/mcp_server/test_mcp_coverage.py holds the two equal). So since the document names
its operations, a word such as `create_network` belongs to both faces, and the rule is:

- in the app's parts (app, tasks, cloud, schemas, the vocabulary) a tool's name is spelled only
  as a route's `operationId=` declaration; never in any other string they use as a value (a
  reply's field, a message, a schema's description): a reply names the routes to call, by
  method and path, and the MCP server maps them to tools (mcp_server/routemap.py);
- in the OpenAPI document it stands only as an operation's `operationId`, never in a summary,
  a description, a schema or an extension;
- what is the MCP face's alone stands nowhere in either: the tools that are no route's own
  call (a planning tool that always sends `dry_run=true`, a waiting tool that follows a route
  another tool reads: `plan_cluster`, `wait_operation`), and the fields the MCP server adds to a
  reply (`status_tool`/`status_args` beside `status_route`, `<what>_tool`/`<what>_args` beside
  any `<what>_route`) — not even as an operationId.

These tests take the names from the MCP tool table and look for them where they must not be.

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
words every face shares, and a tool's name is MCP's but where it is a route's own name."""


OPERATION_ID = "operationId"
"""The one place a route's name (and so its tool's) is spelled: the route's declaration and
the document's operation."""

MCP_ONLY_TOOLS = frozenset(t.name for t in TOOLS if t.fixed_query or t.follows)
"""Tools that are not their route's own call (mcp_server/routemap.py leaves them out of its
map): a planning tool sending `dry_run=true`, a waiting tool following a route."""


def _words(names: set[str]) -> re.Pattern[str]:
    alternatives = "|".join(map(re.escape, sorted(names, key=len, reverse=True)))
    return re.compile(rf"(?<![\w.])({alternatives})\b")


def _tool_words() -> re.Pattern[str]:
    routes_own = {t.name for t in TOOLS if t.path.rstrip("/").rsplit("/", 1)[-1] == t.name}
    return _words({t.name for t in TOOLS} - routes_own)


TOOL_WORDS = _tool_words()


def _reply_routes(document: Any) -> set[str]:
    """Every `<what>_route` field a reply schema of the document has."""
    found: set[str] = set()
    if isinstance(document, dict):
        for key, value in document.items():
            if key == "properties" and isinstance(value, dict):
                found |= {name for name in value if name.endswith("_route")}
            found |= _reply_routes(value)
    elif isinstance(document, list):
        for item in document:
            found |= _reply_routes(item)
    return found


def mcp_only_words(document: Any) -> re.Pattern[str]:
    """The MCP face's own words: its tools that are no route's call, and the fields its
    route map adds beside each `<what>_route` of a reply."""
    fields = {f"{route[:-len('_route')]}_{suffix}" for route in _reply_routes(document)
              for suffix in ("tool", "args")}
    return _words(set(MCP_ONLY_TOOLS) | fields | {"status_tool", "status_args"})


def _strings_of(source: str) -> Iterator[tuple[ast.Constant, bool]]:
    """Every string a module uses as a value (not its documentation, nor boto3's paginator
    names), and whether it is a route's `operationId=` declaration."""
    tree = ast.parse(source)
    aws = {id(arg) for node in ast.walk(tree) if isinstance(node, ast.Call)
           and isinstance(node.func, ast.Attribute) and node.func.attr == "get_paginator"
           for arg in node.args}
    named = {id(kw.value) for node in ast.walk(tree) if isinstance(node, ast.Call)
             for kw in node.keywords if kw.arg == OPERATION_ID}
    docs = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in aws | docs:
            yield node, id(node) in named


def tool_names_in(source: str) -> list[tuple[int, str]]:
    """(line, tool) of each tool name a module's string literals spell, other than as a
    route's operationId — and of each MCP-only word, even there."""
    mcp_only = mcp_only_words(real_openapi())
    return sorted({(node.lineno, found.group(1)) for node, named in _strings_of(source)
                   for words in ((mcp_only,) if named else (mcp_only, TOOL_WORDS))
                   for found in words.finditer(node.value)})


def _strings(data: Any, skip: str | None = None) -> Iterator[str]:
    """Every key and string in `data`, less the values of the keys named `skip`."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield str(key)
            if key != skip:
                yield from _strings(value, skip)
    elif isinstance(data, list):
        for item in data:
            yield from _strings(item, skip)
    elif isinstance(data, str):
        yield data


def test_the_app_s_parts_spell_no_mcp_tool_name() -> None:
    found = [f"{path.relative_to(REPO)}:{line}: {tool}"
             for part in PARTS for path in sorted((REPO / part).rglob("*.py"))
             for line, tool in tool_names_in(path.read_text())]
    assert not found, "MCP tool names outside mcp_server/ (name the route instead):\n" + \
        "\n".join(found)


def test_the_openapi_document_names_a_tool_only_as_its_route_s_operation_id() -> None:
    document = real_openapi()
    found = sorted({m.group(1) for text in _strings(document, skip=OPERATION_ID)
                    for m in TOOL_WORDS.finditer(text)})
    assert not found, f"the OpenAPI document names MCP tools beyond operationIds: {found}"


def test_the_openapi_document_says_nothing_only_the_mcp_face_says() -> None:
    document = real_openapi()
    mcp_only = mcp_only_words(document)
    found = sorted({m.group(1) for text in _strings(document) for m in mcp_only.finditer(text)})
    assert not found, f"the OpenAPI document names what only the MCP server says: {found}"
    assert mcp_only.search("ui_url_tool") and mcp_only.search("wait_operation"), \
        "the MCP face's words are found from the tool table and the reply schemas"


def test_the_check_finds_a_tool_name_and_lets_the_look_alikes_pass() -> None:
    """The rule above is only as good as its matcher: it must see a tool in a reply, a
    message and a schema's description, and leave the look-alikes and documentation alone."""
    caught = tool_names_in('REPLY = {"status_tool": "wait_operation"}\n'
                           'MESSAGE = f"see {x} (list_jobs names them)"\n'
                           'name = fields.String(metadata={"description": "as get_job says"})\n')
    assert caught == [(1, "status_tool"), (1, "wait_operation"), (2, "list_jobs"),
                      (3, "get_job")]
    assert tool_names_in('"""Faces: MCP `get_network`; as `networks.get_network` answers."""\n'
                         'pages = eks.get_paginator("list_clusters")\n'
                         'BODY = {"preflight": [], "who": "/auth/whoami"}\n'
                         'LIMIT = 3\n"""Read by get_job."""\n'
                         'view = blp.doc(operationId="get_job")(view)\n') == []
    # a route's name is its operationId alone: anywhere else in a declaration it is a tool's,
    # and an MCP-only word is one even as an operationId
    assert tool_names_in('view = blp.doc(summary="see get_job")(view)\n'
                         'view = blp.doc(operationId="wait_operation")(view)\n'
                         'X = dict(operationId="status_tool")\n'
                         'Y = {"hint": "read ui_url_tool"}\n') == [
        (1, "get_job"), (2, "wait_operation"), (3, "status_tool"), (4, "ui_url_tool")]
