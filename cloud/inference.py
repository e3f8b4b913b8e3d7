"""Inference endpoints as Kubernetes objects: the manifests hypd applies, and reading back
what an endpoint is made of.

An endpoint is one `Endpoint` (its request, as the route accepted it) turned into objects,
each labelled `hypd.io/endpoint=<name>`:

- `kind: managed` — one `InferenceEndpointConfig` for the HyperPod inference operator (model
  in the cluster's bucket, instance type, replicas, managed tiered KV cache, intelligent
  routing, autoscaling), which the operator turns into its own Deployment, Service and load
  balancer;
- `kind: vllm | sglang | custom` — a Deployment of model servers (GPU requests, readiness
  and liveness probes, the shared bucket at `/s3`, the model under `/s3/models/<model>`) and
  its Service: in-cluster (ClusterIP), external (an NLB through the AWS Load Balancer
  Controller's annotations) or a **model pool**: warm workers labelled
  `hypd.io/model=unassigned`, one binding Service per model selecting by that label — which
  is not in the Deployment's selector, so relabelling a worker never orphans it. A worker
  reads its label through a downward-API file; its liveness probe fails when the label no
  longer names the model it serves, so the kubelet restarts the container (the pod stays)
  and it loads the model it was assigned.
- SGLang with several replicas: the SGLang router (cache-aware routing, its workers found by
  label through the Kubernetes API) in front, hypd's load reader beside it (the servers'
  total load as one number, on an in-cluster Service), and a KEDA `ScaledObject` scaling the
  servers on that total (see `scaled_object` for why it is read that way).

The request is kept on the endpoint's main object (annotation `hypd.io/endpoint-spec`), so
reads and changes start from what the cluster holds, never from a copy of it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from cloud import fit, kube, storage
from cloud.errors import Invalid
from cloud.incluster import sglang_load
from vocabulary import patterns

ENDPOINT_LABEL = "hypd.io/endpoint"
ROLE_LABEL = "hypd.io/endpoint-role"
MODEL_LABEL = "hypd.io/model"
SPEC_ANNOTATION = "hypd.io/endpoint-spec"
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
UNASSIGNED = "unassigned"
SERVER, ROUTER = "server", "router"

MANAGED, VLLM, SGLANG, CUSTOM = "managed", "vllm", "sglang", "custom"
KINDS = (MANAGED, VLLM, SGLANG, CUSTOM)
IN_CLUSTER, LOAD_BALANCER, POOL = "in_cluster", "load_balancer", "pool"
SERVICES = (IN_CLUSTER, LOAD_BALANCER, POOL)
MANAGED_ROUTING = ("prefixaware", "kvaware", "session", "roundrobin")
ROUTER_POLICIES = ("cache_aware", "round_robin", "random", "power_of_two")

IEC_API = "inference.sagemaker.aws.amazon.com/v1"
IEC_KIND = "InferenceEndpointConfig"
OPERATOR_POD_LABEL = "app"
"""The inference operator's label on a managed endpoint's pods (`app=<config>`: what the
HyperPod CLI lists them by)."""
KEDA_API = "keda.sh/v1alpha1"
SCALED_OBJECT = "ScaledObject"

IMAGES = {
    VLLM: "vllm/vllm-openai:v0.10.1",
    SGLANG: "lmsysorg/sglang:v0.5.2",
    ROUTER: "lmsysorg/sglang:v0.5.2",
}
MANAGED_IMAGE = "763104351884.dkr.ecr.{region}.amazonaws.com/djl-inference:0.32.0-lmi14.0.0-cu124"
PORTS = {VLLM: 8000, SGLANG: 30000, CUSTOM: 8000, MANAGED: 8080}
SERVICE_PORT = 80
PORT_NAME = "http"
INVOKE_PATH = "v1/completions"
"""The one path a test request goes to (OpenAI's completions), on every kind of endpoint."""
ROUTER_PORT = 30000
ROUTER_METRICS_PORT = 29000
LOAD_PORT = 29100
"""hypd's load reader beside the router (cloud/incluster/sglang_load.py): `GET /load`."""
LOAD_DIR = "/etc/hypd/load"
LOAD_FILE = "sglang_load.py"
LOAD_PATH = "load"
LOAD_ANNOTATION = "hypd.io/load-program"
"""The reader's SHA-256 on the router's pod template: a new reader rolls the router's pod
(the running process would not read a changed ConfigMap again)."""
MODEL_DIR = "/s3/models"
MODEL_FILE_DIR = "/etc/hypd"
MODEL_VOLUME = "hypd-model"
POOL_DELETION_COST = {True: "1000", False: "-1000"}  # assigned workers go last

# the AWS Load Balancer Controller's annotations for an internet-facing NLB with IP targets
NLB_ANNOTATIONS = {
    "service.beta.kubernetes.io/aws-load-balancer-type": "external",
    "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip",
    "service.beta.kubernetes.io/aws-load-balancer-scheme": "internet-facing",
    "service.beta.kubernetes.io/aws-load-balancer-healthcheck-path": "/health",
}

# pool workers: wait for an assignment, then serve the assigned model (no user text in it)
_POOL_SCRIPT = {
    VLLM: 'until [ "$(cat /etc/hypd/model)" != unassigned ]; do sleep 2; done; '
          'm="$(cat /etc/hypd/model)"; echo "$m" > /tmp/serving; '
          'exec vllm serve "/s3/models/$m" --served-model-name "$m" --port 8000 '
          '--tensor-parallel-size "$HYPD_GPUS"',
    SGLANG: 'until [ "$(cat /etc/hypd/model)" != unassigned ]; do sleep 2; done; '
            'm="$(cat /etc/hypd/model)"; echo "$m" > /tmp/serving; '
            'exec python3 -m sglang.launch_server --model-path "/s3/models/$m" '
            '--served-model-name "$m" --host 0.0.0.0 --port 30000 --tp "$HYPD_GPUS" '
            '--enable-metrics',
}
_STILL_ASSIGNED = ('test ! -f /tmp/serving || '
                   'test "$(cat /etc/hypd/model)" = "$(cat /tmp/serving)"')



class InferenceError(Invalid):
    """A request the inference builders refuse as asked (422 validation_failed)."""


@dataclass(frozen=True)
class Autoscaling:
    min: int
    max: int
    target: float = 8.0
    """Load per server the autoscaler aims at (SGLang: running plus waiting requests)."""


@dataclass(frozen=True)
class Endpoint:
    """One endpoint as the route accepted it (the names are checked there)."""

    name: str
    kind: str
    model: str
    gpus: int
    namespace: str = storage.DEFAULT_NAMESPACE
    replicas: int = 1
    instance_type: str | None = None
    image: str | None = None
    port: int | None = None
    args: tuple[str, ...] = ()
    service: str = IN_CLUSTER
    pool_models: tuple[str, ...] = ()
    routing: str | None = None
    kv_cache_l2: bool = False
    autoscaling: Autoscaling | None = None
    claim: str = storage.DEFAULT_CLAIM

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Endpoint:
        auto = params.get("autoscaling")
        return cls(
            name=params["name"], kind=params["kind"], model=params["model"],
            gpus=params["gpus"], namespace=params.get("namespace") or storage.DEFAULT_NAMESPACE,
            replicas=params.get("replicas", 1), instance_type=params.get("instance_type"),
            image=params.get("image"), port=params.get("port"),
            args=tuple(params.get("args") or ()), service=params.get("service") or IN_CLUSTER,
            pool_models=tuple(params.get("pool_models") or ()), routing=params.get("routing"),
            kv_cache_l2=bool(params.get("kv_cache_l2")),
            autoscaling=Autoscaling(**auto) if auto else None,
            claim=params.get("claim") or storage.DEFAULT_CLAIM)

    def as_params(self) -> dict[str, Any]:
        out = asdict(self)
        out["args"], out["pool_models"] = list(self.args), list(self.pool_models)
        return out

    def changed(self, changes: Mapping[str, Any]) -> Endpoint:
        """This endpoint with an explicit diff's fields (replicas, autoscaling bounds,
        routing) applied."""
        updated = self
        if "replicas" in changes:
            updated = replace(updated, replicas=changes["replicas"])
        if "routing" in changes:
            updated = replace(updated, routing=changes["routing"])
        if "autoscaling" in changes:
            auto = changes["autoscaling"]
            base = asdict(updated.autoscaling) if updated.autoscaling else {}
            updated = replace(updated, autoscaling=Autoscaling(**{**base, **auto})
                              if auto is not None else None)
        return updated

    @property
    def server_port(self) -> int:
        return self.port or PORTS[self.kind]

    @property
    def routed(self) -> bool:
        """SGLang with several servers (or autoscaled) gets the router in front."""
        return self.kind == SGLANG and self.service != POOL and (
            self.replicas > 1 or self.autoscaling is not None)


def fit_asks(ep: Endpoint, fields: Iterable[str] | None = None) -> list[fit.Ask]:
    """What the endpoint's model servers ask of the cluster (cloud.fit): `replicas` servers
    of `gpus` GPUs each, on nodes of its instance type when it names one (a managed
    endpoint always does), and as many at its autoscaling maximum. `fields`: only the asks
    of these request fields (a change checks what it changes)."""
    per_replica = {fit.GPU: float(ep.gpus)}
    asks = [fit.Ask(ep.replicas, per_replica, "replicas", "replicas",
                    instance_type=ep.instance_type)]
    if ep.autoscaling is not None:
        asks.append(fit.Ask(ep.autoscaling.max, per_replica, "autoscaling.max",
                            "replicas at the autoscaling maximum",
                            instance_type=ep.instance_type))
    wanted = None if fields is None else set(fields)
    return [a for a in asks if wanted is None or a.field in wanted]


def check_name(value: str, what: str, limit: int = 63) -> str:
    if not isinstance(value, str) or len(value) > limit or not patterns.DNS_LABEL.fullmatch(value):
        raise InferenceError(f"{what} {value!r} must be a DNS label (lowercase letters, digits "
                             f"and hyphens, at most {limit} characters)")
    return value


def _labels(ep: Endpoint, role: str | None = None, **extra: str) -> dict[str, str]:
    out = kube.labels({ENDPOINT_LABEL: ep.name})
    if role:
        out[ROLE_LABEL] = role
    out.update(extra)
    return out


def _meta(ep: Endpoint, name: str, role: str | None = None,
          **extra: str) -> dict[str, Any]:
    return {"name": name, "namespace": ep.namespace, "labels": _labels(ep, role, **extra)}


def spec_annotation(ep: Endpoint) -> dict[str, str]:
    return {SPEC_ANNOTATION: json.dumps(ep.as_params(), sort_keys=True)}


def stored_spec(obj: Mapping[str, Any]) -> Endpoint | None:
    raw = ((obj.get("metadata") or {}).get("annotations") or {}).get(SPEC_ANNOTATION)
    if not raw:
        return None
    try:
        return Endpoint.from_params(json.loads(raw))
    except (ValueError, KeyError, TypeError):
        return None


# -- managed: the inference operator's InferenceEndpointConfig ---------------------------------

def endpoint_config(ep: Endpoint, bucket: str, region: str) -> dict[str, Any]:
    """The InferenceEndpointConfig (inference.sagemaker.aws.amazon.com/v1)."""
    port = ep.server_port
    gpus = {fit.GPU: str(ep.gpus)}
    spec: dict[str, Any] = {
        "modelName": ep.model,
        "endpointName": ep.name,
        "instanceType": ep.instance_type,
        "invocationEndpoint": INVOKE_PATH,
        "replicas": ep.replicas,
        "modelSourceConfig": {"modelSourceType": "s3",
                              "s3Storage": {"bucketName": bucket, "region": region},
                              "modelLocation": f"models/{ep.model}"},
        "worker": {
            "image": ep.image or MANAGED_IMAGE.format(region=region),
            "resources": {"limits": dict(gpus), "requests": dict(gpus)},
            "modelInvocationPort": {"containerPort": port, "name": PORT_NAME},
            "modelVolumeMount": {"name": "model-weights", "mountPath": "/opt/ml/model"},
            "environmentVariables": [
                {"name": "OPTION_ROLLING_BATCH", "value": "vllm"},
                {"name": "OPTION_TENSOR_PARALLEL_DEGREE", "value": str(ep.gpus)},
                {"name": "SERVING_FAIL_FAST", "value": "true"},
            ],
        },
        # managed tiered KV cache: the CPU tier always, HyperPod's tiered storage as L2
        "kvCacheSpec": {"enableL1Cache": True, "enableL2Cache": ep.kv_cache_l2},
        "intelligentRoutingSpec": {"enabled": True,
                                   "routingStrategy": ep.routing or "prefixaware"},
    }
    if ep.kv_cache_l2:
        spec["kvCacheSpec"]["l2CacheSpec"] = {"l2CacheBackend": "tieredstorage"}
    if ep.autoscaling is not None:
        spec["autoScalingSpec"] = {
            "minReplicaCount": ep.autoscaling.min,
            "maxReplicaCount": ep.autoscaling.max,
            "cloudWatchTrigger": {
                "name": f"hypd-{ep.name}-invocations",
                "namespace": "AWS/SageMaker",
                "metricName": "Invocations",
                "dimensions": [{"name": "EndpointName", "value": ep.name},
                               {"name": "VariantName", "value": "AllTraffic"}],
                "metricStat": "Sum",
                "metricType": "Average",
                "targetValue": ep.autoscaling.target,
                "metricCollectionPeriod": 30,
            },
        }
    meta = _meta(ep, ep.name)
    meta["annotations"] = spec_annotation(ep)
    return {"apiVersion": IEC_API, "kind": IEC_KIND, "metadata": meta, "spec": spec}


# -- self-managed: the model servers -----------------------------------------------------------

def _server_command(ep: Endpoint) -> list[str] | None:
    path = f"{MODEL_DIR}/{ep.model}"
    port = str(ep.server_port)
    if ep.kind == VLLM:
        return ["vllm", "serve", path, "--served-model-name", ep.model, "--port", port,
                "--tensor-parallel-size", str(ep.gpus), *ep.args]
    if ep.kind == SGLANG:
        return ["python3", "-m", "sglang.launch_server", "--model-path", path,
                "--served-model-name", ep.model, "--host", "0.0.0.0", "--port", port,
                "--tp", str(ep.gpus), "--enable-metrics", *ep.args]
    return None  # custom: the image's own entrypoint, with the user's args


def _server_container(ep: Endpoint) -> dict[str, Any]:
    gpus = {fit.GPU: str(ep.gpus)}
    port = ep.server_port
    container: dict[str, Any] = {
        "name": "server",
        "image": ep.image or IMAGES[ep.kind],
        "ports": [{"name": PORT_NAME, "containerPort": port, "protocol": "TCP"}],
        "env": [{"name": "HYPD_MODEL_PATH", "value": f"{MODEL_DIR}/{ep.model}"},
                {"name": "HYPD_GPUS", "value": str(ep.gpus)}],
        "resources": {"limits": dict(gpus), "requests": dict(gpus)},
        "readinessProbe": {"httpGet": {"path": "/health", "port": port},
                           "initialDelaySeconds": 30, "periodSeconds": 10,
                           "failureThreshold": 3},
        "livenessProbe": {"httpGet": {"path": "/health", "port": port},
                          "initialDelaySeconds": 900, "periodSeconds": 30,
                          "failureThreshold": 5},
        "volumeMounts": [storage.volume_mount(), {"name": "dshm", "mountPath": "/dev/shm"}],
    }
    command = _server_command(ep)
    if ep.service == POOL:
        container["command"] = ["sh", "-c", _POOL_SCRIPT[ep.kind]]
        container["livenessProbe"] = {"exec": {"command": ["sh", "-c", _STILL_ASSIGNED]},
                                      "periodSeconds": 10, "failureThreshold": 1}
        container["volumeMounts"].append({"name": MODEL_VOLUME, "mountPath": MODEL_FILE_DIR,
                                          "readOnly": True})
    elif command is not None:
        container["command"] = command
    elif ep.args:
        container["args"] = list(ep.args)
    return container


def _pod_spec(ep: Endpoint, containers: list[dict[str, Any]],
              service_account: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": containers,
        "volumes": [storage.pod_volume(ep.claim),
                    {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}],
        "terminationGracePeriodSeconds": 30,
    }
    if ep.instance_type:
        spec["nodeSelector"] = {"node.kubernetes.io/instance-type": ep.instance_type}
    if service_account:
        spec["serviceAccountName"] = service_account
    return spec


def server_deployment(ep: Endpoint) -> dict[str, Any]:
    selector = {ENDPOINT_LABEL: ep.name, ROLE_LABEL: SERVER}
    pod_labels = dict(selector)
    spec = _pod_spec(ep, [_server_container(ep)])
    if ep.service == POOL:
        pod_labels[MODEL_LABEL] = UNASSIGNED  # outside the selector: reassignable
        spec["volumes"].append({"name": MODEL_VOLUME, "downwardAPI": {"items": [
            {"path": "model", "fieldRef": {"fieldPath": f"metadata.labels['{MODEL_LABEL}']"}}]}})
    meta = _meta(ep, ep.name, SERVER)
    meta["annotations"] = spec_annotation(ep)
    deployment: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
        "spec": {"selector": {"matchLabels": selector},
                 "strategy": {"type": "RollingUpdate",
                              "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
                 "template": {"metadata": {"labels": pod_labels}, "spec": spec}},
    }
    if ep.autoscaling is None:  # else KEDA owns replicas (server-side apply leaves them)
        deployment["spec"]["replicas"] = ep.replicas
    return deployment


def _service(ep: Endpoint, name: str, selector: dict[str, str], target: int,
             role: str | None = None, external: bool = False, **extra: str) -> dict[str, Any]:
    meta = _meta(ep, name, role, **extra)
    spec: dict[str, Any] = {"selector": selector, "ports": [
        {"name": PORT_NAME, "port": SERVICE_PORT, "targetPort": target, "protocol": "TCP"}]}
    if external:
        meta["annotations"] = dict(NLB_ANNOTATIONS)
        spec["type"] = "LoadBalancer"
        spec["loadBalancerClass"] = "service.k8s.aws/nlb"
    else:
        spec["type"] = "ClusterIP"
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}


