"""MLflow's pieces that need no AWS: the environment and service account every pod of a job
gets (pinned for both job kinds; tests/cloud/test_training.py checks such a RayJob against
KubeRay's CRD), the two roles' least-privilege policies, and how a tracking server is named
or referred to; the tracking server's ensure, wait and delete against SageMaker's answers
(botocore's Stubber: moto has no MLflow, and the adoption paths are what a re-run after a
crash takes)."""

from __future__ import annotations

import pytest

from cloud import iam, mlflow, recipes
from cloud.errors import NotYet
from tests.cloud.test_training import CONFIGS, _spec

ARN = "arn:aws:sagemaker:us-west-2:123456789012:mlflow-tracking-server/hypd-lab"
RECORD = {"tracking_server_name": "hypd-lab", "tracking_server_arn": ARN,
          "made_by_hypd": True, "role_arn": "arn:aws:iam::123456789012:role/hypd/hypd-lab-mlflow"}


def _pods(manifest: dict) -> list[dict]:
    spec = manifest["spec"]
    if manifest["kind"] == "RayJob":
        cluster = spec["rayClusterSpec"]
        return [cluster["headGroupSpec"]["template"]["spec"],
                *[g["template"]["spec"] for g in cluster.get("workerGroupSpecs") or ()]]
    return [r["template"]["spec"] for r in spec["replicaSpecs"]]


@pytest.mark.parametrize("recipe", ["torchrun", "verl"])
def test_every_pod_of_a_job_gets_the_tracking_server_experiment_and_identity(recipe):
    env = (("WANDB_MODE", "offline"), *mlflow.job_env(RECORD, "fit").items())
    spec = _spec(recipe=recipe, env=tuple(sorted(env)),
                 service_account=mlflow.SERVICE_ACCOUNT)
    built = recipes.build(recipe, spec, CONFIGS[recipe])
    pods = _pods(built.manifest)
    assert len(pods) == (1 if built.kind == recipes.PYTORCH else 2)  # Ray: head + workers
    for pod in pods:
        assert pod["serviceAccountName"] == "hypd-mlflow"
        (container,) = pod["containers"]
        got = {e["name"]: e["value"] for e in container["env"]}
        assert got["MLFLOW_TRACKING_URI"] == ARN  # the ARN: what sagemaker-mlflow resolves
        assert got["MLFLOW_EXPERIMENT_NAME"] == "fit" and got["WANDB_MODE"] == "offline"


def test_without_a_tracking_server_a_job_has_no_mlflow_and_the_default_account():
    built = recipes.build("torchrun", _spec(), CONFIGS["torchrun"])
    (pod,) = _pods(built.manifest)
    assert "serviceAccountName" not in pod
    assert not {e["name"] for e in pod["containers"][0]["env"]} & {mlflow.TRACKING_URI,
                                                                   mlflow.EXPERIMENT}


def test_the_jobs_role_logs_to_one_tracking_server_through_pod_identity_only():
    eks_arn = "arn:aws:eks:us-west-2:123456789012:cluster/lab"
    spec = iam.mlflow_role("lab", "123456789012", eks_arn, ARN, "s3://hypd-lab-b/mlflow/")
    assert spec.name == "hypd-lab-mlflow"
    assert spec.inline == {"hypd-mlflow": {"Version": "2012-10-17", "Statement": [
        {"Sid": "LogToTrackingServer", "Effect": "Allow", "Action": ["sagemaker-mlflow:*"],
         "Resource": [ARN]},
        # the client puts and gets artifacts in the server's store itself
        {"Sid": "ListArtifacts", "Effect": "Allow", "Action": ["s3:ListBucket"],
         "Resource": ["arn:aws:s3:::hypd-lab-b"],
         "Condition": {"StringLike": {"s3:prefix": ["mlflow/*"]}}},
        {"Sid": "ReadWriteArtifacts", "Effect": "Allow",
         "Action": ["s3:AbortMultipartUpload", "s3:GetObject", "s3:PutObject"],
         "Resource": ["arn:aws:s3:::hypd-lab-b/mlflow/*"]}]}}
    # an attached server whose store is a whole bucket: that bucket's objects
    whole = iam.mlflow_role("lab", "123456789012", eks_arn, ARN, "s3://team-artifacts")
    _, listing, objects = whole.inline["hypd-mlflow"]["Statement"]
    assert "Condition" not in listing
    assert objects["Resource"] == ["arn:aws:s3:::team-artifacts/*"]
    (trust,) = spec.trust["Statement"]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert trust["Condition"]["ArnEquals"] == {"aws:SourceArn": eks_arn}


def test_the_tracking_servers_role_reaches_its_artifact_prefix_only():
    spec = iam.mlflow_server_role("lab", "us-west-2", "hypd-lab-bucket", "mlflow")
    assert spec.trust == iam.service_trust("sagemaker.amazonaws.com")
    (policy,) = spec.inline.values()
    listing, objects = policy["Statement"]
    assert listing["Resource"] == ["arn:aws:s3:::hypd-lab-bucket"]
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["mlflow/*"]}}
    assert objects["Resource"] == ["arn:aws:s3:::hypd-lab-bucket/mlflow/*"]
    assert all(a.startswith("s3:") for a in objects["Action"])


