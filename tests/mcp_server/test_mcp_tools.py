"""The tool table is consistent with itself and with the API's OpenAPI document (the real
one, made by the app), which gives every tool its inputs and its role."""

from __future__ import annotations

import re

import pytest

from mcp_server.routes import RouteBook, RouteBookError
from mcp_server.tools import (
    IDEMPOTENCY_KEY,
    IDEMPOTENCY_SCHEMA,
    SHARED_ARGS,
    TOOLS,
    TOOLS_BY_NAME,
    ToolSpec,
    bind,
    published,
)
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
    """Every row says what, when and which tool follows; every argument is described where
    its name and schema do not say it all. Bare are only a path input and `name` (the thing
    the tool is named for; the pattern says a name's rule), the shared arguments the
    server's instructions explain (SHARED_ARGS with no words, the idempotency key) and
    create_cluster's, which are plan_cluster's, described there. The server checks a call
    with the document's words and the key's bounds."""
    for name, tool in BOUND.items():
        assert len(tool.spec.description) >= 60, name
        bare = {p.name for p in tool.params if p.location == "path"} | {
            arg for arg, said in SHARED_ARGS.items() if not said} | {IDEMPOTENCY_KEY, "name"}
        for arg, schema in tool.input_schema()["properties"].items():
            assert schema.get("description") or arg in bare or tool.spec.inputs_as, (
                name, arg)
        checked = tool.input_schema(published=False)
        assert checked["additionalProperties"] is False, name
        if tool.spec.mutating:
            assert checked["properties"][IDEMPOTENCY_KEY] == IDEMPOTENCY_SCHEMA, name
        if tool.spec.mutating:  # the description tells the agent which tool says it is done
            assert tool.spec.status_tool in tool.spec.description, name


def test_a_row_taking_another_tools_arguments_is_published_only_beside_it() -> None:
    """create_cluster's arguments are described once, on plan_cluster's (the same route's
    inputs; create_cluster's description names it): each of them is there, described, and
    any session publishing the one — by its toolset and its role — publishes the other."""
    from mcp_server.toolsets import TOOLSET_OF

    sharing = {n: t for n, t in BOUND.items() if t.spec.inputs_as}
    assert set(sharing) == {"create_cluster"}
    for name, tool in sharing.items():
        other = BOUND[str(tool.spec.inputs_as)]
        assert TOOLSET_OF[name] == TOOLSET_OF[other.spec.name]
        assert all(other.visible_to(role) for role in ("viewer", "operator")
                   if tool.visible_to(role))
        assert other.spec.name in tool.spec.description, name
        theirs = other.input_schema()["properties"]
        for param in tool.params:
            assert theirs[param.name].get("description") or param.name in {
                *SHARED_ARGS, "name"}, (name, param.name)
            assert "description" not in tool.input_schema()["properties"][param.name]


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


def _shapes(schema: dict) -> list[dict]:
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return [shape for branch in schema[key] for shape in _shapes(branch)]
    return [schema]


def test_output_schemas_are_the_routes_replies_as_the_server_returns_them() -> None:
    """Each tool's output schema is a valid JSON Schema of an object, one shape per 2xx
    reply its route documents (anyOf where there are several), each with what the server
    adds: a mutation's status fields, and a tool beside each route a reply names."""
    from jsonschema import Draft202012Validator

    for name, tool in BOUND.items():
        schema = tool.output_schema()
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object", name
        assert tool.route.replies, f"{name}: its route documents no 2xx JSON reply"
        if tool.spec.runner == "wait_operation":
            assert schema["properties"]["operation"] == tool.route.replies[0]
            continue
        top = schema["anyOf"] if len(tool.route.replies) > 1 else [schema]
        assert len(top) == len(tool.route.replies), name
        for shape in _shapes(schema):
            props = shape.get("properties") or {}
            for prop in props:
                if prop.endswith("_route"):
                    assert f"{prop[:-6]}_tool" in props and f"{prop[:-6]}_args" in props
            if tool.spec.mutating:
                assert {"status_tool", "status_args", "poll_after_seconds"} <= set(
                    shape["required"]), (name, shape)
                assert "idempotency_key" in props, name


def test_each_reply_shape_of_a_mutation_carries_the_status_fields() -> None:
    """delete_network answers a dry run's plan (200) or an operation (202): both shapes are
    admitted, each with the status fields the server always adds, so a reply lacking them
    is refused. (Replies in each shape are validated end to end in tests/app, e.g. the plan
    in test_dependents_api.py, by the SDK's client.)"""
    from jsonschema import Draft202012Validator

    schema = BOUND["delete_network"].output_schema()
    assert len(BOUND["delete_network"].route.replies) == len(schema["anyOf"]) == 2
    for shape in _shapes(schema):
        assert "status_tool" in shape["required"]
    assert not Draft202012Validator(schema).is_valid({"changed": False})


def test_nullable_is_json_schema_null() -> None:
    book = RouteBook({"paths": {}, "components": {"schemas": {
        "Kind": {"type": "string", "enum": ["a", "b"]},
        "Thing": {"type": "object", "properties": {"x": {"type": "integer"}}}}}})
    assert book.inline({"type": "string", "enum": ["a"], "nullable": True}) == {
        "type": ["string", "null"], "enum": ["a", None]}
    wrapped = book.inline({"nullable": True, "description": "d",
                           "allOf": [{"$ref": "#/components/schemas/Thing"}]})
    from jsonschema import Draft202012Validator

    assert Draft202012Validator(wrapped).is_valid(None)
    assert Draft202012Validator(wrapped).is_valid({"x": 1})
    assert not Draft202012Validator(wrapped).is_valid({"x": "one"})
    assert wrapped["description"] == "d"


def test_a_published_output_schema_admits_every_reply_its_route_documents() -> None:
    """What tools/list carries (mcp_server/lean.py) is the reply's top level: every field of
    every shape the full schema admits, with at least its JSON types, and only what every
    shape requires — so a reply that meets the document meets it. Checked shape by shape,
    and on an example of each shape's top level."""
    from jsonschema import Draft202012Validator

    from mcp_server import lean

    for name, tool in BOUND.items():
        full, published_schema = tool.output_schema(), tool.published_output_schema()
        Draft202012Validator.check_schema(published_schema)
        props = published_schema["properties"]
        assert published_schema["type"] == "object", name
        for shape in _shapes(full):
            assert set(published_schema.get("required", ())) <= set(
                shape.get("required") or ()), name
            for field, sub in (shape.get("properties") or {}).items():
                wanted, given = lean.types(sub), lean.types(props[field])
                assert given is None or (wanted is not None and {
                    "number" if t == "integer" and "number" in given else t
                    for t in wanted} <= given), (name, field, wanted, given)
            example = {f: _value(s) for f, s in (shape.get("properties") or {}).items()}
            assert Draft202012Validator(published_schema).is_valid(example), (name, example)
        assert not any(isinstance(v, dict) and set(v) - {"type"} for v in props.values()), name
        if tool.spec.mutating:
            assert {"status_tool", "status_args", "poll_after_seconds"} <= set(
                published_schema["required"]), name


def _value(schema: dict) -> object:
    """A value of the schema's first JSON type (enough to test the published top level)."""
    from mcp_server import lean

    kinds = lean.types(schema)
    kind = sorted(kinds)[0] if kinds else "string"
    return {"object": {}, "array": [], "string": "x", "integer": 1, "number": 1.5,
            "boolean": True, "null": None}[kind]
