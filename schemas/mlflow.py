"""A cluster's MLflow tracking server (SageMaker managed MLflow): what to attach, what is
attached, and a job's link to it."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from schemas.common import Matching
from vocabulary import patterns

SIZES = ("Small", "Medium", "Large")
STATES = ("none", "creating", "attaching", "detaching", "ready", "settling", "failed",
          "unavailable")


class MlflowSetSchema(Schema):
    """Create hypd's tracking server for the cluster (no `tracking_server`), or attach an
    existing one by name or ARN."""

    tracking_server = fields.String(
        load_default=None, allow_none=True,
        validate=Matching(patterns.TRACKING_SERVER,
                          error="a tracking server's name or its ARN"),
        metadata={"description": "an existing tracking server (name or ARN, same region) to "
                                 "attach, never deleted; unset: hypd creates one (artifacts "
                                 "under mlflow/ in the cluster's bucket)"})
    size = fields.String(load_default="Small", validate=validate.OneOf(SIZES),
                         metadata={"description": "size of a tracking server hypd creates"})


class TrackingServerSchema(Schema):
    name = fields.String(allow_none=True)
    arn = fields.String(allow_none=True)
    status = fields.String(allow_none=True)
    url = fields.String(allow_none=True)
    size = fields.String(allow_none=True)
    mlflow_version = fields.String(allow_none=True)
    artifact_store_uri = fields.String(allow_none=True)
    is_active = fields.String(allow_none=True)


class MlflowSchema(Schema):
    cluster = fields.String(required=True)
    state = fields.String(required=True, validate=validate.OneOf(STATES))
    made_by_hypd = fields.Boolean(allow_none=True,
                                  metadata={"description": "detaching deletes it only if so"})
    tracking_server = fields.Nested(TrackingServerSchema, allow_none=True)
    role_arn = fields.String(allow_none=True,
                             metadata={"description": "the role jobs log as (Pod Identity)"})
    service_account = fields.String(allow_none=True)
    operation_id = fields.String(allow_none=True)
    message = fields.String(allow_none=True)


class MlflowUiUrlSchema(Schema):
    url = fields.String(required=True, metadata={
        "description": "presigned URL of the MLflow UI: open it within expires_in_seconds; "
                       "it is a credential, do not share or log it"})
    expires_in_seconds = fields.Integer(required=True)


class JobMlflowSchema(Schema):
    tracking_server_arn = fields.String(required=True)
    experiment_name = fields.String(allow_none=True)
    ui_url_route = fields.String(required=True)
