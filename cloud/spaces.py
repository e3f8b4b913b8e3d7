"""Dev spaces as the cluster holds them: one `workspace.jupyter.org/v1alpha1` Workspace per
space, run by the Spaces add-on's operator (jupyter-k8s, the `spaces` managed feature).

What hypd writes (`manifest`): the editor (`appType`) and how it starts (`containerConfig`:
serving under the space's base path `/s/<cluster>/<namespace>/<name>/`, the path hypd's
spaces router forwards unchanged to the space's pod), image, requests and limits, the
instance group as a node selector, a home volume (`storage`, the operator's own PVC
`workspace-<name>-pvc`, kept while the space is stopped), the cluster's bucket claim mounted
at /s3 — the same claim every job mounts, so a job's output is in the space — idle shutdown
read where the editor reports its last activity (`idle_shutdown`, `last_activity`), and the
access strategy the feature installs for its editor (`access_strategy`: `hypd-web` or
`hypd-web-root` in `jupyter-k8s-system`). The owner (a hypd token's name) is the annotation
`hypd.io/owner`: the operator's own `created-by` is the Kubernetes identity that wrote the
object, which is hypd's role for every space. Ownership and access are `Public` because
every person reaches the cluster through hypd's one identity: who may change a space is
hypd's rule (app/api/spaces.py), not the operator's.

What the operator does that we rely on (and the sandbox plays, sandbox/simulator/
workspaces.py): a Deployment `workspace-<name>` of one pod (none while `desiredStatus` is
Stopped), a Service `workspace-<name>-service` on 8888, conditions Available, Progressing,
Degraded and Stopped, `status.accessURL` through the access strategy; idle shutdown sets
`spec.desiredStatus: Stopped` itself. `state` reads hypd's words from those conditions.

A team's space (task governance) goes through the team's queue as a job does: its Workspace
lives in the team's namespace (`hyperpod-ns-<team>`, where the add-on puts the LocalQueue,
with its own claim of the bucket) and carries Kueue's `kueue.x-k8s.io/queue-name` (the team's
LocalQueue) and `kueue.x-k8s.io/priority-class` (the class's WorkloadPriorityClass) labels on
its metadata — where HyperPod's own CLI puts them, and the operator copies every Workspace
label to its Deployment and pod template, so Kueue's deployment (plain pod) integration
queues the one pod: it is created gated (`kueue.x-k8s.io/admission`), gets a Workload of its
own (`pod-<pod>-<hash>`, labelled with the pod's uid) and is scheduled once admitted; a
preempted space's pod is deleted and its Deployment's next pod waits in the queue again.
Sources:
- aws/sagemaker-hyperpod-cli hyperpod-space-template/hyperpod_space_template/v1_1/model.py:
  `hyp create hyp-space --queue-name/--priority` set those two labels on Workspace metadata.
- aws/sagemaker-hyperpod-cli doc/cli/space/cli_space.md: `--queue-name` "Required when task
  governance is enabled on HyperPod EKS clusters".
- jupyter-infra/jupyter-k8s internal/controller/deployment_builder.go (f2670353):
  buildObjectMeta and buildPodLabels copy all Workspace labels to the Deployment and its pods.
- kubernetes-sigs/kueue site/content/en/docs/tasks/run/deployment.md: each pod of a
  Deployment is queued as a single plain Pod (queue-name on the Deployment's labels).
- kubernetes-sigs/kueue site/content/en/docs/tasks/run/plain_pods.md: a queued pod is gated
  until admitted; a preempted one is terminated and deleted.
- docs.aws.amazon.com/sagemaker/latest/dg/task-governance.html ("Task governance for
  Interactive Spaces on HyperPod"): a space's pods are admitted through its team's
  ClusterQueue with its priority class, and borrowed quota can be reclaimed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import MISSING, dataclass
from datetime import UTC, datetime
from typing import Any

import urllib3
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from cloud import kube, queueing, storage
from cloud.errors import Refusal
from vocabulary import spaces
from vocabulary import teams as team_words

API_VERSION = "workspace.jupyter.org/v1alpha1"
KIND = "Workspace"
NAMESPACE = storage.DEFAULT_NAMESPACE
"""Where spaces live: the namespace holding the cluster's bucket claim."""
SPACE_LABEL = "hypd.io/space"
POD_LABEL = "workspace.jupyter.org/workspace-name"
"""The operator's label on a space's pods, naming its Workspace."""
OWNER_ANNOTATION = "hypd.io/owner"
OPERATION_ANNOTATION = "hypd.io/operation"
ACCESS_STRATEGY = {"name": "hypd-web", "namespace": "jupyter-k8s-system"}
"""JupyterLab's access strategy: its `applicationBasePathTemplate` is the space's base path,
under which the operator's idle probe asks."""
ROOT_ACCESS_STRATEGY = {"name": "hypd-web-root", "namespace": "jupyter-k8s-system"}
"""Code Editor's: the same URL, no `applicationBasePathTemplate`, so the probe asks at the
server's root, where Code Editor's idle route is (`idle_shutdown`)."""
STORAGE_CLASS = "hypd-spaces-gp3"
"""The home volume's class, which the spaces feature writes (EBS gp3): new EKS clusters have
no default class."""
PORT = 8888
HOME = "/home/sagemaker-user"
"""The SageMaker Distribution's user home (the operator's default, /home/jovyan, is the
Jupyter Docker stacks' user)."""
S3_VOLUME = "s3"
STATUS_PATH = "api/status"
"""Where JupyterLab reports its last activity (`last_activity`), under its base path (the
operator asks `<applicationBasePath>/api/status`)."""
IDLE_PATH = "/api/idle"
"""Where Code Editor reports its last activity (`lastActiveTimestamp`): at the server's root
whatever its base path (`idle_shutdown`)."""
CODE_EDITOR_DATA = "/opt/amazon/sagemaker/sagemaker-code-editor-server-data"
CODE_EDITOR_USER_DATA = "/opt/amazon/sagemaker/sagemaker-code-editor-user-data"
"""The SageMaker Distribution image's Code Editor server and user data (its extensions and
settings are installed there at build, owned by the image's user)."""
GPU = "nvidia.com/gpu"
INSTANCE_GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
GIB = 2**30


