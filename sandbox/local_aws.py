"""The local AWS: moto in server mode on 127.0.0.1, behind the sandbox's WSGI layer.

moto runs inside this process (its backends are module globals), in a threaded werkzeug
server on a daemon thread, so the timing rules and gaps can reach into moto's state. `hypd
sandbox` runs one in a process of its own (`hypd up` and the test stack start that command);
sandbox tests may start one in theirs. Other processes reach it over HTTP through the
environment from `sandbox.env.client_env`.
"""

from __future__ import annotations

import threading
from typing import Any

from moto.moto_server.werkzeug_app import MotoRequestHandler
from werkzeug.serving import BaseWSGIServer, make_server

from sandbox import moto_fidelity, moto_speed
from sandbox.env import DEFAULT_REGION, HOST, UNSET_ENV, client_env
from sandbox.layer import LocalAwsApp

__all__ = ["DEFAULT_REGION", "HOST", "UNSET_ENV", "LocalAws", "client_env"]


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
        self._holds_policies = False
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
        moto_speed.apply()
        moto_fidelity.apply()
        if self._load_managed_policies:
            _managed_policies(+1)
            self._holds_policies = True
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
        if self._holds_policies:
            self._holds_policies = False
            _managed_policies(-1)

    def __enter__(self) -> LocalAws:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


_policies_lock = threading.Lock()
_policies_users = 0
_policies_before: dict[str, Any] = {}


def _managed_policies(delta: int) -> None:
    """Have moto know AWS-managed IAM policies (AmazonEKSClusterPolicy, ...) while a LocalAws
    of this process runs (`delta` +1 at its start, -1 at its stop).

    The product attaches them to roles. moto reads this flag when it builds an account's IAM
    backend (~0.6 s, once per account), so it must be set before the first IAM call. The flag
    is process-wide, like all moto state: left on, every later `mock_aws` reset in the same
    process (twice per test) rebuilds every account's ~1,000 policies, so the last LocalAws to
    stop puts it back as it found it.
    """
    from moto.core.config import default_user_config

    global _policies_users, _policies_before
    with _policies_lock:
        if delta > 0 and _policies_users == 0:
            _policies_before = dict(default_user_config.get("iam") or {})
            default_user_config.setdefault("iam", {})["load_aws_managed_policies"] = True
        _policies_users += delta
        if delta < 0 and _policies_users == 0:
            default_user_config["iam"] = _policies_before
