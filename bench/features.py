"""Managed features on a sandbox cluster: what reading their actual state costs, and how long
a toggle takes end to end.

`GET /api/v1/clusters/<c>/features` reads every feature from AWS and the cluster, never from
a copy. This starts a local stack (hypd web's own defaults), makes one cluster, and prints:

- the read's server time (`Server-Timing`) and its AWS calls per read (the sandbox's call
  log), with the training operator and tiered checkpointing on (more parts to read);
- its floor: the same reads done by the same function (`cloud.features.read`) in this
  process — no HTTP, Flask, auth or schema — so the difference is the web stack's;
- each feature turned on and off again: the time from the PATCH to the operation's end as a
  client following it sees it (sandbox speed 1000: AWS's waits are milliseconds here).

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
from tests.app.featurekit import toggle
from tests.app.test_clusters_api import _body, _create
from tests.stack import Stack

FEATURES = ("training_operator", "inference_operator", "tiered_checkpointing", "autoscaling",
            "observability", "task_governance", "spaces")


def _stats(ms: list[float]) -> str:
    ordered = sorted(ms)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {statistics.median(ordered):8.1f}  p95 {p95:8.1f}  max {ordered[-1]:8.1f}"


def reads(stack: Stack, name: str, n: int) -> tuple[list[float], float]:
    server, calls = [], []
    with stack.client("viewer") as c:
        for _ in range(n):
            before = stack.sandbox.calls()[-1]["seq"]
            reply = c.get(f"/api/v1/clusters/{name}/features")
            reply.raise_for_status()
            server.append(float(reply.headers["Server-Timing"].split("dur=", 1)[1]))
            calls.append(len(stack.sandbox.calls(since=before)))
    return server, statistics.mean(calls)


def floor(stack: Stack, name: str, n: int) -> list[float]:
    """The same reads by the same function, in this process."""
    os.environ.update({k: v for k, v in stack.env.items() if k.startswith(("AWS_", "HYPD_"))})
    from cloud import aws, eks, features, iam, identity, storage

    region = stack.env["HYPD_REGION"]
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        account = iam.account_id(aws.client("sts", region=region))
        facts = identity.facts(aws.client("eks", region=region), name, region, account,
                               storage.shared_bucket_name(name, account, region))
        features.read(features.Sources(
            eks=aws.client("eks", region=region), iam=aws.client("iam", region=region),
            sagemaker=aws.client("sagemaker", region=region),
            api=eks.api_client(name, region), facts=facts, hyperpod_name=name))
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def toggles(stack: Stack, name: str) -> None:
    for feature in FEATURES:
        timings = []
        for enabled in (True, False):
            body: dict = {"enabled": enabled}
            if feature == "autoscaling" and enabled:
                body["groups"] = {"workers": {"min": 0, "max": 2}}
            start = time.monotonic()
            op = toggle(stack, name, {feature: body})
            timings.append(time.monotonic() - start)
            assert op is not None and op["status"] == "succeeded", op
        print(f"{feature:<22} on {timings[0]:5.2f} s   off {timings[1]:5.2f} s   "
              f"(PATCH to the end of its operation)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=20)
    args = parser.parse_args()
    print(f"machine: {machine()}")
    stack = Stack(web_args=()).start()
    try:
        name = "bench-feat"
        assert _create(stack, _body(name))["status"] == "succeeded"
        toggles(stack, name)
        for feature in ("training_operator", "tiered_checkpointing"):
            toggle(stack, name, {feature: {"enabled": True}})
        server, calls = reads(stack, name, args.reads)
        print(f"GET features (2 features on)   server ms: {_stats(server)}  "
              f"| {calls:.0f} AWS calls a read")
        print(f"floor: cloud.features.read     ms:        {_stats(floor(stack, name, args.reads))}")
        print(f"machine after: {machine()}")
    finally:
        stack.stop()


if __name__ == "__main__":
    main()
