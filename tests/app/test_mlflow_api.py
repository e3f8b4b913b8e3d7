"""A cluster's MLflow tracking server through REST on the full stack, on the training
cluster the job tests share (no cluster of its own): hypd's own tracking server is created
(Creating → Created on the sandbox's clock), jobs submitted then carry its ARN, experiment and
identity and GET job links it, detaching deletes it; an existing tracking server is attached
and detaching leaves it (a worker killed mid-create: tests/tasks/test_mlflow_kill.py). Each
test detaches what it attached, so the shared cluster's other jobs are as before."""

from __future__ import annotations

import json
import uuid
from urllib.parse import unquote

import httpx
import pytest
from botocore.exceptions import ClientError

from tests.app.jobkit import TORCHRUN, deleted, get_job, job_name, submitted, wait_state
from tests.app.test_clusters_api import _last_seq


@pytest.fixture
def cluster(training):
    return training["name"]


def _mlflow(stack, cluster: str, token: str = "viewer") -> dict:
    with stack.client(token) as c:
        reply = c.get(f"/api/v1/clusters/{cluster}/mlflow")
    assert reply.status_code == 200, reply.text
    return reply.json()


def _put(stack, cluster: str, body: dict):
    with stack.client() as c:
        return c.put(f"/api/v1/clusters/{cluster}/mlflow", json=body)


def _run(stack, reply) -> dict:
    assert reply.status_code == 202, reply.text
    op = stack.wait_operation(reply.json()["operation"]["id"], timeout=120)
    assert op["status"] == "succeeded", op
    return op


def _detach(stack, cluster: str, **query: str) -> dict:
    with stack.client() as c:
        return _run(stack, c.delete(f"/api/v1/clusters/{cluster}/mlflow", params=query))


