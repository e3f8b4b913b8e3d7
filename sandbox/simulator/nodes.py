"""Plays the node agents that are not there: HyperPod instances become Kubernetes Nodes.

On EKS, a HyperPod instance boots, its kubelet registers a Node named `hyperpod-<instance id>`
in the cluster's Kubernetes, and HyperPod's health-monitoring agent keeps its health labels
current. The SageMaker gap tells the simulator when an instance's state changes; the simulator
writes what the kubelet and the agent would write — labels, taints and `status` — into the
local Kubernetes of the HyperPod cluster's EKS cluster (`app.kubes.ensure(eks_name)`), and
leaves every other field alone: labels and taints someone else put on a Node survive.

Labels (AWS's "Resilience-related Kubernetes labels by SageMaker HyperPod" and the usual
kubelet labels): `sagemaker.amazonaws.com/compute-type: hyperpod`,
`sagemaker.amazonaws.com/instance-group-name`, `sagemaker.amazonaws.com/node-health-status`
(`Schedulable`, `Unschedulable` while deep health checks run, `UnschedulablePendingReboot`,
`UnschedulablePendingReplacement`), `sagemaker.amazonaws.com/deep-health-check-status`
(`InProgress`, `Passed`; only on groups with on-start deep health checks),
`node.kubernetes.io/instance-type` (with the `ml.` prefix), `topology.kubernetes.io/zone` and
`/region`, `topology.k8s.aws/zone-id`, `kubernetes.io/hostname`, `kubernetes.io/os`,
`kubernetes.io/arch`, plus the instance group's `KubernetesConfig.Labels`.

Capacity comes from moto's copy of EC2's instance-type data (vCPUs, memory, GPUs, EFA
interfaces, Neuron devices); pods per node are those of one network interface, as on HyperPod.
"""

from __future__ import annotations

import copy
import logging
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

log = logging.getLogger(__name__)

LABEL_COMPUTE_TYPE = "sagemaker.amazonaws.com/compute-type"
LABEL_INSTANCE_GROUP = "sagemaker.amazonaws.com/instance-group-name"
LABEL_HEALTH = "sagemaker.amazonaws.com/node-health-status"
LABEL_DEEP_HEALTH_CHECK = "sagemaker.amazonaws.com/deep-health-check-status"
LABEL_INSTANCE_TYPE = "node.kubernetes.io/instance-type"
LABEL_INSTANCE_TYPE_BETA = "beta.kubernetes.io/instance-type"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"
LABEL_ZONE_ID = "topology.k8s.aws/zone-id"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_OS = "kubernetes.io/os"
LABEL_ARCH = "kubernetes.io/arch"
COMPUTE_TYPE = "hyperpod"

# The health agent's taint while a node must not take work, and the node lifecycle
# controller's while the kubelet is not ready.
TAINT_HEALTH = LABEL_HEALTH
TAINT_NOT_READY = "node.kubernetes.io/not-ready"

RESOURCE_GPU = "nvidia.com/gpu"
RESOURCE_EFA = "vpc.amazonaws.com/efa"
RESOURCE_NEURON = "aws.amazon.com/neuron"
RESOURCE_NEURON_CORE = "aws.amazon.com/neuroncore"


class Health(StrEnum):
    """Values of `sagemaker.amazonaws.com/node-health-status`."""

    SCHEDULABLE = "Schedulable"
    UNSCHEDULABLE = "Unschedulable"
    PENDING_REBOOT = "UnschedulablePendingReboot"
    PENDING_REPLACEMENT = "UnschedulablePendingReplacement"


class DeepHealthCheck(StrEnum):
    """Values of `sagemaker.amazonaws.com/deep-health-check-status`."""

    IN_PROGRESS = "InProgress"
    PASSED = "Passed"
    FAILED = "Failed"


@dataclass(frozen=True)
class InstanceInfo:
    """What the kubelet and device plugins report for an instance type."""

    vcpus: int
    memory_mib: int
    gpus: int = 0
    efa_interfaces: int = 0
    neuron_devices: int = 0
    neuron_cores: int = 0
    arch: str = "amd64"
    max_pods: int = 29

    @property
    def accelerated(self) -> bool:
        return self.gpus > 0 or self.neuron_devices > 0


# Types moto's EC2 data does not carry yet (from AWS's published specifications).
_EXTRA_TYPES: dict[str, InstanceInfo] = {
    "p6e-gb200.36xlarge": InstanceInfo(
        vcpus=144, memory_mib=983040, gpus=4, efa_interfaces=17, arch="arm64", max_pods=49
    ),
}


