"""Who may call what is declared by each route (app/permissions.py), never inferred from the
request.

A viewer token walks every route and method of the OpenAPI document — over REST (bodies built
from the schemas, and known-good ones; with and without `?dry_run` in its spellings, other
query parameters and headers that pretend to a role), over MCP streamable HTTP and over the
WebSocket — and nothing is recorded: no operation, no panel record, no AWS mutation in the
sandbox's counters. Only the dry run that `POST /clusters` declares open to viewers works.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest
import redis
import schemathesis
from flask_smorest import Blueprint
from hypothesis import HealthCheck, given, settings
from marshmallow import fields
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from app import create_app, mutations, permissions
from app.auth import TokenTable, digest
from app.permissions import access
from cloud.settings import Settings
from mcp_server.tools import TOOLS
from tasks.engine.locks import LOCKS_KEY
from tasks.engine.store import OPS_INDEX
from tasks.networks import NETWORK_CREATE
from tests.app.wskit import connect, read_all
from tests.stack import tls
from vocabulary.roles import ACCESS_LEVELS, PUBLIC, Role

EXAMPLES = 4
VOLATILE = ("hypd:cache:", "hypd:lease:", "hypd:mutex:", "hypd:sweep", "hypd:kick:")
"""Keys a read may touch (caches) or the engine renews while an operation is held."""
AUDIT = "hypd:audit"
"""The audit log: a refusal is written there (checked entry by entry, not as unchanged)."""

OPERATOR_READS = {("GET", "/api/v1/audit"), ("GET", "/api/v1/clusters/{cluster}/mlflow/ui-url")}
"""Reads a route declares for operators only: the audit log says who did what; the MLflow
UI's presigned URL is a credential to a UI that can change runs."""

DRY_RUNS = ({"dry_run": "true"}, {"dry_run": "1"}, {"dry_run": "yes"}, {"dry_run": "True"})
NOT_DRY_RUNS = ({}, {"dry_run": "false"}, {"dry_run": "maybe"}, {"role": "operator"},
                {"as": "operator", "admin": "true"})
PRETENDING = {"X-Hypd-Role": "operator", "X-Forwarded-User": "operator",
              "X-Hypd-Dry-Run": "true"}

OPEN_DRY_RUNS = {
    ("POST", "/api/v1/clusters"),
    # every destructive route: its dry run says what would go and what would break
    ("DELETE", "/api/v1/networks/{name}"),
    ("DELETE", "/api/v1/clusters/{name}"),
    ("DELETE", "/api/v1/clusters/{cluster}/instance-groups/{name}"),
    ("POST", "/api/v1/clusters/{cluster}/nodes/replace"),
    ("POST", "/api/v1/clusters/{cluster}/nodes/delete"),
    ("DELETE", "/api/v1/clusters/{cluster}/storage/{name}"),
    ("PATCH", "/api/v1/clusters/{cluster}/features"),
    ("DELETE", "/api/v1/clusters/{cluster}/mlflow"),
    ("DELETE", "/api/v1/clusters/{cluster}/endpoints/{name}"),
    ("DELETE", "/api/v1/clusters/{cluster}/jobs/{job}"),
    ("DELETE", "/api/v1/clusters/{cluster}/models/{name}"),
    ("DELETE", "/api/v1/clusters/{cluster}/spaces/{name}"),
    ("DELETE", "/api/v1/clusters/{cluster}/teams/{name}"),
    ("DELETE", "/api/v1/clusters/{cluster}/scheduler"),
    ("POST", "/api/v1/clusters/{cluster}/nodes/reboot"),
    # every other change of AWS or Kubernetes: its dry run rehearses the operation
    ("POST", "/api/v1/networks"),
    ("POST", "/api/v1/clusters/{name}/stages/{stage}/run"),
    ("POST", "/api/v1/clusters/{name}/software-update"),
    ("POST", "/api/v1/clusters/{name}/kubernetes-version"),
    ("POST", "/api/v1/clusters/{cluster}/storage"),
    ("POST", "/api/v1/clusters/{cluster}/instance-groups"),
    ("PATCH", "/api/v1/clusters/{cluster}/instance-groups/{name}"),
    ("POST", "/api/v1/clusters/{cluster}/endpoints"),
    ("PATCH", "/api/v1/clusters/{cluster}/endpoints/{name}"),
    ("POST", "/api/v1/clusters/{cluster}/endpoints/{name}/reassign"),
    ("POST", "/api/v1/clusters/{cluster}/models"),
    ("POST", "/api/v1/clusters/{cluster}/jobs"),
    ("PUT", "/api/v1/clusters/{cluster}/mlflow"),
    ("POST", "/api/v1/clusters/{cluster}/spaces"),
    ("PATCH", "/api/v1/clusters/{cluster}/spaces/{name}"),
    ("POST", "/api/v1/clusters/{cluster}/spaces/{name}/stop"),
    ("POST", "/api/v1/clusters/{cluster}/spaces/{name}/start"),
    ("POST", "/api/v1/clusters/{cluster}/teams"),
    ("PATCH", "/api/v1/clusters/{cluster}/teams/{name}"),
    ("PUT", "/api/v1/clusters/{cluster}/scheduler"),
}
"""The routes whose `?dry_run=true` a viewer may ask for (pinned: a route opening its dry run
must be added here on purpose)."""


