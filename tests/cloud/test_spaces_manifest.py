"""A space's Workspace as cloud/spaces.py builds it: its editor starts serving under the
space's base path (`/s/<cluster>/<namespace>/<name>/`, where hypd's spaces router forwards
the space's requests unchanged) with no token of its own; with task governance, a team's
space is made in the team's namespace and carries Kueue's queue and priority-class labels on
its metadata — where HyperPod's CLI (`hyp create hyp-space --queue-name/--priority`) puts
them and whence the jupyter-k8s operator copies them to its Deployment and pod — and the
Workspace stays valid against the real CRD as a closed schema."""

from __future__ import annotations

import json

import pytest

from cloud import kube, queueing, spaces
from tests.crdkit import validate
from vocabulary import spaces as words
from vocabulary import teams

WORKSPACE_CRD = "workspace.jupyter.org_workspaces.yaml"


def _space(**extra) -> spaces.Space:
    return spaces.Space.from_params({
        "name": "lab", "app_type": "jupyterlab", "image": "public.ecr.aws/x/y:1",
        "instance_group": "workers", "cpu": 2, "memory_gib": 8, "gpus": 1, "home_gib": 20,
        "idle_shutdown_minutes": 60, **extra})


def _validated(ws: dict) -> dict:
    validate(ws, WORKSPACE_CRD, "v1alpha1")
    return ws


def test_a_team_s_space_carries_its_queue_and_priority_in_the_team_s_namespace():
    ws = _validated(spaces.manifest(_space(team="vision", priority="urgent"), "c1", "ana",
                                    "op_1", "Running"))
    md = ws["metadata"]
    assert md["namespace"] == "hyperpod-ns-vision"
    assert md["labels"]["kueue.x-k8s.io/queue-name"] == "hyperpod-ns-vision-localqueue"
    assert md["labels"]["kueue.x-k8s.io/priority-class"] == "urgent-priority"
    assert md["labels"][kube.MANAGED_BY_LABEL] == kube.MANAGED_BY_VALUE
    assert md["labels"][spaces.SPACE_LABEL] == "lab"
    # read back: the space as asked names its team and class again (an update keeps them)
    asked = spaces.asked(ws)
    assert (asked.team, asked.priority, asked.namespace) == ("vision", "urgent",
                                                             "hyperpod-ns-vision")
    assert queueing.team_of(ws) == ("vision", "urgent")
    assert spaces.access(ws)["service"].startswith("hyperpod-ns-vision/")


def test_a_team_s_space_without_a_priority_has_the_queue_label_only():
    labels = _validated(spaces.manifest(_space(team="vision"), "c1", "ana",
                                        "op_1", "Running"))["metadata"]["labels"]
    assert labels[teams.QUEUE_LABEL] == "hyperpod-ns-vision-localqueue"
    assert teams.PRIORITY_LABEL not in labels


def test_a_space_outside_any_team_is_not_queued():
    ws = _validated(spaces.manifest(_space(), "c1", "ana", "op_1", "Running"))
    assert ws["metadata"]["namespace"] == spaces.NAMESPACE
    assert not {teams.QUEUE_LABEL, teams.PRIORITY_LABEL} & set(ws["metadata"]["labels"])
    assert queueing.team_of(ws) == (None, None)
    assert spaces.asked(ws) == _space()


def _options(args: list[str]) -> dict[str, str]:
    """`--name=value` options as a mapping (a flag without a value maps to "")."""
    return {name: value for name, _, value in (a.partition("=") for a in args)}


def test_base_path_is_the_routers_spelling():
    assert words.base_path("c1", "hyperpod-ns-vision", "lab") == "/s/c1/hyperpod-ns-vision/lab/"
    assert words.base_path("c1", "default", "lab").startswith(words.ROUTE_PREFIX)


def test_jupyterlab_serves_under_the_base_path_with_no_token_of_its_own():
    ws = _validated(spaces.manifest(_space(team="vision"), "c1", "ana", "op_1", "Running"))
    config = ws["spec"]["containerConfig"]
    assert config["command"] == ["jupyter-lab"]  # a list: no shell between
    assert all(isinstance(a, str) for a in config["args"])
    options = _options(config["args"])
    assert options["--ServerApp.base_url"] == "/s/c1/hyperpod-ns-vision/lab/"
    assert (options["--ServerApp.ip"], options["--ServerApp.port"]) == ("0.0.0.0", "8888")
    assert options["--IdentityProvider.token"] == ""
    assert options["--PasswordIdentityProvider.hashed_password"] == ""
    assert options["--ServerApp.allow_remote_access"] == "True"
    assert options["--ServerApp.root_dir"] == spaces.HOME == ws["spec"]["storage"]["mountPath"]
    assert "--no-browser" in config["args"]


