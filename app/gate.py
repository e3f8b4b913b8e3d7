"""The web process's thread pool, gated: of its threads (`hypd web --threads`, each open
WebSocket or long-poll holds one) at most a few (`HYPD_WEB_GATE`, default 8, the floor's
threads per process) run request code at once; a request beyond them waits in line, unstarted.

Why: Python runs one thread at a time per process. At 64 busy connections 64 threads per
process, all runnable, hand the GIL to one another at every socket call: three times the
context switches per request and 10 to 70% more CPU per request than 8 threads serving the
same connections (docs/benchmarks.md, "2026-12-04, gate"). The floor (bench/floor.py) runs 8
threads and queues the rest; the gate gives reads that queueing without giving up the
threads that sockets and long-polls wait in.

Waiting code steps out of the gate: `with waiting():` around a wait (a long-poll's blocking
read of the operation's events, a WebSocket waiting for events, its client or its log lines)
gives the thread's slot to the next request in line and takes one again afterwards (ahead of
requests not yet started: it is halfway through its own). So waiters never hold a slot, and
however many wait, ordinary reads still run: more long-polls than slots cannot starve them.

A request that holds its slot for more than `PATIENCE_S` without stepping out (an AWS or
Kubernetes call that takes its time, a slow client reading a big reply) stops counting
against the gate, so that no call hypd does not know to be a wait can hold the line: the
gate never blocks longer than that while threads are free. It cannot deadlock: a slot is
given back when its request ends, steps out, or outlasts PATIENCE_S, none of which needs
another request to run; and the thread limit is the pool's, as gunicorn's was.

Outside a gated pool (the Flask test client, `flask run`, a Celery worker) `waiting()` does
nothing.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from typing import Any

PATIENCE_S = 0.25
"""A request holding its slot longer than this is presumed to wait on something (AWS, the
Kubernetes API, a slow client) and stops counting against the gate. A status read holds one
for about a millisecond of CPU."""

_local = threading.local()

_Item = tuple[Future, Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class _Parked:
    """A thread parked until it is given a slot (and, for an idle thread, an item)."""

    __slots__ = ("item", "lock", "ticket")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lock.acquire()
        self.ticket: int | None = None
        self.item: _Item | None = None

    def wake(self, ticket: int | None, item: _Item | None = None) -> None:
        self.ticket, self.item = ticket, item
        self.lock.release()


class GatedPool(Executor):
    """A thread pool of at most `threads` threads, of which at most `slots` run their task
    outside `waiting()` at once. gunicorn's gthread worker uses it as its pool (submit,
    shutdown); app/web_worker.py builds it."""

    def __init__(self, slots: int, threads: int, patience: float = PATIENCE_S,
                 name: str = "web") -> None:
        if not 1 <= slots <= threads:
            raise ValueError(f"slots must be 1..threads, got {slots} of {threads}")
        self.slots = slots
        self.max_threads = threads
        self.patience = patience
        self._name = name
        self._lock = threading.Lock()
        self._queue: deque[_Item] = deque()  # submitted, not started
        self._holders: dict[int, float] = {}  # ticket → when its slot was taken (oldest first)
        self._tickets = itertools.count()
        self._idle: list[_Parked] = []  # threads with no task (the last parked is woken first)
        self._returning: deque[_Parked] = deque()  # tasks back from waiting(), in line
        self._threads = 0
        self._shutdown = False
        self._watch = threading.Condition(self._lock)
        self._watching = False  # the watchdog sleeps until told there is a line
        self._watchdog: threading.Thread | None = None
        self._started: list[threading.Thread] = []  # at most max_threads: they park, not end

    # -- what gunicorn calls ---------------------------------------------------------------

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot submit after shutdown")
            self._queue.append((future, fn, args, kwargs))
            spawn = self._grant()
            self._nudge()
        self._spawn(spawn)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shutdown = True
            if cancel_futures:
                while self._queue:
                    self._queue.popleft()[0].cancel()
            self.slots = self.max_threads + len(self._returning)  # let every waiter finish
            spawn = self._grant()
            for parked in self._idle:
                parked.wake(None)
            self._idle.clear()
            self._watch.notify()
        self._spawn(spawn)
        if wait:
            for thread in list(self._started):
                if thread is not threading.current_thread():
                    thread.join()

    # -- stepping out ----------------------------------------------------------------------

    def _leave(self, ticket: int) -> None:
        with self._lock:
            self._holders.pop(ticket, None)
            spawn = self._grant()
        self._spawn(spawn)

    def _enter(self) -> int:
        with self._lock:
            if len(self._holders) < self.slots and not self._returning:
                return self._take_slot()
            parked = _Parked()
            self._returning.append(parked)
            self._nudge()
        parked.lock.acquire()
        assert parked.ticket is not None
        return parked.ticket

    # -- under the lock --------------------------------------------------------------------

    def _take_slot(self) -> int:
        ticket = next(self._tickets)
        self._holders[ticket] = time.monotonic()
        return ticket

    def _grant(self) -> list[tuple[_Item, int]]:
        """Give free slots away: first to tasks back from waiting, then to the queue's
        oldest items (an idle thread, else a new one while under the thread limit). Answers
        the threads to start once the lock is released."""
        spawn: list[tuple[_Item, int]] = []
        while len(self._holders) < self.slots:
            if self._returning:
                self._returning.popleft().wake(self._take_slot())
            elif self._queue and self._idle:
                self._idle.pop().wake(self._take_slot(), self._queue.popleft())
            elif self._queue and self._threads < self.max_threads:
                self._threads += 1
                spawn.append((self._queue.popleft(), self._take_slot()))
            else:
                break
        return spawn

    def _blocked(self) -> bool:
        return bool(self._queue or self._returning) and len(self._holders) >= self.slots

    def _nudge(self) -> None:
        if self._watching and self._blocked():
            self._watching = False
            self._watch.notify()
        elif self._watchdog is None and self._blocked():
            self._watchdog = threading.Thread(target=self._watch_loop, daemon=True,
                                              name=f"{self._name}-gate-watch")
            self._watchdog.start()

    # -- the threads -----------------------------------------------------------------------

    def _spawn(self, spawn: list[tuple[_Item, int]]) -> None:
        for index, (item, ticket) in enumerate(spawn):
            thread = threading.Thread(target=self._serve, args=(item, ticket), daemon=True,
                                      name=f"{self._name}-{ticket}")
            try:
                thread.start()
            except RuntimeError as exc:  # the process may start no more threads
                self._not_started(spawn[index:], exc)
                return
            self._started.append(thread)

    def _not_started(self, spawn: list[tuple[_Item, int]], exc: RuntimeError) -> None:
        """Tasks whose thread could not start fail with the reason (gunicorn closes their
        connections) and give back their slots and thread counts: otherwise each would hold a
        slot and leave its client waiting on a future nothing will ever finish."""
        with self._lock:
            for _item, ticket in spawn:
                self._holders.pop(ticket, None)
                self._threads -= 1
        for (future, _fn, _args, _kwargs), _ticket in spawn:
            if future.set_running_or_notify_cancel():
                future.set_exception(exc)

    def _serve(self, item: _Item | None, ticket: int | None) -> None:
        _local.pool = self
        while item is not None:
            _local.ticket = ticket
            self._run(item)
            item, ticket = self._next(_local.ticket)

    @staticmethod
    def _run(item: _Item) -> None:
        future, fn, args, kwargs = item
        if not future.set_running_or_notify_cancel():
            return
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the future, as an executor does
            future.set_exception(exc)
        else:
            future.set_result(result)

    def _next(self, ticket: int | None) -> tuple[_Item | None, int | None]:
        """The finished task's slot back; the next item in line to run on this thread (no
        hand-over to another), or park until there is one."""
        with self._lock:
            if ticket is not None:
                self._holders.pop(ticket, None)
            while self._returning and len(self._holders) < self.slots:
                self._returning.popleft().wake(self._take_slot())
            if self._queue and len(self._holders) < self.slots:
                item, mine = self._queue.popleft(), self._take_slot()
                spawn = self._grant()
                self._nudge()
            elif self._shutdown:
                self._threads -= 1
                return None, None
            else:
                item = None
                parked = _Parked()
                self._idle.append(parked)
        if item is not None:
            self._spawn(spawn)
            return item, mine
        parked.lock.acquire()
        if parked.item is None:  # shut down
            with self._lock:
                self._threads -= 1
        return parked.item, parked.ticket

    def _watch_loop(self) -> None:
        """While requests are in line and every slot is held, stop counting the slot held
        longest once it has been held PATIENCE_S."""
        with self._lock:
            while not self._shutdown:
                if not self._blocked():
                    self._watching = True
                    self._watch.wait()
                    continue
                ticket, since = next(iter(self._holders.items()))
                left = since + self.patience - time.monotonic()
                if left > 0:
                    self._watch.wait(left)
                    continue
                del self._holders[ticket]
                spawn = self._grant()
                if spawn:
                    self._lock.release()
                    try:
                        self._spawn(spawn)
                    finally:
                        self._lock.acquire()


@contextmanager
def waiting() -> Iterator[None]:
    """Step out of the gate while this block waits (on Redis, a socket, a queue): the
    thread's slot goes to the next request in line and is taken again afterwards, ahead of
    requests not yet started. Does nothing outside a gated pool's thread, or when already
    stepped out."""
    pool: GatedPool | None = getattr(_local, "pool", None)
    ticket = getattr(_local, "ticket", None)
    if pool is None or ticket is None:
        yield
        return
    _local.ticket = None
    pool._leave(ticket)
    try:
        yield
    finally:
        _local.ticket = pool._enter()
