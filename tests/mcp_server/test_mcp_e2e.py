"""The MCP server against the real stack (web, worker, Redis, sandbox AWS): real MCP clients.

Uses the session fixture `stack` from tests/conftest.py (`.url`, `.operator_token`,
`.viewer_token`).
"""

from __future__ import annotations

import re
import sys
import time
import uuid
from typing import Any

import httpx
import httpx2
import pytest
from jsonschema import Draft202012Validator
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mcp_server.server import build_server
from mcp_server.tools import TOOLS, TOOLS_BY_NAME
from schemas.clusters import STAGES
from tests.mcp_server.mcp_fake_api import OPERATOR_READS, REPO_ROOT
from tests.mcp_server.refusals import refusal
from tests.stack import tls
from vocabulary import patterns
from vocabulary.capacity import CAPACITY_TYPES

FOLLOW_LIMIT_S = 240
ALL = {t.name for t in TOOLS}
READ = {t.name for t in TOOLS if t.read_only} - OPERATOR_READS


def _stdio(stack: Any, token: str) -> Client:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "launcher.cli", "mcp"], cwd=str(REPO_ROOT),
        env={"HYPD_API_URL": stack.url, "HYPD_TOKEN": token})
    return Client(params, read_timeout_seconds=90, mode="legacy")


async def _follow(client: Client, reply: dict[str, Any]) -> dict[str, Any]:
    """Call the reply's status tool until the operation is terminal (as an agent must)."""
    assert reply["status_tool"] == "wait_operation", reply
    deadline = time.monotonic() + FOLLOW_LIMIT_S
    while True:
        result = await client.call_tool(reply["status_tool"],
                                        {**reply["status_args"], "timeout_seconds": 30})
        assert not result.is_error, result.content[0].text
        out = result.structured_content
        if out["terminal"]:
            return out
        assert time.monotonic() < deadline, f"not terminal after {FOLLOW_LIMIT_S} s: {out}"


@pytest.mark.asyncio
async def test_operator_network_lifecycle_over_stdio(stack: Any) -> None:
    name = f"mcp-{uuid.uuid4().hex[:8]}"
    other = f"mcp-{uuid.uuid4().hex[:8]}"
    async with _stdio(stack, stack.operator_token) as client:
        assert {t.name for t in (await client.list_tools()).tools} == ALL
        who = (await client.call_tool("whoami", {})).structured_content
        assert who["role"] == "operator"

        zones = (await client.call_tool("list_availability_zones", {})).structured_content
        available = [z["name"] for z in zones["items"] if z["state"] == "available"]
        assert len(available) >= 2
        types = await client.call_tool("list_instance_types",
                                       {"availability_zone": available[0]})
        assert not types.is_error, types.content[0].text
        assert types.structured_content["availability_zone"] == available[0]

        args = {"name": name, "availability_zones": available[:2]}
        created = await client.call_tool("create_network", args)
        assert not created.is_error, created.content[0].text
        reply = created.structured_content
        assert reply["operation"]["kind"] == "network.create"
        assert reply["operation"]["target"] == f"network/{name}"
        assert reply["status_args"] == {"operation_id": reply["operation"]["id"]}
        assert reply["poll_after_seconds"] > 0

        # A blind retry: the API sees the same Idempotency-Key and answers the same operation.
        again = await client.call_tool("create_network", args)
        assert not again.is_error, again.content[0].text
        assert again.structured_content["operation"]["id"] == reply["operation"]["id"]
        assert again.structured_content["replayed"] is True
        ops = await client.call_tool("list_operations",
                                     {"kind": "network.create", "target": f"network/{name}"})
        assert len(ops.structured_content["items"]) == 1

        done = await _follow(client, reply)
        assert done["status"] == "succeeded", done["operation"].get("error")
        network = (await client.call_tool("get_network", {"name": name})).structured_content
        assert network["vpc_id"] and network["name"] == name
        assert sorted(network["availability_zones"]) == sorted(available[:2])
        listed = (await client.call_tool("list_networks", {})).structured_content
        assert name in {n["name"] for n in listed["items"]}
        op = await client.call_tool("get_operation", {"operation_id": reply["operation"]["id"]})
        assert op.structured_content["status"] == "succeeded"

        # REST errors come back with code and message intact.
        missing = await client.call_tool("get_network", {"name": f"{name}-nope"})
        assert missing.is_error
        assert missing.content[0].text.startswith("not_found: ")
        assert refusal(missing)["error"]["code"] == "not_found"
        first = await client.call_tool("create_network", {"name": other,
                                                          "idempotency_key": f"k-{other}"})
        assert not first.is_error, first.content[0].text
        reused = await client.call_tool("create_network", {"name": f"{other}-x",
                                                           "idempotency_key": f"k-{other}"})
        assert reused.is_error
        assert reused.content[0].text.startswith("idempotency_key_reused: ")
        other_done = await _follow(client, first.structured_content)
        assert other_done["status"] == "succeeded", other_done["operation"].get("error")

        for net in (name, other):
            deleted = await client.call_tool("delete_network", {"name": net})
            assert not deleted.is_error, deleted.content[0].text
            assert deleted.structured_content["operation"]["kind"] == "network.delete"
            gone = await _follow(client, deleted.structured_content)
            assert gone["status"] == "succeeded", gone["operation"].get("error")
            after = await client.call_tool("get_network", {"name": net})
            assert after.is_error and after.content[0].text.startswith("not_found: ")


