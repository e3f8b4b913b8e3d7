"""The `hypd` command: the one composition root.

`hypd up` runs a whole local stack in the foreground: its own redis-server (unless
HYPD_REDIS_URL is set), in sandbox mode the local AWS, a Celery worker and the web server,
each a child process that reads its settings from the environment this command prepares.
Only this module may import sandbox and mcp_server, lazily, to start them.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable

from cloud.settings import Settings, SettingsError

READY_PREFIX = "hypd ready: "
TOKEN_FILE = "operator-token"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _log(message: str) -> None:
    print(f"hypd: {message}", file=sys.stderr, flush=True)


# settings from flags ------------------------------------------------------------------------

def _apply_flags(args: argparse.Namespace) -> None:
    """Flags override the environment, and children inherit the environment."""
    mapping = {
        "aws": "HYPD_AWS",
        "region": "HYPD_REGION",
        "host": "HYPD_HOST",
        "port": "HYPD_PORT",
        "redis_url": "HYPD_REDIS_URL",
        "data_dir": "HYPD_DATA_DIR",
        "sandbox_speed": "HYPD_SANDBOX_SPEED",
    }
    for attr, var in mapping.items():
        value = getattr(args, attr, None)
        if value is not None:
            os.environ[var] = str(value)


def _ensure_operator_token(settings: Settings) -> str | None:
    """With no tokens configured, make (once) and reuse an operator token in the data dir."""
    if settings.operator_token or settings.viewer_token or settings.tokens_file:
        return None
    settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = settings.data_dir / TOKEN_FILE
    if path.exists():
        token = path.read_text().strip()
    else:
        token = "hypd_" + secrets.token_urlsafe(32)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(token + "\n")
    os.environ["HYPD_OPERATOR_TOKEN"] = token
    return token


# children -----------------------------------------------------------------------------------

class Child:
    """A supervised child process in its own process group (so it can be killed whole)."""

    def __init__(self, name: str, argv: list[str]) -> None:
        self.name = name
        self.argv = argv
        self.proc: subprocess.Popen | None = None
        self.restarts = 0

    def start(self) -> None:
        self.proc = subprocess.Popen(self.argv, start_new_session=True)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace_s: float = 10.0) -> None:
        if not self.proc or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=grace_s)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def _start_redis(settings: Settings) -> tuple[Child, str]:
    binary = shutil.which("redis-server")
    if not binary:
        raise SettingsError("redis-server is not installed (Debian: apt-get install "
                            "redis-server), or set HYPD_REDIS_URL")
    port = _free_port()
    argv = [binary, "--bind", "127.0.0.1", "--port", str(port), "--protected-mode", "yes"]
    if settings.aws_mode == "aws":
        # The panel's own records must survive a restart: AOF, fsync on every write.
        settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        argv += ["--dir", str(settings.data_dir), "--appendonly", "yes",
                 "--appendfsync", "always", "--save", ""]
    else:
        argv += ["--dir", tempfile.gettempdir(), "--save", "", "--appendonly", "no"]
    child = Child("redis", argv)
    child.start()
    url = f"redis://127.0.0.1:{port}/0"
    _wait_for(lambda: _redis_ping(url), 10, "redis-server did not start")
    return child, url


def _redis_ping(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_timeout=0.5).ping())
    except redis.RedisError:
        return False


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/healthz", timeout=1) as reply:
            return reply.status == 200
    except OSError:
        return False


def _wait_for(check: Callable[[], bool], timeout_s: float, failure: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise SettingsError(failure)


def _hypd(*args: str) -> list[str]:
    return [sys.executable, "-m", "app.cli", *args]


def cmd_up(args: argparse.Namespace) -> int:
    _apply_flags(args)
    settings = Settings.from_env()
    token = _ensure_operator_token(settings)
    children: list[Child] = []
    local_aws = None
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        if not settings.redis_url:
            redis_child, url = _start_redis(settings)
            children.append(redis_child)
            os.environ["HYPD_REDIS_URL"] = url
        if settings.aws_mode == "sandbox":
            from sandbox.local_aws import LocalAws, client_env

            local_aws = LocalAws(speed=settings.sandbox_speed)
            endpoint = local_aws.start()
            os.environ.update(client_env(endpoint, settings.region))
            _log(f"sandbox: local AWS at {endpoint}")
        base = f"http://{settings.host}:{settings.port}"
        worker = Child("worker", _hypd("worker", "--concurrency", str(args.concurrency)))
        web = Child("web", _hypd("web"))
        services = [worker, web]
        for child in services:
            child.start()
            children.append(child)
        _wait_for(lambda: stopping or _healthy(base) or not web.alive(), 60,
                  "the web server did not answer /healthz")
        if stopping or not web.alive():
            return 1
        if token:
            _log(f"operator token (kept in {settings.data_dir / TOKEN_FILE}): {token}")
        print(f"{READY_PREFIX}{base}/", flush=True)
        while not stopping:
            for child in services:
                if not child.alive():
                    child.restarts += 1
                    _log(f"{child.name} exited ({child.proc.returncode}); restarting")
                    child.start()
            time.sleep(0.5)
        return 0
    finally:
        for child in reversed(children):
            child.stop()
        if local_aws is not None:
            local_aws.stop()


def cmd_web(args: argparse.Namespace) -> int:
    _apply_flags(args)
    settings = Settings.from_env()
    settings.redis  # noqa: B018  (fail now, with the reason, if Redis is not configured)
    argv = [
        sys.executable, "-m", "gunicorn",
        "--bind", f"{settings.host}:{settings.port}",
        "--workers", str(args.workers),
        "--threads", str(args.threads),
        "--worker-class", "gthread",
        "--no-control-socket",
        "--timeout", "120",
        "--graceful-timeout", "5",
        "--access-logfile", "-" if args.access_log else "/dev/null",
        "app.wsgi:app",
    ]
    os.execv(sys.executable, argv)
    return 0  # not reached


def cmd_worker(args: argparse.Namespace) -> int:
    _apply_flags(args)
    from tasks.celery_app import worker_app

    worker_app().worker_main([
        "worker", "--loglevel", args.loglevel, "--concurrency", str(args.concurrency),
        "--pool", "prefork", "--without-gossip", "--without-mingle", "--without-heartbeat",
    ])
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    from mcp_server.server import run

    settings = Settings.from_env()
    run(api_url=args.api_url or settings.api_url, token=settings.token, http=args.http,
        host=args.mcp_host, port=args.mcp_port, read_only=args.read_only)
    return 0


def cmd_sandbox(args: argparse.Namespace) -> int:
    _apply_flags(args)
    from sandbox.serve import run

    settings = Settings.from_env()
    run(speed=settings.sandbox_speed, port=args.aws_port, region=settings.region)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hypd", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--aws", choices=["sandbox", "aws"], help="HYPD_AWS")
        p.add_argument("--region", help="HYPD_REGION")
        p.add_argument("--redis-url", dest="redis_url", help="HYPD_REDIS_URL")
        p.add_argument("--data-dir", dest="data_dir", help="HYPD_DATA_DIR")
        p.add_argument("--sandbox-speed", dest="sandbox_speed", type=float,
                       help="HYPD_SANDBOX_SPEED")

    up = sub.add_parser("up", help="run the whole local stack in the foreground")
    common(up)
    up.add_argument("--host", help="HYPD_HOST")
    up.add_argument("--port", type=int, help="HYPD_PORT")
    up.add_argument("--concurrency", type=int, default=4, help="worker processes")
    up.set_defaults(func=cmd_up)

    web = sub.add_parser("web", help="the web server (REST, WebSocket, dashboard)")
    common(web)
    web.add_argument("--host", help="HYPD_HOST")
    web.add_argument("--port", type=int, help="HYPD_PORT")
    web.add_argument("--workers", type=int, default=1)
    web.add_argument("--threads", type=int, default=32,
                     help="each open WebSocket or long-poll holds a thread")
    web.add_argument("--access-log", action="store_true")
    web.set_defaults(func=cmd_web)

    worker = sub.add_parser("worker", help="a Celery worker running operations")
    common(worker)
    worker.add_argument("--concurrency", type=int, default=4)
    worker.add_argument("--loglevel", default="INFO")
    worker.set_defaults(func=cmd_worker)

    mcp = sub.add_parser("mcp", help="the MCP server (stdio, or --http)")
    mcp.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    mcp.add_argument("--host", dest="mcp_host", default="127.0.0.1")
    mcp.add_argument("--port", dest="mcp_port", type=int, default=3098)
    mcp.add_argument("--api-url", dest="api_url", help="HYPD_API_URL")
    mcp.add_argument("--read-only", action="store_true", help="publish read tools only")
    mcp.set_defaults(func=cmd_mcp)

    sandbox = sub.add_parser("sandbox", help="the local AWS alone; prints its environment")
    common(sandbox)
    sandbox.add_argument("--aws-port", dest="aws_port", type=int, default=0)
    sandbox.set_defaults(func=cmd_sandbox)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except SettingsError as exc:
        print(f"hypd: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
