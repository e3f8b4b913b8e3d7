"""The simulator's workload controllers and the API server's service proxy, through the
Kubernetes API as a user's tools reach them: Deployments → ReplicaSets → pods (scale in by
the controller's order and pod-deletion-cost; a pod relabelled out of the selector is
released and replaced), Jobs to completion, Services' Endpoints, and an OpenAI-compatible
completion from a ready model-server pod through the service proxy, and through a
port-forward (pods/portforward over WebSocket) with the official client."""

from __future__ import annotations

import http.client
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.stream import portforward

from sandbox.kube import KubeRegistry, LocalKube
from sandbox.kube.access import CLUSTER_ADMIN, VIEW
from sandbox.simulator.cluster import ClusterSimulator
from sandbox.simulator.workloads import DELETION_COST
from tests.sandbox.ekskit import local_api
from tests.sandbox.test_pod_lifecycle import ME, SPEED, _node
from tests.stack import wait_until

SERVER = {"name": "server", "image": "vllm/vllm-openai:v0.9.2",
          "command": ["vllm", "serve", "/s3/models/tiny", "--served-model-name", "tiny",
                      "--port", "8000"],
          "ports": [{"name": "http", "containerPort": 8000}],
          "readinessProbe": {"httpGet": {"path": "/health", "port": 8000},
                             "initialDelaySeconds": 30}}


@pytest.fixture(scope="module")
def kube() -> Iterator[LocalKube]:
    registry = KubeRegistry(attach=lambda local: ClusterSimulator(local, lambda: SPEED))
    try:
        local = registry.ensure("workloads-lab")
        registry.set_access("workloads-lab", ME, {CLUSTER_ADMIN: {"type": "cluster"}})
        for i in range(3):
            local.put_object(_node(f"i-0bbbbbbbbbbbbbbb{i}", "ml.g5.8xlarge", f"10.2.0.{10 + i}"))
        yield local
    finally:
        registry.close()


@pytest.fixture(scope="module")
def api(kube: LocalKube) -> k8s.ApiClient:
    return local_api(kube, expires=60)


@pytest.fixture
def ns(api: k8s.ApiClient) -> str:
    name = f"w-{uuid.uuid4().hex[:6]}"
    k8s.CoreV1Api(api).create_namespace({"metadata": {"name": name}})
    return name


def _deployment(name: str, replicas: int, container: dict[str, Any],
                pod_labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name, **(pod_labels or {})}},
                                  "spec": {"containers": [container]}}}}


def _pods(api: k8s.ApiClient, ns: str, selector: str = "") -> list[Any]:
    return k8s.CoreV1Api(api).list_namespaced_pod(ns, label_selector=selector).items


