"""One follow of a job's pods per web process, shared by every live tail of that job.

Each open tail used to open its own log stream per pod and list the job's pods every second:
100 browsers on one job were 100 streams per pod and 100 pod lists a second on the cluster's
API server (O(tails)). A `JobFeed` follows each pod once and fans its lines out to every
`Subscription` (one per WebSocket), so the API server's load is O(pods).

- Each pod's reader first reads what the pod has printed (`previous=true` first when its
  container has restarted, then the current run, at most `RING_LINES`) in one piece — the
  pod is *primed* — then follows the log from there. A subscriber gets, per pod, the last
  `tail` lines of what was primed or is still held when it joins, then every line as it
  comes. The feed holds each pod's newest lines (at most `RING_LINES` and `RING_CHARS`),
  which is how a tail opened later still gets its last lines without a read of its own.
- A tail that resumes (`after`: a cursor per pod) gets a feed of its own, read from its
  cursors (`sinceTime`): resuming is rare, and a private read keeps "nothing lost, nothing
  twice" exact whatever the shared feed still holds.
- The feed lives while a subscriber does; the last one to leave stops its readers.
- Each subscriber has its own bounded `LineBuffer` (drop-with-marker), so one slow client
  never holds back the feed, the other clients or the API server's streams.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from app.job_logs import MAX_LINE_CHARS, POD_POLL_S, WAIT_RESTART_S, Cursor, LineBuffer
from cloud import jobs, kube
from cloud.metrics import LOG_FOLLOWS

RING_LINES = 10_000
"""Lines held per pod: the deepest tail a client may ask for (schemas.jobs.LOG_TAIL_MAX)."""
RING_CHARS = 8 * 1024 * 1024
"""...and at most this much text per pod, whatever the lines' length."""


@dataclass
class PodRing:
    """One pod of a feed: its newest lines, the reader's cursor and the reader."""

    name: str
    cursor: Cursor | None
    lines: collections.deque[dict[str, Any]] = field(default_factory=collections.deque)
    chars: int = 0
    primed: bool = False
    thread: threading.Thread | None = None
    done: threading.Event = field(default_factory=threading.Event)
    response: Any = None

    def hold(self, item: dict[str, Any]) -> None:
        self.lines.append(item)
        self.chars += len(item["line"])
        while len(self.lines) > RING_LINES or (self.chars > RING_CHARS and len(self.lines) > 1):
            self.chars -= len(self.lines.popleft()["line"])


class Subscription:
    """One tail's view of a feed: the lines it was given go into its own bounded buffer."""

    def __init__(self, tail: int, after: dict[str, str]) -> None:
        self.tail = tail
        self.resumed = set(after)
        self.buffer = LineBuffer()
        self.feed: JobFeed | None = None

    def primed(self, pod: str, items: list[dict[str, Any]]) -> None:
        """A pod's first lines: all of them after a resume cursor, else the last `tail`."""
        if pod not in self.resumed:
            items = items[len(items) - self.tail:] if self.tail < len(items) else items
        for item in items:
            self.buffer.put(item)

    # what job_logs.run drives
    def refresh(self) -> None:
        assert self.feed is not None
        self.feed.refresh()

    def idle(self) -> bool:
        assert self.feed is not None
        return self.feed.idle()

    def stop(self) -> None:
        feed, self.feed = self.feed, None
        if feed is not None:
            leave(feed, self)


