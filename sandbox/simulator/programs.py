"""What a simulated container does: the lines it prints, when, and how it ends.

No container runs in the sandbox, so the kubelet asks a `Programs` book what each container
would do. Workload simulators register their own resolvers first (a training job's pods print
progress and may fail on request); the default resolver reads the container's command line
with one small, deterministic rule:

- the command line is `command + args` (kubectl run `-- echo hi` sets `args`); with neither,
  or with only `args` that start with a flag (`--leader-elect`: arguments to the image's own
  entrypoint, as a controller's Deployment gives them), the image's entrypoint runs: a
  server that prints nothing and runs until stopped;
- a shell (`sh`, `bash`, `ash`, `dash`, `zsh`) with `-c SCRIPT` runs the script's commands
  in order (`;`, `&&`, `||` and new lines separate them; `&&` stops at a failure, `||` runs
  the next one only after a failure; redirections are dropped — except `echo … > FILE` (and
  `>>`) into a mounted bucket, which puts the object (`s3files`): `run_script`, which other
  programs use too);
- `echo [-n] [-e] WORDS...` prints the words joined by one space as one line;
- `sleep N` (seconds; `s`, `m`, `h`, `d` suffixes) waits N simulated seconds;
  `sleep infinity` never returns;
- `exit N` ends with status N; `true` succeeds; `false` fails (status 1);
- any other command prints nothing and succeeds;
- but a controller's entrypoint (`DAEMONS`) and hypd's own in-cluster programs
  (`python3 /etc/hypd/…`) serve until stopped.

Times are simulated seconds (the sandbox's speed scales them).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

SHELLS = frozenset({"sh", "bash", "ash", "dash", "zsh"})
_SLEEP_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_REDIRECT = re.compile(r"^\d*(?:>>?|<)")
_STDOUT = re.compile(r"^1?(>>?)([^&>].*)?$")  # standard output to a file: `>`, `>>`, `1>F`


@dataclass(frozen=True)
class Line:
    """One line of output, `after_s` simulated seconds after the previous step; `effect`,
    if any, is what the container does to the world then (an object it uploads); a line
    with `text` None prints nothing. A line with a `gate` (and all after it) waits until the
    gate holds — asked again whenever the cluster's pods change — as a distributed job's
    process waits in its rendezvous until every node has joined."""

    after_s: float
    text: str | None
    effect: Callable[[], None] | None = None
    gate: Callable[[], bool] | None = None


@dataclass(frozen=True)
class Program:
    """A container's run: its output over time, then its exit status (None: runs until it
    is stopped, after its last line)."""

    lines: tuple[Line, ...] = ()
    exit_code: int | None = 0
    tail_s: float = 0.0  # simulated seconds between the last line and the exit
    serves: ModelServer | HttpServer | None = None
    """An HTTP server the container runs (what the service proxy reaches), if any."""

    @property
    def duration_s(self) -> float:
        return sum(line.after_s for line in self.lines) + self.tail_s


@dataclass(frozen=True)
class ModelServer:
    """An OpenAI-compatible server a container runs: its kind (`vllm`, `sglang`,
    `sglang-router`), the model name it serves ("": whichever a request names) and its
    port."""

    kind: str
    model: str
    port: int


@dataclass(frozen=True)
class HttpServer:
    """Any other HTTP server a container runs: its port and what it answers —
    `handle(path, method, body, headers)` → (status, content type, body)."""

    port: int
    handle: Callable[[str, str, bytes, dict[str, str]], tuple[int, str, bytes]]


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


Redirected = Callable[[list[str], str, str], int]
"""(argv, `>` or `>>`, the file) → status: a command whose output goes to a file."""


def run_script(script: str, simple: Callable[[list[str]], int],
               stopped: Callable[[], bool] = lambda: False,
               redirected: Redirected | None = None) -> int:
    """Run a `sh -c` script with the shell's list rules and answer its last status:
    `&&` runs the next command only after a success, `||` only after a failure (so
    `a && b || c && d` is `((a && b) || c) && d`). `simple(argv)` runs one command (words
    unquoted, `$VARIABLES` left as they are) and answers its status; `stopped()` ends the
    script early (an `exit`, a command that never returns). A command whose standard output
    goes to a file (`> FILE`, `>> FILE`, `1>FILE`) runs through `redirected` when one is
    given (a file under a mounted bucket is an object: `s3files`); other redirections
    (`2>&1`, `<`, `2> FILE`), and all of them without `redirected`, are dropped."""
    lexer = shlex.shlex(script.replace("\n", ";"), posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    tokens = list(lexer)
    command: list[str] = []
    status, skip, target = 0, False, False
    out: tuple[str, str] | None = None  # (operator, file) of the command's standard output
    pending: str | None = None  # a bare stdout operator waiting for its file
    for token in [*tokens, ";"]:
        if token in (";", "&&", "||"):
            if not skip and command:
                status = (redirected(command, *out) if redirected and out
                          else simple(command))
            if stopped():
                return status
            command, out, pending = [], None, None
            skip = (token == "&&" and status != 0) or (token == "||" and status == 0)
        elif token in ("&", "|"):
            continue
        elif target:  # the file a bare `>` names
            target = False
            if pending:
                out, pending = (pending, token), None
        elif _REDIRECT.match(token):
            target = _REDIRECT.fullmatch(token) is not None
            found = _STDOUT.fullmatch(token)
            if found and target:
                pending = found.group(1)
            elif found and found.group(2):
                out = (found.group(1), found.group(2))
        else:
            command.append(token)
    return status


FileWrite = Callable[[str, str, bool], Callable[[], None] | None]
"""(path, text, append) → what writing the text to that file does to the world (an object
put in a mounted bucket), or None for a file nothing outside the container sees."""


def _script(run: _Run, script: str, files: FileWrite | None = None) -> None:
    def simple(argv: list[str]) -> int:
        _simple(run, argv)
        return run.status

    def redirected(argv: list[str], operator: str, path: str) -> int:
        if not argv or os.path.basename(argv[0]) != "echo":
            return simple(argv)  # what other commands write is not kept
        args, newline = argv[1:], "\n"
        while args and args[0] in ("-n", "-e", "-E", "-ne", "-en"):
            newline = "" if "n" in args[0] else newline
            args = args[1:]
        effect = files(path, " ".join(args) + newline, operator == ">>") if files else None
        run.lines.append(Line(run.pending_s, None, effect))
        run.pending_s, run.status = 0.0, 0
        return 0

    run_script(script, simple, lambda: run.forever or run.exited,
               redirected if files is not None else None)


DAEMONS = frozenset({"/controller", "/keda", "/keda-adapter", "/manager"})
"""Entrypoints of controllers' images (the AWS Load Balancer Controller, KEDA's operator and
metrics server, kubebuilder's managers): they serve until stopped, whatever their flags."""
INCLUSTER_DIR = "/etc/hypd/"
"""Where hypd mounts its own in-cluster programs (cloud/incluster/, e.g. the SGLang load
reader): `python3 <that dir>/…` serves until stopped."""


