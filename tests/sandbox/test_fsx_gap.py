"""FSx for Lustre as the sandbox answers it, through boto3 over HTTP: the lifecycle, the mount
facts, client tokens, AWS's checks, deletion and tags."""

from __future__ import annotations

import time
from typing import Any

import pytest
from botocore.exceptions import ClientError, ParamValidationError

from sandbox.control import SandboxControl


@pytest.fixture(scope="module")
def fsx(client_factory: Any) -> Any:
    return client_factory("fsx")


@pytest.fixture(scope="module")
def network(ec2: Any) -> dict[str, str]:
    vpc = ec2.create_vpc(CidrBlock="10.40.0.0/16")["Vpc"]["VpcId"]
    sub = ec2.create_subnet(VpcId=vpc, CidrBlock="10.40.0.0/20",
                            AvailabilityZone="us-west-2a")["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName="lustre", Description="lustre",
                                      VpcId=vpc)["GroupId"]
    other_vpc = ec2.create_vpc(CidrBlock="10.41.0.0/16")["Vpc"]["VpcId"]
    foreign = ec2.create_security_group(GroupName="elsewhere", Description="x",
                                        VpcId=other_vpc)["GroupId"]
    return {"vpc": vpc, "subnet": sub, "group": group, "foreign_group": foreign}


def _create(fsx: Any, network: dict[str, str], **extra: Any) -> dict[str, Any]:
    request = {
        "FileSystemType": "LUSTRE", "StorageCapacity": 1200, "StorageType": "SSD",
        "SubnetIds": [network["subnet"]], "SecurityGroupIds": [network["group"]],
        "LustreConfiguration": {"DeploymentType": "PERSISTENT_2",
                                "PerUnitStorageThroughput": 125},
        "Tags": [{"Key": "hypd:storage", "Value": "scratch"}],
        **extra,
    }
    return fsx.create_file_system(**request)["FileSystem"]


