"""A real local stack for tests: redis-server, the local AWS, a Celery worker process and the
web server (gunicorn), each a real process (the local AWS runs in the test process, so tests
can reach its control routes and its fault points)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx
import redis

REPO = Path(__file__).resolve().parent.parent
OPERATOR_TOKEN = "test-operator-token-0123456789"
VIEWER_TOKEN = "test-viewer-token-0123456789"

TEST_ENV = {
    "HYPD_AWS": "sandbox",
    "HYPD_REGION": "us-west-2",
    "HYPD_POLL_MIN_S": "0.05",
    "HYPD_POLL_MAX_S": "0.5",
    "HYPD_VISIBILITY_TIMEOUT_S": "5",
    "HYPD_LEASE_S": "2",
    "HYPD_SANDBOX_SPEED": "1000",
    "HYPD_OPERATOR_TOKEN": OPERATOR_TOKEN,
    "HYPD_VIEWER_TOKEN": VIEWER_TOKEN,
    "HYPD_LOG_FORMAT": "json",
}


RUNNING: list[Stack] = []
"""Stacks started in this process (tests/conftest.py checks their IAM calls after each test)."""

BOUNDARY_ARN = "arn:aws:iam::123456789012:policy/hypd/hypd-role-boundary"
"""The boundary hypd's roles carry by default (HYPD_ROLE_BOUNDARY_ARN unset) in moto's
account: the stack creates it from deploy/cloudformation.yaml, as the template would."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(check, timeout: float = 30.0, interval: float = 0.05, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


def _tags(params: dict[str, Any]) -> dict[str, str]:
    """Tags of a logged IAM call (query protocol: `Tags.member.N.Key` / `.Value`)."""
    keys = {k.rsplit(".", 1)[0]: v for k, v in params.items()
            if k.startswith("Tags.member.") and k.endswith(".Key")}
    return {v: params.get(f"{k}.Value", "") for k, v in keys.items()}


def _killpg(proc: subprocess.Popen | None, sig: int = signal.SIGKILL) -> None:
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


