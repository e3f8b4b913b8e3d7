"""Model download through REST on the full stack: a Kubernetes Job uploads through the S3
API into the cluster's bucket under models/; the operation reports files and bytes and
finishes when the Job does; a hub token is named by its Secret only and never appears in
the operation, its events, the logs or the Job's spec."""

from __future__ import annotations

import base64
import json

import pytest

from tests.app.test_clusters_api import _body, _create, _name
from tests.stack import wait_until

TOKEN = "hf_sandboxTOKENnever42shown"  # a test value: it must not leak


@pytest.fixture(scope="module")
def cluster(stack):
    stack.wait_idle()
    name = _name("mdl")
    assert _create(stack, _body(name, instance_count=1))["status"] == "succeeded"
    from kubernetes.client import CoreV1Api

    CoreV1Api(stack.kube(name).api).create_namespaced_secret("default", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hub"},
        "data": {"token": base64.b64encode(TOKEN.encode()).decode()}})
    return name


def _download(stack, cluster: str, body: dict):
    with stack.client() as c:
        return c.post(f"/api/v1/clusters/{cluster}/models", json=body)


def _models(stack, cluster: str) -> dict:
    with stack.client("viewer") as c:
        reply = c.get(f"/api/v1/clusters/{cluster}/models")
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_a_download_reports_progress_finishes_and_never_shows_its_token(stack, cluster):
    reply = _download(stack, cluster, {
        "name": "llama-small", "source": "huggingface", "repo": "meta-llama/Llama-3.2-1B",
        "revision": "main", "hub_token_secret": {"name": "hub", "key": "token"}})
    assert reply.status_code == 202, reply.text
    op_id = reply.json()["operation"]["id"]
    op = stack.wait_operation(op_id, timeout=120)
    assert op["status"] == "succeeded", op
    job_step = next(s for s in op["steps"] if s["name"] == "job")
    assert job_step["resources"]["files"] == 4
    assert job_step["resources"]["bytes"] > 65_536
    # the bucket holds them, uploaded through the S3 API
    listed = _models(stack, cluster)
    item = next(i for i in listed["items"] if i["name"] == "llama-small")
    assert (item["state"], item["files"]) == ("available", 4)
    assert item["bytes"] == job_step["resources"]["bytes"]
    keys = [o["Key"] for o in stack.aws("s3").list_objects_v2(
        Bucket=listed["bucket"], Prefix="models/llama-small/")["Contents"]]
    assert sorted(keys) == sorted(f"models/llama-small/{f}" for f in (
        "config.json", "generation_config.json", "model.safetensors", "tokenizer.json"))
    # the Job: complete, from the default image, the token only as a Secret reference
    kube = stack.kube(cluster)
    job = kube.get_object("batch/v1", "Job", "hypd-model-llama-small", "default")
    assert any(c["type"] == "Complete" for c in job["status"]["conditions"])
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "python:3.12-slim"
    env = job["spec"]["template"]["spec"]["containers"][0]["env"]
    token_env = next(e for e in env if e["name"] == "HF_TOKEN")
    assert token_env == {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {
        "name": "hub", "key": "token"}}}
    # the token is nowhere: operation, events, logs, the Job
    with stack.client() as c:
        events = c.get(f"/api/v1/operations/{op_id}/events").text
        ops = c.get("/api/v1/operations?limit=500").text
    pods = [p for p in kube.list_objects("v1", "Pod", "default")
            if p["metadata"].get("labels", {}).get("job-name") == "hypd-model-llama-small"]
    assert pods
    from kubernetes.client import CoreV1Api

    pod_log = CoreV1Api(kube.api).read_namespaced_pod_log(pods[0]["metadata"]["name"],
                                                          "default")
    assert "Successfully installed" in pod_log  # the stock image has no tools of its own
    haystack = {"operation": json.dumps(op), "events": events, "operations": ops,
                "job": json.dumps(job), "pod": json.dumps(pods[0]), "pod log": pod_log,
                "worker log": stack.log("worker"), "web log": stack.log("web"),
                "kube events": json.dumps(kube.list_objects("v1", "Event", "default"))}
    for where, text in haystack.items():
        assert TOKEN not in text, where
        assert base64.b64encode(TOKEN.encode()).decode() not in text, where


def test_a_gated_model_without_a_token_fails_and_says_where_to_look(stack, cluster):
    reply = _download(stack, cluster, {"name": "gated", "source": "huggingface",
                                       "repo": "meta-llama/Llama-3.1-8B"})
    op = stack.wait_operation(reply.json()["operation"]["id"], timeout=120)
    assert op["status"] == "failed"
    assert "kubectl logs" in op["error"]["message"]
    item = next(i for i in _models(stack, cluster)["items"] if i["name"] == "gated")
    assert item["state"] == "failed"


