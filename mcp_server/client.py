"""The one HTTP client of the MCP server: every tool is a call of the hypd REST API.

REST errors (the envelope `{"error": {"code", "message", "details"}}`) become `ApiError`
with the code, message and details intact; a network failure becomes an `ApiError` whose
message names the API URL, so an agent can tell "the panel refused" from "the panel is not
there".
"""

from __future__ import annotations

import asyncio
import json
import weakref
from dataclasses import dataclass, field
from typing import Any

import httpx

USER_AGENT = "hypd-mcp/0.1"
DEFAULT_TIMEOUT_S = 30.0

_STATUS_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    412: "precondition_failed",
    422: "validation_failed",
    429: "throttled",
    502: "upstream_error",
    503: "throttled",
}


class ApiError(Exception):
    """A failed REST call: the API's error envelope, or a network failure."""

    def __init__(
        self,
        code: str,
        message: str,
        details: dict[str, Any] | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details or {}
        self.status = status

    @property
    def text(self) -> str:
        return f"{self.code}: {self.message}"

    def envelope(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "error": {"code": self.code, "message": self.message, "details": self.details}
        }
        if self.status is not None:
            body["http_status"] = self.status
        return body


@dataclass
class ApiResponse:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


def _auth_headers(token: str | None) -> dict[str, str]:
    headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def _parse(resp: httpx.Response, method: str, url: str) -> ApiResponse:
    """A 2xx reply as ApiResponse; anything else raises ApiError with the API's own words."""
    try:
        body: Any = resp.json() if resp.content else None
    except ValueError:
        body = None
    if resp.is_success:
        if body is None and resp.content:
            raise ApiError(
                "upstream_error",
                f"{method} {url} answered {resp.status_code} with a body that is not JSON",
                status=resp.status_code,
            )
        return ApiResponse(resp.status_code, body, dict(resp.headers))
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("code"):
        details = error.get("details")
        raise ApiError(
            str(error["code"]),
            str(error.get("message") or ""),
            details if isinstance(details, dict) else ({"value": details} if details else None),
            resp.status_code,
        )
    code = _STATUS_CODES.get(resp.status_code, "upstream_error")
    snippet = resp.text.strip().replace("\n", " ")[:200]
    raise ApiError(
        code,
        f"{method} {url} answered HTTP {resp.status_code}" + (f": {snippet}" if snippet else ""),
        status=resp.status_code,
    )


def _network_error(exc: httpx.HTTPError, api_url: str, method: str, path: str,
                   timeout: float) -> ApiError:
    if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout):
        return ApiError(
            "api_timeout",
            f"the hypd API at {api_url} did not answer {method} {path} within {timeout:g} s. "
            "If this was a change it may still have been applied: calling the tool again with "
            "the same arguments is safe (same idempotency key), or look with list_operations.",
        )
    return ApiError(
        "api_unreachable",
        f"cannot reach the hypd API at {api_url} ({type(exc).__name__}: {exc}). Is the panel "
        "running (`hypd up`) and is HYPD_API_URL right?",
    )


_POOLS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop,
                                  dict[int, httpx.AsyncClient]] = weakref.WeakKeyDictionary()


def _pooled(transport: httpx.AsyncBaseTransport | None) -> httpx.AsyncClient:
    """One HTTP client per event loop (and transport), kept: a tool call reuses a kept-alive
    connection instead of opening one (and building a TLS context) each time — that setup
    was most of a call's cost. Keyed by loop because a client must not outlive its loop;
    the entry goes when the loop does."""
    loop = asyncio.get_running_loop()
    clients = _POOLS.setdefault(loop, {})
    key = id(transport)
    client = clients.get(key)
    if client is None or client.is_closed:
        client = clients[key] = httpx.AsyncClient(transport=transport, timeout=DEFAULT_TIMEOUT_S)
    return client


class ApiClient:
    """Calls the hypd REST API with one bearer token."""

    def __init__(self, api_url: str, token: str | None, *, timeout: float = DEFAULT_TIMEOUT_S,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.api_url = api_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self._transport = transport

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json_body: Any = None,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> ApiResponse:
        """One REST call, on this event loop's pooled connections (see `_pooled`)."""
        timeout = timeout or self.timeout
        all_headers = {**_auth_headers(self.token), **(headers or {})}
        url = self.api_url + path
        kwargs: dict[str, Any] = {"params": params or None, "headers": all_headers}
        if json_body is not None:
            kwargs["content"] = json.dumps(json_body)
            all_headers["Content-Type"] = "application/json"
        try:
            http = _pooled(self._transport)
            http.cookies.clear()  # callers share the pool: nothing of one reaches another
            resp = await http.request(method, url, timeout=timeout, **kwargs)
        except httpx.HTTPError as exc:
            raise _network_error(exc, self.api_url, method, path, timeout) from exc
        return _parse(resp, method, path)

    async def whoami(self) -> dict[str, Any]:
        return (await self.request("GET", "/api/v1/auth/whoami", timeout=10)).body


def openapi_sync(api_url: str, *, timeout: float = 10.0) -> dict[str, Any]:
    """`GET /api/v1/openapi.json` (public) without an event loop: read once at start."""
    api_url = api_url.rstrip("/")
    path = "/api/v1/openapi.json"
    try:
        with httpx.Client(timeout=timeout) as http:
            resp = http.get(api_url + path, headers=_auth_headers(None))
    except httpx.HTTPError as exc:
        raise _network_error(exc, api_url, "GET", path, timeout) from exc
    body = _parse(resp, "GET", path).body
    if not isinstance(body, dict):
        raise ApiError("upstream_error", f"{api_url}{path} is not an OpenAPI document")
    return body


def whoami_sync(api_url: str, token: str, *, timeout: float = 10.0) -> dict[str, Any]:
    """`GET /api/v1/auth/whoami` without an event loop (for start-up checks)."""
    api_url = api_url.rstrip("/")
    path = "/api/v1/auth/whoami"
    try:
        with httpx.Client(timeout=timeout) as http:
            resp = http.get(api_url + path, headers=_auth_headers(token))
    except httpx.HTTPError as exc:
        raise _network_error(exc, api_url, "GET", path, timeout) from exc
    return _parse(resp, "GET", path).body
