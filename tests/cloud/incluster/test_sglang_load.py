"""The SGLang load reader (cloud/incluster/sglang_load.py) against real HTTP servers standing
in for the router's `/list_workers` and the model servers' `/get_load`: the total over the
servers (every data-parallel rank, each server once), a silent server counted at the mean of
the others, 503 when nothing can be read — and the file runs alone on a bare Python (it is
mounted into the router's pod, where hypd's packages are not)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cloud.incluster import sglang_load

PROGRAM = Path(sglang_load.__file__)


class _Fake(ThreadingHTTPServer):
    """Answers GET <path> with the JSON in `answers[path]` (404 otherwise)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Answer)
        self.answers: dict[str, Any] = {}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"


class _Answer(BaseHTTPRequestHandler):
    server: _Fake

    def do_GET(self) -> None:
        found = self.path in self.server.answers
        data = json.dumps(self.server.answers.get(self.path, {"detail": "Not Found"})).encode()
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def fakes() -> Iterator[tuple[_Fake, _Fake, _Fake]]:
    servers = (_Fake(), _Fake(), _Fake())  # the router, two model servers
    for server in servers:
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield servers
    for server in servers:
        server.shutdown()
        server.server_close()


def _closed_port() -> str:
    probe = _Fake()
    url = probe.url
    probe.server_close()
    return url


def _serve(router: _Fake, a: _Fake, b: _Fake, urls: list[str]) -> None:
    router.answers = {"/list_workers": {"urls": urls}}
    a.answers = {"/get_load": [{"dp_rank": 0, "num_reqs": 3, "num_waiting_reqs": 1},
                               {"dp_rank": 1, "num_reqs": 2, "num_waiting_reqs": 0}]}
    b.answers = {"/get_load": [{"dp_rank": 0, "num_reqs": 4, "num_waiting_reqs": 2}]}


def test_the_load_is_the_sum_over_every_server_and_rank_each_server_once(fakes):
    router, a, b = fakes
    # the router in dp-aware mode lists a server once per rank, as <url>@<rank>
    _serve(router, a, b, [a.url, f"{a.url}@1", b.url + "/"])
    assert sglang_load.read_load(router.url, 2.0) == {"load": 9.0, "servers": 2, "unread": 0}
    router.answers = {"/list_workers": {"urls": []}}
    assert sglang_load.read_load(router.url, 2.0) == {"load": 0, "servers": 0, "unread": 0}


def test_a_silent_server_counts_as_the_mean_of_the_others(fakes):
    router, a, b = fakes
    _serve(router, a, b, [a.url, b.url, _closed_port()])
    assert sglang_load.read_load(router.url, 2.0) == {"load": 13.5, "servers": 3, "unread": 1}
    b.answers = {"/get_load": [{"dp_rank": 0}]}  # no num_reqs: not a load, not a zero
    assert sglang_load.read_load(router.url, 2.0) == {"load": 15.0, "servers": 3, "unread": 2}


def test_nothing_readable_is_an_error_not_a_zero(fakes):
    router, a, b = fakes
    _serve(router, a, b, [_closed_port()])
    with pytest.raises(sglang_load.Unreadable, match="none of the router's 1 servers"):
        sglang_load.read_load(router.url, 2.0)
    router.answers = {"/list_workers": {"workers": []}}
    with pytest.raises(sglang_load.Unreadable, match="list of urls"):
        sglang_load.read_load(router.url, 2.0)


def _get(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_the_file_serves_get_load_alone_on_a_bare_python(fakes):
    """As KEDA's metrics-api scaler reads it: GET the URL, take the JSON number at `load`."""
    router, a, b = fakes
    _serve(router, a, b, [a.url, b.url])
    # -I -S: no site-packages, no PYTHONPATH, so nothing of hypd's but the file itself
    proc = subprocess.Popen([sys.executable, "-I", "-S", str(PROGRAM), "--router", router.url,
                             "--host", "127.0.0.1", "--port", "0", "--timeout", "2"],
                            stderr=subprocess.PIPE, text=True)
    try:
        banner = proc.stderr.readline() if proc.stderr else ""
        url = "http://127.0.0.1:" + banner.rsplit(":", 1)[1].split("/", 1)[0]
        assert _get(url + "/load") == (200, {"load": 9.0, "servers": 2, "unread": 0})
        assert _get(url + "/healthz") == (200, {"ok": True})
        assert _get(url + "/metrics")[0] == 404
        router.answers = {}  # the router has no worker list to give
        status, body = _get(url + "/load")
        assert status == 503 and "404" in body["error"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