def _open_dry_run(method: str, path: str) -> bool:
    """Whether a concrete path is one of OPEN_DRY_RUNS' templates."""
    return any(method == m and re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", t), path)
               for m, t in OPEN_DRY_RUNS)
WALK_NODE = "i-0123456789abcdef0"


# -- what a mutation would change --------------------------------------------------------------

def _snapshot(stack: Any) -> dict[str, Any]:
    raw = redis.Redis.from_url(stack.redis_url)
    panel = {}
    for key in sorted(k.decode() for k in raw.scan_iter("hypd:*")):
        if key.startswith(VOLATILE) or key == AUDIT:
            continue
        dumped = raw.dump(key)
        panel[key] = hashlib.sha256(dumped or b"").hexdigest()
    newest = raw.xrevrange(AUDIT, count=1)
    return {"panel": panel, "aws": stack.sandbox.counters(),
            "audit": newest[0][0].decode() if newest else "0"}


def _audited_since(stack: Any, before: dict[str, Any]) -> list[dict[str, Any]]:
    """Audit entries written after the snapshot `before`, oldest first."""
    raw = redis.Redis.from_url(stack.redis_url, decode_responses=True)
    return [json.loads(fields["data"]) for _, fields in
            raw.xrange(AUDIT, min=f"({before['audit']}", max="+")]


def _assert_refusals_audited(entries: list[dict[str, Any]], expected: int | None) -> None:
    """Each refused request left one entry naming the viewer token, never its secret: a 403,
    or a dry run the viewer may ask for that its route then refused (a body the schema
    refuses: 422; a failed preflight: 412). A dry run that answered is not audited."""
    if expected is not None:
        assert len(entries) == expected, (len(entries), expected)
    assert entries, "the refusals were not audited"
    for entry in entries:
        assert (entry["token"], entry["role"], entry["outcome"]) == (
            "viewer", "viewer", "refused"), entry
        open_dry_run = _open_dry_run(entry["method"], entry["path"])
        assert (entry["status"], entry["code"]) == (403, "forbidden") or (
            open_dry_run and 400 <= entry["status"] < 500 and entry["status"] != 403), entry
        assert entry["method"] != "GET" and entry["route"].startswith(entry["method"] + " ")
        assert entry["operation_id"] is None


def _assert_unchanged(before: dict[str, Any], after: dict[str, Any]) -> None:
    changed = sorted(k for k in set(before["panel"]) | set(after["panel"])
                     if before["panel"].get(k) != after["panel"].get(k))
    assert not changed, f"panel records changed: {changed}"
    assert after["aws"]["by_action"] == before["aws"]["by_action"], "an AWS mutation happened"


def _document(stack: Any) -> dict[str, Any]:
    return httpx.get(stack.url + "/api/v1/openapi.json", verify=tls(), timeout=10).json()


def _operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method != "parameters":
                yield method.upper(), path, op


# -- fixtures -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def failed_op(stack: Any) -> str:
    """A failed operation: a viewer's retry would run it again if it got through."""
    stack.wait_idle()
    stack.sandbox.add_fault("ec2", "CreateVpc", "error", count=1)
    with stack.client() as c:
        op_id = c.post("/api/v1/networks", json={"name": f"walk-f-{uuid.uuid4().hex[:4]}"}
                       ).json()["operation"]["id"]
    assert stack.wait_operation(op_id)["status"] == "failed"
    return op_id


