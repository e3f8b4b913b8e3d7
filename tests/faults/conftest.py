"""The fault campaign's stack and its figures.

One stack per test process, as `hypd up` runs Redis in aws mode (append-only file, fsync
always: it is restarted under the campaign), with the web server reaching Redis through a
proxy that can kill it at the enqueue (redisproxy.py). The campaign (its clean baselines)
is module-scoped, so a campaign module goes whole to one xdist worker. Each test records its
runs' figures; the summary at the end (tests/faults/figures.py) counts kinds x steps x faults
tried, finished and the creates beyond the clean runs'."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.faults.campaign import ActRun, Campaign
from tests.faults.figures import FIGURES
from tests.faults.redisproxy import RedisProxy
from tests.stack import Stack

SETTINGS = {
    # A task's time limit is the visibility timeout less a second: the suite's 5 s cuts
    # long steps (installing KubeRay's 1.3 MB CRDs takes seconds on a loaded machine) again
    # and again. Killed workers are picked up by the sweeper (lease-bound), not by the
    # broker, so a longer visibility costs the campaign nothing.
    "HYPD_VISIBILITY_TIMEOUT_S": "30",
}


@pytest.fixture(scope="session")
def fault_stack() -> Iterator[tuple[Stack, RedisProxy]]:
    stack = Stack(redis_aof=True, settings=SETTINGS).start()
    proxy = RedisProxy(stack.redis_port)
    try:
        stack.kill_web()
        stack.start_web(HYPD_REDIS_URL=proxy.url)
        yield stack, proxy
    finally:
        proxy.close()
        stack.stop()


@pytest.fixture(scope="module")
def campaign(fault_stack: tuple[Stack, RedisProxy]) -> Campaign:
    return Campaign(*fault_stack)


@pytest.fixture
def record(request: pytest.FixtureRequest):
    """Keep runs' figures on the test's report (they travel back from xdist workers)."""

    def keep(runs: list[ActRun]) -> None:
        for run in runs:
            request.node.user_properties.append((FIGURES, json.dumps(run.figures())))

    return keep
