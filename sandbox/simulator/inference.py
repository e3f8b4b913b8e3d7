"""The HyperPod inference operator of a local Kubernetes (InferenceEndpointConfig).

The operator is a closed EKS add-on; this module plays what it does inside the cluster, on
top of the workload controllers (`workloads.Workloads`: the Deployment it makes gets its
ReplicaSet and pods) and the scheduler and kubelets (`cluster.ClusterSimulator`: the pods go
to nodes that fit), and only while the add-on's controller Deployment
(`hyperpod-inference-system/hyperpod-inference-operator-controller-manager`) is available —
as the real one does nothing before it is installed.

From each InferenceEndpointConfig (`inference.sagemaker.aws.amazon.com/v1`) it makes:

- a **Deployment** named after the config, controlled by it (ownerReference with
  `controller: true`, so deleting the config deletes it), its pods labelled
  `app=<config name>` — the label AWS's HyperPod CLI finds an endpoint's pods by
  (aws/sagemaker-hyperpod-cli, `src/sagemaker/hyperpod/inference/hp_endpoint.py`,
  `HPEndpoint.list_pods`: a pod belongs to the endpoint whose name its `app` label holds).
  One container from `spec.worker` (image, args, environment, resources, the invocation
  port by its name, the model volume's mount), `spec.replicas` replicas, required node
  affinity on `node.kubernetes.io/instance-type` (`spec.instanceType`, or
  `spec.instanceTypes`);
- a ClusterIP **Service** of the same name, controlled by the config, selecting `app=<name>`,
  its port named as `worker.modelInvocationPort` and targeting it.

AWS does not publish the names of these two objects; a client that must find them (hypd's
invoke route) follows their ownerReference to the config, never a naming rule.

Status, as the CRD's status schema says and the HyperPod CLI reads it (`hyp describe`:
`status.deploymentStatus.deploymentObjectOverallState`, `DeploymentComplete` once served):
`state` and `deploymentStatus.deploymentObjectOverallState` (`DeploymentInProgress` →
`DeploymentComplete` once the Deployment has all its replicas available),
`deploymentStatus.name` / `.status` (the Deployment's own status) / `.lastUpdated` /
`.message`, `replicas`, `selector`, `observedGeneration`.

What its model-server container does is this module's resolver in the cluster's `Programs`
book: it loads the model named by `spec.modelName` and answers OpenAI-compatible requests on
the invocation port (the service proxy reaches it as any model server).

With `spec.endpointName` and the pods serving, it registers the SageMaker endpoint and
writes the TLS certificate (sandbox/simulator/managed_aws.py, on this process's moto, as the
add-on's configuration says): `status.endpoints.sagemaker` (`CreationCompleted`, the ARNs)
and `status.tlsCertificate` — or `DeploymentFailed` with AWS's refusal as the message (an
execution role SageMaker may not assume, a missing bucket, a name another endpoint holds).
It holds such a config with its finalizer until it has deleted them again.

Not played: the ALB Ingress, ACM, the KEDA ScaledObject of `autoScalingSpec`, the S3 volume
(the model volume is an emptyDir), the intelligent-routing and KV-cache sidecars.
"""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING, Any

from sandbox.kube.errors import KubeError
from sandbox.kube.objects import now as stamp
from sandbox.simulator.managed_aws import COMPLETED, ManagedAws, Refused
from sandbox.simulator.programs import SERVER_START_S, Line, ModelServer, Program
from sandbox.simulator.workloads import owner_ref

if TYPE_CHECKING:
    from sandbox.kube.store import Event
    from sandbox.simulator.cluster import ClusterSimulator

log = logging.getLogger(__name__)

IEC = ("inference.sagemaker.aws.amazon.com", "v1", "inferenceendpointconfigs",
       "InferenceEndpointConfig")
OPERATOR = "hyperpod-inference-operator"
OPERATOR_DEPLOYMENT = ("hyperpod-inference-operator-controller-manager",
                       "hyperpod-inference-system")
