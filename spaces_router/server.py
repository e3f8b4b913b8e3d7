"""The router's HTTP side: each browser connection in a thread of its own, its requests read
with h11 one after another, each sent on to the editor of the space its path names.

A connection keeps one stream to the editor it last spoke to, and opens another when a request
names another space (browsers send requests for several paths on one connection). A WebSocket
handshake the editor accepts turns the connection into a raw pipe to a stream of its own, until
either side closes. The session cookie is checked on every request, and taken out of what the
editor sees.
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import socketserver
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

import h11
import redis

from spaces_router import pages, paths
from spaces_router.upstream import Forward, NotServing, Replaced, UpstreamError, Upstreams
from tasks import space_sessions
from tasks.space_sessions import SpaceDoor

log = logging.getLogger("hypd.spaces_router")

IDLE_S = 300.0
"""How long a browser connection may wait between requests before the router closes it."""
MAX_FORM = 4096
MAX_HEAD = 64 * 1024
FORWARDING_HEADERS = {b"x-forwarded-for", b"x-forwarded-proto", b"x-forwarded-host", b"forwarded"}
"""Headers a browser may not set for the editor to believe: the router sets its own."""


class Gone(Exception):
    """The browser or the editor closed the connection, or broke HTTP."""


class _Link:
    """One HTTP/1.1 connection read and written through h11 (either side)."""

    def __init__(self, sock: Any, role: Any) -> None:
        self.sock = sock
        self.h11 = h11.Connection(role, max_incomplete_event_size=MAX_HEAD)

    def next_event(self) -> Any:
        while True:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as exc:
                raise Gone(str(exc)) from exc
            if event is not h11.NEED_DATA:
                return event
            try:
                data = self.sock.recv(65536)
            except OSError as exc:  # timeouts included
                raise Gone(str(exc)) from exc
            self.h11.receive_data(data)

    def send(self, *events: Any) -> None:
        for event in events:
            data = self.h11.send(event)
            if data:
                try:
                    self.sock.sendall(data)
                except OSError as exc:
                    raise Gone(str(exc)) from exc


def _cookie(headers: list[tuple[bytes, bytes]]) -> tuple[str | None, bytes | None]:
    """(the session cookie's value, the Cookie header without it — None if nothing is left)."""
    mine: str | None = None
    kept: list[str] = []
    for name, value in headers:
        if name != b"cookie":
            continue
        for part in value.decode("latin-1").split(";"):
            key, _, val = part.strip().partition("=")
            if key == space_sessions.COOKIE:
                mine = mine or val
            elif part.strip():
                kept.append(part.strip())
    return mine, ("; ".join(kept).encode("latin-1") if kept else None)


def _upgrading(request: h11.Request) -> bool:
    headers = {name: value.lower() for name, value in request.headers}
    return b"upgrade" in headers.get(b"connection", b"") and b"upgrade" in headers


class Connection:
    """One browser connection, served until it closes or idles out."""

    def __init__(self, router: Router, sock: socket.socket, peer: str) -> None:
        self.router = router
        self.peer = peer
        sock.settimeout(IDLE_S)
        self.browser = _Link(sock, h11.SERVER)
        self.door: SpaceDoor | None = None
        self.forward: Forward | None = None
        self.editor: _Link | None = None

    # --- the connection -----------------------------------------------------------------

    def serve(self) -> None:
        try:
            while True:
                event = self.browser.next_event()
                if not isinstance(event, h11.Request):
                    return
                if not self.request(event):
                    return
                if (self.browser.h11.our_state, self.browser.h11.their_state) != \
                        (h11.DONE, h11.DONE):
                    return  # a close asked for, or a body left unread
                self.browser.h11.start_next_cycle()
        except Gone:
            return
        except Exception:  # a bug here must not take the process's other connections down
            log.exception("spaces router: a connection failed")
            self._fail_quietly()
        finally:
            self._drop_editor()
            with contextlib.suppress(OSError):
                self.browser.sock.close()

    def _fail_quietly(self) -> None:
        if self.browser.h11.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            with contextlib.suppress(Gone, h11.LocalProtocolError):
                self.answer(*pages.page(502, "Something broke", "hypd's spaces router failed "
                                        "on this request; its log says why."), close=True)

    def answer(self, response: h11.Response, body: bytes, close: bool = False) -> None:
        if close:
            response.headers.append((b"connection", b"close"))
        self.browser.send(response, h11.Data(data=body), h11.EndOfMessage())

    def body(self, limit: int | None = None) -> bytes | None:
        """The request's body (None past `limit`: the rest is not read)."""
        got = bytearray()
        while True:
            event = self.browser.next_event()
            if isinstance(event, h11.EndOfMessage):
                return bytes(got)
            if isinstance(event, h11.Data):
                got += event.data
                if limit is not None and len(got) > limit:
                    return None
            elif event is h11.PAUSED:
                return bytes(got)
            else:
                raise Gone("the request's body ended early")

    # --- one request ----------------------------------------------------------------------

    def request(self, request: h11.Request) -> bool:
        """Serve one request; False when the connection is to close after it."""
        target = request.target.decode("latin-1")
        path = target.partition("?")[0]
        if path == "/healthz":
            self.body(0)
            self.answer(h11.Response(status_code=200, headers=[
                ("content-type", "text/plain"), ("content-length", "3")]), b"ok\n")
            return True
        found = paths.parse(path)
        if found is None:
            return self.refuse(404, "Not found", "This address names no space. Open a space "
                               "from hypd's dashboard (Spaces, then Open).")
        if found.rest is None:
            query = target[len(path):]
            self.body(0)
            self.answer(*pages.page(308, "Moved", "The space is at its path with a slash.",
                                    [("location", found.base + query)]))
            return True
        if found.rest == space_sessions.SESSION_PATH:
            return self.sign_in(request, found)
        secret, _ = _cookie(request.headers)
        door = space_sessions.session(self.router.redis, secret or "")
        if door is None or not door.same_space(found.cluster, found.namespace, found.name):
            return self.refuse(401, "Sign in through hypd", f"Open space {found.name} from "
                               "hypd's dashboard (Spaces, then Open): it signs this browser "
                               "in to the space.")
        if _upgrading(request):
            return self.upgrade(request, door)
        return self.relay(request, door)

    def refuse(self, status: int, title: str, message: str) -> bool:
        """Answer with a page; the connection closes when the request's body is not read."""
        read = self.body(MAX_FORM) is not None
        self.answer(*pages.page(status, title, message), close=not read)
        self.router.logged(self.peer, None, status, "refused")
        return read

    def sign_in(self, request: h11.Request, found: paths.SpacePath) -> bool:
        """The form the dashboard posts: a one-use code swapped for the space's cookie."""
        if request.method != b"POST":
            return self.refuse(405, "Not here", "Sign in by opening the space from hypd's "
                               "dashboard.")
        raw = self.body(MAX_FORM)
        if raw is None:
            self.answer(*pages.page(413, "Too large", "The sign-in form is too large."),
                        close=True)
            return False
        code = (parse_qs(raw.decode("latin-1")).get("code") or [""])[0]
        door = space_sessions.redeem(self.router.redis, code)
        if door is None or not door.same_space(found.cluster, found.namespace, found.name):
            self.answer(*pages.page(403, "This sign-in has expired", "A sign-in is good once, "
                                    "for 30 seconds. Open the space again from hypd's "
                                    "dashboard."))
            self.router.logged(self.peer, None, 403, "sign-in refused")
            return True
        session = space_sessions.open_session(self.router.redis, door)
        cookie = (f"{space_sessions.COOKIE}={session}; Path={found.base}; HttpOnly; Secure; "
                  f"SameSite=Lax; Max-Age={space_sessions.SESSION_TTL_S}")
        self.answer(*pages.page(303, "Signed in", "Opening the space.", [
            ("location", found.base), ("set-cookie", cookie)]))
        self.router.logged(self.peer, door, 303, "signed in")
        return True

    # --- to the editor --------------------------------------------------------------------

    def _headers(self, request: h11.Request) -> list[tuple[bytes, bytes]]:
        _, cookies = _cookie(request.headers)
        kept = [(n, v) for n, v in request.headers
                if n != b"cookie" and n not in FORWARDING_HEADERS]
        if cookies:
            kept.append((b"cookie", cookies))
        return [*kept, (b"x-forwarded-for", self.peer.encode()),
                (b"x-forwarded-proto", self.router.scheme.encode())]

    def _drop_editor(self) -> None:
        if self.forward is not None:
            self.forward.close()
        self.forward = self.editor = self.door = None

    def _editor_for(self, door: SpaceDoor) -> _Link:
        if self.editor is not None and self.door == door and \
                self.editor.h11.our_state is h11.IDLE:
            return self.editor
        self._drop_editor()
        self.forward = self.router.upstreams.connect(door)
        self.editor, self.door = _Link(self.forward.sock, h11.CLIENT), door
        return self.editor

    def _unreachable(self, exc: Exception) -> bool:
        if isinstance(exc, Replaced):
            return self.refuse(401, "Sign in through hypd", f"{exc}. Open it again from "
                               "hypd's dashboard (Spaces, then Open).")
        if isinstance(exc, NotServing):
            return self.refuse(503, "The space is not running", f"{exc}. Start it from hypd's "
                               "dashboard; this page opens it once it runs.")
        return self.refuse(502, "The space did not answer", str(exc))

    def relay(self, request: h11.Request, door: SpaceDoor) -> bool:
        """One request to the editor and its answer back, streamed as it comes."""
        try:
            editor = self._editor_for(door)
        except (NotServing, Replaced, UpstreamError) as exc:
            return self._unreachable(exc)
        answered = False
        try:
            editor.send(h11.Request(method=request.method, target=request.target,
                                    headers=self._headers(request)))
            while True:
                event = self.browser.next_event()
                if isinstance(event, h11.Data):
                    editor.send(event)
                elif isinstance(event, h11.EndOfMessage):
                    editor.send(h11.EndOfMessage())
                    break
                else:
                    raise Gone("the request's body ended early")
            while True:
                event = editor.next_event()
                if isinstance(event, h11.InformationalResponse):
                    continue
                if isinstance(event, h11.Response):
                    self.browser.send(h11.Response(status_code=event.status_code,
                                                   headers=event.headers,
                                                   reason=event.reason))
                    answered = True
                    status = event.status_code
                elif isinstance(event, h11.Data):
                    self.browser.send(event)
                elif isinstance(event, h11.EndOfMessage):
                    self.browser.send(h11.EndOfMessage())
                    break
                else:
                    raise Gone("the editor closed the connection")
        except Gone as exc:
            error = self.forward.error() if self.forward else None
            self._drop_editor()
            if answered or self.browser.h11.our_state is not h11.SEND_RESPONSE:
                return False
            self.answer(*pages.page(502, "The space did not answer",
                                    error or f"The editor closed the connection ({exc})."),
                        close=True)
            self.router.logged(self.peer, door, 502, request.target)
            return False
        self.router.logged(self.peer, door, status, request.target)
        if editor.h11.our_state is h11.DONE and editor.h11.their_state is h11.DONE:
            editor.h11.start_next_cycle()
        else:
            self._drop_editor()
        return True

    def upgrade(self, request: h11.Request, door: SpaceDoor) -> bool:
        """A WebSocket handshake: on a stream of its own; once the editor answers 101 the
        connection is a pipe, and ends when either side closes."""
        self.body(0)
        self._drop_editor()
        try:
            forward = self.router.upstreams.connect(door)
        except (NotServing, Replaced, UpstreamError) as exc:
            self._unreachable(exc)
            return False
        editor = _Link(forward.sock, h11.CLIENT)
        try:
            editor.send(h11.Request(method=request.method, target=request.target,
                                    headers=self._headers(request)), h11.EndOfMessage())
            event = editor.next_event()
            if isinstance(event, h11.InformationalResponse) and event.status_code == 101:
                self.browser.send(h11.InformationalResponse(
                    status_code=101, headers=event.headers, reason=event.reason))
                self.router.logged(self.peer, door, 101, request.target)
                _pipe(self.browser.sock, forward.sock,
                      self.browser.h11.trailing_data[0], editor.h11.trailing_data[0])
                return False
            if not isinstance(event, h11.Response):
                raise Gone("the editor closed the connection")
            self.browser.send(h11.Response(status_code=event.status_code,
                                           headers=[*event.headers, (b"connection", b"close")],
                                           reason=event.reason))
            while not isinstance(event := editor.next_event(), h11.EndOfMessage):
                if not isinstance(event, h11.Data):
                    raise Gone("the editor closed the connection")
                self.browser.send(event)
            self.browser.send(h11.EndOfMessage())
            return False
        except Gone:
            if self.browser.h11.our_state is h11.SEND_RESPONSE:
                self.answer(*pages.page(502, "The space did not answer",
                                        forward.error() or "The editor closed the "
                                        "connection."), close=True)
            return False
        finally:
            forward.close()


def _pipe(browser: socket.socket, editor: Any, to_editor: bytes, to_browser: bytes) -> None:
    """Bytes both ways until either side closes (a WebSocket after its handshake)."""
    browser.settimeout(None)
    try:
        if to_editor:
            editor.sendall(to_editor)
        if to_browser:
            browser.sendall(to_browser)
        ends = {browser: editor, editor: browser}
        while True:
            readable, _, _ = select.select(list(ends), [], [])
            for side in readable:
                data = side.recv(65536)
                if not data:
                    return
                ends[side].sendall(data)
    except OSError:
        return


class Router(socketserver.ThreadingTCPServer):
    """The listening socket; a thread per browser connection."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], conn: redis.Redis, origin: str,
                 upstreams: Upstreams | None = None,
                 log_line: Callable[[str], None] | None = None) -> None:
        self.redis = conn
        self.scheme = origin.split("://", 1)[0]
        self.upstreams = upstreams or Upstreams()
        self._log_line = log_line or log.info
        self._log_lock = threading.Lock()
        super().__init__(address, _Handler)

    def logged(self, peer: str, door: SpaceDoor | None, status: int, what: Any) -> None:
        """One line per answer: who, which space, what (a path without its query, a
        sign-in), the status. Never a cookie or a code."""
        text = what.decode("latin-1") if isinstance(what, bytes) else str(what)
        where = f"{door.cluster}/{door.namespace}/{door.name}" if door else "-"
        line = f"{peer} {door.who if door else '-'} {where} {status} {text.partition('?')[0]}"
        with self._log_lock:
            self._log_line(line)


class _Handler(socketserver.BaseRequestHandler):
    server: Router

    def handle(self) -> None:
        Connection(self.server, self.request, self.client_address[0]).serve()
