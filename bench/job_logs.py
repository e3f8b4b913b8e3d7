"""Live job logs over the WebSocket: lines per second into one client, and the end-to-end
delay of a line with many tails open at once.

Starts a local stack (`hypd web` with enough threads for the tails: each WebSocket holds a
thread), makes one spot GPU cluster with the training operator on, and prints:

- **throughput**: one job printing `--lines` lines over `--print-seconds` (100,000 lines/s
  by default: more than the path carries), read from its start by one WebSocket client
  (aiohttp, parsing every message as a browser would): lines/s from its first line to its
  last, and the lines the server dropped for it. Floor: the same pod's log read in this
  process straight from the Kubernetes API (`follow=true`), the ceiling the WebSocket path
  adds a hop to;
- **delay with N tails** (`--tails`, default 100): `--jobs` jobs printing steadily, the tails
  spread over them; a line's delay is the time a client has it less the time the kubelet
  stamped it (the sandbox runs on this machine: one clock). p50/p95/max over every line every
  client got. Floor: the same delay for one direct Kubernetes follow of one of those pods,
  measured at the same time.

Prints figures; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp

from bench.status_reads import machine
from tests.app.jobkit import TORCHRUN, submit, training_cluster, wait_state
from tests.stack import Stack

GOAL_LINES_S = 20_000
GOAL_P95_MS = 200
DROPPED = [0]  # lines the server dropped for a slow client (drop-with-marker)


def _age_ms(stamp: str, now: float) -> float:
    when = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    return (now - when) * 1000


def _stats(ms: list[float]) -> str:
    ordered = sorted(ms)
    if not ordered:
        return "no lines"
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {statistics.median(ordered):7.1f}  p95 {p95:7.1f}  max {ordered[-1]:7.1f}"


async def _tail(stack: Stack, cluster: str, job: str, delays: list[float] | None = None,
                tail: int = 10_000) -> tuple[int, float]:
    """Read one job's tail to its end: (lines, seconds from first line to last)."""
    url = stack.url.replace("http://", "ws://") + f"/ws/clusters/{cluster}/jobs/{job}/logs"
    count, first, last = 0, 0.0, 0.0
    async with aiohttp.ClientSession() as session, session.ws_connect(
            url, max_msg_size=0, heartbeat=None) as ws:
        await ws.send_str(json.dumps({"type": "auth", "token": stack.viewer_token,
                                      "tail": tail}))
        async for message in ws:
            if message.type != aiohttp.WSMsgType.TEXT:
                break
            data = json.loads(message.data)
            if data["type"] == "dropped":
                DROPPED[0] += data["count"]
            if data["type"] != "lines":
                continue
            now = time.time()
            first = first or time.monotonic()
            last = time.monotonic()
            count += len(data["lines"])
            if delays is not None:
                delays.extend(_age_ms(line["time"], now) for line in data["lines"])
    return count, last - first


def _direct(stack: Stack, cluster: str, job: str, delays: list[float] | None = None
            ) -> tuple[int, float]:
    """The floor: the pod's log followed straight from the Kubernetes API."""
    from cloud import jobs, kube

    kubernetes = stack.kube(cluster)
    pod = f"{job}-pods-0"
    wait = time.monotonic() + 60
    while (kubernetes.get_object("v1", "Pod", pod, "default") or {}).get(
            "status", {}).get("phase") in (None, "Pending") and time.monotonic() < wait:
        time.sleep(0.05)
    response = kube.open_log(kubernetes.api, "default", pod,
                             kube.log_query("pytorch", follow=True, tail=10_000))
    count, first, last = 0, 0.0, 0.0
    try:
        for stamp, _text in jobs.follow_lines(response):
            now = time.time()
            first = first or time.monotonic()
            last = time.monotonic()
            count += 1
            if delays is not None:
                delays.append(_age_ms(stamp, now))
    finally:
        response.release_conn()
    return count, last - first


def throughput(stack: Stack, cluster: str, lines: int, seconds: float) -> None:
    """The job prints `lines` over `seconds`; the reader is connected before it starts."""
    for label, reader in (("WebSocket, one client", "ws"), ("floor: Kubernetes follow", "k8s")):
        job = f"tput-{reader}-{int(time.time()) % 100000}"
        stack.sandbox.set_training(steps=lines, lines_per_second=lines / seconds / 1000,
                                   job=job)  # the sandbox runs at speed 1000
        assert submit(stack, cluster, {"name": job, **TORCHRUN}).status_code == 201
        DROPPED[0] = 0
        if reader == "ws":
            count, took = asyncio.run(_tail(stack, cluster, job))
        else:
            count, took = _direct(stack, cluster, job)
        rate = count / took if took else float("nan")
        print(f"{label:<28} {count:>7} lines in {took:6.2f} s = {rate:9.0f} lines/s"
              + (f"   dropped {DROPPED[0]}   (goal >= {GOAL_LINES_S})" if reader == "ws"
                 else ""))
        wait_state(stack, cluster, job, "succeeded", timeout=120)


def delay(stack: Stack, cluster: str, tails: int, jobs_n: int, seconds: float) -> None:
    rate = 50  # lines a second (real) per job
    names = [f"lag-{i}-{int(time.time()) % 100000}" for i in range(jobs_n)]
    for name in names:
        stack.sandbox.set_training(steps=int(rate * seconds), job=name,
                                   lines_per_second=rate / 1000)  # speed 1000
        assert submit(stack, cluster, {"name": name, **TORCHRUN}).status_code == 201
    floor_delays: list[float] = []
    floor_thread = threading.Thread(target=_direct, args=(stack, cluster, names[0],
                                                          floor_delays))
    floor_thread.start()
    delays: list[float] = []

    async def all_tails() -> list[tuple[int, float]]:
        return await asyncio.gather(*(_tail(stack, cluster, names[i % jobs_n], delays, tail=1)
                                      for i in range(tails)))

    results = asyncio.run(all_tails())
    floor_thread.join()
    got = sum(count for count, _ in results)
    print(f"{tails} tails over {jobs_n} jobs ({rate} lines/s each, {seconds:.0f} s): "
          f"{got} lines delivered; delay ms: {_stats(delays)}   (goal p95 <= {GOAL_P95_MS})")
    print(f"floor: one Kubernetes follow           delay ms: {_stats(floor_delays)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--print-seconds", type=float, default=2.0,
                        help="the throughput job prints its lines over this long")
    parser.add_argument("--tails", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--threads", type=int, default=64,
                        help="hypd web threads per process (each tail holds one)")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    stack = Stack(web_args=("--threads", str(args.threads))).start()
    try:
        cluster = training_cluster(stack)["name"]
        throughput(stack, cluster, args.lines, args.print_seconds)
        delay(stack, cluster, args.tails, args.jobs, args.seconds)
        print(f"machine after: {machine()}")
    finally:
        stack.stop()


if __name__ == "__main__":
    main()
