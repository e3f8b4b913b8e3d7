"""A live tail of a training job's logs for one WebSocket, straight from the Kubernetes API.

It runs in the web process, never in Celery: the job's pods are followed once per process,
whoever tails them (app/log_feeds.py: one reader thread per pod, `follow=true&timestamps=true`,
its lines fanned out to every tail); each tail's lines go into its own bounded buffer and the
socket's own thread sends them in batches. Pods are looked up again every second, so pods
made later (a RayJob's workers, a recreated pod) are followed too, and a container restarted
in place is followed into its next run.

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
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from app.gate import waiting
from cloud import jobs
from cloud.metrics import LOG_LINES_DROPPED

if TYPE_CHECKING:
    from app.log_feeds import Subscription

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


def run(send: Callable[[dict[str, Any]], None], poll_client: Callable[[], bool],
        job_tail: Subscription, job_state: Callable[[], str | None]) -> str | None:
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
            with waiting():  # out of the web pool's gate while no line comes
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
