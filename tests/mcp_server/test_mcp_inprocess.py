"""The MCP server in-process (`mcp.Client(server)`) against the fake REST API."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest
from mcp import Client

from mcp_server.client import ApiError
from mcp_server.routes import RouteBook
from mcp_server.server import build_server
from mcp_server.tools import TOOLS, TOOLS_BY_NAME, bind
from tests.mcp_server.mcp_fake_api import (
    OPERATOR_READS,
    OPERATOR_TOKEN,
    VIEWER_TOKEN,
    FakeApi,
    real_openapi,
)
from tests.mcp_server.refusals import refusal
from vocabulary import patterns

pytestmark = pytest.mark.asyncio

BOUND = bind(RouteBook(real_openapi()))
READ_TOOLS = {t.name for t in TOOLS if t.read_only} - OPERATOR_READS
ALL_TOOLS = {t.name for t in TOOLS}


def _text(result: Any) -> str:
    return result.content[0].text


async def _call(server: Any, name: str, args: dict[str, Any] | None = None) -> Any:
    async with Client(server) as client:
        return await client.call_tool(name, args or {})


# --- publishing ------------------------------------------------------------------------------


def _shapes(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The object shapes an output schema admits (its anyOf/oneOf branches, or itself)."""
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return [shape for branch in schema[key] for shape in _shapes(branch)]
    return [schema]


async def test_operator_sees_every_tool_with_schemas(fake_api: FakeApi) -> None:
    server = build_server(fake_api.url, OPERATOR_TOKEN)
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == ALL_TOOLS
    for name, tool in tools.items():
        spec = TOOLS_BY_NAME[name]
        schema = tool.input_schema
        assert schema["type"] == "object"
        assert "additionalProperties" not in schema  # the check refuses others (below)
        bound = BOUND[name]
        assert set(schema.get("required", ())) == {p.name for p in bound.params
                                                   if p.required}
        assert ("idempotency_key" in schema["properties"]) == spec.mutating
        assert bool(tool.annotations.read_only_hint) == spec.read_only
        assert tool.annotations.destructive_hint is (None if spec.read_only
                                                     else spec.destructive)
        assert tool.description and tool.output_schema["type"] == "object"
        if spec.mutating:
            assert spec.status_tool in ALL_TOOLS
            for shape in _shapes(tool.output_schema):  # every reply the route answers
                assert "status_tool" in shape["required"], (name, shape)
    net = tools["create_network"].input_schema["properties"]
    documented = BOUND["create_network"].route.param("availability_zones").schema
    assert net["availability_zones"] == documented
    assert (documented["type"], documented["minItems"], documented["maxItems"]) == (
        "array", 2, 6)
    wait = tools["wait_operation"].input_schema["properties"]["timeout_seconds"]
    assert (wait["default"], wait["maximum"]) == (30, 60)
    assert tools["delete_network"].annotations.destructive_hint is True


async def test_viewer_token_publishes_only_read_tools(fake_api: FakeApi) -> None:
    server = build_server(fake_api.url, VIEWER_TOKEN)
    async with Client(server) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == READ_TOOLS
        result = await client.call_tool("create_network", {"name": "lab"})
    assert result.is_error
    assert "create_network" in _text(result)
    assert fake_api.seen("POST") == []
    assert fake_api.seen("GET", "/api/v1/auth/whoami")


async def test_read_only_flag_publishes_only_read_tools(fake_api: FakeApi) -> None:
    server = build_server(fake_api.url, OPERATOR_TOKEN, read_only=True)
    async with Client(server) as client:
        names = {t.name for t in (await client.list_tools()).tools}
    assert names == READ_TOOLS


async def test_refused_token_fails_with_the_api_words(fake_api: FakeApi) -> None:
    with pytest.raises(ApiError) as caught:
        build_server(fake_api.url, "wrong-token")
    assert caught.value.code == "unauthorized"
    assert caught.value.status == 401


