"""Training jobs on a cluster: HyperPodPyTorchJob (HyperPod's training operator) and RayJob
(KubeRay), submitted through recipes (cloud/recipes.py).

A job is a workload whose life is its own: creating one answers `201` with the job, and its
status is the job's (`GET …/jobs/<job>`, MCP `get_job`), read from the cluster. The one
exception is a RayJob on a cluster without KubeRay: KubeRay is installed first, as an
operation (`job.create`, tasks/jobs.py), answered `202`. A job that needs the training
operator on a cluster without it is refused (412) naming the `training_operator` toggle;
elastic training is refused with the product's limits table (cloud/training.py); a job the
cluster can never hold, or naming an instance group it does not have, is refused (422) by the
capacity-fit check (cloud/fit.py) before anything is made.

An Idempotency-Key on a submission is kept on the job itself (hashed, as annotations): the
same key and body again answer the job the first request made, the same key with another
body `422 idempotency_key_reused`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Any

from flask import jsonify, make_response, request
from flask.views import MethodView
from flask_smorest import Blueprint

from app import auth, mutations
from app.errors import ApiError
from app.permissions import access
from app.readmodels import clusters as readmodel
from app.readmodels import features as features_readmodel
from app.readmodels import fit as fit_readmodel
from app.readmodels import jobs as jobs_readmodel
from app.readmodels.clusters import ClusterRef
from app.readmodels.dependents import job as job_impact
from app.readmodels.kubeapi import api_for as kube_api
from app.readmodels.kubeapi import talking_to
from cloud import aws, capacity, hyperpod, iam, jobs, kube, mlflow, recipes, storage, training
from cloud.training import HangRule, JobSpec, RunPolicy
from schemas.common import ErrorSchema, MutationReplySchema
from schemas.jobs import (
    JobCreateSchema,
    JobDeletedSchema,
    JobListQuerySchema,
    JobListSchema,
    JobLogsQuerySchema,
    JobLogsSchema,
    JobSchema,
    TrainingLimitsSchema,
)
from tasks import jobs as job_tasks
from vocabulary.capacity import SPOT
from vocabulary.roles import Role

blp = Blueprint("jobs", __name__, url_prefix="/api/v1",
                description="Training jobs: HyperPodPyTorchJob and RayJob through recipes, "
                            "their state, recovery budget and logs")

KEY_ANNOTATION = "hypd.io/idempotency-key"
BODY_ANNOTATION = "hypd.io/request"
TRAINING_OPERATOR = "training_operator"
TIERED = "tiered_checkpointing"


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:40]


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
        env=tuple(sorted(body["env"].items())),
        run_policy=RunPolicy(job_max_retry_count=policy["job_max_retry_count"],
                             restarts_before_full_job_restart=policy.get(
                                 "restarts_before_full_job_restart"),
                             eval_period_s=policy.get("eval_period_seconds"),
                             max_full_job_restarts=policy.get("max_full_job_restarts"),
                             rules=rules))


def _refuse(field: str, message: str) -> ApiError:
    return ApiError(422, "validation_failed", f"{field}: {message}",
                    {"fields": {field: [message]}})


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
        raise _refuse("max_nodes", why)


def _namespace(api: Any, ref: ClusterRef, namespace: str) -> None:
    """The job's namespace (made and labelled as hypd's when missing) and the cluster's
    bucket claim in it (the storage stage makes it in `default`; another namespace gets its
    own PV + PVC of the same bucket)."""
    if kube.get_object(api, "v1", "Namespace", namespace) is None:
        kube.server_side_apply(api, training.namespace_manifest(namespace))
    if kube.get_object(api, "v1", "PersistentVolumeClaim", training.SHARED_CLAIM,
                       namespace) is not None:
        return
    if namespace == storage.DEFAULT_NAMESPACE:
        raise ApiError(412, "precondition_failed",
                       f"cluster {ref.name} has no {training.SHARED_CLAIM} claim (its bucket at "
                       "/s3): re-run its storage stage first")
    account = iam.account_id(aws.client("sts", region=ref.region))
    bucket = storage.shared_bucket_name(ref.name, account, ref.region)
    for obj in storage.s3_volume(bucket, ref.region, claim_name=training.SHARED_CLAIM,
                                 namespace=namespace, cluster=ref.name):
        kube.server_side_apply(api, obj)


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


def _mlflow_binding(api: Any, ref: ClusterRef, namespace: str,
                    record: dict[str, Any] | None) -> None:
    """The job namespace's MLflow service account and Pod Identity association (made once
    per namespace; the attach made the default namespace's)."""
    if record is None or not record.get("role_arn"):
        return
    token = _digest(["mlflow", ref.name, namespace, record["role_arn"]])[:32]
    mlflow.ensure_binding(aws.client("eks", region=ref.region), api, ref.name, namespace,
                          record["role_arn"], token)