def test_code_editor_serves_under_the_base_path_with_no_connection_token():
    ws = _validated(spaces.manifest(_space(app_type="code-editor"), "c1", "ana", "op_1",
                                    "Running"))
    config = ws["spec"]["containerConfig"]
    assert config["command"] == ["sagemaker-code-editor"]
    args = config["args"]
    given = {a: args[i + 1] for i, a in enumerate(args[:-1]) if a.startswith("--")
             and not args[i + 1].startswith("--")}
    # the server's routes follow --server-base-path; --base-path shapes the browser's URLs
    assert given["--server-base-path"] == given["--base-path"] == "/s/c1/default/lab/"
    assert (given["--host"], given["--port"]) == ("0.0.0.0", "8888")
    assert "--without-connection-token" in args
    assert given["--default-folder"] == spaces.HOME
    assert given["--server-data-dir"] == spaces.CODE_EDITOR_DATA


def test_jupyterlab_s_idle_probe_asks_its_status_under_the_base_path_hypd_web_renders():
    ws = _validated(spaces.manifest(_space(), "c1", "ana", "op_1", "Running"))
    probe = ws["spec"]["idleShutdown"]["detection"]["httpGet"]
    assert (probe["path"], probe["port"]) == ("/api/status", 8888)
    assert probe["lastActivityTimestamp"] == {"responseBodyPath": "last_activity",
                                              "format": "RFC3339"}
    assert ws["spec"]["accessStrategy"] == {"name": "hypd-web",
                                            "namespace": "jupyter-k8s-system"}


def test_code_editor_s_idle_probe_asks_its_idle_route_at_the_root():
    """Code Editor answers `/api/idle` at its server's root only: its space names the
    strategy that renders no base path, so the operator asks `/api/idle` itself, and reads
    `lastActiveTimestamp` (an ISO string: RFC3339)."""
    ws = _validated(spaces.manifest(_space(app_type="code-editor"), "c1", "ana", "op_1",
                                    "Running"))
    idle = ws["spec"]["idleShutdown"]
    assert (idle["enabled"], idle["idleTimeoutInMinutes"]) == (True, 60)
    probe = idle["detection"]["httpGet"]
    assert (probe["path"], probe["port"]) == ("/api/idle", 8888)
    assert probe["lastActivityTimestamp"] == {"responseBodyPath": "lastActiveTimestamp",
                                              "format": "RFC3339"}
    assert ws["spec"]["accessStrategy"] == {"name": "hypd-web-root",
                                            "namespace": "jupyter-k8s-system"}
    # it still serves under its base path: the address a port-forward answers at
    assert spaces.access(ws, "c1")["local_url"] == "http://localhost:8888/s/c1/default/lab/"
    assert spaces.asked(ws) == _space(app_type="code-editor")


@pytest.mark.parametrize(("app_type", "status", "path", "body"), [
    ("jupyterlab", {"applicationBasePath": "/s/c1/default/lab"}, "/s/c1/default/lab/api/status",
     {"last_activity": "2026-01-02T03:04:05.123456Z"}),
    ("jupyterlab", {}, "/s/c1/default/lab/api/status",
     {"last_activity": "2026-01-02T03:04:05.123456Z"}),
    ("code-editor", {}, "/api/idle", {"lastActiveTimestamp": "2026-01-02T03:04:05.123Z"}),
], ids=["lab-rendered", "lab-on-its-cluster", "code-editor"])
def test_last_activity_is_read_where_the_editor_reports_it(monkeypatch, app_type, status,
                                                           path, body):
    ws = {**spaces.manifest(_space(app_type=app_type), "c1", "ana", "op_1", "Running"),
          "status": status}
    asked: list[str] = []

    def proxy(api, namespace, service, port, at, query, limit):
        asked.append(at)
        return (200, json.dumps(body).encode()) if at == path else (404, b"Not found.")

    monkeypatch.setattr(kube, "service_proxy", proxy)
    found = spaces.last_activity(object(), ws, "c1")
    assert asked == [path]
    assert found is not None and (found.year, found.second, found.tzinfo is not None) == (
        2026, 5, True)
    assert spaces.access(ws, "c1")["local_url"] == "http://localhost:8888/s/c1/default/lab/"


def test_last_activity_is_read_under_the_path_the_editor_serves_under():
    ws = spaces.manifest(_space(), "c1", "ana", "op_1", "Running")
    assert spaces.served_path(ws, "c1") == "/s/c1/default/lab/"
    rendered = {**ws, "status": {"applicationBasePath": "/s/c1/default/lab"}}
    assert spaces.served_path(rendered) == "/s/c1/default/lab/"
    assert spaces.served_path(ws) == "/"