# --- reads -----------------------------------------------------------------------------------


async def test_reads_pass_query_and_path_arguments(fake_api: FakeApi) -> None:
    server = build_server(fake_api.url, OPERATOR_TOKEN)
    async with Client(server) as client:
        who = await client.call_tool("whoami", {})
        zones = await client.call_tool("list_availability_zones", {"region": "eu-west-1"})
        types = await client.call_tool("list_instance_types",
                                       {"availability_zone": "us-west-2a"})
        missing = await client.call_tool("get_network", {"name": "nope"})
    assert who.structured_content == {"name": "operator", "role": "operator", "aws": "sandbox",
                                      "region": "us-west-2", "team": None}
    assert json.loads(_text(who)) == who.structured_content
    assert zones.structured_content["items"][0]["name"] == "eu-west-1a"
    assert types.structured_content["items"][0]["max_efa_interfaces"] == 32
    seen = fake_api.seen("GET", "/api/v1/discovery/instance-types")[0]
    assert seen.query == {"availability_zone": "us-west-2a"}
    assert seen.header("Authorization") == f"Bearer {OPERATOR_TOKEN}"
    assert missing.is_error
    assert _text(missing) == "not_found: network 'nope' does not exist"


# --- mutations -------------------------------------------------------------------------------


async def test_create_network_reply_names_the_status_tool(fake_api: FakeApi) -> None:
    server = build_server(fake_api.url, OPERATOR_TOKEN)
    result = await _call(server, "create_network",
                         {"name": "lab", "availability_zones": ["us-west-2a", "us-west-2b"]})
    assert not result.is_error, _text(result)
    reply = result.structured_content
    op_id = reply["operation"]["id"]
    assert reply["operation"]["kind"] == "network.create"
    assert reply["status_tool"] == "wait_operation"
    assert reply["status_args"] == {"operation_id": op_id}
    assert reply["poll_after_seconds"] == 5
    assert "replayed" not in reply
    (post,) = fake_api.seen("POST", "/api/v1/networks")
    assert post.body == {"name": "lab", "availability_zones": ["us-west-2a", "us-west-2b"]}
    assert post.header("Idempotency-Key") == reply["idempotency_key"]
    assert post.header("Idempotency-Key").startswith("mcp-")
    assert post.header("Idempotency-TTL") == "600"
    assert post.header("Authorization") == f"Bearer {OPERATOR_TOKEN}"


async def test_blind_retry_sends_the_same_idempotency_key(fake_api: FakeApi) -> None:
    server = build_server(fake_api.url, OPERATOR_TOKEN)
    async with Client(server) as client:
        first = await client.call_tool("create_network", {"name": "lab", "cidr": "10.1.0.0/16"})
        # The same call again, arguments in another order: an agent that lost the reply.
        again = await client.call_tool("create_network", {"cidr": "10.1.0.0/16", "name": "lab"})
    keys = [r.header("Idempotency-Key") for r in fake_api.seen("POST", "/api/v1/networks")]
    assert len(keys) == 2 and keys[0] == keys[1]
    assert first.structured_content["operation"]["id"] == again.structured_content[
        "operation"]["id"]
    assert len(fake_api.operations) == 1
    assert again.structured_content["replayed"] is True
    assert "idempotency_key" in again.structured_content["note"]


async def test_different_arguments_get_a_different_key(fake_api: FakeApi) -> None:
    server = build_server(fake_api.url, OPERATOR_TOKEN)
    async with Client(server) as client:
        await client.call_tool("create_network", {"name": "one"})
        await client.call_tool("create_network", {"name": "two"})
    keys = {r.header("Idempotency-Key") for r in fake_api.seen("POST")}
    assert len(keys) == 2 and len(fake_api.operations) == 2