class SpaceNotFound(Refusal):
    default_code = "not_found"


@dataclass(frozen=True)
class Space:
    """A space as asked (a create's body, an update applied to what is there)."""

    name: str
    app_type: str
    image: str
    instance_group: str
    cpu: int
    memory_gib: int
    gpus: int
    home_gib: int
    idle_shutdown_minutes: int | None
    team: str | None = None
    """The team it runs for, through the team's queue (None: no team's)."""
    priority: str | None = None
    """A class of the cluster's scheduler config (with a team)."""

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Space:
        fields = cls.__dataclass_fields__  # a field with a default may be absent (older ops)
        return cls(**{k: params[k] for k in fields
                      if k in params or fields[k].default is MISSING})

    @property
    def namespace(self) -> str:
        """A team's space lives in the team's namespace, where its queue is."""
        return team_words.namespace(self.team) if self.team else NAMESPACE

    def resources(self) -> dict[str, Any]:
        requests: dict[str, str] = {"cpu": str(self.cpu), "memory": f"{self.memory_gib}Gi"}
        limits: dict[str, str] = {"memory": f"{self.memory_gib}Gi"}
        if self.gpus:
            requests[GPU] = limits[GPU] = str(self.gpus)
        return {"requests": requests, "limits": limits}


def container_config(app_type: str, base: str) -> dict[str, list[str]]:
    """How the editor starts (the Workspace's `containerConfig`, command and args as lists):
    on 0.0.0.0:8888, serving under `base` (the space's base path,
    vocabulary.spaces.base_path), with no token or password of its own — hypd's spaces router
    in front of it authenticates every person, and the pod is reached only through the
    Kubernetes API (`pods/portforward`, the service proxy) — and the home volume as the
    folder it opens. Without it the add-on's default template's command would run (an
    entrypoint file only AWS's own access strategy's init container provides).

    JupyterLab: `jupyter-lab` with Jupyter Server 2's options (`ServerApp.token` and
    `ServerApp.password` are deprecated there for `IdentityProvider.token` and
    `PasswordIdentityProvider.hashed_password`: jupyter_server 2.21 serverapp.py and
    auth/identity.py); `ServerApp.allow_remote_access` because the router's Host is not
    the pod's.

    Code Editor: the SageMaker Distribution's `sagemaker-code-editor` with the options its
    own start script gives it (aws/sagemaker-distribution build_artifacts/v3/v3.9/v3.9.10/
    dirs/usr/local/bin/start-code-editor: `--host 0.0.0.0 --port 8888
    --without-connection-token --base-path … --server-data-dir … --extensions-dir …
    --user-data-dir …`; the image's own data dirs, as its branch outside SageMaker Studio
    uses them). `--base-path` is SageMaker's patch (aws/sagemaker-code-editor
    patches/base-path.diff) and only shapes the browser's URLs; the server matches its
    routes under VS Code's `--server-base-path` (patched-vscode/src/vs/server/node/
    serverEnvironmentService.ts, webClientServer.ts: the workbench at exactly that path,
    its static files under it), so both are given. `--accept-server-license-terms` as
    jupyter-k8s's Code Editor samples start it (jupyter-infra/jupyter-k8s config/samples/
    idle-shutdown/templates/03-code-editor-template.yaml); `--default-folder` opens the
    home volume."""
    if app_type == spaces.CODE_EDITOR:
        return {"command": ["sagemaker-code-editor"],
                "args": ["--host", "0.0.0.0", "--port", str(PORT), "--without-connection-token",
                         "--accept-server-license-terms", "--server-base-path", base,
                         "--base-path", base, "--server-data-dir", CODE_EDITOR_DATA,
                         "--extensions-dir", f"{CODE_EDITOR_DATA}/extensions",
                         "--user-data-dir", CODE_EDITOR_USER_DATA, "--default-folder", HOME]}
    return {"command": ["jupyter-lab"],
            "args": ["--no-browser", "--ServerApp.ip=0.0.0.0", f"--ServerApp.port={PORT}",
                     f"--ServerApp.base_url={base}", "--IdentityProvider.token=",
                     "--PasswordIdentityProvider.hashed_password=",
                     "--ServerApp.allow_remote_access=True", f"--ServerApp.root_dir={HOME}"]}


