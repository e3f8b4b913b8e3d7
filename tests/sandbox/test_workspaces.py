"""The Spaces add-on's workspace controller as the sandbox plays it (jupyter-k8s), through the
Kubernetes API against the upstream CRDs: a Workspace → its Deployment, Service and home
volume → a running pod → Available with the access URL and base path hypd's access strategy
renders; its editor, reached as hypd's spaces router reaches it (`pods/portforward` with the
official client), serves only under the base path its command line names and lists the
bucket mounted at /s3 there; the cluster's endpoint routes no workspace; stopped and started
again; idle shutdown by the sandbox clock; a workspace too big for any node stays Pending;
deletion through the controller's finalizer; and the data contract's other half, a job's
container writing a file under /s3 into the bucket."""

from __future__ import annotations

import http.client
import json
import re
import ssl
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.stream import portforward

from cloud import addons, dependencies, recipes, spaces, storage
from cloud.training import JobSpec
from sandbox.control import SandboxControl
from sandbox.gaps.eks_addons import Crd, upstream_crd
from sandbox.kube import LocalKube
from sandbox.kube.access import CLUSTER_ADMIN
from sandbox.local_aws import LocalAws
from sandbox.simulator.workspaces import FINALIZER
from tests.sandbox.ekskit import call, local_api
from tests.sandbox.test_pod_lifecycle import ME, _node
from tests.stack import wait_until
from vocabulary.spaces import base_path

CLUSTER = "spaces-lab"
BUCKET = "hypd-spaces-lab-data"
GROUP, VERSION = "workspace.jupyter.org", "v1alpha1"
CRDS = tuple(f"workspace.jupyter.org_{p}.yaml" for p in
             ("workspaces", "workspacetemplates", "workspaceaccessstrategies"))
SYSTEM = "jupyter-k8s-system"
SPACES_URL = "https://spaces.example.test"
"""Where hypd's spaces router would be (nothing here routes: the tests reach the pod as the
router does, through pods/portforward)."""


@dataclass
class Lab:
    kube: LocalKube
    api: k8s.ApiClient
    s3: Any
    control: SandboxControl

    @property
    def custom(self) -> k8s.CustomObjectsApi:
        return k8s.CustomObjectsApi(self.api)

    def workspace(self, name: str) -> dict[str, Any]:
        return self.custom.get_namespaced_custom_object(GROUP, VERSION, "default",
                                                        "workspaces", name)

    def condition(self, name: str, kind: str) -> dict[str, Any]:
        conditions = (self.workspace(name).get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == kind), {})

    def pods(self, name: str) -> list[Any]:
        return k8s.CoreV1Api(self.api).list_namespaced_pod(
            "default", label_selector=f"workspace.jupyter.org/workspace-name={name}").items