def instance_info(instance_type: str) -> InstanceInfo | None:
    """Capacity of a SageMaker instance type ("ml.p5.48xlarge"), or None if unknown."""
    ec2_type = instance_type.removeprefix("ml.")
    if ec2_type in _EXTRA_TYPES:
        return _EXTRA_TYPES[ec2_type]
    from moto.ec2.models.instance_types import INSTANCE_TYPES

    data = INSTANCE_TYPES.get(ec2_type)
    if not data:
        return None
    gpus = sum(g.get("Count", 0) for g in (data.get("GpuInfo") or {}).get("Gpus", []))
    neuron = (data.get("NeuronInfo") or {}).get("NeuronDevices", [])
    neuron_devices = sum(d.get("Count", 0) for d in neuron)
    neuron_cores = sum(d.get("Count", 0) * d.get("CoreInfo", {}).get("Count", 0) for d in neuron)
    network = data.get("NetworkInfo") or {}
    efa = (network.get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0)
    archs = (data.get("ProcessorInfo") or {}).get("SupportedArchitectures") or ["x86_64"]
    # HyperPod gives an EKS node one network interface for pods: its addresses bound the pods.
    max_pods = max(1, int(network.get("Ipv4AddressesPerInterface", 30)) - 1)
    return InstanceInfo(
        vcpus=int((data.get("VCpuInfo") or {}).get("DefaultVCpus", 2)),
        memory_mib=int((data.get("MemoryInfo") or {}).get("SizeInMiB", 4096)),
        gpus=gpus,
        efa_interfaces=int(efa),
        neuron_devices=neuron_devices,
        neuron_cores=neuron_cores,
        arch="arm64" if "arm64" in archs else "amd64",
        max_pods=max_pods,
    )


@dataclass(frozen=True)
class NodeView:
    """One HyperPod instance as the simulator needs it (a snapshot taken by the gap)."""

    instance_id: str
    instance_type: str
    instance_group: str
    region: str
    zone: str
    zone_id: str
    private_ip: str
    private_dns: str
    health: Health
    ready: bool
    launch_time: datetime
    kubelet_version: str
    deep_health_check: DeepHealthCheck | None = None
    labels: dict[str, str] = field(default_factory=dict)  # KubernetesConfig.Labels
    taints: list[dict[str, str]] = field(default_factory=list)  # KubernetesConfig.Taints
    stale_labels: tuple[str, ...] = ()  # config labels removed since the last write


def node_name(instance_id: str) -> str:
    """The Kubernetes Node name HyperPod gives an instance."""
    return f"hyperpod-{instance_id}"


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _reserved_cpu_m(vcpus: int) -> int:
    """EKS AMI kube-reserved CPU: 6% of core 1, 1% of core 2, 0.5% of cores 3-4, 0.25% above."""
    steps = [(1, 60), (1, 10), (2, 5)]
    reserved, left = 0, vcpus
    for cores, per_core_m in steps:
        used = min(left, cores)
        reserved += used * per_core_m
        left -= used
    return reserved + max(0, left) * 25 // 10


def _resources(info: InstanceInfo) -> tuple[dict[str, str], dict[str, str]]:
    memory_ki = info.memory_mib * 1024
    reserved_memory_ki = (255 + 11 * info.max_pods + 100) * 1024  # kube-reserved + eviction
    capacity = {
        "cpu": str(info.vcpus),
        "memory": f"{memory_ki}Ki",
        "pods": str(info.max_pods),
        "ephemeral-storage": "104845292Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
    }
    allocatable = {
        **capacity,
        "cpu": f"{info.vcpus * 1000 - _reserved_cpu_m(info.vcpus)}m",
        "memory": f"{max(0, memory_ki - reserved_memory_ki)}Ki",
        "ephemeral-storage": "95551679124",
    }
    extended = {
        RESOURCE_GPU: info.gpus,
        RESOURCE_EFA: info.efa_interfaces,
        RESOURCE_NEURON: info.neuron_devices,
        RESOURCE_NEURON_CORE: info.neuron_cores,
    }
    for name, count in extended.items():
        if count:
            capacity[name] = allocatable[name] = str(count)
    return capacity, allocatable


