"""A cluster's nodes: the listing's filters and pages, one node, and the node actions.

Node ids, instance statuses, group names and how many ids a request may name are
botocore's model's (the SageMaker API's own rules), read from it rather than re-typed."""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

import botocore.session
from marshmallow import Schema, ValidationError, fields, validate, validates

from schemas.common import Matching
from vocabulary import patterns

HEALTH_VALUES = ("Schedulable", "Unschedulable", "UnschedulablePendingReboot",
                 "UnschedulablePendingReplacement")
"""Values of HyperPod's `sagemaker.amazonaws.com/node-health-status` label."""
UNKNOWN_HEALTH = "Unknown"
BATCH_OPERATIONS = ("BatchRebootClusterNodes", "BatchReplaceClusterNodes",
                    "BatchDeleteClusterNodes")
DEFAULT_PAGE = 100
MAX_PAGE = 500


@functools.cache
def _model() -> Any:
    return botocore.session.get_session().get_service_model("sagemaker")


def _node_ids_limit(operation: str) -> int:
    return int(_model().operation_model(operation).input_shape.members["NodeIds"]
               .metadata["max"])


INSTANCE_STATUSES = tuple(_model().shape_for("ClusterInstanceStatus").enum)
MAX_NODE_IDS = max(_node_ids_limit(op) for op in BATCH_OPERATIONS)
"""The most ids any node batch call takes (BatchDeleteClusterNodes'); hypd sends them in
batches of the smallest call's limit."""
BATCH_SIZE = min(_node_ids_limit(op) for op in BATCH_OPERATIONS)
"""Ids per batch call (cloud.nodes.batch_size() reads the same): published in the OpenAPI
document (`x-hypd-batch-size` on `node_ids`) so a client can show how a request will be
split before sending it."""


def NodeId(**kwargs: Any) -> fields.String:
    return fields.String(validate=Matching(patterns.NODE_ID, error="not a HyperPod node id"),
                         metadata={"description": "HyperPod node (EC2 instance) id, i-…"},
                         **kwargs)


class NodeListQuerySchema(Schema):
    instance_group = fields.String(
        validate=Matching(patterns.INSTANCE_GROUP_NAME),
        metadata={"description": "only nodes of this instance group"})
    health = fields.String(
        validate=validate.OneOf((*HEALTH_VALUES, UNKNOWN_HEALTH)),
        metadata={"description": "only nodes whose HyperPod health label has this value "
                                 "(Unknown: no label, or no Kubernetes Node yet)"})
    status = fields.String(validate=validate.OneOf(INSTANCE_STATUSES), metadata={
        "description": "only nodes whose HyperPod instance status is this"})
    limit = fields.Integer(load_default=DEFAULT_PAGE,
                           validate=validate.Range(min=1, max=MAX_PAGE),
                           metadata={"description": "at most this many nodes in the page"})
    cursor = fields.String(
        validate=Matching(patterns.NODE_ID, error="not a cursor from next_cursor"),
        metadata={"description": "the previous page's next_cursor (pages follow node ids: "
                                 "none repeated or skipped)"})


class NodeSchema(Schema):
    id = fields.String(required=True, metadata={"description": "the instance id"})
    instance_group = fields.String(allow_none=True)
    instance_type = fields.String(allow_none=True)
    status = fields.String(metadata={"description": "HyperPod instance status"})
    message = fields.String(allow_none=True, metadata={"description": "HyperPod's reason for "
                                                                      "the status"})
    launched_at = fields.String(allow_none=True)
    software_updated_at = fields.String(allow_none=True, metadata={
        "description": "when HyperPod last updated its software (UpdateClusterSoftware)"})
    hostname = fields.String(allow_none=True)
    node_name = fields.String(allow_none=True, metadata={"description": "the Kubernetes Node"})
    ready = fields.Boolean(allow_none=True, metadata={"description": "the Node's Ready "
                                                                    "condition"})
    health = fields.String(allow_none=True, metadata={
        "description": "HyperPod's health label on the Node "
                       "(sagemaker.amazonaws.com/node-health-status)"})
    unschedulable = fields.Boolean(allow_none=True, metadata={"description": "cordoned"})


class NodeListSchema(Schema):
    cluster = fields.String(required=True)
    items = fields.List(fields.Nested(NodeSchema), required=True)
    total = fields.Integer(required=True, metadata={"description": "nodes matching the "
                                                                   "filters, on every page"})
    next_cursor = fields.String(allow_none=True, required=True, metadata={
        "description": "pass as cursor for the next page; null on the last"})
    as_of = fields.String(required=True, metadata={
        "description": "when AWS and Kubernetes were read (listings are kept a few seconds)"})
    kubernetes_readable = fields.Boolean(required=True, metadata={
        "description": "false: the cluster's Kubernetes API could not be read, so the Node "
                       "fields are null"})


class NodeEventSchema(Schema):
    id = fields.String(allow_none=True)
    at = fields.String(allow_none=True)
    level = fields.String(allow_none=True)
    description = fields.String(allow_none=True)


class NodePodSchema(Schema):
    namespace = fields.String()
    name = fields.String()
    phase = fields.String(allow_none=True)
    owner = fields.String(allow_none=True, metadata={"description": "kind/name of the "
                                                                   "controller"})


class NodeDetailSchema(NodeSchema):
    private_ip = fields.String(allow_none=True)
    availability_zone = fields.String(allow_none=True)
    capacity_type = fields.String(allow_none=True)
    threads_per_core = fields.Integer(allow_none=True)
    last_software_update_at = fields.String(allow_none=True)
    labels = fields.Dict(keys=fields.String(), values=fields.String(), metadata={
        "description": "the instance group's Kubernetes labels on it"})
    taints = fields.List(fields.Dict())
    conditions = fields.List(fields.Dict(), metadata={"description": "the Node's conditions"})
    pods = fields.List(fields.Nested(NodePodSchema), metadata={
        "description": "pods on the node: what a reboot, replace or delete disrupts"})
    events = fields.List(fields.Nested(NodeEventSchema), metadata={
        "description": "the instance's recent HyperPod events, newest first"})


class NodeActionSchema(Schema):
    node_ids = fields.List(NodeId(), required=True,
                           validate=validate.Length(min=1, max=MAX_NODE_IDS),
                           metadata={"description": "distinct nodes, sent to AWS "
                                                    f"{BATCH_SIZE} at a time",
                                     "x-hypd-batch-size": BATCH_SIZE})

    @validates("node_ids")
    def _once(self, value: list[str], **_: object) -> None:
        twice = sorted(n for n, seen in Counter(value).items() if seen > 1)
        if twice:
            raise ValidationError(f"listed more than once: {', '.join(twice)}")
