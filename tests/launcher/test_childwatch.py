"""The wrapper every child of `hypd up` runs under: its lines tagged with their source, its
exit code passed on, and its whole process group gone once the supervisor's pipe closes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from launcher.supervisor import CHILDWATCH
from tests.stack import wait_until


def _wrap(tmp_path: Path, script: str, read_fd: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, CHILDWATCH, "--source", "demo", "--log", str(tmp_path / "demo.log"),
         "--parent-fd", str(read_fd), "--", sys.executable, "-c", script],
        pass_fds=(read_fd,), start_new_session=True, stderr=subprocess.PIPE, text=True)


def _gone(pid: int) -> bool:
    try:
        return "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
    except FileNotFoundError:
        return True


def test_lines_are_tagged_and_the_exit_code_is_passed_on(tmp_path):
    read_fd, write_fd = os.pipe()
    try:
        proc = _wrap(tmp_path, "import sys; print('out line'); "
                               "print('err line', file=sys.stderr); sys.exit(3)", read_fd)
        assert proc.wait(timeout=30) == 3
    finally:
        os.close(read_fd)
        os.close(write_fd)
    lines = (tmp_path / "demo.log").read_text().splitlines()
    assert sorted(line.split(" ", 1)[1] for line in lines) == ["demo | err line",
                                                               "demo | out line"]
    assert all(line.split(" ", 1)[0].endswith("Z") for line in lines)
    assert proc.stderr.read() == ""  # without --echo nothing reaches the terminal


def test_when_the_supervisor_goes_the_child_and_its_own_children_go_too(tmp_path):
    """The child ignores SIGTERM and has a child of its own: both must still go."""
    read_fd, write_fd = os.pipe()
    script = ("import os, signal, subprocess, sys, time\n"
              "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              "grandchild = subprocess.Popen([sys.executable, '-c', 'import time; "
              "time.sleep(600)'])\n"
              "print('pids', os.getpid(), grandchild.pid, flush=True)\n"
              "time.sleep(600)\n")
    proc = _wrap(tmp_path, script, read_fd)
    os.close(read_fd)
    try:
        log = tmp_path / "demo.log"
        line = wait_until(lambda: next((x for x in (log.read_text().splitlines()
                                                    if log.exists() else [])
                                        if "pids" in x), None), 30, what="the child's pids")
        child, grandchild = (int(p) for p in line.split("pids ")[1].split())
        os.close(write_fd)  # the supervisor dies: the kernel closes its end
        write_fd = -1
        started = time.monotonic()
        wait_until(lambda: _gone(child) and _gone(grandchild) and proc.poll() is not None,
                   15, what="the wrapped group to go")
        assert time.monotonic() - started < 10  # SIGTERM ignored: SIGKILL after 5 s
    finally:
        if write_fd != -1:
            os.close(write_fd)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
