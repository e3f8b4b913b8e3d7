"""What kubectl asks of the local Kubernetes besides objects: server-side printing (the
meta.k8s.io Table, with the upstream printers' columns and cells and CRDs' printer columns)
and the self reviews (`auth can-i`, `can-i --list`, `auth whoami`), in JSON and in the
protobuf kubectl's typed clients send. Objects are written in-process with the statuses a
controller would leave (no simulator runs here), and read through TLS with an EKS token.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import urllib3

from sandbox.kube import KubeRegistry, LocalKube, jsonpath, tables
from sandbox.kube.access import CLUSTER_ADMIN, EDIT, VIEW
from sandbox.local_aws import client_env
from tests.sandbox.ekskit import REGION, eks_token

ME = "arn:aws:iam::123456789012:user/moto"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;" \
        "g=meta.k8s.io,application/json"


def _ago(seconds: int) -> str:
    when = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=seconds)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture(scope="module")
def registry() -> Iterator[KubeRegistry]:
    kubes = KubeRegistry()
    try:
        yield kubes
    finally:
        kubes.close()


@pytest.fixture(scope="module")
def kube(registry: KubeRegistry) -> LocalKube:
    local = registry.ensure("print-lab")
    registry.set_access(local.name, ME, {CLUSTER_ADMIN: {"type": "cluster"}})
    return local


class Raw:
    """HTTPS requests with the cluster's CA and an EKS token, any Accept or body."""

    def __init__(self, kube: LocalKube) -> None:
        env = client_env("http://127.0.0.1:9", REGION)
        sts = boto3.client("sts", region_name=REGION, endpoint_url=env["AWS_ENDPOINT_URL"],
                           aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                           aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
                           aws_session_token=env["AWS_SESSION_TOKEN"])
        self.base = kube.url
        self.token = eks_token(sts, kube.name, expires=900)
        import ssl
        import tempfile

        ca = tempfile.NamedTemporaryFile("wb", suffix=".pem", delete=False)  # noqa: SIM115
        ca.write(kube.ca_pem)
        ca.close()
        context = ssl.create_default_context(cafile=ca.name)
        self.http = urllib3.PoolManager(ssl_context=context)

    def __call__(self, method: str, path: str, accept: str = "application/json",
                 body: bytes | None = None, content_type: str = "application/json",
                 token: bool = True, **query: str) -> tuple[int, Any]:
        headers = {"Accept": accept, "Content-Type": content_type}
        if token:
            headers["Authorization"] = f"Bearer {self.token}"
        reply = self.http.request(method, self.base + path, body=body, headers=headers,
                                  fields=query or None if method == "GET" else None,
                                  timeout=10)
        text = reply.data.decode()
        try:
            return reply.status, json.loads(text)
        except ValueError:
            return reply.status, text


@pytest.fixture(scope="module")
def raw(kube: LocalKube) -> Raw:
    return Raw(kube)


def _columns(table: dict[str, Any]) -> list[str]:
    return [c["name"] for c in table["columnDefinitions"] if c["priority"] == 0]


def _cells(table: dict[str, Any], name: str) -> list[Any]:
    for row in table["rows"]:
        if row["cells"][0] == name or (row.get("object") or {}).get("metadata", {}).get(
                "name") == name:
            return list(row["cells"])
    raise AssertionError(f"no row {name} in {table['rows']}")


# --- units ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("seconds", "shown"), [
    (5, "5s"), (119, "119s"), (125, "2m5s"), (600, "10m"), (179 * 60, "179m"),
    (3 * 3600 + 60, "3h1m"), (9 * 3600, "9h"), (3 * 86400 + 3600, "3d1h"), (30 * 86400, "30d"),
    (3 * 365 * 86400 + 86400, "3y1d"), (9 * 365 * 86400, "9y"),
])
def test_ages_round_as_the_api_machinery_does(seconds: int, shown: str) -> None:
    assert tables.human_duration(seconds) == shown


