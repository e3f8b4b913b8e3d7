"""Clusters: the decisions a user makes; hypd fills in everything else."""

from __future__ import annotations

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from schemas.budgets import BudgetSchema
from schemas.common import (
    EfaMode,
    Matching,
    Name,
    NextActionSchema,
    NoChangeSchema,
    Pattern,
    Region,
)
from schemas.dependents import ForceQuerySchema
from schemas.networks import Cidr
from schemas.storage import FsxSchema
from vocabulary import kubernetes_versions, patterns, stage_times
from vocabulary.capacity import CAPACITY_TYPES, COST_KINDS, ON_DEMAND, PRICE_BASES, TRAINING_PLAN
from vocabulary.operations import StageStatus

STAGES = ("network", "eks", "activate", "dependencies", "hyperpod", "storage")
KUBERNETES_VERSIONS = kubernetes_versions.offered()
"""The versions HyperPod documents that EKS still runs, as of this process's start (the
OpenAPI enum and the dashboard's choices); `KubernetesVersion` also refuses one that ended
since."""


class KubernetesVersion(validate.OneOf):
    """One of the offered versions; a version past EKS's end of extended support is refused
    with that date (EKS would refuse to create or upgrade to it, after hypd had made the
    network)."""

    def __init__(self) -> None:
        super().__init__(KUBERNETES_VERSIONS)

    def __call__(self, value: str) -> str:
        reason = kubernetes_versions.ended_message(value)
        if reason:
            raise ValidationError(reason)
        return super().__call__(value)


class ExistingVpcSchema(Schema):
    vpc_id = fields.String(required=True, validate=Pattern(patterns.VPC_ID, error="not a VPC id"))
    subnet_ids = fields.List(
        fields.String(validate=Pattern(patterns.SUBNET_ID, error="not a subnet id")),
        required=True,
        validate=validate.Length(min=2, max=16, error="give subnets in at least two zones"),
        metadata={"description": "private subnets in at least two availability zones"},
    )
    security_group_id = fields.String(
        validate=Pattern(patterns.SECURITY_GROUP_ID, error="not a security group id"),
        metadata={"description": "the security group for the instances; default: the EKS "
                                 "cluster's"})


class ClusterCreateSchema(Schema):
    name = Name(required=True)
    region = Region()
    availability_zone = fields.String(
        required=True,
        validate=Pattern(patterns.ZONE, error="not an availability zone name (e.g. us-west-2a)"),
        metadata={"description": "where the accelerator instances run"},
    )
    instance_type = fields.String(
        required=True,
        validate=Pattern(patterns.ML_INSTANCE_TYPE, error="not a HyperPod instance type (e.g. "
                                           "ml.p5.48xlarge)"),
        metadata={"description": "one offered in that zone, e.g. ml.p5.48xlarge"},
    )
    instance_count = fields.Integer(
        required=True, validate=validate.Range(min=1, max=500),
        metadata={"description": "instances in the first instance group"})
    capacity_type = fields.String(
        load_default=ON_DEMAND, validate=validate.OneOf(CAPACITY_TYPES),
        metadata={"description": "training-plan: a reservation (training_plan_arn)"})
    training_plan_arn = fields.String(
        validate=Matching(patterns.TRAINING_PLAN_ARN, error="not a training plan ARN"),
        metadata={"description": "with capacity_type training-plan"})
    efa_mode = EfaMode("efa-only needs several EFA interfaces; default: efa where the type "
                       "has it")
    deep_health_checks = fields.Boolean(
        load_default=False,
        metadata={"description": "stress and connectivity checks (GPU, EFA) before nodes "
                                 "take work"},
    )
    existing_vpc = fields.Nested(ExistingVpcSchema, metadata={
        "description": "use an existing VPC instead of creating a network"})
    cidr = Cidr()
    kubernetes_version = fields.String(
        load_default=kubernetes_versions.default(), validate=KubernetesVersion(),
        metadata={"description": "default: the newest; the plan says if it is in EKS "
                                 "extended support (billed more per hour)",
                  # each offered version's EKS support as of this process's start (the
                  # dashboard's choices say it; the plan prices extended support)
                  "x-hypd-support": {v: kubernetes_versions.support_of(v)
                                     for v in KUBERNETES_VERSIONS}})
    fsx = fields.Nested(FsxSchema, metadata={
        "description": "also make an FSx for Lustre file system, mounted as claim hypd-fsx"})

    @validates_schema
    def _version_still_supported(self, data: dict, **_: object) -> None:
        """The default too: a version chosen at start may have ended since."""
        reason = kubernetes_versions.ended_message(data.get("kubernetes_version") or "")
        if reason:
            raise ValidationError({"kubernetes_version": [reason]})

    @validates_schema
    def _capacity(self, data: dict, **_: object) -> None:
        plan = data.get("training_plan_arn")
        if data.get("capacity_type") == TRAINING_PLAN and not plan:
            raise ValidationError("required when capacity_type is training-plan",
                                  "training_plan_arn")
        if plan and data.get("capacity_type") != TRAINING_PLAN:
            raise ValidationError("only with capacity_type training-plan", "training_plan_arn")
        if data.get("existing_vpc") and data.get("cidr"):
            raise ValidationError("cidr applies only to a new network", "cidr")


