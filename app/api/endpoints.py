"""Inference endpoints of a cluster: list and read (from the cluster), create, change
(explicit diff), delete, reassign a pool worker — each an operation on
`cluster/<c>/endpoint/<e>` (tasks/endpoints.py) — and one test request through the
Kubernetes API server's service proxy, to the endpoint's own Service only."""

from __future__ import annotations

import time
from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from app import audit, context, intake, mutations
from app.errors import ApiError
from app.permissions import access
from app.readmodels import clusters as readmodel
from app.readmodels import dependents
from app.readmodels import endpoints as endpoints_model
from app.readmodels import features as features_model
from app.readmodels import fit as fit_model
from app.readmodels import models as models_model
from app.readmodels.clusters import ClusterRef
from app.readmodels.kubeapi import api_for, talking_to
from cloud import aws, features, inference, kube
from cloud.errors import Invalid
from cloud.inference import Endpoint
from schemas.common import ErrorSchema, MutationReplySchema, NoChangeSchema
from schemas.endpoints import (
    SGLANG_MIN_RULE,
    EndpointCreateSchema,
    EndpointListSchema,
    EndpointPatchSchema,
    EndpointSchema,
    InvokeReplySchema,
    InvokeSchema,
    ReassignSchema,
)
from tasks.endpoints import (
    ENDPOINT_CREATE,
    ENDPOINT_DELETE,
    ENDPOINT_REASSIGN,
    ENDPOINT_UPDATE,
    OPERATOR_FEATURE,
    target,
)
from vocabulary.roles import Role

blp = Blueprint("endpoints", __name__, url_prefix="/api/v1/clusters",
                description="Inference endpoints: managed (HyperPod inference operator) and "
                            "self-managed (vLLM, SGLang, custom) with model pools")
audit.declare_target(blp, "cluster/<cluster>/endpoint/<name>")

MAX_ANSWER_BYTES = 64 * 1024


def _url(cluster: str, name: str) -> str:
    return f"/api/v1/clusters/{cluster}/endpoints/{name}"


# -- checks before an endpoint is recorded ------------------------------------------------------

def _check_operator(found: ClusterRef) -> None:
    state = features_model.read(found)["features"][OPERATOR_FEATURE]["state"]
    if state not in features.ENABLED_STATES:
        raise ApiError(412, "precondition_failed",
                       f"a managed endpoint needs the {OPERATOR_FEATURE} feature, which is "
                       f"{state} on cluster {found.name!r}: turn it on first (PATCH "
                       f"/api/v1/clusters/{found.name}/features "
                       f'{{"{OPERATOR_FEATURE}": {{"enabled": true}}}})',
                       {"feature": OPERATOR_FEATURE, "state": state})


def _check_model(found: ClusterRef, bucket: str, models: list[str]) -> None:
    s3 = aws.client("s3", region=found.region)
    for model in models:
        listed = s3.list_objects_v2(Bucket=bucket, Prefix=f"models/{model}/", MaxKeys=1)
        if not listed.get("KeyCount"):
            raise Invalid(f"no model {model!r} under models/ in bucket {bucket}: download it "
                          "first (POST /clusters/<c>/models)",
                          field="model" if len(models) == 1 else "pool_models")


def _check_sagemaker_name(found: ClusterRef, ep: Endpoint) -> None:
    """The inference operator names the SageMaker endpoint it makes after the config's
    `endpointName` (the endpoint's name), and SageMaker endpoint names are unique in an
    account and Region: a name another cluster's endpoint (or anything else) holds would
    only fail later, inside the operator."""
    sm = aws.client("sagemaker", region=found.region)
    try:
        held = sm.describe_endpoint(EndpointName=ep.name)
    except Exception as exc:
        if aws.error_code(exc) == "ValidationException":  # SageMaker's "Could not find"
            return
        raise
    raise ApiError(409, "conflict",
                   f"a SageMaker endpoint named {ep.name!r} already exists in {found.region} "
                   f"({held.get('EndpointArn')}): a managed endpoint's SageMaker endpoint "
                   "takes its name; choose another name",
                   {"name": ep.name, "sagemaker_endpoint": held.get("EndpointArn")})