def test_jsonpath_of_printer_columns() -> None:
    obj = {"status": {"conditions": [{"type": "Ready", "status": "False"},
                                     {"type": "Active", "status": "True"}],
                      "replicas": 3},
           "metadata": {"labels": {"app.kubernetes.io/name": "x"}}}
    assert jsonpath.find(obj, '.status.conditions[?(@.type=="Active")].status') == ["True"]
    assert jsonpath.find(obj, ".status.conditions[?(@.type=='Ready')].status") == ["False"]
    assert jsonpath.find(obj, ".status.replicas") == [3]
    assert jsonpath.find(obj, ".status.conditions[*].type") == ["Ready", "Active"]
    assert jsonpath.find(obj, ".status.conditions[-1].type") == ["Active"]
    assert jsonpath.find(obj, ".metadata.labels.app\\.kubernetes\\.io/name") == ["x"]
    assert jsonpath.find(obj, ".metadata.labels['app.kubernetes.io/name']") == ["x"]
    assert jsonpath.find(obj, ".status.missing.deeper") == []


def test_accept_negotiation() -> None:
    assert tables.negotiate(TABLE) == tables.Wanted("Table", "v1")
    assert tables.negotiate("application/json") is None
    assert tables.negotiate("application/json, */*") is None
    partial = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
    assert tables.negotiate(partial) == tables.Wanted("PartialObjectMetadataList", "v1")


# --- tables of core kinds ------------------------------------------------------------------


def _container_status(name: str, state: dict[str, Any], ready: bool = False,
                      restarts: int = 0, last: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "image": "busybox", "imageID": "", "ready": ready,
            "restartCount": restarts, "started": "running" in state, "state": state,
            "lastState": {"terminated": last} if last else {}}


def test_pods_print_ready_status_restarts(kube: LocalKube, raw: Raw) -> None:
    ns = "print-pods"
    spec = {"containers": [{"name": "main", "image": "busybox"}], "nodeName": "node-a"}
    pods = {
        "running": {"phase": "Running", "podIP": "10.1.128.1", "podIPs": [{"ip": "10.1.128.1"}],
                    "conditions": [{"type": "Ready", "status": "True"}],
                    "containerStatuses": [_container_status(
                        "main", {"running": {"startedAt": _ago(60)}}, ready=True)]},
        "completed": {"phase": "Succeeded", "containerStatuses": [_container_status(
            "main", {"terminated": {"exitCode": 0, "reason": "Completed"}})]},
        "crashing": {"phase": "Running", "containerStatuses": [_container_status(
            "main", {"waiting": {"reason": "CrashLoopBackOff"}}, restarts=3,
            last={"exitCode": 1, "reason": "Error", "finishedAt": _ago(600)})]},
        "signalled": {"phase": "Failed", "containerStatuses": [_container_status(
            "main", {"terminated": {"exitCode": 137, "signal": 9}})]},
        "creating": {"phase": "Pending", "containerStatuses": [_container_status(
            "main", {"waiting": {"reason": "ContainerCreating"}})]},
        "pending": {"phase": "Pending"},
    }
    for name, status in pods.items():
        kube.put_object({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": name, "namespace": ns}, "spec": spec,
                         "status": status})
    init_spec = {**spec, "initContainers": [{"name": "setup", "image": "busybox"}]}
    kube.put_object({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "initializing", "namespace": ns}, "spec": init_spec,
                     "status": {"phase": "Pending", "initContainerStatuses": [
                         _container_status("setup", {"running": {}})]}})
    status, table = raw("GET", f"/api/v1/namespaces/{ns}/pods", TABLE)
    assert status == 200 and table["kind"] == "Table"
    assert table["apiVersion"] == "meta.k8s.io/v1"
    assert _columns(table) == ["Name", "Ready", "Status", "Restarts", "Age"]
    wide = [c["name"] for c in table["columnDefinitions"] if c["priority"] == 1]
    assert wide == ["IP", "Node", "Nominated Node", "Readiness Gates"]
    assert table["columnDefinitions"][0]["format"] == "name"
    assert _cells(table, "running")[1:4] == ["1/1", "Running", "0"]
    assert _cells(table, "running")[5:7] == ["10.1.128.1", "node-a"]
    assert _cells(table, "completed")[1:4] == ["0/1", "Completed", "0"]
    assert _cells(table, "crashing")[1:4] == ["0/1", "CrashLoopBackOff", "3 (10m ago)"]
    assert _cells(table, "signalled")[2] == "Signal:9"
    assert _cells(table, "creating")[2] == "ContainerCreating"
    assert _cells(table, "pending")[1:3] == ["0/1", "Pending"]
    assert _cells(table, "initializing")[2] == "Init:0/1"
    completed = next(r for r in table["rows"] if r["cells"][0] == "completed")
    assert completed["conditions"][0]["reason"] == "Succeeded"
    assert completed["object"]["kind"] == "PartialObjectMetadata"
    assert completed["object"]["metadata"]["namespace"] == ns

    # one object, the whole object, no object
    status, one = raw("GET", f"/api/v1/namespaces/{ns}/pods/running", TABLE,
                      includeObject="Object")
    assert one["rows"][0]["object"]["status"]["phase"] == "Running"
    status, bare = raw("GET", f"/api/v1/namespaces/{ns}/pods", TABLE, includeObject="None")
    assert all("object" not in row for row in bare["rows"])
    # plain JSON is still the default
    status, listed = raw("GET", f"/api/v1/namespaces/{ns}/pods")
    assert listed["kind"] == "PodList"


