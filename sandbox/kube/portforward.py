"""`pods/<name>/portforward` over WebSocket, as the API server relays it to the kubelet.

The channel protocol the official clients speak (`v4.channel.k8s.io`, what the kubelet's
WebSocket port-forward serves; the Python client offers v5 and v4 and gets v4): the request
names the pod's ports (`?ports=8888`, repeated or comma-separated); port *i* has data
channel 2*i* and error channel 2*i*+1; every binary frame starts with its channel byte; the
first frame the server sends on each channel is the port number (two bytes, little end
first); data the client sends on a data channel reaches that port as a TCP stream, and what
the port answers comes back on it. When nothing listens on a port the kubelet says so on
its error channel, in the kubelet's words ("… connect: connection refused").

What listens is the simulator's: `resolve(port)` gives the pod's server on that port, a
function of one HTTP request (the programs' `HttpServer` and model servers), or None. Its
bytes are read and answered as HTTP/1.1 with h11 (keep-alive, one request after another),
so any HTTP client at the far end of the stream works.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import h11
from aiohttp import WSMsgType, web

from sandbox.kube.errors import bad_request

log = logging.getLogger(__name__)

PROTOCOL = "v4.channel.k8s.io"
Handler = Callable[[str, str, bytes, dict[str, str]], tuple[int, str, bytes]]
"""(path, method, body, headers) → (status, content type, body)"""


def ports_asked(query: Any) -> list[int]:
    """The `ports` query parameter's port numbers, in order (400 when missing or bad, as the
    kubelet answers)."""
    ports: list[int] = []
    for value in query.getall("ports", []):
        for part in str(value).split(","):
            try:
                number = int(part)
            except ValueError:
                raise bad_request(f'unable to parse "{part}" as a port: invalid syntax') \
                    from None
            if not 0 < number < 65536:
                raise bad_request(f"port {number} must be > 0 and < 65536")
            ports.append(number)
    if not ports:
        raise bad_request("query parameter \"ports\" is required")
    return ports


def is_upgrade(request: web.BaseRequest) -> bool:
    return request.headers.get("Upgrade", "").lower() == "websocket"


class _Port:
    """One forwarded port: its server and the HTTP/1.1 conversation on its stream."""

    def __init__(self, index: int, number: int, handler: Handler | None) -> None:
        self.data = bytes((2 * index,))
        self.error = bytes((2 * index + 1,))
        self.number = number
        self.handler = handler
        self.http = h11.Connection(h11.SERVER)
        self._request: h11.Request | None = None
        self._body = b""

    def receive(self, data: bytes) -> bytes:
        """The bytes the server sends back for what the client sent (may be none yet)."""
        out = b""
        if self.http.their_state is h11.ERROR:
            return out  # the stream is garbage already: answered once
        self.http.receive_data(data)
        while True:
            try:
                event = self.http.next_event()
            except h11.RemoteProtocolError as exc:
                return out + self._answer(exc.error_status_hint, str(exc).encode())
            if event is h11.PAUSED and self.http.states == {h11.CLIENT: h11.DONE,
                                                            h11.SERVER: h11.DONE}:
                self.http.start_next_cycle()  # keep-alive: the next request on the stream
                continue
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return out
            if isinstance(event, h11.Request):
                self._request, self._body = event, b""
            elif isinstance(event, h11.Data):
                self._body += bytes(event.data)
            elif isinstance(event, h11.EndOfMessage) and self._request is not None:
                out += self._serve(self._request, self._body)
                self._request = None
            elif isinstance(event, h11.ConnectionClosed):
                return out

    def _serve(self, request: h11.Request, body: bytes) -> bytes:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in request.headers}
        assert self.handler is not None
        status, content_type, answer = self.handler(
            request.target.decode("latin-1"), request.method.decode("ascii"), body, headers)
        return self._answer(status, answer, content_type)

    def _answer(self, status: int, body: bytes, content_type: str = "text/plain") -> bytes:
        if self.http.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return b""  # h11 lets a server answer a garbled request from IDLE
        out = self.http.send(h11.Response(status_code=status, headers=[
            ("Content-Type", content_type), ("Content-Length", str(len(body)))])) or b""
        out += self.http.send(h11.Data(data=body)) or b""
        out += self.http.send(h11.EndOfMessage()) or b""
        return out


async def serve(request: web.BaseRequest, pod: dict[str, Any],
                resolve: Callable[[int], Handler | None]) -> web.WebSocketResponse:
    """Forward the asked ports of a running pod until the client closes."""
    numbers = ports_asked(request.query)
    md = pod.get("metadata") or {}
    ws = web.WebSocketResponse(protocols=(PROTOCOL,))
    await ws.prepare(request)
    ports = [_Port(i, n, resolve(n)) for i, n in enumerate(numbers)]
    for port in ports:
        first = port.number.to_bytes(2, "little")
        await ws.send_bytes(port.data + first)
        await ws.send_bytes(port.error + first)
    for port in ports:
        if port.handler is None:
            await ws.send_bytes(port.error + (
                f"error forwarding port {port.number} to pod {md.get('name')}, uid "
                f"{md.get('uid')}: failed to connect to localhost:{port.number} inside the "
                f"pod's network namespace: dial tcp4 127.0.0.1:{port.number}: connect: "
                "connection refused").encode())
    by_channel = {p.data[0]: p for p in ports}
    async for message in ws:
        if message.type is not WSMsgType.BINARY or not message.data:
            continue
        port = by_channel.get(message.data[0])
        if port is None or port.handler is None:
            continue  # an error channel is the server's, or nothing listens
        answer = port.receive(message.data[1:])
        if answer:
            await ws.send_bytes(port.data + answer)
    return ws
