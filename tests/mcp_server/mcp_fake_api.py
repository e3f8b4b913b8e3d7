"""A small fake of the hypd REST API (docs/ARCHITECTURE.md shapes) for the MCP server's tests.

It runs in a thread on 127.0.0.1 (werkzeug), records every request (method, path, query,
headers, JSON body), and plays operations forward one status per long-poll:
queued -> running -> succeeded. Special network names: `busy` answers 409 conflict,
`doomed` fails when it runs, `slow` never leaves `running`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

REPO_ROOT = Path(__file__).resolve().parents[2]
OPERATOR_TOKEN = "op-secret"
VIEWER_TOKEN = "view-secret"
TOKENS = {
    OPERATOR_TOKEN: {"name": "operator", "role": "operator"},
    VIEWER_TOKEN: {"name": "viewer", "role": "viewer"},
}
OPERATOR_READS = frozenset({"list_audit", "get_mlflow_ui_url"})
"""Read tools whose route is an operator's (the audit log, the MLflow UI's presigned URL, a
credential): hidden from viewers and from a
`--read-only` server started with a token (which publishes a viewer's tools)."""
NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
TERMINAL = {"succeeded", "failed", "cancelled"}


@functools.cache
def real_openapi() -> dict[str, Any]:
    """The real API's OpenAPI document (made by the app itself, no server needed): the MCP
    server reads its rulebook from it, so the fake serves the genuine article."""
    from app import create_app
    from app.auth import TokenTable
    from cloud.settings import Settings

    app = create_app(Settings(redis_url="redis://127.0.0.1:1/0"), tokens=TokenTable([]))
    return app.test_client().get("/api/v1/openapi.json").get_json()


class ApiFailure(Exception):
    def __init__(self, status: int, code: str, message: str, details: dict | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.details = status, code, message, details or {}


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any

    def header(self, name: str) -> str | None:
        return {k.lower(): v for k, v in self.headers.items()}.get(name.lower())


@dataclass
class FakeApi:
    requests: list[Seen] = field(default_factory=list)
    operations: dict[str, dict[str, Any]] = field(default_factory=dict)
    networks: dict[str, dict[str, Any]] = field(default_factory=dict)
    idem: dict[tuple[str, str, str, str], tuple[str, str]] = field(default_factory=dict)
    url: str = ""
    refusing: ApiFailure | None = None
    """When set, every change (any method but GET) is answered with this refusal."""

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._n = 0
        self._server = make_server("127.0.0.1", 0, self._wsgi, threaded=True)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> FakeApi:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.operations.clear()
            self.networks.clear()
            self.idem.clear()
            self.refusing = None

    def seen(self, method: str | None = None, path: str | None = None) -> list[Seen]:
        return [r for r in list(self.requests)
                if (method is None or r.method == method) and (path is None or r.path == path)]

    # -- WSGI ----------------------------------------------------------------------------------

    def _wsgi(self, environ: dict, start_response: Any) -> Any:
        request = Request(environ)
        body = request.get_json(silent=True) if request.data else None
        self.requests.append(Seen(request.method, request.path, dict(request.args),
                                  dict(request.headers), body))
        try:
            status, payload, headers = self._route(request, body)
        except ApiFailure as f:
            status, payload, headers = f.status, {"error": {
                "code": f.code, "message": f.message, "details": f.details}}, {}
        response = Response(json.dumps(payload), status=status, headers=headers,
                            content_type="application/json")
        return response(environ, start_response)

    def _who(self, request: Request) -> dict[str, str]:
        auth = request.headers.get("Authorization", "")
        token = auth[7:] if auth.startswith("Bearer ") else ""
        if token not in TOKENS:
            raise ApiFailure(401, "unauthorized", "missing or unknown bearer token")
        return TOKENS[token]

    def _operator(self, who: dict[str, str]) -> None:
        if who["role"] != "operator":
            raise ApiFailure(403, "forbidden", f"token {who['name']!r} is a viewer; this "
                             "needs the operator role")

    def _route(self, request: Request, body: Any) -> tuple[int, Any, dict[str, str]]:
        if request.method == "GET" and request.path == "/api/v1/openapi.json":
            return 200, real_openapi(), {}  # public, like the real one
        who = self._who(request)
        m, p = request.method, request.path
        if self.refusing is not None and m != "GET":
            raise self.refusing
        if m == "GET" and p == "/api/v1/auth/whoami":
            return 200, {**who, "aws": "sandbox", "region": "us-west-2", "team": None}, {}
        if m == "GET" and p == "/api/v1/discovery/availability-zones":
            region = request.args.get("region", "us-west-2")
            return 200, {"region": region, "items": [
                {"name": f"{region}{z}", "zone_id": f"usw2-az{i}", "state": "available"}
                for i, z in enumerate("abc", 1)]}, {}
        if m == "GET" and p == "/api/v1/discovery/instance-types":
            zone = request.args.get("availability_zone")
            if not zone:
                raise ApiFailure(422, "validation_failed", "availability_zone is required",
                                 {"fields": {"availability_zone": ["Missing data."]}})
            return 200, {"region": "us-west-2", "availability_zone": zone, "items": [{
                "name": "ml.p5.48xlarge", "ec2_name": "p5.48xlarge", "vcpus": 192,
                "memory_gib": 2048, "accelerator": "gpu", "accelerator_name": "H100",
                "accelerator_count": 8, "accelerator_memory_gib": 640, "efa_supported": True,
                "max_efa_interfaces": 32}]}, {}
        if p == "/api/v1/networks":
            if m == "GET":
                return 200, {"items": list(self.networks.values())}, {}
            if m == "POST":
                self._operator(who)
                return self._create_network(request, who, body)
        if match := re.fullmatch(r"/api/v1/networks/([^/]+)", p):
            name = match.group(1)
            if name not in self.networks:
                raise ApiFailure(404, "not_found", f"network {name!r} does not exist")
            if m == "GET":
                return 200, self.networks[name], {}
            if m == "DELETE":
                self._operator(who)
                op = self._new_op("network.delete", f"network/{name}", {"name": name}, who)
                return self._accepted(op, f"/api/v1/networks/{name}")
        if m == "GET" and p == "/api/v1/operations":
            items = sorted(self.operations.values(), key=lambda o: o["created_at"], reverse=True)
            for key in ("status", "kind", "target"):
                if request.args.get(key):
                    items = [o for o in items if o[key] == request.args[key]]
            return 200, {"items": items[: int(request.args.get("limit", 50))]}, {}
        if match := re.fullmatch(r"/api/v1/operations/([^/]+)(/cancel|/retry)?", p):
            op = self.operations.get(match.group(1))
            if op is None:
                raise ApiFailure(404, "not_found", f"operation {match.group(1)!r} does not exist")
            action = match.group(2)
            if m == "GET" and not action:
                if "wait" in request.args:
                    time.sleep(0.3 if op["params"].get("name") == "slow" else 0.02)
                    self._advance(op)
                return 200, op, {}
            if m == "POST" and action == "/cancel":
                self._operator(who)
                if op["status"] in TERMINAL:
                    raise ApiFailure(409, "conflict", f"operation {op['id']} is already "
                                     f"{op['status']}", {"operation_id": op["id"]})
                self._set(op, "cancelled")
                return 202, {"operation": op}, {"Retry-After": "2"}
            if m == "POST" and action == "/retry":
                self._operator(who)
                if op["status"] not in ("failed", "cancelled"):
                    raise ApiFailure(409, "conflict", f"operation {op['id']} is "
                                     f"{op['status']}; only a failed or cancelled one can be "
                                     "retried", {"operation_id": op["id"]})
                op["params"]["name"] = op["params"].get("name", "").replace("doomed", "fixed")
                op["error"] = None
                self._set(op, "queued")
                return self._accepted(op, op.get("resource_url"))
        raise ApiFailure(404, "not_found", f"no route {m} {p}")

    # -- networks and operations -----------------------------------------------------------------

    def _create_network(self, request: Request, who: dict[str, str],
                        body: Any) -> tuple[int, Any, dict[str, str]]:
        body = body or {}
        unknown = set(body) - {"name", "region", "cidr", "availability_zones"}
        fields: dict[str, list[str]] = {k: ["Unknown field."] for k in unknown}
        if not NAME_RE.match(str(body.get("name", ""))):
            fields["name"] = ["Must match ^[a-z][a-z0-9-]{0,31}$."]
        if "cidr" in body and not re.fullmatch(r"\d+\.\d+\.\d+\.\d+/\d+", str(body["cidr"])):
            fields["cidr"] = ["Not a valid IPv4 CIDR."]
        if fields:
            raise ApiFailure(422, "validation_failed", "the request has invalid fields",
                             {"fields": fields})
        name = body["name"]
        key = request.headers.get("Idempotency-Key")
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        slot = (who["name"], "POST", request.path, key or "")
        with self._lock:
            if key and slot in self.idem:
                known_digest, op_id = self.idem[slot]
                if known_digest != digest:
                    raise ApiFailure(422, "idempotency_key_reused", "this Idempotency-Key was "
                                     "used with another request body", {"key": key})
                return self._accepted(self.operations[op_id], f"/api/v1/networks/{name}")
            if name == "busy":
                raise ApiFailure(409, "conflict", "network/busy is locked by operation "
                                 "op_busy (network.create, running); wait for it to finish",
                                 {"operation_id": "op_busy", "target": "network/busy"})
            if name in self.networks:
                raise ApiFailure(409, "conflict", f"network {name!r} already exists",
                                 {"name": name})
            op = self._new_op("network.create", f"network/{name}", dict(body), who,
                              idempotency_key=key)
            if key:
                self.idem[slot] = (digest, op["id"])
            self.networks[name] = {
                "name": name, "region": body.get("region", "us-west-2"), "vpc_id": None,
                "cidr": body.get("cidr", "10.0.0.0/16"), "state": "pending",
                "availability_zones": body.get("availability_zones",
                                               ["us-west-2a", "us-west-2b"]),
                "subnets": [], "internet_gateway_id": None, "nat_gateway_id": None,
                "security_group_id": None, "s3_endpoint_id": None, "used_by": []}
        return self._accepted(op, f"/api/v1/networks/{name}")

    def _new_op(self, kind: str, target: str, params: dict[str, Any], who: dict[str, str],
                idempotency_key: str | None = None) -> dict[str, Any]:
        self._n += 1
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        op = {
            "id": f"op_{self._n:04d}", "kind": kind, "target": target, "params": params,
            "status": "queued",
            "steps": [{"name": "vpc", "title": "VPC", "phase": "pending", "attempts": 0,
                       "started_at": None, "finished_at": None, "detail": None,
                       "resources": {}}],
            "error": None, "created_at": f"{now}#{self._n:04d}", "updated_at": now,
            "idempotency_key": idempotency_key, "actor": who["name"],
            "cancel_requested": False, "resource_url": None,
            "last_event_id": f"{self._n}-0",
        }
        self.operations[op["id"]] = op
        return op

    def _accepted(self, op: dict[str, Any], resource_url: str | None
                  ) -> tuple[int, Any, dict[str, str]]:
        route = f"/api/v1/operations/{op['id']}"
        return 202, {
            "operation": op, "resource_url": resource_url, "status_route": route,
            "poll_after_seconds": 5,
        }, {"Location": route, "Retry-After": "5"}

    def _set(self, op: dict[str, Any], status: str) -> None:
        op["status"] = status
        seq = int(op["last_event_id"].split("-")[0]) + 1000
        op["last_event_id"] = f"{seq}-0"
        op["updated_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

    def _advance(self, op: dict[str, Any]) -> None:
        name = op["params"].get("name")
        if op["status"] == "queued":
            self._set(op, "running")
        elif op["status"] == "running" and name != "slow":
            if name == "doomed":
                op["error"] = {"code": "upstream_error", "message": "VpcLimitExceeded: the "
                               "maximum number of VPCs has been reached", "step": "vpc"}
                self._set(op, "failed")
            else:
                self._set(op, "succeeded")
                if op["kind"] == "network.create" and name in self.networks:
                    self.networks[name]["state"] = "available"
                if op["kind"] == "network.delete":
                    self.networks.pop(name, None)
