"""Training jobs through REST on the full stack: submitting and deleting a job are
operations (202, followed to the end); a torchrun job runs on the sandbox's training
operator and finishes with its log lines; a failing pod restarts and spends the recovery
budget; the same name twice is a conflict (an Idempotency-Key replay is the same
operation); elastic training with spot capacity is refused with the stated reason; a job
needing the operator on a cluster without it is refused naming the toggle; a new namespace
is made, labelled and given the bucket's claim; a VERL job installs KubeRay first; while its
operation runs a job reads as submitting, and a submission that ended without the job reads
as failed until it is deleted."""

from __future__ import annotations

import pytest

from tests.app.jobkit import (
    TORCHRUN,
    an_endpoint_waits_too,
    deleted,
    get_job,
    job_name,
    submit,
    submitted,
    wait_state,
)
from tests.mcp_server.refusals import refusal
from tests.stack import wait_until


@pytest.fixture
def cluster(training):
    return training


def test_a_job_needing_the_training_operator_is_refused_naming_the_toggle(cluster):
    reply = cluster["refused"]
    assert reply.status_code == 412, reply.text
    error = reply.json()["error"]
    assert error["code"] == "precondition_failed"
    assert "training_operator" in error["message"] and "is off" in error["message"]
    assert error["details"] == {"feature": "training_operator", "state": "off"}


def test_a_torchrun_job_runs_on_the_sandbox_and_finishes_with_its_logs(stack, cluster):
    name = job_name("fit")
    stack.sandbox.set_training(steps=6, lines_per_second=20, job=name)
    job = submitted(stack, cluster["name"], {"name": name, "nodes": 2, **TORCHRUN})
    assert (job["kind"], job["recipe"], job["namespace"]) == ("HyperPodPyTorchJob", "torchrun",
                                                             "default")
    # made by its operation (which is over): the operator's state from here on
    assert job["state"] in ("pending", "running", "succeeded") and job["nodes"] == 2
    assert job["operation_id"] is None
    assert job["paths"]["checkpoints"] == f"/s3/jobs/{name}/checkpoints"
    assert "hyperpodrun" in job["notes"][0]
    done = wait_state(stack, cluster["name"], name, "succeeded")
    assert sorted(p["name"] for p in done["pods"]) == [f"{name}-pods-0", f"{name}-pods-1"]
    assert all(p["node"] and p["node"].startswith("hyperpod-i-") for p in done["pods"])
    assert done["recovery_budget"] == {"used": 0, "allowed": 3, "remaining": 3}
    assert done["started_at"] and done["finished_at"]
    with stack.client("viewer") as c:
        logs = c.get(f"/api/v1/clusters/{cluster['name']}/jobs/{name}/logs",
                     params={"tail": 100, "pod": f"{name}-pods-1"}).json()
    lines = [entry["line"] for entry in logs["lines"]]
    assert lines[0] == f"{name}-pods-1: starting {name}"
    assert [line.split()[2] for line in lines[1:]] == [f"{i}/6" for i in range(1, 7)]
    assert {entry["pod"] for entry in logs["lines"]} == {f"{name}-pods-1"}
    with stack.client("viewer") as c:
        listed = c.get(f"/api/v1/clusters/{cluster['name']}/jobs",
                       params={"state": "succeeded", "recipe": "torchrun"}).json()
    assert name in {j["name"] for j in listed["items"]}


def test_a_job_whose_pod_fails_and_restarts_shows_its_recovery_budget_going_down(
        stack, cluster):
    name = job_name("flaky")
    stack.sandbox.set_training(steps=4, lines_per_second=20, job=name)
    stack.sandbox.fail_training_pod(name, exit_code=2, after_lines=1)
    submitted(stack, cluster["name"], {"name": name, **TORCHRUN,
                                       "run_policy": {"job_max_retry_count": 2}})
    done = wait_state(stack, cluster["name"], name, "succeeded", "failed")
    assert done["state"] == "succeeded"
    assert done["recovery_budget"] == {"used": 1, "allowed": 2, "remaining": 1}
    assert done["pods"][0]["restarts"] == 1
    with stack.client("viewer") as c:
        previous = c.get(f"/api/v1/clusters/{cluster['name']}/jobs/{name}/logs",
                         params={"previous": "true"}).json()["lines"]
    assert "process exited with code 2" in previous[-1]["line"] and previous[-1]["previous"]