def pool_service_name(ep: Endpoint, model: str) -> str:
    return f"{ep.name}-{model}"


def services(ep: Endpoint) -> list[dict[str, Any]]:
    """The endpoint's Services: one in front (the router's when routed, with the in-cluster
    Service of its load reader beside it), or one binding Service per pool model."""
    if ep.service == POOL:
        return [_service(ep, pool_service_name(ep, m),
                         {ENDPOINT_LABEL: ep.name, ROLE_LABEL: SERVER, MODEL_LABEL: m},
                         ep.server_port, **{MODEL_LABEL: m}) for m in ep.pool_models]
    if ep.routed:
        selector = {ENDPOINT_LABEL: ep.name, ROLE_LABEL: ROUTER}
        front = _service(ep, ep.name, selector, ROUTER_PORT, ROUTER,
                         ep.service == LOAD_BALANCER)
        # the load reader's port stays in the cluster (the front may be an internet-facing NLB)
        load = _service(ep, router_name(ep), selector, LOAD_PORT, ROUTER)
        load["spec"]["ports"] = [{"name": "load", "port": LOAD_PORT, "targetPort": LOAD_PORT,
                                  "protocol": "TCP"}]
        return [front, load]
    return [_service(ep, ep.name, {ENDPOINT_LABEL: ep.name, ROLE_LABEL: SERVER},
                     ep.server_port, SERVER, ep.service == LOAD_BALANCER)]