def _check_new(found: ClusterRef, ep: Endpoint, bucket: str) -> None:
    api = api_for(found)
    with talking_to(found):
        items, _ = endpoints_model.items(found)
        if ep.name in items and items[ep.name]["state"] != "failed":
            raise ApiError(409, "conflict", f"endpoint {ep.name!r} already exists on cluster "
                                            f"{found.name}", {"name": ep.name})
        if kube.get_object(api, "v1", "Namespace", ep.namespace) is None:
            raise Invalid(f"namespace {ep.namespace!r} does not exist in cluster {found.name}",
                          field="namespace")
        if ep.kind != inference.MANAGED:
            if kube.get_object(api, "v1", "PersistentVolumeClaim", ep.claim,
                               ep.namespace) is None:
                raise Invalid(f"no claim {ep.claim!r} in namespace {ep.namespace!r} to mount "
                              "at /s3", field="claim")
            for name in [s["metadata"]["name"] for s in inference.services(ep)]:
                taken = kube.get_object(api, "v1", "Service", name, ep.namespace)
                if taken is not None and not kube.managed_by_hypd(taken):
                    raise ApiError(409, "conflict", f"a Service named {name!r} exists in "
                                                    f"{ep.namespace} and is not hypd's")
    with talking_to(found):
        fit_model.check(found, api, inference.fit_asks(ep))
    _check_model(found, bucket, list(ep.pool_models) or [ep.model])
    if ep.kind == inference.MANAGED:
        _check_operator(found)
        if ep.name not in items:  # a failed one of this cluster may hold it still
            _check_sagemaker_name(found, ep)


# -- routes ----------------------------------------------------------------------------------------

@blp.route("/<string:cluster>/endpoints")
class Endpoints(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, EndpointListSchema)
    @blp.doc(operationId="list_endpoints")
    def get(self, cluster):
        """List a cluster's inference endpoints: kind, model, replicas ready, Services and
        load balancer address, a pool's workers and their models, and any operation
        changing one."""
        items, why = endpoints_model.items(readmodel.find(cluster))
        return {"cluster": cluster, "items": sorted(items.values(), key=lambda i: i["name"]),
                "note": why}

    @mutations.changing(blp)
    @blp.arguments(EndpointCreateSchema)
    @blp.response(202, MutationReplySchema)
    @blp.alt_response(412, description="a managed endpoint while the inference operator is "
                                       "off")
    @blp.alt_response(422, schema=ErrorSchema, description=(
        "exceeds_capacity: more replicas times GPUs (or an autoscaling max) than the cluster "
        "can ever hold, with the numbers; validation_failed: an instance type none of its "
        "groups has"))
    @blp.doc(operationId="create_endpoint")
    def post(self, body, cluster):
        """Create an inference endpoint: managed (an InferenceEndpointConfig for the HyperPod
        inference operator: tiered KV cache, intelligent routing, autoscaling) or a vLLM,
        SGLang or custom Deployment with GPUs, probes and the bucket at /s3, behind an
        in-cluster Service, an NLB, or as a model pool; SGLang with several replicas gets the
        SGLang router and KEDA autoscaling."""
        ep = Endpoint.from_params(body)
        params: dict[str, Any] = {"cluster": cluster, "endpoint": ep.as_params()}

        def precheck() -> None:
            found = readmodel.find(cluster)
            params["region"] = found.region
            params["bucket"] = models_model.bucket(found)
            _check_new(found, ep, params["bucket"])

        return mutations.submit(ENDPOINT_CREATE, target(cluster, ep.name), params, precheck)


