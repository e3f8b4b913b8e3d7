"""Run one child of `hypd up` so that it cannot outlive the supervisor, and turn its output
into log lines that name their source.

`hypd up` starts each child (redis-server, the local AWS, the worker, the web server) through
this wrapper, in a session of its own, so a Ctrl-C at the terminal reaches only the
supervisor, which then stops its children in order. The wrapper:

- holds the read end of a pipe whose only write end the supervisor keeps. However the
  supervisor dies (SIGKILL included), the kernel closes that end, the read returns EOF, and
  the wrapper stops its whole process group: SIGTERM, then SIGKILL after a grace — the child
  and the child's own children (Celery's pool, gunicorn's workers);
- writes each line the child prints (stdout and stderr) to the log file as
  `<time> <source> | <line>`, and with --echo to the terminal as `<source> | <line>`.

Why not prctl(PR_SET_PDEATHSIG): it needs a preexec_fn, which is unsafe in a process with
threads, and it fires when the forking *thread* ends. A pipe works for any child,
redis-server included, with no code in the child.

Run by path (`python launcher/childwatch.py`), not as `-m launcher.childwatch`: the wrapper
of every child needs nothing but itself, so it imports nothing of hypd's. Standard library
only.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import threading
from datetime import UTC, datetime
from typing import BinaryIO, TextIO

GRACE_S = 5.0
"""How long the child has to exit on SIGTERM after the supervisor died. Killing it is safe:
every operation survives a killed worker by design."""


def _stamp() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _pump(source: str, stream: BinaryIO, log: TextIO, echo: TextIO | None) -> None:
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        with contextlib.suppress(OSError, ValueError):  # a full disk, or closed at exit
            log.write(f"{_stamp()} {source} | {line}\n")
            log.flush()
        if echo is not None:
            with contextlib.suppress(OSError, ValueError):  # the terminal went away
                echo.write(f"{source} | {line}\n")
                echo.flush()


def _guard(parent_fd: int, child: subprocess.Popen, parent_gone: threading.Event) -> None:
    """Block until the supervisor is gone (EOF on the pipe), then stop the whole group."""
    with contextlib.suppress(OSError):
        while os.read(parent_fd, 64):
            pass  # nothing is ever written; any bytes are ignored
    parent_gone.set()
    group = os.getpgrp()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=GRACE_S)
        return  # main logs the last lines, then kills what is left of the group
    os.killpg(group, signal.SIGKILL)  # the child, its children and this wrapper


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="childwatch", description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, help="the name each line is tagged with")
    parser.add_argument("--log", required=True, help="file the lines are appended to")
    parser.add_argument("--parent-fd", type=int, required=True,
                        help="read end of the supervisor's pipe; EOF: the supervisor died")
    parser.add_argument("--echo", action="store_true", help="also write lines to stderr")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command to run")

    # The supervisor signals the whole group, so the child gets SIGTERM/SIGINT itself; the
    # wrapper stays until the child has exited, to log its last lines and pass on its code.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: None)

    with open(args.log, "a", encoding="utf-8") as log:
        try:
            child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        except OSError as exc:
            log.write(f"{_stamp()} {args.source} | cannot start {command[0]}: {exc}\n")
            print(f"hypd: cannot start {args.source} ({command[0]}): {exc}", file=sys.stderr)
            return 127
        parent_gone = threading.Event()
        pump = threading.Thread(target=_pump, args=(args.source, child.stdout, log,
                                                    sys.stderr if args.echo else None),
                                daemon=True)
        pump.start()
        threading.Thread(target=_guard, args=(args.parent_fd, child, parent_gone),
                         daemon=True).start()
        code = child.wait()
        # The child's own children may still hold its output open: do not wait for them.
        pump.join(timeout=2)
        if parent_gone.is_set():
            # Nobody will restart or reap anything: whatever is left of the group (a pool
            # process slower than its parent) goes now, and this wrapper with it.
            log.flush()
            os.killpg(os.getpgrp(), signal.SIGKILL)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main())
