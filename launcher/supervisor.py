"""The children of `hypd up`: how they are started, logged, stopped, and never orphaned.

Each child runs under launcher/childwatch.py in a session of its own: a Ctrl-C at the terminal
reaches only the supervisor, which stops its children in order (`stop_children`); a
supervisor that dies any other way (SIGKILL, a crash) takes them with it, because each
wrapper watches a pipe whose only write end the supervisor holds. The wrappers write the
children's lines, tagged with their source, to `<data dir>/logs/<source>.log` (and with
--verbose to the terminal too).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

from cloud.settings import Settings, SettingsError

CHILDWATCH = str(Path(__file__).with_name("childwatch.py"))
LOG_DIR = "logs"
SOURCES = ("redis", "worker", "web", "sandbox")
STOP_GRACE_S = 10.0
"""How long each child has, from its SIGTERM, before its process group is SIGKILLed."""
STOP_ORDER = (("web", "worker"), ("sandbox", "redis"))
"""The tiers `stop_children` stops one after the other: the clients first (the web server,
the worker), then what they use (the local AWS, Redis). See `stop_children`."""


def prepare_logs(data_dir: Path) -> Path:
    """`<data dir>/logs`, each source's log of the previous run kept as `<source>.log.1`."""
    logs = data_dir / LOG_DIR
    logs.mkdir(parents=True, exist_ok=True, mode=0o700)
    for source in SOURCES:
        path = logs / f"{source}.log"
        if path.exists():
            path.replace(logs / f"{source}.log.1")
    return logs


class ParentGuard:
    """A pipe whose write end only this process holds (os.pipe's ends are not inherited,
    and children get the read end alone): when this process dies, however, every child's
    read returns EOF."""

    def __init__(self) -> None:
        self.read_fd, self._write_fd = os.pipe()


class Child:
    """One supervised child: the wrapped command, restarted by the supervisor if it exits."""

    def __init__(self, name: str, argv: list[str], logs: Path, guard: ParentGuard,
                 echo: bool = False) -> None:
        self.name = name
        self.argv = argv
        self.log_path = logs / f"{name}.log"
        self._guard = guard
        self._echo = echo
        self.proc: subprocess.Popen | None = None
        self.restarts = 0

    def start(self) -> None:
        wrapped = [sys.executable, CHILDWATCH, "--source", self.name,
                   "--log", str(self.log_path), "--parent-fd", str(self._guard.read_fd),
                   *(["--echo"] if self._echo else []), "--", *self.argv]
        # No preexec_fn: the parent guard needs none, and it is unsafe once threads run.
        self.proc = subprocess.Popen(wrapped, start_new_session=True, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL,
                                     pass_fds=(self._guard.read_fd,))

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def terminate(self) -> bool:
        """SIGTERM the whole group (wrapper, child, the child's own children) without waiting;
        False when there was nothing running to stop."""
        if not self.proc or self.proc.poll() is not None:
            return False
        with contextlib.suppress(ProcessLookupError):  # the group is already gone
            os.killpg(self.proc.pid, signal.SIGTERM)
        return True

    def reap(self, deadline: float) -> None:
        """Wait for the wrapper to exit until `deadline` (time.monotonic()), then SIGKILL
        what is left of the group and wait for that."""
        if not self.proc:
            return
        try:
            self.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM the whole group, then SIGKILL what is left after the grace."""
        if self.terminate():
            self.reap(time.monotonic() + grace_s)


def stop_children(children: Sequence[Child], grace_s: float = STOP_GRACE_S) -> None:
    """Stop every child in two tiers (STOP_ORDER), each child's group SIGKILLed if it has not
    exited `grace_s` after its own SIGTERM.

    Within a tier the children stop together: all are signalled at once (the web server
    first: it stops accepting connections first), then awaited against one shared
    deadline, so a tier takes as long as its slowest child rather than the sum of them.

    The tiers themselves go one after the other, because the first one's graceful exit needs
    the second: gunicorn finishes the requests in flight and Celery's warm shutdown finishes
    the step it is running, and both read and write the panel's records in Redis and call
    the local AWS while doing so. Signalled together, Redis or the local AWS could be gone
    under them, and a step that would have ended cleanly would be cut (and run again after
    its lease at the next start). Nothing in the second tier uses the other (the local AWS
    keeps no state in Redis), so the local AWS and Redis stop together. Web server and worker
    do not need each other either: a request that enqueues an operation while the worker
    stops leaves it queued in Redis for the next worker.

    Each child gets the whole grace after its own SIGTERM, as before (at worst one grace per
    tier instead of one per child). A child whose name is in no tier is taken as a client
    and stopped with the first tier.
    """
    tier_of = {name: index for index, names in enumerate(STOP_ORDER) for name in names}
    for index, names in enumerate(STOP_ORDER):
        tier = sorted((c for c in children if tier_of.get(c.name, 0) == index),
                      key=lambda c: names.index(c.name) if c.name in names else -1)
        signalled = [c for c in tier if c.terminate()]
        deadline = time.monotonic() + grace_s
        for child in signalled:
            child.reap(deadline)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_argv(settings: Settings, port: int) -> list[str]:
    binary = shutil.which("redis-server")
    if not binary:
        raise SettingsError("redis-server is not installed (Debian: apt-get install "
                            "redis-server), or set HYPD_REDIS_URL")
    argv = [binary, "--bind", "127.0.0.1", "--port", str(port), "--protected-mode", "yes"]
    if settings.aws_mode == "aws":
        # The panel's own records must survive a restart: AOF, fsync on every write.
        settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        return [*argv, "--dir", str(settings.data_dir), "--appendonly", "yes",
                "--appendfsync", "always", "--save", ""]
    return [*argv, "--dir", tempfile.gettempdir(), "--save", "", "--appendonly", "no"]


def redis_ping(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_timeout=0.5).ping())
    except redis.RedisError:
        return False


def answers(url: str) -> bool:
    """True when a GET of `url` answers 200 (a child's health or readiness route)."""
    try:
        with urllib.request.urlopen(url, timeout=1) as reply:
            return reply.status == 200
    except OSError:
        return False


def wait_until(check: Callable[[], bool], timeout_s: float) -> bool:
    """True as soon as `check` is; False once `timeout_s` has passed."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False
