"""Malformed requests on every route of the OpenAPI document, on the session's stack: no reply
is a 5xx, every refusal is the one envelope with a stable code, each refused mutation (and
each request refused for its token) is in the audit log with its route, status and code, and
the web process logs no error.

The catalogues are fixed (tests/app/test_fuzz.py draws at random): bodies of every shape,
depth, size and encoding sent to every mutation; odd values for every declared query
parameter; odd headers on every route; malformed first messages on both WebSockets. No
valid body is in them, and every path names a target that does not exist, so nothing can
start a real operation (checked: the operation index does not grow)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import websocket

from app.audit import AUDIT_KEY
from app.intake import MAX_BODY_BYTES, MAX_DEPTH
from app.ws import MAX_MESSAGE_BYTES
from tasks.engine.store import OPS_INDEX
from tests.app.wskit import read_all
from tests.stack import tls, wait_until

JSON = "application/json"
ENTRY_KEYS = {"at", "token", "role", "method", "route", "path", "target", "operation_id",
              "outcome", "status", "code", "forced"}
ABSENT = "zz-absent"
PATH_VALUES = {"operation_id": "op_" + "0" * 26, "stage": "network", "kind": "creation",
               "node_id": "i-0123456789abcdef0"}
"""Path parameters that must look plausible to reach past the router: an id in its format,
a value of the parameter's enum. Every other one is a name nothing has."""

DEEP_ARRAY = "[" * 10_000 + "]" * 10_000


def _nested(levels: int) -> str:
    """An object whose `name` holds arrays nested to `levels` levels in all."""
    return '{"name": ' + "[" * (levels - 1) + "]" * (levels - 1) + "}"


@dataclass(frozen=True)
class Body:
    label: str
    content: bytes
    content_type: str | None = JSON
    status: int | None = None
    """The exact status intake answers; None: valid JSON the route refuses itself (4xx)."""
    code: str | None = None


BODIES = (
    Body("an array", b"[1, 2]", status=422, code="validation_failed"),
    Body("a string", b'"lab"', status=422, code="validation_failed"),
    Body("null", b"null", status=422, code="validation_failed"),
    Body("arrays 10,000 deep", DEEP_ARRAY.encode(), status=400, code="bad_request"),
    Body("a field 10,000 deep", _nested(10_000).encode(), status=400, code="bad_request"),
    Body("one level too deep", _nested(MAX_DEPTH + 1).encode(), status=400, code="bad_request"),
    Body("1e999", b'{"name": 1e999}', status=400, code="bad_request"),
    Body("a 5,000-digit integer", b'{"count": ' + b"9" * 5000 + b"}", status=400,
         code="bad_request"),
    Body("2**64", b'{"count": 18446744073709551616}', status=400, code="bad_request"),
    Body("NaN", b'{"count": NaN}', status=400, code="bad_request"),
    Body("invalid UTF-8", b'{"name": "\xff\xfe"}', status=400, code="bad_request"),
    Body("UTF-16 with BOM", '{"name": "zz-absent"}'.encode("utf-16"), status=400,
         code="bad_request"),
    Body("a UTF-8 BOM", b'\xef\xbb\xbf{"name": "zz"}', status=400, code="bad_request"),
    Body("truncated", b'{"name": ', status=400, code="bad_request"),
    Body("a NUL byte outside strings", b'{"name": "zz"}\x00', status=400, code="bad_request"),
    Body("text/plain", b'{"name": "zz-absent"}', "text/plain", 415, "unsupported_media_type"),
    Body("a form", b"name=zz-absent", "application/x-www-form-urlencoded", 415,
         "unsupported_media_type"),
    Body("no Content-Type", b'{"name": "zz-absent"}', None, 415, "unsupported_media_type"),
    # valid JSON objects: past intake, refused by the route (a name no route takes, or a
    # target that does not exist)
    Body("at the depth limit", _nested(MAX_DEPTH).encode()),
    Body("a 500 KB string", b'{"name": "' + b"a" * 500_000 + b'"}'),
    Body("150,000 array items", b'{"name": "UPPER", "x": [' + b"0," * 149_999 + b"0]}"),
    Body("an escaped NUL", b'{"name": "a\\u0000b"}'),
    Body("a lone surrogate", b'{"name": "\\ud800"}'),
    Body("application/merge-patch+json", b'{"name": "UPPER"}', "application/merge-patch+json"),
)
TOO_LARGE = Body("over 1 MiB", b'{"name": "' + b"a" * MAX_BODY_BYTES + b'"}', status=413,
                 code="payload_too_large")

