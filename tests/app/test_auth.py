"""Tokens, roles and teams on the REST face."""

from __future__ import annotations

import pytest
import yaml

from tests.stack import MEMBER_TOKENS, TEAM


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


def test_whoami_names_token_role_and_team(stack):
    with stack.client("viewer") as c:
        assert c.get("/api/v1/auth/whoami").json() == {
            "name": "viewer", "role": "viewer", "aws": "sandbox", "region": "us-west-2",
            "team": None}
    with stack.client("operator") as c:
        assert c.get("/api/v1/auth/whoami").json() == {
            "name": "operator", "role": "operator", "aws": "sandbox", "region": "us-west-2",
            "team": None}
    for name, (role, _) in MEMBER_TOKENS.items():  # the stack's tokens file names their team
        with stack.client(name) as c:
            assert c.get("/api/v1/auth/whoami").json() == {
                "name": name, "role": role, "aws": "sandbox", "region": "us-west-2",
                "team": TEAM}


def test_a_tokens_file_names_each_token_s_team_and_refuses_a_bad_one(tmp_path):
    from app.auth import TokenTable, digest, read_tokens_file
    from cloud.settings import SettingsError

    path = tmp_path / "tokens.yaml"
    path.write_text(yaml.safe_dump([
        {"name": "ana", "role": "operator", "sha256": digest("a-secret"), "team": "vision"},
        {"name": "cy", "role": "viewer", "sha256": digest("c-secret"), "team": "vision"},
        {"name": "dee", "role": "operator", "sha256": digest("d-secret")}]))
    table = TokenTable(read_tokens_file(path))
    assert table.lookup("a-secret").team == "vision" and table.lookup("d-secret").team is None
    assert table.members("vision") == ["ana", "cy"] and table.members("nlp") == []
    for bad in ("Vision", "-x", "a" * 40):
        path.write_text(yaml.safe_dump([
            {"name": "eve", "role": "operator", "sha256": digest("e"), "team": bad}]))
        with pytest.raises(SettingsError, match="token 'eve': team"):
            TokenTable(read_tokens_file(path))


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
