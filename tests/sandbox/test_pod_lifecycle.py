"""The simulator's controllers in a local Kubernetes: the volume binder, the scheduler
(selectors, affinity, taints, GPU/EFA/Neuron requests against allocatable) and the kubelets
(pod phases, conditions, container states, restarts, init containers, logs, events).

Nodes are written in-process, as the SageMaker gap writes them (`simulator.node_manifest`);
pods, volumes and claims go through the API with the kubernetes client, as users' do.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client as k8s

from sandbox.kube import KubeRegistry, LocalKube
from sandbox.kube.access import CLUSTER_ADMIN
from sandbox.simulator import Health, NodeView, node_manifest, node_name
from sandbox.simulator.cluster import ClusterSimulator
from sandbox.simulator.programs import Line, Program, from_command_line
from tests.sandbox.ekskit import REGION, local_api
from tests.stack import wait_until

ME = "arn:aws:iam::123456789012:user/moto"
SPEED = 1000.0


def _node(instance_id: str, instance_type: str, ip: str, **overrides: Any) -> dict[str, Any]:
    view = NodeView(
        instance_id=instance_id, instance_type=instance_type, instance_group="workers",
        region=REGION, zone=f"{REGION}a", zone_id="usw2-az1", private_ip=ip,
        private_dns=f"ip-{ip.replace('.', '-')}.{REGION}.compute.internal",
        health=Health.SCHEDULABLE, ready=True, launch_time=datetime.now(UTC),
        kubelet_version="v1.33.0-eks-hypd", **overrides)
    return node_manifest(view)


@pytest.fixture(scope="module")
def kube() -> Iterator[LocalKube]:
    simulators: list[ClusterSimulator] = []

    def attach(local: LocalKube) -> ClusterSimulator:
        simulators.append(ClusterSimulator(local, lambda: SPEED))
        return simulators[-1]

    registry = KubeRegistry(attach=attach)
    try:
        local = registry.ensure("pods-lab")
        registry.set_access("pods-lab", ME, {CLUSTER_ADMIN: {"type": "cluster"}})
        # a GPU node (g5.8xlarge: 1 GPU, 1 EFA), a Trainium node (trn1.32xlarge: 16 Neuron
        # devices, 8 EFA) labelled for a team, and a CPU node tainted by its group's config
        local.put_object(_node("i-0aaaaaaaaaaaaaaa1", "ml.g5.8xlarge", "10.1.0.10"))
        local.put_object(_node("i-0aaaaaaaaaaaaaaa2", "ml.trn1.32xlarge", "10.1.0.11",
                               labels={"team": "llm"}))
        local.put_object(_node("i-0aaaaaaaaaaaaaaa3", "ml.c5.xlarge", "10.1.0.12",
                               taints=[{"Key": "dedicated", "Value": "cpu",
                                        "Effect": "NoSchedule"}]))
        yield local
    finally:
        registry.close()


def core_api(kube: LocalKube) -> k8s.CoreV1Api:
    """The local Kubernetes through the kubernetes client, with an EKS token."""
    return k8s.CoreV1Api(local_api(kube, expires=60))


@pytest.fixture(scope="module")
def core(kube: LocalKube) -> k8s.CoreV1Api:
    return core_api(kube)


@pytest.fixture
def ns(core: k8s.CoreV1Api) -> str:
    name = f"p-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": name}})
    return name


def _pod(name: str, command: list[str] | None = None, restart: str = "Never",
         **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "busybox"}
    if command is not None:
        container["command"] = command
    container.update(spec.pop("container", {}))
    return {"metadata": {"name": name},
            "spec": {"containers": [container], "restartPolicy": restart, **spec}}


def _read(core: k8s.CoreV1Api, ns: str, name: str) -> dict[str, Any]:
    pod = core.read_namespaced_pod(name, ns)
    return core.api_client.sanitize_for_serialization(pod)


def _phase(core: k8s.CoreV1Api, ns: str, name: str, phase: str,
           timeout: float = 20) -> dict[str, Any]:
    def reached() -> dict[str, Any] | None:
        pod = _read(core, ns, name)
        return pod if pod.get("status", {}).get("phase") == phase else None

    return wait_until(reached, timeout, what=f"pod {name} {phase}")


def _events(core: k8s.CoreV1Api, ns: str, name: str, reason: str) -> list[Any]:
    return core.list_namespaced_event(
        ns, field_selector=f"involvedObject.name={name},reason={reason}").items


def _unschedulable(core: k8s.CoreV1Api, ns: str, name: str) -> str:
    (event,) = wait_until(lambda: _events(core, ns, name, "FailedScheduling"), 10,
                          what=f"FailedScheduling for {name}")
    pod = _read(core, ns, name)
    assert pod["status"]["phase"] == "Pending" and not pod["spec"].get("nodeName")
    (cond,) = pod["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == (
        "PodScheduled", "False", "Unschedulable")
    assert cond["message"] == event.message
    return str(event.message)


# --- what a container does -----------------------------------------------------------------


def test_the_command_line_rule() -> None:
    def run(*argv: str, command: bool = False) -> Program:
        key = "command" if command else "args"
        return from_command_line({key: list(argv)})

    assert from_command_line({}) == Program(exit_code=None)  # the image's own server
    assert run("echo", "hello", "world") == Program((Line(0, "hello world"),), 0)
    assert run("sh", "-c", "echo a; sleep 5; echo b; exit 3", command=True) == Program(
        (Line(0, "a"), Line(5, "b")), 3)
    assert run("sh", "-c", "false && echo skipped || echo rescued") == Program(
        (Line(0, "rescued"),), 0)
    assert run("bash", "-c", "echo -n up\nsleep 1m") == Program((Line(0, "up"),), 0, 60)
    assert run("sh", "-c", "echo start; sleep infinity; echo never").exit_code is None
    assert run("false").exit_code == 1
    assert run("python", "train.py") == Program((), 0)
    # hypd's own in-cluster programs (cloud/incluster/, mounted under /etc/hypd/) serve on
    assert run("python3", "/etc/hypd/load/sglang_load.py", "--port", "29100",
               command=True) == Program(exit_code=None)
    assert run("python3", "/etc/hypdx.py") == Program((), 0)
    # only flags, no command: arguments to the image's own entrypoint (a controller's
    # Deployment, KubeRay's operator among them), which serves until stopped
    assert run("--enable-leader-election=false") == Program(exit_code=None)
    assert run("--version", command=True) == Program((), 0)


# --- scheduling ----------------------------------------------------------------------------


def test_a_pod_runs_on_a_node_and_succeeds_with_its_output(core: k8s.CoreV1Api, ns: str,
                                                           kube: LocalKube) -> None:
    core.create_namespaced_pod(ns, _pod("hello", ["sh", "-c", "echo hi there; sleep 2000"]))
    running = _phase(core, ns, "hello", "Running")
    status = running["status"]
    assert running["spec"]["nodeName"] in {node_name(f"i-0aaaaaaaaaaaaaaa{i}") for i in (1, 2)}
    assert status["podIP"] and status["podIPs"] == [{"ip": status["podIP"]}]
    assert status["hostIP"] in ("10.1.0.10", "10.1.0.11") and status["startTime"]
    assert status["qosClass"] == "BestEffort"
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions == {"PodReadyToStartContainers": "True", "Initialized": "True",
                          "Ready": "True", "ContainersReady": "True", "PodScheduled": "True"}
    (cs,) = status["containerStatuses"]
    assert cs["ready"] and cs["started"] and cs["restartCount"] == 0
    assert cs["image"] == "docker.io/library/busybox:latest"
    assert cs["containerID"].startswith("containerd://") and cs["imageID"]

    done = _phase(core, ns, "hello", "Succeeded")
    (cs,) = done["status"]["containerStatuses"]
    assert cs["state"]["terminated"]["exitCode"] == 0
    assert cs["state"]["terminated"]["reason"] == "Completed"
    assert not cs["ready"] and not cs["started"]
    ready = next(c for c in done["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "PodCompleted")
    assert core.read_namespaced_pod_log("hello", ns) == "hi there\n"
    reasons = {e.reason for e in core.list_namespaced_event(ns).items}
    assert {"Scheduled", "Pulling", "Pulled", "Created", "Started"} <= reasons


def test_a_failing_command_fails_the_pod_with_its_exit_code(core: k8s.CoreV1Api,
                                                             ns: str) -> None:
    core.create_namespaced_pod(ns, _pod("bad", ["sh", "-c", "echo oops; exit 7"]))
    failed = _phase(core, ns, "bad", "Failed")
    terminated = failed["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (7, "Error")
    assert core.read_namespaced_pod_log("bad", ns) == "oops\n"


def test_restart_policy_restarts_with_back_off(core: k8s.CoreV1Api, ns: str) -> None:
    core.create_namespaced_pod(ns, _pod("flaky", ["false"], restart="OnFailure"))

    def restarted() -> dict[str, Any] | None:
        cs = (_read(core, ns, "flaky").get("status") or {}).get("containerStatuses") or [{}]
        return cs[0] if cs[0].get("restartCount", 0) >= 2 else None

    cs = wait_until(restarted, 20, what="two restarts")
    assert cs["lastState"]["terminated"]["exitCode"] == 1
    assert _read(core, ns, "flaky")["status"]["phase"] == "Running"
    assert _events(core, ns, "flaky", "BackOff")


def test_a_secret_volume_waits_for_its_secret(core: k8s.CoreV1Api, ns: str) -> None:
    volumes = [{"name": "cert", "secret": {"secretName": "serving"}},
               {"name": "extra", "secret": {"secretName": "absent", "optional": True}}]
    core.create_namespaced_pod(ns, _pod("mounted", ["sh", "-c", "sleep infinity"],
                                        volumes=volumes))
    (event,) = wait_until(lambda: _events(core, ns, "mounted", "FailedMount"), 10,
                          what="FailedMount")
    assert event.message == ('MountVolume.SetUp failed for volume "cert" : secret "serving" '
                             "not found")
    pod = _read(core, ns, "mounted")
    (cs,) = pod["status"]["containerStatuses"]
    assert pod["status"]["phase"] == "Pending" and "podIP" not in pod["status"]
    assert cs["state"]["waiting"]["reason"] == "ContainerCreating"
    core.create_namespaced_secret(ns, {"metadata": {"name": "serving"},
                                       "stringData": {"tls.crt": "x"}})
    _phase(core, ns, "mounted", "Running")


def test_init_containers_run_first(core: k8s.CoreV1Api, ns: str) -> None:
    pod = _pod("staged", ["sh", "-c", "echo main"])
    pod["spec"]["initContainers"] = [{"name": "setup", "image": "busybox",
                                      "command": ["sh", "-c", "echo prepared"]}]
    core.create_namespaced_pod(ns, pod)
    done = _phase(core, ns, "staged", "Succeeded")
    (init,) = done["status"]["initContainerStatuses"]
    assert init["state"]["terminated"]["exitCode"] == 0
    assert core.read_namespaced_pod_log("staged", ns, container="setup") == "prepared\n"
    assert core.read_namespaced_pod_log("staged", ns, container="main") == "main\n"


def test_node_selector_and_affinity_choose_the_node(core: k8s.CoreV1Api, ns: str) -> None:
    core.create_namespaced_pod(ns, _pod("picky", ["sleep", "infinity"],
                                        nodeSelector={"team": "llm"}))
    assert _phase(core, ns, "picky", "Running")["spec"]["nodeName"] == node_name(
        "i-0aaaaaaaaaaaaaaa2")
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{
            "key": "node.kubernetes.io/instance-type", "operator": "In",
            "values": ["ml.g5.8xlarge"]}]}]}}}
    core.create_namespaced_pod(ns, _pod("affine", ["sleep", "infinity"], affinity=affinity))
    assert _phase(core, ns, "affine", "Running")["spec"]["nodeName"] == node_name(
        "i-0aaaaaaaaaaaaaaa1")
    core.create_namespaced_pod(ns, _pod("nowhere", nodeSelector={"team": "none"}))
    assert _unschedulable(core, ns, "nowhere").startswith(
        "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: cpu}, "
        "2 node(s) didn't match Pod's node affinity/selector.")


def test_taints_need_tolerations(core: k8s.CoreV1Api, ns: str) -> None:
    pinned = {"kubernetes.io/hostname": node_name("i-0aaaaaaaaaaaaaaa3")}
    core.create_namespaced_pod(ns, _pod("intolerant", nodeSelector=pinned))
    assert "1 node(s) had untolerated taint {dedicated: cpu}" in _unschedulable(
        core, ns, "intolerant")
    tolerations = [{"key": "dedicated", "operator": "Equal", "value": "cpu",
                    "effect": "NoSchedule"}]
    core.create_namespaced_pod(ns, _pod("tolerant", ["sleep", "infinity"],
                                        nodeSelector=pinned, tolerations=tolerations))
    assert _phase(core, ns, "tolerant", "Running")["spec"]["nodeName"] == pinned[
        "kubernetes.io/hostname"]


def test_accelerator_requests_count_against_allocatable(core: k8s.CoreV1Api, ns: str) -> None:
    def wants(**limits: str) -> dict[str, Any]:
        return {"resources": {"limits": limits}}

    core.create_namespaced_pod(ns, _pod("neuron", ["sleep", "infinity"], container=wants(
        **{"aws.amazon.com/neuron": "16", "vpc.amazonaws.com/efa": "8"})))
    assert _phase(core, ns, "neuron", "Running")["spec"]["nodeName"] == node_name(
        "i-0aaaaaaaaaaaaaaa2")
    core.create_namespaced_pod(ns, _pod("gpu", ["sleep", "infinity"], container=wants(
        **{"nvidia.com/gpu": "1", "vpc.amazonaws.com/efa": "1"})))
    gpu = _phase(core, ns, "gpu", "Running")
    assert gpu["spec"]["nodeName"] == node_name("i-0aaaaaaaaaaaaaaa1")
    assert gpu["status"]["qosClass"] == "Burstable"
    # both accelerators are taken now: the next asks wait, each told why
    core.create_namespaced_pod(ns, _pod("gpu2", container=wants(**{"nvidia.com/gpu": "1"})))
    assert _unschedulable(core, ns, "gpu2") == (
        "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: cpu}, "
        "2 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: "
        "1 Preemption is not helpful for scheduling, 2 No preemption victims found for "
        "incoming pod.")
    # freeing the GPU lets the waiting pod in
    core.delete_namespaced_pod("gpu", ns)
    assert _phase(core, ns, "gpu2", "Running")["spec"]["nodeName"] == node_name(
        "i-0aaaaaaaaaaaaaaa1")


# --- volumes -------------------------------------------------------------------------------


def _pv(name: str, claim: tuple[str, str] | None, size: str = "10Gi") -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": size}, "accessModes": ["ReadWriteMany"],
                            "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                            "csi": {"driver": "s3.csi.aws.com", "volumeHandle": name}}
    if claim:
        spec["claimRef"] = {"namespace": claim[0], "name": claim[1]}
    return {"metadata": {"name": name}, "spec": spec}


def _pvc(name: str, volume: str | None, size: str = "10Gi") -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteMany"], "storageClassName": "",
                            "resources": {"requests": {"storage": size}}}
    if volume:
        spec["volumeName"] = volume
    return {"metadata": {"name": name}, "spec": spec}


def test_the_binder_binds_claims_to_their_volumes(core: k8s.CoreV1Api, ns: str) -> None:
    pv = f"{ns}-data"
    core.create_persistent_volume(_pv(pv, (ns, "data")))
    core.create_namespaced_persistent_volume_claim(ns, _pvc("data", pv))

    def bound() -> Any:
        claim = core.read_namespaced_persistent_volume_claim("data", ns)
        return claim if claim.status.phase == "Bound" else None

    claim = wait_until(bound, 10, what="claim Bound")
    assert claim.status.capacity == {"storage": "10Gi"}
    assert claim.status.access_modes == ["ReadWriteMany"]
    assert claim.metadata.annotations["pv.kubernetes.io/bind-completed"] == "yes"
    volume = core.read_persistent_volume(pv)
    assert volume.status.phase == "Bound" and volume.spec.claim_ref.uid == claim.metadata.uid

    # a pod mounting a claim waits for it to be bound
    mounting = _pod("reader", ["sleep", "infinity"],
                    volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "waiting"}}])
    core.create_namespaced_pod(ns, mounting)
    assert 'persistentvolumeclaim "waiting" not found' in _unschedulable(core, ns, "reader")
    core.create_namespaced_persistent_volume_claim(ns, _pvc("waiting", f"{ns}-absent"))
    wait_until(lambda: core.read_namespaced_persistent_volume_claim(
        "waiting", ns).status.phase == "Pending", 10, what="claim Pending")
    core.create_persistent_volume(_pv(f"{ns}-absent", None, size="20Gi"))
    assert _phase(core, ns, "reader", "Running")

    # the claim goes: its volume is released
    core.delete_namespaced_persistent_volume_claim("data", ns)
    wait_until(lambda: core.read_persistent_volume(pv).status.phase == "Released", 10,
               what="volume Released")
