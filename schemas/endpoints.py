"""Inference endpoints: managed (the HyperPod inference operator) and self-managed (vLLM,
SGLang or a custom image as a Deployment), with their Services, model pools, the SGLang
router and autoscaling; the one test request an endpoint may be sent."""

from __future__ import annotations

import re

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from schemas.common import Name, Pattern, WaitingPodSchema
from vocabulary import patterns

KINDS = ("managed", "vllm", "sglang", "custom")
SERVICES = ("in_cluster", "load_balancer", "pool")
MANAGED_ROUTING = ("prefixaware", "kvaware", "session", "roundrobin")
ROUTER_POLICIES = ("cache_aware", "round_robin", "random", "power_of_two")
STATES = ("creating", "deploying", "ready", "updating", "deleting", "failed", "incomplete")
MODEL_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$")
"""A model's name in the cluster's bucket (`models/<model>`) and in Kubernetes labels and
Service names (`<endpoint>-<model>`): a DNS label of at most 40 characters."""
MODEL_RULE = ("lowercase letters, digits and hyphens, starting and ending with a letter or "
              "digit, at most 40 characters")
IMAGE_RE = patterns.CONTAINER_IMAGE
ARG_RE = re.compile(r"^[A-Za-z0-9_./:=,+-]{1,200}$")
MAX_GPUS = 8
MAX_REPLICAS = 64
MAX_POOL_MODELS = 16
MAX_PROMPT = 4000
MAX_TOKENS = 256


def Model(description: str = "A model under models/ in the cluster's bucket",
          **kwargs) -> fields.String:
    return fields.String(validate=Pattern(MODEL_RE, error=f"invalid model name: "
                                                          f"{MODEL_RULE}"),
                         metadata={"description": f"{description}: {MODEL_RULE}."}, **kwargs)


SGLANG_MIN_RULE = ("min must be at least 1 for sglang: KEDA reads the load from the servers, "
                   "so with none it could never scale back up")


class EndpointAutoscalingSchema(Schema):
    min = fields.Integer(required=True, validate=validate.Range(min=0, max=MAX_REPLICAS),
                         metadata={"description": "fewest servers (0: scale to zero; "
                                                  "managed only)"})
    max = fields.Integer(required=True, validate=validate.Range(min=1, max=MAX_REPLICAS),
                         metadata={"description": "most servers"})
    target = fields.Float(load_default=8.0, validate=validate.Range(min=0.1, max=10_000),
                          metadata={"description": "load per server the autoscaler aims at "
                                                   "(sglang: running plus waiting requests; "
                                                   "managed: invocations)"})

    @validates_schema
    def _bounds(self, data: dict, **_: object) -> None:
        if data["min"] > data["max"]:
            raise ValidationError("min must not exceed max", "min")


class EndpointAutoscalingPatchSchema(Schema):
    min = fields.Integer(validate=validate.Range(min=0, max=MAX_REPLICAS),
                         metadata={"description": "fewest servers"})
    max = fields.Integer(validate=validate.Range(min=1, max=MAX_REPLICAS),
                         metadata={"description": "most servers"})
    target = fields.Float(validate=validate.Range(min=0.1, max=10_000),
                          metadata={"description": "load per server aimed at"})