def test_the_same_job_name_twice_is_a_conflict_and_a_replayed_key_is_not(stack, cluster):
    name = job_name("twice")
    body = {"name": name, **TORCHRUN}
    first = submit(stack, cluster["name"], body, **{"Idempotency-Key": f"k-{name}"})
    assert first.status_code == 202, first.text
    op_id = first.json()["operation"]["id"]
    busy = submit(stack, cluster["name"], body)  # its operation runs, or the job is there
    assert busy.status_code == 409 and busy.json()["error"]["code"] == "conflict"
    assert stack.wait_operation(op_id)["status"] == "succeeded"
    again = submit(stack, cluster["name"], body, **{"Idempotency-Key": f"k-{name}"})
    assert again.status_code == 202 and again.json()["operation"]["id"] == op_id
    assert get_job(stack, cluster["name"], name)["name"] == name
    conflict = submit(stack, cluster["name"], body)
    assert conflict.status_code == 409 and conflict.json()["error"]["code"] == "conflict"
    assert f"a job named {name!r} already exists" in conflict.json()["error"]["message"]
    assert [o["id"] for o in _operations(stack, cluster["name"], name)] == [op_id]
    reused = submit(stack, cluster["name"], {**body, "nodes": 2},
                    **{"Idempotency-Key": f"k-{name}"})
    assert reused.status_code == 422
    assert reused.json()["error"]["code"] == "idempotency_key_reused"


def test_elastic_training_with_spot_capacity_is_refused_with_the_stated_reason(stack, cluster):
    reply = submit(stack, cluster["name"], {"name": job_name("elastic"), **TORCHRUN,
                                            "nodes": 1, "max_nodes": 2})
    assert reply.status_code == 422, reply.text
    error = reply.json()["error"]
    assert error["code"] == "validation_failed"
    assert error["message"].startswith("elastic training (a node range) cannot be combined")
    assert error["details"]["fields"] == {"max_nodes": [error["message"]]}
    assert "cannot be combined with spot capacity" in error["message"]
    with stack.client("viewer") as c:
        limits = c.get("/api/v1/training/limits").json()
    spot = next(limit for limit in limits["elastic_excludes"] if limit["key"] == "spot")
    assert spot["reason"] in error["message"]  # the one table says why


def _operations(stack, cluster: str, job: str) -> list[dict]:
    with stack.client("viewer") as c:
        return c.get("/api/v1/operations",
                     params={"target": f"cluster/{cluster}/job/{job}"}).json()["items"]


@pytest.mark.parametrize("recipe", [{**TORCHRUN}, {
    "recipe": "verl", "image": "verlai/verl:latest", "config": "/s3/rl/ppo.yaml",
    "gpus_per_node": 1}], ids=["hyperpodpytorchjob", "rayjob"])
def test_a_job_larger_than_the_cluster_is_refused_with_the_numbers_and_nothing_is_made(
        stack, cluster, recipe):
    """Two g5.8xlarge nodes of one GPU each: 99 nodes of one GPU can never run there."""
    name, namespace = job_name("huge"), job_name("team")
    stack.wait_idle()
    before = stack.sandbox.counters()["by_action"]
    reply = submit(stack, cluster["name"], {"name": name, "namespace": namespace, **recipe,
                                            "nodes": 99})
    assert reply.status_code == 422, reply.text
    error = reply.json()["error"]
    assert error["code"] == "exceeds_capacity"
    what = "99 nodes" if recipe["recipe"] == "torchrun" else "98 Ray workers"
    assert error["message"].startswith(f"nodes: {what} asked, each with 1 GPU")
    assert ("the cluster can hold at most 2: group 'workers' holds 2 (2 nodes of "
            "ml.g5.8xlarge with 1 GPU each; 2 now, no managed autoscaling)") in error["message"]
    details = error["details"]
    assert details["can_hold"] == 2 and details["fields"] == {"nodes": [error["message"]]}
    assert details["asked"]["per_unit"] == {"nvidia.com/gpu": 1}
    assert [(g["name"], g["max_nodes"], g["per_node"]["nvidia.com/gpu"])
            for g in details["groups"]] == [("workers", 2, 1)]
    # nothing made: no job, no namespace, no operation, no AWS call that changes anything
    with stack.client("viewer") as c:
        assert c.get(f"/api/v1/clusters/{cluster['name']}/jobs/{name}").status_code == 404
    assert stack.kube(cluster["name"]).get_object("v1", "Namespace", namespace) is None
    assert _operations(stack, cluster["name"], name) == []
    assert stack.sandbox.counters()["by_action"] == before