@blp.route("/<string:cluster>/endpoints/<string:name>")
class EndpointItem(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, EndpointSchema)
    @blp.doc(operationId="get_endpoint")
    def get(self, cluster, name):
        """One endpoint, read from the cluster."""
        return endpoints_model.one(readmodel.find(cluster), name)

    @mutations.changing(blp, own_200=(NoChangeSchema, "already as asked: nothing sent"))
    @blp.arguments(EndpointPatchSchema)
    @blp.response(202, MutationReplySchema)
    @blp.alt_response(422, schema=ErrorSchema, description=(
        "exceeds_capacity: replicas or an autoscaling max the cluster can never hold, with "
        "the numbers"))
    @blp.doc(operationId="update_endpoint")
    def patch(self, body, cluster, name):
        """Change an endpoint: only the fields present — replicas, autoscaling bounds,
        routing — each compared with the endpoint as the cluster holds it. Already as asked:
        200, nothing sent. A pool scales in by removing unassigned workers only (409 when
        that would take an assigned one)."""
        replayed = mutations.replayed()
        if replayed is not None:
            return replayed
        context.engine().store.ensure_target_free(target(cluster, name))
        found = readmodel.find(cluster)
        before = endpoints_model.stored(found, name)
        _check_change(before, body)
        after = before.changed(body)
        if after == before:
            return mutations.no_change(_url(cluster, name),
                                       f"endpoint {name!r} is already as asked")
        _check_fit(found, before, after)
        if after.service == inference.POOL and after.replicas < before.replicas:
            _check_pool_scale_in(found, before, after)
        params = {"cluster": cluster, "region": found.region, "bucket": models_model.bucket(found),
                  "endpoint": after.as_params(), "before": before.as_params(),
                  "changes": body}
        return mutations.submit(ENDPOINT_UPDATE, target(cluster, name), params)

    @mutations.destructive(blp)
    @blp.doc(operationId="delete_endpoint")
    def delete(self, query, cluster, name):
        """Delete an endpoint: every object hypd made for it (the Deployment and its pods,
        Services and load balancer, router, ScaledObject, InferenceEndpointConfig). A model
        pool is refused (409 in_use, naming each model and its workers) while workers serve
        models, unless force=true."""
        params: dict[str, Any] = {"cluster": cluster}

        def impact() -> mutations.Impact:
            found = readmodel.find(cluster)
            ep = endpoints_model.stored(found, name)
            params["region"] = found.region
            params["endpoint"] = ep.as_params()
            return dependents.endpoint(found, ep)

        return mutations.destroy(ENDPOINT_DELETE, target(cluster, name), params, impact,
                                 query)


def _check_change(ep: Endpoint, body: dict[str, Any]) -> None:
    routing = body.get("routing")
    if routing is not None:
        allowed = (inference.MANAGED_ROUTING if ep.kind == inference.MANAGED
                   else inference.ROUTER_POLICIES if ep.routed else ())
        if routing not in allowed:
            takes = f"routing {', '.join(allowed)}" if allowed else "no routing setting"
            raise Invalid(f"endpoint {ep.name!r} takes {takes}", field="routing")
    if "autoscaling" in body:
        if ep.autoscaling is None:
            raise Invalid(f"endpoint {ep.name!r} has no autoscaling to change",
                          field="autoscaling")
        merged = {"min": ep.autoscaling.min, "max": ep.autoscaling.max, **body["autoscaling"]}
        if merged["min"] > merged["max"]:
            raise Invalid("autoscaling min must not exceed its max", field="autoscaling")
        if ep.kind == inference.SGLANG and merged["min"] < 1:
            raise Invalid(f"autoscaling {SGLANG_MIN_RULE}", field="autoscaling")
    if "replicas" in body and ep.autoscaling is not None and ep.kind != inference.MANAGED:
        raise Invalid("the autoscaler sets this endpoint's replicas: change its autoscaling "
                      "bounds instead", field="replicas")


def _check_fit(found: ClusterRef, before: Endpoint, after: Endpoint) -> None:
    """More replicas, or a higher autoscaling maximum, than the cluster can ever hold: 422
    with the numbers. Only what the change raises is checked, so a routing change or a
    scale-in is never refused for a cluster that shrank."""
    fields = {"replicas"} if after.replicas > before.replicas else set()
    if after.autoscaling is not None and (
            before.autoscaling is None or after.autoscaling.max > before.autoscaling.max):
        fields.add("autoscaling.max")
    asks = inference.fit_asks(after, fields)
    if asks:
        with talking_to(found):
            fit_model.check(found, api_for(found), asks)


def _check_pool_scale_in(found: ClusterRef, before: Endpoint, after: Endpoint) -> None:
    api = api_for(found)
    with talking_to(found):
        workers = inference.pool_workers(api, before)
    free = [w for w in workers if inference.worker_model(w) == inference.UNASSIGNED]
    excess = len(workers) - after.replicas
    if excess > len(free):
        raise ApiError(409, "conflict",
                       f"pool {before.name!r} has {len(workers) - len(free)} assigned workers: "
                       f"scaling it to {after.replicas} would remove an assigned one; "
                       "reassign workers to unassigned first",
                       {"assigned": len(workers) - len(free), "unassigned": len(free)})


