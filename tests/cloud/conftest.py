"""Fixtures for cloud/ tests: moto in-process, reached through hypd's own client factory."""

from __future__ import annotations

import pytest
from moto import mock_aws

from cloud import aws
from cloud.settings import Settings

REGION = "us-west-2"
AWS_MODE = Settings(aws_mode="aws", region=REGION)
"""moto's in-process mock answers the real AWS endpoints, so these clients use `aws` mode;
the sandbox guard itself is tested in test_aws.py."""


@pytest.fixture
def moto_aws(monkeypatch):
    for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2", "AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        yield


@pytest.fixture
def ec2(moto_aws):
    return aws.client("ec2", REGION, AWS_MODE)
