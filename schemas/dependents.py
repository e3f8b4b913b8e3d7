"""What every destructive route shares: its `dry_run` and `force` query parameters, the
dependents it names, its dry run's reply and its `409 in_use` refusal (cloud/dependents.py
finds the dependents; app/mutations.py `destroy` is the one path through them)."""

from __future__ import annotations

from marshmallow import Schema, fields

from schemas.common import DryRunQuerySchema
from schemas.rehearsal import StepPlanSchema, WouldFailSchema

DRY_RUN_DESCRIPTION = ("answer what the request would remove and what would break (its "
                       "dependents), changing nothing (open to viewers)")
FORCE_DESCRIPTION = ("go ahead although live dependents were named (409 in_use): they "
                     "break. A person's decision, made after reading them; never a default")
IN_USE_DESCRIPTION = ("in_use: live dependents would break; `details.dependents` names "
                      "each (kind, name, namespace, why) and `details.force_allowed` says "
                      "whether force=true may go ahead. Nothing was recorded or changed.")


class DestroyQuerySchema(DryRunQuerySchema):
    """A destructive route without force: what depends on it must go first."""

    dry_run = fields.Boolean(load_default=False, metadata={"description": DRY_RUN_DESCRIPTION})


class ForceQuerySchema(DestroyQuerySchema):
    """A destructive route a person may force past its dependents."""

    force = fields.Boolean(load_default=False, metadata={"description": FORCE_DESCRIPTION})


class DependentSchema(Schema):
    kind = fields.String(required=True, metadata={
        "description": "cluster, hyperpod_cluster, network_interface, training_job, "
                       "endpoint, model_download, model, or a Kubernetes kind (pod, ...)"})
    name = fields.String(required=True)
    namespace = fields.String(allow_none=True)
    cluster = fields.String(allow_none=True)
    why = fields.String(required=True, metadata={"description": "how it depends on the "
                                                                "target"})
    forceable = fields.Boolean(required=True, metadata={
        "description": "force=true may go ahead despite it (it breaks)"})


class InUseDetailsSchema(Schema):
    target = fields.String(required=True, metadata={"description": "what was asked, in words"})
    dependents = fields.List(fields.Nested(DependentSchema), required=True,
                             metadata={"description": "the first 50 of them"})
    total = fields.Integer(required=True)
    force_allowed = fields.Boolean(required=True)


class InUseBodySchema(Schema):
    code = fields.String(required=True, metadata={"description": "in_use"})
    message = fields.String(required=True)
    details = fields.Nested(InUseDetailsSchema, required=True)


class InUseErrorSchema(Schema):
    error = fields.Nested(InUseBodySchema, required=True)


class DestroyPlanSchema(Schema):
    """200 for `?dry_run=true` on a destructive route: what it would do, changing nothing."""

    dry_run = fields.Boolean(required=True)
    target = fields.String(required=True, metadata={"description": "what was asked, in words"})
    removes = fields.List(fields.String(), required=True,
                          metadata={"description": "what the request would remove"})
    dependents = fields.List(fields.Nested(DependentSchema), required=True,
                             metadata={"description": "what would break (the first 50)"})
    total = fields.Integer(required=True)
    refused = fields.Boolean(required=True, metadata={
        "description": "the same request without dry_run would be refused (409 in_use)"})
    force_allowed = fields.Boolean(required=True)
    message = fields.String(required=True)
    kind = fields.String(metadata={"description": "the operation it would run"})
    steps = fields.List(fields.Nested(StepPlanSchema), metadata={
        "description": "that operation's steps rehearsed: the calls each would make, in "
                       "order (as if forced, where it would be refused)"})
    changes = fields.Integer(metadata={"description": "calls that change"})
    would_fail = fields.Nested(WouldFailSchema, allow_none=True, metadata={
        "description": "the step the operation would stop at, and why"})


def or_plan(schema: type[Schema], description: str,
            plan: type[Schema] = DestroyPlanSchema) -> dict:
    """The documented 200 of a route whose own 200 is `schema`: with `?dry_run=true` it
    answers its plan instead (DestroyPlan, or the rehearsal of a change; for `blp.doc`)."""
    named = plan.__name__.removesuffix("Schema")
    return {"responses": {"200": {
        "description": f"{description}; with ?dry_run=true, the plan ({named})",
        "content": {"application/json": {"schema": {"oneOf": [schema, plan]}}}}}}
