"""The sandbox's training operators (sandbox/simulator/training.py) in a local Kubernetes:
a HyperPodPyTorchJob's pods are placed on the GPU nodes that fit, run, print their progress
and finish; a configured pod fault makes a process fail, restart in place and spend the
job's recovery budget, and past `jobMaxRetryCount` the job fails; a RayJob gets a head and
workers and KubeRay's status. A job larger than the cluster, or pinned to an instance group
that does not exist, waits: its unplaced pods Pending with FailedScheduling in Kubernetes'
words, its placed ones in their rendezvous, the job neither Running nor finished. Jobs are
written in-process (as `kubectl apply` would store them); pods and logs are read through the
API with the kubernetes client."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from sandbox.gaps.eks_addons import Crd
from sandbox.kube import KubeRegistry, LocalKube
from sandbox.kube.access import CLUSTER_ADMIN
from sandbox.simulator.cluster import ClusterSimulator
from sandbox.simulator.training import TrainingBook, TrainingControlError
from tests.sandbox.test_pod_lifecycle import ME, SPEED, _node, core_api
from tests.stack import wait_until

BOOK = TrainingBook()


@pytest.fixture(scope="module")
def kube() -> Iterator[LocalKube]:
    registry = KubeRegistry(attach=lambda local: ClusterSimulator(local, lambda: SPEED,
                                                                  training=BOOK))
    try:
        local = registry.ensure("train-lab")
        registry.set_access("train-lab", ME, {CLUSTER_ADMIN: {"type": "cluster"}})
        for crd in (Crd("sagemaker.amazonaws.com", "HyperPodPyTorchJob", "hyperpodpytorchjobs"),
                    Crd("ray.io", "RayJob", "rayjobs")):
            local.put_object(crd.manifest())
        # two GPU nodes with one GPU each (g5.8xlarge), one CPU node
        local.put_object(_node("i-0bbbbbbbbbbbbbbb1", "ml.g5.8xlarge", "10.2.0.10"))
        local.put_object(_node("i-0bbbbbbbbbbbbbbb2", "ml.g5.8xlarge", "10.2.0.11"))
        local.put_object(_node("i-0bbbbbbbbbbbbbbb3", "ml.c5.xlarge", "10.2.0.12"))
        BOOK.configure({"steps": 5, "lines_per_second": 10})
        yield local
    finally:
        BOOK.reset()
        registry.close()


@pytest.fixture(scope="module")
def core(kube: LocalKube) -> k8s.CoreV1Api:
    return core_api(kube)


def _pytorch_job(name: str, replicas: int, max_retries: int = 3) -> dict[str, Any]:
    container = {"name": "pytorch", "image": "pytorch/pytorch:latest",
                 "command": ["hyperpodrun", "--nnodes=2", "--nproc_per_node=1", "train.py"],
                 "resources": {"requests": {"nvidia.com/gpu": "1"},
                               "limits": {"nvidia.com/gpu": "1"}}}
    return {"apiVersion": "sagemaker.amazonaws.com/v1", "kind": "HyperPodPyTorchJob",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"nprocPerNode": "1",
                     "replicaSpecs": [{"name": "pods", "replicas": replicas,
                                       "template": {"spec": {"containers": [container],
                                                             "restartPolicy": "OnFailure"}}}],
                     "runPolicy": {"jobMaxRetryCount": max_retries, "cleanPodPolicy": "All"}}}


def _ray_job(name: str, workers: int, resources: dict[str, Any] | None = None
             ) -> dict[str, Any]:
    head = {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.9.0"}]}}
    worker = {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.9.0",
                                       **({"resources": resources} if resources else {})}]}}
    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"entrypoint": "python -m verl.trainer.main_ppo",
                     "shutdownAfterJobFinishes": True,
                     "rayClusterSpec": {
                         "headGroupSpec": {"rayStartParams": {}, "template": head},
                         "workerGroupSpecs": [{"groupName": "gpu", "replicas": workers,
                                               "rayStartParams": {}, "template": worker}]}}}


def _job(kube: LocalKube, kind: str, name: str) -> dict[str, Any]:
    api = "sagemaker.amazonaws.com/v1" if kind == "HyperPodPyTorchJob" else "ray.io/v1"
    return kube.get_object(api, kind, name, "default") or {}


def _condition(job: dict[str, Any], kind: str) -> bool:
    return any(c["type"] == kind and c["status"] == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


def _finished(kube: LocalKube, name: str, condition: str) -> dict[str, Any]:
    return wait_until(lambda: (lambda j: j if _condition(j, condition) else None)(
        _job(kube, "HyperPodPyTorchJob", name)), 20, what=f"{name} {condition}")


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:5]}"


def test_a_pytorch_job_runs_one_pod_per_gpu_node_prints_progress_and_completes(
        kube: LocalKube, core: k8s.CoreV1Api) -> None:
    name = _name("fit")
    kube.put_object(_pytorch_job(name, 2))
    pods = wait_until(lambda: (lambda items: items if len(items) == 2 and all(
        p.spec.node_name for p in items) else None)(
        core.list_namespaced_pod("default", label_selector=f"HPJob={name}").items), 20,
        what="two scheduled pods")
    # each pod asks for the one GPU a g5.8xlarge has: one pod per GPU node, none on the CPU
    assert {p.spec.node_name for p in pods} == {"hyperpod-i-0bbbbbbbbbbbbbbb1",
                                               "hyperpod-i-0bbbbbbbbbbbbbbb2"}
    assert {p.metadata.name for p in pods} == {f"{name}-pods-0", f"{name}-pods-1"}
    assert all(p.metadata.owner_references[0].kind == "HyperPodPyTorchJob" for p in pods)
    job = _finished(kube, name, "Completed")
    status = job["status"]
    assert status["restartCount"] == 0 and status["startTime"] and status["completionTime"]
    assert [p["name"] for p in status["jobPods"]] == [f"{name}-pods-0", f"{name}-pods-1"]
    log = core.read_namespaced_pod_log(f"{name}-pods-0", "default")
    assert log.splitlines()[0] == f"{name}-pods-0: starting {name}"
    assert [line.split(": ")[1].split()[1] for line in log.splitlines()[1:]] == [
        f"{i}/5" for i in range(1, 6)]


def test_a_failed_process_restarts_in_place_and_spends_the_recovery_budget(
        kube: LocalKube, core: k8s.CoreV1Api) -> None:
    name = _name("flaky")
    last_words = "[rank0]:[E ProcessGroupNCCL.cpp:616] Watchdog caught collective operation timeout"
    BOOK.add_fault({"job": name, "pod": f"{name}-pods-0", "after_lines": 1, "exit_code": 3,
                    "last_words": [last_words]})
    kube.put_object(_pytorch_job(name, 1, max_retries=2))
    job = _finished(kube, name, "Completed")
    assert job["status"]["restartCount"] == 1  # one of the two restarts allowed used
    pod = core.read_namespaced_pod(f"{name}-pods-0", "default")
    assert pod.status.container_statuses[0].restart_count == 1
    assert pod.status.container_statuses[0].last_state.terminated.exit_code == 3
    # the failed run's last words are the previous instance's log; the current one is whole
    previous = core.read_namespaced_pod_log(f"{name}-pods-0", "default", previous=True)
    assert "error: process exited with code 3" in previous.splitlines()[-1]
    assert previous.splitlines()[-2] == last_words  # what it printed before it died
    assert "step 1/5" in previous.splitlines()[-3]
    current = core.read_namespaced_pod_log(f"{name}-pods-0", "default")
    assert "step 5/5" in current.splitlines()[-1] and "exited" not in current


@pytest.mark.parametrize("words", [["a\nb"], ["x"] * 21, "not a list", [3]])
def test_last_words_are_bounded_lines(words: Any) -> None:
    with pytest.raises(TrainingControlError):
        TrainingBook().add_fault({"job": "j", "last_words": words})


def test_a_job_whose_restarts_exceed_its_retry_limit_fails_and_its_pods_go(
        kube: LocalKube, core: k8s.CoreV1Api) -> None:
    name = _name("doomed")
    BOOK.add_fault({"job": name, "after_lines": 0, "count": 10})
    kube.put_object(_pytorch_job(name, 1, max_retries=1))
    job = _finished(kube, name, "Failed")
    assert job["status"]["restartCount"] == 1  # the whole budget used
    failed = next(c for c in job["status"]["conditions"] if c["type"] == "Failed")
    assert "retry limit of 1" in failed["message"]
    wait_until(lambda: not core.list_namespaced_pod(
        "default", label_selector=f"HPJob={name}").items, 10, what="pods cleaned")
    BOOK.clear_faults()


def test_a_ray_job_gets_a_head_and_workers_and_kuberay_status(
        kube: LocalKube, core: k8s.CoreV1Api) -> None:
    name = _name("rl")
    kube.put_object(_ray_job(name, 2))
    pods = wait_until(lambda: (lambda items: items if len(items) == 3 else None)(
        core.list_namespaced_pod("default", label_selector=f"ray.io/cluster={name}-raycluster"
                                 ).items), 20, what="head and two workers")
    types = sorted(p.metadata.labels["ray.io/node-type"] for p in pods)
    assert types == ["head", "worker", "worker"]

    def done() -> dict[str, Any] | None:
        job = _job(kube, "RayJob", name)
        return job if (job.get("status") or {}).get("jobDeploymentStatus") == "Complete" else None

    status = wait_until(done, 20, what="RayJob complete")["status"]
    assert status["jobStatus"] == "SUCCEEDED" and status["rayClusterName"] == f"{name}-raycluster"
    assert status["startTime"] and status["endTime"] and status["succeeded"] == 1
    wait_until(lambda: not core.list_namespaced_pod(
        "default", label_selector=f"ray.io/cluster={name}-raycluster").items, 10,
        what="shut down after the job")


def test_a_job_larger_than_the_cluster_waits_pending_and_is_never_running(
        kube: LocalKube, core: k8s.CoreV1Api) -> None:
    """Three pods of one GPU on two one-GPU nodes: two run and wait in their rendezvous,
    the third stays Pending with the scheduler's FailedScheduling in Kubernetes' words; the
    operator reports the job neither Running nor Completed, and no step is trained."""
    name = _name("huge")
    kube.put_object(_pytorch_job(name, 3))
    try:
        def placed() -> list[Any] | None:
            pods = core.list_namespaced_pod("default", label_selector=f"HPJob={name}").items
            running = [p for p in pods if p.status.phase == "Running"]
            return pods if len(pods) == 3 and len(running) == 2 else None

        pods = wait_until(placed, 20, what="two pods running, one pending")
        pending = next(p for p in pods if p.status.phase == "Pending")
        assert pending.spec.node_name is None
        scheduled = next(c for c in pending.status.conditions if c.type == "PodScheduled")
        expected = ("0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 "
                    "nodes are available: 3 No preemption victims found for incoming pod.")
        assert (scheduled.status, scheduled.reason, scheduled.message) == (
            "False", "Unschedulable", expected)
        events = wait_until(lambda: [e for e in core.list_namespaced_event("default").items
                                     if e.involved_object.name == pending.metadata.name
                                     and e.reason == "FailedScheduling"] or None, 10,
                            what="FailedScheduling")
        assert events[0].type == "Warning" and events[0].message == expected
        # the running two wait for the third: half a second is hundreds of their whole runs
        # (6 lines at 10 a simulated second, at SPEED), after which they would have finished
        # and freed their GPUs for the third had they not waited
        time.sleep(0.5)
        job = _job(kube, "HyperPodPyTorchJob", name)
        assert [c["type"] for c in job["status"]["conditions"]] == ["Created"]
        for pod in pods:
            if pod.status.phase == "Running":
                log = core.read_namespaced_pod_log(pod.metadata.name, "default")
                assert log.splitlines() == [f"{pod.metadata.name}: starting {name}"]
    finally:
        kube.delete_object("sagemaker.amazonaws.com/v1", "HyperPodPyTorchJob", name)
    wait_until(lambda: not core.list_namespaced_pod(
        "default", label_selector=f"HPJob={name}").items, 10, what="its pods gone")


def test_a_pod_for_an_instance_group_that_does_not_exist_stays_pending(
        kube: LocalKube, core: k8s.CoreV1Api) -> None:
    name = _name("lost")
    job = _pytorch_job(name, 1)
    template = job["spec"]["replicaSpecs"][0]["template"]["spec"]
    template["nodeSelector"] = {"sagemaker.amazonaws.com/instance-group-name": "no-such-group"}
    kube.put_object(job)
    try:
        pod = wait_until(lambda: next(
            (p for p in core.list_namespaced_pod("default", label_selector=f"HPJob={name}").items
             if any(c.type == "PodScheduled" and c.status == "False"
                    for c in p.status.conditions or [])), None), 20, what="unschedulable pod")
        message = next(c.message for c in pod.status.conditions if c.type == "PodScheduled")
        assert message.startswith("0/3 nodes are available: 3 node(s) didn't match Pod's "
                                  "node affinity/selector.")
        assert pod.status.phase == "Pending" and pod.spec.node_name is None
        conditions = _job(kube, "HyperPodPyTorchJob", name)["status"]["conditions"]
        assert [c["type"] for c in conditions] == ["Created"]
    finally:
        kube.delete_object("sagemaker.amazonaws.com/v1", "HyperPodPyTorchJob", name)


def test_a_ray_job_whose_worker_fits_no_node_stays_initializing(
        kube: LocalKube, core: k8s.CoreV1Api) -> None:
    """KubeRay submits the entrypoint only once the Ray cluster is up: a worker asking for
    two GPUs (no node has two) stays Pending, and the job PENDING, its head printing no
    step."""
    name = _name("rlbig")
    kube.put_object(_ray_job(name, 1, {"limits": {"nvidia.com/gpu": "2"}}))
    try:
        selector = f"ray.io/cluster={name}-raycluster"
        wait_until(lambda: any(
            p.status.phase == "Running" and p.metadata.labels["ray.io/node-type"] == "head"
            for p in core.list_namespaced_pod("default", label_selector=selector).items),
            20, what="the head running")
        time.sleep(0.5)  # hundreds of the entrypoint's whole runs
        status = _job(kube, "RayJob", name)["status"]
        assert (status["jobStatus"], status["jobDeploymentStatus"]) == ("PENDING",
                                                                      "Initializing")
        assert core.read_namespaced_pod_log(f"{name}-head", "default").splitlines() == [
            f"{name}-head: starting {name}"]
        worker_pod = core.read_namespaced_pod(f"{name}-gpu-worker-0", "default")
        assert worker_pod.status.phase == "Pending"
        assert "Insufficient nvidia.com/gpu" in worker_pod.status.conditions[0].message
    finally:
        kube.delete_object("ray.io/v1", "RayJob", name)
