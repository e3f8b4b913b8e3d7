"""The local AWS end to end: real boto3 over HTTP to moto behind the sandbox layer."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from sandbox.control import SandboxControl, SandboxControlError
from sandbox.local_aws import LocalAws, client_env
from sandbox.serve import run

REPO = Path(__file__).resolve().parents[2]


def _tag(name: str, resource_type: str) -> list[dict[str, Any]]:
    return [{"ResourceType": resource_type, "Tags": [{"Key": "hypd:test", "Value": name}]}]


def _by_tag(name: str) -> list[dict[str, Any]]:
    return [{"Name": "tag:hypd:test", "Values": [name]}]


def _cidr() -> str:
    """A /16 of its own for each test (moto's state is shared by the whole process)."""
    return f"10.{uuid.uuid4().int % 250}.0.0/16"


# --- call log and counters -------------------------------------------------------------


def test_mutations_are_counted_once_per_resource_and_reads_not_at_all(control, ec2):
    vpc_id = ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
    subnet_ids = [
        ec2.create_subnet(VpcId=vpc_id, CidrBlock=cidr)["Subnet"]["SubnetId"]
        for cidr in ("10.1.0.0/20", "10.1.16.0/20")
    ]
    ec2.create_tags(Resources=[vpc_id], Tags=[{"Key": "a", "Value": "1"}])
    ec2.create_tags(Resources=[vpc_id, subnet_ids[0]], Tags=[{"Key": "b", "Value": "2"}])
    ec2.describe_vpcs(VpcIds=[vpc_id])
    ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])

    counters = control.counters()
    assert counters["by_action"] == {
        "ec2:CreateVpc": 1,
        "ec2:CreateSubnet": 2,
        "ec2:CreateTags": 2,
    }
    assert counters["by_resource"][vpc_id] == {"ec2:CreateVpc": 1, "ec2:CreateTags": 2}
    assert counters["by_resource"][subnet_ids[0]] == {"ec2:CreateSubnet": 1, "ec2:CreateTags": 1}
    assert counters["by_resource"][subnet_ids[1]] == {"ec2:CreateSubnet": 1}

    calls = control.calls(service="ec2")
    assert [c["action"] for c in calls] == [
        "CreateVpc",
        "CreateSubnet",
        "CreateSubnet",
        "CreateTags",
        "CreateTags",
        "DescribeVpcs",
        "DescribeSubnets",
    ]
    assert calls[0]["params"]["CidrBlock"] == "10.1.0.0/16"
    assert calls[0]["resource_ids"] == [vpc_id]
    assert calls[5]["params"] == {"VpcId.1": vpc_id}
    assert [c["seq"] for c in control.calls(since=calls[4]["seq"])] == [
        calls[5]["seq"],
        calls[6]["seq"],
    ]
    assert control.calls(action="CreateSubnet")[1]["resource_ids"] == [subnet_ids[1]]
    # Neither the signature nor the session token is ever logged.
    logged = json.dumps(calls)
    assert "test-session-token" not in logged and "AKIATESTSANDBOX" not in logged


def test_failed_calls_are_logged_but_not_counted(control, ec2):
    with pytest.raises(ClientError):
        ec2.create_subnet(VpcId="vpc-0123456789abcdef0", CidrBlock="10.9.0.0/20")
    (call,) = control.calls(action="CreateSubnet")
    assert call["status"] >= 400
    assert control.counters() == {"by_action": {}, "by_resource": {}}


def test_reset_clears_records_and_faults_but_not_aws(control, ec2):
    name = uuid.uuid4().hex
    ec2.create_vpc(CidrBlock=_cidr(), TagSpecifications=_tag(name, "vpc"))
    control.add_fault("ec2", "CreateVpc", "throttle")
    control.hold("ec2", "DeleteVpc")
    control.reset()
    assert control.calls() == [] and control.faults() == [] and control.holds() == []
    assert control.counters()["by_action"] == {}
    assert len(ec2.describe_vpcs(Filters=_by_tag(name))["Vpcs"]) == 1


# --- faults ------------------------------------------------------------------------------


def test_throttle_fault_fails_the_next_call_only_and_changes_nothing(control, ec2):
    name = uuid.uuid4().hex
    control.add_fault("ec2", "CreateVpc", "throttle")
    with pytest.raises(ClientError) as caught:
        ec2.create_vpc(CidrBlock=_cidr(), TagSpecifications=_tag(name, "vpc"))
    assert caught.value.response["Error"]["Code"] == "RequestLimitExceeded"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    assert ec2.describe_vpcs(Filters=_by_tag(name))["Vpcs"] == []

    ec2.create_vpc(CidrBlock=_cidr(), TagSpecifications=_tag(name, "vpc"))
    assert len(ec2.describe_vpcs(Filters=_by_tag(name))["Vpcs"]) == 1
    assert [c["fault"] for c in control.calls(action="CreateVpc")] == ["throttle", None]
    assert control.counters()["by_action"] == {"ec2:CreateVpc": 1}
    assert control.faults() == []


