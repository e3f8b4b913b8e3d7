"""Training jobs on a cluster: HyperPodPyTorchJob (HyperPod's training operator) and RayJob
(KubeRay), submitted through recipes (cloud/recipes.py).

Submitting and deleting a job are operations (`job.create`, `job.delete`: tasks/jobs.py),
answered `202` with the operation like every other change, whatever the recipe; the job's
own read (`GET …/jobs/<job>`) shows it `submitting` meanwhile, and names its operation.
Before anything is recorded the submission is checked without changing anything: a job that
needs the training operator on a cluster without it is refused (412) naming the
`training_operator` toggle; elastic training is refused with the product's limits table
(cloud/training.py); a job the cluster can never hold, or naming an instance group it does
not have, is refused (422) by the capacity-fit check (cloud/fit.py); a name the cluster
already has is a conflict (409). The Idempotency-Key is the engine's (app/mutations.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from app import audit, auth, mutations
from app.errors import ApiError
from app.permissions import access
from app.readmodels import clusters as readmodel
from app.readmodels import features as features_readmodel
from app.readmodels import fit as fit_readmodel
from app.readmodels import jobs as jobs_readmodel
from app.readmodels import team_work
from app.readmodels.clusters import ClusterRef
from app.readmodels.dependents import job as job_impact
from app.readmodels.kubeapi import api_for as kube_api
from app.readmodels.kubeapi import talking_to
from cloud import aws, capacity, hyperpod, jobs, kube, mlflow, queueing, recipes, storage, training
from cloud.errors import Invalid
from cloud.training import HangRule, JobSpec, RunPolicy
from schemas.common import ErrorSchema, MutationReplySchema
from schemas.jobs import (
    JobCreateSchema,
    JobListQuerySchema,
    JobListSchema,
    JobLogsQuerySchema,
    JobLogsSchema,
    JobSchema,
    TrainingLimitsSchema,
)
from tasks.jobs import JOB_CREATE, JOB_DELETE, kuberay_missing, no_claim, target
from vocabulary.capacity import SPOT
from vocabulary.roles import Role

blp = Blueprint("jobs", __name__, url_prefix="/api/v1",
                description="Training jobs: HyperPodPyTorchJob and RayJob through recipes, "
                            "their state, recovery budget and logs")
audit.declare_target(blp, "cluster/<cluster>/job/<job>")

TRAINING_OPERATOR = "training_operator"
TIERED = "tiered_checkpointing"


def _spec(body: dict[str, Any]) -> JobSpec:
    policy = body["run_policy"]
    rules = tuple(HangRule(
        name=r["name"], log_pattern=r["log_pattern"],
        expected_start_cutoff_s=r.get("expected_start_cutoff_seconds"),
        expected_recurring_frequency_s=r.get("expected_recurring_frequency_seconds"),
        stop_pattern=r.get("stop_pattern"), metric_threshold=r.get("metric_threshold"),
        operator=r.get("operator"),
        metric_evaluation_data_points=r.get("metric_evaluation_data_points"))
        for r in policy.get("log_monitoring") or ())
    return JobSpec(
        name=body["name"], namespace=body["namespace"], recipe=body["recipe"],
        image=body["image"], command=(), nodes=body["nodes"], max_nodes=body.get("max_nodes"),
        processes_per_node=body["processes_per_node"], gpus_per_node=body["gpus_per_node"],
        efa_per_node=body["efa_per_node"], instance_group=body.get("instance_group"),
        env=tuple(sorted(body["env"].items())), team=body.get("team"),
        priority=body.get("priority"),
        run_policy=RunPolicy(job_max_retry_count=policy["job_max_retry_count"],
                             restarts_before_full_job_restart=policy.get(
                                 "restarts_before_full_job_restart"),
                             eval_period_s=policy.get("eval_period_seconds"),
                             max_full_job_restarts=policy.get("max_full_job_restarts"),
                             rules=rules))


def _operator_checks(ref: ClusterRef, body: dict[str, Any], spec: JobSpec) -> None:
    """The training operator must be on; elastic training within the limits table."""
    view = features_readmodel.read(ref)["features"]
    operator = view[TRAINING_OPERATOR]["state"]
    if operator != "on":
        raise ApiError(412, "precondition_failed",
                       f"a {training.PYTORCH_KIND} needs HyperPod's training operator, and the "
                       f"{TRAINING_OPERATOR} feature of cluster {ref.name} is {operator}: turn "
                       f"it on first (PATCH /api/v1/clusters/{ref.name}/features "
                       f'{{"{TRAINING_OPERATOR}": {{"enabled": true}}}}, or the cluster page\'s '
                       "Advanced features)", {"feature": TRAINING_OPERATOR, "state": operator})
    if not spec.elastic:
        return
    sm = aws.client("sagemaker", region=ref.region)
    groups = hyperpod.group_details(sm, ref.hyperpod_name) or []
    if spec.instance_group:
        groups = [g for g in groups if g.get("InstanceGroupName") == spec.instance_group]
    present = {"spot": any(capacity.capacity_type_of(g) == SPOT for g in groups),
               "tiered_checkpointing": view[TIERED]["state"] != "off",
               "checkpointless": body["checkpointless"]}
    why = training.elastic_refusal(present)
    if why:
        raise Invalid(why, field="max_nodes")


def _with_mlflow(spec: JobSpec, record: dict[str, Any] | None) -> JobSpec:
    """With a tracking server attached, the job's pods log to it: its ARN as
    MLFLOW_TRACKING_URI, the experiment (the job's name unless the request's env names
    one), and the namespace's `hypd-mlflow` service account, which Pod Identity binds to a
    role allowed `sagemaker-mlflow:*` on that ARN only."""
    if record is None:
        return spec
    env = dict(spec.env)
    env.update(mlflow.job_env(record, env.get(mlflow.EXPERIMENT) or spec.name))
    return replace(spec, env=tuple(sorted(env.items())), service_account=mlflow.SERVICE_ACCOUNT)


def _built(body: dict[str, Any], tracking: dict[str, Any] | None) -> recipes.Built:
    """The job's manifest from its recipe; with a tracking server attached, its pods log
    to it."""
    spec = _with_mlflow(_spec(body), tracking)
    config = {k: body[k] for k in ("script", "config", "data", "args", "command")
              if body.get(k) is not None}
    built = recipes.build(body["recipe"], spec, config)
    if body["checkpointless"] and built.kind != recipes.PYTORCH:
        raise Invalid("checkpointless training is a HyperPodPyTorchJob (training operator) "
                      "feature", field="checkpointless")
    return built


def _check_new(ref: ClusterRef, api: Any, body: dict[str, Any], built: recipes.Built) -> None:
    """Everything a submission can be refused for, read without changing anything."""
    spec = _spec(body)
    found = jobs.find(api, spec.name)
    if found is not None:
        raise ApiError(409, "conflict", f"a job named {spec.name!r} already exists on cluster "
                                        f"{ref.name} (namespace "
                                        f"{found['metadata'].get('namespace')}); delete it "
                                        "first or choose another name", {"name": spec.name})
    if built.kind == recipes.PYTORCH:
        _operator_checks(ref, body, spec)
    fit_readmodel.check(ref, api, training.fit_asks(spec, ray=built.kind == recipes.RAY))
    if spec.namespace == storage.DEFAULT_NAMESPACE and kube.get_object(
            api, "v1", "PersistentVolumeClaim", training.SHARED_CLAIM, spec.namespace) is None:
        raise ApiError(412, "precondition_failed", no_claim(ref.name))


@blp.route("/clusters/<string:cluster>/jobs")
class Jobs(MethodView):
    @access(Role.VIEWER)
    @blp.arguments(JobListQuerySchema, location="query")
    @blp.response(200, JobListSchema)
    @blp.doc(operationId="list_jobs")
    def get(self, query, cluster):
        """List a cluster's training jobs (hypd's HyperPodPyTorchJobs and RayJobs, and those
        being submitted), newest state first read from the cluster; filter by state or
        recipe."""
        ref = readmodel.find(cluster)
        api = kube_api(ref)
        with talking_to(ref):
            items = jobs_readmodel.listing(ref, api)
        items = [i for i in items if query.get("state") in (None, i["state"])
                 and query.get("recipe") in (None, i["recipe"])]
        return {"cluster": cluster, "items": items}

    @mutations.changing(blp, team_work=True)
    @blp.arguments(JobCreateSchema)
    @blp.response(202, MutationReplySchema)
    @blp.alt_response(409, description="a job of that name exists or is being submitted, or "
                                       "the cluster is not ACTIVE")
    @blp.alt_response(412, description="the training operator is off (the message names the "
                                       "training_operator toggle)")
    @blp.alt_response(422, schema=ErrorSchema, description=(
        "exceeds_capacity: more than the cluster can ever hold (its groups' counts or "
        "autoscaling maxima times GPUs and EFA per node; the message and details give the "
        "numbers); validation_failed: an instance group it does not have (named with those "
        "it has), elastic limits"))
    @blp.doc(operationId="submit_job")
    def post(self, body, cluster):
        """Submit a training job from a recipe: torchrun, llama-factory, ms-swift
        (HyperPodPyTorchJob, needs the training_operator feature), verl (RayJob; KubeRay is
        installed when first needed), or your own command. Every pod mounts the cluster's
        bucket at /s3; with an MLflow tracking server attached (…/mlflow), every pod gets
        MLFLOW_TRACKING_URI, MLFLOW_EXPERIMENT_NAME and an identity allowed to log to it.
        A job the cluster can never hold (nodes times GPUs and EFA per node over its groups'
        counts, or autoscaling maxima) is refused, 422 exceeds_capacity with the numbers,
        before anything is made; one that fits but waits for capacity is accepted, and its
        read says why it waits (`waiting`). Answers 202 with the operation that makes the
        job (its namespace and bucket claim, MLflow identity, KubeRay when needed, the job);
        follow it, then GET …/jobs/<job> (its resource_url). A job runs for a team (`team`,
        default your token's): Kueue admits it through the team's queue in the team's
        namespace, ordered by its `priority` class; its read says whether it waits, is
        admitted (borrowing or not) or was preempted, and by whom. On a cluster with teams
        every job runs for one; a team member submits only for their own team."""
        params: dict[str, Any] = {"cluster": cluster, "name": body["name"],
                                  "recipe": body["recipe"]}

        def precheck() -> None:
            ref = readmodel.find(cluster)
            placed = team_work.place(ref, body, auth.current())
            body.update(namespace=placed.namespace, team=placed.team, priority=placed.priority)
            params.update(namespace=placed.namespace, team=placed.team)
            api = kube_api(ref)
            with talking_to(ref):
                tracking = mlflow.read_record(api)
                built = _built(body, tracking)
                _check_new(ref, api, body, built)
                params["kuberay"] = built.kind == recipes.RAY and kuberay_missing(
                    api, aws.client("eks", region=ref.region), cluster)
            params.update(region=ref.region, manifest=built.manifest,
                          mlflow_role_arn=(tracking or {}).get("role_arn"))

        return mutations.submit(JOB_CREATE, target(cluster, body["name"]), params, precheck)


@blp.route("/clusters/<string:cluster>/jobs/<string:job>")
class Job(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, JobSchema)
    @blp.doc(operationId="get_job")
    def get(self, cluster, job):
        """One job: state, pods with their nodes, restarts, recovery budget (restarts used
        of allowed), recent events, and the MLflow tracking server and experiment it logs
        to (the UI opens through …/mlflow/ui-url). While its submission runs it reads as
        `submitting`, naming the operation; a submission that failed before the job was
        made reads as `failed`, with the operation's reason."""
        ref = readmodel.find(cluster)
        api = kube_api(ref)
        with talking_to(ref):
            found = jobs_readmodel.one(cluster, api, job)
        if found is None:
            raise ApiError(404, "not_found", f"no job named {job!r} on cluster {cluster!r}")
        return found

    @mutations.destructive(blp, team_work=True)
    @blp.doc(operationId="delete_job")
    def delete(self, query, cluster, job):
        """Delete a job: its operator stops it and its pods go with it (an operation that
        waits until they are gone). A job that has not finished is live work: refused (409
        in_use, naming its pods) unless force=true. A submission that failed before its job
        was made is cleared the same way. A team member deletes only their team's jobs."""
        params: dict[str, Any] = {"cluster": cluster, "name": job}

        def impact() -> mutations.Impact:
            ref = readmodel.find(cluster)
            api = kube_api(ref)
            params["region"] = ref.region
            with talking_to(ref):
                found = jobs.find(api, job)
                if found is not None:
                    params["namespace"] = found["metadata"].get("namespace")
                    params["team"] = queueing.team_of(found)[0]
                    _may_change(job, params["namespace"])
                    return job_impact(ref, api, found)
            op = jobs_readmodel.operations(cluster).get(job)
            if not jobs_readmodel.unsubmitted(op):
                raise ApiError(404, "not_found", f"no job named {job!r} on cluster {cluster!r}")
            params.update(namespace=op["params"]["namespace"], team=op["params"].get("team"))
            _may_change(job, params["namespace"])
            return mutations.Impact(f"the unmade submission of job {job} of cluster {cluster}",
                                    [])

        return mutations.destroy(JOB_DELETE, target(cluster, job), params, impact, query)


def _may_change(job: str, namespace: str | None) -> None:
    """A member's token changes only its team's jobs; a dry run changes nothing."""
    if not auth.dry_run():
        team_work.may_change(auth.current(), job, namespace)


@blp.route("/clusters/<string:cluster>/jobs/<string:job>/logs")
class JobLogs(MethodView):
    @access(Role.VIEWER)
    @blp.arguments(JobLogsQuerySchema, location="query")
    @blp.response(200, JobLogsSchema)
    @blp.doc(operationId="get_job_logs")
    def get(self, query, cluster, job):
        """A job's log lines, each tagged with its pod, oldest first: the last `tail` lines
        of each pod (or one `pod`), from `since` (RFC 3339) on; `previous=true` reads a
        restarted container's previous run. For a live tail use the WebSocket
        /ws/clusters/<c>/jobs/<job>/logs."""
        ref = readmodel.find(cluster)
        api = kube_api(ref)
        with talking_to(ref):
            found = jobs.find(api, job)
            if found is None:
                raise ApiError(404, "not_found", f"no job named {job!r} on cluster {cluster!r}")
            lines = []
            for pod in jobs.pods(api, found):
                name = pod["metadata"]["name"]
                if query.get("pod") not in (None, name):
                    continue
                if (pod.get("status") or {}).get("phase", "Pending") == "Pending" and \
                        not (pod.get("status") or {}).get("containerStatuses"):
                    continue
                try:
                    got = jobs.read_lines(api, pod["metadata"]["namespace"], name,
                                          jobs.main_container(pod), tail=query["tail"],
                                          since_time=query.get("since"),
                                          previous=query["previous"])
                except kube.KubeError as exc:
                    if exc.http_status == 400:  # not started, or no previous run
                        continue
                    raise
                lines.extend({"pod": name, "time": t, "line": text,
                              "previous": query["previous"]} for t, text in got)
        lines.sort(key=lambda item: item["time"])
        return {"job": job, "lines": lines[-query["tail"]:]}


@blp.route("/training/limits")
class TrainingLimits(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, TrainingLimitsSchema)
    @blp.doc(operationId="get_training_limits")
    def get(self):
        """What elastic training cannot be combined with (one table, with its source), and
        the recipes a job can be submitted with."""
        return {"elastic_excludes": [{"key": limit.key, "with_what": limit.with_what,
                                      "reason": limit.reason}
                                     for limit in training.ELASTIC_LIMITS],
                "source": training.ELASTIC_LIMITS_SOURCE,
                "recipes": [{"name": r.name, "kind": r.kind, "description": r.description,
                             "needs": list(r.needs)} for r in recipes.RECIPES.values()]}
