"""A TCP proxy between the web server and Redis that can kill the web server between
recording an operation and enqueuing its first task.

The web server records an operation (one MULTI/EXEC) and then enqueues its first task:
Celery's Redis transport pushes the message onto the queue with `LPUSH celery <message>`.
Both go to the same Redis, over the web server's own connections. Armed, the proxy passes
everything through until a client sends that LPUSH; then, instead of forwarding it, it calls
`strike()` — which SIGKILLs the web server's process group — and drops the connection. So the
web server really dies at that moment (no product code knows or asks), with the operation
recorded and nothing enqueued. Unarmed, it forwards bytes both ways untouched.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable

QUEUE = b"celery"  # Celery's default queue: the only one hypd's tasks use


class RespCommands:
    """Splits a client's byte stream into whole RESP commands (arrays of bulk strings, as
    redis-py sends them), keeping an incomplete tail for the next chunk."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[tuple[bytes, list[bytes]]]:
        """The whole commands now complete: (their raw bytes, their arguments)."""
        self._buffer += data
        found = []
        while True:
            parsed = _command(self._buffer)
            if parsed is None:
                return found
            end, args = parsed
            found.append((self._buffer[:end], args))
            self._buffer = self._buffer[end:]


def _line(buf: bytes, at: int) -> tuple[bytes, int] | None:
    end = buf.find(b"\r\n", at)
    return None if end < 0 else (buf[at:end], end + 2)


def _command(buf: bytes) -> tuple[int, list[bytes]] | None:
    """(end offset, arguments) of the first command in `buf`, or None if incomplete."""
    if not buf:
        return None
    head = _line(buf, 0)
    if head is None:
        return None
    line, at = head
    if not line.startswith(b"*"):  # an inline command
        return at, line.split()
    args = []
    for _ in range(int(line[1:])):
        size_line = _line(buf, at)
        if size_line is None:
            return None
        size, at = int(size_line[0][1:]), size_line[1]
        if len(buf) < at + size + 2:
            return None
        args.append(buf[at:at + size])
        at += size + 2
    return at, args


class RedisProxy:
    """Listens on 127.0.0.1 (`url`), forwards each connection to Redis at `port`."""

    def __init__(self, redis_port: int) -> None:
        self.redis_port = redis_port
        self._server = socket.create_server(("127.0.0.1", 0))
        self.url = f"redis://127.0.0.1:{self._server.getsockname()[1]}/0"
        self._strike: Callable[[], None] | None = None
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self.struck = threading.Event()
        threading.Thread(target=self._accept, name="redis-proxy", daemon=True).start()

    def arm(self, strike: Callable[[], None]) -> None:
        """At the next `LPUSH celery`, call `strike()` instead of forwarding it."""
        with self._lock:
            self.struck.clear()
            self._strike = strike

    def disarm(self) -> None:
        with self._lock:
            self._strike = None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._server.close()
        with self._lock:
            sockets, self._sockets = list(self._sockets), set()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.redis_port), timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()  # Redis is down (restarting): the client retries
                continue
            with self._lock:
                self._sockets.update((client, upstream))
            threading.Thread(target=self._requests, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client), daemon=True).start()

    def _requests(self, client: socket.socket, upstream: socket.socket) -> None:
        """Client → Redis, command by command, watching for the enqueue."""
        commands = RespCommands()
        try:
            while data := client.recv(65536):
                for raw, args in commands.feed(data):
                    if self._enqueue(args) and self._take_strike():
                        return
                    upstream.sendall(raw)
        except OSError:
            pass
        finally:
            self._drop(client, upstream)

    def _enqueue(self, args: list[bytes]) -> bool:
        return len(args) >= 2 and args[0].upper() == b"LPUSH" and args[1] == QUEUE

    def _take_strike(self) -> bool:
        with self._lock:
            strike, self._strike = self._strike, None
        if strike is None:
            return False
        strike()
        self.struck.set()
        return True

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            self._drop(source, sink)

    def _drop(self, *sockets: socket.socket) -> None:
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
            with self._lock:
                self._sockets.discard(sock)
