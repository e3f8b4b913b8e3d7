"""The OpenAPI document describes every route the app serves."""

from __future__ import annotations

import re


def test_every_route_is_in_the_openapi_document(stack):
    with stack.client(token=None) as c:
        spec = c.get("/api/v1/openapi.json").json()
    documented = {
        (path, method.upper())
        for path, item in spec["paths"].items()
        for method in item
        if method in ("get", "post", "put", "patch", "delete")
    }
    from app import create_app  # the same factory gunicorn serves
    from cloud.settings import Settings

    app = create_app(Settings.from_env(stack.env))
    served = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static" or rule.rule.startswith("/ws/") or rule.rule == "/":
            continue
        if rule.rule.startswith("/api/v1/openapi"):
            continue
        path = re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule.rule)
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            served.add((path, method))
    assert served, "no routes found"
    assert served <= documented, served - documented
    # every operation names the bearer scheme (or none, for public routes) and a summary
    for path, item in spec["paths"].items():
        for method, op in item.items():
            if method in ("get", "post", "put", "patch", "delete"):
                assert op.get("summary"), (path, method)
    assert spec["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
