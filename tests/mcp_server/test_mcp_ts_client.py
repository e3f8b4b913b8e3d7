"""The MCP server as a client nobody here wrote reads it: the official TypeScript MCP SDK.

That client validates a tool's structured content against the tool's output schema, as the
MCP specification asks (the Python SDK's client does too, but skips tool errors; the
TypeScript one does not). It drives `python -m mcp_server` over stdio from
tests/mcp_server/ts_client/call_tools.mjs (its pinned dependency is installed by
`./dev.sh test`, or `npm ci --prefix tests/mcp_server/ts_client`).

- Every mutating tool, its change refused by the API (409, 422, 502), arrives as a tool
  error with the API's code, message and details (never as a protocol error over
  structured content its output schema forbids); so do the MCP server's own refusals (an
  argument the schema refuses, an unknown argument, a tool the session's role may not call).
- Every read tool the fake API answers returns structured content its output schema admits
  (checked by the TypeScript client, and again here with jsonschema).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from mcp_server.arguments import ArgumentCheck
from mcp_server.routes import RouteBook
from mcp_server.tools import TOOLS, bind
from tests.mcp_server.mcp_fake_api import (
    OPERATOR_TOKEN,
    REPO_ROOT,
    VIEWER_TOKEN,
    ApiFailure,
    FakeApi,
    real_openapi,
)

TS_CLIENT = Path(__file__).resolve().parent / "ts_client"
SDK = TS_CLIENT / "node_modules" / "@modelcontextprotocol" / "sdk"
NODE = shutil.which("node")

BOUND = bind(RouteBook(real_openapi()))
MUTATING = sorted(t.name for t in TOOLS if t.mutating)

_CANDIDATES = ("lab1", "us-west-2a", "ml.g5.xlarge", "i-0123456789abcdef0", "unassigned",
               "public.ecr.aws/lab/train:1", "lab1-model")


def _example(schema: dict[str, Any]) -> Any:
    """A value the schema admits, for the shapes the tools' required inputs take."""
    if "enum" in schema:
        return next(v for v in schema["enum"] if v is not None)
    kind = schema.get("type")
    kind = next((k for k in kind if k != "null"), None) if isinstance(kind, list) else kind
    if kind == "integer" or kind == "number":
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    if kind == "array":
        return [_example(schema.get("items") or {"type": "string"})
                for _ in range(max(1, schema.get("minItems", 1)))]
    if kind == "object":
        return {name: _example(schema["properties"][name])
                for name in schema.get("required") or ()}
    pattern = schema.get("pattern")
    for value in _CANDIDATES:
        if pattern is None or re.search(pattern, value):
            return value
    raise AssertionError(f"no example for {schema}")


def _arguments(name: str) -> dict[str, Any]:
    """Arguments the tool's input schema admits, so the call reaches the API."""
    schema = BOUND[name].input_schema()
    args = {p: _example(schema["properties"][p]) for p in schema.get("required", ())}
    assert not ArgumentCheck(schema).problems(args), (name, args)
    return args