@pytest.fixture(scope="module")
def patient_worker(stack: Any) -> Iterator[None]:
    """The suite's worker, restarted to wait 15 minutes for an AWS answer (by default it
    gives up after 30 s and asks again), with a two-minute broker visibility timeout (the
    suite's 5 s makes Celery's hard task time limit 10 s: a walk slowed to 19 s by a loaded
    machine had the held step's process killed, and the sweeper ran the step again) and a
    one-minute lease (a heartbeat starved for the suite's 2 s would do the same): the walk
    must not outlast the hold that keeps its running operation mid-step."""
    stack.wait_idle()
    stack.kill_worker()
    stack.start_worker(HYPD_AWS_READ_TIMEOUT_S="900", HYPD_LEASE_S="60",
                       HYPD_VISIBILITY_TIMEOUT_S="120")
    yield
    stack.wait_idle()
    stack.kill_worker()
    stack.start_worker()


@pytest.fixture
def targets(stack: Any, failed_op: str, patient_worker: None) -> Iterator[dict[str, str]]:
    """Real things a viewer's mutation would change if it got through: the failed operation
    and a running one held mid-step (a cancel would stop it), by a worker that waits for the
    held answer as long as the walk takes."""
    stack.wait_idle()
    hold = stack.sandbox.hold("ec2", "CreateVpc")
    running = f"walk-r-{uuid.uuid4().hex[:4]}"
    with stack.client() as c:
        running_id = c.post("/api/v1/networks", json={"name": running}).json()["operation"]["id"]
    try:
        stack.sandbox.wait_held(hold, timeout=30)
        yield {"failed": failed_op, "running": running_id, "network": running}
    finally:
        stack.sandbox.release(hold)
        stack.sandbox.clear_holds()
        stack.wait_operation(running_id)


JOB = {"name": "fit", "recipe": "torchrun", "image": "repo/train:1",
       "script": "/s3/code/train.py"}