def _container(manifest: dict) -> dict:
    return manifest["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]


def _sagemaker_calls(stack, action: str, since: int) -> list[dict]:
    return [c for c in stack.sandbox.calls(service="sagemaker", action=action, since=since)
            if 200 <= c["status"] < 300]


def test_hypd_creates_a_tracking_server_jobs_log_to_it_and_detach_deletes_it(stack, cluster):
    since = _last_seq(stack)
    created = _run(stack, _put(stack, cluster, {}))
    try:
        assert [s["name"] for s in created["steps"]] == ["server_role", "tracking_server",
                                                         "identity", "record"]
        view = _mlflow(stack, cluster)
        server = view["tracking_server"]
        assert (view["state"], view["made_by_hypd"], server["status"]) == ("ready", True,
                                                                          "Created")
        assert server["name"] == f"hypd-{cluster}" and server["url"].startswith("https://")
        assert server["artifact_store_uri"].endswith("/mlflow/")
        arn = server["arn"]
        assert len(_sagemaker_calls(stack, "CreateMlflowTrackingServer", since)) == 1
        # the jobs' role may log to this tracking server and nothing else
        policy = stack.aws("iam").get_role_policy(RoleName=f"hypd-{cluster}-mlflow",
                                                  PolicyName="hypd-mlflow")["PolicyDocument"]
        policy = json.loads(unquote(policy)) if isinstance(policy, str) else policy
        bucket = server["artifact_store_uri"].removeprefix("s3://").split("/")[0]
        assert policy["Statement"] == [
            {"Sid": "LogToTrackingServer", "Effect": "Allow",
             "Action": ["sagemaker-mlflow:*"], "Resource": [arn]},
            {"Sid": "ListArtifacts", "Effect": "Allow", "Action": ["s3:ListBucket"],
             "Resource": [f"arn:aws:s3:::{bucket}"],
             "Condition": {"StringLike": {"s3:prefix": ["mlflow/*"]}}},
            {"Sid": "ReadWriteArtifacts", "Effect": "Allow",
             "Action": ["s3:AbortMultipartUpload", "s3:GetObject", "s3:PutObject"],
             "Resource": [f"arn:aws:s3:::{bucket}/mlflow/*"]}]
        # the same request again changes nothing
        again = _put(stack, cluster, {})
        assert again.status_code == 200 and again.json()["changed"] is False, again.text

        name = job_name("mlf")
        stack.sandbox.set_training(steps=100000, lines_per_second=1, job=name)  # runs on
        submitted(stack, cluster, {"name": name, **TORCHRUN})
        manifest = stack.kube(cluster).get_object("sagemaker.amazonaws.com/v1",
                                                  "HyperPodPyTorchJob", name, "default")
        env = {e["name"]: e["value"] for e in _container(manifest)["env"]}
        assert env["MLFLOW_TRACKING_URI"] == arn and env["MLFLOW_EXPERIMENT_NAME"] == name
        pod = manifest["spec"]["replicaSpecs"][0]["template"]["spec"]
        assert pod["serviceAccountName"] == "hypd-mlflow"
        assert get_job(stack, cluster, name)["mlflow"] == {
            "tracking_server_arn": arn, "experiment_name": name,
            "ui_url_route": f"/api/v1/clusters/{cluster}/mlflow/ui-url"}
        # a job in another namespace gets that namespace's service account, bound by Pod
        # Identity to the same role
        other = job_name("mlns")
        made = submitted(stack, cluster, {"name": other, "namespace": "team-mlf", **TORCHRUN,
                                          "env": {"MLFLOW_EXPERIMENT_NAME": "sweep"}})
        assert made["mlflow"]["experiment_name"] == "sweep"
        assert stack.kube(cluster).get_object("v1", "ServiceAccount", "hypd-mlflow",
                                              "team-mlf") is not None
        bound = stack.aws("eks").list_pod_identity_associations(
            clusterName=cluster, serviceAccount="hypd-mlflow")["associations"]
        assert sorted(a["namespace"] for a in bound) == ["default", "team-mlf"]
        # the UI's presigned URL is an operator's
        with stack.client("viewer") as c:
            assert c.get(f"/api/v1/clusters/{cluster}/mlflow/ui-url").status_code == 403
        with stack.client() as c:
            url = c.get(f"/api/v1/clusters/{cluster}/mlflow/ui-url").json()
        assert url["expires_in_seconds"] == 300
        # (the sandbox's link opens a page naming the server: it has no MLflow UI)
        opened = httpx.get(url["url"])
        assert opened.status_code == 200 and server["arn"] in opened.text, opened.text
        # a job logging to it would lose its identity mid-run: detach is refused, naming it
        wait_state(stack, cluster, name, "running")
        with stack.client() as c:
            refused = c.delete(f"/api/v1/clusters/{cluster}/mlflow")
        assert refused.status_code == 409, refused.text
        assert {"kind": "training_job", "name": name, "namespace": "default", "cluster": None,
                "why": "logs to the tracking server", "forceable": True} in refused.json()[
            "error"]["details"]["dependents"]
        with stack.client("viewer") as c:
            plan = c.delete(f"/api/v1/clusters/{cluster}/mlflow",
                            params={"dry_run": "true"}).json()
        assert plan["refused"] is True and plan["force_allowed"] is True
        assert f"tracking server hypd-{cluster} and its role" in plan["removes"]
        assert name in {d["name"] for d in plan["dependents"]}
        assert _mlflow(stack, cluster)["state"] == "ready"
    finally:
        detached = _detach(stack, cluster, force="true")  # the user lets the jobs lose it
        deleted(stack, cluster, name, force="true")
    steps = {s["name"]: s["resources"] for s in detached["steps"]}
    assert steps["tracking_server"]["deleted"] is True
    assert sorted(steps["identity"]["associations_deleted"]) == ["default/hypd-mlflow",
                                                                "team-mlf/hypd-mlflow"]
    assert len(_sagemaker_calls(stack, "DeleteMlflowTrackingServer", since)) == 1
    with pytest.raises(ClientError) as gone:
        stack.aws("sagemaker").describe_mlflow_tracking_server(
            TrackingServerName=f"hypd-{cluster}")
    assert gone.value.response["Error"]["Code"] == "ResourceNotFound"
    for role in (f"hypd-{cluster}-mlflow", f"hypd-{cluster}-mlflow-server"):
        with pytest.raises(ClientError):
            stack.aws("iam").get_role(RoleName=role)
    assert _mlflow(stack, cluster)["state"] == "none"
    name = job_name("nomlf")
    assert submitted(stack, cluster, {"name": name, **TORCHRUN})["mlflow"] is None


def test_an_existing_tracking_server_is_attached_and_detaching_keeps_it(stack, cluster):
    iam, s3, sm = stack.aws("iam"), stack.aws("s3"), stack.aws("sagemaker")
    theirs = f"team-{uuid.uuid4().hex[:6]}"
    role = iam.create_role(RoleName=theirs, AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                "Principal": {"Service":
                                                              "sagemaker.amazonaws.com"}}]}))
    s3.create_bucket(Bucket=theirs, CreateBucketConfiguration={
        "LocationConstraint": "us-west-2"})
    arn = sm.create_mlflow_tracking_server(
        TrackingServerName=theirs, ArtifactStoreUri=f"s3://{theirs}/runs",
        RoleArn=role["Role"]["Arn"])["TrackingServerArn"]
    refused = _put(stack, cluster, {"tracking_server": "no-such-server"})
    assert refused.status_code == 422, refused.text
    assert "tracking_server" in refused.json()["error"]["details"]["fields"]
    elsewhere = arn.replace(arn.split(":")[4], "210987654321")  # same name, another account
    refused = _put(stack, cluster, {"tracking_server": elsewhere})
    assert refused.status_code == 422 and "this panel's account" in refused.text, refused.text
    since = _last_seq(stack)
    try:
        attached = _run(stack, _put(stack, cluster, {"tracking_server": arn}))
        assert [s["name"] for s in attached["steps"]] == ["verify", "identity", "record"]
        view = _mlflow(stack, cluster)
        assert (view["state"], view["made_by_hypd"]) == ("ready", False)
        assert view["tracking_server"]["arn"] == arn
        other = _put(stack, cluster, {})
        assert other.status_code == 409 and theirs in other.json()["error"]["message"]
        name = job_name("att")
        made = submitted(stack, cluster, {"name": name, **TORCHRUN})
        assert made["mlflow"]["tracking_server_arn"] == arn
    finally:
        detached = _detach(stack, cluster)
    assert {s["name"]: s["resources"] for s in detached["steps"]}["tracking_server"][
        "deleted"] is False
    assert _sagemaker_calls(stack, "DeleteMlflowTrackingServer", since) == []
    assert sm.describe_mlflow_tracking_server(TrackingServerName=theirs)[
        "TrackingServerStatus"] == "Created"
    assert _mlflow(stack, cluster)["state"] == "none"
