"""Shared fixtures: one real stack per test session (per xdist worker)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.stack import REPO, RUNNING, Stack, free_port, tls

SHARED_MODULE_FIXTURE = re.compile(r"""@pytest\.fixture\([^)]*scope=["']module["']""")
GROUPED_SESSION_FIXTURES = ("spaces_cluster", "governed_cluster")
"""Session-scoped clusters whose modules go to one worker together: spread over both, each
worker would make its own (the spaces feature's is among the dearest to make)."""


def _shares_a_module_fixture(test_file: Path) -> bool:
    """The module, or a conftest.py of its folder, defines a module-scoped fixture (read
    from the source: xdist's controller collects nothing)."""
    files = [test_file, test_file.parent / "conftest.py"]
    return any(f.is_file() and SHARED_MODULE_FIXTURE.search(f.read_text()) for f in files)


def _grouped_session_fixture(test_file: Path) -> str | None:
    """The first of GROUPED_SESSION_FIXTURES the module names (read from its source)."""
    if not test_file.is_file():
        return None
    text = test_file.read_text()
    return next((f for f in GROUPED_SESSION_FIXTURES if re.search(rf"\b{f}\b", text)), None)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist load`, except that a module sharing a module-scoped fixture (a cluster, a
    browser) is sent to one worker as a whole: spread over both, each would make its
    cluster; and the modules naming one of GROUPED_SESSION_FIXTURES go to one worker
    together, so that its cluster is made once in the run. xdist's own `loadgroup` does this
    by marks but cannot under pytest 9 (it renames node ids through an attribute pytest 9 no
    longer reads)."""
    if config.getoption("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    root = Path(str(config.rootpath))
    scopes: dict[str, str | None] = {}

    def scope_of(module: str) -> str | None:
        session = _grouped_session_fixture(root / module)
        if session is not None:
            return f"session fixture {session}"
        return module if _shares_a_module_fixture(root / module) else None

    class ModuleFixtureScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            if module not in scopes:
                scopes[module] = scope_of(module)
            return scopes[module] or nodeid

    return ModuleFixtureScheduling(config, log)


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
def spaces_cluster(stack):
    """A one-node cluster with the spaces feature on, shared by the Dev spaces tests of this
    test process (REST and MCP, the kill tests, the page; each space has its own name)."""
    from tests.app.featurekit import spaces_cluster

    return spaces_cluster(stack)


@pytest.fixture(scope="session")
def governed_cluster(stack):
    """A one-node cluster with task governance on, shared by the teams tests of this test
    process (REST, MCP, the kill test, the page; each team has its own name)."""
    from tests.app.teamkit import governed_cluster

    return governed_cluster(stack)


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
                if httpx.get(base + "/healthz", verify=tls(), timeout=1).status_code == 200:
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


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The fault campaign's figures when the run ran it (here, not in tests/faults/: under
    xdist the controlling process never loads that conftest)."""
    from tests.faults.figures import terminal_summary

    terminal_summary(terminalreporter)