def access_strategy(app_type: str) -> dict[str, str]:
    """The access strategy a space of this editor names: both render the same URL; only
    JupyterLab's sets the base path the operator's idle probe asks under (`idle_shutdown`)."""
    return dict(ROOT_ACCESS_STRATEGY if app_type == spaces.CODE_EDITOR else ACCESS_STRATEGY)


def activity_route(app_type: str) -> tuple[str, str]:
    """Where the editor reports its last activity and the field holding it (an RFC 3339
    string in both): the path is under the editor's base path for JupyterLab (`api/status`,
    relative) and at the server's root for Code Editor (`/api/idle`, absolute)."""
    if app_type == spaces.CODE_EDITOR:
        return IDLE_PATH, "lastActiveTimestamp"
    return STATUS_PATH, "last_activity"


def idle_shutdown(space: Space) -> dict[str, Any]:
    """The Workspace's `idleShutdown`: the operator asks `<status.applicationBasePath><path>`
    (its access strategy's base path, rendered; none: the path alone) on the space's Service
    and reads `responseBodyPath` as `format` (jupyter-infra/jupyter-k8s
    internal/controller/idle_detectors.go, f2670353: resolveIdlePath, handleHTTPResponseCommon
    — a 404 stops the checks for good; parseTimestamp takes fractional RFC 3339).

    JupyterLab: Jupyter Server's `api/status` under its base path (`hypd-web` renders
    `applicationBasePath`), `last_activity` in RFC 3339.

    Code Editor: SageMaker's Code Editor has no `api/status`; its idle route is `/api/idle`,
    matched against the request's whole path — the server strips its base path only for
    its own routes (`/version`, `/vscode-remote-resource`) and hands the web client server
    the unstripped URL, which compares `pathname === '/api/idle'` — so it answers at the
    root only, never under `--server-base-path` (aws/sagemaker-code-editor, branch 1.6,
    e893c583, and main, 1b62e922: patched-vscode/src/vs/server/node/webClientServer.ts
    `_idleRoute`, `handle`, `_handleIdle`; remoteExtensionHostAgentServer.ts
    `handleRequest`). It answers `{"lastActiveTimestamp": "<JavaScript toISOString(), e.g.
    2025-05-15T10:00:00.000Z>"}`: the file /tmp/.sagemaker-last-active-timestamp, written by
    the idle extension on editing, selection and terminal activity
    (patched-vscode/extensions/sagemaker-idle-extension/src/extension.ts) and created at the
    first ask. So a Code Editor space names `hypd-web-root` (no base path: the operator asks
    at the root) and probes `/api/idle` for `lastActiveTimestamp` — as jupyter-k8s's own
    Code Editor samples probe it with no access strategy (config/samples/idle-shutdown/
    templates/03-code-editor-template.yaml and workspaces/01-simple-workspace.yaml: path
    `/api/idle`, the default responseBodyPath `lastActiveTimestamp` and format RFC3339),
    written out here rather than left to the defaults."""
    path, field = activity_route(space.app_type)
    return {
        "enabled": space.idle_shutdown_minutes is not None,
        "idleTimeoutInMinutes": space.idle_shutdown_minutes or 60,
        "detection": {"httpGet": {
            "path": "/" + path.lstrip("/"), "port": PORT,
            "lastActivityTimestamp": {"responseBodyPath": field, "format": "RFC3339"}}},
    }


