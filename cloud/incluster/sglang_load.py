"""The total load of an SGLang endpoint's servers, as the one number KEDA reads.

It runs beside the SGLang router, in the router's pod (cloud/inference.py `router_objects`).
`GET /load` asks the router which servers it routes to (`GET /list_workers`:
`{"urls": [...]}`), then asks each server for its load (`GET /get_load`: one entry per
data-parallel rank whose `num_reqs` is the scheduler's running plus waiting requests, counted
when asked). It answers `{"load": <sum over the servers>, "servers": <count>,
"unread": <servers that did not answer>}`. KEDA's metrics-api scaler reads `load` with
`metricType: AverageValue`, so the HPA divides the total by the target once
(desired = ceil(load / target)): the target is the load of one server.

Why this program exists: KEDA 2.17's metrics-api scaler reads one value from one URL, and
neither the router nor a server publishes a total. The router's `sgl_router_running_requests`
has one series per worker and KEDA takes the first that matches; its JSON paths (gjson) cannot
add. cloud/inference.py's `scaled_object` cites the sources.

A server that does not answer (it is starting or being replaced) counts as the mean of those
that did, so it neither reads as idle nor as overloaded. When none answers, or the router does
not, the answer is 503 and KEDA keeps the replica count as it is.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_BODY = 1 << 20
MAX_PARALLEL = 16


class Unreadable(Exception):
    """An answer that is not what the router or a server says (wrong shape)."""


def _get_json(url: str, timeout: float) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as reply:
        return json.loads(reply.read(MAX_BODY))


def _base(url: str) -> str:
    """A worker's URL without the router's `@<dp rank>` suffix (its dp-aware mode)."""
    head, sep, rank = url.rpartition("@")
    return (head if sep and rank.isdigit() else url).rstrip("/")


def worker_urls(router: str, timeout: float) -> list[str]:
    """The servers the router routes to, each once."""
    body = _get_json(router.rstrip("/") + "/list_workers", timeout)
    urls = body.get("urls") if isinstance(body, dict) else None
    if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls):
        raise Unreadable("the router's /list_workers has no list of urls")
    found: list[str] = []
    for url in map(_base, urls):
        if url not in found:
            found.append(url)
    return found


def server_load(url: str, timeout: float) -> float:
    """One server's running plus waiting requests, over its data-parallel ranks."""
    body = _get_json(url + "/get_load", timeout)
    ranks = body if isinstance(body, list) else [body]
    total = 0.0
    for rank in ranks:
        value = rank.get("num_reqs") if isinstance(rank, dict) else None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Unreadable(f"{url}/get_load has no num_reqs")
        total += value
    return total


def _read_or_none(url: str, timeout: float) -> float | None:
    try:
        return server_load(url, timeout)
    except (OSError, ValueError, Unreadable):
        return None


def read_load(router: str, timeout: float) -> dict[str, Any]:
    """The endpoint's load now (see the module's docstring); raises when it cannot be read."""
    urls = worker_urls(router, timeout)
    if not urls:
        return {"load": 0, "servers": 0, "unread": 0}
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(urls))) as pool:
        loads = list(pool.map(lambda url: _read_or_none(url, timeout), urls))
    read = [value for value in loads if value is not None]
    if not read:
        raise Unreadable(f"none of the router's {len(urls)} servers answered /get_load")
    unread = len(urls) - len(read)
    total = sum(read) * len(urls) / len(read)
    return {"load": total, "servers": len(urls), "unread": unread}


class LoadServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], router: str, timeout: float) -> None:
        super().__init__(address, _Handler)
        self.router, self.timeout = router, timeout


class _Handler(BaseHTTPRequestHandler):
    server: LoadServer

    def do_GET(self) -> None:
        if self.path == "/healthz":
            self._send(200, {"ok": True})
            return
        if self.path != "/load":
            self._send(404, {"error": "GET /load or /healthz"})
            return
        try:
            self._send(200, read_load(self.server.router, self.server.timeout))
        except (OSError, ValueError, Unreadable) as exc:
            self._send(503, {"error": str(exc)})

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """No access log: KEDA asks every few seconds."""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--router", default="http://127.0.0.1:30000")
    parser.add_argument("--host", default="0.0.0.0")  # KEDA calls from its own pod
    parser.add_argument("--port", type=int, default=29100)
    # the router, then the servers at once: within KEDA's 3 s (KEDA_HTTP_DEFAULT_TIMEOUT)
    parser.add_argument("--timeout", type=float, default=1.0)
    args = parser.parse_args(argv)
    server = LoadServer((args.host, args.port), args.router, args.timeout)
    print(f"serving the load of {args.router}'s servers on :{server.server_port}/load",
          file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
