"""Name each AWS call that reaches the local AWS: service, action, protocol, parameters.

Faults, holds, the call log and the counters all key on "service:Action", so the layer has to
name every call the way AWS documents it. The service comes from the SigV4 credential scope
(what the SDK signed for); the action from wherever that service's protocol puts it:
`X-Amz-Target` for JSON protocols, the `Action` parameter for query protocols (EC2, IAM, STS),
and for REST protocols (EKS, S3) the operation whose HTTP method and URI template in botocore's
own service model match the request.
"""

from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote

import botocore.session
from botocore.model import OperationModel

# SigV4: "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-west-2/ec2/aws4_request, ..."
_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/\d{8}/([^/,\s]+)/([^/,\s]+)/aws4_request")
# Smithy RPC v2 (CBOR) puts the operation in the path.
_RPC_V2_PATH = re.compile(r"^/service/[^/]+/operation/([^/]+)$")
# Signing names whose botocore model has another name (only REST services need the model).
_MODEL_ALIASES: dict[str, str] = {"servicequotas": "service-quotas"}
_DROPPED_QUERY_KEYS = frozenset({"Action", "Version"})
# Presigned URLs carry the credential, signature and session token as query parameters.
_SECRET_PREFIX = "x-amz-"

UNKNOWN = "Unknown"


@dataclass
class Call:
    """One AWS request as the layer understands it."""

    service: str
    action: str
    protocol: str  # "ec2" | "query" | "json" | "rest-json" | "rest-xml" | "unknown"
    region: str
    account: str
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """The "service:Action" name used by counters and matching."""
        return f"{self.service}:{self.action}"


@dataclass(frozen=True)
class _Route:
    """One REST operation of a botocore model, compiled for matching."""

    action: str
    method: str
    path: re.Pattern[str]
    labels: tuple[str, ...]
    query: tuple[tuple[str, str | None], ...]  # required query keys (and values)
    headers: tuple[str, ...]  # required header members, lower-case (S3 CopyObject)
    specificity: tuple[int, int, int]


class RestRoutes:
    """Method + path → operation for REST services, built lazily from botocore's models.

    Loading a model costs a few milliseconds, so each service's table is built on its first
    REST call and kept.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._session = botocore.session.get_session()
        self._tables: dict[str, tuple[str, list[_Route]]] = {}

    def table(self, signing_name: str) -> tuple[str, list[_Route]]:
        """The protocol and routes of the service signed as `signing_name`."""
        with self._lock:
            if signing_name not in self._tables:
                self._tables[signing_name] = self._build(signing_name)
            return self._tables[signing_name]

    def _build(self, signing_name: str) -> tuple[str, list[_Route]]:
        name = model_name(signing_name)
        try:
            model = self._session.get_service_model(name)
        except Exception:  # unknown to botocore: nothing to match against
            return "unknown", []
        routes = [_compile(model.operation_model(op)) for op in model.operation_names]
        routes.sort(key=lambda r: r.specificity, reverse=True)
        return model.protocol, routes

    def match(
        self,
        signing_name: str,
        method: str,
        path: str,
        query: dict[str, str],
        headers: frozenset[str],
    ) -> tuple[str, str, dict[str, str]]:
        """(protocol, action, URI labels) of the best matching operation."""
        protocol, routes = self.table(signing_name)
        if len(path) > 1:
            path = path.rstrip("/")
        for route in routes:
            if route.method != method:
                continue
            found = route.path.fullmatch(path)
            if found is None:
                continue
            if all(
                key in query and (value is None or query[key] == value)
                for key, value in route.query
            ) and all(h in headers for h in route.headers):
                return protocol, route.action, dict(zip(route.labels, found.groups(), strict=True))
        return protocol, UNKNOWN, {}


def model_name(signing_name: str) -> str:
    """The name of botocore's model of the service signed as `signing_name`."""
    return _MODEL_ALIASES.get(signing_name, signing_name)