def test_a_job_naming_an_instance_group_the_cluster_lacks_is_refused_naming_its_groups(
        stack, cluster):
    name = job_name("lost")
    reply = submit(stack, cluster["name"], {"name": name, **TORCHRUN,
                                            "instance_group": "no-such-group"})
    assert reply.status_code == 422, reply.text
    error = reply.json()["error"]
    assert (error["code"], error["message"]) == (
        "validation_failed", f"cluster {cluster['name']!r} has no instance group "
                             "'no-such-group'; its groups: workers (ml.g5.8xlarge)")
    assert error["details"]["groups"] == ["workers"]
    assert error["details"]["fields"] == {"instance_group": [error["message"]]}
    with stack.client("viewer") as c:
        assert c.get(f"/api/v1/clusters/{cluster['name']}/jobs/{name}").status_code == 404


def test_a_job_that_fits_but_waits_for_capacity_shows_the_schedulers_reason(stack, cluster):
    """Another job holds both GPUs: the new one is accepted and reads as pending, its pod
    waiting with the scheduler's FailedScheduling message; once the GPUs are free it runs."""
    hog, waiter = job_name("hog"), job_name("wait")
    stack.sandbox.set_training(steps=1000, lines_per_second=0.01, job=hog)  # runs on
    stack.sandbox.set_training(steps=2, lines_per_second=20, job=waiter)
    submitted(stack, cluster["name"], {"name": hog, **TORCHRUN, "nodes": 2})
    try:
        wait_state(stack, cluster["name"], hog, "running")
        submitted(stack, cluster["name"], {"name": waiter, **TORCHRUN})
        job = wait_until(lambda: (lambda j: j if j["waiting"] else None)(
            get_job(stack, cluster["name"], waiter)), 30, interval=0.2, what="its reason")
        assert job["state"] == "pending"
        [waiting] = job["waiting"]
        assert (waiting["pod"], waiting["reason"]) == (f"{waiter}-pods-0", "Unschedulable")
        assert waiting["message"].startswith(
            "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.")
        assert waiting["since"]
        failed = [e for e in job["events"] if e["reason"] == "FailedScheduling"]
        assert failed and failed[-1]["message"] == waiting["message"]
        assert failed[-1]["object"] == f"Pod/{waiter}-pods-0"
        with stack.client("viewer") as c:  # the listing says it too
            listed = c.get(f"/api/v1/clusters/{cluster['name']}/jobs").json()["items"]
        assert next(j for j in listed if j["name"] == waiter)["waiting"] == [waiting]
        an_endpoint_waits_too(stack, cluster["name"])
    finally:
        deleted(stack, cluster["name"], hog, force="true")  # running: it goes only with force
    done = wait_state(stack, cluster["name"], waiter, "succeeded")
    assert done["waiting"] == []


