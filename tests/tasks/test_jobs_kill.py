"""The worst moment to die while submitting or deleting a training job: the worker's whole
process group is SIGKILLed after the cluster's API server took the step's write and before
hypd recorded it. The operation finishes when the sweeper picks it up, and the job is made
once — the same object (its uid), one of it, its pods — or deleted once, its pods with it.

These strike the steps every submission and deletion runs (`namespace` in a new namespace,
`submit`, `delete`); the fault campaign (tests/faults/chains.py) strikes every step of both
kinds, the MLflow and KubeRay ones included, with five faults each."""

from __future__ import annotations

import pytest

from tests.app.jobkit import TORCHRUN, job_name, submit, wait_state

JOB_API = ("sagemaker.amazonaws.com/v1", "HyperPodPyTorchJob")


@pytest.fixture
def cluster(training) -> str:
    return training["name"]


def _jobs(kube, name: str, namespace: str) -> list[dict]:
    return [j for j in kube.list_objects(*JOB_API, namespace)
            if j["metadata"]["name"] == name]


@pytest.mark.parametrize("step, action", [("namespace", "patch namespaces"),
                                          ("submit", "patch hyperpodpytorchjobs")])
def test_a_worker_killed_mid_submission_makes_the_job_once(stack, cluster, step, action):
    name, namespace = job_name("once"), job_name("team")
    stack.sandbox.set_training(steps=2, lines_per_second=20, job=name)
    kube = stack.kube(cluster)
    seen: dict = {}

    def the_api_server_has_it() -> None:  # hypd has not heard it yet
        seen["namespace"] = kube.get_object("v1", "Namespace", namespace)
        seen["jobs"] = _jobs(kube, name, namespace)
        assert seen["namespace"] is not None

    op = stack.killed_once_answered(
        "kubernetes", action,
        lambda: submit(stack, cluster, {"name": name, "namespace": namespace, "nodes": 2,
                                        **TORCHRUN}),
        while_held=the_api_server_has_it)
    assert op["status"] == "succeeded", op
    struck = next(s for s in op["steps"] if s["name"] == step)
    assert struck["attempts"] >= 2, struck  # interrupted, then resumed by adopting
    assert kube.get_object("v1", "Namespace", namespace)["metadata"]["uid"] == seen[
        "namespace"]["metadata"]["uid"]
    [made] = _jobs(kube, name, namespace)
    if step == "submit":  # the API server had the job when the worker died: the same one
        assert [j["metadata"]["uid"] for j in seen["jobs"]] == [made["metadata"]["uid"]]
    else:
        assert seen["jobs"] == []
    done = wait_state(stack, cluster, name, "succeeded")
    assert sorted(p["name"] for p in done["pods"]) == [f"{name}-pods-0", f"{name}-pods-1"]
    assert kube.get_object("v1", "PersistentVolumeClaim", "hypd-s3", namespace) is not None


def test_a_worker_killed_mid_delete_deletes_the_job_and_its_pods(stack, cluster):
    name = job_name("bye")
    stack.sandbox.set_training(steps=100000, lines_per_second=1, job=name)  # runs on
    reply = submit(stack, cluster, {"name": name, **TORCHRUN})
    assert reply.status_code == 202, reply.text
    assert stack.wait_operation(reply.json()["operation"]["id"])["status"] == "succeeded"
    running = wait_state(stack, cluster, name, "running")
    kube = stack.kube(cluster)

    def delete():
        with stack.client() as c:
            return c.delete(f"/api/v1/clusters/{cluster}/jobs/{name}",
                            params={"force": "true"})

    def deleting() -> None:  # the API server took the delete; hypd has not heard it
        found = _jobs(kube, name, "default")
        assert not found or found[0]["metadata"].get("deletionTimestamp"), found

    op = stack.killed_once_answered("kubernetes", "delete hyperpodpytorchjobs", delete,
                                    while_held=deleting)
    assert op["status"] == "succeeded", op
    [step] = op["steps"]
    assert step["attempts"] >= 2, step
    assert _jobs(kube, name, "default") == []
    assert not [p for p in kube.list_objects("v1", "Pod", "default")
                if p["metadata"]["name"] in {q["name"] for q in running["pods"]}]
    with stack.client("viewer") as c:
        assert c.get(f"/api/v1/clusters/{cluster}/jobs/{name}").status_code == 404