async def test_explicit_idempotency_key_is_sent_as_given(fake_api: FakeApi) -> None:
    server = build_server(fake_api.url, OPERATOR_TOKEN)
    async with Client(server) as client:
        ok = await client.call_tool("create_network", {"name": "lab", "idempotency_key": "k-1"})
        reused = await client.call_tool("create_network",
                                        {"name": "lab2", "idempotency_key": "k-1"})
    assert not ok.is_error
    post = fake_api.seen("POST")[0]
    assert post.header("Idempotency-Key") == "k-1"
    assert post.header("Idempotency-TTL") is None
    assert post.body == {"name": "lab"}  # the key is a header, never a body field
    assert reused.is_error
    assert _text(reused) == (
        "idempotency_key_reused: this Idempotency-Key was used with another request body")


async def test_rest_errors_keep_code_message_and_details(fake_api: FakeApi) -> None:
    server = build_server(fake_api.url, OPERATOR_TOKEN)
    async with Client(server) as client:
        conflict = await client.call_tool("create_network", {"name": "busy"})
        invalid = await client.call_tool("create_network", {"name": "lab", "cidr": "bogus"})
    assert conflict.is_error
    assert _text(conflict) == ("conflict: network/busy is locked by operation op_busy "
                               "(network.create, running); wait for it to finish")
    assert refusal(conflict)["error"]["details"] == {
        "operation_id": "op_busy", "target": "network/busy"}
    assert refusal(conflict)["http_status"] == 409
    assert json.loads(conflict.content[1].text)["error"]["code"] == "conflict"
    assert invalid.is_error
    assert _text(invalid) == "validation_failed: the request has invalid fields"
    assert refusal(invalid)["error"]["details"] == {
        "fields": {"cidr": ["Not a valid IPv4 CIDR."]}}


async def test_arguments_are_checked_against_the_schema(fake_api: FakeApi) -> None:
    server = build_server(fake_api.url, OPERATOR_TOKEN)
    async with Client(server) as client:
        bad_name = await client.call_tool("create_network", {"name": "Lab_1"})
        bad_cluster = await client.call_tool("create_cluster", {
            "name": "Lab_1", "availability_zone": "us-west-2a", "instance_type": "ml.g5.8xlarge",
            "instance_count": 1})
        unknown = await client.call_tool("create_network", {"name": "lab", "vpc": "x"})
        too_long = await client.call_tool("wait_operation",
                                          {"operation_id": "op_1", "timeout_seconds": 600})
    assert bad_name.is_error and "name" in _text(bad_name)
    # explained in the document's words, which tools/list leaves to the pattern (SHARED_WORDING)
    # or to another tool (create_cluster's arguments are described on plan_cluster's)
    for refused in (bad_name, bad_cluster):
        assert _text(refused).startswith("validation_failed: name: 'Lab_1' does not follow the "
                                         "rule: ") and patterns.NAME_RULE in _text(refused)
    assert unknown.is_error and "vpc" in _text(unknown)
    assert too_long.is_error and "timeout_seconds" in _text(too_long)
    assert fake_api.seen("POST") == []


async def test_api_unreachable_names_the_url() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = build_server(url, OPERATOR_TOKEN, role="operator",
                          routes=RouteBook(real_openapi()))  # the API went away after start
    result = await _call(server, "list_networks")
    assert result.is_error
    assert _text(result).startswith(f"api_unreachable: cannot reach the hypd API at {url}")


# --- operations ------------------------------------------------------------------------------


async def test_wait_operation_long_polls_until_terminal(fake_api: FakeApi) -> None:
    server = build_server(fake_api.url, OPERATOR_TOKEN)
    async with Client(server) as client:
        created = await client.call_tool("create_network", {"name": "lab"})
        reply = created.structured_content
        waited = await client.call_tool(reply["status_tool"], reply["status_args"])
        network = await client.call_tool("get_network", {"name": "lab"})
    assert not waited.is_error, _text(waited)
    out = waited.structured_content
    assert out["terminal"] is True and out["status"] == "succeeded"
    assert out["operation"]["status"] == "succeeded"
    assert "status_tool" not in out
    op_path = f"/api/v1/operations/{reply['operation']['id']}"
    polls = [r for r in fake_api.seen("GET", op_path) if "wait" in r.query]
    assert len(polls) >= 2  # queued -> running -> succeeded: it looped
    assert all(0 < float(r.query["wait"]) <= 30 for r in polls)
    assert all(r.query.get("after") for r in polls)
    assert network.structured_content["state"] == "available"