def test_a_job_in_a_new_namespace_makes_it_labelled_with_the_buckets_claim(stack, cluster):
    name, namespace = job_name("ns"), job_name("team")
    stack.sandbox.set_training(steps=2, job=name)
    submitted(stack, cluster["name"], {"name": name, "namespace": namespace, **TORCHRUN})
    kube = stack.kube(cluster["name"])
    made = kube.get_object("v1", "Namespace", namespace)
    assert made["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "hypd"
    claim = kube.get_object("v1", "PersistentVolumeClaim", "hypd-s3", namespace)
    assert claim is not None
    assert wait_state(stack, cluster["name"], name, "succeeded")["namespace"] == namespace


def test_a_verl_job_installs_kuberay_first_then_runs_as_a_rayjob(stack, cluster):
    name = job_name("rl")
    stack.sandbox.set_training(steps=3, job=name)
    reply = submit(stack, cluster["name"], {"name": name, "recipe": "verl",
                                            "image": "verlai/verl:latest", "nodes": 2,
                                            "gpus_per_node": 1, "config": "/s3/rl/ppo.yaml"})
    assert reply.status_code == 202, reply.text  # the first RayJob of this cluster
    assert reply.json()["resource_url"] == f"/api/v1/clusters/{cluster['name']}/jobs/{name}"
    assert reply.json()["status_route"] == f"/api/v1/operations/{reply.json()['operation']['id']}"
    with stack.client("viewer") as c:  # meanwhile the job reads as being submitted
        pending = c.get(f"/api/v1/clusters/{cluster['name']}/jobs/{name}").json()
    assert pending["state"] in ("submitting", "pending", "running", "succeeded")
    op = stack.wait_operation(reply.json()["operation"]["id"])
    assert op["status"] == "succeeded", op
    assert [s["name"] for s in op["steps"]] == ["namespace", "kuberay", "submit"]
    done = wait_state(stack, cluster["name"], name, "succeeded")
    assert done["kind"] == "RayJob" and done["recovery_budget"] is None
    kube = stack.kube(cluster["name"])
    assert kube.get_object("apps/v1", "Deployment", "kuberay-operator", "kuberay")


def test_a_running_job_is_deleted_only_with_force_and_its_pods_go(stack, cluster):
    name = job_name("gone")
    stack.sandbox.set_training(steps=100000, lines_per_second=1, job=name)  # runs on
    made = submitted(stack, cluster["name"], {"name": name, **TORCHRUN})
    assert made["operation_id"] is None  # its submission is over
    running = wait_state(stack, cluster["name"], name, "running")
    url = f"/api/v1/clusters/{cluster['name']}/jobs/{name}"
    with stack.client("viewer") as c:  # a running job is live work: refused without force
        plan = c.delete(url, params={"dry_run": "true"}).json()
    assert plan["refused"] is True and plan["force_allowed"] is True
    assert plan["removes"] == [f"HyperPodPyTorchJob default/{name}"] + [
        f"pod default/{p['name']}" for p in running["pods"]]
    with stack.client() as c:
        refused = c.delete(url)
        assert refused.status_code == 409, refused.text
        error = refused.json()["error"]
        assert error["code"] == "in_use"
        assert [(d["kind"], d["name"]) for d in error["details"]["dependents"]] == [
            ("pod", p["name"]) for p in running["pods"]]
        assert get_job(stack, cluster["name"], name)["state"] == "running"
        reply = c.delete(url, params={"force": "true"})
    assert reply.status_code == 202, reply.text
    assert reply.json()["resource_url"] == url
    op = stack.wait_operation(reply.json()["operation"]["id"])
    assert op["status"] == "succeeded", op
    assert [s["name"] for s in op["steps"]] == ["delete"]
    assert op["steps"][0]["resources"]["deleted"] == f"HyperPodPyTorchJob default/{name}"
    with stack.client("viewer") as c:
        assert c.get(f"/api/v1/clusters/{cluster['name']}/jobs/{name}").status_code == 404
    assert not [p for p in stack.kube(cluster["name"]).list_objects("v1", "Pod", "default")
                if p["metadata"]["name"].startswith(name)]


def test_a_job_reads_as_submitting_while_its_operation_runs_and_as_failed_after(
        stack, cluster):
    """Its operation held at the namespace step: the job's read and the listing show it
    submitting, naming the operation; cancelled there, it ends without the job, and the
    read says so until a delete clears it; the name can then be submitted again."""
    name, namespace = job_name("held"), job_name("team")
    body = {"name": name, "namespace": namespace, **TORCHRUN}
    url = f"/api/v1/clusters/{cluster['name']}/jobs/{name}"
    stack.wait_idle()
    hold = stack.sandbox.hold("kubernetes", "patch namespaces", when="before")
    try:
        reply = submit(stack, cluster["name"], body)
        assert reply.status_code == 202, reply.text
        op_id = reply.json()["operation"]["id"]
        stack.sandbox.wait_held(hold, timeout=60)
        job = get_job(stack, cluster["name"], name)
        assert (job["state"], job["operation_id"]) == ("submitting", op_id)
        assert job["message"] == f"operation {op_id} is running: namespace"
        assert (job["kind"], job["namespace"], job["pods"]) == ("HyperPodPyTorchJob",
                                                                namespace, [])
        with stack.client("viewer") as c:
            listed = c.get(f"/api/v1/clusters/{cluster['name']}/jobs").json()["items"]
        assert next(j for j in listed if j["name"] == name)["state"] == "submitting"
        with stack.client() as c:
            assert c.post(f"/api/v1/operations/{op_id}/cancel").status_code == 202
    finally:
        stack.sandbox.clear_holds()
    assert stack.wait_operation(op_id)["status"] == "cancelled"
    failed = get_job(stack, cluster["name"], name)
    assert failed["state"] == "failed" and failed["operation_id"] == op_id
    assert failed["message"] == f"its submission cancelled (operation {op_id})"
    assert stack.kube(cluster["name"]).get_object(
        "kubeflow.org/v1", "HyperPodPyTorchJob", name, namespace) is None
    op = deleted(stack, cluster["name"], name)
    assert op["steps"][0]["resources"]["deleted"] is None  # there was no job to delete
    with stack.client() as c:
        assert c.get(url).status_code == 404
        assert c.delete(url).status_code == 404  # nothing left to delete
    stack.sandbox.set_training(steps=1, job=name)
    again = submitted(stack, cluster["name"], body)
    assert again["namespace"] == namespace and again["operation_id"] is None


@pytest.mark.asyncio
async def test_an_agent_submits_follows_reads_logs_of_and_deletes_a_job_over_mcp(stack, cluster):
    from mcp import Client

    from mcp_server.server import build_server

    name = job_name("agent")
    stack.sandbox.set_training(steps=30, lines_per_second=50, job=name)
    async with Client(build_server(stack.url, stack.operator_token)) as client:
        sent = await client.call_tool("submit_job", {"cluster": cluster["name"],
                                                     "name": name, **TORCHRUN})
        assert not sent.is_error, sent.content[0].text
        reply = sent.structured_content
        assert reply["status_tool"] == "wait_operation"
        assert reply["resource_url"] == f"/api/v1/clusters/{cluster['name']}/jobs/{name}"
        followed = await client.call_tool("wait_operation", reply["status_args"])
        assert followed.structured_content["status"] == "succeeded", followed.content[0].text
        job_args = {"cluster": cluster["name"], "job": name}
        wait_state(stack, cluster["name"], name, "succeeded")
        got = (await client.call_tool("get_job", job_args)).structured_content
        assert got["state"] == "succeeded" and got["recovery_budget"]["remaining"] == 3
        listed = (await client.call_tool("list_jobs", {"cluster": cluster["name"]}))
        assert name in {j["name"] for j in listed.structured_content["items"]}
        logs = (await client.call_tool("get_job_logs", {**job_args, "tail": 5}))
        lines = logs.structured_content["lines"]
        assert len(lines) == 5 and lines[-1]["line"].endswith("samples/s")  # bounded tail
        too_many = await client.call_tool("get_job_logs", {**job_args, "tail": 100_000})
        assert too_many.is_error and "validation_failed" in too_many.content[0].text
        # a job the cluster can never hold: the agent gets the code and the numbers
        huge = await client.call_tool("submit_job", {"cluster": cluster["name"],
                                                     "name": job_name("huge"), **TORCHRUN,
                                                     "nodes": 99})
        assert huge.is_error
        assert huge.content[0].text.startswith(
            "exceeds_capacity: nodes: 99 nodes asked, each with 1 GPU; the cluster can hold "
            "at most 2")
        refused = refusal(huge)
        assert refused["error"]["details"]["can_hold"] == 2 and refused["http_status"] == 422
        gone = await client.call_tool("delete_job", job_args)
        assert not gone.is_error and gone.structured_content["status_tool"] == "wait_operation"
        ended = await client.call_tool("wait_operation", gone.structured_content["status_args"])
        assert ended.structured_content["status"] == "succeeded", ended.content[0].text
    with stack.client("viewer") as c:
        assert c.get(f"/api/v1/clusters/{cluster['name']}/jobs/{name}").status_code == 404
