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


# -- the document's conventions (app/openapi.py), read from the app itself -------------------

CHANGES = ("post", "put", "patch", "delete")


def _document() -> dict:
    from tests.mcp_server.mcp_fake_api import real_openapi

    return real_openapi()


def _operations(document: dict):
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method != "parameters":
                yield method, path, operation


def _resolve(document: dict, node: dict) -> dict:
    while "$ref" in node:
        target = document
        for part in node["$ref"][2:].split("/"):
            target = target[part]
        node = target
    return node


def test_every_operation_has_a_snake_case_name_and_a_description() -> None:
    document = _document()
    names = []
    for method, path, op in _operations(document):
        assert re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", op.get("operationId", "")), \
            (method, path)
        names.append(op["operationId"])
        assert op.get("description"), (method, path)
        assert op["description"].startswith(op["summary"]), (method, path)
    assert len(names) == len(set(names)) >= 70
    networks = document["paths"]["/api/v1/networks"]
    assert (networks["get"]["operationId"], networks["post"]["operationId"]) == (
        "list_networks", "create_network")


def test_every_change_documents_the_idempotency_headers_as_the_api_honours_them() -> None:
    from app.mutations import MAX_KEY_LEN
    from tasks.engine.store import IDEMPOTENCY_TTL_S

    document = _document()
    key = document["components"]["parameters"]["IdempotencyKey"]
    ttl = document["components"]["parameters"]["IdempotencyTTL"]
    assert (key["in"], key["name"], key["schema"]["maxLength"]) == (
        "header", "Idempotency-Key", MAX_KEY_LEN)
    assert (ttl["in"], ttl["name"], ttl["schema"]["maximum"]) == (
        "header", "Idempotency-TTL", IDEMPOTENCY_TTL_S)
    refs = {"#/components/parameters/IdempotencyKey", "#/components/parameters/IdempotencyTTL"}
    for method, path, op in _operations(document):
        used = {p.get("$ref") for p in op.get("parameters", [])}
        assert (refs <= used) == (method in CHANGES), (method, path)


def test_every_error_reply_is_the_envelope_and_keeps_the_route_s_words() -> None:
    document = _document()
    for method, path, op in _operations(document):
        role = op["x-hypd-role"]
        assert ("401" in op["responses"]) == (role != "public"), (method, path)
        assert ("403" in op["responses"]) == (role == "operator"), (method, path)
        for status, response in op["responses"].items():
            if status[0] not in "45" and status != "default":
                continue
            response = _resolve(document, response)
            schema = _resolve(document, response["content"]["application/json"]["schema"])
            body = _resolve(document, schema["properties"]["error"])
            assert schema["required"] == ["error"], (method, path, status)
            assert {"code", "message"} <= set(body["required"]), (method, path, status)
            assert response["description"], (method, path, status)
    conflict = document["paths"]["/api/v1/networks"]["post"]["responses"]["409"]
    assert conflict["description"] == "a network of that name exists or is being changed"


def test_a_route_without_a_name_or_with_another_s_refuses_the_start(monkeypatch) -> None:
    """As a route without a role does (app/permissions.py): the name is the route's to
    declare, and a generated client's function or a tool would otherwise have none."""
    import pytest
    from flask_smorest import Blueprint

    import app as app_module
    from app import create_app, openapi
    from app.auth import TokenTable
    from app.permissions import access
    from cloud.settings import Settings

    real = app_module.register_blueprints
    for name, error in ((None, "no operationId"), ("Stray-Name", "no operationId"),
                        ("create_network", "both named 'create_network'")):
        stray = Blueprint(f"stray{abs(hash(name))}", __name__)

        def view():
            return {}

        if name is not None:
            view = stray.doc(operationId=name)(view)
        stray.route("/api/v1/stray", methods=["POST"])(access("operator")(view))

        def with_stray(api, blueprint=stray):
            real(api)
            api.register_blueprint(blueprint)

        monkeypatch.setattr(app_module, "register_blueprints", with_stray)
        with pytest.raises(openapi.UnnamedOperation, match=error):
            create_app(Settings(redis_url="redis://127.0.0.1:1/0"), tokens=TokenTable([]))


BOUNDS_OF_TYPE = {"string": {"minLength", "maxLength", "pattern"},
                  "array": {"minItems", "maxItems"},
                  "object": {"minProperties", "maxProperties"}}


def test_each_bound_stands_on_the_type_it_bounds() -> None:
    """JSON Schema ignores a bound on another type (`maxLength` on an object bounds nothing):
    the environment of a job once said `maxLength: 64` while 64 variables was the rule."""
    misplaced = []

    def walk(node, where):
        if isinstance(node, dict):
            kind = node.get("type")
            if isinstance(kind, str) and kind in BOUNDS_OF_TYPE:
                for other, bounds in BOUNDS_OF_TYPE.items():
                    if other != kind and bounds & node.keys():
                        misplaced.append((where, kind, sorted(bounds & node.keys())))
            for key, value in node.items():
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{where}[{i}]")

    document = _document()
    walk(document, "")
    assert misplaced == []
    env = document["components"]["schemas"]["JobCreate"]["properties"]["env"]
    assert env["maxProperties"] == 64


def test_a_job_with_more_variables_than_its_rule_is_refused_on_the_field() -> None:
    from marshmallow import ValidationError

    from schemas.jobs import JobCreateSchema

    too_many = {f"VAR_{i}": "x" for i in range(65)}
    try:
        JobCreateSchema().load({"env": too_many}, partial=True)
    except ValidationError as refused:
        assert refused.messages["env"] == ["At most 64 entries."]
    else:
        raise AssertionError("65 variables were taken")
    assert JobCreateSchema().load({"env": dict(list(too_many.items())[:64])},
                                  partial=True)["env"]
