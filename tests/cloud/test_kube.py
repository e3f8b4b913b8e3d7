"""cloud/kube.py against a small Kubernetes API server of this file's own, served over TLS
(a trustme CA), that checks bearer tokens and records every request.

`FakeKube` is also used by test_eks.py and test_addons.py.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import trustme
from kubernetes.client import ApiClient, Configuration

from cloud import kube

CRD_GROUP = "example.hypd.dev/v1"


class FakeKube:
    """Just enough of an API server: server-side apply (PATCH apply-patch+yaml), create
    (POST), GET, LIST with label selectors and paging, DELETE, and discovery for one custom
    group. Requests need `Authorization: Bearer k8s-aws-v1.…` (or whatever `accept_token`
    allows)."""

    def __init__(self) -> None:
        self.ca = trustme.CA()
        cert = self.ca.issue_cert("127.0.0.1", "localhost")
        self.objects: dict[tuple[str, str | None, str, str], dict[str, Any]] = {}
        self.requests: list[dict[str, Any]] = []
        self.tokens: list[str] = []
        self.accept_token = lambda token: token.startswith("k8s-aws-v1.")
        self.custom = {"Widget": ("widgets", True), "Gadget": ("gadgets", False)}
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                fake.serve(self)

            do_GET = do_PATCH = do_DELETE = do_POST = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        cert.configure_cert(context)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.server.server_address[1]}"

    @property
    def ca_data(self) -> str:
        """The CA the way describe_cluster reports it: base64 of the PEM."""
        return base64.b64encode(self.ca.cert_pem.bytes()).decode()

    def client(self, token: str = "k8s-aws-v1.test") -> ApiClient:
        config = Configuration(host=self.url)
        config.ca_cert_data = self.ca.cert_pem.bytes().decode()
        config.api_key = {"BearerToken": token}
        config.api_key_prefix = {"BearerToken": "Bearer"}
        return ApiClient(config)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- request handling ------------------------------------------------------------

    def serve(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        auth = handler.headers.get("Authorization", "")
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else ""
        record = {"method": handler.command, "path": parts.path, "query": query,
                  "content_type": handler.headers.get("Content-Type"), "token": token,
                  "accept": handler.headers.get("Accept")}
        with self.lock:
            self.requests.append(record)
            self.tokens.append(token)
        if not self.accept_token(token):
            return self._reply(handler, 401, _status(401, "Unauthorized", "bad token"))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            return self._reply(handler, 400, _status(400, "BadRequest", "not JSON"))
        status, payload = self.route(handler.command, parts.path, query, body, record)
        self._reply(handler, status, payload)

    @staticmethod
    def _reply(handler: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def route(self, method: str, path: str, query: dict[str, str], body: Any,
              record: dict[str, Any]) -> tuple[int, Any]:
        if path == f"/apis/{CRD_GROUP}":
            return 200, {"kind": "APIResourceList", "groupVersion": CRD_GROUP, "resources": [
                {"name": plural, "kind": kind, "namespaced": namespaced, "verbs": ["get"]}
                for kind, (plural, namespaced) in self.custom.items()
            ] + [{"name": "widgets/status", "kind": "Widget", "namespaced": True}]}
        parsed = _parse(path)
        if parsed is None:
            return 404, _status(404, "NotFound", f"no route {path}")
        prefix, namespace, plural, name = parsed
        if name is None:
            if method == "POST":
                return self._create(prefix, namespace, plural, body)
            if method != "GET":
                return 405, _status(405, "MethodNotAllowed", method)
            return 200, self._list(prefix, namespace, plural, query)
        key = (prefix, namespace, plural, name)
        if method == "GET":
            found = self.objects.get(key)
            if found is None:
                return 404, _status(404, "NotFound", f"{plural} {name!r} not found")
            return 200, found
        if method == "DELETE":
            if self.objects.pop(key, None) is None:
                return 404, _status(404, "NotFound", f"{plural} {name!r} not found")
            return 200, _status(200, "", "deleted")
        if method == "PATCH":
            if record["content_type"] != "application/apply-patch+yaml":
                return 415, _status(415, "UnsupportedMediaType", record["content_type"])
            if not query.get("fieldManager"):
                return 422, _status(422, "Invalid", "fieldManager is required for apply")
            meta = body.get("metadata") or {}
            if meta.get("name") != name or (namespace and meta.get("namespace") != namespace):
                return 400, _status(400, "BadRequest", "name/namespace differ from the path")
            existing = self.objects.get(key)
            stored = dict(body)
            stored["metadata"] = {**meta,
                                  "uid": (existing or {}).get("metadata", {}).get(
                                      "uid", str(uuid.uuid4())),
                                  "resourceVersion": str(len(self.requests))}
            self.objects[key] = stored
            return (200 if existing else 201), stored
        return 405, _status(405, "MethodNotAllowed", method)

    def _create(self, prefix: str, namespace: str | None, plural: str,
                body: Any) -> tuple[int, Any]:
        meta = (body or {}).get("metadata") or {}
        key = (prefix, namespace, plural, meta.get("name"))
        if not meta.get("name") or (namespace and meta.get("namespace", namespace) != namespace):
            return 400, _status(400, "BadRequest", "name/namespace differ from the path")
        if key in self.objects:
            return 409, _status(409, "AlreadyExists", f"{plural} {meta['name']!r} already exists")
        stored = {**body, "metadata": {**meta, "uid": str(uuid.uuid4()),
                                       "resourceVersion": str(len(self.requests))}}
        self.objects[key] = stored
        return 201, stored

    def _list(self, prefix: str, namespace: str | None, plural: str,
              query: dict[str, str]) -> dict[str, Any]:
        wanted = dict(pair.split("=", 1) for pair in query["labelSelector"].split(",")) \
            if query.get("labelSelector") else {}
        items = []
        for (p, ns, pl, _), obj in sorted(self.objects.items(), key=lambda kv: str(kv[0])):
            if p != prefix or pl != plural or (namespace is not None and ns != namespace):
                continue
            labels = (obj.get("metadata") or {}).get("labels") or {}
            if all(labels.get(k) == v for k, v in wanted.items()):
                item = dict(obj)
                item.pop("apiVersion", None)
                item.pop("kind", None)
                items.append(item)
        start = int(query.get("continue") or 0)
        limit = int(query.get("limit") or len(items) or 1)
        page = items[start:start + limit]
        more = start + limit < len(items)
        return {"kind": "List", "metadata": {"continue": str(start + limit) if more else ""},
                "items": page}


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure" if code >= 400 else
            "Success", "code": code, "reason": reason, "message": message}


def _parse(path: str) -> tuple[str, str | None, str, str | None] | None:
    segments = [s for s in path.split("/") if s]
    if segments[:2] == ["api", "v1"]:
        prefix, rest = "/api/v1", segments[2:]
    elif segments[:1] == ["apis"] and len(segments) >= 3:
        prefix, rest = "/" + "/".join(segments[:3]), segments[3:]
    else:
        return None
    if not rest:
        return None
    if rest[0] == "namespaces" and len(rest) >= 3:
        return prefix, rest[1], rest[2], rest[3] if len(rest) > 3 else None
    return prefix, None, rest[0], rest[1] if len(rest) > 1 else None


@pytest.fixture
def fake_kube():
    server = FakeKube()
    yield server
    server.stop()


@pytest.fixture
def api(fake_kube):
    client = fake_kube.client()
    yield client
    client.close()


def configmap(name: str = "settings", namespace: str = "default", **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": {"team": "ml"}},
            "data": data or {"a": "1"}}


# ---------------------------------------------------------------------------------------


def test_labels_helper_stamps_managed_by():
    assert kube.labels() == {"app.kubernetes.io/managed-by": "hypd"}
    assert kube.labels({"team": "ml"}) == {"app.kubernetes.io/managed-by": "hypd", "team": "ml"}
    original = configmap()
    stamped = kube.stamped(original)
    assert stamped["metadata"]["labels"] == {"team": "ml", "app.kubernetes.io/managed-by": "hypd"}
    assert "app.kubernetes.io/managed-by" not in original["metadata"]["labels"]  # a copy


def test_server_side_apply_creates_then_updates(fake_kube, api):
    created = kube.server_side_apply(api, configmap(a="1"))
    assert created["metadata"]["uid"]
    assert kube.managed_by_hypd(created)
    request = fake_kube.requests[-1]
    assert request["method"] == "PATCH"
    assert request["path"] == "/api/v1/namespaces/default/configmaps/settings"
    assert request["content_type"] == "application/apply-patch+yaml"
    assert request["query"] == {"fieldManager": "hypd", "force": "true"}

    updated = kube.server_side_apply(api, configmap(a="2"), field_manager="other", force=False)
    assert updated["data"] == {"a": "2"}
    assert updated["metadata"]["uid"] == created["metadata"]["uid"]
    assert fake_kube.requests[-1]["query"] == {"fieldManager": "other"}
    assert kube.get_object(api, "v1", "ConfigMap", "settings", "default")["data"] == {"a": "2"}


def test_create_makes_once_and_leaves_an_existing_object_alone(fake_kube, api):
    created = kube.create_object(api, configmap(a="1"))
    assert kube.managed_by_hypd(created)
    request = fake_kube.requests[-1]
    assert (request["method"], request["path"]) == ("POST",
                                                    "/api/v1/namespaces/default/configmaps")
    assert kube.create_object(api, configmap(a="2")) is None  # 409 AlreadyExists
    assert kube.get_object(api, "v1", "ConfigMap", "settings", "default") == created


def test_cluster_scoped_kinds_use_cluster_paths(fake_kube, api):
    kube.server_side_apply(api, {"apiVersion": "v1", "kind": "Namespace",
                                 "metadata": {"name": "aws-hyperpod"}})
    kube.server_side_apply(api, {"apiVersion": "rbac.authorization.k8s.io/v1",
                                 "kind": "ClusterRole", "metadata": {"name": "reader"},
                                 "rules": []})
    paths = [r["path"] for r in fake_kube.requests]
    assert "/api/v1/namespaces/aws-hyperpod" in paths
    assert "/apis/rbac.authorization.k8s.io/v1/clusterroles/reader" in paths
    assert kube.get_object(api, "v1", "Namespace", "aws-hyperpod") is not None


def test_namespaced_kind_without_namespace_is_refused(api):
    manifest = configmap()
    del manifest["metadata"]["namespace"]
    with pytest.raises(ValueError, match="namespaced"):
        kube.server_side_apply(api, manifest)
    with pytest.raises(ValueError, match=r"apiVersion, kind and metadata\.name"):
        kube.server_side_apply(api, {"kind": "ConfigMap"})


def test_unknown_kinds_are_found_by_discovery_once(fake_kube, api):
    widget = {"apiVersion": CRD_GROUP, "kind": "Widget",
              "metadata": {"name": "w1", "namespace": "ml"}, "spec": {"size": 3}}
    kube.server_side_apply(api, widget)
    kube.server_side_apply(api, {**widget, "metadata": {"name": "w2", "namespace": "ml"}})
    kube.server_side_apply(api, {"apiVersion": CRD_GROUP, "kind": "Gadget",
                                 "metadata": {"name": "g1"}})
    paths = [r["path"] for r in fake_kube.requests]
    assert f"/apis/{CRD_GROUP}/namespaces/ml/widgets/w1" in paths
    assert f"/apis/{CRD_GROUP}/gadgets/g1" in paths
    assert paths.count(f"/apis/{CRD_GROUP}") == 2  # once per kind, then cached
    assert [w["metadata"]["name"] for w in kube.list_objects(api, CRD_GROUP, "Widget")] == \
        ["w1", "w2"]
    with pytest.raises(kube.KubeError) as err:
        kube.server_side_apply(api, {"apiVersion": CRD_GROUP, "kind": "Missing",
                                     "metadata": {"name": "x"}})
    assert err.value.http_status == 404
    assert "CRD" in err.value.message


def test_get_missing_object_is_none(api):
    assert kube.get_object(api, "v1", "ConfigMap", "nope", "default") is None
    assert kube.get_object(api, "v1", "ConfigMap", "nope", "default", metadata_only=True) is None


def test_a_metadata_only_get_asks_for_partial_object_metadata_or_the_object(fake_kube, api):
    """What an upstream CRD's presence check asks for (not its 1.3 MB of schema); this
    server cannot give it and falls back to the object, which is accepted too."""
    kube.server_side_apply(api, configmap(a="1"))
    found = kube.get_object(api, "v1", "ConfigMap", "settings", "default", metadata_only=True)
    assert found["metadata"]["name"] == "settings"
    assert fake_kube.requests[-1]["accept"] == (
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json")
    kube.get_object(api, "v1", "ConfigMap", "settings", "default")
    assert fake_kube.requests[-1]["accept"] == "application/json"


def test_list_by_label_selector_across_pages(fake_kube, api, monkeypatch):
    monkeypatch.setattr(kube, "LIST_PAGE", 2)
    for index in range(5):
        manifest = configmap(f"cm{index}", "ns1" if index % 2 else "ns2")
        manifest["metadata"]["labels"]["parity"] = "odd" if index % 2 else "even"
        kube.server_side_apply(api, manifest)
    everything = kube.list_objects(api, "v1", "ConfigMap")
    assert len(everything) == 5
    assert all(item["kind"] == "ConfigMap" and item["apiVersion"] == "v1" for item in everything)
    odd = kube.list_objects(api, "v1", "ConfigMap", label_selector={"parity": "odd"})
    assert sorted(i["metadata"]["name"] for i in odd) == ["cm1", "cm3"]
    even_in_ns2 = kube.list_objects(api, "v1", "ConfigMap", namespace="ns2",
                                    label_selector="parity=even,team=ml")
    assert sorted(i["metadata"]["name"] for i in even_in_ns2) == ["cm0", "cm2", "cm4"]
    assert any(r["query"].get("continue") for r in fake_kube.requests)
    managed = kube.list_objects(api, "v1", "ConfigMap", label_selector=kube.labels())
    assert len(managed) == 5


def test_delete_tolerates_absence(api):
    kube.server_side_apply(api, configmap())
    assert kube.delete_object(api, "v1", "ConfigMap", "settings", "default") is True
    assert kube.delete_object(api, "v1", "ConfigMap", "settings", "default") is False
    assert kube.get_object(api, "v1", "ConfigMap", "settings", "default") is None


def test_errors_carry_status_and_message(fake_kube):
    bad = fake_kube.client(token="not-an-eks-token")
    with pytest.raises(kube.KubeError) as err:
        kube.get_object(bad, "v1", "ConfigMap", "x", "default")
    assert err.value.http_status == 401
    assert err.value.reason == "Unauthorized"
    assert not kube.is_transient(err.value)
    assert kube.is_transient(kube.KubeError(503, "ServiceUnavailable", ""))
    assert kube.is_transient(kube.KubeError(429, "TooManyRequests", ""))
    bad.close()


def test_tls_is_verified(fake_kube):
    """A client that does not trust the cluster's CA is refused."""
    config = Configuration(host=fake_kube.url)
    config.api_key = {"BearerToken": "k8s-aws-v1.x"}
    config.api_key_prefix = {"BearerToken": "Bearer"}
    config.retries = 0
    client = ApiClient(config)
    with pytest.raises(Exception) as err:
        kube.get_object(client, "v1", "ConfigMap", "x", "default")
    assert "CERTIFICATE_VERIFY_FAILED" in str(err.value) or "SSL" in str(err.value)
    assert kube.is_transient(err.value)  # a connection-level error
    client.close()
