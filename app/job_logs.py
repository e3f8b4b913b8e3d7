"""A live tail of a training job's logs for one WebSocket, straight from the Kubernetes API.

It runs in the web process, never in Celery: one reader thread per pod follows that pod's
log (`follow=true&timestamps=true`) and puts lines into one bounded buffer; the socket's own
thread sends them in batches. Pods are looked up again every second, so pods made later (a
RayJob's workers, a recreated pod) are followed too, and a container restarted in place is
followed into its next run.

- Every line is `{"pod", "time", "line", "cursor"}`; `cursor` is `<time>|<n>`: the n-th line
  of that pod stamped `<time>`. A client that reconnects sends the last cursor of each pod
  (`after`); each pod's log is read again from that time (`sinceTime`) and the lines up to
  the cursor are skipped, so nothing is lost and nothing repeats.
- A restarted container's previous run is read with `previous=true` (its last words: why it
  failed), marked `"previous": true`, before its current run.
- Slow clients: the buffer holds at most `MAX_BUFFERED_LINES`; when it is full the oldest
  buffered line is dropped and counted, and the client gets `{"type": "dropped", "count",
  "pods"}` where the lines went missing (drop-with-marker), so it skips ahead to what is
  printed now. Readers never wait for the client, so a client that
  stops reading costs at most the buffer, and the Kubernetes API streams are never held
  back.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cloud import jobs, kube
from cloud.metrics import LOG_LINES_DROPPED

MAX_BUFFERED_LINES = 10_000
MAX_LINE_CHARS = 16_384
BATCH_LINES = 2_000
POD_POLL_S = 1.0
WAIT_RESTART_S = 0.2


def _norm(stamp: str) -> str:
    """An RFC 3339 UTC time with its fraction padded to nanoseconds: comparable as text
    (the kubelet writes nanoseconds, other servers fewer digits)."""
    head, _, rest = stamp.rstrip("Z").partition(".")
    return f"{head}.{rest.ljust(9, '0')[:9]}Z"


@dataclass
class Cursor:
    """Where a pod's tail is: the newest time sent, how many lines of that time were sent,
    and (resuming) how many lines of that time are still to skip."""

    time: str = ""
    count: int = 0
    skip: int = 0

    @classmethod
    def parse(cls, raw: str | None) -> Cursor | None:
        if not raw or "|" not in raw:
            return None
        when, _, count = raw.rpartition("|")
        try:
            seen = max(0, int(count))
        except ValueError:
            return None
        return cls(when, seen, seen)

    def admit(self, when: str) -> bool:
        """True for a line after this cursor (the cursor then moves past it)."""
        if self.time:
            this, last = _norm(when), _norm(self.time)
            if this < last:
                return False
            if this == last:
                if self.skip > 0:
                    self.skip -= 1
                    return False
                self.count += 1
                return True
        self.time, self.count, self.skip = when, 1, 0
        return True

    def text(self) -> str:
        return f"{self.time}|{self.count}"


class LineBuffer:
    """The bounded buffer between the readers and the socket (see the module docstring)."""

    def __init__(self, limit: int = MAX_BUFFERED_LINES) -> None:
        self.limit = limit
        self._lines: collections.deque[dict[str, Any]] = collections.deque()
        self._dropped = 0
        self._dropped_pods: set[str] = set()
        self._ready = threading.Condition()

    def put(self, item: dict[str, Any]) -> None:
        """Add a line; when full, the oldest buffered line makes room (a slow client skips
        ahead to what is printed now rather than falling further behind)."""
        with self._ready:
            if len(self._lines) >= self.limit:
                gone = self._lines.popleft()
                self._dropped += 1
                self._dropped_pods.add(gone["pod"])
            self._lines.append(item)
            self._ready.notify()

    def take(self, wait_s: float) -> tuple[int, list[str], list[dict[str, Any]]]:
        """(dropped since the last take, their pods, lines), waiting up to `wait_s`. The
        dropped lines came before these lines and after everything taken before."""
        with self._ready:
            if not self._lines and not self._dropped:
                self._ready.wait(wait_s)
            count = min(len(self._lines), BATCH_LINES)
            lines = [self._lines.popleft() for _ in range(count)]
            dropped, pods = self._dropped, sorted(self._dropped_pods)
            self._dropped, self._dropped_pods = 0, set()
        if dropped:
            LOG_LINES_DROPPED.inc(dropped)
        return dropped, pods, lines

    def __len__(self) -> int:
        with self._ready:
            return len(self._lines)


@dataclass
class PodTail:
    """One pod's reader: its cursor and the thread following it."""

    name: str
    cursor: Cursor | None
    thread: threading.Thread | None = None
    done: threading.Event = field(default_factory=threading.Event)
    response: Any = None