@pytest.fixture(scope="module")
def lab(local_aws: LocalAws, client_factory: Any) -> Iterator[Lab]:
    kubes = local_aws.app.kubes
    kube = kubes.ensure(CLUSTER)
    kubes.set_access(CLUSTER, ME, {CLUSTER_ADMIN: {"type": "cluster"}})
    for i in range(2):  # g5.8xlarge: 32 vCPU, 128 GiB, 1 GPU each
        kube.put_object(_node(f"i-0ccccccccccccccc{i}", "ml.g5.8xlarge", f"10.3.0.{10 + i}"))
    # what the add-ons put in: the three upstream CRDs and the controller (amazon-sagemaker-
    # spaces), the EBS CSI driver with a default class for home volumes (aws-ebs-csi-driver)
    for file in CRDS:
        kube.put_object(upstream_crd(file))
    kube.put_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM}})
    kube.put_object({"apiVersion": "apps/v1", "kind": "Deployment",
                     "metadata": {"name": "jupyter-k8s-controller-manager", "namespace": SYSTEM},
                     "spec": {"selector": {"matchLabels": {"app": "jk8s"}}, "template": {
                         "metadata": {"labels": {"app": "jk8s"}},
                         "spec": {"containers": [{"name": "manager", "image": "eks/spaces",
                                                  "command": ["/manager"]}]}}}})
    kube.put_object({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                     "metadata": {"name": "ebs.csi.aws.com"}, "spec": {"attachRequired": True}})
    kube.put_object({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                     "metadata": {"name": "gp3", "annotations": {
                         "storageclass.kubernetes.io/is-default-class": "true"}},
                     "provisioner": "ebs.csi.aws.com", "parameters": {"type": "gp3"},
                     "volumeBindingMode": "WaitForFirstConsumer"})
    # the cluster's bucket claim, as hypd's storage stage makes it
    s3 = client_factory("s3")
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={
        "LocationConstraint": "us-west-2"})
    for obj in storage.s3_volume(BUCKET, "us-west-2"):
        kube.put_object(obj)
    api = local_api(kube)
    # hypd's own access strategies, as the spaces feature renders them for this cluster
    for strategy in addons.render(dependencies.by_name()["spaces-access-strategy"], "us-west-2",
                                  values={"spaces_url": SPACES_URL, "cluster": CLUSTER}):
        if strategy["kind"] == "WorkspaceAccessStrategy":
            k8s.CustomObjectsApi(api).create_namespaced_custom_object(
                GROUP, VERSION, SYSTEM, "workspaceaccessstrategies", strategy)
    wait_until(lambda: (kube.get_object("apps/v1", "Deployment", "jupyter-k8s-controller-manager",
                                        SYSTEM) or {}).get("status", {}).get("availableReplicas"),
               10, what="the workspace controller")
    try:
        yield Lab(kube, api, s3, SandboxControl(local_aws.url))
    finally:
        kubes.remove(CLUSTER)


PROBES = {
    "jupyterlab": {"path": "/api/status", "port": 8888, "lastActivityTimestamp": {
        "responseBodyPath": "last_activity", "format": "RFC3339"}},
    "code-editor": {"path": "/api/idle", "port": 8888, "lastActivityTimestamp": {
        "responseBodyPath": "lastActiveTimestamp", "format": "RFC3339"}},
}
"""Each editor's idle probe as hypd writes it: JupyterLab's status under the base path its
access strategy renders, Code Editor's idle route at its root."""
STRATEGIES = {"jupyterlab": "hypd-web", "code-editor": "hypd-web-root"}


def _space(name: str, **spec: Any) -> dict[str, Any]:
    """A Workspace as hypd writes it (the issue's contract), its editor serving under the
    space's base path as cloud/spaces.py starts it, its idle probe and access strategy
    those of its editor."""
    app_type = spec.get("appType") or "jupyterlab"
    body = {
        "displayName": name, "appType": app_type,
        "containerConfig": spaces.container_config(app_type,
                                                   base_path(CLUSTER, "default", name)),
        "image": "public.ecr.aws/sagemaker/sagemaker-distribution:latest-cpu",
        "desiredStatus": "Running",
        "resources": {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"memory": "8Gi"}},
        "nodeSelector": {"sagemaker.amazonaws.com/instance-group-name": "workers"},
        "storage": {"size": "50Gi", "mountPath": "/home/sagemaker-user"},
        "volumes": [{"name": "s3", "persistentVolumeClaimName": "hypd-s3", "mountPath": "/s3"}],
        "idleShutdown": {"enabled": True, "idleTimeoutInMinutes": 600, "detection": {
            "httpGet": PROBES[app_type]}},
        "accessStrategy": {"name": STRATEGIES[app_type], "namespace": SYSTEM},
        "accessType": "Public", "ownershipType": "Public",
    }
    body.update(spec)
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Workspace",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "hypd",
                                                  "hypd.io/space": name},
                         "annotations": {"hypd.io/owner": "alice"}},
            "spec": body}


def _create(lab: Lab, name: str, **spec: Any) -> None:
    lab.custom.create_namespaced_custom_object(GROUP, VERSION, "default", "workspaces",
                                               _space(name, **spec))


def _available(lab: Lab, name: str) -> dict[str, Any]:
    wait_until(lambda: lab.condition(name, "Available").get("status") == "True", 15,
               what=f"{name} Available")
    return lab.workspace(name)