def _daemon(argv: list[str], command: bool = True) -> bool:
    """`command`: the container names its command (else `argv` is only its args)."""
    return argv[0] in DAEMONS or (not command and argv[0].startswith("-")) or (
        os.path.basename(argv[0]).startswith("python") and len(argv) > 1
        and argv[1].startswith(INCLUSTER_DIR))


def from_command_line(container: dict[str, Any], files: FileWrite | None = None) -> Program:
    """The default rule (see the module's docstring); `files`: where a script's `echo … >
    FILE` goes (without it, redirections are dropped and echo prints)."""
    argv = [str(a) for a in (container.get("command") or [])] + [
        str(a) for a in (container.get("args") or [])
    ]
    if not argv or _daemon(argv, bool(container.get("command"))):
        return Program(exit_code=None)
    run = _Run()
    if os.path.basename(argv[0]) in SHELLS and "-c" in argv[1:]:
        at = argv.index("-c")
        _script(run, argv[at + 1] if at + 1 < len(argv) else "", files)
    else:
        _simple(run, argv)
    return Program(
        lines=tuple(run.lines),
        exit_code=None if run.forever else run.status,
        tail_s=run.pending_s,
    )


# --- model servers (vLLM, SGLang and the SGLang router) ---------------------------------------

SERVER_START_S = 30.0  # simulated seconds from start to "startup complete" (weights loaded)
_SERVER_DEFAULT_PORT = {"vllm": 8000, "sglang": 30000, "sglang-router": 30000}


def _flag(argv: list[str], *names: str) -> str | None:
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                return argv[i + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def server_kind(container: dict[str, Any]) -> str | None:
    """Which model server a container runs, from its command line (or, with none, from the
    image whose entrypoint is the server: vllm/vllm-openai)."""
    argv = [str(a) for a in (container.get("command") or [])] + [
        str(a) for a in (container.get("args") or [])]
    joined = " ".join(argv)
    if "sglang_router.launch_router" in joined:
        return "sglang-router"
    if "sglang.launch_server" in joined:
        return "sglang"
    if "vllm serve" in joined or "vllm.entrypoints.openai.api_server" in joined:
        return "vllm"
    if not argv and "vllm-openai" in str(container.get("image", "")):
        return "vllm"
    return None


def model_server(_pod: dict[str, Any], container: dict[str, Any]) -> Program | None:
    """A model server's run: it loads its weights, says it is up, and serves until stopped
    (the service proxy answers its HTTP requests; see the workloads' proxy)."""
    kind = server_kind(container)
    if kind is None:
        return None
    argv = [str(a) for a in (container.get("command") or [])] + [
        str(a) for a in (container.get("args") or [])]
    if argv and os.path.basename(argv[0]) in SHELLS:
        # a script choosing its model when it runs (a pool worker reading its assignment):
        # it serves the model each request names
        return Program(lines=(Line(0.0, f"INFO waiting for a model ({kind})"),),
                       exit_code=None, serves=ModelServer(kind, "", _SERVER_DEFAULT_PORT[kind]))
    positional = argv[2] if kind == "vllm" and len(argv) > 2 and argv[1] == "serve" else None
    model = (_flag(argv, "--served-model-name") or _flag(argv, "--model-path", "--model")
             or positional or "model")
    if kind == "sglang-router":
        model = ""  # it routes whichever model a request names to its workers
    port_text = _flag(argv, "--port")
    port = int(port_text) if port_text and port_text.isdigit() else _SERVER_DEFAULT_PORT[kind]
    lines = (Line(0.0, f"INFO Started server process ({kind})"),
             Line(0.0, f"INFO Loading model {model}"),
             Line(SERVER_START_S, "INFO Application startup complete."),
             Line(0.0, f"INFO Uvicorn running on http://0.0.0.0:{port}"))
    return Program(lines=lines, exit_code=None, serves=ModelServer(kind, model, port))
