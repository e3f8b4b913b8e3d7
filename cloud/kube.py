"""Generic Kubernetes object access for hypd: server-side apply, get, list, delete.

Objects are plain dicts (manifests), never generated model classes, so one code path serves
core kinds and custom resources alike.

REST paths come from a small table of the kinds hypd uses, and for any other kind from API
discovery of that one group/version (`GET /apis/<group>/<version>`), cached per API server.
The kubernetes `DynamicClient` was not used: it fetches the whole discovery tree (every group)
when it is built and caches it on disk, which costs dozens of requests against a real EKS API
server for a worker that applies a handful of objects, and it needs discovery routes a test
API server may not serve.

Every object hypd applies is labelled `app.kubernetes.io/managed-by: hypd` (stamped here, on a
copy of the manifest).
"""

from __future__ import annotations

import contextlib
import copy
import json
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import quote

import urllib3
from kubernetes.client import ApiClient

from cloud import rehearsal
from cloud.errors import Refusal

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "hypd"
FIELD_MANAGER = "hypd"
REQUEST_TIMEOUT_S = (5, 30)
METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
LIST_PAGE = 500

# (apiVersion, kind) -> (plural, namespaced)
KINDS: dict[tuple[str, str], tuple[str, bool]] = {
    ("v1", "Namespace"): ("namespaces", False),
    ("v1", "Node"): ("nodes", False),
    ("v1", "PersistentVolume"): ("persistentvolumes", False),
    ("v1", "ConfigMap"): ("configmaps", True),
    ("v1", "Secret"): ("secrets", True),
    ("v1", "ServiceAccount"): ("serviceaccounts", True),
    ("v1", "Service"): ("services", True),
    ("v1", "Pod"): ("pods", True),
    ("v1", "PersistentVolumeClaim"): ("persistentvolumeclaims", True),
    ("v1", "Event"): ("events", True),
    ("v1", "ResourceQuota"): ("resourcequotas", True),
    ("v1", "LimitRange"): ("limitranges", True),
    ("apps/v1", "Deployment"): ("deployments", True),
    ("apps/v1", "DaemonSet"): ("daemonsets", True),
    ("apps/v1", "StatefulSet"): ("statefulsets", True),
    ("apps/v1", "ReplicaSet"): ("replicasets", True),
    ("batch/v1", "Job"): ("jobs", True),
    ("batch/v1", "CronJob"): ("cronjobs", True),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): ("clusterroles", False),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): ("clusterrolebindings", False),
    ("rbac.authorization.k8s.io/v1", "Role"): ("roles", True),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ("rolebindings", True),
    ("scheduling.k8s.io/v1", "PriorityClass"): ("priorityclasses", False),
    ("storage.k8s.io/v1", "StorageClass"): ("storageclasses", False),
    ("storage.k8s.io/v1", "CSIDriver"): ("csidrivers", False),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"):
        ("customresourcedefinitions", False),
    ("policy/v1", "PodDisruptionBudget"): ("poddisruptionbudgets", True),
    ("networking.k8s.io/v1", "Ingress"): ("ingresses", True),
    ("networking.k8s.io/v1", "NetworkPolicy"): ("networkpolicies", True),
    ("autoscaling/v2", "HorizontalPodAutoscaler"): ("horizontalpodautoscalers", True),
    ("coordination.k8s.io/v1", "Lease"): ("leases", True),
}


class KubeError(Refusal):
    """The Kubernetes API answered an error (`http_status` is its HTTP status); throttling
    and server errors are `retryable`."""

    default_code = "upstream_error"

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}".strip())
        self.http_status = status
        self.reason = reason
        self.retryable = status == 429 or status >= 500


def is_transient(exc: BaseException) -> bool:
    """True for errors worth retrying: throttling, server errors, connection problems."""
    if isinstance(exc, KubeError):
        return exc.retryable
    try:
        import urllib3.exceptions as u3

        if isinstance(exc, (u3.MaxRetryError, u3.ProtocolError, u3.TimeoutError,
                            u3.NewConnectionError)):
            return True
    except ImportError:  # pragma: no cover
        pass
    return isinstance(exc, (TimeoutError, ConnectionError))


# ---------------------------------------------------------------------------------------
# labels
# ---------------------------------------------------------------------------------------


