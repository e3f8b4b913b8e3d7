"""Opening a space as a browser does, for the tests that read an editor: the sign-in code from
the API, posted as a form to the spaces router, and the session cookie it answers with."""

from __future__ import annotations

from typing import Any

import httpx


def sign_in(stack: Any, cluster: str, name: str, token: str = "operator") -> tuple[str, str]:
    """(the space's URL, its session cookie as a `Cookie` header's value)."""
    stack.spaces_router()
    with stack.client(token) as c:
        reply = c.post(f"/api/v1/clusters/{cluster}/spaces/{name}/sign-in")
    assert reply.status_code == 200, reply.text
    door = reply.json()
    assert door["code"] not in door["url"] + door["action"]
    posted = httpx.post(door["action"], data={"code": door["code"]}, timeout=30)
    assert posted.status_code == 303, posted.text
    assert posted.headers["location"] == httpx.URL(door["url"]).path
    return door["url"], posted.headers["set-cookie"].split(";")[0]


def read(url: str, cookie: str, **headers: str) -> httpx.Response:
    """The editor's answer at `url` (JSON when it can), through the router."""
    return httpx.get(url, headers={"Accept": "application/json", "Cookie": cookie, **headers},
                     timeout=30)
