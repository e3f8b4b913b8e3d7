"""EKS bearer tokens, checked the way EKS's authenticator checks them.

`aws eks get-token` (and every EKS client library) presigns an STS `GetCallerIdentity` GET
with the header `x-k8s-aws-id: <cluster name>` signed in, and sends
`k8s-aws-v1.` + base64url(URL) (no padding) as the bearer token. The authenticator accepts
the URL only if it is an STS `GetCallerIdentity` (Version 2011-06-15) with nothing but the
SigV4 query parameters, `x-k8s-aws-id` among the signed headers, and an `X-Amz-Date` no
older than 15 minutes; then STS checks the signature with the header set to the
authenticator's own cluster name, so a token made for another cluster fails.

The sandbox does what STS would do in that last step itself: it recomputes the SigV4
signature with this cluster's name and the secret of the access key in the credential
(`sandbox.kube.identity.secret_for`). The URL's host must be an STS endpoint or the local
AWS on a loopback address (which is where a sandboxed client's STS calls go).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, urlsplit

PREFIX = "k8s-aws-v1."
CLUSTER_ID_HEADER = "x-k8s-aws-id"
MAX_AGE = datetime.timedelta(minutes=15)
MAX_SKEW = datetime.timedelta(minutes=5)
_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_ALLOWED_PARAMS = frozenset(
    {
        "action",
        "version",
        "x-amz-algorithm",
        "x-amz-credential",
        "x-amz-date",
        "x-amz-expires",
        "x-amz-security-token",
        "x-amz-signedheaders",
        "x-amz-signature",
    }
)
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class TokenError(Exception):
    """The token is not one EKS would accept (the reason is for logs, never the client)."""


@dataclass(frozen=True)
class Caller:
    access_key: str
    region: str


def _host_ok(scheme: str, host: str) -> bool:
    name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host.strip("[]")
    if name in _LOOPBACK:
        return scheme in ("http", "https")
    if scheme != "https":
        return False
    return name == "sts.amazonaws.com" or (
        name.startswith("sts.")
        and (name.endswith(".amazonaws.com") or name.endswith(".amazonaws.com.cn"))
    )


def _sign(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def _signature(
    secret: str,
    host: str,
    path: str,
    params: list[tuple[str, str]],
    cluster: str,
    signed_headers: list[str],
    date: str,
    scope: str,
    payload_hash: str,
) -> str:
    headers = {"host": host, CLUSTER_ID_HEADER: cluster}
    canonical_query = "&".join(
        f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}"
        for k, v in sorted(params)
        if k.lower() != "x-amz-signature"
    )
    canonical_headers = "".join(f"{h}:{headers.get(h, '').strip()}\n" for h in signed_headers)
    canonical = "\n".join(
        [
            "GET",
            quote(path or "/", safe="/-_.~"),
            canonical_query,
            canonical_headers,
            ";".join(signed_headers),
            payload_hash,
        ]
    )
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", date, scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    day, region, service, terminator = scope.split("/")
    key = _sign(("AWS4" + secret).encode(), day)
    for part in (region, service, terminator):
        key = _sign(key, part)
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def verify(
    token: str,
    cluster: str,
    secret_for: Callable[[str], str | None],
    now: datetime.datetime | None = None,
) -> Caller:
    """The caller a token proves, or TokenError."""
    if not token.startswith(PREFIX):
        raise TokenError("token is missing the k8s-aws-v1. prefix")
    encoded = token[len(PREFIX) :]
    try:
        url = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise TokenError("token is not base64url") from exc
    parts = urlsplit(url)
    if not _host_ok(parts.scheme, parts.netloc.lower()):
        raise TokenError(f"unexpected STS endpoint {parts.scheme}://{parts.netloc}")
    if parts.path not in ("", "/"):
        raise TokenError("unexpected path")
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    params: dict[str, str] = {}
    for key, value in pairs:
        if key.lower() not in _ALLOWED_PARAMS:
            raise TokenError(f"unexpected query parameter {key}")
        if key.lower() in params:
            raise TokenError(f"repeated query parameter {key}")
        params[key.lower()] = value
    if params.get("action") != "GetCallerIdentity" or params.get("version") != "2011-06-15":
        raise TokenError("not an STS GetCallerIdentity request")
    if params.get("x-amz-algorithm") != "AWS4-HMAC-SHA256":
        raise TokenError("not SigV4")
    signed = params.get("x-amz-signedheaders", "").split(";")
    if CLUSTER_ID_HEADER not in signed or "host" not in signed:
        raise TokenError("x-k8s-aws-id is not signed")
    credential = params.get("x-amz-credential", "").split("/")
    if len(credential) != 5 or credential[3] != "sts" or credential[4] != "aws4_request":
        raise TokenError("malformed credential")
    try:
        date = datetime.datetime.strptime(params.get("x-amz-date", ""), "%Y%m%dT%H%M%SZ").replace(
            tzinfo=datetime.UTC
        )
        expires = int(params.get("x-amz-expires", ""))
    except ValueError as exc:
        raise TokenError("malformed X-Amz-Date or X-Amz-Expires") from exc
    if not 0 < expires <= 15 * 60:
        raise TokenError("X-Amz-Expires out of range")
    now = now or datetime.datetime.now(datetime.UTC)
    if now - date > MAX_AGE:
        raise TokenError("token expired")
    if date - now > MAX_SKEW:
        raise TokenError("token from the future")
    if credential[1] != params["x-amz-date"][:8]:
        raise TokenError("credential scope date does not match X-Amz-Date")
    secret = secret_for(credential[0])
    if secret is None:
        raise TokenError("unknown access key")
    scope = "/".join(credential[1:])
    given = params.get("x-amz-signature", "")
    for payload_hash in (_EMPTY_SHA256, "UNSIGNED-PAYLOAD"):
        expected = _signature(
            secret,
            parts.netloc,
            parts.path,
            pairs,
            cluster,
            signed,
            params["x-amz-date"],
            scope,
            payload_hash,
        )
        if hmac.compare_digest(expected, given):
            return Caller(access_key=credential[0], region=credential[2])
    raise TokenError("signature does not match (another cluster's token, or tampered)")
