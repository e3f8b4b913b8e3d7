"""Instance groups of a cluster: the decisions fixed when a group is made, and what a PATCH
may change afterwards."""

from __future__ import annotations

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from schemas.common import EfaMode, Matching, Name, Pattern
from schemas.dependents import ForceQuerySchema
from vocabulary import patterns
from vocabulary.capacity import CAPACITY_TYPES, EFA_MODES, ON_DEMAND, TAINT_EFFECTS, TRAINING_PLAN

MAX_COUNT = 500
IMMUTABLE = ("instance_type", "capacity_type", "training_plan_arn", "efa_mode",
             "availability_zone", "subnet_id")
"""Fixed for a group's life: a PATCH that would change one is refused (immutable_field)."""


class TaintSchema(Schema):
    key = fields.String(required=True, validate=[validate.Length(max=316),
                                                 Pattern(patterns.LABEL_KEY,
                                                         error="not a taint key")])
    value = fields.String(validate=Pattern(patterns.LABEL_VALUE, error="not a taint value"))
    effect = fields.String(required=True, validate=validate.OneOf(TAINT_EFFECTS))


def _at_most_50(labels: dict) -> None:
    if len(labels) > 50:
        raise ValidationError("at most 50 labels")


def _labels() -> fields.Dict:
    return fields.Dict(
        keys=fields.String(validate=[validate.Length(max=316),
                                     Pattern(patterns.LABEL_KEY, error="not a label key")]),
        values=fields.String(validate=Pattern(patterns.LABEL_VALUE,
                                              error="not a label value")),
        validate=_at_most_50,
        metadata={"description": "node labels, at most 50, none under kubernetes.io/, k8s.io/ "
                                 "or sagemaker.amazonaws.com/"})


def _taints() -> fields.List:
    return fields.List(fields.Nested(TaintSchema), validate=validate.Length(max=50),
                       metadata={"description": "node taints"})


def _count(**kwargs) -> fields.Integer:
    return fields.Integer(validate=validate.Range(min=1, max=MAX_COUNT),
                          metadata={"description": "number of instances"}, **kwargs)


def _threads() -> fields.Integer:
    return fields.Integer(validate=validate.OneOf((1, 2)), metadata={
        "description": "2: SMT on (types that have it); default 1"})


def _deep() -> fields.Boolean:
    return fields.Boolean(metadata={
        "description": "stress and connectivity checks (GPU, EFA) before nodes take work; AWS "
                       "refuses other cluster changes meanwhile"})


def _on_create() -> fields.String:
    return fields.String(validate=[validate.Length(min=1, max=128),
                                   Pattern(r"^[^/\s]+$", error="a file name")],
                         metadata={"description": "a script in the cluster's lifecycle "
                                                  "bucket run on each new node (default: "
                                                  "the cluster's)"})


