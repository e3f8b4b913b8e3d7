"""The tool table is consistent with itself and with the API's OpenAPI document (the real
one, made by the app), which gives every tool its inputs and its role."""

from __future__ import annotations

import re

import pytest

from mcp_server.routes import RouteBook, RouteBookError
from mcp_server.tools import TOOLS, TOOLS_BY_NAME, ToolSpec, bind, published
from tests.mcp_server.mcp_fake_api import OPERATOR_READS, real_openapi

BOUND = bind(RouteBook(real_openapi()))


def test_names_are_unique_and_valid() -> None:
    assert len(TOOLS_BY_NAME) == len(TOOLS) == len(BOUND)
    assert all(re.fullmatch(r"[a-z][a-z_]{1,63}", t.name) for t in TOOLS)


def test_path_placeholders_are_exactly_the_path_inputs() -> None:
    for name, tool in BOUND.items():
        placeholders = set(re.findall(r"\{(\w+)\}", tool.spec.path))
        path_inputs = {p.name for p in tool.params if p.location == "path"}
        assert placeholders == path_inputs, name
        assert all(p.required for p in tool.params if p.location == "path"), name
        assert tool.spec.path.startswith("/api/v1/"), name


def test_mutating_is_what_the_route_declares() -> None:
    """`mutating` is the table's word; the route's declared role must agree with it."""
    for name, tool in BOUND.items():
        if tool.spec.mutating:
            assert tool.needs == "operator", name
            assert tool.spec.method != "GET", name
            status = BOUND[tool.spec.status_tool]
            assert status.spec.read_only, name
            assert set(tool.spec.status_args_from) <= set(
                status.input_schema()["properties"]), name
            assert "idempotency_key" in tool.input_schema()["properties"], name
        else:
            # a read is a viewer's, or an operator's when its route says so (the audit log)
            assert tool.needs in ("viewer", "public") or (
                tool.needs == "operator" and tool.spec.method == "GET"), name
            # a read is a GET, or a POST that is a dry run (it changes nothing)
            assert tool.spec.method == "GET" or tool.spec.fixed_query == {"dry_run": "true"}
            assert tool.spec.status_tool is None, name
            assert "idempotency_key" not in tool.input_schema()["properties"], name


def test_descriptions_are_written_for_an_agent() -> None:
    for name, tool in BOUND.items():
        assert len(tool.spec.description) >= 60, name
        for arg, schema in tool.input_schema()["properties"].items():
            assert schema.get("description"), (name, arg)
        if tool.spec.mutating:  # the description tells the agent which tool says it is done
            assert tool.spec.status_tool in tool.spec.description, name


def test_publication_follows_the_routes_declarations() -> None:
    everything = {t.spec.name for t in published(BOUND, "operator")}
    viewer = {t.spec.name for t in published(BOUND, "viewer")}
    read_only = {t.spec.name for t in published(BOUND, "operator", read_only=True)}
    assert everything == set(TOOLS_BY_NAME)
    assert read_only == {t.name for t in TOOLS if t.read_only}
    # a viewer gets the reads its role may call; the operator-only reads stay hidden
    operator_reads = {n for n, t in BOUND.items() if t.spec.read_only and t.needs == "operator"}
    assert operator_reads == OPERATOR_READS
    assert viewer == read_only - operator_reads
    # a dry run open to viewers makes its planning tool a viewer's; the create stays hidden
    assert "plan_cluster" in viewer and "create_cluster" not in viewer
    assert {"whoami", "wait_operation", "get_operation"} <= viewer


def test_a_row_naming_an_input_its_route_lacks_is_refused() -> None:
    stray = ToolSpec(name="odd", method="GET", path="/api/v1/networks", title="Odd",
                     description="x" * 60, hidden=("nonexistent",))
    with pytest.raises(RouteBookError, match="nonexistent"):
        bind(RouteBook(real_openapi()), (stray,))
    missing = ToolSpec(name="gone", method="GET", path="/api/v1/nowhere", title="Gone",
                       description="x" * 60)
    with pytest.raises(RouteBookError, match="/api/v1/nowhere"):
        bind(RouteBook(real_openapi()), (missing,))


def test_a_no_change_reply_names_no_status_tool() -> None:
    from mcp_server.client import ApiResponse
    from mcp_server.server import _mutation_reply

    spec = TOOLS_BY_NAME["create_network"]
    unchanged = _mutation_reply(spec, ApiResponse(200, {
        "changed": False, "resource_url": "/api/v1/networks/lab"}))
    assert unchanged["status_tool"] is None
    assert unchanged["status_args"] == {} and unchanged["poll_after_seconds"] == 0
    bare = _mutation_reply(spec, ApiResponse(202, {"operation": {"id": "op_1"}},
                                             {"Retry-After": "7"}))
    assert bare["status_tool"] == "wait_operation"
    assert bare["status_args"] == {"operation_id": "op_1"}
    assert bare["poll_after_seconds"] == 7
    passed = _mutation_reply(spec, ApiResponse(202, {
        "operation": {"id": "op_2"}, "status_route": "/api/v1/operations/op_2",
        "poll_after_seconds": 3}))
    assert (passed["status_tool"], passed["status_args"], passed["poll_after_seconds"]) == (
        "wait_operation", {"operation_id": "op_2"}, 3)


def test_a_reply_s_status_route_is_followed_with_the_tool_it_maps_to() -> None:
    """The REST reply names routes only; a reply naming a status_route is followed with the
    tool that route maps to, whatever the row says, and only a reply without one (a change
    made at once) is confirmed with the row's own status tool."""
    from mcp_server.client import ApiResponse
    from mcp_server.server import _mutation_reply

    spec = TOOLS_BY_NAME["import_cluster"]  # its row: confirmed with get_cluster
    operation = _mutation_reply(spec, ApiResponse(202, {
        "operation": {"id": "op_3"}, "status_route": "/api/v1/operations/op_3",
        "resource_url": "/api/v1/clusters/lab", "poll_after_seconds": 5}))
    assert (operation["status_tool"], operation["status_args"]) == (
        "wait_operation", {"operation_id": "op_3"})
    at_once = _mutation_reply(spec, ApiResponse(200, {"name": "lab", "imported": True}))
    assert (at_once["status_tool"], at_once["status_args"]) == ("get_cluster", {"name": "lab"})