@blp.route("/<string:cluster>/endpoints/<string:name>/reassign")
class Reassign(MethodView):
    @mutations.changing(blp, own_200=(NoChangeSchema, "the worker already serves it"))
    @blp.arguments(ReassignSchema)
    @blp.response(202, MutationReplySchema)
    @blp.doc(operationId="reassign_endpoint_worker")
    def post(self, body, cluster, name):
        """Reassign a pool worker to another model (or to unassigned): only the worker's
        model label changes, so the pod is kept and its binding Service follows the label."""
        replayed = mutations.replayed()
        if replayed is not None:
            return replayed
        context.engine().store.ensure_target_free(target(cluster, name))
        found = readmodel.find(cluster)
        ep = endpoints_model.stored(found, name)
        if ep.service != inference.POOL:
            raise ApiError(409, "conflict", f"endpoint {name!r} is not a model pool")
        if body["model"] not in (*ep.pool_models, inference.UNASSIGNED):
            raise Invalid(f"pool {name!r} serves {', '.join(ep.pool_models)} (or unassigned)",
                          field="model")
        with talking_to(found):
            workers = {w["metadata"]["name"]: w for w in
                       inference.pool_workers(api_for(found), ep)}
        if body["worker"] not in workers:
            raise Invalid(f"no worker {body['worker']!r} in pool {name!r}",
                          field="worker")
        if inference.worker_model(workers[body["worker"]]) == body["model"]:
            return mutations.no_change(_url(cluster, name), f"worker {body['worker']!r} "
                                                            f"already serves {body['model']}")
        params = {"cluster": cluster, "region": found.region, "endpoint": ep.as_params(),
                  **body}
        return mutations.submit(ENDPOINT_REASSIGN, target(cluster, name), params)


def _invoke_target(found: ClusterRef, api: Any, ep: Endpoint, model: str) -> tuple[str, str]:
    """The endpoint's own Service and port, as the cluster holds them: hypd's Service (a
    pool's binding Service for the model), or for a managed endpoint the Service the
    inference operator made for its InferenceEndpointConfig (found by ownerReference)."""
    if ep.kind != inference.MANAGED:
        return inference.front_service(ep, model), inference.PORT_NAME
    with talking_to(found):
        config = kube.get_object(api, inference.IEC_API, inference.IEC_KIND, ep.name,
                                 ep.namespace)
        target = inference.operator_service(api, config) if config else None
    if target is None:
        raise ApiError(409, "conflict", f"endpoint {ep.name!r} has no Service yet: the "
                                        "inference operator has not made it; follow its "
                                        f"state with GET {_url(found.name, ep.name)}")
    return target


@blp.route("/<string:cluster>/endpoints/<string:name>/invoke")
class Invoke(MethodView):
    @access(Role.OPERATOR)
    @blp.arguments(InvokeSchema)
    @blp.response(200, InvokeReplySchema)
    @blp.alt_response(409, description="no server is ready behind the endpoint's Service")
    @blp.doc(operationId="invoke_endpoint")
    def post(self, body, cluster, name):
        """Send one test completion (OpenAI-compatible, `POST /v1/completions`) to the
        endpoint's own Service through the Kubernetes API server's service proxy (for a
        managed endpoint, the Service the inference operator made for it). hypd fixes the
        Service, port, path and method; only the prompt, a token bound and a pool's model
        come from the request."""
        found = readmodel.find(cluster)
        ep = endpoints_model.stored(found, name)
        model = body.get("model")
        if ep.service == inference.POOL:
            if model not in ep.pool_models:
                raise Invalid(f"pool {name!r} serves {', '.join(ep.pool_models)}: name one",
                              field="model")
        elif model not in (None, ep.model):
            raise Invalid(f"endpoint {name!r} serves {ep.model}", field="model")
        served = model or ep.model
        api = api_for(found)
        service, port = _invoke_target(found, api, ep, served)
        request = {"model": served, "prompt": body["prompt"], "max_tokens": body["max_tokens"]}
        started = time.monotonic()
        with talking_to(found):
            try:
                status, raw = kube.service_proxy(api, ep.namespace, service, port,
                                                 inference.INVOKE_PATH, request,
                                                 MAX_ANSWER_BYTES)
            except kube.KubeError as exc:
                raise ApiError(502, "upstream_error", str(exc)) from exc
        elapsed = round((time.monotonic() - started) * 1000, 1)
        try:
            # the model server's answer, read as strictly as a request (a deep or huge one
            # is shown as text, never a 500)
            answer = intake.loads(raw) if raw else None
        except ValueError:
            answer = raw.decode("utf-8", "replace")
        if status == 503 and isinstance(answer, dict) and answer.get("kind") == "Status":
            raise ApiError(409, "conflict", f"no server is ready behind Service "
                                            f"{ep.namespace}/{service}: "
                                            f"{answer.get('message')}")
        return {"cluster": cluster, "endpoint": name, "status": status,
                "service": f"{ep.namespace}/{service}", "response": answer,
                "elapsed_ms": elapsed}