class JobFeed:
    """Follows every pod of one job (or one pod of it) for its subscribers."""

    def __init__(self, api: Any, job: dict[str, Any], pod: str | None,
                 after: dict[str, str]) -> None:
        self.api = api
        self.job = job
        self.namespace = job["metadata"].get("namespace") or "default"
        self.only = pod
        self.after = after
        self.rings: dict[str, PodRing] = {}
        self.subscribers: list[Subscription] = []
        self.users = 0  # subscribers joined or joining (counted under the registry's lock)
        self.key: tuple[Any, ...] | None = None  # where the registry holds it (shared feeds)
        self.lock = threading.Lock()
        self.refreshing = threading.Lock()
        self.next_refresh = 0.0
        self.refreshed = threading.Event()  # the pods were looked up once
        self.stopped = threading.Event()

    # -- subscribers ----------------------------------------------------------------------------

    def join(self, sub: Subscription) -> None:
        """Give the subscriber what each primed pod holds, then every line from now on."""
        with self.lock:
            sub.feed = self
            for ring in self.rings.values():
                if ring.primed:
                    sub.primed(ring.name, list(ring.lines))
            self.subscribers.append(sub)

    def _deliver(self, item: dict[str, Any]) -> None:
        """(under the lock)"""
        for sub in self.subscribers:
            sub.buffer.put(item)

    # -- pods -----------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Look the job's pods up (at most once a second, whoever asks) and start a reader
        for each new one."""
        if time.monotonic() < self.next_refresh or not self.refreshing.acquire(blocking=False):
            return
        try:
            found = jobs.pods(self.api, self.job)
            for pod in found:
                name = pod["metadata"]["name"]
                if self.only not in (None, name) or name in self.rings:
                    continue
                ring = PodRing(name, Cursor.parse(self.after.get(name)))
                ring.thread = threading.Thread(target=self._follow, args=(ring,), daemon=True,
                                               name=f"tail-{name}")
                with self.lock:
                    self.rings[name] = ring
                ring.thread.start()
            self.next_refresh = time.monotonic() + POD_POLL_S
            self.refreshed.set()
        finally:
            self.refreshing.release()

    def idle(self) -> bool:
        """The pods were looked up and every reader has finished (its pod ended or went)."""
        if not self.refreshed.is_set():
            return False
        with self.lock:
            return all(r.done.is_set() for r in self.rings.values())

    def stop(self) -> None:
        self.stopped.set()
        with self.lock:
            rings = list(self.rings.values())
        for ring in rings:
            response = ring.response
            if response is not None:
                with contextlib.suppress(Exception):
                    response.shutdown()  # wakes a reader blocked on the stream
        for ring in rings:
            if ring.thread is not None:
                ring.thread.join(timeout=2)

    # -- one pod --------------------------------------------------------------------------------

    def _item(self, ring: PodRing, when: str, text: str,
              previous: bool = False) -> dict[str, Any] | None:
        if ring.cursor is None:
            ring.cursor = Cursor()
        if not ring.cursor.admit(when):
            return None
        item = {"pod": ring.name, "time": when, "line": text[:MAX_LINE_CHARS],
                "cursor": ring.cursor.text()}
        if previous:
            item["previous"] = True
        return item

    def _emit(self, ring: PodRing, when: str, text: str) -> None:
        item = self._item(ring, when, text)
        if item is not None:
            with self.lock:
                ring.hold(item)
                self._deliver(item)

    def _follow(self, ring: PodRing) -> None:
        try:
            self._run(ring)
        except Exception as exc:  # the stream broke: say so in the log, end this reader
            if not self.stopped.is_set():
                with self.lock:
                    self._deliver({"pod": ring.name, "time": "", "line": "", "cursor": "",
                                   "error": f"reading the log of {ring.name} failed: {exc}"})
        finally:
            if not ring.primed:  # nothing was read: its subscribers still get their turn
                with self.lock:
                    ring.primed = True
            ring.done.set()

    def _pod(self, name: str) -> dict[str, Any] | None:
        return kube.get_object(self.api, "v1", "Pod", name, self.namespace)

    def _run(self, ring: PodRing) -> None:
        while not self.stopped.is_set():
            pod = self._pod(ring.name)
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
            if not ring.primed:
                self._prime(ring, container, int(state.get("restartCount") or 0) > 0)
            self._stream(ring, container)
            pod = self._pod(ring.name)
            phase = ((pod or {}).get("status") or {}).get("phase")
            if pod is None or phase in ("Succeeded", "Failed"):
                return
            time.sleep(WAIT_RESTART_S)  # ended: the container restarts in place (or not)

    def _since(self, ring: PodRing) -> dict[str, Any]:
        if ring.cursor is not None and ring.cursor.time:
            return {"since_time": ring.cursor.time}
        return {"tail": RING_LINES}

    def _prime(self, ring: PodRing, container: str, restarted: bool) -> None:
        """Read what the pod printed so far (its previous run first), in one piece."""
        items: list[dict[str, Any]] = []
        if restarted:
            with contextlib.suppress(kube.KubeError):
                for when, text in jobs.read_lines(self.api, self.namespace, ring.name,
                                                  container, previous=True, **self._since(ring)):
                    item = self._item(ring, when, text, previous=True)
                    if item is not None:
                        items.append(item)
        try:
            printed = jobs.read_lines(self.api, self.namespace, ring.name, container,
                                      **self._since(ring))
        except kube.KubeError as exc:
            if exc.http_status != 400:  # 400: not started after all; the follow says more
                raise
            printed = []
        for when, text in printed:
            item = self._item(ring, when, text)
            if item is not None:
                items.append(item)
        if ring.cursor is not None and ring.cursor.time:
            # the follow reads again from the newest time read: skip the lines of that time
            # already read
            ring.cursor = Cursor.parse(ring.cursor.text())
        with self.lock:
            for item in items:
                ring.hold(item)
            ring.primed = True
            for sub in self.subscribers:
                sub.primed(ring.name, items)

    def _stream(self, ring: PodRing, container: str) -> None:
        query = kube.log_query(container, follow=True, **self._since(ring))
        try:
            response = kube.open_log(self.api, self.namespace, ring.name, query)
        except kube.KubeError as exc:
            if exc.http_status == 400:  # not started after all: look again
                return
            raise
        ring.response = response
        try:
            with LOG_FOLLOWS.track_inprogress():
                for when, text in jobs.follow_lines(response):
                    if self.stopped.is_set():
                        return
                    self._emit(ring, when, text)
        finally:
            ring.response = None
            with contextlib.suppress(Exception):
                response.release_conn()


# -- the process's feeds ------------------------------------------------------------------------

_feeds: dict[tuple[Any, ...], JobFeed] = {}
_feeds_lock = threading.Lock()


def subscribe(api: Any, cluster: tuple[str, str | None], job: dict[str, Any], tail: int,
              pod: str | None, after: dict[str, str]) -> Subscription:
    """A subscription to the job's shared feed (a feed of its own when it resumes)."""
    sub = Subscription(tail, after)
    if after:
        feed = JobFeed(api, job, pod, after)
        feed.users = 1
    else:
        md = job["metadata"]
        key = (*cluster, md.get("namespace"), md["name"], md.get("uid"), pod)
        with _feeds_lock:
            feed = _feeds.get(key)
            if feed is None:
                feed = _feeds[key] = JobFeed(api, job, pod, {})
                feed.key = key
            feed.users += 1
    feed.join(sub)
    return sub


def leave(feed: JobFeed, sub: Subscription) -> None:
    """The subscriber goes; the last one stops the feed."""
    with feed.lock:
        if sub in feed.subscribers:
            feed.subscribers.remove(sub)
    with _feeds_lock:
        feed.users -= 1
        last = feed.users <= 0
        if last and feed.key is not None and _feeds.get(feed.key) is feed:
            del _feeds[feed.key]
    if last:
        feed.stop()


def open_feeds() -> int:
    """How many shared feeds this process has (tests and metrics)."""
    with _feeds_lock:
        return len(_feeds)