CLUSTER_STATES = ("creating", "rerunning", "created", "incomplete", "create_failed",
                  "create_cancelled", "stage_failed", "stage_cancelled", "deleting",
                  "delete_failed", "delete_cancelled", "imported", "unknown")


class StageSchema(Schema):
    name = fields.String(required=True, metadata={
        "description": "one of the create's stages, in order",
        # [low, high] minutes each stage typically takes on AWS (vocabulary/stage_times.py)
        "x-hypd-typical-minutes": {stage: list(stage_times.TYPICAL_MINUTES[stage])
                                   for stage in STAGES}})
    status = fields.String(required=True, validate=validate.OneOf(list(StageStatus)), metadata={
        "description": "from the newest operation that ran the stage: succeeded; failed (see "
                       "error); cancelled (a cancel stopped it within the stage); skipped (a "
                       "cancel came before it: nothing of it ran); running; pending (not "
                       "reached: a running operation will, a retry would); not_run (no "
                       "operation has it)"})
    operation_id = fields.String(allow_none=True)
    steps = fields.List(fields.Dict())
    error = fields.Dict(allow_none=True, metadata={
        "description": "a failed stage: {step, code, message}"})


class ClusterStateSchema(Schema):
    status = fields.String(required=True, validate=validate.OneOf(CLUSTER_STATES), metadata={
        "description": "where the cluster's life stands, from its operations: created only "
                       "when every stage succeeded; create_failed / create_cancelled name the "
                       "stage it stopped at; incomplete: a stage never finished"})
    summary = fields.String(required=True, metadata={"description": "the same, in words"})
    operation_id = fields.String(allow_none=True, metadata={
        "description": "the operation that brought it there"})
    stage = fields.String(allow_none=True, metadata={
        "description": "the stage it stopped at (or is at)"})
    error = fields.Dict(allow_none=True, metadata={
        "description": "a failed operation's error: {code, message, step}"})


class PriceSourceSchema(Schema):
    """Where a figure came from: one product and rate of the AWS Price List, and when."""

    name = fields.String(required=True, validate=validate.OneOf(("aws-price-list",)),
                         metadata={"description": "aws-price-list: AWS's Price List API "
                                                  "(GetProducts)"})
    service_code = fields.String(required=True,
                                 metadata={"description": "e.g. AmazonSageMaker, AmazonEKS"})
    sku = fields.String(required=True)
    offer_term_code = fields.String(allow_none=True,
                                    metadata={"description": "the on-demand offer term"})
    rate_code = fields.String(allow_none=True)
    usage_type = fields.String(allow_none=True,
                               metadata={"description": "e.g. USW2-Cluster:ml.g5.8xlarge"})
    description = fields.String(allow_none=True,
                                metadata={"description": "the rate as AWS words it"})
    effective_date = fields.String(allow_none=True,
                                   metadata={"description": "since when AWS charges this rate"})
    publication_date = fields.String(allow_none=True,
                                     metadata={"description": "when AWS published the offer"})
    fetched_at = fields.String(required=True,
                               metadata={"description": "when hypd read it (ISO 8601 UTC); "
                                                        "kept for a day"})


