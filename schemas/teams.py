"""Task governance: the cluster's scheduler config (priority classes with weights, fair share)
and its teams (a compute quota each: instances per type, borrowing, lending, preemption, a
fair-share weight), as SageMaker takes them and the task-governance add-on runs them as Kueue.

The bounds are AWS's (botocore's model: a team name as a quota's TeamName, at most 15
instance types, weights 0-100, at most 10 priority classes; the documented 1-500 % borrow
limit), plus one of hypd's: a team name short enough that its ClusterQueue's name
(`hyperpod-ns-<team>-clusterqueue`) is a Kubernetes name.
"""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from schemas.common import Pattern
from vocabulary import patterns
from vocabulary import teams as words

TEAM_RULE = words.TEAM_NAME_RULE


def team_name(**kwargs: Any) -> fields.String:
    """A team's name as SageMaker takes it (a team's create, a job's team)."""
    return fields.String(validate=[
        validate.Length(min=1, max=words.TEAM_NAME_MAX),
        Pattern(patterns.TEAM_NAME, error=f"invalid team name: {TEAM_RULE}")], **kwargs)


def priority_name(**kwargs: Any) -> fields.String:
    """A priority class's name as SageMaker takes it (the scheduler config's, a job's)."""
    return fields.String(validate=[
        validate.Length(min=1, max=63),
        Pattern(patterns.PRIORITY_CLASS_NAME, error="invalid priority class name: lowercase "
                                                    "letters, digits and hyphens")], **kwargs)


class QuotaEntrySchema(Schema):
    instance_type = fields.String(required=True, validate=Pattern(
        patterns.ML_INSTANCE_TYPE, error="not a HyperPod instance type"),
        metadata={"description": "one of the cluster's instance types"})
    count = fields.Integer(required=True, validate=validate.Range(min=0, max=10_000_000),
                           metadata={"description": "instances of that type guaranteed to "
                                                    "the team"})


def _quota(**kwargs) -> fields.List:
    return fields.List(fields.Nested(QuotaEntrySchema), validate=validate.Length(min=1, max=15),
                       metadata={"description": "per instance type, the instances the team is "
                                                "guaranteed (each type once)"}, **kwargs)


def _borrow(**kwargs) -> fields.Integer:
    return fields.Integer(validate=validate.Range(min=0, max=words.BORROW_LIMIT_MAX), metadata={
        "description": "how much idle capacity the team may borrow, in percent of its quota "
                       "(0: none)"}, **kwargs)


def _lend(**kwargs) -> fields.Boolean:
    return fields.Boolean(metadata={"description": "lend the team's idle capacity to other "
                                                   "teams (a team that does not lend may not "
                                                   "borrow)"}, **kwargs)


def _preempt(**kwargs) -> fields.Boolean:
    return fields.Boolean(metadata={"description": "the team's work may preempt its own "
                                                   "lower-priority work (PreemptTeamTasks)"},
                          **kwargs)


def _weight(**kwargs) -> fields.Integer:
    return fields.Integer(validate=validate.Range(min=0, max=100), metadata={
        "description": "the team's fair-share weight (0-100) when idle capacity is shared"},
        **kwargs)


def _unique_types(quota: list[dict] | None) -> None:
    types = [q["instance_type"] for q in quota or ()]
    if len(set(types)) != len(types):
        raise ValidationError("each instance type at most once", "quota")


def _lends_to_borrow(lend: bool | None, borrow: int | None) -> None:
    if lend is False and borrow:
        raise ValidationError("a team that does not lend its idle capacity may not borrow "
                              "(send borrow_limit_percent 0, or lend_idle true)",
                              "borrow_limit_percent")


class TeamCreateSchema(Schema):
    name = team_name(required=True, metadata={"description": f"The team's name: {TEAM_RULE}."})
    quota = _quota(required=True)
    borrow_limit_percent = _borrow(load_default=50)
    lend_idle = _lend(load_default=True)
    may_preempt = _preempt(load_default=True)
    fair_share_weight = _weight(load_default=0)

    @validates_schema
    def _coherent(self, data: dict, **_: object) -> None:
        _unique_types(data.get("quota"))
        _lends_to_borrow(data.get("lend_idle"), data.get("borrow_limit_percent"))


