"""The reply of `?dry_run=true` on a route that changes AWS or Kubernetes through an
operation: the operation's own steps rehearsed (tasks/engine/rehearsal.py)."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from vocabulary.rehearsal import StepPlan

REHEARSAL_DESCRIPTION = ("the dry run: the operation's steps rehearsed, the changes each would "
                         "make in order, what exists already and would be adopted; nothing "
                         "recorded or sent")


class PlannedCallSchema(Schema):
    service = fields.String(required=True, metadata={
        "description": "an AWS service (ec2, eks, sagemaker, ...), kubernetes, or hypd (the "
                       "panel's own records)"})
    operation = fields.String(required=True, metadata={
        "description": "the AWS API action, or the Kubernetes HTTP method"})
    params = fields.Dict(required=True, metadata={
        "description": "its parameters in brief (no secrets, long text cut); `<planned …>` "
                       "names a value an earlier call would return"})


class StepErrorSchema(Schema):
    code = fields.String(required=True)
    message = fields.String(required=True)


class StepPlanSchema(Schema):
    step = fields.String(required=True)
    title = fields.String(required=True)
    stage = fields.String(allow_none=True)
    plan = fields.String(required=True, validate=validate.OneOf(list(StepPlan)))
    calls = fields.List(fields.Nested(PlannedCallSchema), required=True,
                        metadata={"description": "the changes it would make, in order"})
    reads = fields.Integer(required=True, metadata={
        "description": "AWS reads it made to find what exists"})
    then_waits = fields.Boolean(required=True, metadata={
        "description": "after its changes it waits until they are ready"})
    detail = fields.String(allow_none=True)
    error = fields.Nested(StepErrorSchema, allow_none=True, metadata={
        "description": "why it would wait (plan waits) or fail"})
    found = fields.Dict(metadata={"description": "plan exists: what it would adopt"})


class WouldFailSchema(StepErrorSchema):
    step = fields.String(required=True)


class RehearsalSchema(Schema):
    """200 for `?dry_run=true`: what the operation would do, changing nothing."""

    dry_run = fields.Boolean(required=True)
    kind = fields.String(required=True, metadata={"description": "the operation kind"})
    target = fields.String(required=True)
    steps = fields.List(fields.Nested(StepPlanSchema), required=True)
    changes = fields.Integer(required=True, metadata={"description": "calls that change"})
    would_fail = fields.Nested(WouldFailSchema, allow_none=True, metadata={
        "description": "the step the operation would stop at, and why"})
    message = fields.String(required=True)