class EndpointCreateSchema(Schema):
    name = Name(required=True)
    kind = fields.String(required=True, validate=validate.OneOf(KINDS),
                         metadata={"description": "managed: HyperPod's inference operator "
                                                  "(its feature on); others: a Deployment "
                                                  "hypd makes"})
    model = Model(required=True)
    gpus = fields.Integer(required=True, validate=validate.Range(min=1, max=MAX_GPUS),
                          metadata={"description": "GPUs per server (tensor parallel size): "
                                                   "the user states it"})
    namespace = fields.String(load_default="default",
                              validate=Pattern(patterns.DNS_LABEL, error="not a namespace"),
                              metadata={"description": "the namespace (it must exist)"})
    replicas = fields.Integer(load_default=1, validate=validate.Range(min=0, max=MAX_REPLICAS),
                              metadata={"description": "servers (a pool: its workers)"})
    instance_type = fields.String(validate=Pattern(patterns.ML_INSTANCE_TYPE,
                                                   error="not a HyperPod instance type"),
                                  metadata={"description": "the nodes to run on (required for "
                                                           "managed)"})
    image = fields.String(validate=Pattern(IMAGE_RE, error="not an image reference"),
                          metadata={"description": "the serving image (required for custom)"})
    port = fields.Integer(validate=validate.Range(min=1024, max=65535),
                          metadata={"description": "the port the server listens on"})
    args = fields.List(fields.String(validate=Pattern(ARG_RE,
                                                      error="not a plain argument")),
                       validate=validate.Length(max=32),
                       metadata={"description": "extra server arguments (no shell)"})
    service = fields.String(load_default="in_cluster", validate=validate.OneOf(SERVICES),
                            metadata={"description": "in_cluster: a ClusterIP Service; "
                                                     "load_balancer: an NLB; pool: warm "
                                                     "workers, a Service per model"})
    pool_models = fields.List(Model(), validate=validate.Length(min=1, max=MAX_POOL_MODELS),
                              metadata={"description": "a pool's models: one binding Service "
                                                       "each"})
    routing = fields.String(validate=validate.OneOf(MANAGED_ROUTING + ROUTER_POLICIES),
                            metadata={"description": "managed: prefixaware, kvaware, session "
                                                     "or roundrobin; sglang's router: "
                                                     "cache_aware, round_robin, random or "
                                                     "power_of_two",
                                      "x-hypd-by-kind": {"managed": list(MANAGED_ROUTING),
                                                         "sglang": list(ROUTER_POLICIES)}})
    kv_cache_l2 = fields.Boolean(load_default=False,
                                 metadata={"description": "managed: HyperPod's tiered storage "
                                                          "as the KV cache's second tier"})
    autoscaling = fields.Nested(EndpointAutoscalingSchema,
                                metadata={"description": "managed: the operator's autoscaling; "
                                                         "sglang: KEDA on the servers' total load"})
    claim = fields.String(load_default="hypd-s3",
                          validate=Pattern(patterns.DNS_LABEL, error="not a claim name"),
                          metadata={"description": "the claim of the bucket mounted at /s3"})

    @validates_schema
    def _kind_rules(self, data: dict, **_: object) -> None:
        kind, service = data["kind"], data.get("service")
        if kind == "managed":
            if not data.get("instance_type"):
                raise ValidationError("required for a managed endpoint", "instance_type")
            if service != "in_cluster":
                raise ValidationError("the inference operator makes a managed endpoint's "
                                      "service", "service")
            if data.get("routing") and data["routing"] not in MANAGED_ROUTING:
                raise ValidationError(f"one of {', '.join(MANAGED_ROUTING)} for managed",
                                      "routing")
        else:
            if data.get("kv_cache_l2"):
                raise ValidationError("only for managed endpoints", "kv_cache_l2")
            if data.get("routing") and (kind != "sglang"
                                        or data["routing"] not in ROUTER_POLICIES):
                raise ValidationError(f"the SGLang router's policy ({', '.join(ROUTER_POLICIES)})"
                                      " for sglang endpoints only", "routing")
        if kind == "custom" and not data.get("image"):
            raise ValidationError("required for a custom endpoint", "image")
        if kind == "custom" and service == "pool":
            raise ValidationError("a pool runs vllm or sglang workers", "service")
        if service == "pool":
            if not data.get("pool_models"):
                raise ValidationError("required for a pool", "pool_models")
            if data.get("autoscaling"):
                raise ValidationError("a pool's size is set by replicas", "autoscaling")
            if len(set(data["pool_models"])) != len(data["pool_models"]):
                raise ValidationError("each model once", "pool_models")
            too_long = [m for m in data["pool_models"] if len(data["name"]) + 1 + len(m) > 63]
            if too_long:
                raise ValidationError(f"<endpoint>-<model> must fit a Service name (63): "
                                      f"{', '.join(too_long)}", "pool_models")
        elif data.get("pool_models"):
            raise ValidationError("only for service pool", "pool_models")
        if data.get("autoscaling") and kind not in ("managed", "sglang"):
            raise ValidationError("autoscaling is managed's or the SGLang router's (KEDA)",
                                  "autoscaling")
        if kind == "sglang" and data.get("autoscaling") and data["autoscaling"]["min"] < 1:
            raise ValidationError(SGLANG_MIN_RULE, "autoscaling")


