"""The children of `hypd up`: how they are started, logged, stopped, and never orphaned.

Each child runs under launcher/childwatch.py in a session of its own: a Ctrl-C at the terminal
reaches only the supervisor, which stops its children in order; a supervisor that dies any
other way (SIGKILL, a crash) takes them with it, because each wrapper watches a pipe whose
only write end the supervisor holds. The wrappers write the children's lines, tagged with
their source, to `<data dir>/logs/<source>.log` (and with --verbose to the terminal too).
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
from collections.abc import Callable
from pathlib import Path

from cloud.settings import Settings, SettingsError

CHILDWATCH = str(Path(__file__).with_name("childwatch.py"))
LOG_DIR = "logs"
SOURCES = ("redis", "worker", "web", "sandbox")


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

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM the whole group (wrapper, child, the child's own children), then
        SIGKILL what is left after the grace."""
        if not self.proc or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=grace_s)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


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
