"""The audit log: who changed (or was refused) what, as `GET /api/v1/audit` answers it."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from schemas.common import StreamId

OUTCOMES = ("accepted", "done", "refused", "failed", "warning")
"""accepted: an operation was made (or replayed); done: a change that needed none (an import,
the active cluster, a budget, "no change"); refused: 4xx; failed: 5xx; warning: what hypd
itself saw (method HYPD: a cluster's budget crossed)."""


class AuditEntrySchema(Schema):
    id = fields.String(required=True, metadata={"description": "entry id (newest first)"})
    at = fields.String(required=True, metadata={"description": "ISO 8601 UTC"})
    token = fields.String(allow_none=True, required=True,
                          metadata={"description": "the token's name (never the token); null "
                                                   "when none or an unknown one was sent"})
    role = fields.String(allow_none=True, required=True)
    method = fields.String(required=True, metadata={
        "description": "HTTP method, WS, or HYPD for what hypd itself records"})
    route = fields.String(required=True,
                          metadata={"description": "the route, e.g. DELETE "
                                                   "/api/v1/networks/<name>"})
    path = fields.String(required=True)
    target = fields.String(allow_none=True, required=True,
                           metadata={"description": "target path, e.g. network/lab"})
    operation_id = fields.String(allow_none=True, required=True)
    outcome = fields.String(required=True, validate=validate.OneOf(OUTCOMES))
    status = fields.Integer(required=True, metadata={"description": "HTTP status (WebSocket: "
                                                                    "its close code or 202)"})
    code = fields.String(allow_none=True, required=True,
                         metadata={"description": "the error code of a refusal or failure"})
    message = fields.String(metadata={
        "description": "hypd's own entries (method HYPD): what it saw"})
    forced = fields.Boolean(metadata={
        "description": "the request overrode a guard with force=true: it broke what depended "
                       "on its target, or deleted another token's space"})


class AuditQuerySchema(Schema):
    target = fields.String(validate=validate.Length(max=200),
                           metadata={"description": "only entries on this target path or below "
                                                    "it, e.g. cluster/lab"})
    token = fields.String(validate=validate.Length(max=128),
                          metadata={"description": "only entries of this token name"})
    outcome = fields.String(validate=validate.OneOf(OUTCOMES),
                            metadata={"description": "only entries with this outcome"})
    limit = fields.Integer(load_default=100, validate=validate.Range(min=1, max=500),
                           metadata={"description": "at most this many, newest first"})
    before = StreamId("only entries older than this id (the previous page's next_before)",
                      "not an entry id")


class AuditListSchema(Schema):
    items = fields.List(fields.Nested(AuditEntrySchema), required=True)
    next_before = fields.String(allow_none=True, required=True,
                                metadata={"description": "pass as before for older entries; "
                                                         "null when there are none"})
