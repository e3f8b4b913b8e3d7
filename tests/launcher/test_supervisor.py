"""How `hypd up` stops its children (launcher/supervisor.py, `stop_children`): the web server
and the worker together, then the local AWS and Redis together once the first two are gone;
a child that ignores SIGTERM is SIGKILLed after the grace."""

from __future__ import annotations

import sys
from pathlib import Path

from launcher.supervisor import Child, ParentGuard, stop_children
from tests.stack import wait_until

# Each child marks its SIGTERM, then exits as soon as `waits_for` (a marker of another child)
# exists, or after 60 s; on exit it records which markers it saw. No timing is asserted:
# the order is read from the markers.
CHILD = r"""
import signal, sys, time
from pathlib import Path
name, folder, waits_for = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
def on_term(*_):
    (folder / f"{name}.term").write_text(" ".join(sorted(p.name for p in folder.iterdir())))
    deadline = time.monotonic() + 60
    while waits_for != "-" and not (folder / waits_for).exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    (folder / f"{name}.exit").write_text("")
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
(folder / f"{name}.up").write_text("")
while True:
    time.sleep(1)
"""


def _children(tmp_path: Path, waits: dict[str, str]) -> list[Child]:
    marks = tmp_path / "marks"
    marks.mkdir()
    logs = tmp_path / "logs"
    logs.mkdir()
    guard = ParentGuard()
    made = []
    for name in ("redis", "sandbox", "worker", "web"):  # the order `hypd up` starts them in
        child = Child(name, [sys.executable, "-c", CHILD, name, str(marks), waits.get(name, "-")],
                      logs, guard)
        child.start()
        made.append(child)
    for name in ("redis", "sandbox", "worker", "web"):
        wait_until(lambda n=name: (marks / f"{n}.up").exists(), 30, what=f"{name} to start")
    return made


def _seen(tmp_path: Path, name: str) -> set[str]:
    return set((tmp_path / "marks" / f"{name}.term").read_text().split())


def test_the_web_server_and_the_worker_stop_together_before_the_local_aws_and_redis(tmp_path):
    # The web server exits only once the worker has had its SIGTERM: stopped one after the
    # other, it would wait out its grace and be killed without its exit marker.
    children = _children(tmp_path, {"web": "worker.term", "sandbox": "redis.term"})
    try:
        stop_children(children, grace_s=30)
        assert all(c.proc.poll() is not None for c in children)
        marks = tmp_path / "marks"
        for name in ("web", "worker", "sandbox", "redis"):
            assert (marks / f"{name}.term").exists(), name
            assert (marks / f"{name}.exit").exists(), f"{name} was killed, not stopped"
        # the local AWS and Redis had their SIGTERM only after both clients had exited
        for name in ("sandbox", "redis"):
            assert {"web.exit", "worker.exit"} <= _seen(tmp_path, name), name
        # ... and the clients theirs before either of the others was signalled
        for name in ("web", "worker"):
            assert not {"sandbox.term", "redis.term"} & _seen(tmp_path, name), name
    finally:
        for child in children:
            if child.proc and child.proc.poll() is None:
                child.proc.kill()


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace(tmp_path):
    # the worker waits for a marker nobody writes: only SIGKILL ends it
    children = _children(tmp_path, {"worker": "never"})
    try:
        stop_children(children, grace_s=1)
        assert all(c.proc.poll() is not None for c in children)
        marks = tmp_path / "marks"
        assert (marks / "worker.term").exists() and not (marks / "worker.exit").exists()
        for name in ("web", "sandbox", "redis"):
            assert (marks / f"{name}.exit").exists(), name
        for name in ("sandbox", "redis"):  # still after the killed worker was gone
            assert "worker.term" in _seen(tmp_path, name), name
    finally:
        for child in children:
            if child.proc and child.proc.poll() is None:
                child.proc.kill()