def manifest(space: Space, cluster: str, owner: str, op_id: str,
             desired: str) -> dict[str, Any]:
    """The Workspace of a space on hypd's cluster `cluster` (a whole object, applied
    server-side by name): its editor serves under the space's base path
    (`container_config`)."""
    base = spaces.base_path(cluster, space.namespace, space.name)
    return kube.stamped({
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": space.name, "namespace": space.namespace,
                     "labels": kube.labels({SPACE_LABEL: space.name, **team_words.queue_labels(
                         space.team, space.priority)}),
                     "annotations": {OWNER_ANNOTATION: owner, OPERATION_ANNOTATION: op_id}},
        "spec": {
            "displayName": space.name,
            "appType": space.app_type,
            "image": space.image,
            "containerConfig": container_config(space.app_type, base),
            "desiredStatus": desired,
            "resources": space.resources(),
            "nodeSelector": {INSTANCE_GROUP_LABEL: space.instance_group},
            "storage": {"size": f"{space.home_gib}Gi", "mountPath": HOME,
                        "storageClassName": STORAGE_CLASS},
            "volumes": [{"name": S3_VOLUME, "persistentVolumeClaimName": storage.DEFAULT_CLAIM,
                         "mountPath": storage.DEFAULT_MOUNT_PATH}],
            "idleShutdown": idle_shutdown(space),
            "accessStrategy": access_strategy(space.app_type),
            "accessType": "Public",
            "ownershipType": "Public",
        },
    })


