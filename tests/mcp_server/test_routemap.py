"""The MCP server's half of "each face keeps its own words": the REST API names routes, and
the server adds the tool each route maps to before a reply reaches an agent."""

from __future__ import annotations

from collections import Counter

from app.readmodels import calls
from mcp_server.routemap import ROUTES, RouteMap
from mcp_server.tools import TOOLS, TOOLS_BY_NAME, ToolSpec
from tests.mcp_server.mcp_fake_api import real_openapi


def test_every_route_a_read_suggests_is_the_api_s_and_has_a_tool() -> None:
    documented = {(m.upper(), p) for p, item in real_openapi()["paths"].items() for m in item}
    for method, template in calls.ROUTES:
        assert (method, template) in documented, template
        tool = ROUTES.tool(method, template)
        assert tool is not None, template
        assert (TOOLS_BY_NAME[tool].method, TOOLS_BY_NAME[tool].path) == (method, template)


def test_a_route_to_follow_gains_its_tool_and_the_arguments_read_from_the_path() -> None:
    reply = ROUTES.translate({
        "operation": {"id": "op_1"}, "status_route": "/api/v1/operations/op_1",
        "job": {"mlflow": {"ui_url_route": "/api/v1/clusters/lab/mlflow/ui-url"}}})
    # two tools read an operation: the one the table marks `follows` waits on it
    assert (reply["status_tool"], reply["status_args"]) == (
        "wait_operation", {"operation_id": "op_1"})
    assert (reply["job"]["mlflow"]["ui_url_tool"], reply["job"]["mlflow"]["ui_url_args"]) == (
        "get_mlflow_ui_url", {"cluster": "lab"})


def test_a_suggested_call_gains_the_route_s_own_tool_with_path_and_body_arguments() -> None:
    reboot = calls.call(calls.REBOOT_NODES, {"cluster": "lab"}, {"node_ids": ["i-01"]})
    read = calls.call(calls.OPERATION, {"operation_id": "op_1"})
    out = ROUTES.translate({"suggestions": [reboot, read]})["suggestions"]
    assert [(s["tool"], s["args"]) for s in out] == [
        ("reboot_nodes", {"cluster": "lab", "node_ids": ["i-01"]}),
        ("get_operation", {"operation_id": "op_1"})]  # a read, not the waiting tool
    assert out[0]["rest"]["path"] == "/api/v1/clusters/lab/nodes/reboot"


def test_what_a_reply_says_is_kept_and_a_route_no_tool_calls_is_left_alone() -> None:
    said = {"status_route": "/api/v1/operations/op_1", "status_tool": "get_operation"}
    assert ROUTES.translate(dict(said)) == {**said, "status_args": {"operation_id": "op_1"}}
    odd = {"status_route": "/api/v1/nowhere/x", "elsewhere_route": "not a path", "n": [1, "a"]}
    assert ROUTES.translate(dict(odd)) == odd


def test_a_path_is_matched_segment_by_segment_and_unquoted() -> None:
    assert ROUTES.match("GET", "/api/v1/clusters/lab/nodes/i-0abc?x=1") == (
        "/api/v1/clusters/{cluster}/nodes/{node_id}", {"cluster": "lab", "node_id": "i-0abc"})
    assert ROUTES.match("GET", "/api/v1/operations/op%5F1") == (
        "/api/v1/operations/{operation_id}", {"operation_id": "op_1"})
    assert ROUTES.match("GET", "/api/v1/operations/a/b") is None
    assert ROUTES.match("DELETE", "/api/v1/operations/op_1") is None


def test_a_planning_tool_is_never_its_route_s_tool() -> None:
    plan = ToolSpec(name="plan_x", method="POST", path="/api/v1/x", title="Plan",
                    description="x" * 60, fixed_query={"dry_run": "true"})
    make = ToolSpec(name="make_x", method="POST", path="/api/v1/x", title="Make",
                    description="x" * 60, mutating=True)
    assert RouteMap([plan, make]).tool("POST", "/api/v1/x") == "make_x"
    assert RouteMap([plan]).tool("POST", "/api/v1/x") is None


def test_a_route_has_at_most_one_tool_to_follow_it_with_and_it_reads() -> None:
    following = Counter((t.method, t.path) for t in TOOLS if t.follows)
    assert following and max(following.values()) == 1, following
    assert all(t.read_only and t.method == "GET" for t in TOOLS if t.follows)