QUERY_VALUES = ("", "\n", "x\n", "00-0", "0-00", "\u0661-\u0661", "9" * 20 + "-0", "-1",
                "1e999", "NaN", "a" * 4000, "\x00", "\u202e../..", "2026-13-45T99:99:99Z",
                "\u0662\u0660\u0662\u0666-01-01T00:00:00Z")
RAW_QUERIES = ("%ff%fe", "%", "a&{name}=b")
"""Query strings sent as they are (invalid percent-encoding, a repeated parameter)."""

HEADERS = (
    {"Authorization": "Bearer " + "x" * 6000},
    {"Authorization": "Basic Zm9vOmJhcg=="},
    {"Authorization": b"Bearer \xff\xfe"},
    {"Idempotency-Key": "k" * 5000},
    {"Idempotency-Key": b"\xff\x85"},
    {"Idempotency-Key": "k", "Idempotency-TTL": "\u0661".encode() * 3},
    {"Idempotency-Key": "k", "Idempotency-TTL": "9" * 400},
    {"If-None-Match": '"' * 1000},
    {"If-None-Match": b'W/"\xff"'},
    {"Accept": "application/yaml"},
    {"Accept": b"\xff/\xff;q=x"},
    {"Content-Type": b'application/json; charset="\xff'},
    {"Cookie": "a=" + "b" * 4000, "X-Forwarded-For": "x" * 2000},
)
"""Sent with the operator's token unless they replace it. Within what gunicorn lets reach the
app: a field over 8 KiB or a control character in a value it refuses itself (RAW, below)."""


def _routes(stack) -> list[tuple[str, str, dict[str, Any]]]:
    with stack.client(None) as c:
        doc = c.get("/api/v1/openapi.json").json()
    return [(method.upper(), path, operation) for path, item in doc["paths"].items()
            for method, operation in item.items()
            if method in ("get", "post", "put", "patch", "delete")]


PARAMETER = re.compile(r"\{(\w+)\}")


def _fill(path: str) -> str:
    return PARAMETER.sub(lambda m: PATH_VALUES.get(m.group(1), ABSENT), path)


def _route(method: str, path: str) -> str:
    """The audit log's name of a route: its Flask rule, e.g. `DELETE /api/v1/networks/<name>`."""
    return method + " " + PARAMETER.sub(r"<\1>", path)


def _envelope(reply: httpx.Response, what: Any) -> str:
    """The error code of a refusal, asserting the envelope's shape."""
    body = reply.json()
    assert set(body) == {"error"}, what
    error = body["error"]
    assert isinstance(error["message"], str) and error["message"], what
    assert isinstance(error["details"], dict), what
    assert re.fullmatch(r"[a-z][a-z_]*", error["code"]), what
    return error["code"]


def _failures_logged(log: str) -> list[str]:
    """What the web process logged of a request that crashed (Flask's "Exception on <path>")
    or of an audit entry it could not write — not other tests' background work."""
    found = []
    for line in log.splitlines():
        try:
            message = json.loads(line).get("message", "")
        except ValueError:
            continue
        if message.startswith(("Exception on ", "could not write the audit entry",
                               "could not read the target")):
            found.append(message)
    return found