def front_service(ep: Endpoint, model: str | None = None) -> str:
    """The Service an invocation goes to: the endpoint's own, or a pool model's."""
    return pool_service_name(ep, model) if ep.service == POOL and model else ep.name


OPERATOR_COMPLETE, OPERATOR_FAILED = "DeploymentComplete", "DeploymentFailed"


def operator_state(config: Mapping[str, Any]) -> str | None:
    """The inference operator's word on an InferenceEndpointConfig (`status.state`, else
    `status.deploymentStatus.deploymentObjectOverallState`, which the HyperPod CLI shows):
    DeploymentPending, DeploymentInProgress, DeploymentComplete, DeploymentFailed, …; None
    before it has written one — or when it wrote it for an older generation of the spec."""
    status = config.get("status") or {}
    generation = (config.get("metadata") or {}).get("generation")
    observed = status.get("observedGeneration")
    if generation is not None and observed is not None and observed < generation:
        return None
    return status.get("state") or (status.get("deploymentStatus") or {}).get(
        "deploymentObjectOverallState")


def operator_service(api: Any, config: Mapping[str, Any]) -> tuple[str, str] | None:
    """The Service the inference operator made for an InferenceEndpointConfig, and its port
    to the model server: (name, port). AWS does not document the Service's name, so it is
    found the way Kubernetes links them — the Service whose controller is this config (its
    ownerReference names the config's uid) — in the config's namespace, never by a naming
    rule. None until the operator has made it."""
    md = config.get("metadata") or {}
    uid, namespace = md.get("uid"), md.get("namespace")
    worker = (config.get("spec") or {}).get("worker") or {}
    invocation = worker.get("modelInvocationPort") or {}
    targets = {invocation.get("name"), invocation.get("containerPort"),
               str(invocation.get("containerPort"))} - {None}
    for service in kube.list_objects(api, "v1", "Service", namespace):
        refs = (service.get("metadata") or {}).get("ownerReferences") or []
        if not any(r.get("uid") == uid and r.get("controller") and r.get("kind") == IEC_KIND
                   for r in refs):
            continue
        for port in (service.get("spec") or {}).get("ports") or []:
            if port.get("targetPort", port.get("port")) in targets:
                return service["metadata"]["name"], str(port.get("name") or port["port"])
    return None


