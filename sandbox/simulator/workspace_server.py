"""A workspace's editor server as the sandbox plays it (what the `workspace` container of a
Workspace's pod runs, port 8888).

Which editor: the container's program — `sagemaker-code-editor` (the first word of its
command, as cloud/spaces.py starts it) is Code Editor; anything else JupyterLab. The pod
carries no app type of its own (the operator copies the Workspace's labels, not its
`appType`). It serves under the base path its command line gives, as the editors do:
JupyterLab's `--ServerApp.base_url=P` (or `--ServerApp.base_url P`), Code Editor's
`--server-base-path P` (VS Code's flag its routes follow; SageMaker's own `--base-path` only
shapes the browser's URLs); none given: `/`.

JupyterLab, under P:
- `GET <P>api/status` answers as Jupyter Server does — `{"started", "last_activity",
  "connections", "kernels"}`, times in RFC 3339 — and is not itself activity (the idle
  detector polls it).

Code Editor:
- `GET /api/idle`, at the root whatever P is, answers `{"lastActiveTimestamp": …}` in
  JavaScript's `toISOString()` form (`2025-05-15T10:00:00.000Z`) and is not itself
  activity; it has no `api/status`, nor any `api/` route under P (404). The real server
  matches its idle route against the request's unstripped path (aws/sagemaker-code-editor
  branch 1.6, e893c583, patched-vscode/src/vs/server/node/webClientServer.ts `_idleRoute`,
  `handle`, `_handleIdle`; remoteExtensionHostAgentServer.ts `handleRequest` passes the web
  client server the unstripped URL), and reads the timestamp from the file its idle
  extension writes on editor activity (created at the first ask). Its 404s are VS Code's
  plain `Not found.` (`serveError`).

Both, under P: any other GET is activity (here any request the editor serves; the real Code
Editor counts editing, selection and terminal use), and answers a small page listing the
files of the bucket mounted at /s3 in that pod (`s3files`: the mount's claim → its volume →
the Mountpoint bucket and prefix → the objects in the local AWS's S3), as JSON when the
request accepts `application/json`; other methods are 405.

Anything outside the base path is 404, as Jupyter answers a path its routes do not hold.
Nothing routes to it from outside the cluster: it is reached through the API server —
`pods/portforward` (kube/portforward.py, how hypd's spaces router reaches a space) or the
service proxy (the idle detector, `last_activity_of`).

Last activity starts when the server is first asked (the controller asks as soon as the
workspace is Available) and is kept per pod: a restarted workspace is a new server. Times
are the sandbox clock's (simulated seconds), written as wall-clock RFC 3339 from the moment
the clock started.
"""

from __future__ import annotations

import datetime
import html
import json
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from sandbox.kube.errors import KubeError
from sandbox.simulator import s3files
from sandbox.simulator.programs import HttpServer, Line, Program

if TYPE_CHECKING:
    from sandbox.simulator.cluster import ClusterSimulator

PORT = 8888
MOUNT = "/s3"
BASE_FLAGS = ("--ServerApp.base_url", "--server-base-path")
"""The flags that set the path an editor serves under (JupyterLab's, Code Editor's)."""
NOT_FOUND = "<html><title>404: Not Found</title><body>404: Not Found</body></html>"
"""Tornado's own answer to a path no route holds (Jupyter Server's, outside its base URL)."""
NOT_FOUND_PLAIN = "Not found."
"""VS Code's server's answer to a path no route holds (Code Editor's, text/plain)."""
CODE_EDITOR_PROGRAM = "sagemaker-code-editor"
IDLE_ROUTE = "/api/idle"
"""Code Editor's last-activity route, at the server's root whatever its base path."""
DEFAULT_BODY_PATH = "lastActiveTimestamp"
"""The operator's default `lastActivityTimestamp.responseBodyPath` (jupyter-k8s
internal/controller/idle_detectors.go `defaultResponseBodyPath`)."""
NAME_LABEL = "workspace.jupyter.org/workspace-name"
Answer = tuple[int, str, bytes]


