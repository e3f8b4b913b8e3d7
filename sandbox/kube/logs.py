"""Container logs of a local Kubernetes: written by the sandbox (its simulator plays the
kubelets), read through `GET .../pods/<name>/log` as text/plain, like a kubelet's.

A kubelet keeps the log of a container's current instance and of the one before it: a
container restarted in place starts a new log, and `previous=true` reads the last words of
the instance that ended. Lines are kept per instance (`instance` = the container's restart
count when it printed them).
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable

Lines = list[tuple[datetime.datetime, str]]


class LogBook:
    """Lines per (namespace, pod, container) and instance, each with the time it was
    written."""

    def __init__(self, on_change: Callable[[str, str], None]) -> None:
        self._lock = threading.Lock()
        self._lines: dict[tuple[str, str, str], dict[int, Lines]] = {}
        self._on_change = on_change

    def append(self, namespace: str, pod: str, container: str, text: str,
               instance: int = 0) -> None:
        stamp = datetime.datetime.now(datetime.UTC)
        lines = text.splitlines() or [""]
        with self._lock:
            runs = self._lines.setdefault((namespace, pod, container), {})
            runs.setdefault(instance, []).extend((stamp, line) for line in lines)
        self._on_change(namespace, pod)

    def instance(self, namespace: str, pod: str, container: str, previous: bool = False
                 ) -> int | None:
        """The newest instance that printed (or the one before it), None when there is
        none."""
        with self._lock:
            runs = sorted(self._lines.get((namespace, pod, container), {}))
        if previous:
            return runs[-2] if len(runs) > 1 else None
        return runs[-1] if runs else None

    def read(self, namespace: str, pod: str, container: str, instance: int | None = None,
             start: int = 0) -> Lines:
        """The lines of one instance (default: the newest) from index `start` on."""
        with self._lock:
            runs = self._lines.get((namespace, pod, container), {})
            if instance is None:
                instance = max(runs) if runs else 0
            return list(runs.get(instance, [])[start:])

    def has_any(self, namespace: str, pod: str) -> bool:
        with self._lock:
            return any(k[:2] == (namespace, pod) for k in self._lines)

    def drop_pod(self, namespace: str, pod: str) -> None:
        with self._lock:
            for key in [k for k in self._lines if k[:2] == (namespace, pod)]:
                del self._lines[key]


def render(
    lines: Lines,
    timestamps: bool,
    tail: int | None,
    since: datetime.datetime | None,
    limit_bytes: int | None,
) -> bytes:
    chosen = [(t, line) for t, line in lines if since is None or t >= since]
    if tail is not None:
        chosen = chosen[-tail:] if tail > 0 else []
    text = "".join(
        (f"{t.strftime('%Y-%m-%dT%H:%M:%S.%fZ')} {line}\n" if timestamps else f"{line}\n")
        for t, line in chosen
    ).encode()
    return text[:limit_bytes] if limit_bytes is not None else text