# -- the SGLang router and KEDA ------------------------------------------------------------------

def router_name(ep: Endpoint) -> str:
    return f"{ep.name}-router"


def load_program() -> str:
    """The load reader's source, as it is mounted into the router's pod."""
    return Path(sglang_load.__file__).read_text(encoding="utf-8")


def load_url(ep: Endpoint) -> str:
    """Where KEDA reads the endpoint's load (the load reader's in-cluster Service)."""
    return (f"http://{router_name(ep)}.{ep.namespace}.svc.cluster.local:{LOAD_PORT}"
            f"/{LOAD_PATH}")


def _load_container() -> dict[str, Any]:
    """hypd's load reader, on the router's image (its Python) with the program mounted."""
    return {
        "name": "load", "image": IMAGES[ROUTER],
        "command": ["python3", f"{LOAD_DIR}/{LOAD_FILE}",
                    "--router", f"http://127.0.0.1:{ROUTER_PORT}",
                    "--port", str(LOAD_PORT)],
        "ports": [{"name": "load", "containerPort": LOAD_PORT, "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
        "volumeMounts": [{"name": "load", "mountPath": LOAD_DIR, "readOnly": True}],
    }


def router_objects(ep: Endpoint) -> list[dict[str, Any]]:
    """The router's service account and its right to find its workers (pods, in this
    namespace), the load reader's program (a ConfigMap), and the router's Deployment:
    cache-aware routing over the endpoint's servers, and the load reader beside it."""
    name = router_name(ep)
    program = load_program()
    config = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": _meta(ep, f"{name}-load", ROUTER), "data": {LOAD_FILE: program}}
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(ep, name, ROUTER)}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": _meta(ep, name, ROUTER),
            "rules": [{"apiGroups": [""], "resources": ["pods"],
                       "verbs": ["get", "list", "watch"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": _meta(ep, name, ROUTER),
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                           "name": name},
               "subjects": [{"kind": "ServiceAccount", "name": name,
                             "namespace": ep.namespace}]}
    container = {
        "name": "router", "image": IMAGES[ROUTER],
        "command": ["python3", "-m", "sglang_router.launch_router",
                    "--host", "0.0.0.0", "--port", str(ROUTER_PORT),
                    "--policy", ep.routing or "cache_aware",
                    "--service-discovery", "--selector", f"{ENDPOINT_LABEL}={ep.name}",
                    f"{ROLE_LABEL}={SERVER}",
                    "--service-discovery-namespace", ep.namespace,
                    "--service-discovery-port", str(ep.server_port),
                    "--prometheus-host", "0.0.0.0",
                    "--prometheus-port", str(ROUTER_METRICS_PORT)],
        "ports": [{"name": PORT_NAME, "containerPort": ROUTER_PORT, "protocol": "TCP"},
                  {"name": "metrics", "containerPort": ROUTER_METRICS_PORT, "protocol": "TCP"}],
        "readinessProbe": {"httpGet": {"path": "/health", "port": ROUTER_PORT},
                           "periodSeconds": 10},
        "resources": {"requests": {"cpu": "1", "memory": "2Gi"}},
    }
    selector = {ENDPOINT_LABEL: ep.name, ROLE_LABEL: ROUTER}
    digest = hashlib.sha256(program.encode()).hexdigest()
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(ep, name, ROUTER),
        "spec": {"replicas": 1, "selector": {"matchLabels": selector},
                 "template": {"metadata": {"labels": dict(selector),
                                           "annotations": {LOAD_ANNOTATION: digest}},
                              "spec": {"serviceAccountName": name,
                                       "containers": [container, _load_container()],
                                       "volumes": [{"name": "load", "configMap": {
                                           "name": config["metadata"]["name"]}}]}}},
    }
    return [config, account, role, binding, deployment]


def scaled_object(ep: Endpoint) -> dict[str, Any]:
    """KEDA's ScaledObject (fields KEDA 2.17 knows): the servers between the autoscaling
    bounds, on the total load of the servers (running plus waiting requests) read from
    hypd's load reader, with `metricType: AverageValue` — the HPA divides that total by the
    target once (desired = ceil(total / target)), so the target is one server's load.

    Why not something simpler (sources read for KEDA 2.17, which HyperPod's chart pins):

    - KEDA 2.17's metrics-api scaler with `format: prometheus` (kedacore/keda v2.17.2, the
      version hypd installs: pkg/scalers/metrics_api_scaler.go
      `getValueFromPrometheusResponse`, lines 266-339) parses `valueLocation` as a
      metric selector, keeps the series whose labels equal the selector's (matcher types
      ignored) and returns the first one: no sum. Its JSON and YAML paths (gjson v1.18.0,
      go.mod line 90; gjson.go lines 2912-2930: the modifiers are pretty … dig, no
      arithmetic) cannot add either. Summing across endpoints
      (`aggregateFromKubeServiceEndpoints`) came in KEDA 2.19.
    - The router's `sgl_router_running_requests` is one gauge per worker, labelled
      `worker` (sgl-project/sglang sgl-router/src/metrics.rs `set_running_requests`), set
      only when the policy is cache_aware (sgl-router/src/routers/router.rs:
      `if self.policy.name() == "cache_aware"`), and a removed worker's series stays with
      its last value (the exporter has no idle timeout; the decrement looks the worker up
      and finds it gone). KEDA would read one worker's stale or live count; AverageValue
      would then divide that one server's load by the replicas a second time. The router
      publishes no total running gauge (`sgl_router_max_load`/`min_load` are set only
      when its load is imbalanced; `sgl_router_requests_total` is a counter).
    - The servers' own load (`sglang:num_running_reqs`, or `/get_load`) is per server, and
      a URL through their Service reaches one random server per poll; under cache-aware
      routing servers differ by up to the router's balance threshold, so one sample is noise.
    - KEDA's `prometheus` scaler would sum, but hypd's clusters run no Prometheus server
      (HyperPod observability writes to Amazon Managed Prometheus, a toggle hypd does not
      require, and KEDA would need its own SigV4 identity to query it).

    So the sum is made beside the router: cloud/incluster/sglang_load.py asks the router for
    its workers (`/list_workers`) and each server for `/get_load` (`num_reqs`: running plus
    waiting, counted when asked, whatever the policy) and serves the total as JSON on an
    in-cluster Service. A scaled-to-zero endpoint has no server to read: min 0 is refused
    for SGLang (schemas/endpoints.py)."""
    if ep.autoscaling is None:
        raise ValueError("the endpoint has no autoscaling")
    return {
        "apiVersion": KEDA_API, "kind": SCALED_OBJECT, "metadata": _meta(ep, ep.name),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                               "name": ep.name},
            "minReplicaCount": ep.autoscaling.min,
            "maxReplicaCount": ep.autoscaling.max,
            "pollingInterval": 15,
            "cooldownPeriod": 300,
            "triggers": [{
                "type": "metrics-api",
                "name": "servers-load",
                "metricType": "AverageValue",
                "metadata": {"url": load_url(ep), "format": "json", "valueLocation": "load",
                             "targetValue": str(ep.autoscaling.target)},
            }],
        },
    }