def _known_good(targets: dict[str, str]) -> list[tuple[str, str, dict[str, Any] | None]]:
    """A valid request for every mutating route (method, path, body)."""
    cluster = {"name": "walk-c", "availability_zone": "us-west-2a",
               "instance_type": "ml.g5.8xlarge", "instance_count": 1}
    return [
        ("POST", "/api/v1/networks", {"name": "walk-net"}),
        ("DELETE", f"/api/v1/networks/{targets['network']}", None),
        ("POST", "/api/v1/clusters", cluster),
        ("DELETE", "/api/v1/clusters/walk-c", None),
        ("POST", "/api/v1/clusters/walk-c/stages/network/run", None),
        ("POST", "/api/v1/clusters/import", {"name": "walk-c"}),
        ("PUT", "/api/v1/active-cluster", {"name": "walk-c"}),
        ("PUT", "/api/v1/clusters/walk-c/budget", {"monthly_usd": 100}),
        ("DELETE", "/api/v1/clusters/walk-c/budget", None),
        ("PUT", "/api/v1/clusters/walk-c/teams/lab/budget", {"monthly_usd": 100}),
        ("DELETE", "/api/v1/clusters/walk-c/teams/lab/budget", None),
        ("POST", "/api/v1/clusters/walk-c/storage", {"name": "data", "kind": "s3"}),
        ("DELETE", "/api/v1/clusters/walk-c/storage/data", None),
        ("POST", "/api/v1/clusters/walk-c/instance-groups",
         {"name": "more", "instance_type": "ml.g5.8xlarge", "instance_count": 1}),
        ("PATCH", "/api/v1/clusters/walk-c/instance-groups/workers", {"instance_count": 3}),
        ("POST", "/api/v1/clusters/walk-c/software-update", {}),
        ("PATCH", "/api/v1/clusters/walk-c/features", {"training_operator": {"enabled": True}}),
        ("POST", "/api/v1/clusters/walk-c/kubernetes-version", {"version": "1.33"}),
        ("DELETE", "/api/v1/clusters/walk-c/instance-groups/workers", None),
        *[("POST", f"/api/v1/clusters/walk-c/nodes/{action}", {"node_ids": [WALK_NODE]})
          for action in ("reboot", "replace", "delete")],
        ("POST", "/api/v1/clusters/walk-c/endpoints",
         {"name": "chat", "kind": "vllm", "model": "tiny", "gpus": 1}),
        ("PATCH", "/api/v1/clusters/walk-c/endpoints/chat", {"replicas": 2}),
        ("POST", "/api/v1/clusters/walk-c/endpoints/chat/reassign",
         {"worker": "chat-abc-x1y2z", "model": "tiny"}),
        ("POST", "/api/v1/clusters/walk-c/endpoints/chat/invoke", {"prompt": "hi"}),
        ("DELETE", "/api/v1/clusters/walk-c/endpoints/chat", None),
        ("POST", "/api/v1/clusters/walk-c/models",
         {"name": "tiny", "source": "huggingface", "repo": "acme/tiny"}),
        ("DELETE", "/api/v1/clusters/walk-c/models/tiny", None),
        ("POST", "/api/v1/clusters/walk-c/spaces", {"name": "lab", "instance_group": "workers"}),
        ("PATCH", "/api/v1/clusters/walk-c/spaces/lab", {"cpu": 4}),
        ("POST", "/api/v1/clusters/walk-c/spaces/lab/stop", None),
        ("POST", "/api/v1/clusters/walk-c/spaces/lab/start", None),
        ("POST", "/api/v1/clusters/walk-c/spaces/lab/sign-in", None),
        ("DELETE", "/api/v1/clusters/walk-c/spaces/lab", None),
        ("PUT", "/api/v1/clusters/walk-c/scheduler", {"fair_share": True}),
        ("DELETE", "/api/v1/clusters/walk-c/scheduler", None),
        ("POST", "/api/v1/clusters/walk-c/teams",
         {"name": "lab", "quota": [{"instance_type": "ml.g5.8xlarge", "count": 1}]}),
        ("PATCH", "/api/v1/clusters/walk-c/teams/lab", {"fair_share_weight": 5}),
        ("DELETE", "/api/v1/clusters/walk-c/teams/lab", None),
        ("POST", f"/api/v1/operations/{targets['running']}/cancel", None),
        ("POST", f"/api/v1/operations/{targets['failed']}/retry", None),
        ("POST", "/api/v1/clusters/walk-c/jobs", JOB),
        ("PUT", "/api/v1/clusters/walk-c/mlflow", {}),
        ("DELETE", "/api/v1/clusters/walk-c/mlflow", None),
        ("DELETE", "/api/v1/clusters/walk-c/jobs/fit", None),
    ]


# -- the declarations -----------------------------------------------------------------------

def test_every_operation_declares_a_role_and_only_reads_are_open(stack):
    doc = _document(stack)
    seen = 0
    for method, path, op in _operations(doc):
        role = op.get(permissions.ROLE_EXTENSION)
        assert role in ACCESS_LEVELS, (method, path)
        if (method, path) in OPERATOR_READS:
            assert role == Role.OPERATOR, (method, path)
        elif method == "GET":
            assert role in (PUBLIC, Role.VIEWER), (method, path)
        else:
            assert role == Role.OPERATOR, (method, path)
        if op.get(permissions.DRY_RUN_EXTENSION):
            assert (method, path) in OPEN_DRY_RUNS
        seen += 1
    assert seen >= 25
    public = {(m, p) for m, p, op in _operations(doc) if op["x-hypd-role"] == PUBLIC}
    assert public == {("GET", "/healthz")}


def test_a_route_without_a_declaration_refuses_the_start(monkeypatch):
    undeclared = Blueprint("stray", __name__)

    @undeclared.route("/api/v1/stray", methods=["POST"])
    @undeclared.doc(operationId="stray")  # named (app/openapi.py), only its role is missing
    def stray():
        return {"ok": True}

    import app as app_module  # the factory's own name for it

    real = app_module.register_blueprints

    def with_stray(api):
        real(api)
        api.register_blueprint(undeclared)

    monkeypatch.setattr(app_module, "register_blueprints", with_stray)
    with pytest.raises(permissions.UndeclaredRoutes, match=r"POST /api/v1/stray"):
        create_app(Settings(redis_url="redis://127.0.0.1:1/0"), tokens=TokenTable([]))