def labels(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """hypd's labels for an object it creates, plus any extras."""
    out = {MANAGED_BY_LABEL: MANAGED_BY_VALUE}
    out.update(extra or {})
    return out


def stamped(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the manifest with hypd's managed-by label added."""
    out = copy.deepcopy(dict(manifest))
    metadata = out.setdefault("metadata", {})
    metadata["labels"] = {**(metadata.get("labels") or {}), MANAGED_BY_LABEL: MANAGED_BY_VALUE}
    return out


def managed_by_hypd(obj: Mapping[str, Any]) -> bool:
    return ((obj.get("metadata") or {}).get("labels") or {}).get(MANAGED_BY_LABEL) \
        == MANAGED_BY_VALUE


def waiting_pods(pods: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Why each pod the scheduler has not placed waits, `{pod, reason, message, since}`:
    its PodScheduled condition as the scheduler wrote it (reason `Unschedulable`, and the
    message of its FailedScheduling event, e.g. "0/4 nodes are available: 4 Insufficient
    nvidia.com/gpu. …"). The condition, not the event, because it stays while the pod waits
    (events expire after an hour) and comes with the pods a read lists anyway."""
    found = []
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("phase", "Pending") != "Pending" or (pod.get("spec") or {}).get(
                "nodeName"):
            continue
        condition = next((c for c in status.get("conditions") or []
                          if c.get("type") == "PodScheduled" and c.get("status") == "False"),
                         None)
        if condition is not None:
            found.append({"pod": (pod.get("metadata") or {}).get("name"),
                          "reason": condition.get("reason"),
                          "message": condition.get("message"),
                          "since": condition.get("lastTransitionTime")})
    return found


# ---------------------------------------------------------------------------------------
# paths
# ---------------------------------------------------------------------------------------

_discovered: dict[tuple[str, str, str], tuple[str, bool]] = {}
_discovered_lock = threading.Lock()


def _group_prefix(api_version: str) -> str:
    return "/api/v1" if api_version == "v1" else f"/apis/{api_version}"


def resource_info(api: ApiClient, api_version: str, kind: str) -> tuple[str, bool]:
    """(plural, namespaced) for a kind: from the table, else from discovery of its
    group/version (cached per API server)."""
    known = KINDS.get((api_version, kind))
    if known:
        return known
    key = (api.configuration.host, api_version, kind)
    with _discovered_lock:
        if key in _discovered:
            return _discovered[key]
    listing = _call(api, "GET", _group_prefix(api_version))
    for resource in (listing or {}).get("resources") or ():
        if resource.get("kind") == kind and "/" not in resource.get("name", "/"):
            info = (resource["name"], bool(resource.get("namespaced")))
            with _discovered_lock:
                _discovered[key] = info
            return info
    raise KubeError(404, "NotFound", f"the API server does not serve {kind} in {api_version} "
                                     "(is its CRD or add-on installed?)")


def object_path(api: ApiClient, api_version: str, kind: str, name: str | None = None,
                namespace: str | None = None) -> str:
    plural, namespaced = resource_info(api, api_version, kind)
    path = _group_prefix(api_version)
    if namespaced:
        if not namespace:
            if name is not None:
                raise ValueError(f"{kind} {name} is namespaced: give its namespace")
        else:
            path += f"/namespaces/{quote(namespace, safe='')}"
    path += f"/{plural}"
    if name is not None:
        path += f"/{quote(name, safe='')}"
    return path


# ---------------------------------------------------------------------------------------
# requests
# ---------------------------------------------------------------------------------------


def _call(api: ApiClient, method: str, path: str, query: list[tuple[str, str]] | None = None,
          body: Any = None, content_type: str | None = None, text: bool = False,
          accept: str | None = None) -> Any:
    """One request; the reply's JSON (None when empty), or with `text` its body as text.

    In a rehearsal (cloud/rehearsal.py) a change is written down and sent with `dryRun=All`
    (the API server checks it and keeps nothing), or not sent at all when it would reach a
    pod; the answer is then the object as sent."""
    if method not in ("GET", "HEAD") and rehearsal.current() is not None:
        if not rehearsal.kube_change(method, path, body):
            return body if not text else ""
        query = [*(query or []), ("dryRun", "All")]
        try:
            return _send(api, method, path, query, body, content_type, text, accept)
        except KubeError as exc:
            if exc.http_status != 404:
                raise
            # its namespace (or owner) is one the rehearsal did not make: answer as sent
            return body if not text else ""
    return _send(api, method, path, query, body, content_type, text, accept)


def _send(api: ApiClient, method: str, path: str, query: list[tuple[str, str]] | None,
          body: Any, content_type: str | None, text: bool, accept: str | None) -> Any:
    headers = {"Accept": accept or ("text/plain" if text else "application/json")}
    if content_type:
        headers["Content-Type"] = content_type
    method, url, headers, body, _ = api.param_serialize(
        method=method, resource_path=path, query_params=query or None,
        header_params=headers, body=body, auth_settings=["BearerToken"])
    response = api.call_api(method, url, header_params=headers, body=body,
                            _request_timeout=REQUEST_TIMEOUT_S)
    data = response.read() or b""
    if not 200 <= response.status <= 299:
        reason, message = str(response.reason or ""), data.decode("utf-8", "replace")
        try:
            status = json.loads(data)
            reason = status.get("reason") or reason
            message = status.get("message") or message
        except ValueError:
            pass
        raise KubeError(response.status, reason, message)
    if text:
        return data.decode("utf-8", "replace")
    if not data:
        return None
    return json.loads(data)


def _meta(manifest: Mapping[str, Any]) -> tuple[str, str, str, str | None]:
    try:
        api_version = manifest["apiVersion"]
        kind = manifest["kind"]
        name = manifest["metadata"]["name"]
    except (KeyError, TypeError) as exc:
        raise ValueError("a manifest needs apiVersion, kind and metadata.name") from exc
    return api_version, kind, name, (manifest.get("metadata") or {}).get("namespace")


def _placed(api: ApiClient, manifest: Mapping[str, Any]
            ) -> tuple[dict[str, Any], tuple[str, str, str, str | None]]:
    """The manifest stamped with hypd's label, and its (apiVersion, kind, name, namespace):
    a namespaced kind must name its namespace, a cluster-scoped one loses any."""
    body = stamped(manifest)
    api_version, kind, name, namespace = _meta(body)
    _, namespaced = resource_info(api, api_version, kind)
    if namespaced and not namespace:
        raise ValueError(f"{kind} {name} is namespaced: set metadata.namespace")
    if not namespaced:
        body["metadata"].pop("namespace", None)
        namespace = None
    return body, (api_version, kind, name, namespace)


def server_side_apply(api: ApiClient, manifest: Mapping[str, Any],
                      field_manager: str = FIELD_MANAGER, force: bool = True) -> dict[str, Any]:
    """Create or update the object with server-side apply (PATCH
    `application/apply-patch+yaml`, JSON being YAML), stamped with hypd's label. `force`
    takes over fields another manager owns. Returns the object as the server stored it."""
    body, (api_version, kind, name, namespace) = _placed(api, manifest)
    query = [("fieldManager", field_manager)]
    if force:
        query.append(("force", "true"))
    return _call(api, "PATCH", object_path(api, api_version, kind, name, namespace), query,
                 body, "application/apply-patch+yaml")


def create_object(api: ApiClient, manifest: Mapping[str, Any]) -> dict[str, Any] | None:
    """Create the object (POST), stamped with hypd's label; None when it exists already
    (409 AlreadyExists), which is left as it is. For what must be made once and never
    re-applied (server-side apply would converge an existing object on the manifest)."""
    body, (api_version, kind, _, namespace) = _placed(api, manifest)
    try:
        return _call(api, "POST", object_path(api, api_version, kind, None, namespace),
                     body=body, content_type="application/json")
    except KubeError as exc:
        if exc.http_status == 409:
            return None
        raise


def get_object(api: ApiClient, api_version: str, kind: str, name: str,
               namespace: str | None = None, metadata_only: bool = False
               ) -> dict[str, Any] | None:
    """The object, or None when it (or its kind) does not exist. `metadata_only` asks for a
    `PartialObjectMetadata` (its metadata, no spec), as client-go's metadata client does, for
    where only presence or labels matter and the object is large (an upstream CRD is up to
    1.3 MB); a server that cannot answer so sends the whole object."""
    try:
        return _call(api, "GET", object_path(api, api_version, kind, name, namespace),
                     accept=METADATA_ONLY if metadata_only else None)
    except KubeError as exc:
        if exc.http_status == 404:
            return None
        raise


def list_objects(api: ApiClient, api_version: str, kind: str, namespace: str | None = None,
                 label_selector: str | Mapping[str, str] | None = None,
                 field_selector: str | None = None) -> list[dict[str, Any]]:
    """Objects of a kind (in `namespace`, or in all namespaces), optionally by label
    selector (a string or a {key: value} map) and field selector (`spec.nodeName=n`).
    Each item carries apiVersion and kind. A kind the server does not serve lists as
    empty."""
    return list(iter_objects(api, api_version, kind, namespace, label_selector,
                             field_selector))


def iter_objects(api: ApiClient, api_version: str, kind: str, namespace: str | None = None,
                 label_selector: str | Mapping[str, str] | None = None,
                 field_selector: str | None = None) -> Iterator[dict[str, Any]]:
    if isinstance(label_selector, Mapping):
        label_selector = ",".join(f"{k}={v}" for k, v in sorted(label_selector.items()))
    try:
        path = object_path(api, api_version, kind, None, namespace)
    except KubeError as exc:
        if exc.http_status == 404:
            return
        raise
    token = None
    while True:
        query = [("limit", str(LIST_PAGE))]
        if label_selector:
            query.append(("labelSelector", label_selector))
        if field_selector:
            query.append(("fieldSelector", field_selector))
        if token:
            query.append(("continue", token))
        try:
            page = _call(api, "GET", path, query) or {}
        except KubeError as exc:
            if exc.http_status == 404:
                return
            raise
        for item in page.get("items") or ():
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
            yield item
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return


def pod_log(api: ApiClient, namespace: str, name: str, container: str | None = None,
            tail_lines: int | None = None, previous: bool = False) -> str:
    """The last `tail_lines` lines of a pod's container log (`pods/log`), as text; with
    `previous`, of the container's run before its last restart."""
    query = [("container", container)] if container else []
    if tail_lines is not None:
        query.append(("tailLines", str(tail_lines)))
    if previous:
        query.append(("previous", "true"))
    path = object_path(api, "v1", "Pod", name, namespace) + "/log"
    return _call(api, "GET", path, query, text=True)


def delete_object(api: ApiClient, api_version: str, kind: str, name: str,
                  namespace: str | None = None, propagation: str = "Background",
                  uid: str | None = None) -> bool:
    """Delete the object; True if a deletion was accepted, False if it was already gone.
    With `uid`, only that very object (a precondition the API server checks): False too
    when the name now belongs to another one."""
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions",
                            "propagationPolicy": propagation}
    if uid is not None:
        body["preconditions"] = {"uid": uid}
    try:
        _call(api, "DELETE", object_path(api, api_version, kind, name, namespace), None, body,
              "application/json")
    except KubeError as exc:
        if exc.http_status == 404 or (uid is not None and exc.http_status == 409):
            return False
        raise
    return True


def delete_manifest(api: ApiClient, manifest: Mapping[str, Any]) -> bool:
    api_version, kind, name, namespace = _meta(manifest)
    return delete_object(api, api_version, kind, name, namespace)


# ---------------------------------------------------------------------------------------
# container logs
# ---------------------------------------------------------------------------------------


def log_query(container: str | None = None, *, tail: int | None = None,
              since_time: str | None = None, previous: bool = False,
              follow: bool = False) -> list[tuple[str, str]]:
    """The query of `GET .../pods/<pod>/log`, always with timestamps (resuming relies on
    them)."""
    query = [("timestamps", "true")]
    if container:
        query.append(("container", container))
    if tail is not None:
        query.append(("tailLines", str(tail)))
    if since_time:
        query.append(("sinceTime", since_time))
    if previous:
        query.append(("previous", "true"))
    if follow:
        query.append(("follow", "true"))
    return query


def open_log(api: ApiClient, namespace: str, pod: str, query: list[tuple[str, str]],
             read_timeout: float | None = None) -> Any:
    """The log as a streamed response (`.stream()` / `.read()`, `.release_conn()`); a
    KubeError when the API server refuses."""
    path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(pod, safe='')}/log"
    method, url, headers, _, _ = api.param_serialize(
        method="GET", resource_path=path, query_params=query,
        header_params={"Accept": "text/plain"}, auth_settings=["BearerToken"])
    response = api.rest_client.pool_manager.request(
        method, url, headers=headers, preload_content=False,
        timeout=urllib3.Timeout(connect=REQUEST_TIMEOUT_S[0], read=read_timeout))
    if not 200 <= response.status <= 299:
        data = response.read() or b""
        response.release_conn()
        reason, message = str(response.reason or ""), data.decode("utf-8", "replace")
        with contextlib.suppress(ValueError, AttributeError):
            status = json.loads(data)
            reason = status.get("reason") or reason
            message = status.get("message") or message
        raise KubeError(response.status, reason, message)
    return response
def merge_patch(api: ApiClient, api_version: str, kind: str, name: str,
                namespace: str | None, patch: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON merge patch (for fields of an object hypd does not own whole, e.g. one label
    of a pod a controller made)."""
    return _call(api, "PATCH", object_path(api, api_version, kind, name, namespace), None,
                 dict(patch), "application/merge-patch+json")


def service_proxy(api: ApiClient, namespace: str, service: str, port: str, path: str,
                  body: Mapping[str, Any] | None, limit: int) -> tuple[int, bytes]:
    """POST `body` (JSON) to `path` of a Service through the API server's service proxy —
    or GET it when there is no body; (status, at most `limit` bytes of the answer). Every
    part of the address is quoted, so nothing the names hold can leave the Service's own
    proxy path."""
    resource = (f"/api/v1/namespaces/{quote(namespace, safe='')}/services/"
                f"{quote(service, safe='')}:{quote(port, safe='')}/proxy/"
                + "/".join(quote(part, safe="") for part in path.strip("/").split("/")))
    headers = {"Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    method, url, headers, payload, _ = api.param_serialize(
        method="GET" if body is None else "POST", resource_path=resource,
        header_params=headers, body=None if body is None else dict(body),
        auth_settings=["BearerToken"])
    response = api.call_api(method, url, header_params=headers, body=payload,
                            _request_timeout=REQUEST_TIMEOUT_S)
    data = response.read() or b""
    return response.status, data[:limit]
