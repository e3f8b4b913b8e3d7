"""The `hypd` command: the one composition root.

`hypd up` runs a whole local stack in the foreground: its own redis-server (unless
HYPD_REDIS_URL is set), in sandbox mode the local AWS (`hypd sandbox`), a Celery worker and
the web server, each a child process that reads its settings from the environment this
command prepares. Only this module may import sandbox and mcp_server, lazily, to start them.
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from cloud.settings import Settings, SettingsError
from launcher.supervisor import (
    Child,
    ParentGuard,
    answers,
    free_port,
    prepare_logs,
    redis_argv,
    redis_ping,
    stop_children,
    wait_until,
)

READY_PREFIX = "hypd ready: "
TOKEN_FILE = "operator-token"
LOST_STATE = ("the local AWS starts again empty, on the same URL: the VPCs, clusters, nodes and "
              "local Kubernetes made so far are gone, while the panel's records still name them "
              "(delete or re-create them)")
"""Said when the sandbox child is restarted: moto keeps its state in memory only."""


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
        "gate": "HYPD_WEB_GATE",
        "spaces_port": "HYPD_SPACES_PORT",
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


# hypd up ------------------------------------------------------------------------------------

def _hypd(*args: str) -> list[str]:
    return [sys.executable, "-m", "launcher.cli", *args]


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _sign_in_hint(settings: Settings, token: str | None) -> str:
    if token:
        return (f"sign in with the operator token (kept in {settings.data_dir / TOKEN_FILE}): "
                f"{token}")
    if settings.tokens_file:
        return f"sign in with a token from HYPD_TOKENS_FILE ({settings.tokens_file})"
    return "sign in with the token in HYPD_OPERATOR_TOKEN (or HYPD_VIEWER_TOKEN to look only)"


def cmd_up(args: argparse.Namespace) -> int:
    _apply_flags(args)
    settings = Settings.from_env()
    token = _ensure_operator_token(settings)
    logs = prepare_logs(settings.data_dir)
    guard = ParentGuard()
    children: list[Child] = []
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    def child(name: str, argv: list[str]) -> Child:
        made = Child(name, argv, logs, guard, echo=args.verbose)
        made.start()
        children.append(made)
        return made

    def failed(what: str, who: Child) -> int:
        _log(f"{what}; the last lines of {who.log_path}:\n{_tail(who.log_path)}")
        return 1

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        if not settings.redis_url:
            port = free_port()
            redis_child = child("redis", redis_argv(settings, port))
            url = f"redis://127.0.0.1:{port}/0"
            wait_until(lambda: redis_ping(url) or not redis_child.alive(), 10)
            if not redis_ping(url):
                return failed("redis-server did not start", redis_child)
            os.environ["HYPD_REDIS_URL"] = url
        services: list[Child] = []
        if settings.aws_mode == "sandbox":
            from sandbox.env import CONTROL_PATH, UNSET_ENV, client_env

            aws_port = free_port()  # fixed, so that a restarted local AWS keeps its URL
            endpoint = f"http://127.0.0.1:{aws_port}"
            sandbox = child("sandbox", _hypd("sandbox", "--aws-port", str(aws_port)))
            probe = endpoint + CONTROL_PATH
            wait_until(lambda: stopping or answers(probe) or not sandbox.alive(), 60)
            if stopping:
                return 1
            if not answers(probe):
                return failed(f"the local AWS did not answer {probe} within 60 s", sandbox)
            os.environ.update(client_env(endpoint, settings.region))
            for name in UNSET_ENV:
                os.environ.pop(name, None)
            services.append(sandbox)
            _log(f"sandbox: a local AWS at {endpoint} (no AWS account is used)")
        base = f"http://{settings.host}:{settings.port}"
        worker = child("worker", _hypd("worker", "--concurrency", str(args.concurrency)))
        web = child("web", _hypd("web"))
        router = child("spaces-router", _hypd("spaces-router"))
        services += [worker, web, router]
        if not wait_until(lambda: stopping or answers(base + "/healthz") or not web.alive(),
                          60):
            return failed(f"the web server did not answer {base}/healthz within 60 s", web)
        if stopping:
            return 1
        if not web.alive():
            return failed(f"the web server exited ({web.proc.returncode})", web)
        _log(f"logs: {logs} ({', '.join(f'{c.name}.log' for c in children)})"
             + ("" if args.verbose else "; --verbose shows them here too"))
        _log(_sign_in_hint(settings, token))
        print(f"{READY_PREFIX}{base}/", flush=True)
        while not stopping:
            for service in services:
                if not service.alive():
                    service.restarts += 1
                    _log(f"{service.name} exited ({service.proc.returncode}); restarting it "
                         f"(its log: {service.log_path})")
                    if service.name == "sandbox":
                        _log(LOST_STATE)
                    service.start()
            time.sleep(0.5)
        _log("stopping")
        return 0
    finally:
        stop_children(children)


def cmd_web(args: argparse.Namespace) -> int:
    _apply_flags(args)
    settings = Settings.from_env()
    settings.redis  # noqa: B018  (fail now, with the reason, if Redis is not configured)
    from cloud.metrics_dir import prepare

    prepare(settings, f"web-{socket.gethostname()}")
    argv = [
        sys.executable, "-m", "gunicorn",
        "--config", "python:launcher.gunicorn_conf",
        "--bind", f"{settings.host}:{settings.port}",
        "--workers", str(args.workers),
        "--threads", str(args.threads),
        "--worker-class", "app.web_worker.EnvelopeWorker",  # gthread, refusals enveloped
        "--no-control-socket",
        "--timeout", "120",
        "--graceful-timeout", "5",
        "--access-logfile", "-" if args.access_log else "/dev/null",
        "app.wsgi:app",
    ]
    os.execv(sys.executable, argv)
    return 0  # not reached


def cmd_spaces_router(args: argparse.Namespace) -> int:
    _apply_flags(args)
    settings = Settings.from_env()
    from cloud import logs
    from spaces_router.server import Router
    from tasks.celery_app import redis_client

    logs.configure(settings, "INFO")
    router = Router((settings.host, settings.spaces_port), redis_client(settings.redis),
                    settings.spaces_origin)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=router.shutdown).start())
    _log(f"spaces router: {settings.spaces_origin} (listening on "
         f"{settings.host}:{router.server_address[1]})")
    with router:
        router.serve_forever(poll_interval=0.5)
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    _apply_flags(args)
    settings = Settings.from_env()
    node = args.hostname or f"hypd@{socket.gethostname()}"
    from cloud.metrics_dir import prepare

    counted = prepare(settings, f"worker-{node}")  # before prometheus_client is imported
    from cloud import logs, metrics

    if settings.log_format == "json":
        from celery.signals import setup_logging

        logs.configure(settings, args.loglevel)
        setup_logging.connect(lambda **_: None, weak=False)  # Celery keeps ours
    if args.metrics_port is not None:
        metrics.serve(settings, args.metrics_port, counted)
    from tasks.celery_app import worker_app

    worker_app().worker_main([
        "worker", "--loglevel", args.loglevel, "--concurrency", str(args.concurrency),
        "--hostname", node,
        "--pool", "prefork", "--without-gossip", "--without-mingle", "--without-heartbeat",
    ])
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    from mcp_server.server import run

    settings = Settings.from_env()
    run(api_url=args.api_url or settings.api_url, token=settings.token, http=args.http,
        host=args.mcp_host, port=args.mcp_port, read_only=args.read_only,
        toolsets=args.toolsets)
    return 0


def cmd_sandbox(args: argparse.Namespace) -> int:
    _apply_flags(args)
    from sandbox.serve import run

    settings = Settings.from_env()
    # The local AWS's own log lines (the simulator, the local Kubernetes) and Python's
    # warnings go to stderr: under `hypd up`, to HYPD_DATA_DIR/logs/sandbox.log.
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    logging.captureWarnings(True)
    run(speed=settings.sandbox_speed, port=args.aws_port, region=settings.region,
        print_fn=lambda line: print(line, flush=True))
    return 0


WEB_THREADS = 64
"""Per web process. Each open WebSocket (an operation's events, a job's log tail) or
long-poll holds one while open, and when all are held the process answers nothing else: 64
per core lets the issue's 100 log tails stay open on 2 cores beside the dashboard's reads.
Only `HYPD_WEB_GATE` (8) of them run request code at once (app/gate.py; waiting sockets and
long-polls step out): 64 busy threads per process switch ~3x as often per request as 8, at
10 to 70% more CPU per request (docs/benchmarks.md, "2026-12-04, gate")."""


def default_web_workers() -> int:
    """One process per core: Python runs one thread at a time per process, so a single
    process leaves every other core idle however many threads it has (measured:
    bench/status_reads.py)."""
    return max(1, min(8, len(os.sched_getaffinity(0))))


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
    up.add_argument("-v", "--verbose", action="store_true",
                    help="show the children's log lines here too (they always go to "
                         "HYPD_DATA_DIR/logs)")
    up.set_defaults(func=cmd_up)

    web = sub.add_parser("web", help="the web server (REST, WebSocket, dashboard)")
    common(web)
    web.add_argument("--host", help="HYPD_HOST")
    web.add_argument("--port", type=int, help="HYPD_PORT")
    web.add_argument("--workers", type=int, default=default_web_workers(),
                     help="processes (default: one per core, at most 8; each is stateless)")
    web.add_argument("--threads", type=int, default=WEB_THREADS,
                     help="each open WebSocket or long-poll holds a thread")
    web.add_argument("--gate", type=int,
                     help="HYPD_WEB_GATE: how many threads run request code at once (default "
                          "8; waiting sockets and long-polls step out; 0: no gate)")
    web.add_argument("--access-log", action="store_true")
    web.set_defaults(func=cmd_web)

    router = sub.add_parser("spaces-router", help="the router people open Dev spaces through "
                            "(HYPD_SPACES_URL)")
    common(router)
    router.add_argument("--host", help="HYPD_HOST")
    router.add_argument("--port", dest="spaces_port", type=int, help="HYPD_SPACES_PORT")
    router.set_defaults(func=cmd_spaces_router)

    worker = sub.add_parser("worker", help="a Celery worker running operations")
    common(worker)
    worker.add_argument("--concurrency", type=int, default=4)
    worker.add_argument("--loglevel", default="INFO")
    worker.add_argument("-n", "--hostname",
                        help="node name, unique per worker (default hypd@<host>); several "
                             "workers on one Redis need different ones")
    worker.add_argument("--metrics-port", dest="metrics_port", type=int,
                        help="also serve this worker's metrics on HYPD_HOST:<port> (for a "
                             "worker on a machine without the web server)")
    worker.set_defaults(func=cmd_worker)

    mcp = sub.add_parser("mcp", help="the MCP server (stdio, or --http)")
    mcp.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    mcp.add_argument("--host", dest="mcp_host", default="127.0.0.1")
    mcp.add_argument("--port", dest="mcp_port", type=int, default=3098)
    mcp.add_argument("--api-url", dest="api_url", help="HYPD_API_URL")
    mcp.add_argument("--read-only", action="store_true", help="publish read tools only")
    mcp.add_argument("--toolsets", default=None,
                     help="comma-separated toolsets to publish (default: all): clusters, "
                     "capacity, training, inference, spaces, teams, operations (get_operation "
                     "and wait_operation always); an unknown name is refused at start")
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
