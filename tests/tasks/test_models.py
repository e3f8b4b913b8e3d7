"""The model.download steps against a local Kubernetes (the sandbox's API server: delete
preconditions, garbage collection by ownerReferences), through a small StepContext: the Job
is built in the step from the worker's own settings, and a cancel deletes the operation's own
Job with its pods — never another download's — and, run again, deletes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import tasks.models as steps
from cloud import kube, models

BAKED = "123456789012.dkr.ecr.us-west-2.amazonaws.com/hypd-model-download:0.34.4"


@pytest.fixture(scope="module")
def api() -> Iterator[Any]:
    from sandbox.kube import KubeRegistry
    from sandbox.kube.access import CLUSTER_ADMIN
    from tests.sandbox.ekskit import local_api
    from tests.sandbox.test_pod_lifecycle import ME

    registry = KubeRegistry()
    try:
        local = registry.ensure("models-lab")
        registry.set_access("models-lab", ME, {CLUSTER_ADMIN: {"type": "cluster"}})
        client = local_api(local)
        yield client
        client.close()
    finally:
        registry.close()


@pytest.fixture
def cluster(api: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The steps reach the local Kubernetes as they would reach the operation's cluster."""
    monkeypatch.setattr(steps, "_api", lambda ctx: api)
    return api


class Context:
    """What the engine gives a step of a Hugging Face download (no IAM on that path); its
    S3 is moto's, in this process."""

    def __init__(self, model: str, op_id: str, step: str = "job") -> None:
        self.op_id, self.step, self.region = op_id, step, "us-west-2"
        self.params = {"cluster": "lab", "name": model, "source": "huggingface",
                       "repo": "org/m", "bucket": "bkt", "region": "us-west-2"}
        self.resources: dict[str, Any] = {}
        self.outputs: dict[str, dict[str, Any]] = {}

    def record(self, **resources: Any) -> None:
        self.resources.update(resources)

    def client(self, service: str) -> Any:
        import boto3

        return boto3.client(service, region_name=self.region)


@pytest.fixture
def bucket() -> Iterator[Any]:
    """The cluster's bucket ("bkt"), in moto."""
    import boto3
    from moto import mock_aws

    with mock_aws():
        s3 = boto3.client("s3", region_name="us-west-2")
        s3.create_bucket(Bucket="bkt", CreateBucketConfiguration={
            "LocationConstraint": "us-west-2"})
        yield s3


def _files(s3: Any, model: str) -> list[str]:
    listed = s3.list_objects_v2(Bucket="bkt", Prefix=f"models/{model}/")
    return sorted(o["Key"] for o in listed.get("Contents") or ())


def test_the_job_is_built_from_the_workers_own_setting(cluster, monkeypatch):
    monkeypatch.setenv("HYPD_MODEL_DOWNLOAD_IMAGE", BAKED)
    made = steps.apply_job(Context("setting", "op-setting"))
    job = kube.get_object(cluster, "batch/v1", "Job", "hypd-model-setting", models.NAMESPACE)
    assert job["metadata"]["uid"] == made["uid"]
    assert [c["image"] for c in job["spec"]["template"]["spec"]["containers"]] == [BAKED]
    monkeypatch.delenv("HYPD_MODEL_DOWNLOAD_IMAGE")
    assert steps.apply_job(Context("stock", "op-stock"))["uid"]
    job = kube.get_object(cluster, "batch/v1", "Job", "hypd-model-stock", models.NAMESPACE)
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "python:3.12-slim"


def _job_with_a_pod(api: Any, model: str, operation: str) -> tuple[str, str]:
    """A download Job as `operation`'s step made it, and a pod it owns: (job uid, pod)."""
    uid = steps.apply_job(Context(model, operation))["uid"]
    pod = f"{models.job_name(model)}-abcde"
    job = kube.get_object(api, "batch/v1", "Job", models.job_name(model), models.NAMESPACE)
    kube.create_object(api, {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": pod, "namespace": models.NAMESPACE,
                     "labels": dict(job["spec"]["template"]["metadata"]["labels"]),
                     "ownerReferences": [{
            "apiVersion": "batch/v1", "kind": "Job", "name": models.job_name(model),
            "uid": uid, "controller": True, "blockOwnerDeletion": True}]},
        "spec": job["spec"]["template"]["spec"]})
    return uid, pod


def _exists(api: Any, api_version: str, kind: str, name: str) -> bool:
    return kube.get_object(api, api_version, kind, name, models.NAMESPACE) is not None


def test_a_cancel_deletes_only_its_own_job_with_its_pods_and_again_deletes_nothing(cluster,
                                                                                   bucket):
    mine, my_pod = _job_with_a_pod(cluster, "mine", "op-mine")
    _, their_pod = _job_with_a_pod(cluster, "theirs", "op-theirs")
    # cancelled before its own Job was made, while an earlier download's holds the name
    early = Context("theirs", "op-mine", step="identity")
    steps.take_back(early)
    assert _exists(cluster, "batch/v1", "Job", "hypd-model-theirs")
    assert "job_deleted" not in early.resources
    # cancelled with its Job running: the Job goes, and its pods with it (Background)
    ctx = Context("mine", "op-mine")
    steps.take_back(ctx)
    assert ctx.resources["job_deleted"] == mine
    assert not _exists(cluster, "batch/v1", "Job", "hypd-model-mine")
    assert not _exists(cluster, "v1", "Pod", my_pod)
    assert _exists(cluster, "v1", "Pod", their_pod)
    # run again (the worker died after the deletion): nothing of its own is left to delete
    again = Context("mine", "op-mine")
    steps.take_back(again)
    assert "job_deleted" not in again.resources
    # a deletion bound to a uid never reaches another object under the same name
    assert not kube.delete_object(cluster, "batch/v1", "Job", "hypd-model-theirs",
                                  models.NAMESPACE, uid=mine)
    assert _exists(cluster, "batch/v1", "Job", "hypd-model-theirs")


def test_a_cancelled_download_removes_its_partial_files_once_its_pods_are_gone(cluster, bucket):
    """Cancelled in its job step: the files it had written go (a new download of the name
    would be refused while any is there) — but only once no pod of it can write any more;
    cancelled after its Job finished (the cleanup step), the finished model stays."""
    _, pod = _job_with_a_pod(cluster, "part", "op-part")
    for name in ("config.json", "model.safetensors"):
        bucket.put_object(Bucket="bkt", Key=f"models/part/{name}", Body=b"x")
    # a pod of it that its Job does not own (so not deleted with the Job) is still writing
    stray = dict(kube.get_object(cluster, "v1", "Pod", pod, models.NAMESPACE))
    kube.create_object(cluster, {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "part-stray", "namespace": models.NAMESPACE,
                     "labels": stray["metadata"]["labels"]},
        "spec": stray["spec"]})
    waiting = Context("part", "op-part")
    with pytest.raises(steps.StepRetry, match="part-stray"):
        steps.take_back(waiting)
    assert len(_files(bucket, "part")) == 2  # nothing removed while a pod may still write
    kube.delete_object(cluster, "v1", "Pod", "part-stray", models.NAMESPACE)
    done = Context("part", "op-part")
    steps.take_back(done)
    assert _files(bucket, "part") == [] and done.resources["partial_removed"] == 2
    # a finished download cancelled at its cleanup step keeps its model
    bucket.put_object(Bucket="bkt", Key="models/whole/config.json", Body=b"{}")
    steps.take_back(Context("whole", "op-whole", step="cleanup"))
    assert _files(bucket, "whole") == ["models/whole/config.json"]
