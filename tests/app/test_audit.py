"""The audit log on the full stack: an operation and a viewer's refused mutation are both
there, filterable by target and token name, readable by operators only (REST and MCP), and
no token secret appears in it, in the logs or in error messages."""

from __future__ import annotations

import json
import uuid

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from app import create_app
from app.auth import TokenTable, digest
from cloud.settings import Settings
from tests.stack import tls

BOGUS = "hypd_not-a-real-token-" + "x" * 24
"""A secret no table knows: a 401, which must not be echoed anywhere either."""


def _audit(stack, **query) -> dict:
    with stack.client() as c:
        reply = c.get("/api/v1/audit", params=query)
    assert reply.status_code == 200, reply.text
    return reply.json()


@pytest.fixture(scope="module")
def story(stack):
    """An operator's network create (run to its end) and a viewer's refused delete of it."""
    name = f"aud-{uuid.uuid4().hex[:5]}"
    with stack.client() as c:
        made = c.post("/api/v1/networks", json={"name": name})
    assert made.status_code == 202, made.text
    op = stack.wait_operation(made.json()["operation"]["id"])
    with stack.client("viewer") as v:
        refused = v.delete(f"/api/v1/networks/{name}")
        refused_create = v.post("/api/v1/networks", json={"name": f"{name}-v"})
    assert refused.status_code == refused_create.status_code == 403
    return name, op


def test_an_operation_and_a_viewers_refused_mutation_are_audited(stack, story):
    name, op = story
    items = _audit(stack, target=f"network/{name}")["items"]
    assert [(e["token"], e["outcome"]) for e in items] == [("viewer", "refused"),
                                                          ("operator", "accepted")]
    refused, accepted = items
    assert accepted == {
        "id": accepted["id"], "at": accepted["at"], "token": "operator", "role": "operator",
        "method": "POST", "route": "POST /api/v1/networks", "path": "/api/v1/networks",
        "target": f"network/{name}", "operation_id": op["id"], "outcome": "accepted",
        "status": 202, "code": None, "forced": False}
    assert (refused["role"], refused["route"], refused["status"], refused["code"],
            refused["operation_id"]) == ("viewer", "DELETE /api/v1/networks/<name>", 403,
                                         "forbidden", None)
    assert refused["id"] > accepted["id"]  # newest first
    # a create's target comes from its body, refused or not
    [create] = _audit(stack, target=f"network/{name}-v")["items"]
    assert (create["token"], create["route"]) == ("viewer", "POST /api/v1/networks")


def test_filters_and_pages(stack, story):
    name, _ = story
    mine = _audit(stack, token="viewer", target=f"network/{name}")["items"]
    assert [e["token"] for e in mine] == ["viewer"]
    assert _audit(stack, token="nobody")["items"] == []
    refusals = _audit(stack, outcome="refused", limit=500)["items"]
    assert refusals and all(e["outcome"] == "refused" for e in refusals)
    first = _audit(stack, limit=1)
    assert len(first["items"]) == 1 and first["next_before"] == first["items"][0]["id"]
    second = _audit(stack, limit=1, before=first["next_before"])
    assert second["items"][0]["id"] < first["items"][0]["id"]
    with stack.client() as c:
        assert c.get("/api/v1/audit", params={"before": "yesterday"}).status_code == 422
        assert c.get("/api/v1/audit", params={"outcome": "maybe"}).status_code == 422


def test_only_operators_read_it_and_a_viewers_attempt_is_itself_audited(stack, story):
    with stack.client("viewer") as v:
        reply = v.get("/api/v1/audit")
    assert reply.status_code == 403 and reply.json()["error"]["code"] == "forbidden"
    newest = _audit(stack, token="viewer", limit=1)["items"][0]
    assert (newest["route"], newest["outcome"]) == ("GET /api/v1/audit", "refused")


@pytest.mark.asyncio
async def test_the_mcp_tool_is_an_operators(stack, story, mcp_http):
    name, _ = story

    def client(token: str) -> Client:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        return Client(streamable_http_client(mcp_http + "/mcp", http_client=http),
                      read_timeout_seconds=60)

    async with client(stack.operator_token) as operator:
        tool = next(t for t in (await operator.list_tools()).tools if t.name == "list_audit")
        assert tool.annotations.read_only_hint is True
        result = await operator.call_tool("list_audit", {"target": f"network/{name}"})
        assert not result.is_error, result.content
        entries = json.loads(result.content[0].text)["items"]
        assert [e["outcome"] for e in entries] == ["refused", "accepted"]
    async with client(stack.viewer_token) as viewer:
        assert "list_audit" not in {t.name for t in (await viewer.list_tools()).tools}
        result = await viewer.call_tool("list_audit", {})
        assert result.is_error and result.content[0].text.startswith("forbidden: ")


