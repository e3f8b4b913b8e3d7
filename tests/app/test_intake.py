"""app/intake.py's strict JSON reader, and the bugs it and the stream-id rule closed, on an
in-process app over a Redis of its own (no stack): each case here was a 500, or an attempt
the audit log lost. tests/app/test_malformed_requests.py runs the whole catalogue on the
stack."""

from __future__ import annotations

import json

import pytest

from app import create_app, intake
from app.audit import AUDIT_KEY, older_than
from app.auth import TokenTable, digest
from cloud.settings import Settings
from schemas.common import STREAM_ID_MAX
from tasks.engine.model import new_operation
from tasks.networks import NETWORK_CREATE

OPERATOR = {"Authorization": "Bearer o"}
VIEWER = {"Authorization": "Bearer v"}


@pytest.mark.parametrize(("text", "reason"), [
    ("[" * 10_000 + "]" * 10_000, "nested deeper than 32 levels"),
    ('{"a": ' * (intake.MAX_DEPTH + 1) + "1" + "}" * (intake.MAX_DEPTH + 1), "nested deeper"),
    ('{"n": ' + "9" * 5000 + "}", "out of range"),
    ('{"n": 9223372036854775808}', "out of range"),  # 2**63
    ('{"n": -9223372036854775809}', "out of range"),
    ('{"n": 1e999}', "out of range"),
    ('{"n": NaN}', "NaN is not JSON"),
    ('{"n": -Infinity}', "-Infinity is not JSON"),
    ('\ufeff{"n": 1}', "BOM"),
])
def test_the_reader_refuses_what_the_parsers_behind_it_cannot_take(text, reason):
    with pytest.raises(ValueError, match=reason):
        intake.loads(text)


def test_the_reader_takes_json_up_to_its_limits():
    at_limit = '{"a": ' * intake.MAX_DEPTH + "1" + "}" * intake.MAX_DEPTH
    assert intake.loads(at_limit)["a"]["a"]
    assert intake.loads(b'{"n": 9223372036854775807, "m": -9223372036854775808, "f": 1e308}') \
        == {"n": 2**63 - 1, "m": -(2**63), "f": 1e308}
    assert intake.loads('{"s": "\\u0000 and \\ud800"}') == {"s": "\x00 and \ud800"}
    with pytest.raises(UnicodeDecodeError):
        intake.loads('{"s": "é"}'.encode("latin-1"))


@pytest.fixture
def client(redis_url, redis_db):
    app = create_app(Settings(redis_url=redis_url),
                     tokens=TokenTable([("operator", "operator", digest("o")),
                                        ("viewer", "viewer", digest("v"))]))
    return app, app.test_client()


def _audit(redis_db) -> list[dict]:
    return [json.loads(fields["data"]) for _, fields in redis_db.xrange(AUDIT_KEY)]


def test_a_body_that_crashed_the_audit_hook_is_refused_and_audited(client, redis_db):
    """10,000 levels of arrays: the JSON parser's RecursionError was a 500, and the audit
    hook's own parse of the body crashed the same way, so the attempt went unrecorded."""
    _, http = client
    reply = http.post("/api/v1/networks", data="[" * 10_000 + "]" * 10_000,
                      headers={**OPERATOR, "Content-Type": "application/json"})
    assert reply.status_code == 400, reply.get_data(as_text=True)
    assert reply.get_json()["error"]["code"] == "bad_request"
    assert "nested deeper than 32 levels" in reply.get_json()["error"]["message"]
    [entry] = _audit(redis_db)
    assert (entry["route"], entry["status"], entry["code"], entry["outcome"], entry["token"]) \
        == ("POST /api/v1/networks", 400, "bad_request", "refused", "operator")


def test_a_viewers_refusal_still_names_the_target_its_body_names(client, redis_db):
    """Refused for its token before intake ran: the audit hook reads the body through the
    same reader (lazily, never raising), and a malformed body leaves the target unknown."""
    _, http = client
    assert http.post("/api/v1/networks", json={"name": "lab"}, headers=VIEWER) \
        .status_code == 403
    assert http.post("/api/v1/networks", data='{"name": ' + "[" * 5000,
                     headers={**VIEWER, "Content-Type": "application/json"}).status_code == 403
    assert [(e["target"], e["status"]) for e in _audit(redis_db)] == [("network/lab", 403),
                                                                     (None, 403)]


def test_a_trailing_newline_is_not_a_name(client, redis_db):
    """`$` matched before a final newline, so "lab\\n" passed the name rule (and named the
    audit entry's target)."""
    _, http = client
    reply = http.post("/api/v1/networks", json={"name": "lab\n"}, headers=OPERATOR)
    assert reply.status_code == 422, reply.get_data(as_text=True)
    [message] = reply.get_json()["error"]["details"]["fields"]["name"]
    assert message.startswith("invalid name")
    assert _audit(redis_db)[0]["target"] is None


@pytest.mark.parametrize("cursor", ["\u0661-\u0661", "1-0\n", "9" * 20 + "-0", "1-" + "9" * 20])
def test_cursors_reach_redis_only_whole(client, redis_db, cursor):
    """A long-poll's `after` and the audit log's `before` go to Redis as stream ids; Redis
    refuses a malformed one with an error, which was a 500. The schema's rule (ASCII digits,
    the whole value, each part below 2**64) now refuses them first."""
    app, http = client
    store = app.extensions["hypd.engine"].store
    op, _ = store.create(new_operation(NETWORK_CREATE, "network/wait", {"name": "wait"},
                                       "operator", None), None)  # queued: nothing runs it
    reply = http.get(f"/api/v1/operations/{op['id']}",
                     query_string={"wait": "0.05", "after": cursor}, headers=OPERATOR)
    assert reply.status_code == 422, reply.get_data(as_text=True)
    assert reply.get_json()["error"]["details"]["fields"] == {"after": ["not an event id"]}
    reply = http.get("/api/v1/audit", query_string={"before": cursor}, headers=OPERATOR)
    assert reply.status_code == 422, reply.get_data(as_text=True)


@pytest.mark.parametrize("before", ["0-0", "00-0", "0-00", "000-000"])
def test_nothing_is_older_than_any_spelling_of_0_0(client, redis_db, before):
    """`(00-0` is an exclusive 0-0 to Redis, which refuses it (the special case caught only
    the spelling `0-0`): the bound is now computed, inclusive, before Redis sees it."""
    _, http = client
    http.delete("/api/v1/networks/x", headers=VIEWER)  # one entry to (not) find
    reply = http.get("/api/v1/audit", query_string={"before": before}, headers=OPERATOR)
    assert reply.status_code == 200, reply.get_data(as_text=True)
    assert reply.get_json() == {"items": [], "next_before": None}


def test_older_than_is_the_newest_id_below():
    assert older_than("5-3") == "5-2"
    assert older_than("5-0") == f"4-{STREAM_ID_MAX}"
    assert older_than("0-1") == "0-0"
    assert older_than("0-0") is older_than("00-000") is None
    assert older_than("0012-0") == f"11-{STREAM_ID_MAX}"
