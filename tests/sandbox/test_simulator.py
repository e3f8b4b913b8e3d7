"""HyperPod instances become Kubernetes Nodes with HyperPod's labels, taints and status."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.config import Config

from sandbox import simulator
from sandbox.control import SandboxControl
from sandbox.local_aws import LocalAws
from sandbox.simulator import (
    LABEL_DEEP_HEALTH_CHECK,
    LABEL_HEALTH,
    LABEL_INSTANCE_GROUP,
    DeepHealthCheck,
    Health,
    NodeView,
    instance_info,
    node_manifest,
)
from tests.sandbox.hyperpodkit import Lab, cluster_request, gpu_group, make_lab, nodes, wait_for


class FakeKube:
    """The four calls the simulator makes on a local Kubernetes, kept in a dict."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}

    def put_object(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.objects[(obj["kind"], obj["metadata"]["name"])] = copy.deepcopy(obj)
        return obj

    def get_object(self, api_version: str, kind: str, name: str,
                   namespace: str | None = None) -> dict[str, Any] | None:
        found = self.objects.get((kind, name))
        return copy.deepcopy(found) if found else None

    def delete_object(self, api_version: str, kind: str, name: str,
                      namespace: str | None = None) -> bool:
        return self.objects.pop((kind, name), None) is not None

    def list_objects(self, api_version: str, kind: str, namespace: str | None = None,
                     label_selector: str | None = None) -> list[dict[str, Any]]:
        return [copy.deepcopy(o) for (k, _), o in self.objects.items() if k == kind]

    def node(self, instance_id: str) -> dict[str, Any] | None:
        return self.get_object("v1", "Node", simulator.node_name(instance_id))


class FakeKubes:
    def __init__(self) -> None:
        self.kubes: dict[str, FakeKube] = {}

    def ensure(self, name: str) -> FakeKube:
        return self.kubes.setdefault(name, FakeKube())


# --- the Node a kubelet and HyperPod's agent write -----------------------------------------


def _view(**overrides: Any) -> NodeView:
    values: dict[str, Any] = {
        "instance_id": "i-0123456789abcdef0",
        "instance_type": "ml.p5.48xlarge",
        "instance_group": "gpu",
        "region": "us-west-2",
        "zone": "us-west-2b",
        "zone_id": "usw2-az1",
        "private_ip": "10.1.16.4",
        "private_dns": "ip-10-1-16-4.us-west-2.compute.internal",
        "health": Health.SCHEDULABLE,
        "ready": True,
        "launch_time": datetime.now(UTC),
        "kubelet_version": "v1.32.0-eks-hypd",
    }
    values.update(overrides)
    return NodeView(**values)


def test_capacity_comes_from_the_instance_type() -> None:
    p5 = instance_info("ml.p5.48xlarge")
    assert p5 is not None
    assert (p5.vcpus, p5.gpus, p5.efa_interfaces, p5.max_pods) == (192, 8, 32, 49)
    trn1 = instance_info("ml.trn1.32xlarge")
    assert trn1 is not None
    assert (trn1.gpus, trn1.neuron_devices, trn1.neuron_cores, trn1.efa_interfaces) == (
        0, 16, 32, 8)
    cpu = instance_info("ml.m5.2xlarge")
    assert cpu is not None and not cpu.accelerated
    assert instance_info("ml.p6e-gb200.36xlarge").arch == "arm64"  # type: ignore[union-attr]
    assert instance_info("ml.nonexistent.xlarge") is None

    node = node_manifest(_view())
    assert node["status"]["capacity"]["nvidia.com/gpu"] == "8"
    assert node["status"]["allocatable"]["vpc.amazonaws.com/efa"] == "32"
    assert node["status"]["capacity"]["pods"] == "49"
    assert "aws.amazon.com/neuron" not in node["status"]["capacity"]
    neuron = node_manifest(_view(instance_type="ml.trn1.32xlarge"))
    assert neuron["status"]["allocatable"]["aws.amazon.com/neuron"] == "16"
    assert neuron["status"]["allocatable"]["aws.amazon.com/neuroncore"] == "32"


def test_the_node_carries_hyperpods_labels() -> None:
    node = node_manifest(_view(labels={"hypd/pool": "train"},
                               deep_health_check=DeepHealthCheck.PASSED))
    assert node["metadata"]["name"] == "hyperpod-i-0123456789abcdef0"
    assert node["spec"]["providerID"] == "aws:///us-west-2b/i-0123456789abcdef0"
    assert node["metadata"]["labels"] == {
        "sagemaker.amazonaws.com/compute-type": "hyperpod",
        "sagemaker.amazonaws.com/instance-group-name": "gpu",
        "sagemaker.amazonaws.com/node-health-status": "Schedulable",
        "sagemaker.amazonaws.com/deep-health-check-status": "Passed",
        "node.kubernetes.io/instance-type": "ml.p5.48xlarge",
        "beta.kubernetes.io/instance-type": "ml.p5.48xlarge",
        "topology.kubernetes.io/zone": "us-west-2b",
        "topology.kubernetes.io/region": "us-west-2",
        "topology.k8s.aws/zone-id": "usw2-az1",
        "kubernetes.io/hostname": "hyperpod-i-0123456789abcdef0",
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "hypd/pool": "train",
    }
    ready = {c["type"]: c["status"] for c in node["status"]["conditions"]}
    assert ready["Ready"] == "True"
    assert "taints" not in node["spec"]
    addresses = {a["type"]: a["address"] for a in node["status"]["addresses"]}
    assert addresses["InternalIP"] == "10.1.16.4"


def test_someone_elses_labels_and_taints_survive_and_stale_config_labels_go() -> None:
    first = node_manifest(_view(labels={"old": "1"}))
    first["metadata"]["labels"]["hypd/model"] = "llama"
    first["spec"]["taints"] = [{"key": "hypd/drain", "effect": "NoExecute"}]
    second = node_manifest(
        _view(health=Health.PENDING_REBOOT, ready=False, labels={"new": "2"},
              stale_labels=("old",)),
        first,
    )
    labels = second["metadata"]["labels"]
    assert labels["hypd/model"] == "llama"
    assert labels["new"] == "2" and "old" not in labels
    assert labels[LABEL_HEALTH] == "UnschedulablePendingReboot"
    assert {t["key"] for t in second["spec"]["taints"]} == {
        "hypd/drain", LABEL_HEALTH, "node.kubernetes.io/not-ready"}
    assert second["status"]["nodeInfo"]["bootID"] == first["status"]["nodeInfo"]["bootID"]
    ready = {c["type"]: c for c in second["status"]["conditions"]}["Ready"]
    assert ready["status"] == "False"


# --- driven by the SageMaker API ------------------------------------------------------------


@pytest.fixture(scope="module")
def lab(local_aws: LocalAws, client_factory: Any) -> Lab:
    return make_lab(client_factory, SandboxControl(local_aws.url))


@pytest.fixture(scope="module")
def slow() -> Iterator[tuple[LocalAws, SandboxControl, Any, Lab]]:
    """A local AWS at speed 1, whose clock moves when the test jumps it."""
    aws = LocalAws(speed=1.0)
    aws.start()

    def client(service: str, **config: Any) -> Any:
        return boto3.client(
            service, endpoint_url=aws.url, region_name="us-west-2",
            aws_access_key_id="AKIATESTSANDBOX00000", aws_secret_access_key="test-secret",
            config=Config(retries={"total_max_attempts": 1}, **config),
        )

    control = SandboxControl(aws.url)
    try:
        yield aws, control, client, make_lab(client, control)
    finally:
        aws.stop()


@pytest.fixture
def kubes(slow: Any, monkeypatch: pytest.MonkeyPatch) -> FakeKubes:
    fake = FakeKubes()
    monkeypatch.setattr(slow[0].app, "kubes", fake, raising=False)
    return fake


def test_instances_become_nodes_and_follow_their_health(slow: Any, kubes: FakeKubes) -> None:
    _, control, client, lab = slow
    sm = client("sagemaker")
    request = cluster_request(lab)
    name = request["ClusterName"]
    sm.create_cluster(**request)
    kube = kubes.ensure(lab.eks_name)
    assert kube.list_objects("v1", "Node") == []  # Pending instances have no kubelet yet

    control.advance_clock(500)
    ids = wait_for(lambda: [n["InstanceId"] for n in nodes(sm, name)
                            if n["InstanceStatus"]["Status"] == "DeepHealthCheckInProgress"])
    first, second = sorted(ids)
    node = kube.node(first)
    assert node is not None
    labels = node["metadata"]["labels"]
    assert labels[LABEL_HEALTH] == "Unschedulable"
    assert labels[LABEL_DEEP_HEALTH_CHECK] == "InProgress"
    assert labels[LABEL_INSTANCE_GROUP] == "gpu"
    assert labels["hypd/pool"] == "train"
    assert labels["topology.kubernetes.io/zone"] == "us-west-2b"
    assert {"key": LABEL_HEALTH, "value": "Unschedulable", "effect": "NoSchedule"} in node[
        "spec"]["taints"]
    # Someone labels the node meanwhile (e.g. the product assigning a model pool).
    node["metadata"]["labels"]["hypd/model"] = "llama"
    kube.put_object(node)

    control.advance_clock(900)
    wait_for(lambda: kube.node(first)["metadata"]["labels"][LABEL_HEALTH] == "Schedulable")
    labels = kube.node(first)["metadata"]["labels"]
    assert labels[LABEL_DEEP_HEALTH_CHECK] == "Passed"
    assert labels["hypd/model"] == "llama"
    assert "taints" not in kube.node(first)["spec"]

    sm.batch_reboot_cluster_nodes(ClusterName=name, NodeIds=[first])
    rebooting = kube.node(first)
    assert rebooting["metadata"]["labels"][LABEL_HEALTH] == "UnschedulablePendingReboot"
    assert {c["type"]: c["status"] for c in rebooting["status"]["conditions"]}["Ready"] == "False"
    control.advance_clock(301)
    wait_for(lambda: kube.node(first)["metadata"]["labels"][LABEL_HEALTH] == "Schedulable")

    # The group's Kubernetes labels are reconciled onto its Nodes.
    group = gpu_group(lab, KubernetesConfig={"Labels": {"hypd/tier": "gold"}})
    sm.update_cluster(ClusterName=name, InstanceGroups=[group])
    labels = kube.node(second)["metadata"]["labels"]
    assert labels["hypd/tier"] == "gold" and "hypd/pool" not in labels

    sm.batch_delete_cluster_nodes(ClusterName=name, NodeIds=[second])
    control.advance_clock(121)
    wait_for(lambda: kube.node(second) is None and nodes(sm, name))
    assert kube.node(first) is not None

    sm.delete_cluster(ClusterName=name)
    control.advance_clock(301)
    wait_for(lambda: not kube.list_objects("v1", "Node") and sm.list_clusters())


@pytest.fixture
def real_kubes(local_aws: LocalAws, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The layer's local Kubernetes registry (or one attached here until the layer has it)."""
    found = getattr(local_aws.app, "kubes", None)
    if found is not None and not isinstance(found, FakeKubes):
        yield found
        return
    registry_module = pytest.importorskip("sandbox.kube")
    registry = registry_module.KubeRegistry()
    monkeypatch.setattr(local_aws.app, "kubes", registry, raising=False)
    try:
        yield registry
    finally:
        registry.close()


def test_nodes_appear_in_the_eks_clusters_local_kubernetes(
    client_factory: Any, lab: Lab, control: SandboxControl, real_kubes: Any
) -> None:
    sm = client_factory("sagemaker")
    group = gpu_group(lab, InstanceCount=2)
    del group["OnStartDeepHealthChecks"]
    request = cluster_request(lab, groups=[group])
    sm.create_cluster(**request)
    control.advance_clock(500)
    wait_for(lambda: all(n["InstanceStatus"]["Status"] == "Running"
                         for n in nodes(sm, request["ClusterName"])))
    kube = real_kubes.ensure(lab.eks_name)
    found = kube.list_objects(
        "v1", "Node",
        label_selector="sagemaker.amazonaws.com/compute-type=hyperpod,"
                       "sagemaker.amazonaws.com/node-health-status=Schedulable")
    assert len(found) == 2
    for node in found:
        assert node["metadata"]["name"].startswith("hyperpod-i-")
        assert node["metadata"].get("uid")
        assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"