@pytest.mark.parametrize(
    ("service", "action", "call", "code"),
    [
        ("iam", "ListRoles", lambda c: c.list_roles(), "Throttling"),
        ("sagemaker", "ListClusters", lambda c: c.list_clusters(), "ThrottlingException"),
        ("eks", "ListClusters", lambda c: c.list_clusters(), "ThrottlingException"),
    ],
)
def test_throttle_is_shaped_for_each_protocol(control, client_factory, service, action, call, code):
    client = client_factory(service)
    control.add_fault(service, action, "throttle")
    with pytest.raises(ClientError) as caught:
        call(client)
    assert caught.value.response["Error"]["Code"] == code
    call(client)  # the fault is spent


def test_server_error_is_a_real_5xx_that_botocore_retries(control, client_factory):
    control.add_fault("ec2", "DescribeAvailabilityZones", "server_error", count=2)
    single = client_factory("ec2", attempts=1)
    with pytest.raises(ClientError) as caught:
        single.describe_availability_zones()
    assert caught.value.response["Error"]["Code"] == "InternalError"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    # botocore's standard retry mode treats it as transient: the second attempt succeeds.
    retrying = client_factory("ec2", attempts=3, **{"retries": {"mode": "standard"}})
    answer = retrying.describe_availability_zones()
    assert answer["ResponseMetadata"]["RetryAttempts"] == 1
    assert answer["AvailabilityZones"]


def test_error_fault_with_own_code_and_status(control, client_factory):
    eks = client_factory("eks")
    control.add_fault(
        "eks",
        "DescribeCluster",
        "error",
        code="ResourceNotFoundException",
        status=404,
        message="No cluster found for name: ghost.",
    )
    with pytest.raises(eks.exceptions.ResourceNotFoundException) as caught:
        eks.describe_cluster(name="ghost")
    assert caught.value.response["Error"]["Message"] == "No cluster found for name: ghost."


def test_timeout_fault_outlasts_the_client_and_clearing_lets_it_go(control, client_factory):
    ec2 = client_factory("ec2", read_timeout=0.3, connect_timeout=1)
    control.add_fault("ec2", "DescribeVpcs", "timeout", seconds=60)
    started = time.monotonic()
    with pytest.raises(ReadTimeoutError):
        ec2.describe_vpcs()
    assert 0.3 <= time.monotonic() - started < 5
    assert control.calls(action="DescribeVpcs") == []  # still stalled in the server
    control.clear_faults()
    deadline = time.monotonic() + 5
    while not control.calls(action="DescribeVpcs"):
        assert time.monotonic() < deadline, "stalled request not released by clear_faults"
        time.sleep(0.02)
    assert control.calls(action="DescribeVpcs")[0]["fault"] == "timeout"


def test_bad_control_requests_are_refused(control):
    with pytest.raises(SandboxControlError) as caught:
        control.add_fault("ec2", "CreateVpc", "explode")
    assert caught.value.status == 400
    with pytest.raises(SandboxControlError) as caught:
        control.release("h-nope")
    assert caught.value.status == 404


# --- holds -------------------------------------------------------------------------------


def test_hold_keeps_the_answer_after_aws_has_acted(control, ec2, client_factory):
    name = uuid.uuid4().hex
    hold_id = control.hold("ec2", "CreateVpc")
    assert control.get_hold(hold_id)["state"] == "armed"
    answers: list[dict[str, Any]] = []
    worker = threading.Thread(
        target=lambda: answers.append(
            client_factory("ec2", read_timeout=30).create_vpc(
                CidrBlock=_cidr(), TagSpecifications=_tag(name, "vpc")
            )
        )
    )
    worker.start()
    try:
        held = control.wait_held(hold_id, timeout=10)
        # AWS has made the VPC, but the caller has not heard back.
        (vpc,) = ec2.describe_vpcs(Filters=_by_tag(name))["Vpcs"]
        time.sleep(0.2)
        assert worker.is_alive() and answers == []
        assert held["calls"] == [c["seq"] for c in control.calls(action="CreateVpc")]
        assert control.counters()["by_resource"][vpc["VpcId"]] == {"ec2:CreateVpc": 1}
    finally:
        control.release(hold_id)
        worker.join(10)
    assert answers[0]["Vpc"]["VpcId"] == vpc["VpcId"]
    assert control.get_hold(hold_id)["state"] == "released"
    # Spent: the next call goes straight through.
    ec2.create_vpc(CidrBlock=_cidr())