class JobTail:
    """Follows every pod of one job (or one pod) into a LineBuffer."""

    def __init__(self, api: Any, job: dict[str, Any], tail: int, pod: str | None,
                 after: dict[str, str]) -> None:
        self.api = api
        self.job = job
        self.namespace = job["metadata"].get("namespace") or "default"
        self.tail = tail
        self.only = pod
        self.after = after
        self.buffer = LineBuffer()
        self.pods: dict[str, PodTail] = {}
        self.stopped = threading.Event()

    # -- pods --------------------------------------------------------------------------------

    def refresh(self) -> list[dict[str, Any]]:
        """Look the job's pods up; start a reader for each new one. Returns the pods."""
        found = jobs.pods(self.api, self.job)
        for pod in found:
            name = pod["metadata"]["name"]
            if self.only not in (None, name) or name in self.pods:
                continue
            tail = PodTail(name, Cursor.parse(self.after.get(name)))
            tail.thread = threading.Thread(target=self._follow, args=(tail,), daemon=True,
                                           name=f"tail-{name}")
            self.pods[name] = tail
            tail.thread.start()
        return found

    def idle(self) -> bool:
        """Every reader has finished (its pod ended or went)."""
        return all(t.done.is_set() for t in self.pods.values())

    def stop(self) -> None:
        self.stopped.set()
        for tail in self.pods.values():
            response = tail.response
            if response is not None:
                with contextlib.suppress(Exception):
                    response.shutdown()  # wakes a reader blocked on the stream
        for tail in self.pods.values():
            if tail.thread is not None:
                tail.thread.join(timeout=2)

    # -- one pod -------------------------------------------------------------------------------

    def _emit(self, tail: PodTail, when: str, text: str, previous: bool = False) -> None:
        if tail.cursor is None:
            tail.cursor = Cursor()
        if not tail.cursor.admit(when):
            return
        item = {"pod": tail.name, "time": when, "line": text[:MAX_LINE_CHARS],
                "cursor": tail.cursor.text()}
        if previous:
            item["previous"] = True
        self.buffer.put(item)

    def _pod(self, name: str) -> dict[str, Any] | None:
        return kube.get_object(self.api, "v1", "Pod", name, self.namespace)

    def _follow(self, tail: PodTail) -> None:
        try:
            self._run(tail)
        except Exception as exc:  # the stream broke: say so in the log, end this reader
            if not self.stopped.is_set():
                self.buffer.put({"pod": tail.name, "time": "", "line": "", "cursor": "",
                                 "error": f"reading the log of {tail.name} failed: {exc}"})
        finally:
            tail.done.set()

    def _run(self, tail: PodTail) -> None:
        first = True
        while not self.stopped.is_set():
            pod = self._pod(tail.name)
            if pod is None:
                return
            status = pod.get("status") or {}
            container = jobs.main_container(pod)
            state = next((cs for cs in status.get("containerStatuses") or []
                          if cs.get("name") == container), None)
            current = (state or {}).get("state") or {}
            if "running" not in current and "terminated" not in current:
                if status.get("phase") in ("Succeeded", "Failed"):
                    return
                time.sleep(WAIT_RESTART_S)  # not started yet, or backing off a restart
                continue
            if first and int(state.get("restartCount") or 0) > 0:
                self._previous(tail, container)
            first = False
            self._stream(tail, container)
            pod = self._pod(tail.name)
            phase = ((pod or {}).get("status") or {}).get("phase")
            if pod is None or phase in ("Succeeded", "Failed"):
                return
            time.sleep(WAIT_RESTART_S)  # ended: the container restarts in place (or not)

    def _since(self, tail: PodTail) -> dict[str, Any]:
        if tail.cursor is not None and tail.cursor.time:
            return {"since_time": tail.cursor.time}
        return {"tail": self.tail}

    def _previous(self, tail: PodTail, container: str) -> None:
        with contextlib.suppress(kube.KubeError):
            for when, text in jobs.read_lines(self.api, self.namespace, tail.name, container,
                                              previous=True, **self._since(tail)):
                self._emit(tail, when, text, previous=True)

    def _stream(self, tail: PodTail, container: str) -> None:
        query = kube.log_query(container, follow=True, **self._since(tail))
        try:
            response = kube.open_log(self.api, self.namespace, tail.name, query)
        except kube.KubeError as exc:
            if exc.http_status == 400:  # not started after all: look again
                return
            raise
        tail.response = response
        try:
            for when, text in jobs.follow_lines(response):
                if self.stopped.is_set():
                    return
                self._emit(tail, when, text)
        finally:
            tail.response = None
            with contextlib.suppress(Exception):
                response.release_conn()


def run(send: Callable[[dict[str, Any]], None], poll_client: Callable[[], bool],
        job_tail: JobTail, job_state: Callable[[], str | None]) -> str | None:
    """Send the tail until the job has ended and every reader is done (returns its state),
    or the client went (`poll_client` answers False). Pods are looked up every second; the
    job's state only once every reader is idle (it decides the end, nothing else), so an open
    tail costs the API server one pod list a second."""
    next_refresh = 0.0
    state: str | None = "running"
    try:
        while True:
            now = time.monotonic()
            if now >= next_refresh:
                job_tail.refresh()
                if job_tail.idle():
                    state = job_state()
                next_refresh = now + POD_POLL_S
            dropped, pods, lines = job_tail.buffer.take(0.25)
            if dropped:
                send({"type": "dropped", "count": dropped, "pods": pods})
            if lines:
                send({"type": "lines", "lines": lines})
            if not poll_client():
                return state
            if state in (*jobs.TERMINAL_STATES, None) and job_tail.idle() and \
                    not len(job_tail.buffer) and not lines:
                return state
    finally:
        job_tail.stop()
