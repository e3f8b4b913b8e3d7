"""The headers every reply carries unless it sets its own: the dashboard's page may run only
its own scripts, be framed by nobody, and post a form only to hypd and to its spaces router
(the Open of a space posts its sign-in code there, from a tab that keeps the page's policy)."""

from __future__ import annotations

from app import create_app
from app.auth import TokenTable
from cloud.settings import Settings


def _policy(settings: Settings) -> dict[str, str]:
    app = create_app(settings, tokens=TokenTable([]))
    with app.test_client() as client:
        reply = client.get("/")
    assert reply.status_code == 200
    assert (reply.headers["X-Frame-Options"], reply.headers["X-Content-Type-Options"],
            reply.headers["Referrer-Policy"]) == ("DENY", "nosniff", "no-referrer")
    return dict(part.strip().split(" ", 1)
                for part in reply.headers["Content-Security-Policy"].split(";"))


def test_a_form_posts_only_to_hypd_and_its_spaces_router() -> None:
    local = _policy(Settings(redis_url="redis://127.0.0.1:1/0", spaces_port=4097))
    assert local["form-action"] == "'self' http://127.0.0.1:4097"
    served = _policy(Settings(redis_url="redis://127.0.0.1:1/0",
                              spaces_url="https://spaces.example.com"))
    assert served["form-action"] == "'self' https://spaces.example.com"
    assert (served["script-src"], served["frame-ancestors"], served["base-uri"]) == (
        "'self'", "'none'", "'none'")
