"""The network.create / network.delete steps against moto, through a small StepContext."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

import tasks.networks as steps
from cloud import aws
from cloud import networks as net
from cloud.settings import Settings
from tasks.engine.kinds import StepFailed, StepRetry
from tasks.kinds import KINDS
from tests.cloud.netkit import Spy, set_nat_state, snapshot, tags

REGION = "us-west-2"


@pytest.fixture
def ec2(monkeypatch):
    for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        yield aws.client("ec2", REGION, Settings(aws_mode="aws", region=REGION))


def moto_client(service: str) -> Any:
    """moto's (mock_aws), with the fixture's credentials: the process's shared session and
    its cached clients may have resolved none in an earlier test (failed under xdist)."""
    return boto3.client(service, region_name=REGION, aws_access_key_id="testing",
                        aws_secret_access_key="testing")


class NoLocks:
    """The panel's Redis as the delete's guard reads it: no operation holds a lock."""

    def hgetall(self, key: str) -> dict[str, str]:
        return {}


class FakeContext:
    """What the engine gives a step (tasks.engine.kinds.StepContext), kept in memory."""

    redis = NoLocks()

    def __init__(self, ec2: Any, op_id: str, kind: str, params: dict, step: str,
                 outputs: dict, resources: dict | None = None,
                 clients: Callable[[str], Any] | None = None) -> None:
        self._ec2 = ec2
        self._clients = clients
        self.op_id, self.kind, self.params, self.step = op_id, kind, params, step
        self.target = f"network/{params['name']}"
        self.region = REGION
        self.outputs = outputs
        self.resources: dict[str, Any] = dict(resources or {})
        self.recorded: list[dict[str, Any]] = []
        self.details: list[str] = []
        self.locks: list[str] = []

    def record(self, **resources: Any) -> None:
        self.recorded.append(resources)
        self.resources.update(resources)

    def client(self, service: str) -> Any:
        if service == "ec2":
            return self._ec2
        assert service in ("eks", "sagemaker")  # the delete's guard looks for clusters
        if self._clients is not None:
            return self._clients(service)
        return moto_client(service)

    def token(self, *parts: str) -> str:
        seed = "\n".join((self.op_id, self.step, *parts))
        return "hypd-" + hashlib.sha256(seed.encode()).hexdigest()[:40]

    def detail(self, message: str) -> None:
        self.details.append(message)

    @contextlib.contextmanager
    def lock(self, name: str):
        self.locks.append(name)
        yield


class Operation:
    """Runs an operation kind's steps the way the engine does: apply, then wait until the
    step is ready; a StepRetry runs apply again (bounded)."""

    def __init__(self, ec2: Any, kind: str, params: dict, op_id: str = "op-1",
                 clients: Callable[[str], Any] | None = None) -> None:
        self.ec2, self.kind, self.params, self.op_id = ec2, kind, params, op_id
        self.clients = clients
        self.outputs: dict[str, dict[str, Any]] = {}
        self.contexts: dict[str, FakeContext] = {}

    def context(self, step: str) -> FakeContext:
        ctx = FakeContext(self.ec2, self.op_id, self.kind, self.params, step,
                          {k: v for k, v in self.outputs.items() if k != step},
                          self.outputs.get(step), self.clients)
        self.contexts[step] = ctx
        return ctx

    def apply(self, step: str) -> dict[str, Any]:
        spec = {s.name: s for s in KINDS[self.kind].steps}[step]
        ctx = self.context(step)
        result = spec.apply(ctx) or {}
        self.outputs[step] = {**ctx.resources, **result}
        return self.outputs[step]

    def wait(self, step: str) -> float | None:
        spec = {s.name: s for s in KINDS[self.kind].steps}[step]
        ctx = self.context(step)
        try:
            return spec.wait(ctx) if spec.wait else None
        finally:  # what a wait records persists, as the engine keeps it
            self.outputs[step] = {**self.outputs.get(step, {}), **ctx.resources}

    def run(self) -> Operation:
        for spec in KINDS[self.kind].steps:
            for _ in range(5):
                try:
                    self.apply(spec.name)
                    break
                except StepRetry:
                    continue
            else:
                raise AssertionError(f"step {spec.name} kept asking to retry")
            for _ in range(5):
                if self.wait(spec.name) is None:
                    break
            else:
                raise AssertionError(f"step {spec.name} never became ready")
        return self


def create(ec2, name="lab", op_id="op-create", **params) -> Operation:
    return Operation(ec2, "network.create", {"name": name, **params}, op_id).run()


# -- the kinds -----------------------------------------------------------------------------


def test_kinds_are_registered_in_order():
    create_kind = KINDS["network.create"]
    assert [s.name for s in create_kind.steps] == [
        "vpc", "subnets", "internet_gateway", "nat_gateway", "route_tables", "security_group",
        "s3_endpoint"]
    assert [s.name for s in create_kind.steps if s.wait] == ["nat_gateway"]
    delete_kind = KINDS["network.delete"]
    assert [s.name for s in delete_kind.steps] == [
        "in_use", "s3_endpoint", "security_group", "route_tables", "nat_gateway", "elastic_ip",
        "internet_gateway", "subnets", "vpc"]
    assert [s.name for s in delete_kind.steps if s.wait] == ["in_use", "nat_gateway"]
    assert all(s.title for s in (*create_kind.steps, *delete_kind.steps))
    assert create_kind.resource_url({"name": "lab"}) == "/api/v1/networks/lab"
    assert delete_kind.resource_url({"name": "lab"}) == "/api/v1/networks/lab"


# -- network.create ------------------------------------------------------------------------


def test_create_makes_a_complete_tagged_network_and_records_ids(ec2):
    op = create(ec2, cidr="10.4.0.0/16", availability_zones=["us-west-2b", "us-west-2c"])
    network = net.get_network(ec2, "lab")
    assert network["state"] == "available"
    assert network["cidr"] == "10.4.0.0/16"
    assert network["availability_zones"] == ["us-west-2b", "us-west-2c"]
    out = op.outputs
    assert out["vpc"]["vpc_id"] == network["vpc_id"]
    assert sorted(s["id"] for s in out["subnets"]["subnets"]) == sorted(
        s["id"] for s in network["subnets"])
    assert out["internet_gateway"]["internet_gateway_id"] == network["internet_gateway_id"]
    assert out["nat_gateway"]["nat_gateway_id"] == network["nat_gateway_id"]
    assert out["nat_gateway"]["allocation_id"].startswith("eipalloc-")
    assert set(out["route_tables"]) == {"public_route_table_id", "private_route_table_id"}
    assert out["security_group"]["security_group_id"] == network["security_group_id"]
    assert out["s3_endpoint"]["s3_endpoint_id"] == network["s3_endpoint_id"]
    # every id was persisted through ctx.record before the step returned
    for step, ctx in op.contexts.items():
        if step == "subnets":
            assert ctx.resources["subnets"] == out["subnets"]["subnets"]
        for key, value in out[step].items():
            if key.endswith("_id"):
                assert ctx.resources.get(key) == value, (step, key)
    # and every resource carries the network's tags
    described = [
        *ec2.describe_vpcs(VpcIds=[network["vpc_id"]])["Vpcs"],
        *ec2.describe_subnets(SubnetIds=[s["id"] for s in network["subnets"]])["Subnets"],
        *ec2.describe_internet_gateways(
            InternetGatewayIds=[network["internet_gateway_id"]])["InternetGateways"],
        *ec2.describe_nat_gateways(NatGatewayIds=[network["nat_gateway_id"]])["NatGateways"],
        *ec2.describe_addresses(AllocationIds=[out["nat_gateway"]["allocation_id"]])["Addresses"],
        *ec2.describe_route_tables(RouteTableIds=list(out["route_tables"].values()))[
            "RouteTables"],
        *ec2.describe_security_groups(GroupIds=[network["security_group_id"]])[
            "SecurityGroups"],
        *ec2.describe_vpc_endpoints(VpcEndpointIds=[network["s3_endpoint_id"]])[
            "VpcEndpoints"],
    ]
    assert len(described) == 12  # VPC, 4 subnets, IGW, NAT, EIP, 2 route tables, SG, endpoint
    for resource in described:
        assert tags(resource)["hypd:managed-by"] == "hypd"
        assert tags(resource)["hypd:network"] == "lab"
        assert tags(resource)["hypd:role"]


def test_a_second_create_adopts_everything(ec2):
    first = create(ec2)
    before = snapshot(ec2)
    spy = Spy(ec2)
    second = create(spy, op_id="op-create-again")  # another operation: other client tokens
    assert spy.mutations == []
    assert snapshot(ec2) == before
    assert second.outputs == first.outputs


def test_each_step_rerun_after_a_crash_adopts(ec2):
    """A worker dies after AWS answered and before the engine wrote `applied`: the step runs
    again from scratch (its return value lost) and must find what it made."""
    op = Operation(ec2, "network.create", {"name": "lab"}, "op-crash")
    for spec in KINDS["network.create"].steps:
        op.apply(spec.name)
        made = snapshot(ec2)
        kept = op.outputs.pop(spec.name)
        spy = Spy(ec2)
        op.ec2 = spy
        assert op.apply(spec.name) == kept
        assert spy.mutations == [], spec.name
        assert snapshot(ec2) == made, spec.name
        op.ec2 = ec2
        assert op.wait(spec.name) is None


class FailingAfterCreate(Spy):
    """Throttled on the call right after CreateVpc: the VPC exists, the step fails."""

    def __getattr__(self, name):
        if name == "modify_vpc_attribute":
            def throttled(**kwargs):
                raise ClientError({"Error": {"Code": "Throttling", "Message": "slow down"},
                                   "ResponseMetadata": {"HTTPStatusCode": 400}},
                                  "ModifyVpcAttribute")
            return throttled
        return super().__getattr__(name)


def test_ids_are_recorded_before_a_later_call_fails(ec2):
    op = Operation(FailingAfterCreate(ec2), "network.create", {"name": "lab"}, "op-x")
    with pytest.raises(ClientError) as info:
        op.apply("vpc")
    assert aws.is_transient(info.value)  # the engine retries it
    recorded = op.contexts["vpc"].resources["vpc_id"]
    assert recorded.startswith("vpc-")
    op.ec2 = ec2
    assert op.apply("vpc")["vpc_id"] == recorded
    assert len(net._find(ec2, "vpc", "lab", ["vpc"])) == 1
    attribute = ec2.describe_vpc_attribute(VpcId=recorded, Attribute="enableDnsHostnames")
    assert attribute["EnableDnsHostnames"]["Value"] is True


def test_nat_gateway_wait_follows_the_state(ec2):
    op = Operation(ec2, "network.create", {"name": "lab"}, "op-nat")
    for step in ("vpc", "subnets", "internet_gateway", "nat_gateway"):
        op.apply(step)
    nat_id = op.outputs["nat_gateway"]["nat_gateway_id"]
    set_nat_state(REGION, nat_id, "pending")
    assert op.wait("nat_gateway") == steps.NAT_POLL_S
    assert op.contexts["nat_gateway"].details[-1] == f"NAT gateway {nat_id} is pending"
    # the private route waits for the gateway too
    with pytest.raises(StepRetry, match="not available yet"):
        op.apply("route_tables")
    set_nat_state(REGION, nat_id, "available")
    assert op.wait("nat_gateway") is None
    tables = op.apply("route_tables")
    routes = ec2.describe_route_tables(RouteTableIds=[tables["private_route_table_id"]])[
        "RouteTables"][0]["Routes"]
    assert any(r.get("NatGatewayId") == nat_id for r in routes)
    set_nat_state(REGION, nat_id, "failed")
    with pytest.raises(StepFailed) as info:
        op.wait("nat_gateway")
    assert info.value.code == "nat_gateway_failed"


def test_a_failed_nat_gateway_gets_a_fresh_client_token(ec2):
    op = Operation(ec2, "network.create", {"name": "lab"}, "op-nat")
    for step in ("vpc", "subnets", "internet_gateway"):
        op.apply(step)
    tokens = []
    real = ec2.create_nat_gateway

    def spy_create(**kwargs):
        tokens.append(kwargs["ClientToken"])
        return real(**kwargs)

    class TokenSpy(Spy):
        def __getattr__(self, name):
            return spy_create if name == "create_nat_gateway" else super().__getattr__(name)

    op.ec2 = TokenSpy(ec2)
    first = op.apply("nat_gateway")["nat_gateway_id"]
    set_nat_state(REGION, first, "failed")
    # AWS releases a failed gateway's address; moto keeps it: release it as AWS would
    address = ec2.describe_addresses(AllocationIds=[op.outputs["nat_gateway"]["allocation_id"]])
    ec2.disassociate_address(AssociationId=address["Addresses"][0]["AssociationId"])
    second = op.apply("nat_gateway")["nat_gateway_id"]
    assert second != first
    assert len(tokens) == 2 and tokens[0] != tokens[1]


def test_subnets_hold_the_per_vpc_lock_while_allocating(ec2):
    op = Operation(ec2, "network.create", {"name": "lab"}, "op-lock")
    vpc_id = op.apply("vpc")["vpc_id"]
    op.apply("subnets")
    assert op.contexts["subnets"].locks == [f"vpc/{vpc_id}"] * 4  # one hold per block


def test_default_zones_are_the_first_two_available_and_recorded(ec2):
    op = Operation(ec2, "network.create", {"name": "lab"}, "op-zones")
    op.apply("vpc")
    out = op.apply("subnets")
    assert out["availability_zones"] == ["us-west-2a", "us-west-2b"]
    assert op.contexts["subnets"].recorded[0] == {"availability_zones": ["us-west-2a",
                                                                         "us-west-2b"]}
    assert len(out["public_subnet_ids"]) == len(out["private_subnet_ids"]) == 2


def test_permanent_problems_fail_the_step_with_a_code(ec2):
    create(ec2, cidr="10.0.0.0/16")
    with pytest.raises(StepFailed) as info:
        Operation(ec2, "network.create", {"name": "lab", "cidr": "10.7.0.0/16"}, "op-2") \
            .apply("vpc")
    assert info.value.code == "network_conflict"
    assert "10.0.0.0/16" in info.value.message

    small = Operation(ec2, "network.create", {"name": "tiny", "cidr": "10.9.0.0/19"}, "op-3")
    small.apply("vpc")
    with pytest.raises(StepFailed) as info:
        small.apply("subnets")
    assert info.value.code == "subnet_space_exhausted"
    assert "10.9.0.0/19" in info.value.message


# -- network.delete ------------------------------------------------------------------------


def test_delete_removes_only_the_networks_resources(ec2):
    lab = create(ec2, "lab")
    create(ec2, "other", op_id="op-other", cidr="10.1.0.0/16")
    untagged = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    other = net.get_network(ec2, "other")

    deleted = Operation(ec2, "network.delete", {"name": "lab"}, "op-delete").run()

    assert net.get_network(ec2, "lab") is None
    assert net.get_network(ec2, "other") == other
    assert untagged in {v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"]}
    assert deleted.outputs["vpc"]["deleted"] == [lab.outputs["vpc"]["vpc_id"]]
    assert deleted.outputs["nat_gateway"]["deleted"] == [
        lab.outputs["nat_gateway"]["nat_gateway_id"]]
    assert deleted.outputs["elastic_ip"]["deleted"] == [
        lab.outputs["nat_gateway"]["allocation_id"]]
    assert sorted(deleted.outputs["subnets"]["deleted"]) == sorted(
        s["id"] for s in lab.outputs["subnets"]["subnets"])
    live = {
        *(v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"]),
        *(x["SubnetId"] for x in ec2.describe_subnets()["Subnets"]),
        *(g["InternetGatewayId"] for g in ec2.describe_internet_gateways()["InternetGateways"]),
        *(n["NatGatewayId"] for n in ec2.describe_nat_gateways()["NatGateways"]
          if n["State"] != "deleted"),
        *(a["AllocationId"] for a in ec2.describe_addresses()["Addresses"]),
        *(t["RouteTableId"] for t in ec2.describe_route_tables()["RouteTables"]),
        *(g["GroupId"] for g in ec2.describe_security_groups()["SecurityGroups"]),
        *(e["VpcEndpointId"] for e in ec2.describe_vpc_endpoints()["VpcEndpoints"]
          if e["State"].lower() != "deleted"),
    }
    made = {value for out in lab.outputs.values() for key, value in out.items()
            if key.endswith("_id")}
    made |= {s["id"] for s in lab.outputs["subnets"]["subnets"]}
    assert len(made) == 12
    assert not made & live


def test_delete_twice_is_harmless(ec2):
    create(ec2)
    Operation(ec2, "network.delete", {"name": "lab"}, "op-d1").run()
    before = snapshot(ec2)
    spy = Spy(ec2)
    again = Operation(spy, "network.delete", {"name": "lab"}, "op-d2").run()
    assert spy.mutations == []
    assert snapshot(ec2) == before
    assert again.outputs.pop("in_use") == {"dependents": 0}
    assert all(out == {"deleted": []} for out in again.outputs.values())


def test_delete_waits_for_the_nat_gateway(ec2):
    lab = create(ec2)
    nat_id = lab.outputs["nat_gateway"]["nat_gateway_id"]
    op = Operation(ec2, "network.delete", {"name": "lab"}, "op-del-nat")
    for step in ("s3_endpoint", "security_group", "route_tables", "nat_gateway"):
        op.apply(step)
    set_nat_state(REGION, nat_id, "deleting")
    assert op.wait("nat_gateway") == steps.NAT_POLL_S
    assert nat_id in op.contexts["nat_gateway"].details[-1]
    set_nat_state(REGION, nat_id, "deleted")
    assert op.wait("nat_gateway") is None


def test_dependency_violation_asks_to_retry(ec2):
    create(ec2)
    op = Operation(ec2, "network.delete", {"name": "lab"}, "op-early")
    with pytest.raises(StepRetry, match="still has dependencies"):
        op.apply("vpc")  # subnets and gateways are still there
    with pytest.raises(StepRetry, match="still held by a NAT gateway"):
        op.apply("elastic_ip")
    assert net.get_network(ec2, "lab")["state"] == "available"


# -- network.delete's guard ----------------------------------------------------------------


def _refusal(ec2, name: str = "lab") -> StepFailed:
    spy = Spy(ec2)
    with pytest.raises(StepFailed) as refused:
        Operation(spy, "network.delete", {"name": name}, "op-guarded").apply("in_use")
    assert spy.mutations == []
    assert refused.value.code == "in_use"
    return refused.value


def test_the_delete_stops_before_anything_while_a_cluster_runs_in_the_vpc(ec2):
    lab = create(ec2)
    private = lab.outputs["subnets"]["private_subnet_ids"]
    eks, iam = moto_client("eks"), moto_client("iam")
    role = iam.create_role(RoleName="theirs", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    eks.create_cluster(name="theirs", roleArn=role, resourcesVpcConfig={"subnetIds": private})
    before = snapshot(ec2)
    refused = _refusal(ec2)
    assert "network lab is in use: cluster theirs (EKS cluster (ACTIVE, not made by hypd) " \
           "in VPC" in refused.message
    assert "force does not override this" in refused.message
    assert snapshot(ec2) == before


def test_a_foreign_network_interface_stops_it_and_the_networks_own_do_not(ec2):
    lab = create(ec2)
    # the NAT gateway's own interface is the network's: nothing else runs there yet
    assert Operation(ec2, "network.delete", {"name": "lab"}, "op-free").apply("in_use") == {
        "dependents": 0}
    subnet = lab.outputs["subnets"]["private_subnet_ids"][0]
    eni = ec2.create_network_interface(SubnetId=subnet, Description="a stray instance")
    eni_id = eni["NetworkInterface"]["NetworkInterfaceId"]
    refused = _refusal(ec2)
    assert f"network interface {eni_id} (" in refused.message
    assert f"in subnet {subnet}: a stray instance" in refused.message