class EndpointPatchSchema(Schema):
    """Explicit diff: only the fields present are acted on."""

    replicas = fields.Integer(validate=validate.Range(min=0, max=MAX_REPLICAS),
                              metadata={"description": "servers (a pool: its workers)"})
    autoscaling = fields.Nested(EndpointAutoscalingPatchSchema,
                                metadata={"description": "bounds to change"})
    routing = fields.String(validate=validate.OneOf(MANAGED_ROUTING + ROUTER_POLICIES),
                            metadata={"description": "managed: its routing strategy; sglang: "
                                                     "its router's policy"})


class ReassignSchema(Schema):
    worker = fields.String(required=True, validate=Pattern(
        patterns.DNS_LABEL, error="not a pod name"), metadata={"description": "the worker (pod)"})
    model = fields.String(required=True, validate=Pattern(
        re.compile(f"{MODEL_RE.pattern}|^unassigned$"), error="not a model of the pool"),
        metadata={"description": "a model of the pool, or unassigned"})


class InvokeSchema(Schema):
    """One OpenAI-compatible completion request, built by hypd: only these fields go."""

    prompt = fields.String(required=True, validate=validate.Length(min=1, max=MAX_PROMPT),
                           metadata={"description": "the prompt to complete"})
    max_tokens = fields.Integer(load_default=16, validate=validate.Range(min=1, max=MAX_TOKENS),
                                metadata={"description": "most tokens to generate"})
    model = Model("A pool's model (which binding Service)")


class WorkerSchema(Schema):
    name = fields.String(required=True)
    model = fields.String(required=True)
    ready = fields.Boolean(required=True)
    node = fields.String(allow_none=True)
    phase = fields.String(allow_none=True)
    restarts = fields.Integer()


class EndpointSchema(Schema):
    name = fields.String(required=True)
    cluster = fields.String(required=True)
    namespace = fields.String(required=True)
    kind = fields.String(required=True)
    model = fields.String(allow_none=True)
    service = fields.String(allow_none=True)
    state = fields.String(required=True, validate=validate.OneOf(STATES))
    message = fields.String(allow_none=True)
    replicas = fields.Integer(allow_none=True)
    ready_replicas = fields.Integer(allow_none=True)
    gpus = fields.Integer(allow_none=True)
    instance_type = fields.String(allow_none=True)
    routing = fields.String(allow_none=True)
    autoscaling = fields.Dict(allow_none=True)
    address = fields.String(allow_none=True, metadata={"description": "the load balancer's "
                                                                      "hostname"})
    services = fields.List(fields.String())
    pool_models = fields.List(fields.String())
    workers = fields.List(fields.Nested(WorkerSchema))
    waiting = fields.List(fields.Nested(WaitingPodSchema), metadata={
        "description": "servers the scheduler cannot place yet, and why: the endpoint fits "
                       "the cluster but waits for capacity"})
    operation_id = fields.String(allow_none=True)
    sagemaker_endpoint = fields.Dict(allow_none=True, metadata={
        "description": "a managed endpoint's SageMaker endpoint as the inference operator "
                       "registered it: {arn, state}"})


class EndpointListSchema(Schema):
    cluster = fields.String(required=True)
    items = fields.List(fields.Nested(EndpointSchema), required=True)
    note = fields.String(allow_none=True)


class InvokeReplySchema(Schema):
    cluster = fields.String(required=True)
    endpoint = fields.String(required=True)
    status = fields.Integer(required=True, metadata={"description": "the server's HTTP status"})
    service = fields.String(required=True)
    response = fields.Raw(allow_none=True, metadata={"description": "the server's JSON answer"})
    elapsed_ms = fields.Float()