def _ready(pod: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def test_a_deployment_runs_its_replicas_through_a_replica_set(api, ns):
    apps = k8s.AppsV1Api(api)
    apps.create_namespaced_deployment(ns, _deployment("web", 3, SERVER))
    wait_until(lambda: (apps.read_namespaced_deployment("web", ns).status.ready_replicas
                        or 0) == 3, 10, what="3 ready replicas")
    sets = apps.list_namespaced_replica_set(ns).items
    assert len(sets) == 1
    rs = sets[0]
    template_hash = rs.metadata.labels["pod-template-hash"]
    assert rs.metadata.name == f"web-{template_hash}"
    assert rs.metadata.owner_references[0].kind == "Deployment"
    pods = _pods(api, ns, "app=web")
    assert len(pods) == 3
    for pod in pods:
        assert pod.metadata.name.startswith(f"web-{template_hash}-")
        assert pod.metadata.owner_references[0].name == rs.metadata.name
        assert pod.metadata.labels["pod-template-hash"] == template_hash
        assert pod.spec.node_name and pod.status.phase == "Running"
    status = apps.read_namespaced_deployment("web", ns).status
    assert (status.replicas, status.updated_replicas, status.available_replicas) == (3, 3, 3)
    assert {c.type: c.status for c in status.conditions} == {"Available": "True",
                                                             "Progressing": "True"}


def test_scale_in_deletes_the_lowest_deletion_cost_first(api, ns):
    apps, core = k8s.AppsV1Api(api), k8s.CoreV1Api(api)
    apps.create_namespaced_deployment(ns, _deployment("pool", 3, SERVER))
    wait_until(lambda: len([p for p in _pods(api, ns, "app=pool") if _ready(p)]) == 3, 10,
               what="3 ready pods")
    names = sorted(p.metadata.name for p in _pods(api, ns, "app=pool"))
    keep, doomed = names[:2], names[2]
    for name in keep:
        core.patch_namespaced_pod(name, ns, {"metadata": {"annotations": {
            DELETION_COST: "1000"}}})
    apps.patch_namespaced_deployment_scale("pool", ns, {"spec": {"replicas": 2}})
    wait_until(lambda: len(_pods(api, ns, "app=pool")) == 2, 10, what="scaled to 2")
    assert sorted(p.metadata.name for p in _pods(api, ns, "app=pool")) == keep
    assert doomed not in [p.metadata.name for p in _pods(api, ns)]


def test_a_pod_relabelled_out_of_the_selector_is_released_and_replaced(api, ns):
    apps, core = k8s.AppsV1Api(api), k8s.CoreV1Api(api)
    apps.create_namespaced_deployment(ns, _deployment("rel", 1, SERVER, {"model": "none"}))
    wait_until(lambda: len(_pods(api, ns, "app=rel")) == 1, 10, what="one pod")
    first = _pods(api, ns, "app=rel")[0].metadata.name
    # a label outside the selector: the pod stays the set's
    core.patch_namespaced_pod(first, ns, {"metadata": {"labels": {"model": "llama"}}})
    # the selector's own label: released (orphaned) and replaced
    core.patch_namespaced_pod(first, ns, {"metadata": {"labels": {"app": "other"}}})
    wait_until(lambda: len(_pods(api, ns, "app=rel")) == 1
               and _pods(api, ns, "app=rel")[0].metadata.name != first, 10,
               what="a replacement")
    orphan = core.read_namespaced_pod(first, ns)
    assert not orphan.metadata.owner_references


def test_a_job_runs_its_pod_to_completion(api, ns):
    batch = k8s.BatchV1Api(api)
    batch.create_namespaced_job(ns, {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
        "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "main", "image": "busybox", "command": ["sh", "-c", "echo done"]}]}}}})
    wait_until(lambda: (batch.read_namespaced_job("once", ns).status.succeeded or 0) == 1, 10,
               what="the job's success")
    job = batch.read_namespaced_job("once", ns)
    assert {c.type for c in job.status.conditions} == {"SuccessCriteriaMet", "Complete"}
    assert job.status.completion_time is not None and not job.status.active
    pod = _pods(api, ns, "job-name=once")[0]
    assert pod.status.phase == "Succeeded"
    assert k8s.CoreV1Api(api).read_namespaced_pod_log(pod.metadata.name, ns) == "done\n"


def test_a_job_deleted_without_a_policy_orphans_its_pods_and_background_takes_them(api, ns):
    """batch/v1's default: a Job deleted without a propagation policy leaves its pods (they
    run on, ownerless); Background collects them with the Job."""
    batch, core = k8s.BatchV1Api(api), k8s.CoreV1Api(api)
    for name in ("kept", "gone"):
        batch.create_namespaced_job(ns, {
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "main", "image": "busybox", "command": ["sleep", "infinity"]}]}}}})
    pods = {name: wait_until(lambda n=name: _pods(api, ns, f"job-name={n}"), 10,
                             what=f"the pod of {name}")[0].metadata.name
            for name in ("kept", "gone")}
    batch.delete_namespaced_job("kept", ns)
    batch.delete_namespaced_job("gone", ns, propagation_policy="Background")
    assert not batch.list_namespaced_job(ns).items
    orphan = core.read_namespaced_pod(pods["kept"], ns)
    assert not orphan.metadata.owner_references
    assert [p.metadata.name for p in _pods(api, ns, "job-name")] == [pods["kept"]]


def test_a_failing_job_stops_at_its_backoff_limit(api, ns):
    batch = k8s.BatchV1Api(api)
    batch.create_namespaced_job(ns, {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "fails"},
        "spec": {"backoffLimit": 1, "template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "main", "image": "busybox", "command": ["sh", "-c", "exit 3"]}]}}}})
    wait_until(lambda: any(c.type == "Failed" for c in
                           batch.read_namespaced_job("fails", ns).status.conditions or []),
               10, what="the job's failure")
    assert batch.read_namespaced_job("fails", ns).status.failed == 2


def _proxy(api: k8s.ApiClient, ns: str, target: str, path: str, body: Any = None,
           method: str = "POST") -> tuple[int, Any]:
    resource = f"/api/v1/namespaces/{ns}/services/{target}/proxy/{path}"
    method, url, headers, body, _ = api.param_serialize(
        method=method, resource_path=resource, header_params={
            "Content-Type": "application/json", "Accept": "application/json"},
        body=body, auth_settings=["BearerToken"])
    response = api.call_api(method, url, header_params=headers, body=body)
    data = response.read()
    return response.status, json.loads(data) if data else None


def test_the_service_proxy_reaches_a_ready_model_server(api, ns):
    apps, core = k8s.AppsV1Api(api), k8s.CoreV1Api(api)
    apps.create_namespaced_deployment(ns, _deployment("llm", 2, SERVER))
    core.create_namespaced_service(ns, {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "llm"},
        "spec": {"selector": {"app": "llm"}, "ports": [{"name": "http", "port": 80,
                                                         "targetPort": "http"}]}})
    wait_until(lambda: len((core.read_namespaced_endpoints("llm", ns).subsets or [None])[0]
                           .addresses or []) == 2 if core.read_namespaced_endpoints(
                               "llm", ns).subsets else False, 10, what="two ready endpoints")
    subset = core.read_namespaced_endpoints("llm", ns).subsets[0]
    assert [p.port for p in subset.ports] == [8000]
    ips = {p.status.pod_ip for p in _pods(api, ns, "app=llm")}
    assert {a.ip for a in subset.addresses} == ips

    status, first = _proxy(api, ns, "llm:http", "v1/completions",
                           {"model": "tiny", "prompt": "Say hi", "max_tokens": 4})
    assert status == 200, first
    assert first["object"] == "text_completion" and first["model"] == "tiny"
    assert first["usage"]["completion_tokens"] == 4
    assert len(first["choices"][0]["text"].split()) == 4
    again = _proxy(api, ns, "llm:80", "v1/completions",
                   {"model": "tiny", "prompt": "Say hi", "max_tokens": 4})[1]
    assert again["choices"] == first["choices"]  # deterministic
    status, missing = _proxy(api, ns, "nope:80", "v1/completions", {})
    assert status == 404 and missing["reason"] == "NotFound"


def test_the_service_proxy_without_ready_endpoints_is_unavailable(api, ns):
    core = k8s.CoreV1Api(api)
    core.create_namespaced_service(ns, {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "empty"},
        "spec": {"selector": {"app": "nothing"}, "ports": [{"port": 80}]}})
    status, body = _proxy(api, ns, "empty:80", "v1/completions", {})
    assert status == 503 and "no endpoints available" in body["message"]


