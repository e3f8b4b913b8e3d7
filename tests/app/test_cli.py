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

from tests.stack import REPO, free_port, wait_until


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


def test_up_prints_ready_serves_dashboard_restarts_worker_and_stops_cleanly(tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "HYPD_"))}
    env.update({"HYPD_PORT": str(port), "HYPD_DATA_DIR": str(tmp_path / "data"),
                "HYPD_SANDBOX_SPEED": "1000", "PYTHONUNBUFFERED": "1"})
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "up", "--concurrency", "1"],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    out: list[str] = []
    err: list[str] = []
    threading.Thread(target=_read_lines, args=(proc.stdout, out), daemon=True).start()
    threading.Thread(target=_read_lines, args=(proc.stderr, err), daemon=True).start()
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

        base = f"http://127.0.0.1:{port}"
        page = httpx.get(base + "/")
        assert page.status_code == 200 and "<html" in page.text.lower()
        who = httpx.get(base + "/api/v1/auth/whoami",
                        headers={"Authorization": f"Bearer {token}"})
        assert who.json() == {"name": "operator", "role": "operator"}
        zones = httpx.get(base + "/api/v1/discovery/availability-zones",
                          headers={"Authorization": f"Bearer {token}"})
        assert zones.status_code == 200 and len(zones.json()["items"]) >= 2

        # a worker that dies is restarted
        worker_pids = [p for p in _children(proc.pid)
                       if "worker" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")]
        assert worker_pids
        os.killpg(os.getpgid(worker_pids[0]), signal.SIGKILL)
        wait_until(lambda: any("worker exited" in line for line in err), 30,
                   what="the worker restart")
        # ... and the restarted worker runs operations
        auth = {"Authorization": f"Bearer {token}"}
        op = httpx.post(base + "/api/v1/networks", json={"name": "after-restart"},
                        headers=auth).json()["operation"]
        for _ in range(30):
            op = httpx.get(base + f"/api/v1/operations/{op['id']}", params={"wait": 5},
                           headers=auth, timeout=30).json()
            if op["status"] in ("succeeded", "failed"):
                break
        assert op["status"] == "succeeded", op

        descendants = _children(proc.pid)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        time.sleep(0.2)
        alive = [p for p in descendants if Path(f"/proc/{p}").exists()
                 and "zombie" not in Path(f"/proc/{p}/status").read_text().lower()]
        assert alive == [], "children left running after SIGTERM"
    finally:
        if proc.poll() is None:  # a failed assertion: stop it the way a user would first,
            proc.send_signal(signal.SIGTERM)  # so its children (own sessions) go too
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def test_sandbox_command_prints_its_environment_and_serves_aws(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "HYPD_"))}
    env["PYTHONUNBUFFERED"] = "1"
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "sandbox"], cwd=REPO, env=env,
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
