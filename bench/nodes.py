"""Node listing pages on a 2,000-node sandbox cluster: server time per page, cold and warm.

`GET /api/v1/clusters/<c>/nodes` joins every ListClusterNodes page with the cluster's
Kubernetes Nodes. This starts a local stack with `hypd web`'s default server settings,
raises the sandbox's quotas, makes a cluster of five instance groups of 400 nodes
(ml.g4dn.xlarge: 10 addresses a node, so 400 fit one /20), and pages through it:

- cold: the listing's cache dropped before each read (AWS and Kubernetes are read, joined
  and kept);
- warm: every page of a walk through the cluster, the listing served from the cache;
- filtered: warm pages with an instance group and health filter.

Server time is what the app reports in its `Server-Timing` header (from before the token
check to the reply's body being ready); the round trip seen by a keep-alive client is
printed beside it. The floor of a warm page is what it cannot avoid — one Redis GET of the
cached listing, parsing it, filtering, cutting the page and writing its JSON — timed in
this process with no HTTP or Flask. Prints figures; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import bisect
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.status_reads import machine
from cloud.preflight import quota_name
from tasks.nodes import listing_cache_key
from tests.stack import Stack, wait_until

TYPE = "ml.g4dn.xlarge"
GROUPS = 5
PER_GROUP = 400
QUOTAS = ("Maximum number instances allowed per SageMaker HyperPod cluster",
          "Total number of instances allowed across SageMaker HyperPod clusters")


def _row(label: str, server: list[float], trip: list[float] | None = None) -> str:
    def stats(ms: list[float]) -> str:
        ordered = sorted(ms)
        p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
        return (f"p50 {statistics.median(ordered):7.2f}  p95 {p95:7.2f}  "
                f"max {ordered[-1]:7.2f}")
    line = f"{label:<34} n={len(server):<4} server ms: {stats(server)}"
    return line + (f" | round trip p50 {statistics.median(trip):7.2f}" if trip else "")


def _server_ms(reply) -> float:
    return float(reply.headers["Server-Timing"].split("dur=", 1)[1])


def build(stack: Stack, name: str) -> None:
    stack.sandbox.set_quota(GROUPS * PER_GROUP * 2, quota_name=quota_name(TYPE))
    for quota in QUOTAS:
        stack.sandbox.set_quota(GROUPS * PER_GROUP * 2, quota_name=quota)
    started = time.monotonic()
    with stack.client() as c:
        reply = c.post("/api/v1/clusters", json={"name": name, "availability_zone":
                                                 "us-west-2a", "instance_type": TYPE,
                                                 "instance_count": PER_GROUP})
        op = stack.wait_operation(reply.json()["operation"]["id"], 900)
        assert op["status"] == "succeeded", op
        for index in range(1, GROUPS):
            reply = c.post(f"/api/v1/clusters/{name}/instance-groups", json={
                "name": f"g{index}", "instance_type": TYPE, "instance_count": PER_GROUP})
            op = stack.wait_operation(reply.json()["operation"]["id"], 900)
            assert op["status"] == "succeeded", op

    def running() -> bool:
        with stack.client() as c:
            c.get(f"/api/v1/clusters/{name}")  # lets the sandbox's clock move the nodes on
            stack.redis().delete(listing_cache_key(name))
            page = c.get(f"/api/v1/clusters/{name}/nodes",
                         params={"status": "Running", "limit": 1}).json()
        return page["total"] == GROUPS * PER_GROUP

    wait_until(running, 300, interval=1, what="every node running")
    print(f"cluster {name}: {GROUPS} groups x {PER_GROUP} nodes running "
          f"({time.monotonic() - started:.0f} s to build)")


def walk(stack: Stack, name: str, **query) -> tuple[list[float], list[float], int]:
    """One walk through every page: server ms and round-trip ms per page, nodes seen."""
    server, trip, seen, cursor = [], [], 0, None
    with stack.client("viewer") as c:
        while True:
            params = {**query, **({"cursor": cursor} if cursor else {})}
            start = time.perf_counter()
            reply = c.get(f"/api/v1/clusters/{name}/nodes", params=params)
            trip.append((time.perf_counter() - start) * 1000)
            reply.raise_for_status()
            server.append(_server_ms(reply))
            body = reply.json()
            seen += len(body["items"])
            cursor = body["next_cursor"]
            if cursor is None:
                return server, trip, seen


def floor(stack: Stack, name: str, limit: int, passes: int) -> list[float]:
    """The least a warm page costs: GET the cached listing, parse, filter, cut, dump."""
    conn = stack.redis()
    key = listing_cache_key(name)
    with stack.client("viewer") as c:
        c.get(f"/api/v1/clusters/{name}/nodes")  # fill the cache
        raw = conn.get(key)
        assert raw is not None
        samples = []
        for _ in range(passes):
            cursor = None
            while True:
                if conn.ttl(key) < 2:
                    c.get(f"/api/v1/clusters/{name}/nodes")  # keep it cached
                start = time.perf_counter()
                found = json.loads(conn.get(key) or raw)
                items = [n for n in found["items"] if n.get("status")]
                at = bisect.bisect_right(items, cursor, key=lambda n: n["id"]) if cursor else 0
                page = items[at:at + limit]
                json.dumps({"items": page, "total": len(items)}, separators=(",", ":"))
                samples.append((time.perf_counter() - start) * 1000)
                cursor = page[-1]["id"] if at + limit < len(items) else None
                if cursor is None:
                    break
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=100, help="nodes a page")
    parser.add_argument("--cold", type=int, default=10, help="cold reads")
    parser.add_argument("--passes", type=int, default=5, help="warm walks through the cluster")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    stack = Stack(web_args=()).start()  # hypd web's own defaults
    try:
        name = "bench-nodes"
        build(stack, name)
        cold_server, cold_trip = [], []
        with stack.client("viewer") as c:
            for _ in range(args.cold):
                stack.redis().delete(listing_cache_key(name))
                start = time.perf_counter()
                reply = c.get(f"/api/v1/clusters/{name}/nodes", params={"limit": args.limit})
                cold_trip.append((time.perf_counter() - start) * 1000)
                reply.raise_for_status()
                cold_server.append(_server_ms(reply))
        size = len(stack.redis().get(listing_cache_key(name)) or "")
        print(f"cached listing: {size / 1024:.0f} KiB for {GROUPS * PER_GROUP} nodes; "
              f"page size {args.limit}; load average now {machine().rsplit(' ', 1)[-1]}")
        print(_row("cold (AWS + Kubernetes, joined)", cold_server, cold_trip))
        warm_server, warm_trip = [], []
        for _ in range(args.passes):
            with stack.client("viewer") as c:
                c.get(f"/api/v1/clusters/{name}/nodes")  # the listing cached
            server, trip, seen = walk(stack, name, limit=args.limit)
            assert seen == GROUPS * PER_GROUP, seen
            warm_server += server
            warm_trip += trip
        print(_row("warm (every page of a walk)", warm_server, warm_trip))
        filtered_server, filtered_trip = [], []
        for _ in range(args.passes):
            with stack.client("viewer") as c:
                c.get(f"/api/v1/clusters/{name}/nodes")
            server, trip, seen = walk(stack, name, limit=args.limit, instance_group="g2",
                                      health="Schedulable")
            assert seen == PER_GROUP, seen
            filtered_server += server
            filtered_trip += trip
        print(_row("warm, group + health filter", filtered_server, filtered_trip))
        print(_row("floor (Redis GET, parse, cut, dump)",
                   floor(stack, name, args.limit, args.passes)))
        print(f"machine after: {machine()}")
    finally:
        stack.stop()


if __name__ == "__main__":
    main()
