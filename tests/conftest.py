"""Shared fixtures: one real stack per test session (per xdist worker)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.stack import REPO, RUNNING, Stack, free_port


@pytest.fixture(autouse=True)
def _roles_hypd_creates_stay_under_the_boundary() -> Iterator[None]:
    """After every test that ran the stack: each IAM role the product created is under
    `/hypd/` with the permissions boundary, and the policies it put on its roles fit inside
    that boundary (read from the local AWS's call log, so no role escapes the check)."""
    yield
    for running in RUNNING:
        problems = running.role_problems()
        assert not problems, problems


@pytest.fixture(scope="session")
def stack():
    running = Stack().start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="session")
def training(stack):
    """A spot GPU cluster with the training operator on, shared by the training job tests
    of this test process (each job has its own name)."""
    from tests.app.jobkit import training_cluster

    return training_cluster(stack)


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    """A real redis-server of its own for unit tests of Redis-backed code."""
    import shutil
    import subprocess

    from tests.stack import _killpg, free_port, wait_until

    port = free_port()
    proc = subprocess.Popen(
        [shutil.which("redis-server") or "redis-server", "--bind", "127.0.0.1", "--port",
         str(port), "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path_factory.mktemp("redis"))],
        stdout=subprocess.DEVNULL, start_new_session=True,
    )
    url = f"redis://127.0.0.1:{port}/0"
    import redis

    def up() -> bool:
        try:
            return bool(redis.Redis.from_url(url).ping())
        except redis.RedisError:
            return False

    wait_until(up, 10, what="redis-server")
    yield url
    _killpg(proc)


@pytest.fixture
def redis_db(redis_url):
    import redis

    conn = redis.Redis.from_url(redis_url, decode_responses=True)
    conn.flushdb()
    yield conn
    conn.flushdb()


@pytest.fixture
def mcp_http(stack: Any) -> Iterator[str]:
    """`hypd mcp --http` against the stack's API (each caller sends its own bearer token)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_server", "--http", "--port", str(port)], cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "HYPD_API_URL": stack.url}, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"MCP HTTP server did not start: {proc.communicate()}")
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
