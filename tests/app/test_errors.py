"""app/errors.py: any marshmallow error structure leaves as a 422 `validation_failed` whose
field errors are JSON (string keys) and whose message names each field at fault."""

from __future__ import annotations

import json

import pytest
from flask import Flask
from flask.views import MethodView
from flask_smorest import Blueprint, abort
from marshmallow import Schema, ValidationError, fields, validate, validates

from app import errors
from cloud.errors import Invalid

NESTED = {
    "json": {
        "availability_zones": {2: ["not an availability zone name"],
                               "_schema": ["availability zones must be distinct"]},
        "region": ["unknown AWS region 'us-nowhere-1'"],
        "groups": {0: {"name": ["required"]}, 1: {"_schema": ["count or size, not both"]}},
        "_schema": ["only one of a and b"],
        "notes": [{"line": ["too long"]}, "and a plain message"],
    },
    "query": {"dry_run": ["not a boolean"]},
}


def test_field_errors_unwrap_locations_and_keep_the_structure_with_string_keys():
    fields_ = errors._field_errors(NESTED)
    assert fields_ == {
        "availability_zones": {"2": ["not an availability zone name"],
                               "_schema": ["availability zones must be distinct"]},
        "region": ["unknown AWS region 'us-nowhere-1'"],
        "groups": {"0": {"name": ["required"]}, "1": {"_schema": ["count or size, not both"]}},
        "_schema": ["only one of a and b"],
        "notes": [{"line": ["too long"]}, "and a plain message"],
        "dry_run": ["not a boolean"],
    }


def test_a_field_named_like_nothing_webargs_knows_is_not_unwrapped():
    assert errors._field_errors({"fsx": {"storage_capacity_gib": ["too small"]}}) == {
        "fsx": {"storage_capacity_gib": ["too small"]}}
    assert errors._field_errors(["the body is not an object"]) == {
        "_schema": ["the body is not an object"]}
    assert errors._field_errors("bad") == {"_schema": ["bad"]}


def test_summary_names_each_path_with_its_first_message():
    summary = errors._summary(errors._field_errors(NESTED))
    assert summary == (
        "availability_zones.2: not an availability zone name; "
        "availability_zones: availability zones must be distinct; "
        "region: unknown AWS region 'us-nowhere-1'; "
        "groups.0.name: required; groups.1: count or size, not both; "
        "only one of a and b; notes.line: too long; notes: and a plain message; "
        "dry_run: not a boolean")
    assert errors._summary({}) == "the request is not valid"


class ZonesSchema(Schema):
    """NetworkCreateSchema's pattern: an item validator and a field validator."""

    zones = fields.List(fields.String(validate=validate.Regexp("^us-", error="not us")))
    items = fields.List(fields.Nested(Schema.from_dict({"n": fields.Integer(required=True)})))

    @validates("zones")
    def _distinct(self, value: list[str], **_: object) -> None:
        if len(set(value)) != len(value):
            raise ValidationError("distinct, please")


@pytest.fixture
def client():
    app = Flask(__name__)
    app.config.update(API_TITLE="t", API_VERSION="v1", OPENAPI_VERSION="3.0.3")
    api = errors.EnvelopeApi(app)
    blp = Blueprint("t", __name__)

    @blp.route("/zones")
    class Zones(MethodView):
        @blp.arguments(ZonesSchema)
        @blp.response(200)
        def post(self, body):
            return body

    @blp.route("/raw", methods=["POST"])
    def raw():
        abort(422, messages=NESTED)

    @blp.route("/refused", methods=["POST"])
    def refused():
        raise Invalid("namespace 'ml' does not exist in cluster lab", field="namespace",
                      details={"cluster": "lab"})

    api.register_blueprint(blp)
    errors.register(app)
    return app.test_client()


@pytest.mark.parametrize("body", [
    {"zones": ["us-west-2a", "us-west-2a", "eu"]},  # an index error beside a schema-level one
    {"zones": "not a list"},
    {"items": [{"n": 1}, {}, {"n": "x"}]},
    ["not", "an", "object"],
])
def test_nested_validation_errors_answer_422_with_field_errors(client, body):
    reply = client.post("/zones", json=body)
    assert reply.status_code == 422, reply.get_data(as_text=True)
    error = reply.get_json()["error"]
    assert error["code"] == "validation_failed"
    assert error["details"]["fields"] and error["message"]


def test_the_envelope_of_a_mixed_structure(client):
    reply = client.post("/zones", json={"zones": ["us-west-2a", "us-west-2a", "eu"]})
    error = reply.get_json()["error"]
    assert error["details"]["fields"] == {"zones": {"2": ["not us"],
                                                    "_schema": ["distinct, please"]}}
    assert error["message"] == "zones.2: not us; zones: distinct, please"
    raw = client.post("/raw").get_json()["error"]
    assert raw["details"]["fields"] == errors._field_errors(NESTED)


def test_a_refusal_of_a_field_answers_its_sentence_keyed_by_the_field(client):
    """What the actual state refutes (cloud.errors.Invalid, field=) leaves as a 422 whose
    field errors are keyed by the field, like a schema's, with the whole sentence."""
    reply = client.post("/refused")
    assert reply.status_code == 422
    error = reply.get_json()["error"]
    assert error == {"code": "validation_failed",
                     "message": "namespace 'ml' does not exist in cluster lab",
                     "details": {"cluster": "lab", "fields": {
                         "namespace": ["namespace 'ml' does not exist in cluster lab"]}}}


def test_a_structure_deeper_than_the_recursion_limit_is_cut_not_walked():
    """The summary walked any depth recursively; a body 10,000 levels deep under a free-form
    field made an error structure that deep (app/intake.py now refuses such bodies first)."""
    deep: dict = {"leaf": ["the message"]}
    for _ in range(10_000):
        deep = {"a": deep}
    fields_ = errors._field_errors({"json": {"labels": deep}})
    summary = errors._summary(fields_)
    assert summary.startswith("labels.a.a.") and summary.endswith(errors.CUT)
    assert json.dumps(fields_)  # the envelope's details serialise