def test_a_before_hold_parks_the_call_before_aws_or_a_fault_sees_it(control, ec2,
                                                                    client_factory):
    """The gate the fault campaign uses: the call waits on arrival (AWS has not acted), a
    fault armed meanwhile answers it when it goes on."""
    name = uuid.uuid4().hex
    gate = control.hold("ec2", "CreateVpc", when="before")
    errors: list[str] = []

    def create() -> None:
        try:
            client_factory("ec2", read_timeout=30).create_vpc(
                CidrBlock=_cidr(), TagSpecifications=_tag(name, "vpc"))
        except ClientError as exc:
            errors.append(exc.response["Error"]["Code"])

    worker = threading.Thread(target=create)
    worker.start()
    try:
        held = control.wait_held(gate, timeout=10)
        assert held["when"] == "before"
        assert ec2.describe_vpcs(Filters=_by_tag(name))["Vpcs"] == []
        assert control.calls(action="CreateVpc") == []  # not answered, so not logged yet
        control.add_fault("ec2", "CreateVpc", "throttle")
    finally:
        control.release(gate)
        worker.join(10)
    assert errors == ["RequestLimitExceeded"]
    assert ec2.describe_vpcs(Filters=_by_tag(name))["Vpcs"] == []
    assert [c["fault"] for c in control.calls(action="CreateVpc")] == ["throttle"]

    # dropped: the call never reaches AWS (its client is usually dead by then)
    gate = control.hold("ec2", "CreateVpc", when="before")
    worker = threading.Thread(target=create)
    worker.start()
    try:
        control.wait_held(gate, timeout=10)
    finally:
        control.release(gate, drop=True)
        worker.join(10)
    assert errors[-1] == "ServiceUnavailable"
    assert ec2.describe_vpcs(Filters=_by_tag(name))["Vpcs"] == []
    assert [c["fault"] for c in control.calls(action="CreateVpc")] == ["throttle", "dropped"]


_WORKER = """
import boto3
from botocore.config import Config
boto3.client("ec2", config=Config(retries={"total_max_attempts": 1}, read_timeout=60)).create_vpc(
    CidrBlock="10.77.0.0/16",
    TagSpecifications=[{"ResourceType": "vpc", "Tags": [{"Key": "hypd:test", "Value": %r}]}],
)
print("answered")
"""


def test_killed_client_during_hold_does_not_hurt_the_server(control, ec2, local_aws):
    """The real use: a worker process dies while its answer is held."""
    name = uuid.uuid4().hex
    hold_id = control.hold("ec2", "CreateVpc")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
        **client_env(local_aws.url),
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", _WORKER % name],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        control.wait_held(hold_id, timeout=15)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    control.release(hold_id)
    assert control.get_hold(hold_id)["state"] == "released"
    assert b"answered" not in proc.stdout.read()
    assert len(ec2.describe_vpcs(Filters=_by_tag(name))["Vpcs"]) == 1
    assert control.counters()["by_action"] == {"ec2:CreateVpc": 1}


def test_clearing_holds_releases_held_calls(control, client_factory):
    hold_id = control.hold("ec2", "DescribeRegions")
    done = threading.Event()
    worker = threading.Thread(target=lambda: (client_factory("ec2").describe_regions(), done.set()))
    worker.start()
    control.wait_held(hold_id)
    control.clear_holds()
    assert done.wait(10)
    worker.join(5)
    assert control.holds() == []


# --- timed states ------------------------------------------------------------------------


def _nat_gateway(ec2: Any, name: str) -> tuple[str, str, float]:
    """A NAT gateway in a new VPC: (vpc id, NAT gateway id, monotonic time of the create)."""
    vpc_id = ec2.create_vpc(CidrBlock="10.2.0.0/16")["Vpc"]["VpcId"]
    subnet_id = ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.2.0.0/20")["Subnet"]["SubnetId"]
    allocation = ec2.allocate_address(Domain="vpc")["AllocationId"]
    created_at = time.monotonic()
    nat = ec2.create_nat_gateway(
        SubnetId=subnet_id, AllocationId=allocation, TagSpecifications=_tag(name, "natgateway")
    )["NatGateway"]
    assert nat["State"] == "pending"
    return vpc_id, nat["NatGatewayId"], created_at


def _nat_state(ec2: Any, nat_id: str) -> str:
    return ec2.describe_nat_gateways(NatGatewayIds=[nat_id])["NatGateways"][0]["State"]