@pytest.mark.asyncio
async def test_an_agent_plans_a_change_before_making_it(stack: Any) -> None:
    """`dry_run` on a mutating tool answers the rehearsed operation (as its output schema
    says), with no key remembered and nothing recorded: the real call that follows is the
    first, not a replay of the plan."""
    name = f"mcp-plan-{uuid.uuid4().hex[:6]}"
    async with _stdio(stack, stack.operator_token) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        planned = await client.call_tool("create_network", {"name": name, "dry_run": True})
        assert not planned.is_error, planned.content[0].text
        plan = planned.structured_content
        problems = list(Draft202012Validator(listed["create_network"].output_schema)
                        .iter_errors(plan))
        assert not problems, problems[0]
        assert plan["dry_run"] is True and plan["kind"] == "network.create"
        assert plan["steps"][0]["calls"][0]["operation"] == "CreateVpc"
        assert plan["status_tool"] is None and "idempotency_key" not in plan
        again = await client.call_tool("create_network", {"name": name, "dry_run": True})
        assert "replayed" not in again.structured_content
        ops = await client.call_tool("list_operations", {"target": f"network/{name}"})
        assert ops.structured_content["items"] == []
        made = await client.call_tool("create_network", {"name": name})
        assert not made.is_error, made.content[0].text
        assert "replayed" not in made.structured_content
        done = await _follow(client, made.structured_content)
        assert done["status"] == "succeeded", done["operation"].get("error")
        gone = await client.call_tool("delete_network", {"name": name})
        assert (await _follow(client, gone.structured_content))["status"] == "succeeded"


@pytest.mark.asyncio
async def test_viewer_over_stdio_reads_only(stack: Any) -> None:
    async with _stdio(stack, stack.viewer_token) as client:
        assert {t.name for t in (await client.list_tools()).tools} == READ
        who = (await client.call_tool("whoami", {})).structured_content
        assert who["role"] == "viewer"
        listed = await client.call_tool("list_networks", {})
        assert not listed.is_error, listed.content[0].text
        refused = await client.call_tool("create_network", {"name": "mcp-viewer"})
        assert refused.is_error
        assert refused.content[0].text.startswith("forbidden: ")


@pytest.mark.asyncio
async def test_http_mode_forwards_each_callers_token(stack: Any, mcp_http: str) -> None:
    assert httpx.post(mcp_http + "/mcp", verify=tls(), json={}).status_code == 401
    for token, expected, role in ((stack.viewer_token, READ, "viewer"),
                                  (stack.operator_token, ALL, "operator")):
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        async with Client(streamable_http_client(mcp_http + "/mcp", http_client=http),
                          read_timeout_seconds=60) as client:
            assert {t.name for t in (await client.list_tools()).tools} == expected
            who = (await client.call_tool("whoami", {})).structured_content
            assert who["role"] == role