def test_a_tracking_server_is_named_by_name_or_by_an_arn_of_the_clusters_region():
    assert mlflow.server_name("lab") == "hypd-lab"
    assert mlflow.artifact_uri("b") == "s3://b/mlflow/"
    assert mlflow.parse_ref(ARN, "us-west-2") == "hypd-lab"
    assert mlflow.parse_ref("team-exp", "us-west-2") == "team-exp"
    with pytest.raises(mlflow.MlflowError, match="is in us-west-2, the cluster in us-east-1"):
        mlflow.parse_ref(ARN, "us-east-1")
    with pytest.raises(mlflow.MlflowError) as bad:
        mlflow.parse_ref("not a name", "us-west-2")
    assert bad.value.field == "tracking_server"


# -- the tracking server's ensure and delete against SageMaker's answers -----------------------

HYPD_TAGS = [{"Key": "hypd:managed-by", "Value": "hypd"}, {"Key": "hypd:cluster", "Value": "lab"}]


def _described(status: str = "Created") -> dict:
    return {"TrackingServerArn": ARN, "TrackingServerName": "hypd-lab",
            "TrackingServerStatus": status}


@pytest.fixture
def sm():
    import boto3
    from botocore.stub import Stubber

    client = boto3.client("sagemaker", region_name="us-west-2", aws_access_key_id="x",
                          aws_secret_access_key="x")
    with Stubber(client) as stub:
        yield client, stub
        stub.assert_no_pending_responses()


def _missing(stub, method: str = "describe_mlflow_tracking_server") -> None:
    stub.add_client_error(method, "ResourceNotFound", http_status_code=400)


def test_a_create_refused_as_in_use_adopts_hypds_tracking_server(sm):
    """What a re-run after a crash meets: the name is taken by the server the crashed attempt
    made (CreateMlflowTrackingServer has no client token), recognised by its tags."""
    client, stub = sm
    _missing(stub)
    stub.add_client_error("create_mlflow_tracking_server", "ResourceInUse")
    stub.add_response("describe_mlflow_tracking_server", _described("Creating"))
    stub.add_response("list_tags", {"Tags": HYPD_TAGS})
    assert mlflow.ensure_server(client, "lab", "bucket", RECORD["role_arn"], "Small") == ARN


def test_an_existing_tracking_server_of_hypds_name_is_adopted_only_with_hypds_tags(sm):
    client, stub = sm
    stub.add_response("describe_mlflow_tracking_server", _described())
    stub.add_response("list_tags", {"Tags": HYPD_TAGS})
    assert mlflow.ensure_server(client, "lab", "bucket", RECORD["role_arn"], "Small") == ARN
    stub.add_response("describe_mlflow_tracking_server", _described())
    stub.add_response("list_tags", {"Tags": []})
    with pytest.raises(mlflow.MlflowError, match="attach it instead") as refused:
        mlflow.ensure_server(client, "lab", "bucket", RECORD["role_arn"], "Small")
    assert refused.value.code == "conflict"


def test_only_hypds_tracking_server_is_deleted_and_not_while_it_is_being_created(sm):
    client, stub = sm
    stub.add_response("describe_mlflow_tracking_server", _described())
    stub.add_response("list_tags", {"Tags": []})
    assert mlflow.delete_server(client, "hypd-lab", "lab") is False  # no delete call made
    stub.add_response("describe_mlflow_tracking_server", _described("Creating"))
    stub.add_response("list_tags", {"Tags": HYPD_TAGS})
    with pytest.raises(NotYet):
        mlflow.delete_server(client, "hypd-lab", "lab")
    stub.add_response("describe_mlflow_tracking_server", _described())
    stub.add_response("list_tags", {"Tags": HYPD_TAGS})
    stub.add_response("delete_mlflow_tracking_server", {"TrackingServerArn": ARN},
                      {"TrackingServerName": "hypd-lab"})
    assert mlflow.delete_server(client, "hypd-lab", "lab") is True


def test_waiting_is_a_not_yet_while_creating_and_a_refusal_when_stopped(sm):
    client, stub = sm
    stub.add_response("describe_mlflow_tracking_server", _described("Creating"))
    with pytest.raises(NotYet) as waiting:
        mlflow.wait_usable(client, "hypd-lab")
    assert waiting.value.retry_after == mlflow.CREATE_POLL_S  # a re-scheduled check
    stub.add_response("describe_mlflow_tracking_server", _described("Stopped"))
    with pytest.raises(mlflow.MlflowError, match="start it first") as stopped:
        mlflow.wait_usable(client, "hypd-lab")
    assert stopped.value.code == "precondition_failed"
    stub.add_response("describe_mlflow_tracking_server", _described("Created"))
    assert mlflow.wait_usable(client, "hypd-lab") is None