def test_nat_gateway_becomes_available_after_90_simulated_seconds(control, ec2):
    _, nat_id, started = _nat_gateway(ec2, uuid.uuid4().hex)
    while _nat_state(ec2, nat_id) == "pending":
        assert time.monotonic() - started < 5
        time.sleep(0.01)
    assert time.monotonic() - started >= 90 / 1000
    assert _nat_state(ec2, nat_id) == "available"


def test_nat_gateway_states_follow_the_clock_exactly():
    """At speed 1 nothing moves by itself; jumping the clock drives every transition."""
    with LocalAws(speed=1) as aws:
        control = SandboxControl(aws.url)
        ec2 = _client(aws.url, "ec2")
        vpc_id, nat_id, _ = _nat_gateway(ec2, uuid.uuid4().hex)
        pending = ec2.describe_nat_gateways(
            Filters=[
                {"Name": "vpc-id", "Values": [vpc_id]},
                {"Name": "state", "Values": ["pending"]},
            ]
        )["NatGateways"]
        assert [n["NatGatewayId"] for n in pending] == [nat_id]
        control.advance_clock(89)
        assert _nat_state(ec2, nat_id) == "pending"
        control.advance_clock(2)
        assert _nat_state(ec2, nat_id) == "available"
        ec2.delete_nat_gateway(NatGatewayId=nat_id)
        assert _nat_state(ec2, nat_id) == "deleting"
        control.advance_clock(91)
        assert _nat_state(ec2, nat_id) == "deleted"


def _client(url: str, service: str) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        service,
        endpoint_url=url,
        region_name="us-west-2",
        aws_access_key_id="AKIATESTSANDBOX00000",
        aws_secret_access_key="test-secret",
        config=Config(retries={"total_max_attempts": 1}),
    )


def test_eks_cluster_is_creating_then_active_and_rest_calls_are_named(control, client_factory):
    eks, ec2 = client_factory("eks"), client_factory("ec2")
    name = f"c-{uuid.uuid4().hex[:8]}"
    # EKS wants an existing role and subnets in two zones (sandbox/gaps/eks.py checks)
    role = client_factory("iam").create_role(
        RoleName=name, AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17"})
    )["Role"]["Arn"]
    cidr = _cidr()
    vpc = ec2.create_vpc(CidrBlock=cidr)["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(
            VpcId=vpc, CidrBlock=cidr.replace(".0.0/16", f".{i * 16}.0/20"), AvailabilityZone=zone
        )["Subnet"]["SubnetId"]
        for i, zone in enumerate(("us-west-2a", "us-west-2b"))
    ]
    control.reset()
    created = eks.create_cluster(
        name=name,
        roleArn=role,
        resourcesVpcConfig={"subnetIds": subnets},
    )["cluster"]
    assert created["status"] == "CREATING"
    assert eks.describe_cluster(name=name)["cluster"]["status"] == "CREATING"
    with pytest.raises(ClientError):  # AWS refuses node groups until the cluster is ACTIVE
        eks.create_nodegroup(
            clusterName=name,
            nodegroupName="ng",
            subnets=subnets,
            nodeRole="arn:aws:iam::123456789012:role/node",
        )
    control.advance_clock(600)
    assert eks.describe_cluster(name=name)["cluster"]["status"] == "ACTIVE"

    calls = control.calls(service="eks")
    assert [c["action"] for c in calls] == [
        "CreateCluster",
        "DescribeCluster",
        "CreateNodegroup",
        "DescribeCluster",
    ]
    assert calls[0]["params"]["name"] == name
    assert calls[0]["params"]["roleArn"] == role
    assert calls[1]["params"] == {"name": name}
    assert control.counters()["by_action"] == {"eks:CreateCluster": 1}


# --- running it --------------------------------------------------------------------------


def test_run_prints_the_environment_and_serves_until_stopped():
    lines: list[str] = []
    stop = threading.Event()
    server = threading.Thread(
        target=run, kwargs={"speed": 5, "print_fn": lines.append, "stop": stop}
    )
    server.start()
    try:
        deadline = time.monotonic() + 5
        while not any(line.startswith("export AWS_ENDPOINT_URL=") for line in lines):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        exports = dict(
            line.removeprefix("export ").split("=", 1)
            for line in lines
            if line.startswith("export ")
        )
        assert exports["AWS_CONFIG_FILE"] == "/dev/null"
        assert SandboxControl(exports["AWS_ENDPOINT_URL"]).info()["speed"] == 5
    finally:
        stop.set()
        server.join(5)
    assert not server.is_alive()


def test_python_m_sandbox_stops_cleanly_on_sigterm():
    proc = subprocess.Popen(
        [sys.executable, "-m", "sandbox", "--speed", "10"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        url = ""
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("export AWS_ENDPOINT_URL="):
                url = line.strip().split("=", 1)[1]
                break
        assert SandboxControl(url).info()["speed"] == 10
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