CONSTRAINTS = ("type", "enum", "pattern", "minimum", "maximum", "exclusiveMinimum",
               "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems", "default",
               "items", "properties", "required", "additionalProperties")


@pytest.mark.asyncio
async def test_tool_inputs_are_the_openapi_request_schemas(stack: Any) -> None:
    """Each published tool's input schema is its route's request schema, field by field —
    path and query parameters and body fields, with enums, patterns and bounds — read here
    from the live document by a resolver of this test's own."""
    doc = httpx.get(stack.url + "/api/v1/openapi.json", verify=tls(), timeout=10).json()

    def resolve(node: Any) -> Any:
        while isinstance(node, dict) and "$ref" in node:
            target: Any = doc
            for part in node["$ref"][2:].split("/"):
                target = target[part]
            node = target
        if isinstance(node, dict) and len(node.get("allOf") or ()) == 1:
            node = {**resolve(node["allOf"][0]), **{k: v for k, v in node.items()
                                                    if k != "allOf"}}
        if isinstance(node, dict) and node.get("nullable"):  # OpenAPI 3.0 → JSON Schema
            node = {**{k: v for k, v in node.items() if k != "nullable"},
                    "type": [node["type"], "null"]}
        if isinstance(node, dict):
            return {k: resolve(v) if k in ("items", "additionalProperties") else
                    [resolve(v2) for v2 in v] if k in ("anyOf", "oneOf") else
                    ({n: resolve(v2) for n, v2 in v.items()} if k == "properties" else v)
                    for k, v in node.items()}
        return node

    def documented(method: str, path: str) -> dict[str, tuple[dict[str, Any], bool]]:
        item = doc["paths"][path]
        op = item[method.lower()]
        inputs: dict[str, tuple[dict[str, Any], bool]] = {}
        for raw in map(resolve, (*item.get("parameters", ()), *op.get("parameters", ()))):
            if raw["in"] == "header":  # Idempotency-Key: the server's to send, not an input
                continue
            inputs[raw["name"]] = (resolve(raw["schema"]), raw.get("required", False))
        body = op.get("requestBody")
        if body:
            schema = resolve(body["content"]["application/json"]["schema"])
            for name, prop in schema.get("properties", {}).items():
                inputs[name] = (prop, name in schema.get("required", ()))
        return inputs

    server = build_server(stack.url, stack.operator_token)
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
    assert {t.name for t in tools} == ALL
    compared = 0
    for tool in tools:
        spec = TOOLS_BY_NAME[tool.name]
        inputs = documented(spec.method, spec.path)
        offered = set(inputs) - set(spec.hidden) - set(spec.fixed_query)
        own = {a.name for a in spec.local_args} | {"idempotency_key"}
        assert set(tool.input_schema["properties"]) - own == offered, tool.name
        for name in offered:
            schema, required = inputs[name]
            published_schema = tool.input_schema["properties"][name]
            for key in CONSTRAINTS:
                assert published_schema.get(key) == schema.get(key), (tool.name, name, key)
                compared += key in schema
            assert (name in tool.input_schema.get("required", ())) == (required or name in
                                                               _path_inputs(spec.path))
    assert compared > 100
    by_name = {t.name: t.input_schema["properties"] for t in tools}
    name_rule = by_name["create_network"]["name"]["pattern"]
    assert name_rule == patterns.NAME.pattern
    assert re.fullmatch(name_rule, "lab-1") and not re.fullmatch(name_rule, "lab-")
    assert by_name["create_cluster"]["capacity_type"]["enum"] == list(CAPACITY_TYPES)
    assert (by_name["create_cluster"]["instance_count"]["minimum"],
            by_name["create_cluster"]["instance_count"]["maximum"]) == (1, 500)
    assert by_name["run_cluster_stage"]["stage"]["enum"] == list(STAGES)
    assert by_name["create_network"]["cidr"]["default"] == "10.0.0.0/16"
    assert "dry_run" not in by_name["plan_cluster"] and "dry_run" not in by_name[
        "create_cluster"]


def _path_inputs(path: str) -> set[str]:
    return set(re.findall(r"\{(\w+)\}", path))
