"""The one boto3 client factory, error classification, and hypd's tag conventions.

Every AWS call in hypd goes through `client()`. boto3 itself honours `AWS_ENDPOINT_URL`
(and `AWS_ENDPOINT_URL_<SERVICE>`) from the environment, which is how the sandbox is reached;
nothing here asks "am I in the sandbox" to decide what to do. With `HYPD_AWS=sandbox` the
factory only *guards*: it refuses to build a client whose endpoint is not a loopback address,
pins the client to the endpoint it checked, and forces fake credentials without reading
`~/.aws` — so the sandbox can never reach real AWS by accident.

Caching: a boto3/botocore session is not thread-safe, clients are. One session per process
(and per mode) is used only under a lock to build clients; the clients themselves are shared
by every thread of that process. After a fork (Celery prefork) the cache is dropped, so no
child reuses its parent's connection pool.
"""

from __future__ import annotations

import ipaddress
import os
import re
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import boto3
import botocore.session
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    IncompleteReadError,
    ReadTimeoutError,
    ResponseStreamingError,
)

from cloud import metrics, rehearsal
from cloud.settings import Settings, SettingsError

# ---------------------------------------------------------------------------------------
# client factory
# ---------------------------------------------------------------------------------------

MAX_ATTEMPTS = 5
CONNECT_TIMEOUT_S = 5

SANDBOX_ACCESS_KEY = "testing"
SANDBOX_SECRET_KEY = "testing"  # fake by design: the sandbox accepts anything

_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": MAX_ATTEMPTS},
    connect_timeout=CONNECT_TIMEOUT_S,
    user_agent_extra="hypd",
)

_lock = threading.Lock()
_pid = os.getpid()
_sessions: dict[str, boto3.session.Session] = {}
_clients: dict[tuple[Any, ...], Any] = {}


def client(service: str, region: str | None = None, settings: Settings | None = None, *,
           max_attempts: int = MAX_ATTEMPTS, read_timeout_s: float | None = None) -> Any:
    """A boto3 client for `service` in `region` (default: the settings' region).

    `max_attempts` and `read_timeout_s` are for callers that answer a person waiting (a dry
    run's prices): they would rather say "unknown" soon than retry for half a minute. The
    read timeout is otherwise the settings' (HYPD_AWS_READ_TIMEOUT_S).
    Raises `SettingsError` in sandbox mode when the endpoint is not a loopback address.
    """
    settings = settings or Settings.from_env()
    region = region or settings.region
    read_timeout_s = read_timeout_s or settings.aws_read_timeout_s
    sandbox = settings.aws_mode == "sandbox"
    endpoint = sandbox_endpoint(service) if sandbox else None
    # boto3 reads the endpoint variables when it builds a client: they are part of the key
    key = (settings.aws_mode, service, region, endpoint or configured_endpoint(service)[1],
           max_attempts, read_timeout_s)
    with _lock:
        _drop_cache_after_fork()
        cached = _clients.get(key)
        if cached is None:
            session = _session(settings.aws_mode)
            config = _CONFIG.merge(Config(
                retries={"mode": "standard", "total_max_attempts": max_attempts},
                read_timeout=read_timeout_s))
            # sandbox: pinned to the endpoint just checked, whatever else the config says
            cached = session.client(service, region_name=region, endpoint_url=endpoint,
                                    config=config)
            _clients[key] = cached
        return cached


def sandbox_endpoint(service: str, env: Mapping[str, str] | None = None) -> str:
    """The endpoint a sandbox-mode client must use, or `SettingsError` if it is not local.

    boto3 lets `AWS_ENDPOINT_URL_<SERVICE>` override `AWS_ENDPOINT_URL`, so the guard checks
    the variable that would win.
    """
    name, url = configured_endpoint(service, env)
    if not url:
        raise SettingsError(
            "HYPD_AWS=sandbox but AWS_ENDPOINT_URL is not set: refusing to build an AWS "
            "client that would reach real AWS (start the sandbox with `hypd up`, or set "
            "HYPD_AWS=aws to use real AWS deliberately)"
        )
    if not _is_loopback_url(url):
        raise SettingsError(
            f"HYPD_AWS=sandbox but {name}={url!r} is not a loopback address: refusing to "
            "send sandbox traffic anywhere but this machine (set HYPD_AWS=aws to use real "
            "AWS deliberately)"
        )
    return url


def configured_endpoint(service: str,
                        env: Mapping[str, str] | None = None) -> tuple[str, str | None]:
    """(variable, value) of the endpoint variable boto3 would use for `service`."""
    env = os.environ if env is None else env
    specific = "AWS_ENDPOINT_URL_" + service.upper().replace("-", "_").replace(" ", "_")
    name = specific if env.get(specific) else "AWS_ENDPOINT_URL"
    return name, env.get(name) or None


def clear_cache() -> None:
    """Forget every cached session and client (tests; credential changes)."""
    with _lock:
        _sessions.clear()
        _clients.clear()


def _is_loopback_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _drop_cache_after_fork() -> None:
    global _pid
    if os.getpid() != _pid:
        _pid = os.getpid()
        _sessions.clear()
        _clients.clear()


