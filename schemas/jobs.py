"""Training jobs: what a submission may say and what a job looks like when read."""

from __future__ import annotations

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from schemas.common import MostEntries, Name, Pattern, WaitingPodSchema
from schemas.mlflow import JobMlflowSchema
from schemas.teams import priority_name, team_name
from vocabulary import patterns

RECIPES = ("torchrun", "llama-factory", "ms-swift", "verl", "pytorch", "ray")
STATES = ("submitting", "pending", "running", "restarting", "succeeded", "failed",
          "deleting")
KINDS = ("HyperPodPyTorchJob", "RayJob")
ARG_RE = r"^[^\x00]{1,4096}$"
S3_PATH = r"^/s3(/[A-Za-z0-9._=+-]+)+/?$"
LOG_TAIL_MAX = 10_000
ENV_NAME_RE = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"


def _arg(**kwargs) -> fields.String:
    return fields.String(validate=Pattern(ARG_RE, error="1 to 4096 characters, no NUL"),
                         **kwargs)


class HangRuleSchema(Schema):
    """A log-monitoring rule: hang detection (a pattern expected within a time) or slowness
    detection (a number captured from the pattern against a threshold)."""

    name = fields.String(required=True, validate=Pattern(r"^[A-Za-z][A-Za-z0-9_-]{0,62}$"))
    log_pattern = fields.String(required=True, validate=validate.Length(min=1, max=1024))
    expected_start_cutoff_seconds = fields.Integer(validate=validate.Range(min=1))
    expected_recurring_frequency_seconds = fields.Integer(validate=validate.Range(min=1))
    stop_pattern = fields.String(validate=validate.Length(min=1, max=1024))
    metric_threshold = fields.Integer()
    operator = fields.String(validate=validate.OneOf(["gt", "gteq", "lt", "lteq", "eq"]))
    metric_evaluation_data_points = fields.Integer(validate=validate.Range(min=1, max=100))


class RunPolicySchema(Schema):
    job_max_retry_count = fields.Integer(load_default=3, validate=validate.Range(min=0,
                                                                                max=1000),
                                         metadata={"description": "restarts allowed: the "
                                                                  "job's recovery budget"})
    restarts_before_full_job_restart = fields.Integer(validate=validate.Range(min=0,
                                                                              max=1000))
    eval_period_seconds = fields.Integer(validate=validate.Range(min=1))
    max_full_job_restarts = fields.Integer(validate=validate.Range(min=0, max=1000))
    log_monitoring = fields.List(fields.Nested(HangRuleSchema),
                                 validate=validate.Length(max=16),
                                 metadata={"description": "hang and slowness detection rules"})


