"""The local AWS: moto in server mode on 127.0.0.1, behind the sandbox's WSGI layer.

moto runs inside this process (its backends are module globals), in a threaded werkzeug
server on a daemon thread, so tests and `hypd sandbox` start it in a few milliseconds and can
reach into moto's state when the timing rules need to. Other processes — the web app, Celery
workers — reach it over HTTP through the environment from `client_env`.
"""

from __future__ import annotations

import threading
from typing import Any

from moto.moto_server.werkzeug_app import MotoRequestHandler
from werkzeug.serving import BaseWSGIServer, make_server

from sandbox.layer import LocalAwsApp

HOST = "127.0.0.1"  # loopback only: this server accepts any credentials
DEFAULT_REGION = "us-west-2"
# Variables that would send boto3 to a real profile; unset them in a sandboxed child.
UNSET_ENV: tuple[str, ...] = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE")


class _QuietHandler(MotoRequestHandler):
    """moto's request handler without one access-log line per request (the call log has them)."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass


class LocalAws:
    """Start and stop one local AWS endpoint.

    moto's state is per process, not per server: two LocalAws in one process share AWS state.
    `/moto-api/reset` (POST) wipes it; `/_sandbox/reset` wipes only the sandbox's own records.
    """

    def __init__(
        self, speed: float = 1.0, port: int = 0, load_managed_policies: bool = True
    ) -> None:
        self.app = LocalAwsApp(speed)
        self._port = port
        self._load_managed_policies = load_managed_policies
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Base URL, e.g. http://127.0.0.1:43121 (only after start)."""
        if self._server is None:
            raise RuntimeError("LocalAws is not started")
        return f"http://{HOST}:{self._server.server_port}"

    def start(self) -> str:
        """Listen (port 0 picks a free one) and serve on a daemon thread; returns the URL."""
        if self._server is not None:
            return self.url
        if self._load_managed_policies:
            _load_aws_managed_policies()
        server = make_server(
            HOST, self._port, self.app, threaded=True, request_handler=_QuietHandler
        )
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="hypd-local-aws",
            daemon=True,
        )
        self._thread.start()
        return self.url

    def stop(self) -> None:
        """Release held and stalled requests, stop listening, and wait for the loop to end."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self.app.close()
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> LocalAws:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _load_aws_managed_policies() -> None:
    """Have moto know AWS-managed IAM policies (AmazonEKSClusterPolicy, ...).

    The product attaches them to roles. moto reads this flag when it builds an account's IAM
    backend (~0.6 s, once per account), so it must be set before the first IAM call.
    Process-wide, like all moto state.
    """
    from moto.core.config import default_user_config

    default_user_config.setdefault("iam", {})["load_aws_managed_policies"] = True


def client_env(url: str, region: str = DEFAULT_REGION) -> dict[str, str]:
    """Environment that points boto3 in another process at the local AWS.

    Fake credentials (moto accepts any) and no config files, so nothing from the developer's
    real AWS setup can leak in; also unset `UNSET_ENV` in the child.
    """
    return {
        "AWS_ENDPOINT_URL": url,
        "AWS_ACCESS_KEY_ID": "AKIAHYPDSANDBOX00000",
        "AWS_SECRET_ACCESS_KEY": "hypd-sandbox-secret-not-a-real-key",
        "AWS_SESSION_TOKEN": "hypd-sandbox-session",
        "AWS_DEFAULT_REGION": region,
        "AWS_REGION": region,
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        "AWS_EC2_METADATA_DISABLED": "true",
    }