def test_nodes_volumes_and_others_print_their_columns(kube: LocalKube, raw: Raw) -> None:
    kube.put_object({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "node-cordoned", "labels": {"node-role.kubernetes.io/worker": "",
                                            "kubernetes.io/role": "gpu"}},
        "spec": {"unschedulable": True},
        "status": {"conditions": [{"type": "Ready", "status": "False"}],
                   "nodeInfo": {"kubeletVersion": "v1.33.0-eks"},
                   "addresses": [{"type": "InternalIP", "address": "10.1.0.9"}]}})
    _, nodes = raw("GET", "/api/v1/nodes", TABLE)
    assert _columns(nodes) == ["Name", "Status", "Roles", "Age", "Version"]
    cells = _cells(nodes, "node-cordoned")
    assert cells[1:3] == ["NotReady,SchedulingDisabled", "gpu,worker"]
    assert cells[4:6] == ["v1.33.0-eks", "10.1.0.9"]

    kube.put_object({"apiVersion": "v1", "kind": "PersistentVolume",
                     "metadata": {"name": "pv-print"},
                     "spec": {"capacity": {"storage": "1200Gi"},
                              "accessModes": ["ReadWriteMany", "ReadOnlyMany"],
                              "persistentVolumeReclaimPolicy": "Retain",
                              "storageClassName": "",
                              "claimRef": {"namespace": "default", "name": "claim-print"}},
                     "status": {"phase": "Bound"}})
    kube.put_object({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                     "metadata": {"name": "claim-print", "namespace": "default"},
                     "spec": {"volumeName": "pv-print", "storageClassName": "",
                              "accessModes": ["ReadWriteMany"],
                              "resources": {"requests": {"storage": "1200Gi"}}},
                     "status": {"phase": "Bound", "accessModes": ["ReadWriteMany"],
                                "capacity": {"storage": "1200Gi"}}})
    _, pvs = raw("GET", "/api/v1/persistentvolumes", TABLE)
    assert _columns(pvs) == ["Name", "Capacity", "Access Modes", "Reclaim Policy", "Status",
                             "Claim", "StorageClass", "VolumeAttributesClass", "Reason", "Age"]
    assert _cells(pvs, "pv-print")[1:8] == ["1200Gi", "ROX,RWX", "Retain", "Bound",
                                            "default/claim-print", "", "<unset>"]
    _, pvcs = raw("GET", "/api/v1/namespaces/default/persistentvolumeclaims", TABLE)
    assert _columns(pvcs) == ["Name", "Status", "Volume", "Capacity", "Access Modes",
                              "StorageClass", "VolumeAttributesClass", "Age"]
    assert _cells(pvcs, "claim-print")[1:5] == ["Bound", "pv-print", "1200Gi", "RWX"]

    kube.put_object({"apiVersion": "batch/v1", "kind": "Job",
                     "metadata": {"name": "job-print", "namespace": "default"},
                     "spec": {"completions": 2, "template": {"spec": {"containers": [
                         {"name": "w", "image": "trainer:1"}]}}},
                     "status": {"succeeded": 2, "startTime": _ago(300),
                                "completionTime": _ago(60),
                                "conditions": [{"type": "Complete", "status": "True"}]}})
    _, jobs = raw("GET", "/apis/batch/v1/namespaces/default/jobs", TABLE)
    assert _columns(jobs) == ["Name", "Status", "Completions", "Duration", "Age"]
    assert _cells(jobs, "job-print")[1:4] == ["Complete", "2/2", "4m"]

    kube.put_object({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "cm-print", "namespace": "default"},
                     "data": {"a": "1", "b": "2"}})
    _, cms = raw("GET", "/api/v1/namespaces/default/configmaps", TABLE)
    assert _columns(cms) == ["Name", "Data", "Age"] and _cells(cms, "cm-print")[1] == 2
    kube.put_object({"apiVersion": "v1", "kind": "Service",
                     "metadata": {"name": "svc-print", "namespace": "default"},
                     "spec": {"type": "ClusterIP", "clusterIP": "172.20.0.10",
                              "ports": [{"port": 53, "protocol": "UDP"}],
                              "selector": {"k8s-app": "dns"}}})
    _, svcs = raw("GET", "/api/v1/namespaces/default/services", TABLE)
    assert _columns(svcs) == ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age"]
    assert _cells(svcs, "svc-print")[1:5] == ["ClusterIP", "172.20.0.10", "<none>", "53/UDP"]
    _, namespaces = raw("GET", "/api/v1/namespaces", TABLE)
    assert _columns(namespaces) == ["Name", "Status", "Age"]
    assert _cells(namespaces, "default")[1] == "Active"
    # a kind without a printer: Name and Created At
    kube.put_object({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                     "metadata": {"name": "role-print"}, "rules": []})
    _, roles = raw("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles", TABLE)
    assert _columns(roles) == ["Name", "Created At"]
    assert _cells(roles, "role-print")[1].endswith("Z")