# -- the whole endpoint -------------------------------------------------------------------------

@dataclass(frozen=True)
class Objects:
    """What an endpoint is made of, in the order to apply them."""

    main: list[dict[str, Any]] = field(default_factory=list)
    services: list[dict[str, Any]] = field(default_factory=list)
    router: list[dict[str, Any]] = field(default_factory=list)
    autoscaler: list[dict[str, Any]] = field(default_factory=list)

    def all(self) -> list[dict[str, Any]]:
        return [*self.main, *self.router, *self.services, *self.autoscaler]


def objects(ep: Endpoint, bucket: str, region: str) -> Objects:
    if ep.kind == MANAGED:
        return Objects(main=[endpoint_config(ep, bucket, region)])
    return Objects(
        main=[server_deployment(ep)], services=services(ep),
        router=router_objects(ep) if ep.routed else [],
        autoscaler=[scaled_object(ep)] if ep.routed and ep.autoscaling else [])


KINDS_OWNED = (("apps/v1", "Deployment"), ("v1", "Service"), ("v1", "ServiceAccount"),
               ("v1", "ConfigMap"),
               ("rbac.authorization.k8s.io/v1", "Role"),
               ("rbac.authorization.k8s.io/v1", "RoleBinding"), (KEDA_API, SCALED_OBJECT),
               (IEC_API, IEC_KIND))