def test_no_token_appears_in_logs_audit_entries_or_error_messages(stack, story):
    secrets = (stack.operator_token, stack.viewer_token, BOGUS)
    seen = []  # replies: errors (422, 404, 403, 401) and the operator's audit read
    with httpx.Client(verify=tls(), base_url=stack.url, timeout=30) as http:
        for secret in secrets:
            headers = {"Authorization": f"Bearer {secret}"}
            for method, path, body in (("POST", "/api/v1/networks", {"name": "UPPER"}),
                                       ("DELETE", "/api/v1/networks/absent-net", None),
                                       ("GET", "/api/v1/audit", None),
                                       ("POST", "/api/v1/operations/op_x/retry", None)):
                reply = http.request(method, path, json=body, headers=headers)
                seen.append(reply.text)
    entries = _audit(stack, limit=500)["items"]
    assert any(e["token"] is None and e["status"] == 401 for e in entries)  # the bogus one
    audited = json.dumps(entries)
    logs = stack.log("web") + stack.log("worker")
    for secret in secrets:
        assert all(secret not in text for text in seen), secret[:8]
        assert secret not in audited, secret[:8]
        assert secret not in logs, secret[:8]
        assert digest(secret) not in audited + logs  # nor anything that identifies it


def test_the_log_is_bounded(redis_db, redis_url):
    """In-process app on a Redis of its own: 300 refused requests, a bound of 100 — the
    newest are kept, the oldest go (Redis trims in whole blocks: at most one block more)."""
    settings = Settings(redis_url=redis_url, audit_max_entries=100)
    app = create_app(settings, tokens=TokenTable([("viewer", "viewer", digest("v"))]))
    client = app.test_client()
    for n in range(300):
        assert client.delete(f"/api/v1/networks/n{n}",
                             headers={"Authorization": "Bearer v"}).status_code == 403
    kept = redis_db.xlen("hypd:audit")
    assert 100 <= kept < 300 - 100
    newest = json.loads(redis_db.xrevrange("hypd:audit", count=1)[0][1]["data"])
    assert newest["target"] == "network/n299"


def test_page_cursors_at_the_ends_answer_empty_or_422(stack, story):
    """Found by the fuzzer: an exclusive `(0-0` is refused by Redis (was a 500) — and so are
    `(00-0` and `(0-00`, and ids in other scripts' digits (tests/app/test_intake.py)."""
    for zero in ("0-0", "00-0", "0-00"):
        assert _audit(stack, before=zero) == {"items": [], "next_before": None}
    assert _audit(stack, before="9999999999999999999-0")["items"]
    with stack.client() as c:
        for bad in ("99999999999999999999-0", "\u0661-\u0661", "1-0\n"):
            reply = c.get("/api/v1/audit", params={"before": bad})
            assert reply.status_code == 422, (bad, reply.text)
            assert reply.json()["error"]["details"]["fields"] == {"before": ["not an entry id"]}


CHANGES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def test_every_route_that_changes_declares_its_target(redis_url):
    """A refused change is found by target like the operation it would have made: every
    blueprint with a changing route declares its target (audit.declare_target), so a new
    resource's routes cannot be audited without one."""
    app = create_app(Settings(redis_url=redis_url), tokens=TokenTable([]))
    undeclared = sorted(
        f"{sorted(rule.methods & CHANGES)} {rule.rule}" for rule in app.url_map.iter_rules()
        if rule.methods & CHANGES and rule.rule.startswith("/api/")
        and not hasattr(app.blueprints.get(rule.endpoint.partition(".")[0]), "hypd_target"))
    assert undeclared == []


@pytest.mark.parametrize(("method", "path", "body", "target"), [
    ("DELETE", "/api/v1/clusters/lab/instance-groups/gpu", None, "cluster/lab/group/gpu"),
    ("POST", "/api/v1/clusters/lab/spaces", {"name": "nb"}, "cluster/lab/space/nb"),
    ("POST", "/api/v1/clusters/lab/spaces/nb/stop", None, "cluster/lab/space/nb"),
    ("POST", "/api/v1/clusters/lab/jobs", {"name": "run1"}, "cluster/lab/job/run1"),
    ("POST", "/api/v1/clusters/lab/jobs", {"name": "Not A Name"}, "cluster/lab"),
    ("POST", "/api/v1/clusters/import", {"name": "old"}, "cluster/old"),
    ("POST", "/api/v1/clusters/lab/software-update", {}, "cluster/lab"),
    ("PATCH", "/api/v1/clusters/lab/features", {"features": {}}, "cluster/lab"),
    ("POST", "/api/v1/clusters/lab/nodes/reboot", {}, "cluster/lab/nodes"),
    ("DELETE", "/api/v1/networks/Bad_Name", None, None),
    ("POST", "/api/v1/operations/op_01ARZ3NDEKTSV4RRFFQ69G5FAV/cancel", None, None),
])
def test_a_refused_change_names_the_target_its_route_declares(redis_db, redis_url, method,
                                                              path, body, target):
    app = create_app(Settings(redis_url=redis_url), tokens=TokenTable(
        [("viewer", "viewer", digest("v"))]))
    reply = app.test_client().open(path, method=method, json=body,
                                   headers={"Authorization": "Bearer v"})
    assert reply.status_code == 403, reply.text
    entry = json.loads(redis_db.xrevrange("hypd:audit", count=1)[0][1]["data"])
    assert (entry["path"], entry["target"]) == (path, target)