@dataclass
class Sent:
    method: str
    path: str
    route: str
    status: int
    code: str | None


class Campaign:
    """Sends requests one at a time (so the audit log's order is theirs) and keeps what an
    audit entry must say for each that must have one."""

    def __init__(self, stack) -> None:
        self.stack = stack
        self.audited: list[Sent] = []
        self.count = 0
        self.auth = {"Authorization": f"Bearer {stack.operator_token}"}

    def send(self, http: httpx.Client, method: str, template: str, url: str, what: Any,
             **kwargs: Any) -> httpx.Response:
        headers = {**self.auth, **kwargs.pop("headers", {})}
        reply = http.request(method, url, headers=headers, **kwargs)
        self.count += 1
        assert reply.status_code < 500, (what, reply.status_code, reply.text[:300])
        code = _envelope(reply, what) if reply.status_code >= 400 else None
        if reply.status_code in (401, 403) or (method != "GET" and url.startswith("/api/")):
            self.audited.append(Sent(method, url.split("?", 1)[0], _route(method, template),
                                     reply.status_code, code))
        return reply


@pytest.fixture
def campaign(stack) -> Iterator[Campaign]:
    """Afterwards: an audit entry per refused request, in order; no operation started; no
    error in the web process's log."""
    redis = stack.redis()
    newest = redis.xrevrange(AUDIT_KEY, count=1)
    since = newest[0][0] if newest else "0-0"
    operations = redis.zcard(OPS_INDEX)
    log_at = len(stack.log("web"))
    run = Campaign(stack)
    yield run
    entries = [json.loads(fields["data"]) for _, fields in
               redis.xrange(AUDIT_KEY, min=f"({since}", max="+")]
    entries = [e for e in entries if e["method"] != "WS"]
    assert len(entries) == len(run.audited), (len(entries), len(run.audited))
    for sent, entry in zip(run.audited, entries, strict=True):
        assert (entry["method"], entry["path"], entry["route"], entry["status"],
                entry["code"], entry["outcome"]) == (sent.method, sent.path, sent.route,
                                                     sent.status, sent.code, "refused"), sent
        assert entry["token"] in ("operator", None), entry
        assert set(entry) == ENTRY_KEYS, entry  # never a header or a body
    assert redis.zcard(OPS_INDEX) == operations, "a malformed request started an operation"
    assert _failures_logged(stack.log("web")[log_at:]) == []


def test_malformed_bodies_on_every_mutation_answer_4xx_and_are_audited(stack, campaign):
    mutations = [(m, p) for m, p, _ in _routes(stack) if m != "GET"]
    assert len(mutations) >= 25, mutations
    with httpx.Client(base_url=stack.url, timeout=60, verify=tls()) as http:
        for method, template in mutations:
            url = _fill(template)
            for body in BODIES:
                headers = {"Content-Type": body.content_type} if body.content_type else {}
                what = (method, template, body.label)
                reply = campaign.send(http, method, template, url, what,
                                      content=body.content, headers=headers)
                if body.status is not None:
                    assert (reply.status_code, reply.json()["error"]["code"]) == \
                        (body.status, body.code), (what, reply.text[:300])
                else:
                    assert 400 <= reply.status_code < 500, (what, reply.text[:300])
            # gunicorn drops the connection after a body the app did not read: a fresh one
            reply = campaign.send(http, method, template, url, (method, template, "too large"),
                                  content=TOO_LARGE.content,
                                  headers={"Content-Type": JSON, "Connection": "close"})
            assert (reply.status_code, reply.json()["error"]["code"]) == \
                (413, "payload_too_large"), reply.text[:300]