"""Every kind an endpoint may have objects of (what a delete looks for)."""


def owned(api: Any, namespace: str | None, name: str | None = None
          ) -> list[dict[str, Any]]:
    """The objects hypd made for endpoints (one endpoint when `name` is given)."""
    selector = f"{ENDPOINT_LABEL}={name}" if name else ENDPOINT_LABEL
    selector += f",{kube.MANAGED_BY_LABEL}={kube.MANAGED_BY_VALUE}"
    found = []
    for api_version, kind in KINDS_OWNED:
        found.extend(kube.list_objects(api, api_version, kind, namespace, selector))
    return found


def stored(api: Any, name: str) -> Endpoint | None:
    """The endpoint `name` as the cluster holds it (its request, kept on its main object: the
    servers' Deployment or the InferenceEndpointConfig), in whichever namespace it is."""
    selector = f"{ENDPOINT_LABEL}={name},{kube.MANAGED_BY_LABEL}={kube.MANAGED_BY_VALUE}"
    for api_version, kind in (("apps/v1", "Deployment"), (IEC_API, IEC_KIND)):
        for obj in kube.list_objects(api, api_version, kind, None, selector):
            found = stored_spec(obj)
            if found is not None:
                return found
    return None


def pool_workers(api: Any, ep: Endpoint) -> list[dict[str, Any]]:
    """The pool's workers (pods), oldest first."""
    pods = kube.list_objects(api, "v1", "Pod", ep.namespace,
                             {ENDPOINT_LABEL: ep.name, ROLE_LABEL: SERVER})
    live = [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
    return sorted(live, key=lambda p: ((p.get("metadata") or {}).get("creationTimestamp") or "",
                                       p["metadata"]["name"]))


def worker_model(pod: Mapping[str, Any]) -> str:
    return ((pod.get("metadata") or {}).get("labels") or {}).get(MODEL_LABEL) or UNASSIGNED