class TeamUpdateSchema(Schema):
    quota = _quota()
    borrow_limit_percent = _borrow()
    lend_idle = _lend()
    may_preempt = _preempt()
    fair_share_weight = _weight()

    @validates_schema
    def _something(self, data: dict, **_: object) -> None:
        if not data:
            raise ValidationError("name at least one of quota, borrow_limit_percent, "
                                  "lend_idle, may_preempt, fair_share_weight", "_schema")
        _unique_types(data.get("quota"))


class PriorityClassSchema(Schema):
    name = priority_name(required=True)
    weight = fields.Integer(required=True, validate=validate.Range(min=0, max=100),
                            metadata={"description": "higher runs first (0-100)"})


class SchedulerPutSchema(Schema):
    priority_classes = fields.List(fields.Nested(PriorityClassSchema), load_default=list,
                                   validate=validate.Length(max=10), metadata={
                                       "description": "the priority classes work may name, "
                                                      "each with its weight"})
    fair_share = fields.Boolean(load_default=True, metadata={
        "description": "share idle capacity among teams by their fair-share weights"})

    @validates_schema
    def _unique(self, data: dict, **_: object) -> None:
        names = [p["name"] for p in data.get("priority_classes") or ()]
        if len(set(names)) != len(names):
            raise ValidationError("each priority class name at most once", "priority_classes")


class SchedulerSchema(Schema):
    cluster = fields.String(required=True)
    name = fields.String(required=True)
    id = fields.String(required=True)
    arn = fields.String(required=True)
    status = fields.String(required=True, validate=validate.OneOf(words.STATUSES),
                           metadata={"description": "SageMaker's state of the config"})
    version = fields.Integer(required=True)
    priority_classes = fields.List(fields.Nested(PriorityClassSchema), required=True)
    fair_share = fields.Boolean(required=True)
    managed = fields.Boolean(required=True, metadata={"description": "made by hypd"})
    created_at = fields.String(allow_none=True)
    modified_at = fields.String(allow_none=True)
    operation_id = fields.String(allow_none=True, metadata={
        "description": "the config's newest operation (running, or the last one)"})


class QueueUsageSchema(Schema):
    flavor = fields.String(allow_none=True)
    resource = fields.String(allow_none=True)
    total = fields.String(required=True)
    borrowed = fields.String(required=True)


class TeamQueueSchema(Schema):
    present = fields.Boolean(required=True, metadata={
        "description": "the add-on has made the team's ClusterQueue"})
    admitted_workloads = fields.Integer(allow_none=True)
    pending_workloads = fields.Integer(allow_none=True)
    reserving_workloads = fields.Integer(allow_none=True)
    usage = fields.List(fields.Nested(QueueUsageSchema), required=True)
    message = fields.String(allow_none=True)


class QuotaSchema(Schema):
    id = fields.String(allow_none=True)
    arn = fields.String(allow_none=True)
    status = fields.String(allow_none=True, validate=validate.OneOf(words.STATUSES))
    version = fields.Integer(allow_none=True)
    activation = fields.String(allow_none=True)


class TeamSchema(Schema):
    name = fields.String(required=True)
    cluster = fields.String(required=True)
    state = fields.String(required=True, metadata={
        "description": "SageMaker's state of the quota (Creating, Created, Updating …), or "
                       "creating/failed while no quota exists yet"})
    message = fields.String(allow_none=True)
    quota = fields.List(fields.Nested(QuotaEntrySchema), required=True)
    borrow_limit_percent = fields.Integer(allow_none=True)
    lend_idle = fields.Boolean(allow_none=True)
    may_preempt = fields.Boolean(allow_none=True)
    fair_share_weight = fields.Integer(allow_none=True)
    compute_quota = fields.Nested(QuotaSchema, required=True)
    managed = fields.Boolean(required=True, metadata={"description": "made by hypd"})
    namespace = fields.String(required=True)
    local_queue = fields.String(required=True)
    cluster_queue = fields.String(required=True)
    members = fields.List(fields.String(), required=True, metadata={
        "description": "the tokens in the team (HYPD_TOKENS_FILE entries naming it)"})
    queue = fields.Nested(TeamQueueSchema, allow_none=True, metadata={
        "description": "what Kueue says of the team's ClusterQueue (null while the team is "
                        "being created or its cluster's API cannot be read)"})
    operation_id = fields.String(allow_none=True)


class TeamListSchema(Schema):
    cluster = fields.String(required=True)
    scheduler = fields.Nested(SchedulerSchema, allow_none=True, metadata={
        "description": "the cluster's scheduler config (null: none yet)"})
    items = fields.List(fields.Nested(TeamSchema), required=True)