def test_odd_query_values_and_headers_on_every_route_answer_below_500(stack, campaign):
    routes = _routes(stack)
    with httpx.Client(base_url=stack.url, timeout=60, verify=tls()) as http:
        for method, template, operation in routes:
            url = _fill(template)
            names = [p["name"] for p in operation.get("parameters", []) if p["in"] == "query"]
            for name in names:
                for value in QUERY_VALUES:
                    campaign.send(http, method, template, url, (method, template, name, value),
                                  params={name: value})
                for raw in RAW_QUERIES:
                    query = f"{name}={raw.format(name=name)}"
                    campaign.send(http, method, template, f"{url}?{query}",
                                  (method, template, query))
            body = {} if method == "GET" else {"json": {"name": "UPPER"}}  # never valid
            for headers in HEADERS:
                campaign.send(http, method, template, url, (method, template, headers),
                              headers=headers, **body)
    assert campaign.count > 1000


def _socket(stack, path: str) -> websocket.WebSocket:
    return websocket.create_connection(stack.url.replace("http://", "ws://") + path,
                                       timeout=20)


def test_malformed_first_messages_close_both_websockets_with_their_codes(stack):
    """Each closes with its documented code, each refusal is audited, and the handler
    survives it (the web log has no error, and a socket opened after them still answers)."""
    redis = stack.redis()
    newest = redis.xrevrange(AUDIT_KEY, count=1)
    since = newest[0][0] if newest else "0-0"
    log_at = len(stack.log("web"))
    token = stack.operator_token
    cases = (
        ("not JSON", "hello", 4401),
        ("auth beside 10,000 levels",
         json.dumps({"type": "auth", "token": token})[:-1] + ', "x": ' + DEEP_ARRAY + "}", 4401),
        ("NaN for a token", '{"type": "auth", "token": NaN}', 4401),
        ("too large", json.dumps({"type": "auth", "token": "x" * MAX_MESSAGE_BYTES}), 1009),
        ("after: Arabic-Indic digits",
         json.dumps({"type": "auth", "token": token, "after": "\u0661-\u0661"}), 4400),
        ("after: an object", json.dumps({"type": "auth", "token": token, "after": {"a": 1}}),
         4400),
    )
    paths = (f"/ws/operations/{PATH_VALUES['operation_id']}",
             f"/ws/clusters/{ABSENT}/jobs/{ABSENT}/logs")
    expected = []
    for label, message, code in cases:
        for path in paths:
            if code == 4400 and "/jobs/" in path:
                continue  # `after` is the operation socket's
            ws = _socket(stack, path)
            ws.send(message)
            assert read_all(ws) == ([], code), (label, path)
            ws.shutdown()  # unclosed, websocket-client held up the next connect for ~2 s
            route = "WS /ws/operations/<op_id>" if "/operations/" in path else \
                "WS /ws/clusters/<cluster>/jobs/<job>/logs"
            expected.append((route, path, code))

    def audited() -> list[dict[str, Any]]:
        return [json.loads(fields["data"]) for _, fields in
                redis.xrange(AUDIT_KEY, min=f"({since}", max="+")]

    # a 1009 is written once the handler notices the close (up to RECEIVE_SLICE_S later),
    # so possibly after the next socket's entry
    wait_until(lambda: len(audited()) >= len(expected), 10, what="the sockets' entries")
    entries = audited()
    assert sorted((e["route"], e["path"], e["status"]) for e in entries) == sorted(expected)
    assert all(e["outcome"] == "refused" and e["code"] for e in entries)
    ws = _socket(stack, paths[0])
    ws.send(json.dumps({"type": "auth", "token": token}))
    assert read_all(ws) == ([], 4404)  # still served: no operation of that id
    assert _failures_logged(stack.log("web")[log_at:]) == []


@dataclass(frozen=True)
class Raw:
    label: str
    request: bytes
    status: int
    code: str
    method: str = "-"
    path: str = "-"
    routed: bool = False
    """Refused by the app (its route and token known) rather than by gunicorn."""

    def entry(self) -> tuple[Any, ...]:
        """What its audit entry says."""
        route = f"{self.method} {self.path}" if self.routed else \
            f"{self.method} (refused before routing)"
        return (self.method, self.path, route, self.status, self.code, "refused",
                "operator" if self.routed else None)


