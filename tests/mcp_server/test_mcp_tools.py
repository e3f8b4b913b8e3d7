"""The tool table is consistent with itself."""

from __future__ import annotations

import re

from mcp_server.tools import TOOLS, TOOLS_BY_NAME, published_tools


def test_names_are_unique_and_valid() -> None:
    assert len(TOOLS_BY_NAME) == len(TOOLS)
    assert all(re.fullmatch(r"[a-z][a-z_]{1,63}", t.name) for t in TOOLS)


def test_path_placeholders_are_exactly_the_path_arguments() -> None:
    for tool in TOOLS:
        placeholders = set(re.findall(r"\{(\w+)\}", tool.path))
        path_args = {a.name for a in tool.args if a.location == "path"}
        assert placeholders == path_args, tool.name
        assert all(a.required for a in tool.args if a.location == "path"), tool.name
        assert tool.path.startswith("/api/v1/"), tool.name


def test_mutating_tools_name_an_existing_read_only_status_tool() -> None:
    for tool in TOOLS:
        if tool.mutating:
            assert tool.method != "GET", tool.name
            status = TOOLS_BY_NAME[tool.status_tool]
            assert status.read_only, tool.name
            assert set(tool.status_args_from) <= {a.name for a in status.args}, tool.name
            assert tool.all_args[-1].name == "idempotency_key"
        else:
            # a read is a GET, or a POST that is a dry run (it changes nothing)
            assert tool.method == "GET" or tool.fixed_query == {"dry_run": "true"}, tool.name
            assert tool.status_tool is None and "idempotency_key" not in {
                a.name for a in tool.all_args}


def test_descriptions_are_written_for_an_agent() -> None:
    for tool in TOOLS:
        assert len(tool.description) >= 60, tool.name
        assert all(a.description for a in tool.all_args), tool.name
        if tool.mutating:  # the description tells the agent which tool says it is done
            assert tool.status_tool in tool.description, tool.name


def test_read_only_publication() -> None:
    assert {t.name for t in published_tools(True)} == {t.name for t in TOOLS if t.read_only}
    assert published_tools(False) == TOOLS
    assert {"whoami", "wait_operation", "get_operation"} <= {
        t.name for t in published_tools(True)}


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
        "operation": {"id": "op_2"}, "status_tool": "get_job", "status_args": {"job": "j"},
        "poll_after_seconds": 3}))
    assert (passed["status_tool"], passed["status_args"], passed["poll_after_seconds"]) == (
        "get_job", {"job": "j"}, 3)