class CostItemSchema(Schema):
    name = fields.String(required=True)
    kind = fields.String(required=True, validate=validate.OneOf(COST_KINDS))
    quantity = fields.Integer(required=True)
    capacity_type = fields.String(validate=validate.OneOf(CAPACITY_TYPES),
                                  metadata={"description": "instances only"})
    basis = fields.String(
        required=True, validate=validate.OneOf(PRICE_BASES),
        metadata={"description": "list-price: priced from the source; spot: no fixed price "
                                 "(spot prices move); training-plan: paid up front, no hourly "
                                 "charge; unknown: the price could not be had (see note)"})
    unit_usd = fields.Float(required=True, allow_none=True,
                            metadata={"description": "per unit and hour; null: no figure"})
    hourly_usd = fields.Float(required=True, allow_none=True)
    on_demand_unit_usd = fields.Float(
        metadata={"description": "spot only: the on-demand list price, for comparison"})
    note = fields.String(required=True, allow_none=True)
    source = fields.Nested(PriceSourceSchema, required=True, allow_none=True,
                           metadata={"description": "where unit_usd (for spot: "
                                                    "on_demand_unit_usd) came from"})


class CostSchema(Schema):
    hourly_usd = fields.Float(required=True,
                              metadata={"description": "sum of the items with a figure"})
    complete = fields.Boolean(required=True,
                              metadata={"description": "every item has a figure"})
    currency = fields.String(required=True)
    source = fields.String(required=True, validate=validate.OneOf(("aws-price-list",)))
    fetched_at = fields.String(required=True, allow_none=True,
                               metadata={"description": "when the oldest figure was read "
                                                        "from the source; null when none was"})
    items = fields.List(fields.Nested(CostItemSchema), required=True)
    note = fields.String(required=True)


class AccruedItemSchema(Schema):
    name = fields.String(required=True)
    kind = fields.String(required=True, validate=validate.OneOf(COST_KINDS))
    basis = fields.String(required=True, validate=validate.OneOf(PRICE_BASES))
    since = fields.String(required=True, allow_none=True, metadata={
        "description": "the earliest moment counted (a node's launch, the cluster's creation)"})
    hours = fields.Float(required=True, metadata={
        "description": "unit-hours counted: each node's, each gateway's, summed"})
    usd = fields.Float(required=True, allow_none=True, metadata={
        "description": "hours times the unit's hourly list price; null: no figure (see note)"})
    note = fields.String(required=True, allow_none=True)


class AccruedSchema(Schema):
    usd = fields.Float(required=True, metadata={"description": "sum of the items with a figure"})
    complete = fields.Boolean(required=True, metadata={"description": "every item has a figure"})
    currency = fields.String(required=True)
    items = fields.List(fields.Nested(AccruedItemSchema), required=True)
    note = fields.String(required=True)


class DaySpendSchema(Schema):
    date = fields.String(required=True, metadata={"description": "a UTC day, YYYY-MM-DD"})
    usd = fields.Float(required=True, metadata={
        "description": "what the cluster cost that day, at least (as month counts it)"})


class TeamCostItemSchema(Schema):
    instance_type = fields.String(required=True)
    capacity_type = fields.String(required=True, allow_none=True,
                                  validate=validate.OneOf(CAPACITY_TYPES), metadata={
                                      "description": "of the cluster's groups of the type; "
                                                     "null: they mix capacity types"})
    share = fields.Float(required=True, metadata={
        "description": "nodes of the type the team's admitted work holds now, by dominant "
                       "share"})
    basis = fields.String(required=True, validate=validate.OneOf(PRICE_BASES))
    unit_usd = fields.Float(required=True, allow_none=True, metadata={
        "description": "one node's hourly price; null: no figure (see note)"})
    hourly_usd = fields.Float(required=True, allow_none=True, metadata={
        "description": "share x unit_usd"})
    on_demand_unit_usd = fields.Float(allow_none=True, metadata={
        "description": "spot only: the on-demand list price, for comparison"})
    note = fields.String(required=True, allow_none=True)
    source = fields.Nested(PriceSourceSchema, required=True, allow_none=True)


class TeamHourlySchema(Schema):
    usd = fields.Float(required=True, metadata={"description": "sum of the items with a figure"})
    complete = fields.Boolean(required=True)
    items = fields.List(fields.Nested(TeamCostItemSchema), required=True, metadata={
        "description": "per instance type the team's work is admitted on now"})
    note = fields.String(required=True)