async def test_wait_operation_returns_at_its_timeout(fake_api: FakeApi) -> None:
    server = build_server(fake_api.url, OPERATOR_TOKEN)
    async with Client(server) as client:
        created = await client.call_tool("create_network", {"name": "slow"})
        op_id = created.structured_content["operation"]["id"]
        waited = await client.call_tool("wait_operation",
                                        {"operation_id": op_id, "timeout_seconds": 1})
    out = waited.structured_content
    assert out["terminal"] is False and out["status"] == "running"
    assert out["status_tool"] == "wait_operation"
    assert out["status_args"] == {"operation_id": op_id}
    assert 0.8 <= out["waited_seconds"] < 2


async def test_failed_operation_then_retry(fake_api: FakeApi) -> None:
    server = build_server(fake_api.url, OPERATOR_TOKEN)
    async with Client(server) as client:
        created = await client.call_tool("create_network", {"name": "doomed"})
        op_id = created.structured_content["operation"]["id"]
        failed = await client.call_tool("wait_operation", {"operation_id": op_id})
        retried = await client.call_tool("retry_operation", {"operation_id": op_id})
        done = await client.call_tool("wait_operation", {"operation_id": op_id})
        listed = await client.call_tool("list_operations",
                                        {"status": "succeeded", "kind": "network.create"})
    assert failed.structured_content["status"] == "failed"
    assert "VpcLimitExceeded" in failed.structured_content["operation"]["error"]["message"]
    assert retried.structured_content["status_tool"] == "wait_operation"
    assert retried.structured_content["operation"]["id"] == op_id
    assert done.structured_content["status"] == "succeeded"
    assert [o["id"] for o in listed.structured_content["items"]] == [op_id]
    seen = fake_api.seen("GET", "/api/v1/operations")[0]
    assert seen.query == {"status": "succeeded", "kind": "network.create"}


async def test_cancel_reply_gets_status_tool_filled_in(fake_api: FakeApi) -> None:
    server = build_server(fake_api.url, OPERATOR_TOKEN)
    async with Client(server) as client:
        created = await client.call_tool("create_network", {"name": "lab"})
        op_id = created.structured_content["operation"]["id"]
        cancelled = await client.call_tool("cancel_operation", {"operation_id": op_id})
        again = await client.call_tool("cancel_operation",
                                       {"operation_id": op_id, "idempotency_key": "other"})
    out = cancelled.structured_content
    # The REST cancel reply is {"operation": ...} only: the server names the status tool.
    assert out["status_tool"] == "wait_operation"
    assert out["status_args"] == {"operation_id": op_id}
    assert out["poll_after_seconds"] == 2  # from Retry-After
    assert out["operation"]["status"] == "cancelled"
    assert again.is_error and _text(again).startswith("conflict: operation")


async def test_delete_network(fake_api: FakeApi) -> None:
    server = build_server(fake_api.url, OPERATOR_TOKEN)
    async with Client(server) as client:
        created = await client.call_tool("create_network", {"name": "lab"})
        await client.call_tool("wait_operation",
                               {"operation_id": created.structured_content["operation"]["id"]})
        deleted = await client.call_tool("delete_network", {"name": "lab"})
        reply = deleted.structured_content
        await client.call_tool("wait_operation", reply["status_args"])
        listed = await client.call_tool("list_networks", {})
    assert reply["operation"]["kind"] == "network.delete"
    assert fake_api.seen("DELETE")[0].header("Idempotency-TTL") == "600"
    assert listed.structured_content == {"items": []}