def test_custom_resources_print_their_crds_columns(kube: LocalKube, raw: Raw) -> None:
    columns = [
        {"name": "Ready", "type": "string",
         "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Started", "type": "date", "jsonPath": ".status.startTime"},
        {"name": "Image", "type": "string", "jsonPath": ".spec.image", "priority": 1},
    ]
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.print.example.com"},
           "spec": {"group": "print.example.com", "scope": "Namespaced",
                    "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
                    "versions": [
                        {"name": "v1", "served": True, "storage": True,
                         "schema": {"openAPIV3Schema": {"type": "object"}},
                         "additionalPrinterColumns": columns},
                        {"name": "v1beta1", "served": True, "storage": False,
                         "schema": {"openAPIV3Schema": {"type": "object"}}}]}}
    status, _ = raw("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                    body=json.dumps(crd).encode())
    assert status == 201
    widget = {"apiVersion": "print.example.com/v1", "kind": "Widget",
              "metadata": {"name": "w1"}, "spec": {"replicas": 3, "image": "x:1"},
              "status": {"startTime": _ago(1200),
                         "conditions": [{"type": "Ready", "status": "True"}]}}
    kube.put_object({**widget, "metadata": {"name": "w1", "namespace": "default"}})
    _, table = raw("GET", "/apis/print.example.com/v1/namespaces/default/widgets", TABLE)
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Ready", "Replicas", "Started", "Image"]
    assert table["columnDefinitions"][4]["priority"] == 1
    assert _cells(table, "w1") == ["w1", "True", 3, "20m", "x:1"]
    # the version without columns prints Name and Age
    _, beta = raw("GET", "/apis/print.example.com/v1beta1/namespaces/default/widgets", TABLE)
    assert [c["name"] for c in beta["columnDefinitions"]] == ["Name", "Age"]
    _, crds = raw("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", TABLE)
    assert _columns(crds) == ["Name", "Created At"]


def test_watches_stream_table_rows_and_lists_partial_metadata(kube: LocalKube,
                                                              raw: Raw) -> None:
    for name in ("watched", "watched-too"):
        kube.put_object({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": name, "namespace": "print-watch"}, "data": {}})
    status, text = raw("GET", "/api/v1/namespaces/print-watch/configmaps", TABLE,
                       watch="true", timeoutSeconds="1")
    events = [json.loads(line) for line in text.splitlines() if line.strip()]
    assert status == 200 and events[0]["type"] == "ADDED"
    first = events[0]["object"]
    assert first["kind"] == "Table" and _columns(first) == ["Name", "Data", "Age"]
    assert first["rows"][0]["cells"][0] == "watched"
    second = events[1]["object"]  # the headers come with the first event only
    assert second["columnDefinitions"] == [] and second["rows"][0]["cells"][0] == "watched-too"
    partial = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
    _, listed = raw("GET", "/api/v1/namespaces/print-watch/configmaps", partial)
    assert listed["kind"] == "PartialObjectMetadataList"
    assert listed["items"][0]["metadata"]["name"] == "watched"
    assert "data" not in listed["items"][0]


# --- self reviews --------------------------------------------------------------------------


def _varint(n: int) -> bytes:
    out = b""
    while True:
        byte, n = n & 0x7F, n >> 7
        out += bytes([byte | (0x80 if n else 0)])
        if not n:
            return out


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _protobuf_access_review(namespace: str, verb: str, resource: str) -> bytes:
    """A SelfSubjectAccessReview as kubectl's typed client encodes it."""
    attributes = _field(1, namespace.encode()) + _field(2, verb.encode()) + _field(
        5, resource.encode())
    review = _field(1, b"") + _field(2, _field(1, attributes))
    type_meta = _field(1, b"authorization.k8s.io/v1") + _field(2, b"SelfSubjectAccessReview")
    return b"k8s\x00" + _field(1, type_meta) + _field(2, review) + _field(4, b"")


def _can_i(raw: Raw, namespace: str, verb: str, resource: str, group: str = "") -> bool:
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"namespace": namespace, "verb": verb,
                                            "resource": resource, "group": group}}}
    status, reply = raw("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                        body=json.dumps(body).encode())
    assert status == 201, reply
    assert reply["spec"] == body["spec"]
    return bool(reply["status"]["allowed"])


def test_access_reviews_answer_as_the_access_policies_decide(registry: KubeRegistry) -> None:
    local = registry.ensure("review-lab")
    raw = Raw(local)
    registry.set_access(local.name, ME, {VIEW: {"type": "namespace",
                                                "namespaces": ["team-*"]}})
    assert _can_i(raw, "team-a", "list", "pods")
    assert not _can_i(raw, "team-a", "create", "pods")
    assert not _can_i(raw, "default", "list", "pods")
    assert not _can_i(raw, "team-a", "get", "secrets")
    # protobuf, as `kubectl auth can-i` sends it
    path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    status, reply = raw("POST", path, accept="application/vnd.kubernetes.protobuf,"
                                             "application/json",
                        body=_protobuf_access_review("team-b", "get", "pods"),
                        content_type="application/vnd.kubernetes.protobuf")
    assert status == 201 and reply["status"]["allowed"] is True
    assert reply["spec"]["resourceAttributes"] == {
        "namespace": "team-b", "verb": "get", "resource": "pods"}

    registry.set_access(local.name, ME, {EDIT: {"type": "cluster"}})
    assert _can_i(raw, "default", "create", "deployments", "apps")
    assert not _can_i(raw, "default", "create", "roles", "rbac.authorization.k8s.io")
    status, rules = raw("POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
                        body=json.dumps({"apiVersion": "authorization.k8s.io/v1",
                                         "kind": "SelfSubjectRulesReview",
                                         "spec": {"namespace": "default"}}).encode())
    assert status == 201 and rules["status"]["incomplete"] is False
    granted = {(group, resource): set(rule["verbs"])
               for rule in rules["status"]["resourceRules"]
               for group in rule["apiGroups"] for resource in rule["resources"]}
    assert "create" in granted[("apps", "deployments")]
    assert ("rbac.authorization.k8s.io", "roles") not in granted
    assert granted[("", "namespaces")] == {"get", "list", "watch"}

    registry.set_access(local.name, ME, {CLUSTER_ADMIN: {"type": "cluster"}})
    assert _can_i(raw, "default", "*", "*")
    status, whoami = raw("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                         body=json.dumps({"apiVersion": "authentication.k8s.io/v1",
                                          "kind": "SelfSubjectReview"}).encode())
    assert status == 201 and whoami["status"]["userInfo"]["username"] == ME

    # nobody without a token; nothing but the kinds it can read in protobuf
    status, _ = raw("POST", path, body=b"{}", token=False)
    assert status == 403
    other = b"k8s\x00" + _field(1, _field(1, b"v1") + _field(2, b"Pod")) + _field(2, b"")
    status, reply = raw("POST", path, body=other,
                        content_type="application/vnd.kubernetes.protobuf")
    assert status == 415, reply