def _until(check: Any, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


def _lifecycle(fsx: Any, file_system_id: str) -> str:
    return fsx.describe_file_systems(FileSystemIds=[file_system_id])["FileSystems"][0][
        "Lifecycle"]


def test_create_is_creating_then_available_with_mount_facts(
        fsx: Any, network: dict[str, str], control: SandboxControl) -> None:
    made = _create(fsx, network)
    assert made["Lifecycle"] == "CREATING"
    assert made["FileSystemId"].startswith("fs-") and len(made["FileSystemId"]) == 20
    assert made["DNSName"] == f"{made['FileSystemId']}.fsx.us-west-2.amazonaws.com"
    assert made["VpcId"] == network["vpc"]
    lustre = made["LustreConfiguration"]
    assert lustre["DeploymentType"] == "PERSISTENT_2"
    assert len(lustre["MountName"]) == 8 and lustre["MountName"].isalnum()
    _until(lambda: _lifecycle(fsx, made["FileSystemId"]) == "AVAILABLE")
    assert control.counters()["by_action"]["fsx:CreateFileSystem"] == 1


def test_a_client_token_answers_the_same_file_system(fsx: Any, network: dict[str, str]) -> None:
    first = _create(fsx, network, ClientRequestToken="hypd-token-1")
    again = _create(fsx, network, ClientRequestToken="hypd-token-1")
    assert again["FileSystemId"] == first["FileSystemId"]
    with pytest.raises(ClientError) as refused:
        _create(fsx, network, ClientRequestToken="hypd-token-1", StorageCapacity=2400)
    assert refused.value.response["Error"]["Code"] == "IncompatibleParameterError"


@pytest.mark.parametrize(("change", "code"), [
    ({"StorageCapacity": 1800}, "BadRequest"),
    ({"LustreConfiguration": {"DeploymentType": "PERSISTENT_2"}},
     "InvalidPerUnitStorageThroughput"),
    ({"LustreConfiguration": {"DeploymentType": "SCRATCH_2", "PerUnitStorageThroughput": 125}},
     "BadRequest"),
    ({"SubnetIds": ["subnet-0123456789abcdef0"]}, "InvalidNetworkSettings"),
    ({"SecurityGroupIds": ["sg-0123456789abcdef0"]}, "InvalidNetworkSettings"),
])
def test_what_aws_refuses_is_refused(fsx: Any, network: dict[str, str], change: dict[str, Any],
                                     code: str) -> None:
    with pytest.raises(ClientError) as refused:
        _create(fsx, network, **change)
    assert refused.value.response["Error"]["Code"] == code


def test_security_group_of_another_vpc_and_two_subnets_are_refused(
        fsx: Any, network: dict[str, str]) -> None:
    with pytest.raises(ClientError) as foreign:
        _create(fsx, network, SecurityGroupIds=[network["foreign_group"]])
    assert "is not in" in foreign.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as two:
        _create(fsx, network, SubnetIds=[network["subnet"], network["subnet"]])
    assert two.value.response["Error"]["Code"] == "InvalidNetworkSettings"


def test_requests_are_checked_against_botocores_model(local_aws: Any, network: dict[str, str]
                                                      ) -> None:
    """A raw request that skips the SDK's own validation is refused in AWS's words."""
    import json
    import urllib.request

    body = json.dumps({"FileSystemType": "LUSTRE", "StorageCapacity": 1200}).encode()
    request = urllib.request.Request(local_aws.url + "/", data=body, method="POST", headers={
        "Content-Type": "application/x-amz-json-1.1",
        "X-Amz-Target": "AWSSimbaAPIService_v20180301.CreateFileSystem",
        "Authorization": "AWS4-HMAC-SHA256 Credential=AKIATESTSANDBOX00000/20260101/"
                         "us-west-2/fsx/aws4_request, SignedHeaders=host, Signature=x"})
    try:
        urllib.request.urlopen(request, timeout=10)
        raise AssertionError("accepted a request without SubnetIds")
    except urllib.error.HTTPError as exc:
        answer = json.loads(exc.read())
    assert answer["__type"] == "ValidationException"
    assert "subnetIds" in answer["message"]


def test_unknown_id_is_not_found_and_delete_goes_through_deleting(
        fsx: Any, network: dict[str, str]) -> None:
    with pytest.raises(ClientError) as missing:
        fsx.describe_file_systems(FileSystemIds=["fs-0123456789abcdef0"])
    assert missing.value.response["Error"]["Code"] == "FileSystemNotFound"
    made = _create(fsx, network)
    with pytest.raises(ClientError) as early:
        fsx.delete_file_system(FileSystemId=made["FileSystemId"])
    assert early.value.response["Error"]["Code"] == "BadRequest"
    _until(lambda: _lifecycle(fsx, made["FileSystemId"]) == "AVAILABLE")
    gone = fsx.delete_file_system(FileSystemId=made["FileSystemId"])
    assert gone["Lifecycle"] == "DELETING"
    assert _lifecycle(fsx, made["FileSystemId"]) == "DELETING"

    def vanished() -> bool:
        try:
            fsx.describe_file_systems(FileSystemIds=[made["FileSystemId"]])
        except ClientError as exc:
            return exc.response["Error"]["Code"] == "FileSystemNotFound"
        return False

    _until(vanished)


def test_listing_pages_and_keeps_tags(fsx: Any, network: dict[str, str]) -> None:
    made = _create(fsx, network)
    listed = [fs for page in fsx.get_paginator("describe_file_systems").paginate(
        PaginationConfig={"PageSize": 2}) for fs in page["FileSystems"]]
    assert made["FileSystemId"] in {fs["FileSystemId"] for fs in listed}
    assert len(listed) == len({fs["FileSystemId"] for fs in listed})
    described = fsx.describe_file_systems(FileSystemIds=[made["FileSystemId"]])
    assert described["FileSystems"][0]["Tags"] == [{"Key": "hypd:storage", "Value": "scratch"}]
    with pytest.raises(ParamValidationError):
        fsx.create_file_system(FileSystemType="LUSTRE")
