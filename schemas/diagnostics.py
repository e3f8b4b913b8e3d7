"""A cluster's read-only diagnostics: what was found, the evidence of each finding, and the
commands suggested next — never executed by hypd, ordered investigate → reboot → replace
(→ retry, for a failed create)."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from schemas.common import CallSchema, Name, Pattern
from vocabulary import patterns

KINDS = ("creation", "node-health", "nccl")
"""creation: why a cluster's create failed; node-health: which nodes are unhealthy and why;
nccl: NCCL, EFA, Xid and out-of-memory errors in the pods' logs and events."""
STEPS = ("investigate", "reboot", "replace", "retry", "delete")
"""The order suggestions come in: read first, then the node actions that exist from the
softest to the hardest; `retry` re-runs a failed stage (or resumes a stopped create) once its
cause is gone; `delete` removes what a stopped create made, the other way on."""
SEVERITIES = ("error", "warning")
REMEDIES = ("none", "reboot", "replace", "retry")
SOURCES = ("operation", "hyperpod_cluster", "hyperpod_event", "hyperpod_node", "node_label",
           "node_condition", "pod_event", "pod_status", "pod_log")
DEFAULT_TAIL_LINES = 500
MAX_TAIL_LINES = 5000
MAX_PODS = 50
"""Pods whose logs one nccl diagnosis reads (the most recently started first)."""


class DiagnosticPathSchema(Schema):
    cluster = fields.String(required=True, metadata={"description": "name of the cluster"})
    kind = fields.String(required=True, validate=validate.OneOf(KINDS),
                         metadata={"description": "creation, node-health or nccl"})


class DiagnosticQuerySchema(Schema):
    namespace = fields.String(
        validate=Pattern(patterns.DNS_LABEL, error="not a Kubernetes namespace name"),
        metadata={"description": "nccl: read only this namespace's pods (default: every "
                                 "namespace but the system ones)"})
    job = Name("nccl: only this training job's pods (404 not_found if none). ")
    tail_lines = fields.Integer(
        load_default=DEFAULT_TAIL_LINES,
        validate=validate.Range(min=1, max=MAX_TAIL_LINES),
        metadata={"description": "nccl: how many of each container's last log lines to read"})


class EvidenceSchema(Schema):
    source = fields.String(required=True, validate=validate.OneOf(SOURCES),
                           metadata={"description": "where it was read"})
    ref = fields.String(required=True, metadata={
        "description": "what it was read from: an operation id and step, an event id, a "
                       "node id, namespace/pod[/container], with ' (previous run)' for the "
                       "run of a container before its last restart"})
    text = fields.String(required=True, metadata={"description": "what it says, verbatim"})
    at = fields.String(allow_none=True, metadata={"description": "when, where known"})


class FindingSchema(Schema):
    code = fields.String(required=True, metadata={
        "description": "stable: stage_failed, cancelled_create, unfinished_create, "
                       "stopped_delete, cluster_failed, node_failed, node_unhealthy, "
                       "node_not_ready, or a failure pattern's id (nccl-timeout, efa-error, "
                       "xid-fatal, xid-error, nccl-error, oom)"})
    severity = fields.String(required=True, validate=validate.OneOf(SEVERITIES))
    title = fields.String(required=True)
    message = fields.String(required=True, metadata={"description": "what it means"})
    node_id = fields.String(allow_none=True, metadata={"description": "the node it is about"})
    stage = fields.String(allow_none=True, metadata={"description": "the stage it is about"})
    remedy = fields.String(required=True, validate=validate.OneOf(REMEDIES), metadata={
        "description": "what usually clears it once investigated: reboot or replace the "
                       "node, retry the stage, or none (nothing hypd can do: the workload's "
                       "own size, or a cause the message names)"})
    evidence = fields.List(fields.Nested(EvidenceSchema), required=True)


class SuggestionSchema(CallSchema):
    step = fields.String(required=True, validate=validate.OneOf(STEPS))
    why = fields.String(required=True, metadata={"description": "the findings it answers"})
    kubectl = fields.List(fields.String(), allow_none=True, metadata={
        "description": "an equivalent kubectl command (argv), for investigation"})


class SourceSchema(Schema):
    source = fields.String(required=True)
    read = fields.Boolean(required=True)
    note = fields.String(allow_none=True, metadata={"description": "why it could not be read"})


class DiagnosisSchema(Schema):
    cluster = fields.String(required=True)
    kind = fields.String(required=True, validate=validate.OneOf(KINDS))
    as_of = fields.String(required=True)
    healthy = fields.Boolean(required=True, metadata={"description": "nothing was found"})
    summary = fields.String(required=True)
    findings = fields.List(fields.Nested(FindingSchema), required=True)
    suggestions = fields.List(fields.Nested(SuggestionSchema), required=True, metadata={
        "description": "in order: investigate, then reboot, then replace (or retry); none "
                       "is ever run by hypd"})
    sources = fields.List(fields.Nested(SourceSchema), required=True, metadata={
        "description": "what was read, and what could not be"})
