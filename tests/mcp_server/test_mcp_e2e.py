"""The MCP server against the real stack (web, worker, Redis, sandbox AWS): real MCP clients.

Uses the session fixture `stack` from tests/conftest.py (`.url`, `.operator_token`,
`.viewer_token`).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mcp_server.tools import TOOLS
from tests.mcp_server.mcp_fake_api import REPO_ROOT

FOLLOW_LIMIT_S = 240
ALL = {t.name for t in TOOLS}
READ = {t.name for t in TOOLS if t.read_only}


def _stdio(stack: Any, token: str) -> Client:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "app.cli", "mcp"], cwd=str(REPO_ROOT),
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
        assert missing.structured_content["error"]["code"] == "not_found"
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
async def test_cluster_pipeline_over_stdio(stack: Any) -> None:
    """An agent's path: look first, plan (dry run), create, follow the named status tool to
    succeeded, then read the cluster and its kubeconfig — all through a real MCP client."""
    stack.wait_idle()
    name = f"mcpc-{uuid.uuid4().hex[:6]}"
    async with _stdio(stack, stack.operator_token) as client:
        zones = (await client.call_tool("list_availability_zones", {})).structured_content
        zone = next(z["name"] for z in zones["items"] if z["state"] == "available")
        types = (await client.call_tool("list_instance_types",
                                        {"availability_zone": zone})).structured_content
        gpu = next(t["name"] for t in types["items"] if t["name"] == "ml.g5.8xlarge")
        decision = {"name": name, "availability_zone": zone, "instance_type": gpu,
                    "instance_count": 1}
        plan = await client.call_tool("plan_cluster", decision)
        assert not plan.is_error, plan.content[0].text
        assert plan.structured_content["dry_run"] is True
        assert plan.structured_content["cost"]["hourly_usd"] > 0

        created = await client.call_tool("create_cluster", decision)
        assert not created.is_error, created.content[0].text
        reply = created.structured_content
        assert reply["operation"]["kind"] == "cluster.create"
        done = await _follow(client, reply)
        assert done["status"] == "succeeded", done["operation"].get("error")

        detail = (await client.call_tool("get_cluster", {"name": name})).structured_content
        assert {s["status"] for s in detail["stages"]} == {"succeeded"}
        assert detail["hyperpod"]["node_provisioning_mode"] == "Continuous"
        kubeconfig = await client.call_tool("get_kubeconfig", {"name": name})
        assert not kubeconfig.is_error, kubeconfig.content[0].text
        active = (await client.call_tool("get_active_cluster", {})).structured_content
        assert active["name"] == name


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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def mcp_http(stack: Any) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_server", "--http", "--port", str(port)], cwd=REPO_ROOT,
        env={"PATH": "/usr/bin:/bin", "HYPD_API_URL": stack.url}, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"MCP HTTP server did not start: {proc.communicate()}")
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.asyncio
async def test_http_mode_forwards_each_callers_token(stack: Any, mcp_http: str) -> None:
    assert httpx.post(mcp_http + "/mcp", json={}).status_code == 401
    for token, expected, role in ((stack.viewer_token, READ, "viewer"),
                                  (stack.operator_token, ALL, "operator")):
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        async with Client(streamable_http_client(mcp_http + "/mcp", http_client=http),
                          read_timeout_seconds=60) as client:
            assert {t.name for t in (await client.list_tools()).tools} == expected
            who = (await client.call_tool("whoami", {})).structured_content
            assert who["role"] == role


def test_tool_table_matches_the_openapi_document(stack: Any) -> None:
    """Every tool calls a documented route, and every argument it sends is documented there."""
    spec = httpx.get(stack.url + "/api/v1/openapi.json", timeout=10).json()

    def resolve(schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            node: Any = spec
            for part in schema["$ref"].lstrip("#/").split("/"):
                node = node[part]
            schema = node
        return schema

    for tool in TOOLS:
        route = spec["paths"].get(tool.path)
        assert route is not None, f"{tool.name}: {tool.path} is not in the OpenAPI document"
        op = route.get(tool.method.lower())
        assert op is not None, f"{tool.name}: {tool.method} {tool.path} is not documented"
        params = {(p["name"], p["in"]): p for p in (*route.get("parameters", ()),
                                                     *op.get("parameters", ()))}
        body_schema = resolve(op.get("requestBody", {}).get("content", {})
                              .get("application/json", {}).get("schema", {}))
        body_props = body_schema.get("properties", {})
        for arg in tool.args:
            if arg.location in ("path", "query"):
                param = params.get((arg.name, arg.location))
                assert param is not None, f"{tool.name}: {arg.location} {arg.name} undocumented"
                assert param["schema"].get("type", arg.type) == arg.type, (tool.name, arg.name)
            elif arg.location == "body":
                assert arg.name in body_props, f"{tool.name}: body field {arg.name} undocumented"
                assert body_props[arg.name].get("type", arg.type) == arg.type, (
                    tool.name, arg.name)
        required_body = set(body_schema.get("required", ()))
        assert required_body == {a.name for a in tool.args
                                 if a.location == "body" and a.required}, tool.name
        sent = {a.name for a in tool.args if a.location == "body"}
        assert sent >= required_body and sent <= set(body_props), tool.name