def _app_with(monkeypatch: Any, stray: Blueprint, settings: Settings, tokens: TokenTable):
    import app as app_module  # the factory's own name for it

    real = app_module.register_blueprints

    def with_stray(api):
        real(api)
        api.register_blueprint(stray)

    monkeypatch.setattr(app_module, "register_blueprints", with_stray)
    return create_app(settings, tokens=tokens)


def test_a_change_declared_open_to_a_viewer_refuses_the_start(monkeypatch):
    """The declaration is the only role check, so a route that changes something cannot be
    declared less than an operator's: nothing behind it would catch a viewer."""
    stray = Blueprint("stray", __name__)

    @stray.route("/api/v1/stray", methods=["POST"])
    @access("viewer")
    @stray.doc(operationId="open_change")
    def open_change():
        return {"ok": True}

    with pytest.raises(permissions.UndeclaredRoutes,
                       match=r"less than an operator: POST /api/v1/stray"):
        _app_with(monkeypatch, stray, Settings(redis_url="redis://127.0.0.1:1/0"),
                  TokenTable([]))


def test_a_dry_run_that_reaches_submit_is_rehearsed_and_records_nothing(monkeypatch, redis_url,
                                                                       redis_db):
    """A viewer is let into an operator's route for its dry run alone; when the route goes
    on to submit, the operation is rehearsed (its plan answered), never recorded."""
    stray = Blueprint("stray", __name__)

    @stray.route("/api/v1/stray", methods=["POST"])
    @access("operator", dry_run=True)
    @stray.doc(operationId="rehearsed")
    def rehearsed():
        return mutations.submit(NETWORK_CREATE, "network/stray", {"name": "stray"})

    viewer = "viewer-secret"
    app = _app_with(monkeypatch, stray, Settings(redis_url=redis_url),
                    TokenTable([("viewer", "viewer", digest(viewer))]))
    app.testing = False  # answer as a client sees it
    with app.test_client() as client:
        reply = client.post("/api/v1/stray?dry_run=true", json={},
                            headers={"Authorization": f"Bearer {viewer}"})
        assert reply.status_code == 200, reply.get_data(as_text=True)
        plan = reply.get_json()
        assert plan["dry_run"] is True and plan["kind"] == "network.create"
        assert plan["steps"][0]["step"] == "vpc"
        plain = client.post("/api/v1/stray", json={},
                            headers={"Authorization": f"Bearer {viewer}"})
        assert plain.status_code == 403  # the declaration: a change is an operator's
    assert redis_db.zcard(OPS_INDEX) == 0 and not redis_db.hgetall(LOCKS_KEY)


# -- the REST walk --------------------------------------------------------------------------

def _expect_refused(response: Any, what: Any) -> None:
    assert response.status_code == 403, (what, response.status_code, response.text[:300])
    assert response.json()["error"]["code"] == "forbidden", what


def _is_dry_run(query: dict[str, Any]) -> bool:
    """As marshmallow's Boolean reads a query value."""
    return "dry_run" in query and query["dry_run"] in fields.Boolean.truthy


def _walker(operation: Any, method: str, route: str, viewer: dict[str, str]) -> Any:
    """A hypothesis test sending bodies and parameters built from the route's schemas."""

    @given(case=operation.as_strategy())
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    def walk(case: Any) -> None:
        base = dict(case.query or {})
        for query in ({}, {"dry_run": "true"}, {"role": "operator"}):
            case.query = {**base, **query}
            reply = case.call(headers={**viewer, **PRETENDING}, timeout=60)
            if (method, route) in OPEN_DRY_RUNS and _is_dry_run(case.query):
                assert reply.status_code != 403, reply.text[:300]
                assert reply.status_code < 500, reply.text[:300]
            else:
                _expect_refused(reply, (method, route, case.query))

    return walk


