"""A real local stack for tests: redis-server, the local AWS (`hypd sandbox`), a Celery worker
process and the web server (gunicorn), each a real process. Tests reach them as a user
would: the API over HTTP, AWS with boto3, a cluster's Kubernetes with the kubernetes client
and an EKS token (`Stack.kube`), and the sandbox's faults, holds, call log, quotas and plans
through its control routes (`Stack.sandbox`)."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import boto3
import httpx
import redis
from botocore.config import Config

REPO = Path(__file__).resolve().parent.parent
OPERATOR_TOKEN = "test-operator-token-0123456789"
VIEWER_TOKEN = "test-viewer-token-0123456789"
TEAM = "research"
MEMBER_TOKENS = {"ana": ("operator", "test-ana-token-0123456789"),
                 "ben": ("viewer", "test-ben-token-0123456789")}
"""Tokens of the stack's tokens file, members of TEAM (name: role, secret)."""

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
    "HYPD_BUDGET_CHECK_S": "2",
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


@functools.cache
def tls() -> ssl.SSLContext:
    """One TLS context for every client the tests make: httpx builds one per client
    otherwise (loading the CA bundle, ~80 ms of CPU each), thousands of times a run."""
    return ssl.create_default_context()


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
    _killpgs((proc, sig))


def _killpgs(*signals: tuple[subprocess.Popen | None, int]) -> None:
    """Signal each process group, then wait for each (SIGKILL after 10 s): the groups stop
    side by side, so a stack's stop takes its slowest part's time, not their sum."""
    sent = []
    for proc, sig in signals:
        if proc is None or proc.poll() is not None:
            continue
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            continue
        sent.append(proc)
    for proc in sent:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