APP_LABEL = "app"
CONTAINER = "inference-server"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
HEALTH_PATH = "/ping"  # the CRD's default load balancer health check path
IN_PROGRESS, COMPLETE, FAILED = "DeploymentInProgress", "DeploymentComplete", "DeploymentFailed"
FINALIZER = "inference.sagemaker.aws.amazon.com/sagemaker-endpoint"
"""The sandbox's name for the operator's finalizer (AWS publishes none; hypd relies on no
name, only on deletion waiting until the config is gone)."""
_DEPLOYMENT_STATUS_KEYS = ("availableReplicas", "collisionCount", "conditions",
                           "observedGeneration", "readyReplicas", "replicas",
                           "terminatingReplicas", "unavailableReplicas", "updatedReplicas")
"""What the CRD's `deploymentStatus.status` holds of a Deployment's status."""


def _md(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _invocation_port(spec: dict[str, Any]) -> tuple[str, int]:
    port = ((spec.get("worker") or {}).get("modelInvocationPort")) or {}
    return str(port.get("name") or "http"), int(port.get("containerPort") or 8080)


def _instance_types(spec: dict[str, Any]) -> list[str]:
    return [str(t) for t in (spec.get("instanceTypes") or [spec.get("instanceType")]) if t]


def _serving(deployment: dict[str, Any] | None, replicas: int) -> bool:
    """The Deployment has observed its spec and has all its replicas available, updated."""
    observed = (deployment or {}).get("status") or {}
    fresh = observed.get("observedGeneration", 0) >= _md(deployment or {}).get("generation", 1)
    return bool(deployment) and fresh and (observed.get("availableReplicas") or 0) >= \
        replicas and (observed.get("updatedReplicas") or 0) >= replicas


class InferenceOperator:
    """The operator in one cluster (see the module docstring)."""

    def __init__(self, sim: ClusterSimulator) -> None:
        self.sim = sim
        self.aws: ManagedAws | None = None
        """The operator's AWS side (set by the local AWS; None: not played)."""
        sim.programs.register(self.program)

    @staticmethod
    def watches(item: Event) -> bool:
        return (item.group, item.plural) == (IEC[0], IEC[2])

    # --- what its model server does --------------------------------------------------------

    def _config_of(self, pod: dict[str, Any]) -> dict[str, Any] | None:
        name = (_md(pod).get("labels") or {}).get(APP_LABEL)
        if not name:
            return None
        config = self.sim.kube.get_object(f"{IEC[0]}/{IEC[1]}", IEC[3], name,
                                          _md(pod).get("namespace"))
        return config if config and any(
            r.get("kind") == "ReplicaSet" for r in _md(pod).get("ownerReferences") or []) \
            else None

    def program(self, pod: dict[str, Any], container: dict[str, Any]) -> Program | None:
        if container.get("name") != CONTAINER:
            return None
        config = self._config_of(pod)
        if config is None:
            return None
        spec = config.get("spec") or {}
        model = str(spec.get("modelName") or "model")
        _, port = _invocation_port(spec)
        lines = (Line(0.0, f"INFO loading model {model} from /opt/ml/model"),
                 Line(SERVER_START_S, "INFO Model server started."),
                 Line(0.0, f"INFO serving {model} on port {port}"))
        return Program(lines=lines, exit_code=None, serves=ModelServer("lmi", model, port))

    # --- reconciling ------------------------------------------------------------------------

    def _running(self) -> bool:
        found = self.sim.kube.get_object("apps/v1", "Deployment", *OPERATOR_DEPLOYMENT)
        return bool(found and (found.get("status") or {}).get("availableReplicas"))

    def reconcile(self) -> None:
        rt = self.sim.kube.catalog.lookup(IEC[0], IEC[1], IEC[2])
        if rt is None or not self._running():
            return
        configs, _, _, _ = self.sim.kube.store.list(rt, None, lambda _o: True)
        for config in configs:
            if not _md(config).get("deletionTimestamp"):
                self._config(config)
            elif FINALIZER in (_md(config).get("finalizers") or []):
                self._release(config)

    def _endpoint_name(self, config: dict[str, Any]) -> str | None:
        return (config.get("spec") or {}).get("endpointName") or None

    def _release(self, config: dict[str, Any]) -> None:
        """Deleted: what it made in AWS goes, then its finalizer (the config goes after)."""
        md = _md(config)
        if self.aws is not None:
            self.aws.deregister(md.get("namespace") or "default", md["name"],
                                self._endpoint_name(config))
        left = [f for f in md.get("finalizers") or [] if f != FINALIZER]
        self.sim.workloads.patch_object(IEC[0], IEC[2], config,
                                        {"metadata": {"finalizers": left}}, OPERATOR)

    def _hold(self, config: dict[str, Any]) -> None:
        """A config whose endpoint it registers is held until that is deleted again."""
        finalizers = _md(config).get("finalizers") or []
        if self.aws is not None and self._endpoint_name(config) and \
                FINALIZER not in finalizers:
            self.sim.workloads.patch_object(IEC[0], IEC[2], config, {
                "metadata": {"finalizers": [*finalizers, FINALIZER]}}, OPERATOR)

    def _register(self, config: dict[str, Any], serving: bool
                  ) -> tuple[dict[str, Any] | None, str | None]:
        """(what the status shows of the SageMaker endpoint and certificate, a refusal)."""
        name = self._endpoint_name(config)
        if self.aws is None or not name or not serving:
            return None, None
        current = config.get("status") or {}
        if ((current.get("endpoints") or {}).get("sagemaker") or {}).get("state") == COMPLETED:
            return {k: current[k] for k in ("endpoints", "tlsCertificate") if k in current}, None
        md, spec = _md(config), config.get("spec") or {}
        types = _instance_types(spec)
        try:
            return self.aws.register(md.get("namespace") or "default", md["name"], name,
                                     types[0] if types else "",
                                     str((spec.get("worker") or {}).get("image") or "")), None
        except Refused as exc:
            return None, str(exc)

    def _owned(self, api_version: str, kind: str, config: dict[str, Any]
               ) -> dict[str, Any] | None:
        md = _md(config)
        found = self.sim.kube.get_object(api_version, kind, md["name"], md.get("namespace"))
        if found is None:
            return None
        mine = any(r.get("uid") == md.get("uid") and r.get("controller")
                   for r in _md(found).get("ownerReferences") or [])
        return found if mine else None

    def _put(self, obj: dict[str, Any]) -> None:
        try:
            self.sim.kube.store.put(obj, OPERATOR)
        except (KubeError, ValueError) as exc:
            log.info("inference operator: %s %s not made: %s", obj["kind"],
                     obj["metadata"]["name"], exc)

    def _config(self, config: dict[str, Any]) -> None:
        md, spec = _md(config), config.get("spec") or {}
        name, namespace = md["name"], md.get("namespace")
        replicas = int(spec.get("replicas") if spec.get("replicas") is not None else 1)
        deployment = self._owned("apps/v1", "Deployment", config)
        if deployment is None:
            self._put(self._deployment(config, replicas))
        elif (deployment.get("spec") or {}).get("replicas") != replicas:
            self.sim.workloads.patch_object("apps", "deployments", deployment,
                                            {"spec": {"replicas": replicas}}, OPERATOR)
        if self._owned("v1", "Service", config) is None:
            self._put(self._service(config))
        self._hold(config)
        config = self.sim.kube.get_object(f"{IEC[0]}/{IEC[1]}", IEC[3], name, namespace) \
            or config
        deployment = self._owned("apps/v1", "Deployment", config)
        registered, refused = self._register(config, _serving(deployment, replicas))
        self._write_status(config, name, namespace, replicas, deployment, registered, refused)

    def _deployment(self, config: dict[str, Any], replicas: int) -> dict[str, Any]:
        md, spec = _md(config), config.get("spec") or {}
        worker = spec.get("worker") or {}
        port_name, port = _invocation_port(spec)
        mount = worker.get("modelVolumeMount") or {"name": "model-weights",
                                                   "mountPath": "/opt/ml/model"}
        container: dict[str, Any] = {
            "name": CONTAINER, "image": worker.get("image"),
            "ports": [{"name": port_name, "containerPort": port, "protocol": "TCP"}],
            "resources": copy.deepcopy(worker.get("resources") or {}),
            "volumeMounts": [{"name": mount["name"], "mountPath": mount["mountPath"]}],
            "readinessProbe": {"httpGet": {"path": HEALTH_PATH, "port": port},
                               "initialDelaySeconds": SERVER_START_S, "periodSeconds": 10},
        }
        if worker.get("args"):
            container["args"] = list(worker["args"])
        if worker.get("environmentVariables"):
            container["env"] = [dict(e) for e in worker["environmentVariables"]]
        labels = {APP_LABEL: md["name"]}
        pod_spec: dict[str, Any] = {
            "containers": [container],
            "volumes": [{"name": mount["name"], "emptyDir": {}}],
        }
        types = _instance_types(spec)
        if types:
            pod_spec["affinity"] = {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": INSTANCE_TYPE_LABEL, "operator": "In",
                                           "values": types}]}]}}}
        return {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": md["name"], "namespace": md.get("namespace"),
                         "labels": dict(labels), "ownerReferences": [owner_ref(config)]},
            "spec": {"replicas": replicas, "selector": {"matchLabels": dict(labels)},
                     "template": {"metadata": {"labels": dict(labels)}, "spec": pod_spec}},
        }

    def _service(self, config: dict[str, Any]) -> dict[str, Any]:
        md = _md(config)
        port_name, port = _invocation_port(config.get("spec") or {})
        return {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": md["name"], "namespace": md.get("namespace"),
                         "labels": {APP_LABEL: md["name"]},
                         "ownerReferences": [owner_ref(config)]},
            "spec": {"type": "ClusterIP", "selector": {APP_LABEL: md["name"]},
                     "ports": [{"name": port_name, "port": port, "targetPort": port_name,
                                "protocol": "TCP"}]},
        }

    def _write_status(self, config: dict[str, Any], name: str, namespace: str | None,
                      replicas: int, deployment: dict[str, Any] | None,
                      registered: dict[str, Any] | None = None,
                      refused: str | None = None) -> None:
        md = _md(config)
        current = config.get("status") or {}
        observed = (deployment or {}).get("status") or {}
        available = observed.get("availableReplicas") or 0
        complete = _serving(deployment, replicas) and (
            registered is not None or not (self.aws and self._endpoint_name(config)))
        state = FAILED if refused else COMPLETE if complete else IN_PROGRESS
        before = current.get("deploymentStatus") or {}
        inner = {k: copy.deepcopy(observed[k]) for k in _DEPLOYMENT_STATUS_KEYS if k in observed}
        details = {
            "name": name, "deploymentObjectOverallState": state, "status": inner,
            "message": refused or f"Deployment {namespace}/{name}: {available} of {replicas} "
                                  "replicas available",
        }
        if refused:
            details["reason"] = "SageMakerEndpointCreationFailed"
        status = {"observedGeneration": md.get("generation", 1),
                  "replicas": observed.get("replicas") or 0,
                  "selector": f"{APP_LABEL}={name}", "state": state,
                  "deploymentStatus": {**details, "lastUpdated": before.get("lastUpdated")},
                  **(registered or {})}
        if current == status:
            return
        status["deploymentStatus"]["lastUpdated"] = stamp()
        self.sim.workloads.replace_status(IEC[0], IEC[2], config, status, OPERATOR)
