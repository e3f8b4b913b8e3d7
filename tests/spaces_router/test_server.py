"""The spaces router's HTTP side on a real socket and a real Redis, with editors played by a
small HTTP server at the far end of each stream (what `pods/portforward` gives the router is
a socket; tests/spaces_router/test_router_stack.py goes through the sandbox's real one).

What is shown: a session opens only its own space and only with its cookie; the sign-in code is
good once; the editor sees the request as the browser sent it less the session cookie and any
forwarding header the browser made up; one connection keeps one stream per space it talks
to; a WebSocket handshake becomes a pipe; an editor that goes away mid-answer is a 502 page,
not a hang."""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Iterator
from typing import Any

import h11
import pytest

from spaces_router.server import Router
from spaces_router.upstream import NotServing, Replaced
from tasks import space_sessions
from tasks.space_sessions import SpaceDoor

LAB = SpaceDoor("lab", "us-west-2", "default", "nb", "uid-1", "operator")
OTHER = SpaceDoor("lab", "us-west-2", "default", "other", "uid-2", "operator")
BASE = "/s/lab/default/nb/"


class FakeEditor:
    """An editor behind one stream: answers each request with what it received (JSON-ish
    lines), or 101 and an echo for a WebSocket handshake, or closes mid-answer (`hang_up`)."""

    def __init__(self, sock: socket.socket, seen: list[dict[str, Any]], hang_up: bool) -> None:
        self.sock, self.seen, self.hang_up = sock, seen, hang_up
        threading.Thread(target=self.run, daemon=True).start()

    def run(self) -> None:
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    data = self.sock.recv(65536)
                    conn.receive_data(data)
                    if not data:
                        return
                    continue
                if isinstance(event, h11.Request):
                    headers = {n.decode(): v.decode() for n, v in event.headers}
                    self.seen.append({"target": event.target.decode(), "headers": headers,
                                      "method": event.method.decode()})
                    body = bytearray()
                    while not isinstance(event := conn.next_event(), h11.EndOfMessage):
                        if event is h11.NEED_DATA:
                            conn.receive_data(self.sock.recv(65536))
                        elif isinstance(event, h11.Data):
                            body += event.data
                    if self.hang_up:
                        self.sock.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npart")
                        self.sock.close()
                        return
                    if headers.get("upgrade") == "websocket":
                        self.sock.sendall(conn.send(h11.InformationalResponse(
                            status_code=101, headers=[("upgrade", "websocket"),
                                                      ("connection", "Upgrade")])))
                        while data := self.sock.recv(65536):
                            self.sock.sendall(b"echo:" + data)
                        return
                    reply = f"{len(self.seen)} {bytes(body).decode()}".encode()
                    self.sock.sendall(conn.send(h11.Response(status_code=200, headers=[
                        ("content-length", str(len(reply))), ("x-editor", "yes")])))
                    self.sock.sendall(conn.send(h11.Data(data=reply)))
                    self.sock.sendall(conn.send(h11.EndOfMessage()))
                    conn.start_next_cycle()
                else:
                    return
        except OSError:
            return


class FakeForward:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def error(self) -> str | None:
        return None

    def close(self) -> None:
        self.sock.close()


