"""Toolsets (mcp_server/toolsets.py): `hypd mcp --toolsets clusters,training` publishes only
those toolsets' tools and the operation-following ones (get_operation, wait_operation),
always; the token's role and
`--read-only` still filter them; an unknown name is refused at start, naming the valid ones;
and a tool outside the session's toolsets, called anyway, is refused naming its toolset."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_server import toolsets
from mcp_server.server import build_server, main
from mcp_server.tools import TOOLS, TOOLS_BY_NAME
from tests.mcp_server.mcp_fake_api import (
    OPERATOR_READS,
    OPERATOR_TOKEN,
    REPO_ROOT,
    VIEWER_TOKEN,
    FakeApi,
)
from tests.mcp_server.refusals import refusal
from tests.mcp_server.test_mcp_http import _free_port, _wait_for

ALWAYS = set(toolsets.ALWAYS)


def _of(*names: str) -> set[str]:
    return {tool for name in names for tool in toolsets.TOOLSETS_BY_NAME[name].tools}


async def _listed(server: Any) -> set[str]:
    async with Client(server) as client:
        return {t.name for t in (await client.list_tools()).tools}


def test_every_tool_is_in_exactly_one_toolset() -> None:
    """A row's toolset is its own field; toolsets.py reads each toolset's tools from the
    rows, in the table's order, and refuses a row naming none or one it does not declare."""
    assert toolsets._check() == []
    assert sorted(toolsets.TOOLSET_OF) == sorted(t.name for t in TOOLS)
    for ts in toolsets.TOOLSETS:
        assert ts.tools == tuple(t.name for t in TOOLS if t.toolset == ts.name)
    assert sorted(n for ts in toolsets.TOOLSETS for n in ts.tools) == sorted(
        t.name for t in TOOLS)
    row = dataclasses.replace(TOOLS_BY_NAME["get_network"], name="get_teapot", toolset="")
    assert toolsets._check([*TOOLS, row]) == [
        "get_teapot: in no toolset (give its row a toolset= in mcp_server/tools.py)"]
    assert toolsets._check([*TOOLS, dataclasses.replace(row, toolset="teapots")]) == [
        "get_teapot: in toolset teapots, which mcp_server/toolsets.py does not declare "
        "(clusters, capacity, training, inference, spaces, teams, operations)"]
    assert toolsets._check([t for t in TOOLS if t.toolset != "spaces"]) == [
        "toolset spaces: no tool names it"]


def test_names_are_parsed_and_an_unknown_one_is_refused_naming_the_valid_ones() -> None:
    everything = frozenset(toolsets.NAMES)
    assert toolsets.parse(None) == toolsets.parse("all") == toolsets.parse("") == everything
    assert toolsets.parse("clusters,all") == everything
    assert toolsets.parse(" Clusters , training ") == {"clusters", "training"}
    assert toolsets.parse(["spaces"]) == {"spaces"}
    with pytest.raises(toolsets.UnknownToolset) as caught:
        toolsets.parse("clusters,gpus")
    assert str(caught.value) == (
        "unknown toolset gpus; valid: all, clusters, capacity, training, inference, "
        "spaces, teams, operations")


@pytest.mark.asyncio
async def test_a_session_publishes_only_its_toolsets(fake_api: FakeApi) -> None:
    chosen = await _listed(build_server(fake_api.url, OPERATOR_TOKEN,
                                        toolsets="clusters,training"))
    assert chosen == _of("clusters", "training") | ALWAYS
    assert set(toolsets.ALWAYS) == {"get_operation", "wait_operation"}
    assert await _listed(build_server(fake_api.url, OPERATOR_TOKEN, toolsets="spaces")) == (
        _of("spaces") | ALWAYS)
    assert await _listed(build_server(fake_api.url, OPERATOR_TOKEN, toolsets="all")) == {
        t.name for t in TOOLS}
    assert await _listed(build_server(fake_api.url, OPERATOR_TOKEN)) == {
        t.name for t in TOOLS}


