"""The way from the router to a space's editor: the space's ready pod, reached through the
Kubernetes API's `pods/portforward` with the official client (a WebSocket per stream, which
the client turns into a local socket)."""

from __future__ import annotations

import copy
import hashlib
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import urllib3
from kubernetes.client import ApiClient, Configuration, CoreV1Api
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import portforward

from cloud import eks, kube, spaces
from tasks.space_sessions import SpaceDoor

POD_TTL_S = 5.0
"""How long the router trusts which pod serves a space before asking the API again (a
restarted space is found within this)."""


class NotServing(Exception):
    """No pod of the space serves now (stopped, starting, or gone)."""


class Replaced(Exception):
    """The space the session opened is gone (perhaps made again, a new space, by the same
    name): the session opens nothing."""


class UpstreamError(Exception):
    """The cluster's API or the editor did not let the router through."""


def _ready(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    if (pod.get("metadata") or {}).get("deletionTimestamp") or status.get("phase") != "Running":
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in status.get("conditions") or [])


class Forward:
    """One stream to the editor's port: `sock` to read and write, `error()` what the kubelet
    said on the port's error channel (e.g. nothing listens)."""

    def __init__(self, stream: Any, api: ApiClient) -> None:
        self._stream = stream
        self._api = api
        self.sock = stream.socket(spaces.PORT)

    def error(self) -> str | None:
        return self._stream.error(spaces.PORT)

    def close(self) -> None:
        try:
            self._stream.close()
        finally:
            self._api.close()


class Upstreams:
    """Finds a space's pod (cached `POD_TTL_S`), checking the Workspace is still the one the
    session was opened for, and opens streams to it."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._pods: dict[tuple[str, ...], tuple[float, str | None]] = {}
        self._configs: dict[int, Configuration] = {}
        self._ca_dir = Path(tempfile.mkdtemp(prefix="hypd-spaces-router-"))

    def _configuration(self, door: SpaceDoor) -> Configuration:
        """The cluster's client configuration, with its CA in a file: the official client's
        WebSocket (port-forward's transport) trusts only `ssl_ca_cert`, a path, and ignores
        the in-memory `ca_cert_data` the cluster's client carries. A shallow copy, so the
        token the cluster's client mints again is the one sent."""
        base = eks.cluster_client(door.cluster, door.region).configuration
        with self._lock:
            made = self._configs.get(id(base))
            if made is None:
                pem = (base.ca_cert_data or "").encode()
                ca = self._ca_dir / f"{hashlib.sha256(pem).hexdigest()[:16]}.pem"
                ca.write_bytes(pem)
                made = copy.copy(base)
                made.ssl_ca_cert = str(ca)
                self._configs[id(base)] = made
            return made

    def _key(self, door: SpaceDoor) -> tuple[str, ...]:
        return door.cluster, door.region, door.namespace, door.name, door.uid

    def pod(self, door: SpaceDoor) -> str | None:
        """The name of the space's newest ready pod, or None."""
        key = self._key(door)
        with self._lock:
            cached = self._pods.get(key)
        if cached and self._clock() - cached[0] < POD_TTL_S:
            return cached[1]
        try:
            api = eks.api_client(door.cluster, door.region)
            workspace = kube.get_object(api, spaces.API_VERSION, spaces.KIND, door.name,
                                        door.namespace)
            found = kube.list_objects(api, "v1", "Pod", door.namespace,
                                      label_selector={spaces.POD_LABEL: door.name})
        except (kube.KubeError, ApiException, OSError, urllib3.exceptions.HTTPError,
                ValueError) as exc:
            raise UpstreamError(f"the Kubernetes API of cluster {door.cluster} did not "
                                f"answer: {exc}") from exc
        if workspace is None or workspace["metadata"].get("uid") != door.uid:
            raise Replaced(f"space {door.name} was deleted since this browser signed in to it")
        ready = sorted((p for p in found if _ready(p)),
                       key=lambda p: p["metadata"].get("creationTimestamp") or "")
        name = ready[-1]["metadata"]["name"] if ready else None
        with self._lock:
            self._pods[key] = (self._clock(), name)
        return name

    def forget(self, door: SpaceDoor) -> None:
        with self._lock:
            self._pods.pop(self._key(door), None)

    def connect(self, door: SpaceDoor) -> Forward:
        """A new stream to the space's editor (NotServing when no pod serves)."""
        for attempt in (0, 1):
            name = self.pod(door)
            if name is None:
                raise NotServing(f"space {door.name} is not running")
            # an ApiClient of its own: the official client's stream helpers swap the call
            # function of the ApiClient they are given while they connect
            api = ApiClient(self._configuration(door))
            try:
                stream = portforward(CoreV1Api(api).connect_get_namespaced_pod_portforward,
                                     name, door.namespace, ports=str(spaces.PORT))
            except (ApiException, OSError) as exc:
                api.close()
                self.forget(door)  # the pod may have gone since it was found
                if attempt:
                    raise UpstreamError(f"the cluster refused a stream to space "
                                        f"{door.name}: {exc}") from exc
                continue
            return Forward(stream, api)
        raise AssertionError("not reached")