class InstanceGroupCreateSchema(Schema):
    name = Name(required=True)
    instance_type = fields.String(
        required=True,
        validate=Pattern(patterns.ML_INSTANCE_TYPE, error="not a HyperPod instance type"),
        metadata={"description": "one offered in the group's zone"})
    instance_count = _count(required=True)
    capacity_type = fields.String(
        load_default=ON_DEMAND, validate=validate.OneOf(CAPACITY_TYPES),
        metadata={"description": "training-plan: a reservation (training_plan_arn); fixed for "
                                 "the group's life"})
    training_plan_arn = fields.String(
        validate=Matching(patterns.TRAINING_PLAN_ARN, error="not a training plan ARN"),
        metadata={"description": "with capacity_type training-plan; the group is placed in "
                                 "the plan's availability zone"})
    efa_mode = EfaMode("efa-only needs several EFA interfaces; default: efa where the type "
                       "has it; fixed for the group's life")
    availability_zone = fields.String(
        validate=Pattern(patterns.ZONE, error="not an availability zone name"),
        metadata={"description": "where hypd makes the group's /20 subnet (default: the "
                                 "cluster's zone, or the training plan's)"})
    subnet_id = fields.String(
        validate=Pattern(patterns.SUBNET_ID, error="not a subnet id"),
        metadata={"description": "an existing subnet of the cluster's VPC instead"})
    threads_per_core = _threads()
    volume_size_gb = fields.Integer(validate=validate.Range(min=1, max=16384), metadata={
        "description": "extra EBS volume per node, mounted at /opt/sagemaker"})
    labels = _labels()
    taints = _taints()
    deep_health_checks = _deep()
    on_create = _on_create()

    @validates_schema
    def _choices(self, data: dict, **_: object) -> None:
        plan = data.get("training_plan_arn")
        if data.get("capacity_type") == TRAINING_PLAN and not plan:
            raise ValidationError("required when capacity_type is training-plan",
                                  "training_plan_arn")
        if plan and data.get("capacity_type") != TRAINING_PLAN:
            raise ValidationError("only with capacity_type training-plan", "training_plan_arn")
        if data.get("availability_zone") and data.get("subnet_id"):
            raise ValidationError("give a zone (hypd makes the subnet) or an existing subnet, "
                                  "not both", "subnet_id")


_FIXED = {"description": "fixed for the group's life: accepted only with the value the group "
                         "has (anything else is refused with immutable_field)"}


class InstanceGroupPatchSchema(Schema):
    """Explicit diff: only the fields present are acted on. The fixed ones may be present
    only with the value the group already has."""

    instance_count = _count()
    threads_per_core = _threads()
    labels = _labels()
    taints = _taints()
    deep_health_checks = _deep()
    on_create = _on_create()
    instance_type = fields.String(validate=Pattern(patterns.ML_INSTANCE_TYPE), metadata=_FIXED)
    capacity_type = fields.String(validate=validate.OneOf(CAPACITY_TYPES), metadata=_FIXED)
    training_plan_arn = fields.String(validate=Matching(patterns.TRAINING_PLAN_ARN),
                                      metadata=_FIXED)
    efa_mode = fields.String(validate=validate.OneOf(EFA_MODES), allow_none=True,
                             metadata=_FIXED)
    availability_zone = fields.String(validate=Pattern(patterns.ZONE), metadata=_FIXED)
    subnet_id = fields.String(validate=Pattern(patterns.SUBNET_ID), metadata=_FIXED)


class InstanceGroupDeleteQuerySchema(ForceQuerySchema):
    force = fields.Boolean(load_default=False, metadata={
        "description": "delete even though pods that cannot move elsewhere run on it (they "
                       "are lost). A person's decision, made after reading them"})


class InstanceGroupSchema(Schema):
    name = fields.String(required=True)
    instance_type = fields.String()
    status = fields.String(allow_none=True)
    current_count = fields.Integer(allow_none=True)
    target_count = fields.Integer(allow_none=True)
    min_count = fields.Integer(allow_none=True)
    capacity_type = fields.String()
    training_plan_arn = fields.String(allow_none=True)
    training_plan_status = fields.String(allow_none=True)
    efa_mode = fields.String(allow_none=True)
    availability_zone = fields.String(allow_none=True)
    subnet_ids = fields.List(fields.String())
    security_group_ids = fields.List(fields.String())
    deep_health_checks = fields.List(fields.String())
    threads_per_core = fields.Integer(allow_none=True)
    volume_size_gb = fields.Integer(allow_none=True)
    labels = fields.Dict(keys=fields.String(), values=fields.String())
    taints = fields.List(fields.Dict())
    on_create = fields.String(allow_none=True)
    nodes_by_status = fields.Dict(keys=fields.String(), values=fields.Integer())
    operation_id = fields.String(allow_none=True, metadata={
        "description": "the operation creating, changing or deleting it, while one runs"})


class InstanceGroupListSchema(Schema):
    cluster = fields.String(required=True)
    items = fields.List(fields.Nested(InstanceGroupSchema), required=True)
