"""sandbox/moto_fidelity.py: moto accepts what AWS accepts (and still refuses the rest)."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from sandbox import moto_fidelity

REGION = "us-west-2"


def _config(sm, instance_type: str) -> dict:
    return sm.create_endpoint_config(EndpointConfigName=f"c-{instance_type}", ProductionVariants=[
        {"VariantName": "AllTraffic", "ModelName": "m", "InstanceType": instance_type,
         "InitialInstanceCount": 1}])


def test_an_endpoint_takes_every_instance_type_sagemakers_api_lists():
    moto_fidelity.apply()
    assert {"ml.g5.8xlarge", "ml.p5.48xlarge", "ml.g6.xlarge"} <= \
        moto_fidelity.endpoint_instance_types()
    with mock_aws():
        sm = boto3.client("sagemaker", region_name=REGION)
        sm.create_model(ModelName="m", ExecutionRoleArn="arn:aws:iam::123456789012:role/r",
                        PrimaryContainer={"Image": "repo/serve:1"})
        assert _config(sm, "ml.g5.8xlarge")["EndpointConfigArn"].endswith(
            "endpoint-config/c-ml.g5.8xlarge")
        with pytest.raises(ClientError) as caught:
            _config(sm, "ml.nope.large")
        assert caught.value.response["Error"]["Code"] == "ValidationException"
        assert "ml.nope.large" in caught.value.response["Error"]["Message"]


def test_a_bucket_is_tagged_as_it_is_made():
    moto_fidelity.apply()
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket="tagged-at-birth", CreateBucketConfiguration={
            "LocationConstraint": REGION,
            "Tags": [{"Key": "hypd:managed-by", "Value": "hypd"}, {"Key": "a", "Value": "b"}]})
        s3.create_bucket(Bucket="plain", CreateBucketConfiguration={
            "LocationConstraint": REGION})
        assert s3.get_bucket_tagging(Bucket="tagged-at-birth")["TagSet"] == [
            {"Key": "hypd:managed-by", "Value": "hypd"}, {"Key": "a", "Value": "b"}]
        with pytest.raises(ClientError) as caught:
            s3.get_bucket_tagging(Bucket="plain")
        assert caught.value.response["Error"]["Code"] == "NoSuchTagSet"