@pytest.mark.asyncio
async def test_the_role_and_read_only_still_filter_the_toolsets(fake_api: FakeApi) -> None:
    reads = {t.name for t in TOOLS if t.read_only}
    mine = _of("training", "operations")
    viewer = await _listed(build_server(fake_api.url, VIEWER_TOKEN,
                                        toolsets="training,operations"))
    assert viewer == (mine & reads) - OPERATOR_READS
    assert "get_mlflow_ui_url" not in viewer and "list_audit" not in viewer
    read_only = await _listed(build_server(fake_api.url, OPERATOR_TOKEN, read_only=True,
                                           toolsets="training,operations"))
    assert read_only == (mine & reads) - OPERATOR_READS  # a token's read-only is a viewer's


@pytest.mark.asyncio
async def test_a_tool_outside_the_session_s_toolsets_is_refused_naming_it(
        fake_api: FakeApi) -> None:
    server = build_server(fake_api.url, OPERATOR_TOKEN, toolsets="training")
    async with Client(server) as client:
        outside = await client.call_tool("create_network", {"name": "lab"})
        viewer_only = await client.call_tool("list_spaces", {"cluster": "lab1"})
    error = refusal(outside)["error"]
    assert error["code"] == "not_found"
    assert error["message"] == (
        "create_network is in the clusters toolset, which this session does not publish; "
        "start hypd mcp with --toolsets clusters,training")
    assert error["details"] == {"toolset": "clusters"}
    assert refusal(viewer_only)["error"]["details"] == {"toolset": "spaces"}
    assert fake_api.seen("POST") == []
    assert not fake_api.seen("GET", "/api/v1/clusters/lab1/spaces")


def test_hypd_mcp_s_help_names_every_toolset() -> None:
    """The launcher's `hypd mcp --toolsets` help is written there (the launcher imports the
    MCP server only to run it); it must name what toolsets.py holds."""
    from launcher.cli import build_parser

    parser = build_parser()
    mcp = next(a for a in parser._subparsers._group_actions[0].choices.values()
               if a.prog.endswith(" mcp"))
    said = next(a.help for a in mcp._actions if "--toolsets" in a.option_strings)
    for name in (*toolsets.NAMES, *toolsets.ALWAYS):
        assert name in said, name


def test_an_unknown_toolset_is_refused_at_start(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--toolsets", "clusters,gpus"])
    assert caught.value.code == 2
    assert ("argument --toolsets: unknown toolset gpus; valid: all, clusters, capacity, "
            "training, inference, spaces, teams, operations") in capsys.readouterr().err
    # `hypd mcp` (the launcher's parser) refuses it before reading a token or the API
    hypd = subprocess.run(
        [sys.executable, "-c", "import sys; from launcher.cli import main; sys.exit(main())",
         "mcp", "--toolsets", "gpus"], cwd=REPO_ROOT,
        env={"PATH": "/usr/bin:/bin", "HYPD_API_URL": "http://127.0.0.1:9",
             "HYPD_TOKEN": "x", "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert hypd.returncode != 0
    assert "unknown toolset gpus; valid: all, clusters, capacity" in hypd.stderr
    assert hypd.stdout == ""


@pytest.mark.asyncio
async def test_the_http_mode_takes_the_same_flag(fake_api: FakeApi) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_server", "--http", "--host", "127.0.0.1",
         "--port", str(port), "--toolsets", "inference"],
        cwd=REPO_ROOT, env={"PATH": "/usr/bin:/bin", "HYPD_API_URL": fake_api.url},
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for(proc, base)
        lists = {}
        for token in (OPERATOR_TOKEN, VIEWER_TOKEN):
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                      timeout=60)
            async with Client(streamable_http_client(base + "/mcp", http_client=http),
                              read_timeout_seconds=60) as client:
                lists[token] = {t.name for t in (await client.list_tools()).tools}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    mine = _of("inference") | ALWAYS
    assert lists[OPERATOR_TOKEN] == mine
    assert lists[VIEWER_TOKEN] == {n for n in mine if TOOLS_BY_NAME[n].read_only}
