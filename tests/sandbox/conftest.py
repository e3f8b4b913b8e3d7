"""Fixtures for the sandbox's own tests: one local AWS per test module, fast clock."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config

from sandbox.control import SandboxControl
from sandbox.local_aws import LocalAws

REGION = "us-west-2"
SPEED = 1000.0


@pytest.fixture(scope="module")
def local_aws(request: pytest.FixtureRequest) -> Iterator[LocalAws]:
    """At SPEED, or at the module's own `SANDBOX_SPEED` (1.0: only `advance_clock` moves the
    timed states, so a test sees each in-between state however slow the machine is)."""
    aws = LocalAws(speed=getattr(request.module, "SANDBOX_SPEED", SPEED))
    aws.start()
    try:
        yield aws
    finally:
        aws.stop()


@pytest.fixture
def control(local_aws: LocalAws) -> Iterator[SandboxControl]:
    """The control client, with the sandbox's records wiped before each test."""
    ctl = SandboxControl(local_aws.url)
    ctl.reset()
    yield ctl
    ctl.reset()


@pytest.fixture(scope="module")
def client_factory(local_aws: LocalAws) -> Any:
    """boto3 clients on the local AWS; `attempts=1` where an error is the expected answer."""

    def make(service: str, attempts: int | None = 1, **config: Any) -> Any:
        if attempts is not None:
            config["retries"] = {"total_max_attempts": attempts}
        return boto3.client(
            service,
            endpoint_url=local_aws.url,
            region_name=REGION,
            aws_access_key_id="AKIATESTSANDBOX00000",
            aws_secret_access_key="test-secret",
            aws_session_token="test-session-token",
            config=Config(**config),
        )

    return make


@pytest.fixture(scope="module")
def ec2(client_factory: Any) -> Any:
    return client_factory("ec2")
