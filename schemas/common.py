"""Schemas every resource shares: names, the error envelope, operations, mutation replies."""

from __future__ import annotations

import functools
import re
from typing import Any

import botocore.session
from marshmallow import Schema, ValidationError, fields, validate

from vocabulary import patterns
from vocabulary.aws import AWS_MODES
from vocabulary.capacity import EFA_MIN_INTERFACES, EFA_MODES
from vocabulary.operations import OpStatus, StepPhase
from vocabulary.roles import Role


class Pattern(validate.Regexp):
    """A regular expression the whole value must match, as the OpenAPI document (and the
    dashboard, which reads it) means it. marshmallow's Regexp uses `re.match`, where `$`
    also matches before a trailing newline: "lab\\n" passed the name rule, "1-0\\n" the
    stream-id rule (then a 500 from Redis). Write digits `[0-9]`: Python's `\\d` takes any
    script's (Arabic-Indic digits passed), ECMAScript's only ASCII."""

    def __call__(self, value: str) -> str:
        if not isinstance(value, str) or self.regex.fullmatch(value) is None:
            raise ValidationError(self._format_error(value))
        return value


class MostEntries(validate.Validator):
    """At most `most` keys in a mapping. marshmallow's Length would check the same, but the
    OpenAPI document would then say `maxLength` on an object, which JSON Schema ignores
    there: pair this with `metadata={"maxProperties": most}`."""

    def __init__(self, most: int) -> None:
        self.most = most

    def __call__(self, value: dict[str, Any]) -> dict[str, Any]:
        if len(value) > self.most:
            raise ValidationError(f"At most {self.most} entries.")
        return value


def Matching(pattern: re.Pattern[str], error: str | None = None) -> list[validate.Validator]:
    """A value `pattern` takes whole, within the length bounds AWS states beside it (botocore's
    min/max, vocabulary.patterns.bounds): the document's pattern, minLength and maxLength."""
    found: list[validate.Validator] = [Pattern(pattern, error=error)]
    bounds = patterns.bounds(pattern)
    if bounds:
        found.insert(0, validate.Length(min=bounds[0], max=bounds[1]))
    return found


def Name(what: str = "", **kwargs) -> fields.String:
    """The one rule for every user-chosen name (DESIGN.md: Names); `what` says what the
    name picks, ahead of the rule, in the field's description."""
    return fields.String(
        validate=Pattern(patterns.NAME, error=f"invalid name: {patterns.NAME_RULE}"),
        metadata={"description": f"{what}A name that {patterns.NAME_RULE}."},
        **kwargs,
    )


@functools.cache
def known_regions() -> frozenset[str]:
    """Every region botocore knows in the commercial, China and GovCloud partitions."""
    session = botocore.session.get_session()
    regions: set[str] = set()
    for partition in ("aws", "aws-cn", "aws-us-gov"):
        regions.update(session.get_available_regions("ec2", partition))
    return frozenset(regions)


def _known_region(value: str) -> None:
    if value not in known_regions():
        raise ValidationError(f"unknown AWS region {value!r} (e.g. us-west-2, eu-central-1)")


def Region(**kwargs) -> fields.String:
    return fields.String(
        validate=[Pattern(patterns.REGION, error="not an AWS region name (e.g. us-west-2)"),
                  _known_region],
        metadata={"description": "AWS region, e.g. us-west-2; default: the panel's region.",
                  "pattern": patterns.REGION.pattern},
        **kwargs,
    )


def EfaMode(description: str, **kwargs: Any) -> fields.String:
    """A group's EFA mode, with the rule an instance type must meet for each mode in the
    OpenAPI document (`x-hypd-min-efa-interfaces`), so the dashboard applies the API's rule
    instead of a copy of it (vocabulary.capacity)."""
    return fields.String(validate=validate.OneOf(EFA_MODES), metadata={
        "description": description, "x-hypd-min-efa-interfaces": dict(EFA_MIN_INTERFACES)},
        **kwargs)


class WaitingPodSchema(Schema):
    """A pod the scheduler cannot place yet, and why (a workload's read)."""

    pod = fields.String(required=True)
    reason = fields.String(allow_none=True, metadata={
        "description": "the PodScheduled condition's reason: Unschedulable when no node fits"})
    message = fields.String(allow_none=True, metadata={
        "description": "the scheduler's FailedScheduling message, e.g. \"0/4 nodes are "
                       "available: 4 Insufficient nvidia.com/gpu\""})
    since = fields.String(allow_none=True)


class ErrorBodySchema(Schema):
    code = fields.String(required=True, metadata={"description": "stable error code"})
    message = fields.String(required=True)
    details = fields.Dict(load_default=dict)


class ErrorSchema(Schema):
    error = fields.Nested(ErrorBodySchema, required=True)


class StepSchema(Schema):
    name = fields.String(required=True)
    title = fields.String()
    stage = fields.String(allow_none=True)
    phase = fields.String(validate=validate.OneOf(list(StepPhase)), metadata={
        "x-hypd-done": [p.value for p in StepPhase if p.is_done],
        "x-hypd-in-flight": [p.value for p in StepPhase if p in StepPhase.in_flight()]})
    attempts = fields.Integer()
    started_at = fields.String(allow_none=True)
    finished_at = fields.String(allow_none=True)
    detail = fields.String(allow_none=True)
    resources = fields.Dict()


class OperationErrorSchema(Schema):
    code = fields.String()
    message = fields.String()
    step = fields.String(allow_none=True)