class JobCreateSchema(Schema):
    name = Name(required=True)
    namespace = fields.String(
        validate=Pattern(patterns.DNS_LABEL, error="not a Kubernetes namespace name"),
        metadata={"description": "made when missing; default `default` (a team's job: the "
                                 "team's)"})
    team = team_name(metadata={"description": "the team it runs for, through the team's "
                                              "queue (default: your token's team)"})
    priority = priority_name(metadata={"description": "a priority class of the cluster's "
                                                      "scheduler config (with a team)"})
    recipe = fields.String(required=True, validate=validate.OneOf(RECIPES), metadata={
        "description": "verl runs as a RayJob, the others as HyperPodPyTorchJobs; pytorch and "
                       "ray run your own command"})
    image = fields.String(required=True, validate=Pattern(
        r"^[a-zA-Z0-9][a-zA-Z0-9._/:@-]{0,511}$", error="not a container image reference"),
        metadata={"description": "with HyperPod's elastic agent (hyperpod-elastic-agent) for "
                                 "HyperPodPyTorchJob recipes"})
    script = fields.String(validate=Pattern(S3_PATH, error="a path under /s3"),
                           metadata={"description": "torchrun: the script, under /s3"})
    config = fields.String(validate=Pattern(S3_PATH, error="a path under /s3"),
                           metadata={"description": "llama-factory, ms-swift, verl: the "
                                                    "recipe's config file, under /s3"})
    data = fields.String(validate=Pattern(S3_PATH, error="a path under /s3"),
                         metadata={"description": "the data directory (default /s3/data)"})
    args = fields.List(_arg(), validate=validate.Length(max=64), load_default=list,
                       metadata={"description": "extra arguments for the script or recipe"})
    command = fields.List(_arg(), validate=validate.Length(min=1, max=64), metadata={
        "description": "pytorch: the command (starts with hyperpodrun); ray: the entrypoint"})
    nodes = fields.Integer(load_default=1, validate=validate.Range(min=1, max=1000),
                           metadata={"description": "nodes (pods) the job runs on"})
    max_nodes = fields.Integer(validate=validate.Range(min=1, max=1000), metadata={
        "description": "elastic training: scale between nodes and max_nodes"})
    processes_per_node = fields.Integer(load_default=1, validate=validate.Range(min=1, max=64),
                                        metadata={"description": "training processes per node "
                                                                 "(usually its GPU count)"})
    gpus_per_node = fields.Integer(load_default=0, validate=validate.Range(min=0, max=16),
                                   metadata={"description": "GPUs each pod requests"})
    efa_per_node = fields.Integer(load_default=0, validate=validate.Range(min=0, max=32),
                                  metadata={"description": "EFA devices each pod requests"})
    instance_group = fields.String(validate=Pattern(patterns.DNS_LABEL, error="not an "
                                                    "instance group name"),
                                   metadata={"description": "run on this instance group's "
                                                            "nodes only"})
    env = fields.Dict(keys=fields.String(validate=Pattern(ENV_NAME_RE)),
                      values=fields.String(validate=validate.Length(max=4096)),
                      load_default=dict, validate=MostEntries(64),
                      metadata={"maxProperties": 64,
                                "description": "environment variables of every pod"})
    run_policy = fields.Nested(RunPolicySchema, load_default=lambda: RunPolicySchema().load({}),
                               metadata={"description": "retry limit (the recovery budget), "
                                                        "restart limits, hang and slowness "
                                                        "detection (HyperPodPyTorchJob)"})
    checkpointless = fields.Boolean(load_default=False, metadata={
        "description": "the job uses HyperPod checkpointless training"})

    @validates_schema
    def _elastic(self, data: dict, **_: object) -> None:
        if data.get("max_nodes") is not None and data["max_nodes"] < data.get("nodes", 1):
            raise ValidationError("must be at least nodes", "max_nodes")


class JobListQuerySchema(Schema):
    state = fields.String(validate=validate.OneOf(STATES),
                          metadata={"description": "only jobs in this state"})
    recipe = fields.String(validate=validate.OneOf(RECIPES),
                           metadata={"description": "only jobs of this recipe"})


class JobPodSchema(Schema):
    name = fields.String(required=True)
    node = fields.String(allow_none=True)
    phase = fields.String(allow_none=True)
    restarts = fields.Integer()
    ready = fields.Boolean()
    role = fields.String(allow_none=True, metadata={"description": "head or worker (Ray)"})


class RecoveryBudgetSchema(Schema):
    used = fields.Integer(required=True, metadata={"description": "restarts so far"})
    allowed = fields.Integer(allow_none=True, metadata={"description": "jobMaxRetryCount"})
    remaining = fields.Integer(allow_none=True)


class JobEventSchema(Schema):
    at = fields.String(allow_none=True)
    type = fields.String(allow_none=True)
    reason = fields.String(allow_none=True)
    object = fields.String(allow_none=True)
    message = fields.String(allow_none=True)


QUEUE_STATES = ("waiting", "admitted", "preempted", "finished")


class PreemptionSchema(Schema):
    """One preemption: the other job (who took the quota, or whose quota was taken)."""

    job = fields.String(allow_none=True, metadata={"description": "the other job (null: not "
                                                                   "one of hypd's)"})
    team = fields.String(allow_none=True)
    namespace = fields.String(allow_none=True)
    reason = fields.String(allow_none=True, metadata={
        "description": "Kueue's: InCohortReclamation (its team took back what it lent) or "
                       "InClusterQueue (a higher priority of the same team)"})
    at = fields.String(allow_none=True)