def _head(line: bytes, *headers: bytes) -> bytes:
    return line + b"\r\nHost: hypd\r\n" + b"".join(h + b"\r\n" for h in headers) + b"\r\n"


RAW = (
    Raw("a request line over 4,094 bytes",
        _head(b"GET /api/v1/networks?name=" + b"a" * 5000 + b" HTTP/1.1"), 414, "uri_too_long"),
    Raw("a header field over 8,190 bytes",
        _head(b"GET /api/v1/networks HTTP/1.1", b"X-Pad: " + b"p" * 9000), 431,
        "headers_too_large"),
    Raw("101 header fields",
        _head(b"GET /api/v1/networks HTTP/1.1", *(b"X-%d: 1" % i for i in range(101))), 431,
        "headers_too_large"),
    Raw("a control character in a header's value",
        _head(b"DELETE /api/v1/networks/zz-absent HTTP/1.1", b"Authorization: Bearer \x01x"),
        400, "bad_request"),
    Raw("a method that is no token", _head(b"DE(ETE /api/v1/networks/x HTTP/1.1"), 400,
        "bad_request"),
    Raw("an HTTP version that does not exist", _head(b"GET /api/v1/networks HTTP/9.9"), 400,
        "bad_request"),
    Raw("a transfer coding the server does not speak",
        _head(b"POST /api/v1/networks HTTP/1.1", b"Transfer-Encoding: gzip",
              b"Content-Type: application/json") + b'{"name": "lab"}', 400, "bad_request",
        "POST", "/api/v1/networks"),
    Raw("a chunk whose size is not hexadecimal",
        _head(b"POST /api/v1/networks HTTP/1.1", b"Transfer-Encoding: chunked",
              b"Content-Type: application/json", b"Authorization: Bearer TOKEN")
        + b"zz\r\n{}\r\n0\r\n\r\n", 400, "bad_request", "POST", "/api/v1/networks",
        routed=True),
)
"""Requests gunicorn refuses before Flask sees them (app/web_worker.py): it once answered
them with its own HTML page, 501 for the transfer coding, and audited none. TOKEN stands for
the operator's token."""


def _raw(stack, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send bytes as they are (no client library would send these) and read the reply."""
    import socket
    from urllib.parse import urlsplit

    where = urlsplit(stack.url)
    with socket.create_connection((where.hostname, where.port), timeout=20) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body


def test_requests_the_http_server_refuses_before_routing_answer_the_envelope_and_are_audited(
        stack):
    redis = stack.redis()
    newest = redis.xrevrange(AUDIT_KEY, count=1)
    since = newest[0][0] if newest else "0-0"
    for raw in RAW:
        request = raw.request.replace(b"TOKEN", stack.operator_token.encode())
        status, headers, body = _raw(stack, request)
        assert (status, headers.get("content-type")) == (raw.status, JSON), \
            (raw.label, status, body[:300])
        assert raw.routed or headers.get("connection") == "close", raw.label
        error = json.loads(body)["error"]
        assert error["code"] == raw.code and isinstance(error["details"], dict), raw.label
        assert b"\x01" not in body and b"ppp" not in body, raw.label  # nothing echoed
    entries = [json.loads(fields["data"]) for _, fields in
               redis.xrange(AUDIT_KEY, min=f"({since}", max="+")]
    assert [(e["method"], e["path"], e["route"], e["status"], e["code"], e["outcome"],
             e["token"]) for e in entries] == [r.entry() for r in RAW]
    assert all(set(e) == ENTRY_KEYS for e in entries), entries
    with httpx.Client(base_url=stack.url, timeout=20, verify=tls()) as http:
        assert http.get("/api/v1/networks", headers={
            "Authorization": f"Bearer {stack.operator_token}"}).status_code == 200
