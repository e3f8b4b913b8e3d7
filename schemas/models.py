"""Models in a cluster's bucket (`models/<model>/`) and their download: a Hugging Face model
(id and revision, a hub token by Secret reference only) or an S3 prefix to copy."""

from __future__ import annotations

import re

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from schemas.common import Pattern
from schemas.endpoints import Model
from vocabulary import patterns

SOURCES = ("huggingface", "s3")
REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
REVISION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$")
SECRET_KEY_RE = re.compile(r"^[-._a-zA-Z0-9]{1,253}$")
STATES = ("downloading", "available", "failed")


class SecretRefSchema(Schema):
    name = fields.String(required=True, validate=Pattern(patterns.DNS_LABEL,
                                                         error="not a Secret name"),
                         metadata={"description": "a Secret in the default namespace"})
    key = fields.String(required=True, validate=Pattern(SECRET_KEY_RE,
                                                        error="not a Secret key"),
                        metadata={"description": "its key holding the token"})


class ModelDownloadSchema(Schema):
    name = Model(required=True)
    source = fields.String(required=True, validate=validate.OneOf(SOURCES),
                           metadata={"description": "huggingface (repo and revision) or s3 "
                                                    "(s3_uri)"})
    repo = fields.String(validate=Pattern(REPO_RE, error="not a hub id (org/model)"),
                         metadata={"description": "the Hugging Face id, org/model"})
    revision = fields.String(load_default="main",
                             validate=Pattern(REVISION_RE, error="not a revision"),
                             metadata={"description": "a branch, tag or commit"})
    s3_uri = fields.String(validate=Pattern(patterns.S3_OBJECT_URI, error="not s3://bucket/prefix"),
                           metadata={"description": "the S3 prefix to copy"})
    hub_token_secret = fields.Nested(SecretRefSchema,
                                     metadata={"description": "the Secret holding a hub "
                                                              "token (never the token)"})

    @validates_schema
    def _source(self, data: dict, **_: object) -> None:
        if data["source"] == "huggingface":
            if not data.get("repo"):
                raise ValidationError("required for a Hugging Face model", "repo")
            if data.get("s3_uri"):
                raise ValidationError("only for source s3", "s3_uri")
        else:
            if not data.get("s3_uri"):
                raise ValidationError("required for source s3", "s3_uri")
            if data.get("repo") or data.get("hub_token_secret"):
                raise ValidationError("only for source huggingface",
                                      "repo" if data.get("repo") else "hub_token_secret")


class ModelSchema(Schema):
    name = fields.String(required=True)
    state = fields.String(required=True, validate=validate.OneOf(STATES))
    files = fields.Integer(required=True)
    bytes = fields.Integer(required=True)
    location = fields.String(required=True, metadata={"description": "s3://bucket/models/m/"})
    operation_id = fields.String(allow_none=True)
    message = fields.String(allow_none=True)


class ModelListSchema(Schema):
    cluster = fields.String(required=True)
    bucket = fields.String(required=True)
    items = fields.List(fields.Nested(ModelSchema), required=True)
