"""`python -m mcp_server` as a real stdio subprocess, driven by the SDK's stdio client."""

from __future__ import annotations

import subprocess
import sys

import pytest
from mcp import Client, StdioServerParameters

from mcp_server.tools import TOOLS
from tests.mcp_server.mcp_fake_api import (
    OPERATOR_READS,
    OPERATOR_TOKEN,
    REPO_ROOT,
    VIEWER_TOKEN,
    FakeApi,
)
from tests.mcp_server.refusals import refusal


def _params(api_url: str, token: str, *args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_server", *args],
        env={"HYPD_API_URL": api_url, "HYPD_TOKEN": token},
        cwd=str(REPO_ROOT),
    )


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", ["legacy", "auto"])  # handshake-era clients and 2026-07-28
async def test_stdio_operator_session(fake_api: FakeApi, mode: str) -> None:
    async with Client(_params(fake_api.url, OPERATOR_TOKEN), read_timeout_seconds=60,
                      mode=mode) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        created = await client.call_tool("create_network", {"name": "lab"})
        retried = await client.call_tool("create_network", {"name": "lab"})
        conflict = await client.call_tool("create_network", {"name": "busy"})
        reply = created.structured_content
        waited = await client.call_tool(reply["status_tool"], reply["status_args"])
    assert names == {t.name for t in TOOLS}
    assert not created.is_error, created.content[0].text
    assert reply["status_tool"] == "wait_operation"
    assert reply["status_args"] == {"operation_id": reply["operation"]["id"]}
    assert reply["poll_after_seconds"] == 5
    # The blind retry: same key on the wire, same operation back, one operation in the API.
    posts = [r for r in fake_api.seen("POST", "/api/v1/networks")
             if r.body == {"name": "lab"}]
    assert len(posts) == 2
    assert posts[0].header("Idempotency-Key") == posts[1].header("Idempotency-Key")
    assert retried.structured_content["operation"]["id"] == reply["operation"]["id"]
    assert retried.structured_content["replayed"] is True
    assert len([o for o in fake_api.operations.values() if o["target"] == "network/lab"]) == 1
    assert conflict.is_error
    assert conflict.content[0].text.startswith("conflict: network/busy is locked")
    assert refusal(conflict)["error"]["details"]["operation_id"] == "op_busy"
    assert waited.structured_content["status"] == "succeeded"
    assert fake_api.seen("GET", "/api/v1/auth/whoami")  # asked at start


@pytest.mark.asyncio
async def test_stdio_viewer_sees_read_tools_only(fake_api: FakeApi) -> None:
    async with Client(_params(fake_api.url, VIEWER_TOKEN), read_timeout_seconds=60) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        zones = await client.call_tool("list_availability_zones", {})
    assert names == {t.name for t in TOOLS if t.read_only} - OPERATOR_READS
    assert zones.structured_content["items"][0]["state"] == "available"


def test_stdio_without_token_or_with_a_refused_one_exits_with_the_cause(
        fake_api: FakeApi) -> None:
    base = {"PATH": "/usr/bin:/bin", "HYPD_API_URL": fake_api.url}
    missing = subprocess.run([sys.executable, "-m", "mcp_server"], cwd=REPO_ROOT, env=base,
                             capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert missing.returncode != 0
    assert "HYPD_TOKEN is not set" in missing.stderr
    refused = subprocess.run([sys.executable, "-m", "mcp_server"], cwd=REPO_ROOT,
                             env={**base, "HYPD_TOKEN": "wrong"}, capture_output=True,
                             text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert refused.returncode != 0
    assert "unauthorized: missing or unknown bearer token" in refused.stderr
    assert refused.stdout == ""  # stdout belongs to the MCP protocol
