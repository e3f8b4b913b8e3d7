"""Container logs of a local Kubernetes: written by the sandbox (its simulator plays the
kubelets), read through `GET .../pods/<name>/log` as text/plain, like a kubelet's."""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable


class LogBook:
    """Lines per (namespace, pod, container), each with the time it was written."""

    def __init__(self, on_change: Callable[[], None]) -> None:
        self._lock = threading.Lock()
        self._lines: dict[tuple[str, str, str], list[tuple[datetime.datetime, str]]] = {}
        self._on_change = on_change

    def append(self, namespace: str, pod: str, container: str, text: str) -> None:
        stamp = datetime.datetime.now(datetime.UTC)
        lines = text.splitlines() or [""]
        with self._lock:
            self._lines.setdefault((namespace, pod, container), []).extend(
                (stamp, line) for line in lines
            )
        self._on_change()

    def read(self, namespace: str, pod: str, container: str) -> list[tuple[datetime.datetime, str]]:
        with self._lock:
            return list(self._lines.get((namespace, pod, container), []))

    def has_any(self, namespace: str, pod: str) -> bool:
        with self._lock:
            return any(k[:2] == (namespace, pod) for k in self._lines)

    def drop_pod(self, namespace: str, pod: str) -> None:
        with self._lock:
            for key in [k for k in self._lines if k[:2] == (namespace, pod)]:
                del self._lines[key]


def render(
    lines: list[tuple[datetime.datetime, str]],
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
