"""What a request's body must be before any route reads it, and the envelope of every refusal.

All replies are JSON. Errors: `{"error": {"code", "message", "details"}}`. A body or query
that fails its schema is `422 validation_failed` with `details.fields`: each field's
messages, marshmallow's nesting kept with string keys (list items by index, `_schema` for
the field as a whole); the message names each dotted path (`availability_zones.2: ...`).
A well-formed request the cluster can never hold (a job, an endpoint) is `422
exceeds_capacity`, with `details.fields` naming the field and the numbers in `details`
(cloud/fit.py, the one capacity-fit check; for jobs, see cloud/training.py).

No request reaches a 5xx by its shape. Every body a mutation (POST, PUT, PATCH, DELETE)
sends is read once, here, before its route, by one strict JSON reader (`request.get_json()`
reads with it too), and refused in the envelope when it is not what the API takes:

- not sent as JSON (`application/json` or `+json`): `415 unsupported_media_type`. Such a body
  was silently read as empty, so a PATCH in `text/plain` answered "already as asked";
- over `MAX_BODY_BYTES` (1 MiB, a chunked one too): `413 payload_too_large`;
- not UTF-8, a BOM, NaN/Infinity, an integer beyond 64 bits, a number beyond a double, or
  nesting deeper than `MAX_DEPTH` (32 levels): `400 bad_request`, the message saying which;
- not an object: `422 validation_failed`.

Past this point a body cannot crash the parsers behind it (webargs', marshmallow's, the audit
hook's, the error summary's): Python's JSON parser raises RecursionError on deep nesting and
ValueError on integers over 4,300 digits, neither of which webargs expected, and both were
500s. Reads carry no body the API reads; their bodies are left alone.

Beyond the body:

- Every pattern in the schemas matches the whole value (`schemas.common.Pattern`:
  marshmallow's `re.match` let a trailing newline through every rule) and writes digits
  `[0-9]` (Python's digit class takes any script's).
- Stream-id cursors (`GET /api/v1/audit?before=`, `GET /api/v1/operations/<id>?after=`, the
  WebSocket's `after`) are checked in full (ASCII digits, each part below 2**64) before Redis
  sees them. The audit log's `before` becomes an inclusive bound computed in Python, because
  Redis refuses an exclusive 0-0 in any spelling (`00-0` too).
- What gunicorn refuses before the app sees it is answered by `hypd web`'s worker class,
  app/web_worker.py (gthread, with gunicorn's refusals in the envelope instead of its HTML
  page and its 501): a request line over 4,094 bytes `414 uri_too_long`; a header field over
  8,190 bytes or more than 100 of them `431 headers_too_large`; a control character in a
  header, a method that is no token, an HTTP version that is none, a transfer coding it does
  not speak `400 bad_request`. These are audited with route `<method> (refused before
  routing)`, no token, the path cut at 200 characters.
- A malformed chunk found while intake reads the body is `400 bad_request` (it was a 500).
  After a body it did not read (a 413) gunicorn drops the keep-alive connection.

tests/app/test_malformed_requests.py sends a fixed catalogue (bodies of every shape, depth,
size and encoding, odd values for every declared query parameter, odd headers) to every
route of the OpenAPI document.
"""

from __future__ import annotations

import json
import math
from typing import Any

from flask import Flask, g, request
from flask.json.provider import DefaultJSONProvider
from werkzeug.exceptions import RequestEntityTooLarge

from app.errors import ApiError

MAX_BODY_BYTES = 1 << 20
"""The largest body accepted (the limit the app had as MAX_CONTENT_LENGTH)."""

MAX_DEPTH = 32
"""Arrays and objects nested deeper than this are refused (the API's bodies nest a few
levels; Python's parser gives up near 1,000)."""

MAX_INT_DIGITS = 19
"""An integer literal longer than this cannot be a count, size or id any field takes."""

BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

JSON_TYPES = {list: "an array", str: "a string", int: "a number", float: "a number",
              bool: "a boolean", type(None): "null"}


