"""Shared fixtures: one real stack per test session (per xdist worker)."""

from __future__ import annotations

import pytest

from tests.stack import Stack


@pytest.fixture(scope="session")
def stack():
    running = Stack().start()
    try:
        yield running
    finally:
        running.stop()


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
