"""Long-lived answers: watches (one JSON event per line) and followed pod logs.

Both wait on the cluster's change feed (`LocalKube.subscribe`): store events, log lines and
the cluster's shutdown all arrive there, so nothing polls faster than once a second.
"""

from __future__ import annotations

import asyncio
import datetime
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web

from sandbox.kube import logs
from sandbox.kube.catalog import ResourceType
from sandbox.kube.errors import KubeError, bad_request
from sandbox.kube.store import Event, Store, present

DEFAULT_WATCH_S = 1800.0
CLOSING = object()  # pushed to every subscriber when the cluster stops


@dataclass(frozen=True)
class LogWritten:
    """Lines were added to a pod's log (what a log follower of that pod waits for)."""

    namespace: str
    pod: str


class Feed(Protocol):
    store: Store
    logs: logs.LogBook

    def subscribe(self) -> asyncio.Queue[Any]: ...

    def unsubscribe(self, queue: asyncio.Queue[Any]) -> None: ...


async def _send(resp: web.StreamResponse, event: dict[str, Any]) -> None:
    await resp.write(json.dumps(event, separators=(",", ":")).encode() + b"\n")


async def watch(
    request: web.BaseRequest,
    feed: Feed,
    rt: ResourceType,
    namespace: str | None,
    name: str | None,
    match: Callable[[dict[str, Any]], bool],
    render: Callable[[dict[str, Any], bool], dict[str, Any]] | None = None,
) -> web.StreamResponse:
    """Stream events as JSON lines; `render(obj, first)` turns each event's object into what
    the client asked for (a one-row Table, headers on the first event only)."""
    query = request.query
    sent = 0

    async def send(kind: str, obj: dict[str, Any]) -> None:
        nonlocal sent
        await _send(resp, {"type": kind, "object": render(obj, sent == 0) if render else obj})
        sent += 1

    try:
        timeout = float(query.get("timeoutSeconds") or DEFAULT_WATCH_S)
    except ValueError as exc:
        raise bad_request("timeoutSeconds must be a number") from exc

    def wanted(obj: dict[str, Any] | None) -> bool:
        if obj is None:
            return False
        md = obj.get("metadata") or {}
        if namespace is not None and md.get("namespace") != namespace:
            return False
        if name is not None and md.get("name") != name:
            return False
        return match(obj)

    queue = feed.subscribe()
    resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    resp.enable_chunked_encoding()
    try:
        rv_param = query.get("resourceVersion") or ""
        initial: list[dict[str, Any]] = []
        backlog: list[Event] = []
        expired: KubeError | None = None
        if rv_param in ("", "0"):
            items, rv, _, _ = feed.store.list(rt, namespace, wanted)
            initial, start = items, int(rv)
        else:
            try:
                start = int(rv_param)
            except ValueError as exc:
                raise bad_request(f'invalid resource version "{rv_param}"') from exc
            try:
                backlog = feed.store.since(rt, start)
            except KubeError as exc:
                expired = exc
        await resp.prepare(request)
        if expired is not None:
            await _send(resp, {"type": "ERROR", "object": expired.status()})
            await resp.write_eof()
            return resp
        for obj in initial:
            await send("ADDED", obj)
        for event in backlog:
            start = max(start, event.rv)
            await _deliver(send, rt, event, wanted)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while (remaining := deadline - loop.time()) > 0:
            try:
                item = await asyncio.wait_for(queue.get(), remaining)
            except TimeoutError:
                break
            if item is CLOSING:
                break
            if isinstance(item, Event) and item.rv > start:
                await _deliver(send, rt, item, wanted)
        await resp.write_eof()
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        feed.unsubscribe(queue)
    return resp


async def _deliver(
    send: Callable[[str, dict[str, Any]], Awaitable[None]],
    rt: ResourceType,
    event: Event,
    wanted: Callable[[dict[str, Any] | None], bool],
) -> None:
    if (event.group, event.plural) != (rt.group, rt.plural):
        return
    now, before = wanted(event.obj), wanted(event.old)
    if event.type == "MODIFIED":
        kind = "MODIFIED" if now and before else "ADDED" if now else "DELETED" if before else ""
    else:
        kind = event.type if now else ""
    if kind:
        await send(kind, present(rt, event.obj))


def _terminated(pod: dict[str, Any] | None, container: str) -> bool:
    if pod is None:
        return True
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return True
    for cs in status.get("containerStatuses") or []:
        if cs.get("name") == container and (cs.get("state") or {}).get("terminated"):
            return True
    return False


def _concerns(item: Any, namespace: str, pod: str) -> bool:
    if isinstance(item, LogWritten):
        return (item.namespace, item.pod) == (namespace, pod)
    if isinstance(item, Event):
        md = item.obj.get("metadata") or {}
        return item.plural == "pods" and item.group == "" and md.get("name") == pod and \
            md.get("namespace") == namespace
    return item is CLOSING


async def _next_change(queue: asyncio.Queue[Any], namespace: str, pod: str) -> Any:
    """Wait (up to a second) for a change of this pod or its log, taking a burst of changes
    at once; other pods' changes wake nothing (a cluster with many followers stays cheap)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 1.0
    while True:
        item = await asyncio.wait_for(queue.get(), max(0.0, deadline - loop.time()))
        found = item if _concerns(item, namespace, pod) else None
        while not queue.empty():
            more = queue.get_nowait()
            if more is CLOSING:
                return CLOSING
            if found is None and _concerns(more, namespace, pod):
                found = more
        if found is not None:
            return found


async def follow_log(
    request: web.BaseRequest,
    feed: Feed,
    rt: ResourceType,
    namespace: str,
    pod: str,
    container: str,
    timestamps: bool,
    tail: int | None,
    since: datetime.datetime | None,
    instance: int | None = None,
) -> web.StreamResponse:
    """Stream a container instance's log until the container ends (or the client goes)."""
    queue = feed.subscribe()
    resp = web.StreamResponse(status=200, headers={"Content-Type": "text/plain"})
    resp.enable_chunked_encoding()
    try:
        await resp.prepare(request)
        if instance is None:
            instance = feed.logs.instance(namespace, pod, container) or 0
        lines = feed.logs.read(namespace, pod, container, instance)
        await resp.write(logs.render(lines, timestamps, tail, since, None))
        sent = len(lines)
        while True:
            try:
                current = feed.store.get(rt, namespace, pod)
            except KubeError:
                current = None
            lines = feed.logs.read(namespace, pod, container, instance, sent)
            if lines:
                await resp.write(logs.render(lines, timestamps, None, since, None))
                sent += len(lines)
            if _terminated(current, container):
                break
            try:
                if await _next_change(queue, namespace, pod) is CLOSING:
                    break
            except TimeoutError:
                continue
        await resp.write_eof()
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        feed.unsubscribe(queue)
    return resp