class TeamMonthSchema(Schema):
    usd = fields.Float(required=True, metadata={
        "description": "this month so far: node-hours x price (types without a price left "
                       "out)"})
    node_hours = fields.Float(required=True, metadata={
        "description": "node-hours by dominant share since the first of the month"})
    complete = fields.Boolean(required=True, metadata={
        "description": "every node-hour had a price"})
    note = fields.String(required=True)


class TeamCostSchema(Schema):
    """What one team's admitted work costs: node-hours by dominant share x price."""

    team = fields.String(required=True)
    quota = fields.Boolean(required=True, metadata={
        "description": "the team has a compute quota now (false: deleted, its spend stays)"})
    hourly = fields.Nested(TeamHourlySchema, required=True, metadata={
        "description": "what the work Kueue admits for it now costs per hour"})
    month = fields.Nested(TeamMonthSchema, required=True)
    days = fields.List(fields.Nested(DaySpendSchema), required=True, metadata={
        "description": "month split by UTC day, from the first to today"})
    budget = fields.Nested(BudgetSchema, required=True, metadata={
        "description": "the team's monthly budget against month (GET …/teams/<t>/budget)"})


class ClusterCostSchema(Schema):
    """A running cluster's cost: the hourly rate now and a lower bound of what it cost so far."""

    cluster = fields.String(required=True)
    region = fields.String(required=True)
    as_of = fields.String(required=True)
    hourly = fields.Nested(CostSchema, required=True, metadata={
        "description": "what AWS bills by the hour for it now, priced from the Price List"})
    accrued = fields.Nested(AccruedSchema, required=True, metadata={
        "description": "what it has cost since it was made, from its own history"})
    month_start = fields.String(required=True, metadata={
        "description": "00:00 UTC on the first of this month"})
    month = fields.Nested(AccruedSchema, required=True, metadata={
        "description": "the same count since month_start: what a monthly budget holds"})
    days = fields.List(fields.Nested(DaySpendSchema), required=True, metadata={
        "description": "month split by UTC day, from the first to today"})
    budget = fields.Nested(BudgetSchema, required=True, metadata={
        "description": "the monthly budget against month (GET …/budget)"})
    teams = fields.List(fields.Nested(TeamCostSchema), required=True, metadata={
        "description": "per team: what its admitted work costs (node-hours by dominant share "
                       "x price); empty without teams"})


class LeftItemSchema(Schema):
    type = fields.String(required=True, metadata={
        "description": "vpc, subnet, internet_gateway, nat_gateway, elastic_ip, route_table, "
                       "security_group, vpc_endpoint, iam_role, oidc_provider, s3_bucket, "
                       "eks_cluster, hyperpod_cluster, fsx_file_system"})
    id = fields.String(required=True)
    stage = fields.String(allow_none=True)
    step = fields.String(required=True, metadata={"description": "the step that made it"})
    operation_id = fields.String(required=True)
    exists = fields.Boolean(required=True, allow_none=True, metadata={
        "description": "true: in AWS now; null: could not be read now (see note)"})
    state = fields.String(allow_none=True, metadata={"description": "as AWS reports it"})
    note = fields.String(allow_none=True)
    billed_hourly = fields.Boolean(required=True, metadata={
        "description": "billed by the hour while it exists (its figure is in cost)"})
    nodes = fields.List(fields.Dict(), metadata={
        "description": "a HyperPod cluster: its running instances by group and type"})


class LeftInAwsSchema(Schema):
    as_of = fields.String(required=True)
    items = fields.List(fields.Nested(LeftItemSchema), required=True, metadata={
        "description": "what the cluster's operations made that still exists (or could not "
                       "be read), read from AWS now"})
    gone = fields.List(fields.Dict(), required=True, metadata={
        "description": "what they made that no longer exists: {type, id}"})
    cost = fields.Nested(CostSchema, required=True, metadata={
        "description": "the hourly cost of what is left, priced as the plan is"})


