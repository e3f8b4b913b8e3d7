"""`hypd up`: the whole local stack in the foreground, as a new user first runs it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from tests.stack import REPO, TEST_ENV, free_port, tls, wait_until


def _read_lines(stream, sink: list[str]) -> None:
    for line in iter(stream.readline, ""):
        sink.append(line)


def _children(pid: int) -> list[int]:
    """Every descendant of pid (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid:
            found.append(int(entry.name))
            found.extend(_children(int(entry.name)))
    return found


def _cmdline(pid: int) -> str:
    """A process's command line, or "" once it has gone (it may exit between two reads)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
    except OSError:
        return ""


def _alive(pids: list[int]) -> list[int]:
    """The pids still running (a zombie has exited; a pid may vanish between two reads)."""
    alive = []
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        if "zombie" not in status.lower():
            alive.append(pid)
    return alive


def _start_up(tmp_path: Path, *flags: str) -> tuple[subprocess.Popen, int, list[str], list[str]]:
    """`hypd up` as a user runs it: its terminal's stdout and stderr lines are collected."""
    port, spaces_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "HYPD_"))}
    # the suite's sandbox clock and poll intervals (tests/stack.py): at hypd's default
    # 2-60 s polls, each network the test makes waits ~16 s on its NAT gateway's polls
    env.update({"HYPD_PORT": str(port), "HYPD_DATA_DIR": str(tmp_path / "data"),
                "HYPD_SPACES_PORT": str(spaces_port),
                "PYTHONUNBUFFERED": "1",
                **{k: TEST_ENV[k] for k in ("HYPD_SANDBOX_SPEED", "HYPD_POLL_MIN_S",
                                            "HYPD_POLL_MAX_S")}})
    proc = subprocess.Popen([sys.executable, "-m", "launcher.cli", "up", "--concurrency", "1",
                             *flags],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    proc.spaces_port = spaces_port  # type: ignore[attr-defined]
    out: list[str] = []
    err: list[str] = []
    threading.Thread(target=_read_lines, args=(proc.stdout, out), daemon=True).start()
    threading.Thread(target=_read_lines, args=(proc.stderr, err), daemon=True).start()
    return proc, port, out, err


def _stop_up(proc: subprocess.Popen) -> None:
    if proc.poll() is None:  # a failed assertion: stop it the way a user would first,
        proc.send_signal(signal.SIGTERM)  # so its children (own sessions) go too
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, verify=tls(), timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _make_network(base: str, auth: dict[str, str], name: str) -> dict:
    """Create a network through REST and follow its operation to its end."""
    reply = httpx.post(base + "/api/v1/networks", verify=tls(), json={"name": name},
                       headers=auth, timeout=30)
    assert reply.status_code == 202, reply.text
    op = reply.json()["operation"]
    deadline = time.monotonic() + 120  # a long poll answers at each change: count time
    while time.monotonic() < deadline:
        op = httpx.get(base + f"/api/v1/operations/{op['id']}", verify=tls(), params={"wait": 5},
                       headers=auth, timeout=30).json()
        if op["status"] in ("succeeded", "failed"):
            break
    return op


def _log_lines(path: Path, source: str) -> list[str]:
    """The log's lines, each checked to carry its time and source: `<time> <source> | ...`."""
    lines = path.read_text(errors="replace").splitlines()
    for line in lines:
        stamp, _, rest = line.partition(" ")
        assert stamp.endswith("Z") and rest.startswith(f"{source} | "), line
    return lines


def test_up_prints_ready_serves_dashboard_restarts_worker_and_stops_cleanly(tmp_path):
    proc, port, out, err = _start_up(tmp_path)
    try:
        wait_until(lambda: any(line.startswith("hypd ready: ") for line in out), 90,
                   what="the ready line")
        ready = [line for line in out if line.startswith("hypd ready: ")]
        assert ready == [f"hypd ready: http://127.0.0.1:{port}/\n"]

        token_file = tmp_path / "data" / "operator-token"
        assert oct(token_file.stat().st_mode & 0o777) == "0o600"
        token = token_file.read_text().strip()
        # printed once at start, for the user
        wait_until(lambda: any(token in line for line in err), 10, what="the token line")

        # The terminal shows what a person needs and nothing of the children's chatter
        # (banners, Celery's root-user warning, per-task INFO lines): that is in the logs.
        assert out == ready
        assert all(line.startswith("hypd: ") for line in err), "".join(err)
        assert sum(token in line for line in err) == 1
        logs = tmp_path / "data" / "logs"
        assert any(f"logs: {logs} " in line for line in err), "".join(err)
        assert any("local AWS at http://127.0.0.1:" in line for line in err), "".join(err)
        redis_log = _log_lines(logs / "redis.log", "redis")
        assert any("Ready to accept connections" in line for line in redis_log)
        worker_log = _log_lines(logs / "worker.log", "worker")
        assert any("SecurityWarning" in line or "celery@" in line for line in worker_log)
        wait_until(lambda: any("Listening at: " in line
                               for line in _log_lines(logs / "web.log", "web")),
                   10, what="gunicorn's line in web.log")
        assert any("local AWS at http://127.0.0.1:" in line
                   for line in _log_lines(logs / "sandbox.log", "sandbox"))

        # the spaces router is a child too, on HYPD_SPACES_PORT
        spaces = f"http://127.0.0.1:{proc.spaces_port}/healthz"
        wait_until(lambda: _answers(spaces), 30, what="the spaces router")
        assert any("spaces router: http://127.0.0.1:" in line
                   for line in _log_lines(logs / "spaces-router.log", "spaces-router"))

        base = f"http://127.0.0.1:{port}"
        page = httpx.get(base + "/", verify=tls(), timeout=30)  # a loaded machine: no 5 s default
        assert page.status_code == 200 and "<html" in page.text.lower()
        who = httpx.get(base + "/api/v1/auth/whoami", verify=tls(),
                        headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert who.json() == {"name": "operator", "role": "operator", "aws": "sandbox",
                              "region": "us-west-2", "team": None}
        zones = httpx.get(base + "/api/v1/discovery/availability-zones", verify=tls(),
                          headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert zones.status_code == 200 and len(zones.json()["items"]) >= 2

        # a worker that dies is restarted
        worker_pids = [p for p in _children(proc.pid) if "worker" in _cmdline(p)]
        assert worker_pids
        os.killpg(os.getpgid(worker_pids[0]), signal.SIGKILL)
        wait_until(lambda: any("worker exited" in line for line in err), 30,
                   what="the worker restart")
        # ... and the restarted worker runs operations
        auth = {"Authorization": f"Bearer {token}"}
        op = _make_network(base, auth, "after-restart")
        assert op["status"] == "succeeded", op

        # the local AWS is a child too: restarted on the same URL, empty, and the user is told
        sandbox_pids = [p for p in _children(proc.pid) if "sandbox" in _cmdline(p)]
        assert sandbox_pids
        os.killpg(os.getpgid(sandbox_pids[0]), signal.SIGKILL)
        wait_until(lambda: any("sandbox exited" in line for line in err), 30,
                   what="the local AWS's restart")
        assert any("local AWS starts again empty" in line for line in err), "".join(err)
        aws_url = next(line for line in err if "local AWS at " in line).split(
            "local AWS at ", 1)[1].split()[0]
        wait_until(lambda: _answers(aws_url + "/_sandbox"), 30, what="the restarted local AWS")
        op = _make_network(base, auth, "after-aws-restart")
        assert op["status"] == "succeeded", op

        descendants = _children(proc.pid)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        time.sleep(0.2)
        assert _alive(descendants) == [], "children left running after SIGTERM"
        assert all(line.startswith("hypd: ") for line in err), "".join(err)
        assert any("(its log: " in line and "worker.log" in line for line in err)
    finally:
        _stop_up(proc)


def test_a_killed_up_takes_its_children_with_it_and_verbose_shows_their_lines(tmp_path):
    """SIGKILL gives `hypd up` no chance to stop anything: its children (each in its own
    session, so Ctrl-C reaches only the supervisor) must notice and exit by themselves."""
    proc, port, out, err = _start_up(tmp_path, "--verbose")
    descendants: list[int] = []
    try:
        wait_until(lambda: any(line.startswith("hypd ready: ") for line in out), 90,
                   what="the ready line")
        assert out == [f"hypd ready: http://127.0.0.1:{port}/\n"]
        for source in ("redis", "sandbox", "worker", "web"):
            wait_until(lambda s=source: any(line.startswith(f"{s} | ") for line in err), 10,
                       what=f"{source}'s lines in the terminal")
        assert any("Ready to accept connections" in line for line in err)
        logs = tmp_path / "data" / "logs"
        assert any("Ready to accept connections" in line
                   for line in _log_lines(logs / "redis.log", "redis"))

        descendants = _children(proc.pid)
        names = " ".join(_cmdline(p) for p in descendants)
        assert "redis-server" in names and "worker" in names and "gunicorn" in names
        assert "launcher.cli sandbox" in names.replace("\0", " ")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        killed_at = time.monotonic()
        wait_until(lambda: not _alive(descendants), 15, interval=0.1,
                   what=f"the children of a killed hypd up to exit: {_alive(descendants)}")
        print(f"\nall {len(descendants)} descendants gone "
              f"{time.monotonic() - killed_at:.1f} s after SIGKILL")
    finally:
        _stop_up(proc)
        for pid in _alive(descendants):  # a failed run: leave no processes behind
            os.kill(pid, signal.SIGKILL)


def test_sandbox_command_prints_its_environment_and_serves_aws(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "HYPD_"))}
    env["PYTHONUNBUFFERED"] = "1"
    proc = subprocess.Popen([sys.executable, "-m", "launcher.cli", "sandbox"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    out: list[str] = []
    threading.Thread(target=_read_lines, args=(proc.stdout, out), daemon=True).start()
    try:
        wait_until(lambda: any(line.startswith("export AWS_ENDPOINT_URL=") for line in out),
                   60, what="the environment lines")
        exports = dict(line.removeprefix("export ").strip().split("=", 1)
                       for line in out if line.startswith("export "))
        assert exports["AWS_ENDPOINT_URL"].startswith("http://127.0.0.1:")
        import boto3

        ec2 = boto3.client("ec2", region_name="us-west-2",
                           endpoint_url=exports["AWS_ENDPOINT_URL"],
                           aws_access_key_id=exports["AWS_ACCESS_KEY_ID"],
                           aws_secret_access_key=exports["AWS_SECRET_ACCESS_KEY"])
        assert len(ec2.describe_availability_zones()["AvailabilityZones"]) >= 2
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_web_gate_flag_becomes_the_setting_its_workers_read(monkeypatch):
    """`hypd web --gate N` reaches gunicorn's workers as HYPD_WEB_GATE (app/web_worker.py
    reads it through Settings); without the flag the environment's value stands."""
    from cloud.settings import Settings
    from launcher.cli import _apply_flags, build_parser

    monkeypatch.setenv("HYPD_WEB_GATE", "")  # restored after the test: _apply_flags sets it
    monkeypatch.delenv("HYPD_WEB_GATE")
    _apply_flags(build_parser().parse_args(["web"]))
    assert Settings.from_env().web_gate == 8
    _apply_flags(build_parser().parse_args(["web", "--gate", "3"]))
    assert os.environ["HYPD_WEB_GATE"] == "3" and Settings.from_env().web_gate == 3