class Stack:
    def __init__(self, web_args: tuple[str, ...] = ("--threads", "16"),
                 redis_aof: bool = False, settings: dict[str, str] | None = None) -> None:
        """`web_args`: flags for `hypd web` (the benchmarks pass none: hypd's defaults);
        `redis_aof`: run redis-server as `hypd up` does in aws mode (append-only file,
        fsync always), so it can be killed and restarted without losing a write;
        `settings`: HYPD_* values over TEST_ENV's for every process of this stack."""
        self.web_args = web_args
        self.redis_aof = redis_aof
        self.settings = settings or {}
        self.tmp = Path(tempfile.mkdtemp(prefix="hypd-test-"))
        self.redis_proc: subprocess.Popen | None = None
        self.worker_proc: subprocess.Popen | None = None
        self.web_proc: subprocess.Popen | None = None
        self.sandbox_proc: subprocess.Popen | None = None
        self.router_proc: subprocess.Popen | None = None
        self.env: dict[str, str] = {}
        self.url = ""
        self.operator_token = OPERATOR_TOKEN
        self.viewer_token = VIEWER_TOKEN

    # lifecycle ------------------------------------------------------------------------

    def start(self) -> Stack:
        from sandbox.control import SandboxControl
        from sandbox.env import client_env

        self.redis_port = free_port()
        self.redis_url = f"redis://127.0.0.1:{self.redis_port}/0"
        self._start_redis()

        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.spaces_port = free_port()
        self.spaces_url = f"http://127.0.0.1:{self.spaces_port}"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "HYPD_"))},
            **TEST_ENV,
            "HYPD_TOKENS_FILE": str(self._tokens_file()),
            **self.settings,
            "HYPD_REDIS_URL": self.redis_url,
            "HYPD_PORT": str(port),
            "HYPD_HOST": "127.0.0.1",
            "HYPD_DATA_DIR": str(self.tmp / "data"),
            "HYPD_API_URL": self.url,
            "HYPD_SPACES_PORT": str(self.spaces_port),
            "PYTHONUNBUFFERED": "1",
        }
        # Port 0: the local AWS binds a free port itself and prints it (no window in which
        # another process could take a port chosen for it).
        self.sandbox_proc = self._spawn("sandbox", ["sandbox"])
        self.aws_url = wait_until(self._sandbox_url, 60, what="the local AWS")
        self.sandbox = SandboxControl(self.aws_url)
        self.env.update(client_env(self.aws_url, TEST_ENV["HYPD_REGION"]))
        self._iam_seen = 0
        self.product_roles: set[str] = set()
        self._create_role_boundary()
        RUNNING.append(self)
        self.start_worker()
        self.start_web()
        return self

    def stop(self) -> None:
        if self in RUNNING:
            RUNNING.remove(self)
        _killpgs((self.web_proc, signal.SIGTERM), (self.router_proc, signal.SIGTERM),
                 (self.worker_proc, signal.SIGKILL),
                 (self.sandbox_proc, signal.SIGTERM), (self.redis_proc, signal.SIGTERM))
        if os.environ.get("HYPD_TEST_KEEP"):  # keep the processes' logs for a post-mortem
            print(f"hypd test stack logs kept in {self.tmp}", file=sys.stderr)
            return
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _spawn(self, name: str, args: list[str],
               env: dict[str, str] | None = None) -> subprocess.Popen:
        log = open(self.tmp / f"{name}.log", "ab")  # noqa: SIM115 (lives with the process)
        return subprocess.Popen([sys.executable, "-m", "launcher.cli", *args], cwd=REPO,
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

    def start_web(self, **env: str) -> None:
        """Start the web server and wait for /healthz; `env` overrides settings for it only
        (e.g. HYPD_REDIS_URL through a proxy)."""
        self.web_proc = self._spawn("web", ["web", *self.web_args], env)
        wait_until(self._web_up, 30, what="web /healthz")

    def spaces_router(self) -> str:
        """The spaces router's origin, its process started on first use (the access
        strategy names it from the start: HYPD_SPACES_PORT, HYPD_SPACES_URL unset)."""
        if self.router_proc is None or self.router_proc.poll() is not None:
            self.router_proc = self._spawn("spaces-router", ["spaces-router"])
            wait_until(self._router_up, 30, what="spaces router /healthz")
        return self.spaces_url

    def _router_up(self) -> bool:
        if self.router_proc.poll() is not None:
            raise AssertionError("spaces router exited:\n" + self.log("spaces-router"))
        try:
            return httpx.get(self.spaces_url + "/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def kill_web(self) -> None:
        """SIGKILL the web server's whole process group (gunicorn's master and workers)."""
        _killpg(self.web_proc, signal.SIGKILL)

    def _redis_argv(self) -> list[str]:
        if self.redis_aof:
            from cloud.settings import Settings
            from launcher.supervisor import redis_argv

            return redis_argv(Settings(aws_mode="aws", data_dir=self.tmp / "redis"),
                              self.redis_port)
        return [shutil.which("redis-server") or "redis-server", "--bind", "127.0.0.1",
                "--port", str(self.redis_port), "--save", "", "--appendonly", "no",
                "--dir", str(self.tmp)]

    def _start_redis(self) -> None:
        self.redis_proc = subprocess.Popen(self._redis_argv(), stdout=subprocess.DEVNULL,
                                           start_new_session=True)
        wait_until(self._redis_up, 10, what="redis-server")

    def restart_redis(self) -> None:
        """SIGKILL redis-server (a crash: nothing flushed on the way out) and start it again
        on the same port and files; with `redis_aof`, every acknowledged write is back."""
        _killpg(self.redis_proc, signal.SIGKILL)
        self._start_redis()

    def log(self, name: str) -> str:
        path = self.tmp / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _redis_up(self) -> bool:
        try:
            return bool(redis.Redis.from_url(self.redis_url, socket_timeout=0.5).ping())
        except redis.RedisError:
            return False

    def _sandbox_url(self) -> str | None:
        """The URL `hypd sandbox` prints once it serves (`export AWS_ENDPOINT_URL=...`)."""
        if self.sandbox_proc.poll() is not None:
            raise AssertionError("the local AWS exited:\n" + self.log("sandbox"))
        found = re.search(r"^export AWS_ENDPOINT_URL=(\S+)$", self.log("sandbox"), re.M)
        return found.group(1) if found else None

    def _web_up(self) -> bool:
        if self.web_proc.poll() is not None:
            raise AssertionError("web server exited:\n" + self.log("web"))
        try:
            return httpx.get(self.url + "/healthz", verify=tls(), timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    # the roles hypd creates ---------------------------------------------------------------

    def _create_role_boundary(self) -> None:
        """What deploy/cloudformation.yaml makes before hypd runs."""
        from tests.deploy.template import policy

        iam = self.aws("iam")
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

    def aws(self, service: str, **config: Any) -> Any:
        """A boto3 client on the stack's local AWS, with the credentials the workers use."""
        return boto3.client(service, region_name=TEST_ENV["HYPD_REGION"],
                            endpoint_url=self.aws_url,
                            aws_access_key_id=self.env["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=self.env["AWS_SECRET_ACCESS_KEY"],
                            config=Config(**config))

    def kube(self, cluster: str) -> ClusterKube:
        """The EKS cluster's Kubernetes, reached as the product reaches it."""
        return ClusterKube(cluster, self.aws("eks"), self.aws("sts"))

    def _tokens_file(self) -> Path:
        """The tokens file: TEAM's members beside the operator and viewer tokens."""
        import hashlib

        path = self.tmp / "tokens.json"
        path.write_text(json.dumps([
            {"name": name, "role": role, "sha256": hashlib.sha256(secret.encode()).hexdigest(),
             "team": TEAM} for name, (role, secret) in MEMBER_TOKENS.items()]))
        return path

    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis_url, decode_responses=True)

    @contextmanager
    def client(self, token: str | None = "operator") -> Iterator[httpx.Client]:
        named = {"operator": self.operator_token, "viewer": self.viewer_token,
                 **{name: secret for name, (_, secret) in MEMBER_TOKENS.items()}}
        secret = named.get(token or "", token)
        headers = {"Authorization": f"Bearer {secret}"} if secret else {}
        with httpx.Client(base_url=self.url, headers=headers, timeout=30,
                          verify=tls()) as c:
            yield c

    def wait_idle(self, timeout: float = 90.0) -> None:
        """Let every operation still running finish, so that a fault point or a hold armed
        next catches this test's call and not a straggler of an earlier test."""
        with self.client() as c:
            for status in ("queued", "running"):
                for op in c.get("/api/v1/operations", params={"status": status}).json()["items"]:
                    self.wait_operation(op["id"], timeout)

    def killed_once_answered(self, service: str, action: str,
                             submit: Callable[[], httpx.Response],
                             while_held: Callable[[], None] | None = None,
                             timeout: float = 120.0) -> dict:
        """The worst moment for a worker to die: `submit()` answers 202; once the local AWS
        (or a cluster's Kubernetes, service "kubernetes") has answered service:action but
        before hypd heard it, the worker's process group is SIGKILLed, the answer let go and
        a new worker started. `while_held` looks at the world in between. Returns the
        operation at its end."""
        self.wait_idle()
        hold = self.sandbox.hold(service, action)
        try:
            reply = submit()
            assert reply.status_code == 202, reply.text
            op_id = reply.json()["operation"]["id"]
            self.sandbox.wait_held(hold, timeout=60)
            if while_held is not None:
                while_held()
            self.kill_worker()
            self.sandbox.release(hold)
            self.start_worker()
            return self.wait_operation(op_id, timeout)
        finally:
            self.sandbox.clear_holds()
            if self.worker_proc is not None and self.worker_proc.poll() is not None:
                self.start_worker()

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


class ClusterKube:
    """One sandbox cluster's Kubernetes as a user of EKS reaches it: endpoint and CA from
    DescribeCluster, a bearer token from a presigned STS call (`aws eks get-token`), TLS
    verified — the product's own client (cloud.eks.ClusterClient, cloud.kube). The principal
    is the workers' (same credentials), so it has the panel's access entry."""

    def __init__(self, cluster: str, eks: Any, sts: Any) -> None:
        from cloud.eks import ClusterClient, eks_token

        found = eks.describe_cluster(name=cluster)["cluster"]
        self.url: str = found["endpoint"]
        self.api = ClusterClient(
            cluster, TEST_ENV["HYPD_REGION"], self.url, found["certificateAuthority"]["data"],
            token_source=lambda name, region: eks_token(name, region, sts=sts)).api

    def get_object(self, api_version: str, kind: str, name: str,
                   namespace: str | None = None) -> dict[str, Any] | None:
        from cloud import kube

        return kube.get_object(self.api, api_version, kind, name, namespace)

    def list_objects(self, api_version: str, kind: str,
                     namespace: str | None = None) -> list[dict[str, Any]]:
        from cloud import kube

        return kube.list_objects(self.api, api_version, kind, namespace)

    def delete_object(self, api_version: str, kind: str, name: str,
                      namespace: str | None = None) -> bool:
        from cloud import kube

        return kube.delete_object(self.api, api_version, kind, name, namespace)

    def create_pod(self, pod: dict[str, Any]) -> None:
        """Create the Pod, then write its `status` through /status as a kubelet would."""
        from kubernetes.client import CoreV1Api

        core, meta = CoreV1Api(self.api), pod["metadata"]
        core.create_namespaced_pod(meta["namespace"], {k: v for k, v in pod.items()
                                                       if k != "status"},
                                   _preload_content=False)
        if pod.get("status"):
            core.patch_namespaced_pod_status(meta["name"], meta["namespace"],
                                             {"status": pod["status"]}, _preload_content=False)

    def label_node(self, name: str, labels: dict[str, str]) -> None:
        """Set labels on a Node (as HyperPod's health agent does)."""
        from kubernetes.client import CoreV1Api

        CoreV1Api(self.api).patch_node(name, {"metadata": {"labels": labels}},
                                       _preload_content=False)

    def serves(self) -> bool:
        """Whether this cluster's API server still answers (with its CA and a token)."""
        from urllib3.exceptions import HTTPError

        try:
            self.get_object("v1", "Namespace", "default")
        except (HTTPError, OSError):
            return False
        return True