def _drive(api_url: str, token: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    if NODE is None:
        pytest.fail("node is not installed: the TypeScript MCP SDK client needs Node.js 18+ "
                    "(./dev.sh test installs it)")
    if not (SDK / "package.json").exists():
        pytest.fail(f"the TypeScript MCP SDK is not installed in {TS_CLIENT}: run "
                    "`npm ci --prefix tests/mcp_server/ts_client` (./dev.sh test does)")
    job = {
        "command": sys.executable,
        "args": ["-m", "mcp_server"],
        # this worktree's code first, whatever the venv's editable install points at
        "env": {"HYPD_API_URL": api_url, "HYPD_TOKEN": token,
                "PYTHONPATH": str(REPO_ROOT), "PATH": os.environ.get("PATH", "")},
        "cwd": str(REPO_ROOT),
        "calls": calls,
    }
    done = subprocess.run([NODE, str(TS_CLIENT / "call_tools.mjs")], input=json.dumps(job),
                          capture_output=True, text=True, timeout=180, cwd=TS_CLIENT,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _refusal(result: dict[str, Any]) -> dict[str, Any]:
    """The envelope of a tool error as the TypeScript client received it."""
    assert "protocolError" not in result, result
    assert result["isError"] is True, result
    assert result["structuredContent"] is None, result
    envelope = json.loads(result["text"][-1])
    error = envelope["error"]
    assert result["text"][0] == f"{error['code']}: {error['message']}"
    assert result["meta"]["hypd"]["error"] == error
    return envelope


REFUSALS = [
    ApiFailure(409, "conflict", "lab1 is locked by operation op_busy",
               {"operation_id": "op_busy", "target": "lab1"}),
    ApiFailure(422, "validation_failed", "the request has invalid fields",
               {"fields": {"name": ["already taken"]}}),
    ApiFailure(502, "upstream_error", "AccessDeniedException: not allowed", {"step": "x"}),
]


@pytest.mark.parametrize("failure", REFUSALS, ids=lambda f: f.code)
def test_every_mutating_tool_refused_by_the_api_is_a_tool_error(
        fake_api: FakeApi, failure: ApiFailure) -> None:
    fake_api.refusing = failure
    calls = [{"name": name, "arguments": _arguments(name)} for name in MUTATING]
    out = _drive(fake_api.url, OPERATOR_TOKEN, calls)
    assert set(MUTATING) <= set(out["tools"])
    assert [r["name"] for r in out["results"]] == MUTATING
    for result in out["results"]:
        envelope = _refusal(result)
        assert envelope == {"error": {"code": failure.code, "message": failure.message,
                                      "details": failure.details},
                            "http_status": failure.status}, result["name"]
    sent = {(r.method, r.path) for r in fake_api.requests if r.method != "GET"}
    assert len(sent) == len({(BOUND[n].spec.method, BOUND[n].spec.path) for n in MUTATING})


def test_the_servers_own_refusals_are_tool_errors(fake_api: FakeApi) -> None:
    out = _drive(fake_api.url, OPERATOR_TOKEN, [
        {"name": "create_network", "arguments": {"name": "Bad Name!"}},  # the bug's call
        {"name": "create_network", "arguments": {"name": "busy"}},  # the fake's 409
        {"name": "get_network", "arguments": {"name": "nowhere"}},  # a read's 404
        {"name": "create_network", "arguments": {"name": "lab1", "colour": "red"}},
    ])
    invalid, conflict, missing, unknown = out["results"]
    assert _refusal(unknown)["error"] == {
        "code": "validation_failed",
        "message": "colour: unknown field: this tool takes no such argument",
        "details": {"fields": {"colour": ["unknown field: this tool takes no such argument"]}}}
    assert _refusal(invalid)["error"]["code"] == "validation_failed"
    assert "name" in _refusal(invalid)["error"]["details"]["fields"]
    assert _refusal(conflict)["error"]["details"]["operation_id"] == "op_busy"
    assert _refusal(missing)["http_status"] == 404
    viewer = _drive(fake_api.url, VIEWER_TOKEN,
                    [{"name": "create_network", "arguments": {"name": "lab1"}}])
    assert "create_network" not in viewer["tools"]
    assert _refusal(viewer["results"][0])["error"]["code"] == "forbidden"
    assert not fake_api.seen("POST", "/api/v1/networks") or all(
        r.body.get("name") == "busy" for r in fake_api.seen("POST", "/api/v1/networks"))


READS = [
    ("whoami", {}),
    ("list_availability_zones", {}),
    ("list_instance_types", {"availability_zone": "us-west-2a"}),
    ("list_networks", {}),
    ("get_network", {"name": "lab1"}),
    ("list_operations", {}),
]


def test_read_tools_structured_content_matches_their_output_schema(fake_api: FakeApi) -> None:
    out = _drive(fake_api.url, OPERATOR_TOKEN, [
        {"name": "create_network", "arguments": {"name": "lab1"}},
        *({"name": name, "arguments": args} for name, args in READS),
    ])
    created, *reads = out["results"]
    assert "protocolError" not in created and not created["isError"], created
    operation = created["structuredContent"]["status_args"]
    more = _drive(fake_api.url, OPERATOR_TOKEN, [
        {"name": "get_operation", "arguments": operation},
        {"name": "wait_operation", "arguments": {**operation, "timeout_seconds": 10}},
    ])["results"]
    checked = [(created, "create_network"), *((r, r["name"]) for r in reads + more)]
    for result, name in checked:
        assert "protocolError" not in result, result
        assert not result["isError"], result
        schema = BOUND[name].output_schema()
        errors = list(Draft202012Validator(schema).iter_errors(result["structuredContent"]))
        assert not errors, (name, [e.message for e in errors])
    assert more[1]["structuredContent"]["status"] == "succeeded"