def _existing(api: Any, ref: ClusterRef, name: str, key_hash: str | None,
              body_hash: str) -> dict[str, Any] | None:
    """The job this request already made (an Idempotency-Key replay), or None; 409 for a
    job of that name made otherwise, 422 for the same key with another body."""
    found = jobs.find(api, name)
    if found is None:
        return None
    notes = (found.get("metadata") or {}).get("annotations") or {}
    if key_hash and notes.get(KEY_ANNOTATION) == key_hash:
        if notes.get(BODY_ANNOTATION) != body_hash:
            raise ApiError(422, "idempotency_key_reused",
                           "this Idempotency-Key was used with another body")
        return found
    raise ApiError(409, "conflict", f"a job named {name!r} already exists on cluster "
                                    f"{ref.name} (namespace {found['metadata'].get('namespace')})"
                                    "; delete it first or choose another name", {"name": name})


def _job(api: Any, cluster: str, job: str) -> dict[str, Any]:
    found = jobs.find(api, job)
    if found is None:
        raise ApiError(404, "not_found", f"no job named {job!r} on cluster {cluster!r}")
    return found


@blp.route("/clusters/<string:cluster>/jobs")
class Jobs(MethodView):
    @access(Role.VIEWER)
    @blp.arguments(JobListQuerySchema, location="query")
    @blp.response(200, JobListSchema)
    def get(self, query, cluster):
        """List a cluster's training jobs (hypd's HyperPodPyTorchJobs and RayJobs), newest
        state first read from the cluster; filter by state or recipe."""
        ref = readmodel.find(cluster)
        api = kube_api(ref)
        with talking_to(ref):
            items = jobs_readmodel.listing(ref, api)
        items = [i for i in items if query.get("state") in (None, i["state"])
                 and query.get("recipe") in (None, i["recipe"])]
        return {"cluster": cluster, "items": items}

    @blp.arguments(JobCreateSchema)
    @blp.response(201, JobSchema)
    @blp.alt_response(202, schema=MutationReplySchema,
                      description="a RayJob on a cluster without KubeRay: the operation that "
                                  "installs KubeRay, then creates the job")
    @blp.alt_response(409, description="a job of that name exists, or the cluster is not ACTIVE")
    @blp.alt_response(412, description="the training operator is off (the message names the "
                                       "training_operator toggle)")
    @blp.alt_response(422, schema=ErrorSchema, description=(
        "exceeds_capacity: more than the cluster can ever hold (its groups' counts or "
        "autoscaling maxima times GPUs and EFA per node; the message and details give the "
        "numbers); validation_failed: an instance group it does not have (named with those "
        "it has), elastic limits"))
    @access(Role.OPERATOR)
    def post(self, body, cluster):
        """Submit a training job from a recipe: torchrun, llama-factory, ms-swift
        (HyperPodPyTorchJob, needs the training_operator feature), verl (RayJob; KubeRay is
        installed when first needed), or your own command. Every pod mounts the cluster's
        bucket at /s3; with an MLflow tracking server attached (…/mlflow), every pod gets
        MLFLOW_TRACKING_URI, MLFLOW_EXPERIMENT_NAME and an identity allowed to log to it.
        A job the cluster can never hold (nodes times GPUs and EFA per node over its groups'
        counts, or autoscaling maxima) is refused, 422 exceeds_capacity with the numbers,
        before anything is made; one that fits but waits for capacity is accepted, and its
        read says why it waits (`waiting`). Answers 201 with the job; follow it with
        GET …/jobs/<job>."""
        auth.require_role(auth.current(), Role.OPERATOR)
        ref = readmodel.find(cluster)
        api = kube_api(ref)
        with talking_to(ref):
            tracking = mlflow.read_record(api)
        spec = _with_mlflow(_spec(body), tracking)
        config = {k: body[k] for k in ("script", "config", "data", "args", "command")
                  if body.get(k) is not None}
        built = recipes.build(body["recipe"], spec, config)
        if body["checkpointless"] and built.kind != recipes.PYTORCH:
            raise _refuse("checkpointless", "checkpointless training is a HyperPodPyTorchJob "
                                            "(training operator) feature")
        key = request.headers.get("Idempotency-Key")
        key_hash = _digest([auth.current().name, cluster, key]) if key else None
        body_hash = _digest(body)
        manifest = built.manifest
        manifest["metadata"]["annotations"] = {BODY_ANNOTATION: body_hash,
                                               **({KEY_ANNOTATION: key_hash} if key_hash
                                                  else {})}
        with talking_to(ref):
            found = _existing(api, ref, spec.name, key_hash, body_hash)
            if found is not None:
                return jobs_readmodel.view(cluster, api, found), 201
            if spec.name in jobs_readmodel.submitting(cluster) and not key:
                raise ApiError(409, "conflict", f"job {spec.name!r} is being submitted "
                                                "(its operation installs KubeRay first)")
            if built.kind == recipes.PYTORCH:
                _operator_checks(ref, body, spec)
            fit_readmodel.check(ref, api, training.fit_asks(spec, ray=built.kind == recipes.RAY))
            _namespace(api, ref, spec.namespace)
            _mlflow_binding(api, ref, spec.namespace, tracking)
            if built.kind == recipes.RAY and job_tasks.kuberay_missing(
                    api, aws.client("eks", region=ref.region), cluster):
                params = {"cluster": cluster, "region": ref.region, "name": spec.name,
                          "namespace": spec.namespace, "recipe": spec.recipe,
                          "manifest": manifest}
                reply, status, headers = mutations.submit(
                    job_tasks.JOB_CREATE, job_tasks.target(cluster, spec.name), params)
                # not the 201 schema's: flask-smorest passes a Response through as it is
                return make_response(jsonify(MutationReplySchema().dump(reply)), status,
                                     headers)
            kube.server_side_apply(api, manifest)
            found = jobs.find(api, spec.name)
            return jobs_readmodel.view(cluster, api, found or manifest), 201


