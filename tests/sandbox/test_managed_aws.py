"""sandbox/simulator/managed_aws.py: the inference operator's SageMaker endpoint and TLS
certificate, made as the add-on's configuration says and refused as AWS refuses."""

from __future__ import annotations

import json
import uuid

import pytest
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID as ACCOUNT
from moto.iam.models import iam_backends
from moto.s3.models import s3_backends
from moto.sagemaker.models import sagemaker_backends

from sandbox import moto_fidelity
from sandbox.simulator.managed_aws import CREATED_BY, ManagedAws, OperatorSettings, Refused

REGION = "us-west-2"
SAGEMAKER_TRUST = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"},
     "Action": "sts:AssumeRole"}]}


@pytest.fixture
def world():
    moto_fidelity.apply()
    with mock_aws():
        iam = iam_backends[ACCOUNT]["aws"]
        role = iam.create_role(f"op-{uuid.uuid4().hex[:6]}", json.dumps(SAGEMAKER_TRUST),
                               "/hypd/", None, "", [], None)
        bucket = f"hyperpod-tls-{uuid.uuid4().hex[:8]}"
        s3_backends[ACCOUNT]["aws"].create_bucket(bucket, REGION)
        settings = OperatorSettings(ACCOUNT, REGION, role.arn, bucket)
        yield {"iam": iam, "settings": settings, "aws": ManagedAws(lambda: settings),
               "sm": sagemaker_backends[ACCOUNT][REGION], "s3": s3_backends[ACCOUNT]["aws"]}


def test_an_endpoint_is_registered_once_and_deregistered(world):
    aws, sm, s3, settings = world["aws"], world["sm"], world["s3"], world["settings"]
    made = aws.register("default", "chat", "chat", "ml.g5.8xlarge", "repo/serve:1")
    assert made["endpoints"]["sagemaker"]["state"] == "CreationCompleted"
    assert made["endpoints"]["sagemaker"]["endpointArn"] == sm.endpoints["chat"].arn
    assert sm._models["chat"].execution_role_arn == settings.execution_role
    assert sm.endpoint_configs["chat"].production_variants[0]["InstanceType"] == "ml.g5.8xlarge"
    for resource in (sm.endpoints["chat"], sm.endpoint_configs["chat"], sm._models["chat"]):
        assert CREATED_BY in resource.tags  # what AWS's policy for the operator requires
    key = made["tlsCertificate"]["tlsCertificateS3Keys"][0]
    written = s3.get_object(settings.tls_bucket, key)
    assert s3.get_object_tagging(written)["Tags"] == [CREATED_BY]
    # a second reconcile adopts what the first made
    assert aws.register("default", "chat", "chat", "ml.g5.8xlarge", "repo/serve:1") == made
    aws.deregister("default", "chat", "chat")
    assert "chat" not in sm.endpoints and "chat" not in sm.endpoint_configs
    assert "chat" not in sm._models and key not in s3.buckets[settings.tls_bucket].keys


def test_aws_refuses_what_it_refuses(world):
    aws, sm, iam, settings = world["aws"], world["sm"], world["iam"], world["settings"]
    untrusted = iam.create_role(f"x-{uuid.uuid4().hex[:6]}", json.dumps(
        {"Version": "2012-10-17", "Statement": []}), "/", None, "", [], None)
    cases = {
        "Could not assume role": OperatorSettings(ACCOUNT, REGION, untrusted.arn,
                                                  settings.tls_bucket),
        "allows principal 'sagemaker.amazonaws.com'": OperatorSettings(
            ACCOUNT, REGION, f"arn:aws:iam::{ACCOUNT}:role/gone", settings.tls_bucket),
        "bucket hyperpod-tls-gone does not exist": OperatorSettings(
            ACCOUNT, REGION, settings.execution_role, "hyperpod-tls-gone"),
        "names no execution role": OperatorSettings(ACCOUNT, REGION, None, None),
    }
    for message, wrong in cases.items():
        with pytest.raises(Refused, match=message):
            ManagedAws(lambda w=wrong: w).register("default", "e", "e", "ml.g5.8xlarge", "i")
    assert "e" not in sm.endpoints
    # an endpoint of that name that the operator did not make stays someone else's
    sm.create_model("other", settings.execution_role, {"Image": "i"}, None, None, [])
    sm.create_endpoint_config("other", [{"VariantName": "AllTraffic", "ModelName": "other",
                                         "InstanceType": "ml.g5.xlarge",
                                         "InitialInstanceCount": 1}], {}, {}, [], "")
    held = sm.create_endpoint("taken", "other", [])
    with pytest.raises(Refused, match="already existing endpoint"):
        aws.register("default", "mine", "taken", "ml.g5.8xlarge", "i")
    aws.deregister("default", "mine", "taken")
    assert sm.endpoints["taken"] is held
