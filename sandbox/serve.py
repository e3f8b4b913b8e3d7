"""Run the local AWS in the foreground until SIGINT/SIGTERM (`hypd sandbox`, `python -m sandbox`).

`run` is what a CLI calls: it prints the environment as `export` lines (so
`eval "$(hypd sandbox)"`-style use works) and blocks until a signal or `stop` is set.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import threading
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

from sandbox.env import CONTROL_PATH, DEFAULT_REGION, UNSET_ENV, client_env
from sandbox.local_aws import LocalAws


def run(
    speed: float = 1.0,
    port: int = 0,
    print_fn: Callable[[str], Any] = print,
    region: str = DEFAULT_REGION,
    stop: threading.Event | None = None,
) -> None:
    """Serve the local AWS until SIGINT/SIGTERM (main thread only) or until `stop` is set."""
    stop = stop or threading.Event()
    aws = LocalAws(speed=speed, port=port)
    url = aws.start()
    previous: dict[int, Any] = {}
    try:
        if threading.current_thread() is threading.main_thread():

            def _on_signal(signum: int, frame: FrameType | None) -> None:
                stop.set()

            for signum in (signal.SIGINT, signal.SIGTERM):
                previous[signum] = signal.signal(signum, _on_signal)
        print_fn(f"# hypd sandbox: local AWS at {url} (speed {speed:g}); "
                 f"control: {url}{CONTROL_PATH}")
        print_fn(f"unset {' '.join(UNSET_ENV)}")
        for key, value in client_env(url, region).items():
            print_fn(f"export {key}={shlex.quote(value)}")
        while not stop.wait(0.5):
            pass
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        aws.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: `python -m sandbox [--speed N] [--port P] [--region R]`."""
    parser = argparse.ArgumentParser(prog="python -m sandbox", description=__doc__)
    parser.add_argument("--speed", type=float, default=1.0, help="time multiplier (default 1)")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--region", default=DEFAULT_REGION, help="AWS region for clients")
    args = parser.parse_args(argv)
    if args.speed <= 0:
        parser.error("--speed must be positive")
    run(args.speed, args.port, lambda line: print(line, flush=True), args.region)
    return 0
