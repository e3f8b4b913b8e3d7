"""The one place settings are read from the environment.

Every process (web, worker, MCP, sandbox) reads the same variables the same way; `hypd up`
turns its flags into environment variables for its children instead of passing objects.
docs/configuration.md lists every setting with its default; a test checks it against this
module (each variable sets exactly the setting it documents, with that default).

The settings as DESIGN.md's table has them: `HYPD_AWS` (`sandbox`|`aws`), `HYPD_REGION`,
`HYPD_HOST`, `HYPD_PORT`, `HYPD_REDIS_URL`, `HYPD_DATA_DIR`, `HYPD_OPERATOR_TOKEN`,
`HYPD_VIEWER_TOKEN`, `HYPD_TOKENS_FILE`, `HYPD_SANDBOX_SPEED`, `HYPD_POLL_MIN_S`,
`HYPD_POLL_MAX_S`, `HYPD_API_URL`, `HYPD_TOKEN`. Added since:

- `HYPD_PRICING_REGION` (default `us-east-1`): the region of the Price List API's endpoint.
  AWS serves it from us-east-1, eu-central-1 and ap-south-1 only (any of them prices every
  region), so another value is refused at start.
- `HYPD_VISIBILITY_TIMEOUT_S` (the broker's visibility timeout, default 300; the suite uses
  5): must exceed `HYPD_POLL_MAX_S`.
- `HYPD_LEASE_S` (a step's lease, default 15; the suite uses 2): must be below the visibility
  timeout. It is how long a dead worker's operation waits before the sweeper picks it up
  (see tasks/engine/__init__.py).
- For deployment (issue 14): `HYPD_LOG_FORMAT` (`text`|`json`), `HYPD_METRICS_DIR` (default
  `HYPD_DATA_DIR/metrics`), `HYPD_ROLE_BOUNDARY_ARN` (default the template's
  `hypd-role-boundary` in the caller's account), `HYPD_AUDIT_MAX_ENTRIES` (50,000).
- For model downloads (issue 12): `HYPD_MODEL_DOWNLOAD_IMAGE` (default `python:3.12-slim`,
  refused at start unless an image reference), read by the workers.
- For budgets (issue 25): `HYPD_BUDGET_CHECK_S` (default 300): how often the web processes
  check every budgeted cluster's month against its budget.

Safety: with `HYPD_AWS=sandbox`, `cloud/aws.py` refuses to build a client unless
`AWS_ENDPOINT_URL` points at a loopback address, and forces fake credentials. That is a guard,
not a behaviour branch: the product never asks "am I in the sandbox" to decide what to do.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from vocabulary.aws import AWS_MODES

PRICE_LIST_REGIONS = ("us-east-1", "eu-central-1", "ap-south-1")
"""Where AWS serves the Price List API (GetProducts); any of them prices every region."""
LOG_FORMATS = ("text", "json")
_POLICY_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:policy/[\w+=,.@/-]+$")
_SPACES_URL = re.compile(r"^(?:https://[A-Za-z0-9.-]+|http://(?:localhost|127\.0\.0\.1|\[::1\]))"
                         r"(?::[0-9]{1,5})?$")
"""Where spaces are opened: https, or plain http on this machine's loopback (browsers keep a
`Secure` cookie there too); no path, since the router serves its spaces at the origin's
root (`/s/<cluster>/<namespace>/<name>/`)."""
DEFAULT_SPACES_PORT = 3097
DEFAULT_MODEL_DOWNLOAD_IMAGE = "python:3.12-slim"
"""A stock Python image: the download Job pip-installs its tools into it at every run."""
_IMAGE = re.compile(
    r"^(?:[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?(?::\d{1,5})?/)?"  # registry host[:port]/
    r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$")
"""A container image reference (repository[:tag][@digest]), as a Kubernetes Pod takes it."""


class SettingsError(ValueError):
    """A setting has a value hypd cannot run with."""


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit():
        raise SettingsError(f"{name} must be a whole number, got {raw!r}")
    return int(raw)


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise SettingsError(f"{name} must be a number, got {raw!r}") from exc


@dataclass(frozen=True)
class Settings:
    aws_mode: str = "sandbox"
    region: str = "us-west-2"
    host: str = "127.0.0.1"
    port: int = 3099
    redis_url: str | None = None
    data_dir: Path = field(default_factory=lambda: Path("~/.local/share/hypd").expanduser())
    operator_token: str | None = None
    viewer_token: str | None = None
    tokens_file: Path | None = None
    sandbox_speed: float = 1.0
    poll_min_s: float = 2.0
    poll_max_s: float = 60.0
    visibility_timeout_s: float = 300.0
    lease_s: float = 15.0
    """How long a step's lease outlives its worker (the heartbeat renews it every third):
    the time after which a dead worker's operation is picked up again by the sweeper."""
    api_url: str = "http://127.0.0.1:3099"
    token: str | None = None
    pricing_region: str = "us-east-1"
    """The Price List API endpoint's region: the client's, not the priced cluster's."""
    log_format: str = "text"
    """`json`: one JSON object per log line, carrying the operation id (app/logs.py)."""
    metrics_dir: Path | None = None
    """Where the processes of one machine keep their Prometheus samples (multiprocess
    mode); unset: `<data dir>/metrics`. Use `metrics_path`."""
    role_boundary_arn: str | None = None
    """The permissions boundary of every IAM role hypd creates; unset: the policy the
    CloudFormation template creates, `hypd-role-boundary` under `/hypd/` in the caller's
    account (cloud/iam.py)."""
    audit_max_entries: int = 50_000
    """The audit log keeps this many newest entries (about 300 bytes each)."""
    aws_read_timeout_s: float = 30.0
    """How long a worker's AWS call waits for an answer before botocore tries again."""
    model_download_image: str = DEFAULT_MODEL_DOWNLOAD_IMAGE
    """The image of the model download Job (cloud/models.py): one that already has the
    tools (deploy/images/model-download/Dockerfile) skips their install, and so the Job
    needs no way to PyPI."""
    web_gate: int = 8
    """Per web process: how many of its threads (`hypd web --threads`) run request code at
    once (app/gate.py); the rest wait in line, and a long-poll or WebSocket that waits steps
    out. 0: no gate."""
    budget_check_s: float = 300.0
    """How often the web processes (one of them at a time) hold every budgeted cluster's cost
    this month against its budget, raising a crossed warning (app/budget_watch.py)."""
    spaces_port: int = DEFAULT_SPACES_PORT
    """The port hypd's spaces router (`hypd spaces-router`) listens on, on `host`."""
    spaces_url: str | None = None
    """Where people open Dev spaces: the origin of hypd's spaces router, as a browser reaches
    it (the access strategy renders `<origin>/s/<cluster>/<ns>/<name>/`); unset: this
    machine's own router. Use `spaces_origin`."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        mode = env.get("HYPD_AWS", "sandbox") or "sandbox"
        if mode not in AWS_MODES:
            raise SettingsError(f"HYPD_AWS must be one of {', '.join(AWS_MODES)}, got {mode!r}")
        port_raw = env.get("HYPD_PORT", "3099") or "3099"
        if not port_raw.isdigit() or not 0 <= int(port_raw) < 65536:
            raise SettingsError(f"HYPD_PORT must be a port number, got {port_raw!r}")
        spaces_port = _int(env, "HYPD_SPACES_PORT", DEFAULT_SPACES_PORT)
        tokens_file = env.get("HYPD_TOKENS_FILE") or None
        metrics_dir = env.get("HYPD_METRICS_DIR") or None
        settings = cls(
            aws_mode=mode,
            region=env.get("HYPD_REGION") or "us-west-2",
            host=env.get("HYPD_HOST") or "127.0.0.1",
            port=int(port_raw),
            redis_url=env.get("HYPD_REDIS_URL") or None,
            data_dir=Path(env.get("HYPD_DATA_DIR") or "~/.local/share/hypd").expanduser(),
            operator_token=env.get("HYPD_OPERATOR_TOKEN") or None,
            viewer_token=env.get("HYPD_VIEWER_TOKEN") or None,
            tokens_file=Path(tokens_file).expanduser() if tokens_file else None,
            sandbox_speed=_float(env, "HYPD_SANDBOX_SPEED", 1.0),
            poll_min_s=_float(env, "HYPD_POLL_MIN_S", 2.0),
            poll_max_s=_float(env, "HYPD_POLL_MAX_S", 60.0),
            visibility_timeout_s=_float(env, "HYPD_VISIBILITY_TIMEOUT_S", 300.0),
            lease_s=_float(env, "HYPD_LEASE_S", 15.0),
            api_url=(env.get("HYPD_API_URL") or "http://127.0.0.1:3099").rstrip("/"),
            token=env.get("HYPD_TOKEN") or None,
            pricing_region=env.get("HYPD_PRICING_REGION") or "us-east-1",
            log_format=(env.get("HYPD_LOG_FORMAT") or "text").lower(),
            metrics_dir=Path(metrics_dir).expanduser() if metrics_dir else None,
            role_boundary_arn=env.get("HYPD_ROLE_BOUNDARY_ARN") or None,
            audit_max_entries=_int(env, "HYPD_AUDIT_MAX_ENTRIES", 50_000),
            aws_read_timeout_s=_float(env, "HYPD_AWS_READ_TIMEOUT_S", 30.0),
            model_download_image=(env.get("HYPD_MODEL_DOWNLOAD_IMAGE")
                                  or DEFAULT_MODEL_DOWNLOAD_IMAGE),
            spaces_port=spaces_port,
            spaces_url=(env.get("HYPD_SPACES_URL") or "").rstrip("/") or None,
            web_gate=_int(env, "HYPD_WEB_GATE", 8),
            budget_check_s=_float(env, "HYPD_BUDGET_CHECK_S", 300.0),
        )
        settings.check()
        return settings

    def check(self) -> None:
        if self.pricing_region not in PRICE_LIST_REGIONS:
            raise SettingsError(
                f"HYPD_PRICING_REGION must be one of {', '.join(PRICE_LIST_REGIONS)} (AWS "
                f"serves the Price List API only there), got {self.pricing_region!r}")
        if self.log_format not in LOG_FORMATS:
            raise SettingsError(f"HYPD_LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}, "
                                f"got {self.log_format!r}")
        if self.audit_max_entries < 100:
            raise SettingsError("HYPD_AUDIT_MAX_ENTRIES must be at least 100")
        if self.role_boundary_arn and not _POLICY_ARN.match(self.role_boundary_arn):
            raise SettingsError("HYPD_ROLE_BOUNDARY_ARN must be an IAM policy ARN "
                                f"(arn:aws:iam::<account>:policy/...), got "
                                f"{self.role_boundary_arn!r}")
        if len(self.model_download_image) > 255 or not _IMAGE.match(self.model_download_image):
            raise SettingsError("HYPD_MODEL_DOWNLOAD_IMAGE must be a container image reference "
                                "(registry/repository:tag or @sha256:digest), got "
                                f"{self.model_download_image!r}")
        if not _SPACES_URL.match(self.spaces_origin):
            raise SettingsError("HYPD_SPACES_URL must be an https:// origin (scheme, host and "
                                "optional port, no path), or http:// on localhost, got "
                                f"{self.spaces_url!r}")
        if not 0 < self.spaces_port < 65536:
            raise SettingsError("HYPD_SPACES_PORT must be a port number, got "
                                f"{self.spaces_port}")
        if self.budget_check_s < 1:
            raise SettingsError("HYPD_BUDGET_CHECK_S must be at least 1")
        if self.aws_read_timeout_s <= 0:
            raise SettingsError("HYPD_AWS_READ_TIMEOUT_S must be above 0")
        if self.sandbox_speed <= 0:
            raise SettingsError("HYPD_SANDBOX_SPEED must be above 0")
        if not 0 < self.poll_min_s <= self.poll_max_s:
            raise SettingsError("HYPD_POLL_MIN_S must be above 0 and at most HYPD_POLL_MAX_S")
        if self.poll_max_s >= self.visibility_timeout_s:
            raise SettingsError(
                "HYPD_POLL_MAX_S must stay below HYPD_VISIBILITY_TIMEOUT_S, or the broker "
                "redelivers waiting monitors as duplicates"
            )
        if not 0 < self.lease_s < self.visibility_timeout_s:
            raise SettingsError(
                "HYPD_LEASE_S must be above 0 and below HYPD_VISIBILITY_TIMEOUT_S (the sweeper, "
                "not the broker, is what picks up a dead worker's operation)"
            )

    @property
    def metrics_path(self) -> Path:
        return self.metrics_dir or self.data_dir / "metrics"

    @property
    def spaces_origin(self) -> str:
        """The spaces router's origin: HYPD_SPACES_URL, else this machine's router."""
        return self.spaces_url or f"http://127.0.0.1:{self.spaces_port}"

    @property
    def redis(self) -> str:
        """The Redis URL processes connect to; `hypd up` sets HYPD_REDIS_URL for children."""
        if not self.redis_url:
            raise SettingsError("HYPD_REDIS_URL is not set (hypd up sets it for its children)")
        return self.redis_url
