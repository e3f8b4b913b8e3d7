"""The client factory's guard, credentials, configuration and cache; error classification;
tag helpers."""

from __future__ import annotations

import dataclasses
import threading

import pytest
from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ParamValidationError,
    ReadTimeoutError,
    SSLError,
)

from cloud import aws
from cloud.settings import Settings, SettingsError

SANDBOX = Settings(aws_mode="sandbox", region="us-west-2")


@pytest.fixture(autouse=True)
def _fresh_cache():
    aws.clear_cache()
    yield
    aws.clear_cache()


@pytest.fixture
def isolated_env(monkeypatch, tmp_path):
    """Ambient AWS configuration that the sandbox must ignore: real-looking keys in the
    environment, a profile, and ~/.aws files with another region, keys and endpoint."""
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "config").write_text(
        "[default]\nregion = eu-west-1\nendpoint_url = https://example.com\n"
        "[profile work]\nregion = eu-central-1\n")
    (home / ".aws" / "credentials").write_text(
        "[default]\naws_access_key_id = AKIAFROMFILE\naws_secret_access_key = fromfile\n"
        "[work]\naws_access_key_id = AKIAWORK\naws_secret_access_key = work\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("AWS_CONFIG_FILE", raising=False)
    monkeypatch.delenv("AWS_SHARED_CREDENTIALS_FILE", raising=False)
    monkeypatch.setenv("AWS_PROFILE", "work")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAREALKEY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "real-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "real-token")
    for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


# -- sandbox guard -------------------------------------------------------------------------


def test_sandbox_refuses_without_endpoint(isolated_env):
    with pytest.raises(SettingsError, match="AWS_ENDPOINT_URL is not set"):
        aws.client("ec2", settings=SANDBOX)


@pytest.mark.parametrize("url", [
    "https://ec2.us-west-2.amazonaws.com",
    "http://10.0.0.5:5000",
    "http://0.0.0.0:5000",
    "http://localhost.example.com:5000",
    "ftp://127.0.0.1:5000",
    "127.0.0.1:5000",
])
def test_sandbox_refuses_non_loopback_endpoint(isolated_env, url):
    isolated_env.setenv("AWS_ENDPOINT_URL", url)
    with pytest.raises(SettingsError, match="not a loopback address"):
        aws.client("ec2", settings=SANDBOX)


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:5000", "http://127.1.2.3:80", "http://localhost:5000", "http://[::1]:5000",
])
def test_sandbox_accepts_loopback_endpoint(isolated_env, url):
    isolated_env.setenv("AWS_ENDPOINT_URL", url)
    client = aws.client("ec2", settings=SANDBOX)
    assert client.meta.endpoint_url == url


def test_sandbox_checks_the_service_specific_endpoint_that_boto3_would_use(isolated_env):
    isolated_env.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000")
    isolated_env.setenv("AWS_ENDPOINT_URL_S3", "https://s3.amazonaws.com")
    assert aws.client("ec2", settings=SANDBOX).meta.endpoint_url == "http://127.0.0.1:5000"
    with pytest.raises(SettingsError, match="AWS_ENDPOINT_URL_S3"):
        aws.client("s3", settings=SANDBOX)


def test_sandbox_forces_fake_credentials_and_ignores_dot_aws(isolated_env):
    isolated_env.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000")
    client = aws.client("ec2", settings=SANDBOX)
    creds = client._request_signer._credentials
    assert (creds.access_key, creds.secret_key, creds.token) == ("testing", "testing", None)
    assert client.meta.region_name == "us-west-2"  # not eu-west-1 / eu-central-1 from ~/.aws


def test_aws_mode_uses_the_ambient_credentials(isolated_env):
    client = aws.client("ec2", settings=Settings(aws_mode="aws", region="us-east-1"))
    assert client._request_signer._credentials.access_key == "AKIAREALKEY"
    assert client.meta.region_name == "us-east-1"


def test_sandbox_client_really_talks_to_a_local_server(isolated_env):
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        isolated_env.setenv("AWS_ENDPOINT_URL", f"http://{host}:{port}")
        zones = aws.client("ec2", settings=SANDBOX).describe_availability_zones()
        assert [z["ZoneName"] for z in zones["AvailabilityZones"]][:2] == [
            "us-west-2a", "us-west-2b"]
    finally:
        server.stop()


# -- configuration and cache ---------------------------------------------------------------


def test_client_configuration(isolated_env):
    isolated_env.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000")
    config = aws.client("ec2", settings=SANDBOX).meta.config
    assert config.retries == {"mode": "standard", "total_max_attempts": aws.MAX_ATTEMPTS}
    assert config.connect_timeout == aws.CONNECT_TIMEOUT_S
    assert config.read_timeout == 30.0  # the settings' default
    slow = dataclasses.replace(SANDBOX, aws_read_timeout_s=120.0)
    assert aws.client("ec2", settings=slow).meta.config.read_timeout == 120.0


