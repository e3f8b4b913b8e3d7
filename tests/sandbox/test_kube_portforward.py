"""sandbox/kube/portforward.py's pieces the official client never sends wrong: the `ports`
parameter as the kubelet reads it, and an HTTP/1.1 stream answered request after request
(tests/sandbox/test_workloads.py drives the whole port-forward with the official client)."""

from __future__ import annotations

import pytest
from multidict import MultiDict

from sandbox.kube.errors import KubeError
from sandbox.kube.portforward import _Port, ports_asked


def test_ports_are_read_repeated_or_comma_separated():
    assert ports_asked(MultiDict([("ports", "8888,9"), ("ports", "22")])) == [8888, 9, 22]


@pytest.mark.parametrize("query, says", [
    ([], '"ports" is required'),
    ([("ports", "http")], 'unable to parse "http" as a port'),
    ([("ports", "0")], "port 0 must be > 0 and < 65536"),
    ([("ports", "70000")], "port 70000 must be > 0"),
])
def test_a_bad_ports_parameter_is_400(query, says):
    with pytest.raises(KubeError) as refused:
        ports_asked(MultiDict(query))
    status = refused.value.status()
    assert status["code"] == 400 and says in status["message"]


def test_a_stream_is_answered_request_after_request_even_when_split_anyhow():
    asked = []

    def handler(path, method, body, headers):
        asked.append((method, path, body))
        return 200, "application/json", b'{"ok": true}'

    port = _Port(0, 8888, handler)
    stream = (b"GET /api/status HTTP/1.1\r\nHost: pod\r\n\r\n"
              b"POST /x HTTP/1.1\r\nHost: pod\r\nContent-Length: 3\r\n\r\nabc")
    out = b"".join(port.receive(stream[i:i + 7]) for i in range(0, len(stream), 7))
    assert asked == [("GET", "/api/status", b""), ("POST", "/x", b"abc")]
    assert out.count(b"HTTP/1.1 200 ") == 2 and out.count(b'{"ok": true}') == 2
    assert port.receive(b"NOT HTTP\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    assert port.receive(b"GET / HTTP/1.1\r\n\r\n") == b""  # a broken stream stays broken