def _compile(operation: OperationModel) -> _Route:
    http = operation.http
    uri: str = http.get("requestUri", "/")
    path, _, query_part = uri.partition("?")
    labels: list[str] = []
    pattern = ""
    literal = 0
    for piece in re.split(r"(\{[^}]+\})", path):
        if piece.startswith("{"):
            label = piece[1:-1]
            greedy = label.endswith("+")
            labels.append(label.rstrip("+"))
            pattern += "(.+)" if greedy else "([^/]+)"
        else:
            pattern += re.escape(piece)
            literal += len(piece)
    if len(path) > 1 and pattern.endswith("/"):
        pattern = pattern[:-1]
    query: list[tuple[str, str | None]] = []
    for item in filter(None, query_part.split("&")):
        key, eq, value = item.partition("=")
        query.append((key, value if eq else None))
    headers: list[str] = []
    shape = operation.input_shape
    if shape is not None:
        for name in shape.required_members:
            member = shape.members[name]
            if member.serialization.get("location") == "header":
                headers.append(member.serialization.get("name", name).lower())
    return _Route(
        action=operation.name,
        method=http.get("method", "POST").upper(),
        path=re.compile(pattern or "/"),
        labels=tuple(labels),
        query=tuple(query),
        headers=tuple(headers),
        specificity=(len(query), len(headers), literal),
    )


def credential_scope(environ: dict[str, Any]) -> tuple[str, str, str] | None:
    """(access key, region, service) from the Authorization header or a presigned URL."""
    auth = environ.get("HTTP_AUTHORIZATION", "")
    found = _CREDENTIAL.search(auth)
    if found is None:
        query = dict(parse_qsl(environ.get("QUERY_STRING", "")))
        credential = query.get("X-Amz-Credential", "")
        found = _CREDENTIAL.search(f"Credential={credential}")
    if found is None:
        return None
    return found.group(1), found.group(2), found.group(3)


def _account(environ: dict[str, Any], access_key: str) -> str:
    """The account moto will file this call under (moto's own order of precedence)."""
    if "MOTO_ACCOUNT_ID" in os.environ:
        return os.environ["MOTO_ACCOUNT_ID"]
    if environ.get("HTTP_X_MOTO_ACCOUNT_ID"):
        return str(environ["HTTP_X_MOTO_ACCOUNT_ID"])
    from moto.iam.models import get_account_id_from

    return get_account_id_from(access_key)


def _json_body(body: bytes) -> dict[str, Any]:
    if not body:
        return {}
    try:
        value = json.loads(body)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {"body": value}


def _raw_path(environ: dict[str, Any]) -> str | None:
    """The request path before percent-decoding (werkzeug keeps it), or None."""
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if not raw:
        return None
    raw = str(raw).split("?", 1)[0]
    if "://" in raw:  # an absolute request target
        raw = "/" + raw.split("://", 1)[1].partition("/")[2]
    return raw or "/"


def identify(environ: dict[str, Any], body: bytes, routes: RestRoutes) -> Call:
    """Name the call in `environ` (whose request body has been read into `body`)."""
    scope = credential_scope(environ)
    access_key, region, service = scope if scope else ("", "us-east-1", "unknown")
    service = service.lower()
    account = _account(environ, access_key)
    method = environ.get("REQUEST_METHOD", "GET").upper()
    path = environ.get("PATH_INFO", "") or "/"
    query = {
        k: v
        for k, v in parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        if not k.lower().startswith(_SECRET_PREFIX)
    }
    content_type = environ.get("CONTENT_TYPE", "")

    target = environ.get("HTTP_X_AMZ_TARGET", "")
    if target:
        action = target.rsplit(".", 1)[-1]
        return Call(service, action, "json", region, account, _json_body(body))

    form: dict[str, str] = {}
    if content_type.startswith("application/x-www-form-urlencoded") and body:
        form = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
    flat = {**query, **form}
    if "Action" in flat:
        protocol = "ec2" if service == "ec2" else "query"
        params = {k: v for k, v in flat.items() if k not in _DROPPED_QUERY_KEYS}
        return Call(service, flat["Action"], protocol, region, account, params)

    rpc = _RPC_V2_PATH.match(path)
    if rpc is not None:
        return Call(service, rpc.group(1), "smithy-rpc-v2-cbor", region, account, {})

    if scope is None:
        return Call(service, UNKNOWN, "unknown", region, account, query)
    headers = frozenset(k[5:].replace("_", "-").lower() for k in environ if k.startswith("HTTP_"))
    # Match on the path as sent: a URI label may hold an encoded "/" (EKS access entries put a
    # principal ARN such as arn:aws:iam::1:role/R in the path), which PATH_INFO has decoded.
    raw = _raw_path(environ)
    if raw is None:
        protocol, action, labels = routes.match(service, method, path, query, headers)
    else:
        protocol, action, labels = routes.match(service, method, raw, query, headers)
        labels = {k: unquote(v) for k, v in labels.items()}
    params: dict[str, Any] = {**query, **labels}
    if protocol == "rest-json":
        params.update(_json_body(body))
    return Call(service, action, protocol, region, account, params)