def _out_of_range(text: str) -> ValueError:
    shown = text if len(text) <= 24 else text[:24] + "…"
    return ValueError(f"the number {shown} is out of range (at most 64-bit integers and "
                      f"finite numbers)")


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _out_of_range(text)  # before int(): its cost grows with the digits
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise _out_of_range(text)
    return value


def _number(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _out_of_range(text)
    return value


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _depth_within(value: Any, limit: int) -> bool:
    """True when no array or object in `value` is nested deeper than `limit` (iterative:
    a recursive walk is what this guards against)."""
    pending = [(value, 1)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if level > limit:
            return False
        pending.extend((child, level + 1) for child in children)
    return True


def loads(data: str | bytes) -> Any:
    """Strict JSON (RFC 8259): UTF-8, no NaN or Infinity, integers within 64 bits, finite
    numbers, nesting at most `MAX_DEPTH`. Raises ValueError saying what is wrong."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    try:
        value = json.loads(text, parse_int=_integer, parse_float=_number,
                           parse_constant=_constant)
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
    if not _depth_within(value, MAX_DEPTH):
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    return value


class StrictJSONProvider(DefaultJSONProvider):
    """Flask's JSON with `loads` above: `request.get_json()` anywhere reads as intake does."""

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        return loads(s)


def install(app: Flask) -> None:
    """Call after auth.install: a request without a valid token is refused for that first."""
    app.json = StrictJSONProvider(app)
    # one byte more than accepted: werkzeug cuts a chunked body at this length silently
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES + 1
    app.before_request(_read_body)


def _sent_body() -> bool:
    return bool(request.content_length) or \
        "chunked" in request.headers.get("Transfer-Encoding", "").lower()


def _read_body() -> None:
    if request.path.startswith("/api/") and request.method in BODY_METHODS \
            and request.url_rule is not None:  # else no route: 404 or 405 answers
        g.hypd_body = _read()


def body() -> Any:
    """The request's JSON object as intake reads it; None when it sent none, or one intake
    refuses (or has not read: a request refused for its token first). Never raises."""
    if "hypd_body" not in g:
        try:
            g.hypd_body = _read()
        except ApiError:
            g.hypd_body = None
    return g.hypd_body


def _read() -> dict[str, Any] | None:
    """The body as a JSON object (None when there is none); ApiError saying why not."""
    if not _sent_body():
        return None
    if not request.is_json:
        sent = request.mimetype or "no Content-Type"
        raise ApiError(415, "unsupported_media_type",
                       f"the body must be JSON sent as Content-Type: application/json "
                       f"(this one is {sent[:100]})", {"content_type": sent[:100]})
    too_large = ApiError(413, "payload_too_large",
                         f"the body is larger than {MAX_BODY_BYTES >> 20} MiB, the most this "
                         f"API accepts", {"max_bytes": MAX_BODY_BYTES})
    if (request.content_length or 0) > MAX_BODY_BYTES:
        raise too_large
    try:
        raw = request.get_data(cache=True)
    except RequestEntityTooLarge:
        raise too_large from None
    except Exception as exc:  # the server's stream: a malformed chunk, a body cut off
        raise ApiError(400, "bad_request", "the body could not be read: a malformed chunk or "
                       "a connection cut short", {"reason": type(exc).__name__}) from None
    if len(raw) > MAX_BODY_BYTES:  # a chunked body, cut at MAX_CONTENT_LENGTH
        raise too_large
    if not raw:
        return None  # an empty chunked body
    try:
        value = loads(raw)
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        reason = "not UTF-8" if isinstance(exc, UnicodeDecodeError) else str(exc)
        raise ApiError(400, "bad_request", f"the body is not valid JSON: {reason[:200]}",
                       {"reason": reason[:200]}) from None
    if not isinstance(value, dict):
        message = f"the body must be a JSON object, not {JSON_TYPES[type(value)]}"
        raise ApiError(422, "validation_failed", message, {"fields": {"_schema": [message]}})
    return value