def test_a_port_forward_reaches_the_pod_s_server_with_the_official_client(api, ns):
    """pods/portforward over WebSocket, as `kubernetes.stream.portforward` speaks it: two
    requests on one forwarded stream answer from the model server; a port nothing listens on
    says so on its error channel, in the kubelet's words."""
    apps = k8s.AppsV1Api(api)
    apps.create_namespaced_deployment(ns, _deployment("fwd", 1, SERVER))
    wait_until(lambda: any(p.status.phase == "Running" for p in _pods(api, ns, "app=fwd")), 10,
               what="the server's pod running")
    pod = next(p for p in _pods(api, ns, "app=fwd") if p.status.phase == "Running")
    forward = portforward(k8s.CoreV1Api(api).connect_get_namespaced_pod_portforward,
                          pod.metadata.name, ns, ports="8000,9")
    try:
        conn = http.client.HTTPConnection("pod", 8000, timeout=10)
        conn.sock = forward.socket(8000)
        conn.request("GET", "/v1/models")
        models = conn.getresponse()
        assert models.status == 200
        assert [m["id"] for m in json.loads(models.read())["data"]] == ["tiny"]
        conn.request("POST", "/v1/completions", body=json.dumps(
            {"model": "tiny", "prompt": "Say hi", "max_tokens": 3}),
            headers={"Content-Type": "application/json"})
        completion = conn.getresponse()  # the same stream, kept alive
        assert completion.status == 200
        assert json.loads(completion.read())["usage"]["completion_tokens"] == 3
        wait_until(lambda: forward.error(9) is not None, 10, what="port 9's error")
        assert "127.0.0.1:9: connect: connection refused" in forward.error(9)
    finally:
        forward.close()


def test_a_port_forward_needs_its_ports_and_a_running_pod(api, ns):
    core = k8s.CoreV1Api(api)
    core.create_namespaced_pod(ns, {"metadata": {"name": "idle"}, "spec": {
        "nodeSelector": {"no": "such-node"}, "containers": [SERVER]}})
    # the client reports a refused upgrade as the handshake's status and the API's Status
    with pytest.raises(k8s.exceptions.ApiException, match=r"400.*pod idle is not running"):
        portforward(core.connect_get_namespaced_pod_portforward, "idle", ns, ports="8000")
    with pytest.raises(k8s.exceptions.ApiException, match=r"404 Not Found.*NotFound"):
        portforward(core.connect_get_namespaced_pod_portforward, "nope", ns, ports="8000")


def test_a_view_policy_cannot_port_forward():
    """pods/portforward needs `create`, even as a WebSocket GET: read-only access cannot."""
    registry = KubeRegistry(attach=lambda local: ClusterSimulator(local, lambda: SPEED))
    try:
        local = registry.ensure("forward-view")
        registry.set_access("forward-view", ME, {VIEW: {"type": "cluster"}})
        core = k8s.CoreV1Api(local_api(local, expires=60))
        assert core.list_namespaced_pod("default").items == []  # it may read
        with pytest.raises(k8s.exceptions.ApiException, match=r"403 Forbidden.*cannot create"):
            portforward(core.connect_get_namespaced_pod_portforward, "any", "default",
                        ports="8000")
    finally:
        registry.close()
