"""What a simulated container does: the lines it prints, when, and how it ends.

No container runs in the sandbox, so the kubelet asks a `Programs` book what each container
would do. Workload simulators register their own resolvers first (a training job's pods print
progress and may fail on request); the default resolver reads the container's command line
with one small, deterministic rule:

- the command line is `command + args` (kubectl run `-- echo hi` sets `args`); with neither,
  the image's own entrypoint runs: a server that prints nothing and runs until stopped;
- a shell (`sh`, `bash`, `ash`, `dash`, `zsh`) with `-c SCRIPT` runs the script's commands
  in order (`;`, `&&`, `||` and new lines separate them; `&&` stops at a failure, `||` runs
  the next one only after a failure);
- `echo [-n] [-e] WORDS...` prints the words joined by one space as one line;
- `sleep N` (seconds; `s`, `m`, `h`, `d` suffixes) waits N simulated seconds;
  `sleep infinity` never returns;
- `exit N` ends with status N; `true` succeeds; `false` fails (status 1);
- any other command prints nothing and succeeds.

Times are simulated seconds (the sandbox's speed scales them).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

SHELLS = frozenset({"sh", "bash", "ash", "dash", "zsh"})
_SLEEP_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class Line:
    """One line of output, `after_s` simulated seconds after the previous step."""

    after_s: float
    text: str


@dataclass(frozen=True)
class Program:
    """A container's run: its output over time, then its exit status (None: runs until it
    is stopped, after its last line)."""

    lines: tuple[Line, ...] = ()
    exit_code: int | None = 0
    tail_s: float = 0.0  # simulated seconds between the last line and the exit

    @property
    def duration_s(self) -> float:
        return sum(line.after_s for line in self.lines) + self.tail_s


Resolver = Callable[[dict[str, Any], dict[str, Any]], Program | None]  # (pod, container)


@dataclass
class Programs:
    """Resolvers asked in order (the newest registered first); the command-line rule last."""

    resolvers: list[Resolver] = field(default_factory=list)

    def register(self, resolver: Resolver) -> None:
        self.resolvers.insert(0, resolver)

    def unregister(self, resolver: Resolver) -> None:
        if resolver in self.resolvers:
            self.resolvers.remove(resolver)

    def program(self, pod: dict[str, Any], container: dict[str, Any]) -> Program:
        for resolver in self.resolvers:
            found = resolver(pod, container)
            if found is not None:
                return found
        return from_command_line(container)


def _sleep_seconds(args: list[str]) -> float | None:
    """Seconds `sleep ARGS` waits, or None for ever."""
    total = 0.0
    for arg in args or ["0"]:
        if arg in ("infinity", "inf"):
            return None
        unit = _SLEEP_UNITS.get(arg[-1:], 1)
        number = arg[:-1] if arg[-1:] in _SLEEP_UNITS else arg
        try:
            total += float(number) * unit
        except ValueError:
            return 0.0
    return total


@dataclass
class _Run:
    lines: list[Line] = field(default_factory=list)
    pending_s: float = 0.0
    forever: bool = False
    status: int = 0
    exited: bool = False


def _simple(run: _Run, argv: list[str]) -> None:
    """Run one simple command."""
    if not argv:
        return
    name, args = os.path.basename(argv[0]), argv[1:]
    if name == "echo":
        while args and args[0] in ("-n", "-e", "-E", "-ne", "-en"):
            args = args[1:]
        run.lines.append(Line(run.pending_s, " ".join(args)))
        run.pending_s = 0.0
        run.status = 0
    elif name == "sleep":
        seconds = _sleep_seconds(args)
        if seconds is None:
            run.forever = True
        else:
            run.pending_s += seconds
        run.status = 0
    elif name == "exit":
        try:
            run.status = int(args[0]) % 256 if args else run.status
        except ValueError:
            run.status = 2
        run.exited = True
    elif name == "false":
        run.status = 1
    else:  # true, and every command the rule does not know
        run.status = 0


def _script(run: _Run, script: str) -> None:
    lexer = shlex.shlex(script.replace("\n", ";"), posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    tokens = list(lexer)
    command: list[str] = []
    skip = False
    for token in [*tokens, ";"]:
        if token in (";", "&&", "||"):
            if not skip:
                _simple(run, command)
            if run.forever or run.exited:
                return
            command = []
            skip = (token == "&&" and run.status != 0) or (token == "||" and run.status == 0)
        elif token in ("&", "|"):
            continue
        else:
            command.append(token)


def from_command_line(container: dict[str, Any]) -> Program:
    """The default rule (see the module's docstring)."""
    argv = [str(a) for a in (container.get("command") or [])] + [
        str(a) for a in (container.get("args") or [])
    ]
    if not argv:
        return Program(exit_code=None)
    run = _Run()
    if os.path.basename(argv[0]) in SHELLS and "-c" in argv[1:]:
        at = argv.index("-c")
        _script(run, argv[at + 1] if at + 1 < len(argv) else "")
    else:
        _simple(run, argv)
    return Program(
        lines=tuple(run.lines),
        exit_code=None if run.forever else run.status,
        tail_s=run.pending_s,
    )