def test_an_s3_prefix_is_copied_and_its_read_is_taken_back(stack, cluster):
    s3 = stack.aws("s3")
    s3.create_bucket(Bucket=f"src-{cluster}",
                     CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    for name in ("config.json", "weights.bin"):
        s3.put_object(Bucket=f"src-{cluster}", Key=f"exports/m1/{name}", Body=b"x" * 1000)
    reply = _download(stack, cluster, {"name": "copied", "source": "s3",
                                       "s3_uri": f"s3://src-{cluster}/exports/m1"})
    op = stack.wait_operation(reply.json()["operation"]["id"], timeout=120)
    assert op["status"] == "succeeded", op
    assert [s["name"] for s in op["steps"]] == ["identity", "job", "cleanup"]
    item = next(i for i in _models(stack, cluster)["items"] if i["name"] == "copied")
    assert (item["files"], item["bytes"]) == (2, 2000)
    iam = stack.aws("iam")
    role = f"hypd-{cluster}-model-download"
    assert iam.list_role_policies(RoleName=role)["PolicyNames"] == ["hypd-model-download"]


def test_a_failed_s3_copy_takes_its_read_back_once(stack, cluster):
    """The Job fails (its source bucket does not exist): the read granted for it goes before
    the operation fails — one DeleteRolePolicy for the one PutRolePolicy, none repeated."""
    from tests.app.test_clusters_api import _calls, _last_seq

    since = _last_seq(stack)
    reply = _download(stack, cluster, {"name": "lost", "source": "s3",
                                       "s3_uri": f"s3://gone-{cluster}/exports/m1"})
    op = stack.wait_operation(reply.json()["operation"]["id"], timeout=120)
    assert op["status"] == "failed" and "kubectl logs" in op["error"]["message"], op
    job = next(s for s in op["steps"] if s["name"] == "job")
    assert job["resources"]["source_grant"] == "revoked"  # before the step failed
    _assert_only_the_download_policy_left(stack, cluster)
    for action in ("PutRolePolicy", "DeleteRolePolicy"):
        mine = [c for c in _calls(stack, "iam", action, since)
                if c["params"].get("PolicyName") == "hypd-source-lost"]
        assert len(mine) == 1, (action, mine)


def _assert_only_the_download_policy_left(stack, cluster: str) -> None:
    role = f"hypd-{cluster}-model-download"
    assert stack.aws("iam").list_role_policies(RoleName=role)["PolicyNames"] == [
        "hypd-model-download"]


def _pods_of(kube, job: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in kube.list_objects("v1", "Pod", "default")
                  if (p["metadata"].get("labels") or {}).get("job-name") == job)


def test_a_cancelled_s3_copy_deletes_its_job_and_takes_its_read_back(stack, cluster):
    """Cancelled while its Job is being made (the API server's answer held): the operation
    stops at the next step boundary, deletes its own Job with the Job's pods, and takes the
    source's read back; another download's Job — here one carrying the same model label, as
    a broad selector would find it — runs on untouched."""
    from cloud import kube as kubeapi

    kube = stack.kube(cluster)
    s3 = stack.aws("s3")
    s3.create_bucket(Bucket=f"src2-{cluster}",
                     CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    s3.put_object(Bucket=f"src2-{cluster}", Key="exports/m3/config.json", Body=b"{}")
    other = kubeapi.create_object(kube.api, {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "hypd-model-other", "namespace": "default",
                     "labels": {"hypd.io/model": "stopped", "hypd.io/operation": "op-other"}},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "download", "image": "busybox", "command": ["sleep", "infinity"]}]}}}})
    other_pods = wait_until(lambda: _pods_of(kube, "hypd-model-other"), 30,
                            what="the other download's pod")
    hold = stack.sandbox.hold("kubernetes", "patch jobs")
    try:
        reply = _download(stack, cluster, {"name": "stopped", "source": "s3",
                                           "s3_uri": f"s3://src2-{cluster}/exports/m3"})
        op_id = reply.json()["operation"]["id"]
        stack.sandbox.wait_held(hold, timeout=60)
        job = kube.get_object("batch/v1", "Job", "hypd-model-stopped", "default")
        assert job["metadata"]["labels"]["hypd.io/operation"] == op_id
        pods = wait_until(lambda: _pods_of(kube, "hypd-model-stopped"), 30,
                          what="the download's pod")
        with stack.client() as c:
            assert c.post(f"/api/v1/operations/{op_id}/cancel").status_code == 202
    finally:
        stack.sandbox.release(hold)
    try:
        op = stack.wait_operation(op_id, timeout=120)
        assert op["status"] == "cancelled", op
        # recorded on the step it stopped at: the job step's, or the cleanup's when the
        # cancel landed after the Job had finished
        grants = [s["resources"]["source_grant"] for s in op["steps"]
                  if (s.get("resources") or {}).get("source_grant")]
        assert grants[-1] == "revoked", op["steps"]
        _assert_only_the_download_policy_left(stack, cluster)
        # its Job is gone, and the Job's pods with it (Background propagation)
        assert kube.get_object("batch/v1", "Job", "hypd-model-stopped", "default") is None
        left = {p["metadata"]["name"] for p in kube.list_objects("v1", "Pod", "default")}
        assert not left & set(pods), pods
        deleted = [s["resources"]["job_deleted"] for s in op["steps"]
                   if (s.get("resources") or {}).get("job_deleted")]
        assert deleted == [job["metadata"]["uid"]], op["steps"]
        # the other download's Job and pod are untouched
        kept = kube.get_object("batch/v1", "Job", "hypd-model-other", "default")
        assert kept is not None and kept["metadata"]["uid"] == other["metadata"]["uid"]
        assert _pods_of(kube, "hypd-model-other") == other_pods
    finally:
        kube.delete_object("batch/v1", "Job", "hypd-model-other", "default")


def test_a_download_refuses_a_missing_secret_a_taken_name_and_a_raw_token(stack, cluster):
    reply = _download(stack, cluster, {"name": "x1", "source": "huggingface", "repo": "a/b",
                                       "hub_token_secret": {"name": "nope", "key": "token"}})
    assert reply.status_code == 422 and "hub_token_secret" in reply.text
    reply = _download(stack, cluster, {"name": "x1", "source": "huggingface", "repo": "a/b",
                                       "hub_token": TOKEN})
    assert reply.status_code == 422 and TOKEN not in reply.text
    bucket = _models(stack, cluster)["bucket"]
    stack.aws("s3").put_object(Bucket=bucket, Key="models/taken/config.json", Body=b"{}")
    reply = _download(stack, cluster, {"name": "taken", "source": "huggingface",
                                       "repo": "a/b"})
    assert reply.status_code == 409 and "already" in reply.text
