"""Every REST route an agent could use has an MCP tool, and every tool calls a route.

The routes are the app's own (its url map, which the OpenAPI document describes); what is out
of scope is a small explicit list — the public and infrastructure routes an agent has no use
for — plus the WebSockets, which say so in their own `@access(..., websocket=True)`
declaration. A new route without a tool fails here, naming it."""

from __future__ import annotations

import re

from app import create_app, permissions
from app.auth import TokenTable
from cloud.settings import Settings
from mcp_server.routes import RouteBook
from mcp_server.tools import TOOLS, TOOLS_BY_NAME, bind
from tests.mcp_server.mcp_fake_api import real_openapi

OUT_OF_SCOPE = frozenset({
    ("GET", "/healthz"),  # liveness, public
    ("GET", "/metrics"),  # Prometheus scrape
    ("GET", "/api/v1/openapi.json"),  # the document the MCP server reads its rules from
    ("GET", "/"),  # the dashboard's page
    ("GET", "/static/{filename}"),  # the dashboard's files
    # a browser's sign-in to a space's editor (a one-use code its tab posts): an agent has
    # no browser to sign in; it gives a person the space's URL (get_space), whose page
    # sends them to the dashboard's Open
    ("POST", "/api/v1/clusters/{cluster}/spaces/{name}/sign-in"),
})
"""Routes with no tool by design (WebSockets are found by their declaration)."""

MINIMUM_TOOLS = 38
"""The reference product's tool count: hypd covers at least as much."""


def _template(rule: str) -> str:
    """`/api/v1/clusters/<string:name>` as the document and the tools write it."""
    return re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule)


def _routes() -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """(every route an agent could use, the WebSockets) of the real app."""
    app = create_app(Settings(redis_url="redis://127.0.0.1:1/0"), tokens=TokenTable([]))
    declared = permissions.declarations(app)
    usable, sockets = set(), set()
    for rule in app.url_map.iter_rules():
        for method in sorted((rule.methods or set()) - permissions.IGNORED_METHODS):
            key = (method, _template(rule.rule))
            if declared[(rule.endpoint, method)].websocket:
                sockets.add(key)
            elif key not in OUT_OF_SCOPE:
                usable.add(key)
    return usable, sockets


def test_every_route_has_a_tool_and_every_tool_a_route() -> None:
    usable, sockets = _routes()
    called = {(t.method, t.path) for t in TOOLS}
    assert sockets, "the operation feed's WebSocket is found by its declaration"
    assert not usable - called, f"routes without an MCP tool: {sorted(usable - called)}"
    assert not called - usable, f"tools calling no usable route: {sorted(called - usable)}"
    # the document describes the same routes, so the tools' schemas cover them all
    documented = {(m.upper(), p) for p, item in real_openapi()["paths"].items()
                  for m in item if m != "parameters"}
    assert usable <= documented
    assert len(bind(RouteBook(real_openapi()))) == len(TOOLS) >= MINIMUM_TOOLS


def test_out_of_scope_is_only_what_exists() -> None:
    """A stale entry would hide nothing but mislead: each one is a real route."""
    app = create_app(Settings(redis_url="redis://127.0.0.1:1/0"), tokens=TokenTable([]))
    real = {(m, _template(r.rule)) for r in app.url_map.iter_rules()
            for m in (r.methods or set()) - permissions.IGNORED_METHODS}
    assert real >= OUT_OF_SCOPE


def test_every_mutating_tool_names_a_read_status_tool() -> None:
    for tool in TOOLS:
        if tool.mutating:
            assert tool.status_tool in TOOLS_BY_NAME, tool.name
            assert TOOLS_BY_NAME[tool.status_tool].read_only, tool.name
            assert tool.status_tool in tool.description, tool.name
        else:
            assert tool.status_tool is None, tool.name


def test_every_description_points_to_another_tool_and_names_only_real_ones() -> None:
    """An agent reads a description to know what comes before or after a call: each names
    at least one other tool, and every tool-like word in it is a tool that exists."""
    names = set(TOOLS_BY_NAME)
    verbs = {n.split("_")[0] for n in names}
    bound = bind(RouteBook(real_openapi()))
    for tool in TOOLS:
        inputs = set(bound[tool.name].input_schema()["properties"])  # its own arguments
        words = set(re.findall(r"\b([a-z]+_[a-z_]+)\b", tool.description)) - inputs
        named = {w for w in words if w.split("_")[0] in verbs and not w.startswith("status_")}
        assert named <= names, (tool.name, sorted(named - names))
        assert named - {tool.name}, f"{tool.name}: its description names no other tool"


def test_each_tool_is_named_by_its_route_s_operation_id() -> None:
    """One vocabulary: a route's operationId (declared by the route, app/openapi.py) is the
    name of the tool that calls it. The tools that are not their route's own call — a
    planning tool always sending dry_run=true, a waiting tool following a route another tool
    reads — are the MCP server's alone and name no operation (tests/test_faces.py)."""
    operation_ids = {(m.upper(), p): op["operationId"]
                     for p, item in real_openapi()["paths"].items()
                     for m, op in item.items() if m != "parameters"}
    own = [t for t in TOOLS if not (t.fixed_query or t.follows)]
    mismatched = sorted(f"{t.name}: {t.method} {t.path} is {operation_ids[(t.method, t.path)]}"
                        for t in own if operation_ids[(t.method, t.path)] != t.name)
    assert not mismatched, "tools not named as their routes' operationIds: " + \
        "; ".join(mismatched)
    routes = [(t.method, t.path) for t in own]
    assert len(routes) == len(set(routes)), "a route has two tools of its own"
    extras = {t.name for t in TOOLS} - {t.name for t in own}
    assert extras and not extras & set(operation_ids.values())