class JobQueueSchema(Schema):
    """Where a team's work (a job, a space) stands in its queue, as Kueue says (its
    Workload)."""

    state = fields.String(required=True, validate=validate.OneOf(QUEUE_STATES), metadata={
        "description": "waiting for quota, admitted, preempted (and waiting again), or "
                       "finished (its quota given back)"})
    message = fields.String(allow_none=True, metadata={"description": "Kueue's words"})
    local_queue = fields.String(required=True)
    cluster_queue = fields.String(allow_none=True)
    workload = fields.String(allow_none=True, metadata={"description": "Kueue's Workload "
                                                                       "for it"})
    priority = fields.Integer(allow_none=True)
    admitted_at = fields.String(allow_none=True)
    borrowing = fields.Boolean(allow_none=True, metadata={
        "description": "admitted while its team uses more than its own quota: the lending "
                       "teams may take it back"})
    preempted_by = fields.Nested(PreemptionSchema, allow_none=True, metadata={
        "description": "while preempted: the job that took its quota"})
    preempted = fields.List(fields.Nested(PreemptionSchema), metadata={
        "description": "the jobs this one took quota from, waiting again"})


class JobSchema(Schema):
    name = fields.String(required=True)
    cluster = fields.String(required=True)
    namespace = fields.String(required=True)
    team = fields.String(allow_none=True, metadata={"description": "the team it runs for"})
    priority = fields.String(allow_none=True, metadata={"description": "its priority class"})
    queue = fields.Nested(JobQueueSchema, allow_none=True, metadata={
        "description": "a team's job in its queue (null: not a team's job)"})
    kind = fields.String(validate=validate.OneOf(KINDS))
    recipe = fields.String(allow_none=True)
    state = fields.String(validate=validate.OneOf(STATES))
    message = fields.String(allow_none=True)
    image = fields.String(allow_none=True)
    nodes = fields.Integer(allow_none=True)
    created_at = fields.String(allow_none=True)
    started_at = fields.String(allow_none=True)
    finished_at = fields.String(allow_none=True)
    pods = fields.List(fields.Nested(JobPodSchema))
    waiting = fields.List(fields.Nested(WaitingPodSchema), metadata={
        "description": "pods the scheduler cannot place yet, and why: the job fits the "
                       "cluster but waits for capacity (other workloads, nodes not yet "
                       "added)"})
    restarts = fields.Integer()
    recovery_budget = fields.Nested(RecoveryBudgetSchema, allow_none=True)
    events = fields.List(fields.Nested(JobEventSchema))
    paths = fields.Dict(keys=fields.String(), values=fields.String())
    operation_id = fields.String(allow_none=True)
    mlflow = fields.Nested(JobMlflowSchema, allow_none=True, metadata={
        "description": "where the job logs to MLflow (the cluster's tracking server)"})
    notes = fields.List(fields.String())


class JobListSchema(Schema):
    cluster = fields.String(required=True)
    items = fields.List(fields.Nested(JobSchema), required=True)


class JobLogsQuerySchema(Schema):
    tail = fields.Integer(load_default=100, validate=validate.Range(min=1, max=LOG_TAIL_MAX),
                          metadata={"description": "the last lines (of all pods together)"})
    since = fields.String(validate=Pattern(
        r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z$",
        error="an RFC 3339 UTC time, e.g. 2026-01-02T03:04:05.123456Z"),
        metadata={"description": "only lines at or after this time"})
    pod = fields.String(validate=Pattern(patterns.DNS_LABEL, error="not a pod name"),
                        metadata={"description": "one pod's lines (default: every pod's)"})
    previous = fields.Boolean(load_default=False, metadata={
        "description": "a restarted container's previous run (its last words)"})


class JobLogLineSchema(Schema):
    pod = fields.String(required=True)
    time = fields.String(required=True)
    line = fields.String(required=True)
    previous = fields.Boolean()


class JobLogsSchema(Schema):
    job = fields.String(required=True)
    lines = fields.List(fields.Nested(JobLogLineSchema), required=True)


class TrainingLimitSchema(Schema):
    key = fields.String(required=True)
    with_what = fields.String(required=True)
    reason = fields.String(required=True)


class TrainingLimitsSchema(Schema):
    elastic_excludes = fields.List(fields.Nested(TrainingLimitSchema), required=True)
    source = fields.String(required=True)
    recipes = fields.List(fields.Dict(), required=True)
