"""The worst moment to die while deploying an endpoint: the worker's whole process group is
SIGKILLed after the cluster's API server took the Deployment and before hypd recorded it.
The deploy finishes when the sweeper picks it up, and the endpoint exists once: one
Deployment (the same object, never deleted and made again), one ReplicaSet, its replicas."""

from __future__ import annotations

from tests.app.test_clusters_api import _body, _create, _name
from tests.app.test_endpoints_api import GPU_TYPE, _upload_model


def test_a_worker_killed_mid_deploy_makes_the_endpoint_once(stack):
    stack.wait_idle()
    cluster = _name("ek")
    assert _create(stack, _body(cluster, instance_type=GPU_TYPE, instance_count=1))[
        "status"] == "succeeded"
    _upload_model(stack, cluster, "tiny")
    kube = stack.kube(cluster)
    made: dict = {}

    def submit():
        with stack.client() as c:
            return c.post(f"/api/v1/clusters/{cluster}/endpoints", json={
                "name": "once", "kind": "vllm", "model": "tiny", "gpus": 1, "replicas": 2})

    def the_api_server_has_it():  # hypd has not heard it yet
        made.update(kube.get_object("apps/v1", "Deployment", "once", "default") or {})
        assert made

    op = stack.killed_once_answered("kubernetes", "patch deployments", submit,
                                    while_held=the_api_server_has_it)
    assert op["status"] == "succeeded", op
    deploy = next(s for s in op["steps"] if s["name"] == "deploy")
    assert deploy["attempts"] >= 2, deploy  # interrupted, then resumed by adopting
    deployments = [d for d in kube.list_objects("apps/v1", "Deployment", "default")
                   if d["metadata"]["name"] == "once"]
    assert len(deployments) == 1
    assert deployments[0]["metadata"]["uid"] == made["metadata"]["uid"]
    sets = [r for r in kube.list_objects("apps/v1", "ReplicaSet", "default")
            if r["metadata"]["name"].startswith("once-")]
    assert len(sets) == 1
    pods = [p for p in kube.list_objects("v1", "Pod", "default")
            if p["metadata"].get("labels", {}).get("hypd.io/endpoint") == "once"]
    assert len(pods) == 2
    assert [s["metadata"]["name"] for s in kube.list_objects("v1", "Service", "default")
            if s["metadata"]["name"] == "once"] == ["once"]
