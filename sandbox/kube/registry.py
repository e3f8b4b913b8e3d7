"""One local Kubernetes per EKS cluster, served over TLS on 127.0.0.1.

`KubeRegistry` owns one event loop on a daemon thread; each `LocalKube` is a kmock
`KubernetesEmulator` (its object store and bundled resource catalogue) behind the sandbox's
own aiohttp handler (`sandbox.kube.handler`), listening on its own port with its own CA.
The EKS gap starts one when a cluster is created (`ensure`), reports its URL and CA in
DescribeCluster, feeds it the cluster's access entries (`set_access`) and removes it when
the cluster is deleted.

In-process, auth-free methods (`put_object`, `get_object`, `list_objects`, `delete_object`,
`append_log`) are for the sandbox's own simulator, which plays the controllers and kubelets
that are not there.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from aiohttp import web
from kmock import KubernetesEmulator

from sandbox.kube import selectors, tls
from sandbox.kube.access import AccessBook
from sandbox.kube.catalog import Catalog, ResourceType, split_api_version
from sandbox.kube.handler import KubeHandler
from sandbox.kube.logs import LogBook
from sandbox.kube.store import Event, Store
from sandbox.kube.streams import CLOSING, LogWritten

T = TypeVar("T")
DEFAULT_KUBERNETES_VERSION = "1.33"
SIMULATOR_MANAGER = "hypd-sandbox"
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class LocalKube:
    """One cluster's API server. Create through `KubeRegistry.ensure`."""

    def __init__(self, name: str, loop: asyncio.AbstractEventLoop, kubernetes_version: str) -> None:
        self.name = name
        self.kubernetes_version = kubernetes_version
        self._loop = loop
        self._subscribers: set[asyncio.Queue[Any]] = set()
        self._sub_lock = threading.Lock()
        self.emulator = KubernetesEmulator()
        self.catalog = Catalog(self.emulator)
        self.store = Store(self.emulator, self.catalog, self._publish)
        self.store.on_removed.append(self._forget_logs)
        self.access = AccessBook()
        self.logs = LogBook(lambda namespace, pod: self._publish(LogWritten(namespace, pod)))
        self._tls = tls.make()
        self.ca_pem: bytes = self._tls.ca_pem
        self._runner: web.ServerRunner | None = None
        self._port = 0
        # what plays the cluster's controllers (the simulator): start()/stop() on the loop
        self.companions: list[Any] = []
        # the service proxy's far end, set by the simulator: (namespace, "[scheme:]svc:port",
        # path, method, body, headers) -> (status, content type, body)
        self.service_proxy: Callable[..., tuple[int, str, bytes]] | None = None
        # what listens on a pod's port, for pods/portforward (portforward.py), set by the
        # simulator: (pod, port) -> a function of one HTTP request, or None
        self.pod_port: Callable[[dict[str, Any], int], Any] | None = None
        # the local AWS's fault points (a write held before or after the store took it), its
        # injected faults (a write answered 429/5xx instead) and the write log (writes.py)
        self.holds: Any = None
        self.faults: Any = None
        self.writes: Any = None
        for namespace in INITIAL_NAMESPACES:
            self.store.put(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
                "kube-apiserver",
            )

    @property
    def url(self) -> str:
        return f"https://{tls.HOST}:{self._port}"

    @property
    def configmaps(self) -> ResourceType:
        rt = self.catalog.lookup("", "v1", "configmaps")
        assert rt is not None
        return rt

    # --- serving ----------------------------------------------------------------------

    async def _start(self) -> None:
        server = web.Server(KubeHandler(self))
        runner = web.ServerRunner(server, shutdown_timeout=0.25)
        await runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((tls.HOST, 0))
        self._port = sock.getsockname()[1]
        site = web.SockSite(runner, sock, ssl_context=self._tls.context)
        await site.start()
        self._runner = runner
        for companion in self.companions:
            companion.start()

    async def _stop(self) -> None:
        for companion in self.companions:
            companion.stop()
        self._publish(CLOSING)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # --- change feed (watches, log followers) -------------------------------------------

    def subscribe(self) -> asyncio.Queue[Any]:
        queue: asyncio.Queue[Any] = asyncio.Queue()
        with self._sub_lock:
            self._subscribers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[Any]) -> None:
        with self._sub_lock:
            self._subscribers.discard(queue)

    def _publish(self, item: Event | object) -> None:
        with self._sub_lock:
            queues = list(self._subscribers)
        for queue in queues:
            try:
                self._loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the loop is closed: the cluster is gone
                return

    def _forget_logs(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        if (rt.group, rt.plural) == ("", "pods"):
            md = obj.get("metadata") or {}
            self.logs.drop_pod(md.get("namespace", ""), md.get("name", ""))

    # --- in-process access for the sandbox (no auth, no admission) -----------------------

    def _type(self, api_version: str, kind: str) -> ResourceType | None:
        return self.catalog.for_kind(api_version, kind)

    def put_object(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create or replace `obj` (apiVersion, kind, metadata.name[, namespace]) as given,
        stamping uid/resourceVersion/creationTimestamp/generation; returns what is stored.
        Watches see ADDED or MODIFIED. `status` is written as given."""
        return self.store.put(obj, SIMULATOR_MANAGER)

    def get_object(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        rt = self._type(api_version, kind)
        if rt is None:
            return None
        try:
            return self.store.get(rt, (namespace or "default") if rt.namespaced else None, name)
        except Exception:
            return None

    def list_objects(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> list[dict[str, Any]]:
        rt = self._type(api_version, kind)
        if rt is None:
            return []
        match = selectors.matcher(selectors.parse_labels(label_selector), [])
        items, _, _, _ = self.store.list(rt, namespace if rt.namespaced else None, match)
        return items

    def delete_object(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> bool:
        """Delete at once (finalizers ignored, dependents collected); True if it existed."""
        rt = self._type(api_version, kind)
        if rt is None:
            return False
        return self.store.remove(rt, (namespace or "default") if rt.namespaced else None, name)

    def append_log(self, namespace: str, pod: str, text: str, container: str | None = None) -> None:
        """Add lines to a container's log (the pod's only container when not named)."""
        if container is None:
            pod_obj = self.get_object("v1", "Pod", pod, namespace)
            names = [
                c.get("name") for c in ((pod_obj or {}).get("spec") or {}).get("containers") or []
            ]
            container = str(names[0]) if names else pod
        self.logs.append(namespace, pod, container, text)

    def kinds(self) -> list[tuple[str, str]]:
        """(apiVersion, kind) of every type served (for diagnostics)."""
        return sorted({(rt.api_version, rt.kind) for rt in self.catalog.all()})


def _group_of(api_version: str) -> str:
    return split_api_version(api_version)[0]


class KubeRegistry:
    """The local Kubernetes clusters of one local AWS, by EKS cluster name."""

    def __init__(
        self,
        default_version: str = DEFAULT_KUBERNETES_VERSION,
        attach: Callable[[LocalKube], Any] | None = None,
        holds: Any = None,
        faults: Any = None,
        writes: Any = None,
    ) -> None:
        """`attach(kube)` gives what plays a new cluster's controllers (an object with
        `start()` and `stop()`, called on the clusters' event loop), or nothing; `holds`
        (sandbox.holds.HoldBook) the fault points writes may be held at and `faults`
        (sandbox.faults.FaultBook) the faults that answer a write instead (service
        `kubernetes`, action `<verb> <plural>`, e.g. `patch deployments`); `writes`
        (sandbox.kube.writes.KubeWrites) logs every cluster's writes and counts its creates."""
        self.default_version = default_version
        self._attach = attach
        self._holds = holds
        self._faults = faults
        self._writes = writes
        self._lock = threading.RLock()
        self._kubes: dict[str, LocalKube] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                self._thread = threading.Thread(target=run, name="hypd-local-kube", daemon=True)
                self._thread.start()
                ready.wait(5)
                self._loop = loop
            return self._loop

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        loop = self._ensure_loop()
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)

    def ensure(self, cluster_name: str, kubernetes_version: str | None = None) -> LocalKube:
        """The cluster's local Kubernetes, started if it is not running yet."""
        with self._lock:
            kube = self._kubes.get(cluster_name)
            if kube is None:
                loop = self._ensure_loop()
                kube = LocalKube(cluster_name, loop, kubernetes_version or self.default_version)
                kube.holds, kube.faults, kube.writes = self._holds, self._faults, self._writes
                if self._attach is not None:
                    kube.companions.append(self._attach(kube))
                self._run(kube._start())
                self._kubes[cluster_name] = kube
            return kube

    def get(self, cluster_name: str) -> LocalKube | None:
        with self._lock:
            return self._kubes.get(cluster_name)

    def remove(self, cluster_name: str) -> None:
        """Stop and forget a cluster's local Kubernetes (its objects are gone with it)."""
        with self._lock:
            kube = self._kubes.pop(cluster_name, None)
        if kube is not None and self._loop is not None:
            self._run(kube._stop())

    def clear(self) -> None:
        """Stop and forget every cluster's local Kubernetes (the loop keeps running)."""
        for name in self.names():
            self.remove(name)

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._kubes)

    # --- what the EKS gap tells the clusters --------------------------------------------

    def set_access(
        self,
        cluster_name: str,
        principal_arn: str,
        policies: dict[str, dict[str, Any]] | None,
        entry_type: str = "STANDARD",
        username: str = "",
        groups: tuple[str, ...] = (),
    ) -> None:
        """Record an access entry (policyArn → accessScope); `policies=None` removes it."""
        kube = self.get(cluster_name)
        if kube is not None:
            kube.access.set(principal_arn, policies, entry_type, username, groups)

    def set_auth_mode(self, cluster_name: str, mode: str, creator: str | None = None) -> None:
        kube = self.get(cluster_name)
        if kube is not None:
            kube.access.set_mode(mode)
            if creator:
                kube.access.set_creator(creator)

    def close(self) -> None:
        """Stop every cluster and the loop."""
        with self._lock:
            kubes, self._kubes = list(self._kubes.values()), {}
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None:
            return
        for kube in kubes:
            with contextlib.suppress(Exception):  # stopping anyway
                asyncio.run_coroutine_threadsafe(kube._stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=5)
        loop.close()