class FakeUpstreams:
    """Streams to editors played here; counts the streams each space got."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.streams: dict[str, int] = {}
        self.running = {LAB.name, OTHER.name}
        self.uids = {LAB.name: LAB.uid, OTHER.name: OTHER.uid}
        self.hang_up = False

    def connect(self, door: SpaceDoor) -> FakeForward:
        if self.uids.get(door.name) != door.uid:
            raise Replaced(f"space {door.name} was deleted since this browser signed in to it")
        if door.name not in self.running:
            raise NotServing(f"space {door.name} is not running")
        self.streams[door.name] = self.streams.get(door.name, 0) + 1
        ours, theirs = socket.socketpair()
        FakeEditor(theirs, self.seen, self.hang_up)
        return FakeForward(ours)


@pytest.fixture
def router(redis_db) -> Iterator[tuple[Router, FakeUpstreams, list[str]]]:
    upstreams, lines = FakeUpstreams(), []
    server = Router(("127.0.0.1", 0), redis_db, "http://127.0.0.1:1", upstreams, lines.append)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server, upstreams, lines
    server.shutdown()
    server.server_close()


def _conn(server: Router) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)


def _signed_in(server: Router, door: SpaceDoor = LAB) -> str:
    """A session cookie got the way a browser gets it: the code posted as a form."""
    code = space_sessions.mint_code(server.redis, door)
    conn = _conn(server)
    base = f"/s/{door.cluster}/{door.namespace}/{door.name}/"
    conn.request("POST", base + space_sessions.SESSION_PATH, body=f"code={code}",
                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    reply = conn.getresponse()
    reply.read()
    assert reply.status == 303 and reply.getheader("Location") == base
    cookie = reply.getheader("Set-Cookie")
    attributes = {a.strip().split("=")[0] for a in cookie.split(";")[1:]}
    assert attributes == {"Path", "HttpOnly", "Secure", "SameSite", "Max-Age"}, cookie
    assert f"Path={base};" in cookie and "SameSite=Lax" in cookie
    return cookie.split(";")[0]


def test_a_code_signs_in_once_and_the_session_opens_its_own_space_only(router) -> None:
    server, upstreams, lines = router
    code = space_sessions.mint_code(server.redis, LAB)
    ttl = server.redis.ttl(next(iter(server.redis.scan_iter("hypd:space-code:*"))))
    assert 0 < ttl <= space_sessions.CODE_TTL_S
    assert code not in str(list(server.redis.scan_iter("*")))  # only its hash is kept
    conn = _conn(server)
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    # a code posted to another space's path opens nothing, and is spent
    conn.request("POST", "/s/lab/default/other/_hypd/session", body=f"code={code}",
                 headers=form)
    reply = conn.getresponse()
    assert reply.status == 403 and b"expired" in reply.read()
    conn.request("POST", BASE + "_hypd/session", body=f"code={code}", headers=form)
    reply = conn.getresponse()
    assert reply.status == 403, "a code is good once"
    reply.read()
    cookie = _signed_in(server)
    # no cookie, or this space's cookie on another space: the sign-in page, nothing sent on
    for path, headers in ((BASE, {}), ("/s/lab/default/other/", {"Cookie": cookie})):
        conn.request("GET", path, headers=headers)
        reply = conn.getresponse()
        assert reply.status == 401 and b"dashboard" in reply.read(), path
    assert upstreams.seen == []
    conn.request("GET", BASE + "lab?x=1", headers={"Cookie": cookie})
    reply = conn.getresponse()
    assert reply.status == 200 and reply.getheader("x-editor") == "yes"
    reply.read()
    assert upstreams.seen[-1]["target"] == "/s/lab/default/nb/lab?x=1"
    # the log says who and where, never a cookie or a code
    assert any("operator lab/default/nb 200 /s/lab/default/nb/lab" in line for line in lines)
    assert not any(cookie.split("=")[1] in line or code in line for line in lines)


def test_the_editor_sees_the_request_less_the_session_and_made_up_forwarding(router) -> None:
    server, upstreams, _ = router
    cookie = _signed_in(server)
    conn = _conn(server)
    conn.request("POST", BASE + "api/contents", body=b"hello",
                 headers={"Cookie": f"_xsrf=abc; {cookie}; theme=dark",
                          "X-Forwarded-For": "6.6.6.6", "Origin": "http://127.0.0.1:1"})
    reply = conn.getresponse()
    assert reply.status == 200 and reply.read().endswith(b" hello")
    headers = upstreams.seen[-1]["headers"]
    assert headers["cookie"] == "_xsrf=abc; theme=dark"
    assert headers["x-forwarded-for"] == "127.0.0.1"
    assert headers["x-forwarded-proto"] == "http"
    assert headers["origin"] == "http://127.0.0.1:1"  # the editor checks it against Host


def test_one_connection_keeps_a_stream_per_space_and_switches_when_the_path_does(router):
    server, upstreams, _ = router
    lab, other = _signed_in(server), _signed_in(server, OTHER)
    conn = _conn(server)
    for path, cookie in ((BASE + "a", lab), (BASE + "b", lab),
                         ("/s/lab/default/other/c", other), (BASE + "d", lab)):
        conn.request("GET", path, headers={"Cookie": cookie})
        reply = conn.getresponse()
        assert reply.status == 200, path
        reply.read()
    assert upstreams.streams == {"nb": 2, "other": 1}
    assert [s["target"].rsplit("/", 1)[1] for s in upstreams.seen] == ["a", "b", "c", "d"]


def test_a_websocket_handshake_becomes_a_pipe_to_the_editor(router) -> None:
    server, _, _ = router
    cookie = _signed_in(server)
    sock = socket.create_connection(server.server_address, timeout=10)
    sock.sendall(f"GET {BASE}api/kernels/k/channels HTTP/1.1\r\nHost: x\r\n"
                 f"Upgrade: websocket\r\nConnection: Upgrade\r\nCookie: {cookie}\r\n"
                 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                 "Sec-WebSocket-Version: 13\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 101 ")
    sock.sendall(b"frame-1")
    got = b""
    while len(got) < len(b"echo:frame-1"):
        got += sock.recv(4096)
    assert got == b"echo:frame-1"
    sock.close()


def test_a_stopped_space_a_vanishing_editor_or_a_new_space_is_a_page_not_a_hang(router):
    server, upstreams, _ = router
    cookie = _signed_in(server)
    upstreams.running.discard("nb")
    conn = _conn(server)
    conn.request("GET", BASE, headers={"Cookie": cookie})
    reply = conn.getresponse()
    assert reply.status == 503 and b"not running" in reply.read()
    upstreams.running.add("nb")
    upstreams.hang_up = True
    conn = _conn(server)
    conn.request("GET", BASE, headers={"Cookie": cookie})
    reply = conn.getresponse()
    assert reply.status == 200  # the answer had begun: the connection is cut, not rewritten
    with pytest.raises(http.client.IncompleteRead):
        reply.read()
    # the space deleted and made again by its name: another space, the session opens nothing
    upstreams.hang_up = False
    upstreams.uids["nb"] = "uid-new"
    conn = _conn(server)
    conn.request("GET", BASE, headers={"Cookie": cookie})
    reply = conn.getresponse()
    assert reply.status == 401 and b"deleted since" in reply.read()


def test_paths_that_name_no_space_and_a_base_without_its_slash(router) -> None:
    server, upstreams, _ = router
    conn = _conn(server)
    for path in ("/", "/s/lab/Default/nb/", "/s/lab/default/", "/s/-bad/default/nb/",
                 "/workspaces/default/nb/"):
        conn.request("GET", path)
        reply = conn.getresponse()
        assert reply.status == 404, path
        reply.read()
    conn.request("GET", "/s/lab/default/nb?x=1")
    reply = conn.getresponse()
    assert (reply.status, reply.getheader("Location")) == (308, BASE + "?x=1")
    reply.read()
    conn.request("GET", "/healthz")
    assert conn.getresponse().read() == b"ok\n"
    assert upstreams.seen == []