def _md(obj: Mapping[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def namespace_of(ws: Mapping[str, Any]) -> str:
    return _md(ws).get("namespace") or NAMESPACE


def find(api: ApiClient, name: str) -> dict[str, Any] | None:
    """hypd's Workspace of that name in any namespace (a team's space is in the team's), or
    None."""
    found = kube.list_objects(api, API_VERSION, KIND, None, label_selector={
        kube.MANAGED_BY_LABEL: kube.MANAGED_BY_VALUE, SPACE_LABEL: name})
    return next((w for w in found if _md(w).get("name") == name), None)


def require(api: ApiClient, cluster: str, name: str) -> dict[str, Any]:
    found = find(api, name)
    if found is None:
        raise SpaceNotFound(f"cluster {cluster} has no space {name!r}")
    return found


def listing(api: ApiClient) -> list[dict[str, Any]]:
    """hypd's Workspaces in every namespace (an empty list where the operator is not
    installed)."""
    found = kube.list_objects(api, API_VERSION, KIND, None,
                              label_selector={kube.MANAGED_BY_LABEL: kube.MANAGED_BY_VALUE})
    return sorted(found, key=lambda w: _md(w)["name"])


def owner(ws: Mapping[str, Any]) -> str | None:
    return (_md(ws).get("annotations") or {}).get(OWNER_ANNOTATION)


def desired(ws: Mapping[str, Any]) -> str:
    return (ws.get("spec") or {}).get("desiredStatus") or spaces.DESIRED_RUNNING


def _condition(ws: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in (ws.get("status") or {}).get("conditions") or []
                 if c.get("type") == kind), None)


def _is(ws: Mapping[str, Any], kind: str) -> bool:
    return (_condition(ws, kind) or {}).get("status") == "True"


def state(ws: Mapping[str, Any]) -> tuple[str, str | None]:
    """hypd's word for the Workspace's state, and the operator's message for it."""
    if _md(ws).get("deletionTimestamp"):
        return spaces.DELETING, None
    degraded = _condition(ws, "Degraded")
    if degraded and degraded.get("status") == "True":
        return spaces.FAILED, degraded.get("message")
    if desired(ws) == spaces.DESIRED_STOPPED:
        if _is(ws, "Stopped"):
            return spaces.STOPPED, (_condition(ws, "Stopped") or {}).get("message")
        return spaces.STOPPING, (_condition(ws, "Progressing") or {}).get("message")
    if _is(ws, "Available"):
        return spaces.RUNNING, (_condition(ws, "Available") or {}).get("message")
    return spaces.STARTING, ((_condition(ws, "Available") or {}).get("message")
                             or (_condition(ws, "Progressing") or {}).get("message"))


def pods(api: ApiClient, name: str, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """The space's pods (one while it runs; its predecessor too while a change rolls)."""
    found = kube.list_objects(api, "v1", "Pod", namespace,
                              label_selector={POD_LABEL: name})
    return sorted(found, key=lambda p: _md(p)["name"])


def service(ws: Mapping[str, Any]) -> str:
    return (ws.get("status") or {}).get("serviceName") or f"workspace-{_md(ws)['name']}-service"


def served_path(ws: Mapping[str, Any], cluster: str | None = None) -> str:
    """The path the space's editor serves under: the operator's `status.applicationBasePath`
    (JupyterLab's access strategy's, rendered; Code Editor's strategy renders none), else the
    space's base path on `cluster`, else `/` (a Workspace whose editor was given no base
    path)."""
    rendered = (ws.get("status") or {}).get("applicationBasePath")
    if rendered:
        return rendered.rstrip("/") + "/"
    if cluster:
        return spaces.base_path(cluster, namespace_of(ws), _md(ws)["name"])
    return "/"


def last_activity(api: ApiClient, ws: Mapping[str, Any],
                  cluster: str | None = None) -> datetime | None:
    """The editor's last activity, asked of the editor itself where idle shutdown reads it
    (`activity_route`: JupyterLab's `api/status` under the path it serves under,
    `served_path`; Code Editor's `/api/idle` at its root) through the API server's service
    proxy; None when it does not run or does not answer."""
    path, field = activity_route((ws.get("spec") or {}).get("appType") or spaces.JUPYTERLAB)
    if not path.startswith("/"):
        path = served_path(ws, cluster) + path
    try:
        status, raw = kube.service_proxy(api, namespace_of(ws), service(ws), str(PORT),
                                         path, None, 65536)
    except (kube.KubeError, OSError, urllib3.exceptions.HTTPError, ApiException):
        return None  # an editor that does not answer has no activity to show
    if status != 200:
        return None
    try:
        stamp = json.loads(raw).get(field)
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except (ValueError, AttributeError, TypeError):
        return None


def idle_minutes(at: datetime | None, now: datetime | None = None) -> int | None:
    if at is None:
        return None
    now = now or datetime.now(UTC)
    return max(0, int((now - at).total_seconds() // 60))


def access(ws: Mapping[str, Any], cluster: str | None = None) -> dict[str, Any]:
    """How a person reaches the editor: the access strategy's URL (no token in it: hypd's
    spaces router signs a person in), and the port-forward a remote IDE or a browser without
    the router uses, with the address it then answers at (the editor serves under its base
    path there too)."""
    svc, namespace = service(ws), namespace_of(ws)
    return {"url": (ws.get("status") or {}).get("accessURL"),
            "port_forward": ["kubectl", "port-forward", "-n", namespace, f"service/{svc}",
                             f"{PORT}:{PORT}"],
            "local_url": f"http://localhost:{PORT}{served_path(ws, cluster)}",
            "service": f"{namespace}/{svc}:{PORT}"}


def _quantity_gib(value: Any) -> int | None:
    text = str(value or "")
    if text.endswith("Gi") and text[:-2].isdigit():
        return int(text[:-2])
    return None


def asked(ws: Mapping[str, Any]) -> Space:
    """The space as its Workspace asks it (what an update changes from)."""
    spec = ws.get("spec") or {}
    requests = (spec.get("resources") or {}).get("requests") or {}
    idle = spec.get("idleShutdown") or {}
    team, priority = queueing.team_of(ws)
    return Space(
        name=_md(ws)["name"], app_type=spec.get("appType") or spaces.JUPYTERLAB,
        image=spec.get("image") or "",
        instance_group=(spec.get("nodeSelector") or {}).get(INSTANCE_GROUP_LABEL) or "",
        cpu=int(str(requests.get("cpu") or "0").rstrip("m") or 0),
        memory_gib=_quantity_gib(requests.get("memory")) or 0,
        gpus=int(requests.get(GPU) or 0),
        home_gib=_quantity_gib((spec.get("storage") or {}).get("size")) or 0,
        idle_shutdown_minutes=int(idle.get("idleTimeoutInMinutes") or 0)
        if idle.get("enabled") else None, team=team, priority=priority)
