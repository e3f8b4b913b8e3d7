"""app/web_worker.py: every refusal gunicorn can make of a client's request is answered in the
envelope below 500 (the stack-level test sends them: tests/app/test_malformed_requests.py)."""

from __future__ import annotations

import inspect
import json

from gunicorn.http import errors as http

from app.web_worker import audit_entry, refusal, reply

SERVER_SIDE = {http.ConfigurationProblem, http.InvalidResponseHeader,
               http.InvalidResponseHeaderName}
"""The server's or the application's own faults: gunicorn's 500 stands."""


def _parse_errors() -> list[type[Exception]]:
    return [cls for _, cls in inspect.getmembers(http, inspect.isclass)
            if issubclass(cls, http.ParseException) and cls is not http.ParseException]


def test_every_client_refusal_gunicorn_knows_is_a_4xx_with_a_code():
    """A gunicorn upgrade that adds a refusal fails here until it is mapped."""
    found = _parse_errors()
    assert len(found) >= 15, found
    for cls in found:
        refused = refusal(cls.__new__(cls))
        if cls in SERVER_SIDE:
            assert refused is None, cls
        else:
            assert refused is not None and 400 <= refused[0] < 500, (cls, refused)


def test_the_reply_is_the_envelope_and_closes_the_connection():
    head, _, body = reply(414, "uri_too_long", "long").partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "HTTP/1.1 414 uri too long"
    assert {"Connection: close", "Content-Type: application/json",
            f"Content-Length: {len(body)}"} <= set(lines[1:])
    assert json.loads(body) == {"error": {"code": "uri_too_long", "message": "long",
                                          "details": {}}}


def test_an_entry_keeps_a_bounded_path_and_no_token():
    class Req:
        method, path = "GET", "/api/" + "a" * 5000

    entry = audit_entry(Req(), 431, "headers_too_large")
    assert (entry["token"], entry["role"], len(entry["path"])) == (None, None, 200)
    assert audit_entry(None, 414, "uri_too_long")["route"] == "- (refused before routing)"
