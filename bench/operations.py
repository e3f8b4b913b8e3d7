"""Figures for the operation engine: status reads and network creates on the sandbox."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.stack import Stack


def _percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000  # noqa: E731
    return (f"n={len(samples)} p50={p(0.5):.2f} ms p90={p(0.9):.2f} ms "
            f"p99={p(0.99):.2f} ms mean={statistics.mean(samples) * 1000:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reads", type=int, default=2000)
    parser.add_argument("--creates", type=int, default=5)
    args = parser.parse_args()
    stack = Stack().start()
    try:
        with stack.client() as c:
            durations = []
            op_id = ""
            for i in range(args.creates):
                start = time.perf_counter()
                reply = c.post("/api/v1/networks", json={"name": f"bench-{i}"})
                op_id = reply.json()["operation"]["id"]
                op = stack.wait_operation(op_id)
                assert op["status"] == "succeeded", op
                durations.append(time.perf_counter() - start)
            print(f"network create (7 steps, sandbox speed 1000), first one cold: "
                  f"{', '.join(f'{d:.2f}s' for d in durations)}")

            reads = []
            for _ in range(args.reads):
                start = time.perf_counter()
                c.get(f"/api/v1/operations/{op_id}").raise_for_status()
                reads.append(time.perf_counter() - start)
            print(f"status read GET /api/v1/operations/<id>: {_percentiles(reads)}")

            lists = []
            for _ in range(max(1, args.reads // 10)):
                start = time.perf_counter()
                c.get("/api/v1/operations", params={"limit": 50}).raise_for_status()
                lists.append(time.perf_counter() - start)
            print(f"list GET /api/v1/operations?limit=50: {_percentiles(lists)}")
    finally:
        stack.stop()


if __name__ == "__main__":
    main()