class ClusterSchema(Schema):
    name = fields.String(required=True)
    region = fields.String()
    imported = fields.Boolean()
    eks = fields.Dict(allow_none=True)
    hyperpod = fields.Dict(allow_none=True)
    stages = fields.List(fields.Nested(StageSchema))
    state = fields.Nested(ClusterStateSchema)
    left_in_aws = fields.Nested(LeftInAwsSchema, allow_none=True, metadata={
        "description": "after a create, re-run or delete stopped short (failed, cancelled, "
                       "incomplete): what it left in AWS and its hourly cost; else null"})
    next_actions = fields.List(fields.Nested(NextActionSchema), metadata={
        "description": "the ways on from a stopped state: resume (retry the operation) "
                       "and delete what was made (delete the cluster)"})
    instance_groups = fields.List(fields.Dict())
    nodes = fields.Dict(metadata={"description": "node counts by health"})
    features = fields.Dict(allow_none=True, metadata={
        "description": "each managed feature's state now (see /clusters/<c>/features); null "
                       "when it cannot be read this moment"})
    events = fields.List(fields.Dict())
    network = fields.Dict(allow_none=True)


class ClusterListSchema(Schema):
    items = fields.List(fields.Nested(ClusterSchema))


class PlanSchema(Schema):
    dry_run = fields.Boolean(required=True)
    plan = fields.List(fields.Dict(), required=True)
    cost = fields.Nested(CostSchema, required=True)
    preflight = fields.Dict(required=True)


class ForgottenSchema(NoChangeSchema):
    """200 of deleting an imported cluster: hypd's record of it is gone at once (changed
    true), AWS untouched, nothing to follow."""

    imported = fields.Boolean(required=True)


class ActiveClusterSchema(Schema):
    name = Name(required=True)


class ActiveClusterReplySchema(Schema):
    name = fields.String(allow_none=True)


class ClusterDeleteQuerySchema(ForceQuerySchema):
    delete_data = fields.Boolean(
        load_default=False,
        metadata={"description": "also delete the shared S3 bucket and everything in it"})


class StagePathSchema(Schema):
    name = fields.String(required=True, metadata={"description": "name of the cluster"})
    stage = fields.String(required=True, validate=validate.OneOf(STAGES),
                          metadata={"description": "one stage of the cluster's create"})


class ClusterImportSchema(Schema):
    name = fields.String(
        required=True,
        validate=Matching(patterns.EKS_CLUSTER_NAME,
                         error="not an EKS cluster name"),
        metadata={"description": "the existing EKS cluster's name"})
    region = Region()
    hyperpod_cluster = fields.String(
        validate=Matching(patterns.HYPERPOD_CLUSTER_NAME,
                         error="not a HyperPod cluster name"),
        metadata={"description": "the HyperPod cluster on it, if any"})


class KubeconfigSchema(Schema):
    kubeconfig = fields.Dict(required=True)


KUBECONFIG_YAML = "application/yaml"


class KubeconfigQuerySchema(Schema):
    format = fields.String(
        validate=validate.OneOf(["json", "yaml"]),
        metadata={"description": "`yaml`: the kubeconfig file itself (application/yaml), to "
                                 "pass to `kubectl --kubeconfig`; `json` (the default): "
                                 "`{\"kubeconfig\": {...}}`. Without it, `Accept: "
                                 "application/yaml` also asks for the file."})


class PreflightQuerySchema(Schema):
    region = Region()
    instance_type = fields.String(
        required=True,
        validate=Pattern(patterns.ML_INSTANCE_TYPE, error="not a HyperPod instance type"),
        metadata={"description": "e.g. ml.p5.48xlarge"})
    count = fields.Integer(required=True, validate=validate.Range(min=1, max=500),
                           metadata={"description": "number of instances"})
    capacity_type = fields.String(load_default=ON_DEMAND,
                                  validate=validate.OneOf(CAPACITY_TYPES),
                                  metadata={"description": "on-demand, spot or training-plan"})
    training_plan_arn = fields.String(
        validate=Matching(patterns.TRAINING_PLAN_ARN, error="not a training plan ARN"),
        metadata={"description": "with capacity_type training-plan"})


class PreflightSchema(Schema):
    ok = fields.Boolean(required=True)
    region = fields.String()
    instance_type = fields.String()
    count = fields.Integer()
    capacity_type = fields.String()
    checks = fields.List(fields.Dict())
    adds = fields.Nested(CostSchema, metadata={
        "description": "what the instances add per hour, priced like a plan"})