def test_clients_are_cached_per_service_region_and_endpoint(isolated_env):
    isolated_env.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000")
    first = aws.client("ec2", settings=SANDBOX)
    assert aws.client("ec2", settings=SANDBOX) is first
    assert aws.client("ec2", "us-west-2", SANDBOX) is first
    assert aws.client("ec2", "us-east-1", SANDBOX) is not first
    assert aws.client("s3", settings=SANDBOX) is not first
    isolated_env.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5001")
    moved = aws.client("ec2", settings=SANDBOX)
    assert moved is not first and moved.meta.endpoint_url == "http://127.0.0.1:5001"


def test_clients_are_built_safely_from_many_threads(isolated_env):
    isolated_env.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000")
    got, errors = [], []

    def build():
        try:
            got.append(aws.client("sts", settings=SANDBOX))
        except Exception as exc:  # pragma: no cover - the assertion shows it
            errors.append(exc)

    threads = [threading.Thread(target=build) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len({id(c) for c in got}) == 1  # one shared, thread-safe client


def test_cache_is_dropped_after_fork(isolated_env, monkeypatch):
    isolated_env.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000")
    first = aws.client("ec2", settings=SANDBOX)
    monkeypatch.setattr(aws, "_pid", -1)  # as a forked child sees it
    assert aws.client("ec2", settings=SANDBOX) is not first


def test_settings_default_to_the_environment(isolated_env):
    isolated_env.setenv("HYPD_AWS", "sandbox")
    isolated_env.setenv("HYPD_REGION", "eu-north-1")
    with pytest.raises(SettingsError):
        aws.client("ec2")
    isolated_env.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000")
    assert aws.client("ec2").meta.region_name == "eu-north-1"


# -- errors --------------------------------------------------------------------------------


def client_error(code: str, status: int = 400) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "m"},
                        "ResponseMetadata": {"HTTPStatusCode": status}}, "Op")


@pytest.mark.parametrize("exc", [
    client_error("Throttling"),
    client_error("ThrottlingException"),
    client_error("RequestLimitExceeded"),
    client_error("TooManyRequestsException"),
    client_error("SomethingNew", 500),
    client_error("InternalError", 500),
    client_error("ServiceUnavailable", 503),
    client_error("Whatever", 429),
    EndpointConnectionError(endpoint_url="http://127.0.0.1:1"),
    ConnectTimeoutError(endpoint_url="http://127.0.0.1:1"),
    ReadTimeoutError(endpoint_url="http://127.0.0.1:1"),
    TimeoutError(),
    ConnectionResetError(),
])
def test_transient_errors(exc):
    assert aws.is_transient(exc)


@pytest.mark.parametrize("exc", [
    client_error("DependencyViolation"),
    client_error("InvalidVpcID.NotFound"),
    client_error("ValidationException"),
    client_error("AccessDenied", 403),
    ParamValidationError(report="bad"),
    NoCredentialsError(),
    SSLError(endpoint_url="https://x", error="bad certificate"),
    ValueError("x"),
])
def test_permanent_errors(exc):
    assert not aws.is_transient(exc)


def test_error_code_and_not_found():
    assert aws.error_code(client_error("DependencyViolation")) == "DependencyViolation"
    assert aws.error_code(ValueError("x")) is None
    assert aws.is_not_found(client_error("InvalidSubnetID.NotFound"))
    assert aws.is_not_found(client_error("NatGatewayNotFound"))
    assert not aws.is_not_found(client_error("DependencyViolation"))


# -- tags ----------------------------------------------------------------------------------


def test_tags_for():
    assert aws.MANAGED_BY == "hypd:managed-by"
    assert aws.tags_for(aws.NETWORK_TAG, "lab", role="vpc", Name="hypd-lab") == [
        {"Key": "hypd:managed-by", "Value": "hypd"},
        {"Key": "hypd:network", "Value": "lab"},
        {"Key": "hypd:role", "Value": "vpc"},
        {"Key": "Name", "Value": "hypd-lab"},
    ]
    assert aws.tags_for(aws.CLUSTER_TAG, "c1", **{"kubernetes.io/role/elb": "1"})[2] == {
        "Key": "kubernetes.io/role/elb", "Value": "1"}
    with pytest.raises(ValueError):
        aws.tags_for(aws.NETWORK_TAG, "")


def test_tag_filters_and_dict():
    assert aws.tag_filters(aws.NETWORK_TAG, "lab", role=["a", "b"]) == [
        {"Name": "tag:hypd:managed-by", "Values": ["hypd"]},
        {"Name": "tag:hypd:network", "Values": ["lab"]},
        {"Name": "tag:hypd:role", "Values": ["a", "b"]},
    ]
    assert aws.tag_filters(aws.CLUSTER_TAG)[1] == {"Name": "tag-key", "Values": ["hypd:cluster"]}
    assert aws.tag_dict({"Tags": [{"Key": "a", "Value": "1"}]}) == {"a": "1"}
    assert aws.tag_dict({}) == {}


def test_aws_mode_clients_follow_the_endpoint_variables(isolated_env):
    settings = Settings(aws_mode="aws", region="us-west-2")
    plain = aws.client("ec2", settings=settings)
    assert plain.meta.endpoint_url == "https://ec2.us-west-2.amazonaws.com"
    isolated_env.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000")
    assert aws.client("ec2", settings=settings).meta.endpoint_url == "http://127.0.0.1:5000"
    isolated_env.delenv("AWS_ENDPOINT_URL")
    assert aws.client("ec2", settings=settings) is plain
