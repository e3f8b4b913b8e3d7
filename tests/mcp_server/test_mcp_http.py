"""`python -m mcp_server --http`: per-caller bearer tokens, forwarded to the REST API."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_server.tools import TOOLS
from tests.mcp_server.mcp_fake_api import (
    OPERATOR_READS,
    OPERATOR_TOKEN,
    REPO_ROOT,
    VIEWER_TOKEN,
    FakeApi,
)
from tests.stack import tls


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def mcp_http(fake_api_server: FakeApi) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_server", "--http", "--host", "127.0.0.1",
         "--port", str(port)],
        cwd=REPO_ROOT, env={"PATH": "/usr/bin:/bin", "HYPD_API_URL": fake_api_server.url},
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for(proc, base)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_for(proc: subprocess.Popen[str], base: str) -> None:
    """Until the server answers /healthz (it reads the API's document first)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(base + "/healthz", verify=tls(), timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"MCP HTTP server did not start: {proc.communicate()}")
        time.sleep(0.1)


def _client(base: str, token: str, mode: str = "auto") -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    return Client(streamable_http_client(base + "/mcp", http_client=http),
                  read_timeout_seconds=60, mode=mode)


def test_no_bearer_or_a_refused_one_is_401(mcp_http: str) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}}
    headers = {"Accept": "application/json, text/event-stream"}
    missing = httpx.post(mcp_http + "/mcp", verify=tls(), json=init, headers=headers)
    assert missing.status_code == 401
    assert missing.json()["error"]["code"] == "unauthorized"
    assert missing.headers["www-authenticate"].startswith("Bearer")
    refused = httpx.post(mcp_http + "/mcp", verify=tls(), json=init,
                         headers={**headers, "Authorization": "Bearer wrong"})
    assert refused.status_code == 401
    assert refused.json()["error"]["message"] == "missing or unknown bearer token"


@pytest.mark.asyncio
async def test_viewer_bearer_gets_read_tools_only(mcp_http: str, fake_api: FakeApi) -> None:
    async with _client(mcp_http, VIEWER_TOKEN) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        who = await client.call_tool("whoami", {})
        refused = await client.call_tool("create_network", {"name": "lab"})
    assert names == {t.name for t in TOOLS if t.read_only} - OPERATOR_READS
    assert who.structured_content == {"name": "viewer", "role": "viewer", "aws": "sandbox",
                                      "region": "us-west-2", "team": None}
    assert refused.is_error
    assert fake_api.seen("POST") == []


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", ["legacy", "auto"])  # handshake-era clients and 2026-07-28
async def test_operator_bearer_is_forwarded(mcp_http: str, fake_api: FakeApi,
                                            mode: str) -> None:
    async with _client(mcp_http, OPERATOR_TOKEN, mode) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        created = await client.call_tool("create_network", {"name": "lab"})
        waited = await client.call_tool("wait_operation",
                                        created.structured_content["status_args"])
    assert names == {t.name for t in TOOLS}
    assert not created.is_error, created.content[0].text
    (post,) = fake_api.seen("POST", "/api/v1/networks")
    assert post.header("Authorization") == f"Bearer {OPERATOR_TOKEN}"
    assert post.header("Idempotency-TTL") == "600"
    assert waited.structured_content["status"] == "succeeded"