def test_a_viewer_changes_nothing_through_any_route(stack, targets):
    """Known-good requests for every mutating route, against real targets."""
    mutating = {(m, p) for m, p, _ in _operations(_document(stack)) if m != "GET"}
    covered = {(m, p) for m, p in mutating for km, kp, _ in _known_good(targets)
               if km == m and re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", p), kp)}
    assert covered == mutating, f"a mutating route is missing from the walk: {mutating - covered}"
    viewer = {"Authorization": f"Bearer {stack.viewer_token}"}
    before = _snapshot(stack)
    refused = 0
    with httpx.Client(verify=tls(), base_url=stack.url, timeout=60) as http:
        for method, path, body in _known_good(targets):
            for query in (*NOT_DRY_RUNS, *DRY_RUNS):
                dry_run_opens = _open_dry_run(method, path) and query in DRY_RUNS
                for headers in (viewer, {**viewer, **PRETENDING}):
                    reply = http.request(method, path, params=query, json=body,
                                         headers=headers)
                    if dry_run_opens and reply.status_code == 200:
                        assert reply.json()["dry_run"] is True
                    elif dry_run_opens:  # let in, then refused by the route (no cluster walk-c)
                        assert reply.status_code in (404, 409), (method, path, reply.text[:300])
                        refused += 1
                    else:
                        _expect_refused(reply, (method, path, query))
                        refused += 1
    _assert_unchanged(before, _snapshot(stack))
    audited = _audited_since(stack, before)
    _assert_refusals_audited(audited, refused)  # a dry run changes nothing: not audited
    # each names its target: the failed operation's, a path's, a create's body name
    targets_seen = {e["target"] for e in audited}
    assert {"network/walk-net", f"network/{targets['network']}", "cluster/walk-c",
            "cluster/walk-c/group/workers", "cluster/walk-c/nodes"} <= targets_seen
    with stack.client("operator") as c:  # the targets are as they were
        failed = c.get(f"/api/v1/operations/{targets['failed']}").json()
        running = c.get(f"/api/v1/operations/{targets['running']}").json()
    assert failed["status"] == "failed"
    assert running["status"] == "running" and running["cancel_requested"] is False


def test_a_viewer_changes_nothing_with_requests_built_from_the_schemas(stack, failed_op):
    stack.wait_idle()
    viewer = {"Authorization": f"Bearer {stack.viewer_token}"}
    before = _snapshot(stack)
    schema = schemathesis.openapi.from_url(stack.url + "/api/v1/openapi.json")
    walked = []
    for result in schema.get_all_operations():
        operation = result.ok()
        method = operation.method.upper()
        if method != "GET":
            _walker(operation, method, operation.path, viewer)()
            walked.append((method, operation.path))
    assert len(walked) >= 16, walked
    _assert_unchanged(before, _snapshot(stack))
    _assert_refusals_audited(_audited_since(stack, before), None)


def test_a_viewer_reads_every_read_route(stack):
    """The other half of the declaration: reads are a viewer's (none answers 403)."""
    doc = _document(stack)
    with httpx.Client(verify=tls(), base_url=stack.url, timeout=60,
                      headers={"Authorization": f"Bearer {stack.viewer_token}"}) as http:
        for method, path, op in _operations(doc):
            if method != "GET" or "{" in path or op["x-hypd-role"] == PUBLIC:
                continue
            reply = http.get(path, params={"availability_zone": "us-west-2a",
                                           "instance_type": "ml.g5.8xlarge", "count": 1})
            if (method, path) in OPERATOR_READS:
                _expect_refused(reply, path)
            else:
                assert reply.status_code != 403, (path, reply.text[:200])


# -- the MCP walk ---------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_a_viewer_over_mcp_http_sees_and_changes_nothing_mutating(stack, mcp_http,
                                                                      targets):
    """`mcp_http` before `targets`: the MCP server starts before the hold is armed (its
    start-up takes seconds on a loaded machine)."""
    mutating = {t.name for t in TOOLS if t.mutating}
    arguments = {
        "create_network": {"name": "walk-mcp"},
        "delete_network": {"name": targets["network"]},
        "create_cluster": {"name": "walk-c", "availability_zone": "us-west-2a",
                           "instance_type": "ml.g5.8xlarge", "instance_count": 1},
        "delete_cluster": {"name": "walk-c"},
        "run_cluster_stage": {"name": "walk-c", "stage": "network"},
        "import_cluster": {"name": "walk-c"},
        "set_active_cluster": {"name": "walk-c"},
        "set_cluster_budget": {"name": "walk-c", "monthly_usd": 100},
        "clear_cluster_budget": {"name": "walk-c"},
        "set_team_budget": {"cluster": "walk-c", "name": "walk-t", "monthly_usd": 100},
        "clear_team_budget": {"cluster": "walk-c", "name": "walk-t"},
        "add_storage": {"cluster": "walk-c", "name": "data", "kind": "s3"},
        "remove_storage": {"cluster": "walk-c", "name": "data"},
        "add_instance_group": {"cluster": "walk-c", "name": "more",
                               "instance_type": "ml.g5.8xlarge", "instance_count": 1},
        "update_instance_group": {"cluster": "walk-c", "name": "workers", "instance_count": 3},
        "delete_instance_group": {"cluster": "walk-c", "name": "workers"},
        "update_cluster_software": {"name": "walk-c"},
        "upgrade_kubernetes": {"name": "walk-c", "version": "1.33"},
        "update_features": {"cluster": "walk-c", "training_operator": {"enabled": True}},
        **{f"{action}_nodes": {"cluster": "walk-c", "node_ids": [WALK_NODE]}
           for action in ("reboot", "replace", "delete")},
        "create_endpoint": {"cluster": "walk-c", "name": "chat", "kind": "vllm",
                            "model": "tiny", "gpus": 1},
        "update_endpoint": {"cluster": "walk-c", "name": "chat", "replicas": 2},
        "reassign_endpoint_worker": {"cluster": "walk-c", "name": "chat",
                                     "worker": "chat-abc-x1y2z", "model": "tiny"},
        "invoke_endpoint": {"cluster": "walk-c", "name": "chat", "prompt": "hi"},
        "delete_endpoint": {"cluster": "walk-c", "name": "chat"},
        "download_model": {"cluster": "walk-c", "name": "tiny", "source": "huggingface",
                           "repo": "acme/tiny"},
        "remove_model": {"cluster": "walk-c", "name": "tiny"},
        "create_space": {"cluster": "walk-c", "name": "lab", "instance_group": "workers"},
        "update_space": {"cluster": "walk-c", "name": "lab", "cpu": 4},
        "stop_space": {"cluster": "walk-c", "name": "lab"},
        "start_space": {"cluster": "walk-c", "name": "lab"},
        "delete_space": {"cluster": "walk-c", "name": "lab"},
        "put_scheduler": {"cluster": "walk-c", "fair_share": True},
        "delete_scheduler": {"cluster": "walk-c"},
        "create_team": {"cluster": "walk-c", "name": "lab",
                        "quota": [{"instance_type": "ml.g5.8xlarge", "count": 1}]},
        "update_team": {"cluster": "walk-c", "name": "lab", "fair_share_weight": 5},
        "delete_team": {"cluster": "walk-c", "name": "lab"},
        "cancel_operation": {"operation_id": targets["running"]},
        "retry_operation": {"operation_id": targets["failed"]},
        "submit_job": {"cluster": "walk-c", **JOB},
        "delete_job": {"cluster": "walk-c", "job": "fit"},
        "set_mlflow": {"cluster": "walk-c"},
        "detach_mlflow": {"cluster": "walk-c"},
    }
    assert set(arguments) == mutating, "a mutating tool is missing from the walk"
    before = _snapshot(stack)
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {stack.viewer_token}"},
                              timeout=60)
    async with Client(streamable_http_client(mcp_http + "/mcp", http_client=http),
                      read_timeout_seconds=60) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        assert not listed & mutating
        assert "plan_cluster" in listed
        for name, args in arguments.items():
            result = await client.call_tool(name, args)
            assert result.is_error, name
            assert result.content[0].text.startswith("forbidden: "), (name, result.content)
    _assert_unchanged(before, _snapshot(stack))


# -- the WebSocket walk ---------------------------------------------------------------------

def test_a_viewer_over_the_socket_follows_but_cannot_cancel(stack, targets):
    before = _snapshot(stack)
    ws = connect(stack, targets["running"])
    ws.send(json.dumps({"type": "auth", "token": stack.viewer_token}))
    ws.send(json.dumps({"type": "cancel"}))
    messages, code = read_all(ws)
    assert messages[0]["type"] == "operation"  # following is a viewer's
    assert code == 4403
    assert messages[-1]["error"]["code"] == "forbidden"
    assert "operator" in messages[-1]["error"]["message"]
    _assert_unchanged(before, _snapshot(stack))
    [entry] = _audited_since(stack, before)  # the refused cancel, on the operation's target
    assert (entry["token"], entry["method"], entry["outcome"], entry["status"],
            entry["operation_id"], entry["target"]) == (
        "viewer", "WS", "refused", 4403, targets["running"], f"network/{targets['network']}")