def _get(url: str, accept: str = "application/json") -> tuple[int, str, bytes]:
    """GET without a Kubernetes token (as a browser would ask)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the cluster's own CA; the answer is what we check
    request = urllib.request.Request(url, headers={"Accept": accept})
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as answer:
            return answer.status, answer.headers.get("Content-Type", ""), answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read()


def _set_desired(lab: Lab, name: str, desired: str) -> None:
    lab.custom.patch_namespaced_custom_object(GROUP, VERSION, "default", "workspaces", name,
                                              {"spec": {"desiredStatus": desired}})


@pytest.fixture
def name() -> str:
    return f"sp-{uuid.uuid4().hex[:6]}"


def test_a_workspace_gets_its_deployment_service_and_home_volume(lab, name):
    _create(lab, name)
    workspace = _available(lab, name)
    assert FINALIZER in workspace["metadata"]["finalizers"]
    assert workspace["metadata"]["labels"]["workspace.jupyter.org/access-strategy-name"] == \
        "hypd-web"
    apps, core = k8s.AppsV1Api(lab.api), k8s.CoreV1Api(lab.api)
    own = {"app": "jupyter", "workspace.jupyter.org/workspace-name": name,
           "workspace.jupyter.org/component": "workspace"}
    deployment = apps.read_namespaced_deployment(f"workspace-{name}", "default")
    service = core.read_namespaced_service(f"workspace-{name}-service", "default")
    claim = core.read_namespaced_persistent_volume_claim(f"workspace-{name}-pvc", "default")
    for obj in (deployment, service, claim):
        assert own.items() <= obj.metadata.labels.items()
        ref = obj.metadata.owner_references[0]
        assert (ref.kind, ref.name, ref.uid, ref.controller) == (
            "Workspace", name, workspace["metadata"]["uid"], True)
    assert deployment.spec.replicas == 1 and deployment.spec.strategy.type == "Recreate"
    assert deployment.spec.selector.match_labels == own
    pod = deployment.spec.template.spec
    (container,) = pod.containers
    assert (container.name, container.image) == ("workspace", _space(name)["spec"]["image"])
    assert [(p.name, p.container_port) for p in container.ports] == [("http", 8888)]
    assert container.resources.requests == {"cpu": "2", "memory": "8Gi"}
    assert {m.mount_path: m.name for m in container.volume_mounts} == {
        "/home/sagemaker-user": "workspace-storage", "/s3": "s3"}
    assert {v.name: v.persistent_volume_claim.claim_name for v in pod.volumes} == {
        "workspace-storage": f"workspace-{name}-pvc", "s3": "hypd-s3"}
    assert pod.node_selector == {"sagemaker.amazonaws.com/instance-group-name": "workers"}
    assert [(p.name, p.port) for p in service.spec.ports] == [("http", 8888)]
    assert service.spec.selector == own
    # the home volume: 50Gi of the default class, provisioned by the EBS CSI driver, bound
    assert claim.spec.resources.requests == {"storage": "50Gi"}
    assert claim.spec.storage_class_name == "gp3" and claim.status.phase == "Bound"
    volume = core.read_persistent_volume(claim.spec.volume_name)
    assert volume.spec.csi.driver == "ebs.csi.aws.com"
    assert volume.spec.csi.volume_handle.startswith("vol-")
    (running,) = lab.pods(name)
    assert running.status.phase == "Running"
    status = workspace["status"]
    assert (status["deploymentName"], status["serviceName"]) == (
        f"workspace-{name}", f"workspace-{name}-service")
    assert {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]} == {
        "Available": ("True", "ResourcesReady"), "Progressing": ("False", "ResourcesReady"),
        "Degraded": ("False", "NoError"), "Stopped": ("False", "DesiredStateRunning"),
        "Deleting": ("False", "DesiredStateRunning")}


def _forward(lab: Lab, name: str, path: str,
             accept: str = "application/json") -> tuple[int, str, bytes]:
    """GET `path` of the workspace's running pod on 8888 as hypd's spaces router reaches it:
    pods/portforward with the official client, one HTTP/1.1 request on the forwarded stream
    (the whole path, unchanged)."""
    pod = next(p for p in lab.pods(name) if p.status.phase == "Running")
    forward = portforward(k8s.CoreV1Api(lab.api).connect_get_namespaced_pod_portforward,
                          pod.metadata.name, "default", ports="8888")
    try:
        conn = http.client.HTTPConnection("pod", 8888, timeout=10)
        conn.sock = forward.socket(8888)
        conn.request("GET", path, headers={"Accept": accept})
        answer = conn.getresponse()
        return answer.status, answer.getheader("Content-Type") or "", answer.read()
    finally:
        forward.close()


def _proxy(lab: Lab, name: str, path: str) -> tuple[int, Any, dict[str, str]]:
    return call(lab.api, "GET", f"/api/v1/namespaces/default/services/"
                                f"workspace-{name}-service:8888/proxy{path}")


def test_the_editor_serves_the_mounted_bucket_under_its_base_path_only(lab, name):
    lab.s3.put_object(Bucket=BUCKET, Key=f"data/{name}.csv", Body=b"a,b\n1,2\n")
    _create(lab, name)
    status = _available(lab, name)["status"]
    base = f"/s/{CLUSTER}/default/{name}/"
    # hypd's access strategy rendered by the controller: the router's URL, the probe's base
    assert status["accessURL"] == f"{SPACES_URL}{base}"
    assert status["applicationBasePath"] == base.rstrip("/")
    code, kind, body = _forward(lab, name, base)
    assert code == 200 and kind.startswith("application/json"), body
    listing = json.loads(body)
    assert (listing["bucket"], listing["mount"]) == (BUCKET, "/s3")
    assert {"path": f"data/{name}.csv", "size": 8} in listing["files"]
    code, kind, page = _forward(lab, name, f"{base}lab/tree?reset", accept="text/html")
    assert code == 200 and kind.startswith("text/html")
    assert f"data/{name}.csv" in page.decode()
    # outside its base path the server holds no route, as Jupyter answers
    for outside in ("/", "/api/status", "/lab", f"/workspaces/default/{name}/"):
        assert _forward(lab, name, outside)[0] == 404, outside
    # the server's status under the base, where the idle detector (and hypd) read the last
    # activity, through the API server's service proxy
    code, answer, _ = _proxy(lab, name, f"{base}api/status")
    assert code == 200 and answer["last_activity"].endswith("Z")
    assert _proxy(lab, name, "/api/status")[0] == 404
    # hypd's read of it: under the rendered base path, else the space's own on its cluster
    workspace = lab.workspace(name)
    assert spaces.last_activity(lab.api, workspace) is not None
    unrendered = {**workspace, "status": {"serviceName": status["serviceName"]}}
    assert spaces.last_activity(lab.api, unrendered, CLUSTER) is not None
    assert spaces.last_activity(lab.api, unrendered) is None  # `/api/status`: 404


def test_code_editor_serves_under_its_server_base_path(lab, name):
    _create(lab, name, appType="code-editor")
    _available(lab, name)
    base = f"/s/{CLUSTER}/default/{name}/"
    assert _forward(lab, name, base)[0] == 200
    assert _forward(lab, name, "/")[0] == 404
    # SageMaker's --base-path alone shapes only the browser's URLs: served at the root
    config = spaces.container_config("code-editor", base)
    args = config["args"]
    at = args.index("--server-base-path")
    other = f"{name}-b"
    _create(lab, other, appType="code-editor",
            containerConfig={**config, "args": args[:at] + args[at + 2:]})
    _available(lab, other)
    assert _forward(lab, other, "/")[0] == 200


ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
"""JavaScript's `toISOString()`, what Code Editor's idle route answers."""


def test_code_editor_reports_its_activity_at_its_root_only(lab, name):
    """SageMaker's Code Editor matches `/api/idle` against the whole path (not under its
    `--server-base-path`) and has no `api/status`; asking it is not activity."""
    _create(lab, name, appType="code-editor")
    status = _available(lab, name)["status"]
    base = f"/s/{CLUSTER}/default/{name}/"
    # hypd-web-root: the router's URL, and no base path for the operator's probe
    assert status["accessURL"] == f"{SPACES_URL}{base}"
    assert "applicationBasePath" not in status
    code, kind, body = _forward(lab, name, "/api/idle")
    assert code == 200 and kind.startswith("application/json"), body
    first = json.loads(body)
    assert set(first) == {"lastActiveTimestamp"} and ISO_MS.match(first["lastActiveTimestamp"])
    for elsewhere in (f"{base}api/idle", f"{base}api/status", "/api/status"):
        code, kind, body = _forward(lab, name, elsewhere)
        assert (code, kind, body) == (404, "text/plain", b"Not found."), elsewhere
    # the service proxy (the operator's probe, hypd's read) reaches the same route
    code, answer, _ = _proxy(lab, name, "/api/idle")
    assert code == 200 and answer == first
    lab.control.advance_clock(600)
    assert json.loads(_forward(lab, name, "/api/idle")[2]) == first  # not activity
    assert _forward(lab, name, base)[0] == 200  # the editor used: activity
    later = json.loads(_forward(lab, name, "/api/idle")[2])["lastActiveTimestamp"]
    assert later > first["lastActiveTimestamp"]
    # hypd's read of it: at the root, whatever the path the editor serves under
    workspace = lab.workspace(name)
    read = spaces.last_activity(lab.api, workspace, CLUSTER)
    assert read is not None and read.isoformat().startswith(later[:19])
    assert spaces.last_activity(lab.api, workspace) == read
    assert spaces.access(workspace, CLUSTER)["local_url"] == f"http://localhost:8888{base}"
    # JupyterLab's reads find nothing there (the route it asks is 404 on Code Editor)
    as_lab = {**workspace, "spec": {**workspace["spec"], "appType": "jupyterlab"}}
    assert spaces.last_activity(lab.api, as_lab, CLUSTER) is None


@pytest.mark.parametrize(("argv", "base"), [
    (["jupyter-lab", "--ServerApp.base_url=/s/c/ns/n/"], "/s/c/ns/n/"),
    (["jupyter-lab", "--ServerApp.base_url", "/s/c/ns/n"], "/s/c/ns/n/"),
    (["sagemaker-code-editor", "--server-base-path=/s/c/ns/n/"], "/s/c/ns/n/"),
    (["sagemaker-code-editor", "--base-path", "/s/c/ns/n/"], "/"),
    (["jupyter-lab", "--no-browser"], "/"),
], ids=["lab-equals", "lab-spaced", "code-editor", "client-base-only", "none"])
def test_the_server_reads_its_base_path_as_the_editors_do(argv, base):
    from sandbox.simulator.workspace_server import base_path as served

    assert served(argv) == base


def test_the_cluster_endpoint_routes_no_workspace(lab, name):
    """An EKS endpoint serves the Kubernetes API only: a workspace's path there is an
    unknown path — 403 to a caller without a token, 404 to a cluster admin."""
    _create(lab, name)
    _available(lab, name)
    for path in (f"/workspaces/default/{name}/", f"/s/{CLUSTER}/default/{name}/"):
        assert _get(lab.kube.url + path)[0] == 403, path
        assert call(lab.api, "GET", path)[0] == 404, path


def test_a_stopped_workspace_has_no_pod_and_no_server(lab, name):
    _create(lab, name)
    _available(lab, name)
    base = f"/s/{CLUSTER}/default/{name}/"
    _set_desired(lab, name, "Stopped")
    wait_until(lambda: lab.condition(name, "Stopped").get("status") == "True", 15,
               what="Stopped")
    workspace = lab.workspace(name)
    assert lab.condition(name, "Stopped")["reason"] == "AllResourcesStopped"
    assert lab.condition(name, "Available")["reason"] == "DesiredStateStopped"
    assert "accessURL" not in workspace["status"]
    assert "deploymentName" not in workspace["status"]
    assert lab.pods(name) == []
    assert lab.kube.get_object("apps/v1", "Deployment", f"workspace-{name}") is None
    assert lab.kube.get_object("v1", "PersistentVolumeClaim", f"workspace-{name}-pvc")
    assert _proxy(lab, name, f"{base}api/status")[0] == 404  # its Service is gone
    _set_desired(lab, name, "Running")
    _available(lab, name)
    assert lab.condition(name, "Stopped")["status"] == "False"
    assert _forward(lab, name, base)[0] == 200


@pytest.mark.parametrize("probe", [
    None, PROBES["code-editor"], {"path": "/api/idle", "port": 8888}],
    ids=["jupyterlab", "code-editor", "code-editor-upstream-defaults"])
def test_an_idle_workspace_stops_itself_when_the_clock_passes_its_timeout(lab, name, probe):
    """JupyterLab's probe, Code Editor's as hypd writes it, and Code Editor's as jupyter-k8s's
    own samples write it (the default responseBodyPath `lastActiveTimestamp` and format)."""
    if probe is None:
        _create(lab, name)  # idle after 600 minutes (36,000 simulated seconds)
        used = f"/s/{CLUSTER}/default/{name}/lab"
    else:
        _create(lab, name, appType="code-editor", idleShutdown={
            "enabled": True, "idleTimeoutInMinutes": 600, "detection": {"httpGet": probe}})
        used = f"/s/{CLUSTER}/default/{name}/"
    _available(lab, name)
    lab.control.advance_clock(20_000)
    # activity: the timeout counts from here
    assert _forward(lab, name, used)[0] == 200
    lab.control.advance_clock(20_000)  # 40,000 s since it started, 20,000 since activity
    time.sleep(0.5)  # the controller looks at once; nothing to stop yet
    assert lab.workspace(name)["spec"]["desiredStatus"] == "Running"
    assert lab.condition(name, "Available")["status"] == "True"
    lab.control.advance_clock(20_000)  # 16,000 s of real time short: only the jump stops it
    wait_until(lambda: lab.workspace(name)["spec"]["desiredStatus"] == "Stopped", 5,
               what="the controller stopping the idle workspace")
    wait_until(lambda: lab.condition(name, "Stopped").get("status") == "True", 10,
               what="Stopped")
    events = k8s.CoreV1Api(lab.api).list_namespaced_event(
        "default", field_selector=f"involvedObject.name={name}").items
    assert "Stopping workspace due to idle timeout of 600 minutes" in [e.message for e in events]


def test_a_workspace_bigger_than_any_node_stays_pending(lab, name):
    _create(lab, name, resources={"requests": {"cpu": "64", "memory": "8Gi"}})
    wait_until(lambda: lab.pods(name), 10, what="the pod")
    (pod,) = lab.pods(name)

    def refused() -> list[str]:
        events = k8s.CoreV1Api(lab.api).list_namespaced_event(
            "default", field_selector=f"involvedObject.name={pod.metadata.name}").items
        return [e.message for e in events if e.reason == "FailedScheduling"]

    wait_until(lambda: any("Insufficient cpu" in m for m in refused()), 10,
               what="the scheduler's FailedScheduling")
    assert lab.pods(name)[0].status.phase == "Pending"
    available = lab.condition(name, "Available")
    # upstream reports ResourcesNotReady while compute is not ready (it checks access only
    # once compute and service are up, so ComputeNotReady never shows on this path)
    assert (available["status"], available["reason"]) == ("False", "ResourcesNotReady")
    assert lab.condition(name, "Progressing")["status"] == "True"


def test_a_deleted_workspace_takes_its_objects_then_goes(lab, name):
    _create(lab, name)
    _available(lab, name)
    lab.custom.delete_namespaced_custom_object(GROUP, VERSION, "default", "workspaces", name)

    def gone() -> bool:
        try:
            lab.workspace(name)
        except k8s.ApiException as exc:
            return exc.status == 404
        return False

    wait_until(gone, 10, what="the workspace gone")
    for api_version, kind, obj in (("apps/v1", "Deployment", f"workspace-{name}"),
                                   ("v1", "Service", f"workspace-{name}-service"),
                                   ("v1", "PersistentVolumeClaim", f"workspace-{name}-pvc")):
        assert lab.kube.get_object(api_version, kind, obj) is None, kind
    assert lab.pods(name) == []


def _objects(lab: Lab, prefix: str) -> dict[str, bytes]:
    found = lab.s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents") or []
    return {o["Key"]: lab.s3.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read()
            for o in found}


def test_a_containers_script_writes_its_file_into_the_bucket(lab, name):
    script = (f"mkdir -p /s3/out/{name} && echo x > /s3/out/{name}/a.txt && "
              f"echo y >> /s3/out/{name}/a.txt && echo not kept > /tmp/b.txt")
    k8s.BatchV1Api(lab.api).create_namespaced_job("default", {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"backoffLimit": 0, "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", script],
                            "volumeMounts": [storage.volume_mount()]}],
            "volumes": [storage.pod_volume()]}}}})
    wait_until(lambda: _objects(lab, f"out/{name}/"), 10, what="the file in the bucket")
    assert _objects(lab, f"out/{name}/") == {f"out/{name}/a.txt": b"x\ny\n"}


@pytest.mark.parametrize("recipe", ["ray", "pytorch"])
def test_a_hypd_job_writes_under_s3_and_the_workspace_lists_it(lab, name, recipe):
    """The data contract end to end: a job made by hypd's own recipes — `ray` with the body
    {"recipe": "ray", "command": ["sh", "-c", "echo … > $HYPD_OUTPUT_DIR/result.txt"]}, or
    `pytorch` with `hyperpodrun … --no-python sh -c "…"` — writes a file under /s3; the
    workspace's URL lists it."""
    lab.kube.put_object(Crd("ray.io", "RayJob", "rayjobs").manifest())
    lab.kube.put_object(Crd("sagemaker.amazonaws.com", "HyperPodPyTorchJob",
                            "hyperpodpytorchjobs").manifest())
    script = ["sh", "-c", f"echo hello from {name} > $HYPD_OUTPUT_DIR/result.txt"]
    command = script if recipe == "ray" else [
        "hyperpodrun", "--nnodes=1", "--nproc-per-node=1", "--no-python", *script]
    spec = JobSpec(name=name, namespace="default", recipe=recipe, image="rayproject/ray:2.9.0",
                   command=())
    built = recipes.build(recipe, spec, {"command": command})
    lab.kube.put_object(built.manifest)
    key = f"jobs/{name}/output/result.txt"
    wait_until(lambda: _objects(lab, key), 15, what="the job's file in the bucket")
    assert _objects(lab, key) == {key: f"hello from {name}\n".encode()}
    space = f"{name}-ws"
    _create(lab, space)
    _available(lab, space)
    listing = json.loads(_forward(lab, space, base_path(CLUSTER, "default", space))[2])
    assert key in [f["path"] for f in listing["files"]]


def test_only_standard_output_to_a_file_is_written():
    """The shell rule behind the writes: `>F`, `> F`, `1>F`, `>> F` send echo's line to the
    file (not the log); `2>&1`, `2> F` and `<` do not; without a file sink nothing changes."""
    from sandbox.simulator.programs import from_command_line

    written: list[tuple[str, str, bool]] = []

    def files(path: str, text: str, append: bool) -> None:
        written.append((path, text, append))

    script = ("echo a >/s3/a; echo -n b > /s3/b; echo c 1>/s3/c; echo d >> /s3/d; "
              "echo e 2>&1; echo f 2> /s3/f; echo g < /s3/g")
    program = from_command_line({"command": ["sh", "-c", script]}, files)
    assert written == [("/s3/a", "a\n", False), ("/s3/b", "b", False), ("/s3/c", "c\n", False),
                       ("/s3/d", "d\n", True)]
    assert [line.text for line in program.lines if line.text] == ["e", "f", "g"]
    plain = from_command_line({"command": ["sh", "-c", script]})
    assert [line.text for line in plain.lines] == list("abcdefg")
