"""Inference endpoints on a sandbox cluster: what a test request through the panel costs
beside its floor, and how long a deploy, a pool reassignment and a model download take end to
end.

Starts a local stack (hypd web's own defaults), makes one GPU cluster, and prints:

- `POST …/endpoints/<e>/invoke`: the route's server time (`Server-Timing`: the endpoint read
  from the cluster, the service proxy call, the answer) and its floor — the one service
  proxy call (`cloud.kube.service_proxy`) made from this process with the product's client,
  so the difference is finding the endpoint, Flask, auth and the schemas;
- a vLLM endpoint's create, a pool worker's reassignment and a model download: from the
  request to the end of its operation as a client following it sees it (sandbox speed 1000).

Prints figures; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.status_reads import machine
from tests.app.test_clusters_api import _body, _create
from tests.app.test_endpoints_api import GPU_TYPE, _upload_model
from tests.stack import Stack

PROMPT = {"prompt": "Say hello to the bench", "max_tokens": 8}


def _stats(ms: list[float]) -> str:
    ordered = sorted(ms)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {statistics.median(ordered):7.1f}  p95 {p95:7.1f}  max {ordered[-1]:7.1f}"


def _timed(stack: Stack, method: str, path: str, body: dict) -> float:
    start = time.monotonic()
    with stack.client() as c:
        reply = c.request(method, path, json=body)
    assert reply.status_code == 202, reply.text
    op = stack.wait_operation(reply.json()["operation"]["id"], timeout=180)
    assert op["status"] == "succeeded", op
    return time.monotonic() - start


def invokes(stack: Stack, cluster: str, n: int) -> list[float]:
    server = []
    with stack.client() as c:
        for _ in range(n):
            reply = c.post(f"/api/v1/clusters/{cluster}/endpoints/chat/invoke", json=PROMPT)
            reply.raise_for_status()
            server.append(float(reply.headers["Server-Timing"].split("dur=", 1)[1]))
    return server


def floor(stack: Stack, cluster: str, n: int) -> list[float]:
    os.environ.update({k: v for k, v in stack.env.items() if k.startswith(("AWS_", "HYPD_"))})
    from cloud import eks, kube

    api = eks.api_client(cluster, stack.env["HYPD_REGION"])
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        status, _ = kube.service_proxy(api, "default", "chat", "http", "v1/completions",
                                       {"model": "tiny", **PROMPT}, 64 * 1024)
        assert status == 200
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--invokes", type=int, default=50)
    args = parser.parse_args()
    print(f"machine: {machine()}")
    stack = Stack(web_args=()).start()
    try:
        cluster = "bench-inf"
        assert _create(stack, _body(cluster, instance_type=GPU_TYPE, instance_count=1))[
            "status"] == "succeeded"
        for model in ("tiny", "llama"):
            _upload_model(stack, cluster, model)
        base = f"/api/v1/clusters/{cluster}"
        took = _timed(stack, "POST", f"{base}/endpoints", {
            "name": "chat", "kind": "vllm", "model": "tiny", "gpus": 1, "replicas": 2})
        print(f"vLLM endpoint, 2 servers: create {took:5.2f} s (to the end of its operation)")
        _timed(stack, "POST", f"{base}/endpoints", {
            "name": "pool", "kind": "vllm", "model": "tiny", "gpus": 1, "replicas": 2,
            "service": "pool", "pool_models": ["tiny", "llama"]})
        with stack.client("viewer") as c:
            worker = c.get(f"{base}/endpoints/pool").json()["workers"][0]["name"]
        took = _timed(stack, "POST", f"{base}/endpoints/pool/reassign",
                      {"worker": worker, "model": "llama"})
        print(f"pool worker reassigned: {took:5.2f} s")
        took = _timed(stack, "POST", f"{base}/models", {
            "name": "bench-model", "source": "huggingface", "repo": "acme/bench"})
        print(f"model download (4 files): {took:5.2f} s")
        print(f"POST invoke   server ms: {_stats(invokes(stack, cluster, args.invokes))}")
        print(f"floor: service proxy ms: {_stats(floor(stack, cluster, args.invokes))}")
        print(f"machine after: {machine()}")
    finally:
        stack.stop()


if __name__ == "__main__":
    main()