def _md(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _json(status: int, body: Any) -> Answer:
    return status, "application/json", json.dumps(body).encode()


def base_path(argv: Sequence[str]) -> str:
    """The path an editor's command line serves it under (`/` when it names none), with a
    trailing slash as Jupyter Server normalizes its base URL."""
    found = "/"
    for i, arg in enumerate(argv):
        for flag in BASE_FLAGS:
            if arg.startswith(flag + "="):
                found = arg[len(flag) + 1:]
            elif arg == flag and i + 1 < len(argv):
                found = argv[i + 1]
    return "/" + found.strip("/") + "/" if found.strip("/") else "/"


class WorkspaceServer:
    """Every workspace server of one cluster."""

    def __init__(self, sim: ClusterSimulator, now: Callable[[], float]) -> None:
        self.sim = sim
        self.now = now
        self._epoch: float | None = None  # wall-clock seconds at simulated second 0
        self._started: dict[str, float] = {}  # pod uid → when its server was first asked
        self._activity: dict[str, float] = {}  # pod uid → its last activity

    # --- time -----------------------------------------------------------------------------

    def rfc3339(self, simulated: float, digits: int = 6) -> str:
        """Wall-clock RFC 3339 in UTC with `digits` of the second (6: Python's and Jupyter
        Server's microseconds; 3: JavaScript's `toISOString()`)."""
        if self._epoch is None:
            self._epoch = time.time() - self.now()
        moment = datetime.datetime.fromtimestamp(self._epoch + simulated, datetime.UTC)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:20 + digits] + "Z"

    def simulated(self, text: str, fmt: str = "RFC3339") -> float | None:
        """Simulated seconds of a timestamp the server wrote (RFC 3339 or unix seconds)."""
        if self._epoch is None:
            self._epoch = time.time() - self.now()
        try:
            wall = float(text) if fmt == "unix" else datetime.datetime.fromisoformat(
                text.replace("Z", "+00:00")).timestamp()
        except (TypeError, ValueError):
            return None
        return wall - self._epoch

    # --- the server -------------------------------------------------------------------------

    @staticmethod
    def workspace_of(pod: dict[str, Any]) -> str | None:
        found = _md(pod).get("labels") or {}
        if found.get("app") == "jupyter" and \
                found.get("workspace.jupyter.org/component") == "workspace":
            return found.get(NAME_LABEL)
        return None

    @staticmethod
    def _container(pod: dict[str, Any]) -> dict[str, Any]:
        return next((c for c in (pod.get("spec") or {}).get("containers") or []
                     if c.get("name") == "workspace"), {})

    @classmethod
    def base_of(cls, pod: dict[str, Any]) -> str:
        """The path the pod's `workspace` container serves under (its command and args)."""
        container = cls._container(pod)
        return base_path([*(container.get("command") or []), *(container.get("args") or [])])

    @classmethod
    def is_code_editor(cls, pod: dict[str, Any]) -> bool:
        """Whether the pod's `workspace` container runs SageMaker's Code Editor (its
        program, the first word of its command line)."""
        container = cls._container(pod)
        argv = [*(container.get("command") or []), *(container.get("args") or [])]
        return bool(argv) and str(argv[0]).rsplit("/", 1)[-1] == CODE_EDITOR_PROGRAM

    def program(self, pod: dict[str, Any]) -> Program:
        name, base = _md(pod).get("name"), self.base_of(pod)
        if self.is_code_editor(pod):
            lines = (Line(0.0, f"Web UI available at http://localhost:{PORT}{base}"),)
        else:
            lines = (Line(0.0, "[I ServerApp] Jupyter Server is running at:"),
                     Line(0.0, f"[I ServerApp] http://{name}:{PORT}{base}lab"))
        return Program(lines=lines, exit_code=None, serves=HttpServer(
            PORT, lambda path, method, body, headers: self.handle(pod, path, method, headers,
                                                                  base)))

    def handle(self, pod: dict[str, Any], path: str, method: str,
               headers: dict[str, str], base: str = "/") -> Answer:
        path = urlsplit(path).path or "/"
        code_editor = self.is_code_editor(pod)
        not_found: Answer = (404, "text/plain", NOT_FOUND_PLAIN.encode()) if code_editor \
            else (404, "text/html", NOT_FOUND.encode())
        if not path.startswith(base) and not (code_editor and path == IDLE_ROUTE):
            return not_found
        uid = str(_md(pod).get("uid"))
        now = self.now()
        started = self._started.setdefault(uid, now)
        last = self._activity.setdefault(uid, now)
        if method != "GET":
            return _json(405, {"message": "Method Not Allowed", "reason": None})
        if code_editor and path == IDLE_ROUTE:
            return _json(200, {"lastActiveTimestamp": self.rfc3339(last, digits=3)})
        if code_editor and path[len(base):].startswith("api/"):
            return not_found  # its only `api/` routes are at the root
        if path[len(base):].rstrip("/") == "api/status":
            return _json(200, {"started": self.rfc3339(started),
                               "last_activity": self.rfc3339(last),
                               "connections": 0, "kernels": 0})
        self._activity[uid] = now
        listing = self.listing(pod)
        accept = next((v for k, v in headers.items() if k.lower() == "accept"), "")
        if "application/json" in accept:
            return _json(200, listing)
        return 200, "text/html", _page(listing).encode()

    def listing(self, pod: dict[str, Any]) -> dict[str, Any]:
        """The files of the bucket mounted at /s3 in the pod's workspace container."""
        workspace = self.workspace_of(pod)
        container = self._container(pod)
        mount = s3files.mount_at(self.sim.kube, pod, container, MOUNT)
        out: dict[str, Any] = {"workspace": workspace, "namespace": _md(pod).get("namespace"),
                               "mount": MOUNT, "bucket": None, "prefix": "", "files": []}
        if mount is None:
            return out
        out.update(bucket=mount.bucket, prefix=mount.prefix)
        store = self.sim.objects
        found = store.objects(mount.bucket, mount.prefix) if store is not None else None
        out["files"] = sorted(({"path": key[len(mount.prefix):], "size": len(body)}
                               for key, body in found or [] if key[len(mount.prefix):]),
                              key=lambda f: f["path"])
        return out

    def last_activity_of(self, workspace: dict[str, Any], path: str,
                         http_get: dict[str, Any]) -> float | None:
        """What the controller's idle detector reads: GET the path on the workspace's
        Service, the body's `lastActivityTimestamp.responseBodyPath` (upstream's default
        `lastActiveTimestamp`) as its `format` (default RFC3339) in simulated seconds; None
        when the server does not answer or the field is missing."""
        md = _md(workspace)
        stamp = http_get.get("lastActivityTimestamp") or {}
        port = http_get.get("port") or PORT
        try:
            status, _, body = self.sim.workloads.proxy(
                str(md.get("namespace")), f"workspace-{md['name']}-service:{port}", path,
                "GET", b"")
            value: Any = json.loads(body)
        except (KubeError, ValueError):
            return None
        if status != 200:
            return None
        for part in str(stamp.get("responseBodyPath") or DEFAULT_BODY_PATH).split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return None if value is None else self.simulated(str(value), stamp.get("format")
                                                         or "RFC3339")


def _page(listing: dict[str, Any]) -> str:
    title = html.escape(f"{listing['workspace']}: {listing['mount']}")
    if listing["bucket"] is None:
        body = f"<p>Nothing is mounted at {html.escape(listing['mount'])}.</p>"
    else:
        source = html.escape(f"s3://{listing['bucket']}/{listing['prefix']}")
        items = "".join(f"<li>{html.escape(f['path'])} ({f['size']} bytes)</li>"
                        for f in listing["files"]) or "<li>(empty)</li>"
        body = f"<p>{source}</p><ul>{items}</ul>"
    about = ("<p>On AWS this address opens the space's editor (JupyterLab or Code Editor) "
             "through hypd's spaces router. The sandbox plays its server: this page lists "
             "the bucket mounted at /s3 in the space's pod.</p>")
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}"
            f"</title></head><body><main><h1>{title}</h1>{about}{body}</main></body></html>")
