"""Managed features of a cluster: their actual state, and the explicit-diff change."""

from __future__ import annotations

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from vocabulary import patterns

STATES = ("on", "off", "partial", "settling", "failed")
MAX_NODES = 1000
MAX_GROUPS = 100
FEATURES = ("training_operator", "inference_operator", "tiered_checkpointing", "autoscaling",
            "observability", "task_governance", "spaces")
"""The managed features a PATCH may name: the `toggle: true` features of
cloud/data/dependencies.yaml (a test keeps the two equal)."""


def _enabled() -> fields.Boolean:
    return fields.Boolean(metadata={"description": "on or off; absent: as it is"})


class ToggleSchema(Schema):
    enabled = _enabled()


class TieredCheckpointingPatchSchema(Schema):
    enabled = _enabled()
    memory_percent = fields.Integer(
        validate=validate.Range(min=1, max=100),
        metadata={"description": "percent of each node's memory for the checkpoint tier "
                                 "(absent: HyperPod's default)"})


class GroupBoundsSchema(Schema):
    min = fields.Integer(validate=validate.Range(min=0, max=MAX_NODES), metadata={
        "description": "nodes kept at all times (0: scale from zero; absent: as now, or 0)"})
    max = fields.Integer(validate=validate.Range(min=1, max=MAX_NODES), metadata={
        "description": "most nodes pending pods may bring up (absent: as now)"})

    @validates_schema
    def _ordered(self, data: dict, **_: object) -> None:
        if "min" in data and "max" in data and data["min"] > data["max"]:
            raise ValidationError("min must not exceed max", "min")


def _group_name(value: str) -> None:
    if not patterns.NAME.fullmatch(value):
        raise ValidationError(f"invalid instance group name: {patterns.NAME_RULE}")


def _one_to_a_hundred(groups: dict) -> None:
    if not 1 <= len(groups) <= MAX_GROUPS:
        raise ValidationError(f"name 1 to {MAX_GROUPS} instance groups")


class AutoscalingPatchSchema(Schema):
    enabled = _enabled()
    groups = fields.Dict(
        keys=fields.String(validate=_group_name),
        values=fields.Nested(GroupBoundsSchema, allow_none=True),
        validate=_one_to_a_hundred,
        metadata={"description": "instance group name -> {min, max} (on-demand groups "
                                 "without deep health checks or a training plan), or null to "
                                 "stop scaling it; groups not named stay as they are"})


class FeaturesPatchSchema(Schema):
    """Only the features present are acted on; each is compared with the cluster's actual
    state. One feature per request changes: a request whose fields differ from the actual
    state for more than one feature is refused."""

    training_operator = fields.Nested(ToggleSchema, metadata={
        "description": "HyperPod training operator (HyperPodPyTorchJob)"})
    inference_operator = fields.Nested(ToggleSchema, metadata={
        "description": "HyperPod inference operator"})
    tiered_checkpointing = fields.Nested(TieredCheckpointingPatchSchema, metadata={
        "description": "managed tiered checkpointing and its identity chain"})
    autoscaling = fields.Nested(AutoscalingPatchSchema, metadata={
        "description": "HyperPod-managed Karpenter scaling instance groups (not other EC2 "
                       "capacity)"})
    observability = fields.Nested(ToggleSchema, metadata={
        "description": "HyperPod observability"})
    task_governance = fields.Nested(ToggleSchema, metadata={
        "description": "HyperPod task governance"})
    spaces = fields.Nested(ToggleSchema, metadata={
        "description": "SageMaker Spaces (JupyterLab, Code Editor): its add-on, the EBS CSI "
                       "driver, their roles"})

    @validates_schema
    def _something(self, data: dict, **_: object) -> None:
        if not data or not any(data.values()):
            raise ValidationError("name at least one feature and what to change in it")


class PartSchema(Schema):
    kind = fields.String(required=True, metadata={
        "description": "addon, manifests, iam_role, tls_bucket, service_account, "
                       "pod_identity_association,"
                       " irsa_binding, hyperpod_setting or cluster_role"})
    name = fields.String(required=True)
    present = fields.Boolean(required=True)
    ok = fields.Boolean(required=True, metadata={"description": "present and as hypd wants it"})
    status = fields.String(allow_none=True)
    detail = fields.String(allow_none=True)
    shared = fields.Boolean(metadata={"description": "the cluster's own: never removed by a "
                                                     "feature"})
    hypds = fields.Boolean(allow_none=True, metadata={
        "description": "an add-on hypd installed (one that is not, hypd does not remove)"})


class RequirementSchema(Schema):
    name = fields.String(required=True)
    kind = fields.String()
    feature = fields.String()
    present = fields.Boolean()
    status = fields.String(allow_none=True)
    base = fields.Boolean(metadata={"description": "in the base set every cluster has"})
    needed_by = fields.List(fields.String())


class IdentitySchema(Schema):
    mechanism = fields.String(metadata={"description": "pod-identity, irsa or hyperpod (the "
                                                       "cluster's ClusterRole)"})
    role = fields.String()
    service_account = fields.String(allow_none=True)
    shared = fields.Boolean()


class AutoscaledGroupSchema(Schema):
    name = fields.String(required=True)
    instance_type = fields.String(allow_none=True)
    autoscaled = fields.Boolean()
    min = fields.Integer(allow_none=True)
    max = fields.Integer(allow_none=True)
    current = fields.Integer(allow_none=True)
    target = fields.Integer(allow_none=True)
    capacity_type = fields.String(allow_none=True)
    eligible = fields.Boolean(metadata={"description": "managed autoscaling may scale it"})
    reason = fields.String(allow_none=True, metadata={"description": "why it may not"})


class FeatureSchema(Schema):
    name = fields.String(required=True)
    description = fields.String()
    enabled = fields.Boolean(required=True)
    state = fields.String(required=True, validate=validate.OneOf(STATES))
    parts = fields.List(fields.Nested(PartSchema))
    requires = fields.List(fields.Nested(RequirementSchema))
    identity = fields.Nested(IdentitySchema, allow_none=True)
    note = fields.String()
    memory_percent = fields.Integer(allow_none=True)
    groups = fields.List(fields.Nested(AutoscaledGroupSchema))
    operation_id = fields.String(allow_none=True, metadata={
        "description": "the operation changing this feature now, if any"})


class OidcProviderSchema(Schema):
    arn = fields.String(allow_none=True)
    present = fields.Boolean()
    shared = fields.Boolean()


class FeaturesSchema(Schema):
    cluster = fields.String(required=True)
    features = fields.Dict(keys=fields.String(), values=fields.Nested(FeatureSchema))
    dependencies = fields.Dict(keys=fields.String(), values=fields.Nested(RequirementSchema))
    oidc_provider = fields.Nested(OidcProviderSchema)
    kubernetes_readable = fields.Boolean()
    hyperpod_cluster = fields.Boolean(metadata={"description": "the HyperPod cluster exists"})