class Stack:
    def __init__(self, web_args: tuple[str, ...] = ("--threads", "16")) -> None:
        """`web_args`: flags for `hypd web` (the benchmarks pass none: hypd's defaults)."""
        self.web_args = web_args
        self.tmp = Path(tempfile.mkdtemp(prefix="hypd-test-"))
        self.redis_proc: subprocess.Popen | None = None
        self.worker_proc: subprocess.Popen | None = None
        self.web_proc: subprocess.Popen | None = None
        self.local_aws: Any = None
        self.env: dict[str, str] = {}
        self.url = ""
        self.operator_token = OPERATOR_TOKEN
        self.viewer_token = VIEWER_TOKEN

    # lifecycle ------------------------------------------------------------------------

    def start(self) -> Stack:
        from sandbox.control import SandboxControl
        from sandbox.local_aws import LocalAws, client_env

        redis_port = free_port()
        self.redis_proc = subprocess.Popen(
            [shutil.which("redis-server") or "redis-server", "--bind", "127.0.0.1",
             "--port", str(redis_port), "--save", "", "--appendonly", "no",
             "--dir", str(self.tmp)],
            stdout=subprocess.DEVNULL, start_new_session=True,
        )
        self.redis_url = f"redis://127.0.0.1:{redis_port}/0"
        wait_until(self._redis_up, 10, what="redis-server")

        self.local_aws = LocalAws(speed=float(TEST_ENV["HYPD_SANDBOX_SPEED"]))
        aws_url = self.local_aws.start()
        self.sandbox = SandboxControl(aws_url)
        self._iam_seen = 0
        self.product_roles: set[str] = set()
        self._create_role_boundary(aws_url)
        RUNNING.append(self)

        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "HYPD_"))},
            **TEST_ENV,
            **client_env(aws_url, TEST_ENV["HYPD_REGION"]),
            "HYPD_REDIS_URL": self.redis_url,
            "HYPD_PORT": str(port),
            "HYPD_HOST": "127.0.0.1",
            "HYPD_DATA_DIR": str(self.tmp / "data"),
            "HYPD_API_URL": self.url,
            "PYTHONUNBUFFERED": "1",
        }
        self.start_worker()
        self.web_proc = self._spawn("web", ["web", *self.web_args])
        wait_until(self._web_up, 30, what="web /healthz")
        return self

    def stop(self) -> None:
        if self in RUNNING:
            RUNNING.remove(self)
        _killpg(self.web_proc, signal.SIGTERM)
        _killpg(self.worker_proc, signal.SIGKILL)
        _killpg(self.redis_proc, signal.SIGTERM)
        if self.local_aws is not None:
            self.local_aws.stop()
        if os.environ.get("HYPD_TEST_KEEP"):  # keep the processes' logs for a post-mortem
            print(f"hypd test stack logs kept in {self.tmp}", file=sys.stderr)
            return
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _spawn(self, name: str, args: list[str],
               env: dict[str, str] | None = None) -> subprocess.Popen:
        log = open(self.tmp / f"{name}.log", "ab")  # noqa: SIM115 (lives with the process)
        return subprocess.Popen([sys.executable, "-m", "app.cli", *args], cwd=REPO,
                                env={**self.env, **(env or {})}, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)

    def start_worker(self, **env: str) -> None:
        """Start the worker; `env` overrides settings for this worker only (e.g. a long
        HYPD_VISIBILITY_TIMEOUT_S, so that the broker cannot be what recovers a kill)."""
        self.worker_proc = self._spawn("worker", ["worker", "--concurrency", "2",
                                                  "--loglevel", "WARNING"], env)

    def spawn_worker(self, node: str, *args: str,
                     env: dict[str, str] | None = None) -> subprocess.Popen:
        """Another worker on this stack's Redis, named `node` (Celery's -n), logging to
        `<node>.log`; `env` overrides settings for it; the caller stops it (`stop_process`)."""
        return self._spawn(node, ["worker", "--hostname", node, *args], env)

    @staticmethod
    def stop_process(proc: subprocess.Popen) -> None:
        _killpg(proc, signal.SIGKILL)

    def kill_worker(self) -> None:
        """SIGKILL the worker's whole process group: main process and pool children."""
        _killpg(self.worker_proc, signal.SIGKILL)

    def log(self, name: str) -> str:
        path = self.tmp / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _redis_up(self) -> bool:
        try:
            return bool(redis.Redis.from_url(self.redis_url, socket_timeout=0.5).ping())
        except redis.RedisError:
            return False

    def _web_up(self) -> bool:
        if self.web_proc.poll() is not None:
            raise AssertionError("web server exited:\n" + self.log("web"))
        try:
            return httpx.get(self.url + "/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    # the roles hypd creates ---------------------------------------------------------------

    def _create_role_boundary(self, aws_url: str) -> None:
        """What deploy/cloudformation.yaml makes before hypd runs (moto keeps it once per
        process, whichever stack made it)."""
        import boto3

        from sandbox.local_aws import client_env
        from tests.deploy.template import policy

        env = client_env(aws_url, TEST_ENV["HYPD_REGION"])
        iam = boto3.client("iam", endpoint_url=aws_url, region_name=env["AWS_REGION"],
                           aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                           aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"])
        with suppress(iam.exceptions.EntityAlreadyExistsException):
            iam.create_policy(PolicyName=BOUNDARY_ARN.rsplit("/", 1)[1], Path="/hypd/",
                              PolicyDocument=json.dumps(policy("RoleBoundary")))

    def role_problems(self) -> list[str]:
        """What is wrong with the IAM roles the product created since the last look: every
        one (a CreateRole tagged `hypd:managed-by=hypd`) must be under `/hypd/` with the
        boundary, and every policy put on or attached to one must fit inside the boundary."""
        from tests.deploy.template import boundary_misses, managed_documents

        calls = self.sandbox.calls(service="iam", since=self._iam_seen)
        if calls:
            self._iam_seen = calls[-1]["seq"]
        problems = []
        documents: list[tuple[str, dict[str, Any]]] = []
        managed = set()
        for call in calls:
            params, action = call["params"], call["action"]
            if call["status"] >= 400:
                continue
            name = params.get("RoleName")
            if action == "CreateRole" and "hypd" in _tags(params).get("hypd:managed-by", ""):
                self.product_roles.add(name)
                if params.get("Path") != "/hypd/":
                    problems.append(f"role {name} created at path {params.get('Path')!r}")
                if params.get("PermissionsBoundary") != BOUNDARY_ARN:
                    problems.append(f"role {name} created with boundary "
                                    f"{params.get('PermissionsBoundary')!r}")
            elif name in self.product_roles and action == "PutRolePolicy":
                documents.append((f"{name} {params['PolicyName']}",
                                  json.loads(params["PolicyDocument"])))
            elif name in self.product_roles and action == "AttachRolePolicy":
                managed.add(params["PolicyArn"])
            elif (name in self.product_roles
                  and action in ("PutRolePermissionsBoundary", "DeleteRolePermissionsBoundary")
                  and params.get("PermissionsBoundary") != BOUNDARY_ARN):
                problems.append(f"role {name}: {action} {params}")
        misses = boundary_misses(documents + managed_documents(
            {arn for arn in managed if ":iam::aws:policy/" in arn}))
        return problems + [f"cut by the boundary: {miss}" for miss in misses]

    # clients --------------------------------------------------------------------------

    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis_url, decode_responses=True)

    @contextmanager
    def client(self, token: str | None = "operator") -> Iterator[httpx.Client]:
        secret = {"operator": self.operator_token, "viewer": self.viewer_token}.get(
            token or "", token)
        headers = {"Authorization": f"Bearer {secret}"} if secret else {}
        with httpx.Client(base_url=self.url, headers=headers, timeout=30) as c:
            yield c

    def wait_idle(self, timeout: float = 90.0) -> None:
        """Let every operation still running finish, so that a fault point or a hold armed
        next catches this test's call and not a straggler of an earlier test."""
        with self.client() as c:
            for status in ("queued", "running"):
                for op in c.get("/api/v1/operations", params={"status": status}).json()["items"]:
                    self.wait_operation(op["id"], timeout)

    def wait_operation(self, op_id: str, timeout: float = 60.0) -> dict:
        """Follow an operation to a terminal state the way a client would (long-poll)."""
        deadline = time.monotonic() + timeout
        with self.client() as c:
            while True:
                reply = c.get(f"/api/v1/operations/{op_id}", params={"wait": 5})
                assert reply.status_code == 200, reply.text + self.log("web")[-4000:]
                op = reply.json()
                if op["status"] in ("succeeded", "failed", "cancelled"):
                    return op
                if time.monotonic() > deadline:
                    raise AssertionError(f"operation {op_id} still {op['status']}: {op}")
