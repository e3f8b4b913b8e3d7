"""Tokens and roles on the REST face."""

from __future__ import annotations


def test_no_token_is_401_in_the_envelope(stack):
    with stack.client(token=None) as c:
        reply = c.get("/api/v1/operations")
    assert reply.status_code == 401
    assert reply.json()["error"]["code"] == "unauthorized"
    assert reply.headers["WWW-Authenticate"] == "Bearer"


def test_wrong_token_is_401(stack):
    with stack.client(token="not-a-token") as c:
        reply = c.get("/api/v1/auth/whoami")
    assert reply.status_code == 401
    assert "not valid" in reply.json()["error"]["message"]


def test_whoami_names_token_and_role(stack):
    with stack.client("viewer") as c:
        assert c.get("/api/v1/auth/whoami").json() == {
            "name": "viewer", "role": "viewer", "aws": "sandbox", "region": "us-west-2"}
    with stack.client("operator") as c:
        assert c.get("/api/v1/auth/whoami").json() == {
            "name": "operator", "role": "operator", "aws": "sandbox", "region": "us-west-2"}


def test_viewer_may_read_but_not_mutate(stack):
    with stack.client("viewer") as c:
        assert c.get("/api/v1/operations").status_code == 200
        reply = c.post("/api/v1/networks", json={"name": "viewer-net"})
        assert reply.status_code == 403
        assert reply.json()["error"]["code"] == "forbidden"
        assert c.delete("/api/v1/networks/anything").status_code == 403
        assert c.post("/api/v1/operations/op_x/cancel").status_code == 403


def test_public_routes_need_no_token(stack):
    with stack.client(token=None) as c:
        assert c.get("/healthz").json() == {"status": "ok"}
        assert c.get("/api/v1/openapi.json").status_code == 200
        page = c.get("/")
        assert page.status_code == 200 and "<html" in page.text.lower()
