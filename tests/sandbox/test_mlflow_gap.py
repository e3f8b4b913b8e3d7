"""SageMaker managed MLflow tracking servers as the sandbox answers them, through boto3 over
HTTP: Creating → Created on the sandbox's clock, AWS's checks, a taken name, tags, the presigned
UI URL, and Deleting → gone."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest
from botocore.exceptions import ClientError

from sandbox.control import SandboxControl


@pytest.fixture
def sm(client_factory: Any) -> Any:
    return client_factory("sagemaker")


@pytest.fixture
def role_and_bucket(client_factory: Any) -> tuple[str, str]:
    name = f"mlflow-{uuid.uuid4().hex[:8]}"  # no AWS reset between tests: it costs seconds
    role = client_factory("iam").create_role(
        RoleName=name, AssumeRolePolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Action": "sts:AssumeRole",
                "Principal": {"Service": "sagemaker.amazonaws.com"}}]}))["Role"]["Arn"]
    client_factory("s3").create_bucket(Bucket=name, CreateBucketConfiguration={
        "LocationConstraint": "us-west-2"})
    return role, name


def _status(sm: Any, name: str) -> str:
    return sm.describe_mlflow_tracking_server(TrackingServerName=name)["TrackingServerStatus"]


def _code(exc: pytest.ExceptionInfo[ClientError]) -> str:
    return exc.value.response["Error"]["Code"]


def test_a_tracking_server_is_creating_then_created_then_deleted(
        sm: Any, role_and_bucket: tuple[str, str], control: SandboxControl) -> None:
    role, bucket = role_and_bucket
    arn = sm.create_mlflow_tracking_server(
        TrackingServerName="exp", ArtifactStoreUri=f"s3://{bucket}/mlflow/", RoleArn=role,
        TrackingServerSize="Medium", Tags=[{"Key": "hypd:cluster", "Value": "c1"}],
    )["TrackingServerArn"]
    assert arn == "arn:aws:sagemaker:us-west-2:123456789012:mlflow-tracking-server/exp"
    found = sm.describe_mlflow_tracking_server(TrackingServerName="exp")
    assert (found["TrackingServerStatus"], found["IsActive"]) == ("Creating", "Inactive")
    assert (found["TrackingServerSize"], found["RoleArn"]) == ("Medium", role)
    assert found["ArtifactStoreUri"] == f"s3://{bucket}/mlflow/"
    with pytest.raises(ClientError) as url_early:
        sm.create_presigned_mlflow_tracking_server_url(TrackingServerName="exp")
    assert _code(url_early) == "ValidationException"
    with pytest.raises(ClientError) as delete_early:
        sm.delete_mlflow_tracking_server(TrackingServerName="exp")
    assert _code(delete_early) == "ValidationException"
    control.advance_clock(1200)  # about 20 minutes on AWS
    assert _status(sm, "exp") == "Created"
    found = sm.describe_mlflow_tracking_server(TrackingServerName="exp")
    assert found["IsActive"] == "Active"
    assert found["TrackingServerUrl"].endswith(".us-west-2.experiments.sagemaker.aws")
    assert sm.list_tags(ResourceArn=arn)["Tags"] == [{"Key": "hypd:cluster", "Value": "c1"}]
    listed = sm.list_mlflow_tracking_servers()["TrackingServerSummaries"]
    assert ("exp", "Created") in [(s["TrackingServerName"], s["TrackingServerStatus"])
                                  for s in listed]
    url = sm.create_presigned_mlflow_tracking_server_url(TrackingServerName="exp",
                                                         ExpiresInSeconds=60)["AuthorizedUrl"]
    # the sandbox has no MLflow UI: the link opens a page saying what AWS would show there
    opened = httpx.get(url)
    assert (opened.status_code, opened.headers["content-type"]) == (
        200, "text/html; charset=utf-8")
    assert "On AWS this link opens the MLflow web app" in opened.text
    assert arn in opened.text and f"s3://{bucket}/mlflow/" in opened.text
    assert httpx.get(url.rsplit("/", 1)[0] + "/not-a-token").status_code == 403
    assert sm.delete_mlflow_tracking_server(TrackingServerName="exp")["TrackingServerArn"] == arn
    assert _status(sm, "exp") == "Deleting"
    control.advance_clock(300)
    assert "exp" not in [s["TrackingServerName"] for s in
                         sm.list_mlflow_tracking_servers()["TrackingServerSummaries"]]
    with pytest.raises(ClientError) as gone:
        sm.describe_mlflow_tracking_server(TrackingServerName="exp")
    assert _code(gone) == "ResourceNotFound"


def test_aws_checks_the_role_the_bucket_the_name_and_the_model(
        sm: Any, role_and_bucket: tuple[str, str]) -> None:
    role, bucket = role_and_bucket
    good = {"TrackingServerName": "taken", "ArtifactStoreUri": f"s3://{bucket}/x", "RoleArn": role}
    for bad in ({"RoleArn": "arn:aws:iam::123456789012:role/missing"},
                {"ArtifactStoreUri": "s3://no-such-bucket/x"},
                {"TrackingServerSize": "Huge"}):
        with pytest.raises(ClientError) as refused:
            sm.create_mlflow_tracking_server(**{**good, **bad})
        assert _code(refused) == "ValidationException", bad
    sm.create_mlflow_tracking_server(**good)
    with pytest.raises(ClientError) as taken:
        sm.create_mlflow_tracking_server(**good)
    assert _code(taken) == "ResourceInUse"