def _conditions(view: NodeView, previous: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    now = _stamp(datetime.now(UTC))
    before = {c.get("type"): c for c in previous or []}

    def condition(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
        old = before.get(kind) or {}
        since = old.get("lastTransitionTime") if old.get("status") == status else None
        return {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": now,
            "lastTransitionTime": since or now,
        }

    ready = (
        condition("Ready", "True", "KubeletReady", "kubelet is posting ready status")
        if view.ready
        else condition("Ready", "False", "KubeletNotReady", "kubelet is not running")
    )
    return [
        condition(
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        condition(
            "DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"
        ),
        condition(
            "PIDPressure",
            "False",
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
        ),
        ready,
    ]


def _managed_labels(view: NodeView, info: InstanceInfo | None) -> dict[str, str]:
    labels = {
        LABEL_COMPUTE_TYPE: COMPUTE_TYPE,
        LABEL_INSTANCE_GROUP: view.instance_group,
        LABEL_HEALTH: str(view.health),
        LABEL_INSTANCE_TYPE: view.instance_type,
        LABEL_INSTANCE_TYPE_BETA: view.instance_type,
        LABEL_ZONE: view.zone,
        LABEL_REGION: view.region,
        LABEL_ZONE_ID: view.zone_id,
        LABEL_HOSTNAME: node_name(view.instance_id),
        LABEL_OS: "linux",
        LABEL_ARCH: info.arch if info else "amd64",
    }
    if view.deep_health_check is not None:
        labels[LABEL_DEEP_HEALTH_CHECK] = str(view.deep_health_check)
    return labels


def _taints(view: NodeView, current: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ours = {TAINT_HEALTH, TAINT_NOT_READY} | {t["Key"] for t in view.taints}
    taints = [t for t in current if t.get("key") not in ours]
    for taint in view.taints:
        item = {"key": taint["Key"], "effect": taint["Effect"]}
        if taint.get("Value"):
            item["value"] = taint["Value"]
        taints.append(item)
    if view.health != Health.SCHEDULABLE:
        taints.append({"key": TAINT_HEALTH, "value": str(view.health), "effect": "NoSchedule"})
    if not view.ready:
        taints.append({"key": TAINT_NOT_READY, "effect": "NoSchedule"})
    return taints


def node_manifest(view: NodeView, existing: dict[str, Any] | None = None) -> dict[str, Any]:
    """The Node as the kubelet and HyperPod's agent leave it, merged into `existing`."""
    info = instance_info(view.instance_type)
    node = copy.deepcopy(existing) if existing else {}
    node["apiVersion"] = "v1"
    node["kind"] = "Node"
    metadata = node.setdefault("metadata", {})
    metadata["name"] = node_name(view.instance_id)
    labels = dict(metadata.get("labels") or {})
    for key in view.stale_labels:
        labels.pop(key, None)
    labels.update(view.labels)
    labels.update(_managed_labels(view, info))
    if view.deep_health_check is None:
        labels.pop(LABEL_DEEP_HEALTH_CHECK, None)
    metadata["labels"] = labels
    spec = node.setdefault("spec", {})
    spec["providerID"] = f"aws:///{view.zone}/{view.instance_id}"
    taints = _taints(view, list(spec.get("taints") or []))
    if taints:
        spec["taints"] = taints
    else:
        spec.pop("taints", None)
    capacity, allocatable = _resources(info or InstanceInfo(vcpus=2, memory_mib=4096))
    previous = (node.get("status") or {}).get("conditions")
    node_info = (node.get("status") or {}).get("nodeInfo") or {}
    node["status"] = {
        "capacity": capacity,
        "allocatable": allocatable,
        "conditions": _conditions(view, previous),
        "addresses": [
            {"type": "InternalIP", "address": view.private_ip},
            {"type": "InternalDNS", "address": view.private_dns},
            {"type": "Hostname", "address": view.private_dns},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "architecture": info.arch if info else "amd64",
            "bootID": node_info.get("bootID") or str(uuid.uuid4()),
            "containerRuntimeVersion": "containerd://1.7.27",
            "kernelVersion": "6.1.141-155.222.amzn2023.x86_64",
            "kubeProxyVersion": view.kubelet_version,
            "kubeletVersion": view.kubelet_version,
            "machineID": node_info.get("machineID") or uuid.uuid4().hex,
            "operatingSystem": "linux",
            "osImage": "Amazon Linux 2023",
            "systemUUID": node_info.get("systemUUID") or str(uuid.uuid4()),
        },
    }
    return node


def _kube(app: Any, eks_cluster: str, start: bool = True) -> Any | None:
    """The EKS cluster's local Kubernetes; with `start=False`, only one already running."""
    kubes = getattr(app, "kubes", None)
    if kubes is None:
        return None
    if not start and hasattr(kubes, "get"):
        return kubes.get(eks_cluster)
    return kubes.ensure(eks_cluster)


def apply_node(app: Any, eks_cluster: str, view: NodeView) -> None:
    """Create or update the Node of one instance in the EKS cluster's local Kubernetes."""
    try:
        kube = _kube(app, eks_cluster)
        if kube is None:
            return
        try:
            existing = kube.get_object("v1", "Node", node_name(view.instance_id))
        except Exception:  # absent (the adapter may raise rather than answer None)
            existing = None
        kube.put_object(node_manifest(view, existing or None))
    except Exception:
        log.exception("simulator: could not write Node for %s in %s", view.instance_id, eks_cluster)


def delete_node(app: Any, eks_cluster: str, instance_id: str) -> None:
    """Remove an instance's Node (the instance was terminated)."""
    try:
        kube = _kube(app, eks_cluster, start=False)
        if kube is None:
            return
        kube.delete_object("v1", "Node", node_name(instance_id))
    except Exception:
        log.debug("simulator: Node of %s in %s was not there", instance_id, eks_cluster)