class OperationSchema(Schema):
    id = fields.String(required=True)
    kind = fields.String(required=True)
    target = fields.String(required=True)
    params = fields.Dict()
    inputs = fields.Dict(metadata={"description": "resources from earlier operations"})
    status = fields.String(validate=validate.OneOf(list(OpStatus)), metadata={
        "x-hypd-finished": [s.value for s in OpStatus if s.is_finished],
        "x-hypd-active": [s.value for s in OpStatus if s.is_active]})
    steps = fields.List(fields.Nested(StepSchema))
    error = fields.Nested(OperationErrorSchema, allow_none=True)
    created_at = fields.String()
    updated_at = fields.String()
    idempotency_key = fields.String(allow_none=True)
    actor = fields.String()
    cancel_requested = fields.Boolean()
    resource_url = fields.String(allow_none=True)
    last_event_id = fields.String(allow_none=True)


class OperationListSchema(Schema):
    items = fields.List(fields.Nested(OperationSchema))


class RestCallSchema(Schema):
    method = fields.String(required=True)
    route = fields.String(required=True, metadata={
        "description": "the route's path template, as this document writes it"})
    args = fields.Dict(required=True, metadata={
        "description": "the template's placeholders: route filled with them is path"})
    path = fields.String(required=True)
    body = fields.Dict(allow_none=True)


class CallSchema(Schema):
    """A call a read suggests (app/readmodels/calls.py): the REST call that takes it, for a
    person, a script and an agent alike (an agent's MCP server names the tool that makes
    it). hypd never runs it."""

    title = fields.String(required=True)
    why = fields.String(required=True)
    rest = fields.Nested(RestCallSchema, required=True, metadata={"description": "the call"})
    mutating = fields.Boolean(required=True, metadata={
        "description": "true: it changes what exists — confirm with the user first"})


class NextActionSchema(CallSchema):
    """A way on from where an operation stopped."""

    action = fields.String(required=True, validate=validate.OneOf(("read", "resume", "delete")),
                           metadata={"description": "read: look first; resume: retry the "
                                                    "operation that stopped; delete: remove "
                                                    "what was made"})


class OperationOnlySchema(Schema):
    operation = fields.Nested(OperationSchema, required=True)
    next_actions = fields.List(fields.Nested(NextActionSchema), metadata={
        "description": "a cancelled cluster create or stage re-run: read the cluster (what "
                       "it left in AWS and its hourly cost), then resume or delete what was "
                       "made"})


class MutationReplySchema(Schema):
    """202: the operation that will carry the change out, and how to follow it."""

    operation = fields.Nested(OperationSchema, required=True)
    resource_url = fields.String(allow_none=True, metadata={
        "description": "the resource the change is about"})
    status_route = fields.String(required=True, metadata={
        "description": "read it (`?wait=N` long-polls) until the operation's status is "
                       "succeeded, failed or cancelled; also the Location header"})
    poll_after_seconds = fields.Integer(required=True, metadata={
        "description": "how long to wait before reading status_route again without "
                       "`?wait`; also the Retry-After header"})


class NoChangeSchema(Schema):
    """200 for a change that is already true (explicit diff: actual state matches the
    request, nothing was sent to AWS)."""

    changed = fields.Boolean(required=True)
    resource_url = fields.String(allow_none=True)
    message = fields.String()


class OperationQuerySchema(Schema):
    status = fields.String(
        validate=validate.OneOf(list(OpStatus)),
        metadata={"description": "only operations in this status"},
    )
    kind = fields.String(validate=validate.Length(max=64),
                         metadata={"description": "only operations of this kind, e.g. "
                                                  "network.create"})
    target = fields.String(validate=validate.Length(max=200),
                           metadata={"description": "only operations on this target path or "
                                                    "below it, e.g. network/lab"})
    limit = fields.Integer(load_default=50, validate=validate.Range(min=1, max=500),
                           metadata={"description": "at most this many, newest first"})


STREAM_ID_RE = r"^[0-9]{1,19}-[0-9]{1,19}$"
"""A Redis stream id as a client may send one back (an event's, an audit entry's): each
part below 2**64, which Redis refuses beyond."""
STREAM_ID_MAX = 2**64 - 1
"""The largest part of a stream id Redis takes."""


def StreamId(description: str, error: str) -> fields.String:
    """A cursor into a Redis stream, checked before Redis sees it (Redis refuses a malformed
    id with an error, which was a 500)."""
    return fields.String(validate=Pattern(STREAM_ID_RE, error=error),
                         metadata={"description": description})


class OperationWaitSchema(Schema):
    wait = fields.Float(
        load_default=0,
        validate=validate.Range(min=0, max=60),
        metadata={"description": "long-poll up to this many seconds for the next change"},
    )
    after = StreamId("event id to wait past (default: the newest now)", "not an event id")


class DryRunQuerySchema(Schema):
    dry_run = fields.Boolean(
        load_default=False,
        metadata={"description": "answer what would be done, changing nothing (open to "
                                 "viewers)"})


class WhoamiSchema(Schema):
    name = fields.String(required=True)
    role = fields.String(required=True, validate=validate.OneOf(list(Role)), metadata={
        "description": "the token's role; each covers the ones before it"})
    aws = fields.String(required=True, validate=validate.OneOf(AWS_MODES), metadata={
        "description": "where this hypd acts: `sandbox` (AWS and the clusters simulated on "
                       "its machine; no AWS account, nothing billed) or `aws` (a real "
                       "account: what it makes is billed)"})
    region = fields.String(required=True, metadata={"description": "its AWS region"})
    team = fields.String(required=True, allow_none=True, metadata={
        "description": "the token's team (task governance), null: none"})


class HealthSchema(Schema):
    status = fields.String(required=True)