def _session(mode: str) -> boto3.session.Session:
    session = _sessions.get(mode)
    if session is None:
        if mode == "sandbox":
            # Never read ~/.aws (nor AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE or a
            # profile named in the environment): the sandbox runs on fake credentials only.
            # A session variable is (config key, environment variables, default, converter).
            core = botocore.session.Session(session_vars={
                "profile": (None, None, None, None),
                "config_file": (None, None, os.devnull, None),
                "credentials_file": (None, None, os.devnull, None),
            })
            session = boto3.session.Session(
                aws_access_key_id=SANDBOX_ACCESS_KEY,
                aws_secret_access_key=SANDBOX_SECRET_KEY,
                botocore_session=core,
            )
        else:
            session = boto3.session.Session()
        # before any client is made from it: clients copy the session's event hooks
        metrics.register_aws_hooks(session.events)
        rehearsal.register_aws_hooks(session.events)
        _sessions[mode] = session
    return session


# ---------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------

THROTTLING_CODES = frozenset({
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottled",
    "RequestThrottledException",
    "RequestLimitExceeded",
    "TooManyRequestsException",
    "ProvisionedThroughputExceededException",
    "BandwidthLimitExceeded",
    "EC2ThrottledException",
    "SlowDown",
    "PriorRequestNotComplete",
})

TRANSIENT_CODES = THROTTLING_CODES | frozenset({
    "RequestTimeout",
    "RequestTimeoutException",
    "InternalError",
    "InternalFailure",
    "InternalServerError",
    "InternalServiceError",
    "ServiceUnavailable",
    "ServiceUnavailableException",
    "Unavailable",
})

_TRANSIENT_BOTOCORE = (
    EndpointConnectionError,
    ConnectTimeoutError,
    ReadTimeoutError,
    ConnectionClosedError,
    ResponseStreamingError,
    IncompleteReadError,
)


def error_code(exc: BaseException) -> str | None:
    """The AWS error code of a `ClientError` (e.g. "DependencyViolation"), else None."""
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code")
        return str(code) if code else None
    return None


def http_status(exc: BaseException) -> int | None:
    if isinstance(exc, ClientError):
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return int(status) if status else None
    return None


def is_transient(exc: BaseException) -> bool:
    """True for errors worth retrying later: throttling, 5xx, connection problems, timeouts."""
    if isinstance(exc, ClientError):
        if error_code(exc) in TRANSIENT_CODES:
            return True
        status = http_status(exc)
        return status is not None and (status >= 500 or status == 429)
    if isinstance(exc, _TRANSIENT_BOTOCORE):
        return True
    if isinstance(exc, BotoCoreError):
        return False
    return isinstance(exc, (TimeoutError, ConnectionError))


def is_not_found(exc: BaseException) -> bool:
    """True for the "no such resource" family (`InvalidVpcID.NotFound`, `NatGatewayNotFound`,
    `NoSuchEntity`, `ResourceNotFoundException` ...)."""
    code = error_code(exc) or ""
    return (code.endswith("NotFound") or code.endswith("NotFoundException")
            or code in ("NoSuchEntity", "NoSuchBucket", "InvalidAllocationID.NotFound"))


# ---------------------------------------------------------------------------------------
# tags
# ---------------------------------------------------------------------------------------

MANAGED_BY = "hypd:managed-by"
MANAGED_BY_VALUE = "hypd"
NETWORK_TAG = "hypd:network"
CLUSTER_TAG = "hypd:cluster"
ROLE_TAG = "hypd:role"


_BARE_KEY = re.compile(r"^[a-z][a-z0-9_]*$")


def tag_key(key: str) -> str:
    """Extra tag keys: a bare lowercase word is namespaced (`role` → `hypd:role`,
    `instance_group` → `hypd:instance-group`); anything else (`Name`,
    `kubernetes.io/role/elb`, `hypd:role`) is used as given."""
    if _BARE_KEY.match(key):
        return "hypd:" + key.replace("_", "-")
    return key


def tags_for(owner_key: str, owner: str, **extra: str) -> list[dict[str, str]]:
    """The tags every hypd resource carries: managed-by, its owner, and any extras.

    >>> tags_for(NETWORK_TAG, "lab", role="vpc")[2]
    {'Key': 'hypd:role', 'Value': 'vpc'}
    """
    if not owner:
        raise ValueError("a hypd resource needs an owner name for its tags")
    tags = {MANAGED_BY: MANAGED_BY_VALUE, owner_key: owner}
    for key, value in extra.items():
        if value is not None:
            tags[tag_key(key)] = str(value)
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def tag_specifications(resource_type: str, tags: list[dict[str, str]]) -> list[dict[str, Any]]:
    """`TagSpecifications` for an EC2 create call, so the resource is never untagged."""
    return [{"ResourceType": resource_type, "Tags": list(tags)}]


def tag_filters(owner_key: str, owner: str | None = None, **extra: str) -> list[dict[str, Any]]:
    """EC2 `Filters` matching hypd-managed resources of an owner (any owner when None)."""
    filters: list[dict[str, Any]] = [{"Name": f"tag:{MANAGED_BY}", "Values": [MANAGED_BY_VALUE]}]
    if owner is None:
        filters.append({"Name": "tag-key", "Values": [owner_key]})
    else:
        filters.append({"Name": f"tag:{owner_key}", "Values": [owner]})
    for key, value in extra.items():
        values = list(value) if isinstance(value, (list, tuple, set)) else [value]
        filters.append({"Name": f"tag:{tag_key(key)}", "Values": [str(v) for v in values]})
    return filters


def tag_dict(resource: Mapping[str, Any]) -> dict[str, str]:
    """A resource's `Tags` list as a dict."""
    return {t["Key"]: t["Value"] for t in resource.get("Tags") or ()}