@blp.route("/clusters/<string:cluster>/jobs/<string:job>")
class Job(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, JobSchema)
    def get(self, cluster, job):
        """One job: state, pods with their nodes, restarts, recovery budget (restarts used
        of allowed), recent events, and the MLflow tracking server and experiment it logs
        to (the UI opens through …/mlflow/ui-url)."""
        ref = readmodel.find(cluster)
        api = kube_api(ref)
        with talking_to(ref):
            found = jobs.find(api, job)
            if found is not None:
                return jobs_readmodel.view(cluster, api, found)
        op = jobs_readmodel.submitting(cluster).get(job)
        if op is not None:
            return jobs_readmodel.from_operation(cluster, op)
        raise ApiError(404, "not_found", f"no job named {job!r} on cluster {cluster!r}")

    @mutations.destructive(blp, reply=JobDeletedSchema, status=200,
                           own_200=(JobDeletedSchema, "deleted"))
    def delete(self, query, cluster, job):
        """Delete a job: its operator stops it and its pods go with it. A job that has not
        finished is live work: refused (409 in_use, naming its pods) unless force=true."""
        ref = readmodel.find(cluster)
        api = kube_api(ref)
        with talking_to(ref):
            found = _job(api, cluster, job)
            shown = mutations.guard(lambda: job_impact(ref, api, found), query)
            if shown is not None:
                return shown
            auth.require_role(auth.current(), Role.OPERATOR)
            md = found["metadata"]
            kube.delete_object(api, found["apiVersion"], found["kind"], md["name"],
                               md.get("namespace"), propagation="Foreground")
        return {"cluster": cluster, "name": job, "deleted": True}


@blp.route("/clusters/<string:cluster>/jobs/<string:job>/logs")
class JobLogs(MethodView):
    @access(Role.VIEWER)
    @blp.arguments(JobLogsQuerySchema, location="query")
    @blp.response(200, JobLogsSchema)
    def get(self, query, cluster, job):
        """A job's log lines, each tagged with its pod, oldest first: the last `tail` lines
        of each pod (or one `pod`), from `since` (RFC 3339) on; `previous=true` reads a
        restarted container's previous run. For a live tail use the WebSocket
        /ws/clusters/<c>/jobs/<job>/logs."""
        ref = readmodel.find(cluster)
        api = kube_api(ref)
        with talking_to(ref):
            found = _job(api, cluster, job)
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
    def get(self):
        """What elastic training cannot be combined with (one table, with its source), and
        the recipes a job can be submitted with."""
        return {"elastic_excludes": [{"key": limit.key, "with_what": limit.with_what,
                                      "reason": limit.reason}
                                     for limit in training.ELASTIC_LIMITS],
                "source": training.ELASTIC_LIMITS_SOURCE,
                "recipes": [{"name": r.name, "kind": r.kind, "description": r.description,
                             "needs": list(r.needs)} for r in recipes.RECIPES.values()]}
