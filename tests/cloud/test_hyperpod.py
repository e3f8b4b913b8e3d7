"""HyperPod clusters (request shape, ensure/adopt, readers, delete) and lifecycle scripts."""

from __future__ import annotations

import datetime
import subprocess

import pytest
from botocore.exceptions import ClientError
from botocore.stub import ANY, Stubber

from cloud import aws, hyperpod, lifecycle
from cloud.capacity import allocate_compute_subnet, compute_subnet_tags, instance_group_spec
from cloud.storage import StorageError, bucket_info
from tests.cloud.botocore_shape import validate_input
from tests.cloud.conftest import AWS_MODE, REGION
from tests.cloud.netkit import Spy

ACCOUNT = "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/hypd-lab-hp-exec"
CLUSTER_ROLE = f"arn:aws:iam::{ACCOUNT}:role/hypd-lab-hp-cluster"
EKS_ARN = f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/lab"
URI = "s3://sagemaker-hypd-lab-0123456789/lifecycle/"
SG = "sg-0123456789abcdef0"
SUBNETS = ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"]


def group(name="workers", count=2, **extra):
    return instance_group_spec(
        name=name, instance_type="ml.p5.48xlarge", count=count, execution_role_arn=ROLE,
        lifecycle_s3_uri=URI, subnet_id=SUBNETS[0], security_group_ids=[SG],
        deep_health_checks=["InstanceStress", "InstanceConnectivity"],
        instance_info={"name": "ml.p5.48xlarge", "accelerator": "gpu", "efa_supported": True,
                       "max_efa_interfaces": 32}, **extra)


def request(name="lab", groups=None, **extra):
    return hyperpod.cluster_request(name, EKS_ARN, [SG], SUBNETS, groups or [group()],
                                    CLUSTER_ROLE, **extra)


# -- the request ---------------------------------------------------------------------------


def test_cluster_request_is_autoscaling_ready_and_valid_for_botocore():
    req = request(tags={"team": "ml"})
    assert validate_input("sagemaker", "CreateCluster", req) == []
    assert req["NodeRecovery"] == "Automatic"
    assert req["NodeProvisioningMode"] == "Continuous"
    assert req["Orchestrator"] == {"Eks": {"ClusterArn": EKS_ARN}}
    assert req["ClusterRole"] == CLUSTER_ROLE
    assert req["VpcConfig"] == {"SecurityGroupIds": [SG], "Subnets": SUBNETS}
    assert "AutoScaling" not in req
    assert aws.tag_dict(req) == {"hypd:managed-by": "hypd", "hypd:cluster": "lab",
                                 "hypd:team": "ml"}
    scaled = request(autoscaling=True, owner="lab-owner")
    assert scaled["AutoScaling"] == {"Mode": "Enable", "AutoScalerType": "Karpenter"}
    assert aws.tag_dict(scaled)["hypd:cluster"] == "lab-owner"
    assert validate_input("sagemaker", "CreateCluster", scaled) == []


def test_cluster_request_refusals():
    for bad in (
        dict(name="bad_name"),
        dict(groups=[group(), group()]),  # same group name twice
    ):
        with pytest.raises(hyperpod.HyperPodError) as caught:
            request(**bad)
        assert caught.value.code == "validation_failed"
    with pytest.raises(hyperpod.HyperPodError, match="EKS cluster ARN"):
        hyperpod.cluster_request("lab", "lab", [SG], SUBNETS, [group()], CLUSTER_ROLE)
    with pytest.raises(hyperpod.HyperPodError, match="IAM role ARN"):
        hyperpod.cluster_request("lab", EKS_ARN, [SG], SUBNETS, [group()], "role")
    with pytest.raises(hyperpod.HyperPodError, match="1-100 instance groups"):
        hyperpod.cluster_request("lab", EKS_ARN, [SG], SUBNETS, [], CLUSTER_ROLE)
    with pytest.raises(hyperpod.HyperPodError, match="subnets"):
        hyperpod.cluster_request("lab", EKS_ARN, [SG], [], [group()], CLUSTER_ROLE)


# -- ensure, read, delete against moto -----------------------------------------------------


@pytest.fixture
def sm(moto_aws):
    return aws.client("sagemaker", REGION, AWS_MODE)


def test_ensure_cluster_creates_once_then_adopts(sm):
    spy = Spy(sm)
    arn = hyperpod.ensure_cluster(spy, request())
    assert arn.endswith(":cluster/lab")
    assert hyperpod.ensure_cluster(spy, request()) == arn
    assert spy.calls.count("create_cluster") == 1
    state = hyperpod.cluster_state(sm, "lab")
    assert state["arn"] == arn and state["status"] == "InService"
    assert state["ready"] and not state["failed"] and state["failure_message"] is None


def test_ensure_cluster_refuses_a_same_named_cluster_that_is_not_ours(sm):
    foreign = request()
    foreign["Tags"] = [{"Key": "owner", "Value": "someone"}]
    sm.create_cluster(**foreign)
    with pytest.raises(hyperpod.HyperPodError, match="not hypd cluster 'lab'"):
        hyperpod.ensure_cluster(sm, request())
    other_owner = request(name="shared", owner="another")
    sm.create_cluster(**other_owner)
    with pytest.raises(hyperpod.HyperPodError, match="another"):
        hyperpod.ensure_cluster(sm, request(name="shared"))
    with pytest.raises(hyperpod.HyperPodError):
        hyperpod.delete_cluster(sm, "lab")
    assert hyperpod.cluster_state(sm, "lab") is not None


def test_ensure_cluster_adopts_when_a_concurrent_create_won(sm):
    real = request()
    sm.create_cluster(**real)

    class Racing:
        """describe says absent once (the race), then the truth."""

        def __init__(self):
            self.first = True

        def __getattr__(self, name):
            return getattr(sm, name)

        def describe_cluster(self, **kwargs):
            if self.first:
                self.first = False
                raise ClientError({"Error": {"Code": "ResourceNotFound", "Message": "no"}},
                                  "DescribeCluster")
            return sm.describe_cluster(**kwargs)

    assert hyperpod.ensure_cluster(Racing(), real).endswith(":cluster/lab")


def test_readers_and_delete(sm):
    assert hyperpod.cluster_state(sm, "lab") is None
    assert hyperpod.describe(sm, "lab") is None
    hyperpod.ensure_cluster(sm, request(groups=[group(count=3), group("spare", count=1)]))
    foreign = request(name="theirs")
    foreign["Tags"] = [{"Key": "owner", "Value": "someone"}]
    sm.create_cluster(**foreign)

    view = hyperpod.describe(sm, "lab")
    assert view["status"] == "InService"
    groups = {g["name"]: g for g in view["instance_groups"]}
    assert groups["workers"]["target_count"] == 3 and groups["workers"]["current_count"] == 3
    assert groups["workers"]["instance_type"] == "ml.p5.48xlarge"
    assert groups["workers"]["capacity_type"] == "on-demand"
    assert groups["workers"]["subnet_ids"] == [SUBNETS[0]]
    assert groups["workers"]["lifecycle"] == {"source_s3_uri": URI, "on_create": "on_create.sh"}
    assert view["node_counts"]["total"] == 4
    assert sum(groups["workers"]["nodes_by_status"].values()) == 3
    assert {n["instance_group"] for n in view["nodes"]} == {"workers", "spare"}
    assert isinstance(view["events"], list)

    clusters = {c["name"]: c for c in hyperpod.list_clusters(sm)}
    assert clusters["lab"]["managed"] and clusters["lab"]["hypd_cluster"] == "lab"
    assert not clusters["theirs"]["managed"] and clusters["theirs"]["hypd_cluster"] is None
    assert [c["name"] for c in hyperpod.list_clusters(sm, managed_only=True)] == ["lab"]
    assert hyperpod.instances_in_use(sm) == {("ml.p5.48xlarge", "on-demand"): 6}  # 4 + 2

    assert hyperpod.delete_cluster(sm, "lab") is True
    assert hyperpod.delete_cluster(sm, "lab") is False
    assert hyperpod.cluster_state(sm, "lab") is None


def _stubbed():
    client = aws.boto3.client("sagemaker", region_name=REGION, aws_access_key_id="x",
                              aws_secret_access_key="x")
    return client, Stubber(client)


def test_describe_pages_through_nodes_and_maps_events():
    client, stub = _stubbed()
    now = datetime.datetime(2026, 11, 29, tzinfo=datetime.UTC)
    stub.add_response("describe_cluster", {
        "ClusterArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/abcdefghijkl",
        "ClusterName": "lab", "ClusterStatus": "Creating", "CreationTime": now,
        "InstanceGroups": [{"InstanceGroupName": "workers", "InstanceType": "ml.p5.48xlarge",
                            "CurrentCount": 1, "TargetCount": 3, "Status": "Creating",
                            "CapacityRequirements": {"Spot": {}},
                            "NetworkInterface": {"InterfaceType": "efa-only"}}],
        "NodeRecovery": "Automatic", "NodeProvisioningMode": "Continuous",
        "Orchestrator": {"Eks": {"ClusterArn": EKS_ARN}},
        "VpcConfig": {"SecurityGroupIds": [SG], "Subnets": SUBNETS},
    }, {"ClusterName": "lab"})
    node = {"InstanceGroupName": "workers", "InstanceType": "ml.p5.48xlarge", "LaunchTime": now}
    stub.add_response("list_cluster_nodes", {
        "ClusterNodeSummaries": [dict(node, InstanceId="i-0aaaaaaaaaaaaaaa1",
                                      InstanceStatus={"Status": "Running"})],
        "NextToken": "page-2"}, {"ClusterName": "lab", "MaxResults": 100})
    stub.add_response("list_cluster_nodes", {
        "ClusterNodeSummaries": [dict(node, InstanceId="i-0aaaaaaaaaaaaaaa2",
                                      InstanceStatus={"Status": "DeepHealthCheckInProgress",
                                                      "Message": "stress test"})]},
        {"ClusterName": "lab", "NextToken": "page-2", "MaxResults": 100})
    stub.add_response("list_cluster_events", {"Events": [{
        "EventId": "e-1", "ClusterArn": "arn", "ClusterName": "lab", "ResourceType": "Instance",
        "EventTime": now, "EventLevel": "Warn", "InstanceGroupName": "workers",
        "InstanceId": "i-0aaaaaaaaaaaaaaa2", "Description": "deep health check running"}]},
        {"ClusterName": "lab", "SortOrder": "Descending", "MaxResults": ANY})
    with stub:
        view = hyperpod.describe(client, "lab")
    stub.assert_no_pending_responses()
    assert view["status"] == "Creating"
    assert view["node_recovery"] == "Automatic" and view["eks_cluster_arn"] == EKS_ARN
    assert view["node_counts"] == {"total": 2, "by_status": {
        "DeepHealthCheckInProgress": 1, "Running": 1}}
    (workers,) = view["instance_groups"]
    assert workers["capacity_type"] == "spot" and workers["efa_mode"] == "efa-only"
    assert workers["current_count"] == 1 and workers["target_count"] == 3
    assert view["events"] == [{
        "id": "e-1", "at": now.isoformat(), "level": "Warn", "resource_type": "Instance",
        "instance_group": "workers", "instance_id": "i-0aaaaaaaaaaaaaaa2",
        "description": "deep health check running"}]
    assert view["events_available"] is True


def test_describe_without_an_events_api_says_so():
    client, stub = _stubbed()
    stub.add_response("describe_cluster", {
        "ClusterArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/abcdefghijkl",
        "ClusterName": "lab", "ClusterStatus": "Failed", "FailureMessage": "no capacity",
        "CreationTime": datetime.datetime(2026, 1, 1), "InstanceGroups": []})
    stub.add_response("list_cluster_nodes", {"ClusterNodeSummaries": []})
    stub.add_client_error("list_cluster_events", "UnknownOperationException", "no such")
    with stub:
        view = hyperpod.describe(client, "lab")
    assert view["failure_message"] == "no capacity"
    assert view["events"] == [] and view["events_available"] is False


def test_delete_of_a_cluster_already_deleting_is_a_no_op():
    client, stub = _stubbed()
    stub.add_response("describe_cluster", {
        "ClusterArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/abcdefghijkl",
        "ClusterName": "lab", "ClusterStatus": "Deleting",
        "CreationTime": datetime.datetime(2026, 1, 1), "InstanceGroups": []})
    with stub:
        assert hyperpod.delete_cluster(client, "lab") is False


# -- lifecycle scripts ---------------------------------------------------------------------


@pytest.fixture
def s3(moto_aws):
    return aws.client("s3", REGION, AWS_MODE)


def test_lifecycle_bucket_is_a_private_encrypted_sagemaker_bucket(s3):
    made = lifecycle.ensure_lifecycle_bucket(s3, "lab", REGION, account_id=ACCOUNT)
    name = made["name"]
    assert name.startswith("sagemaker-hypd-lab-") and len(name) <= 63
    assert made["created"] is True
    assert name == lifecycle.lifecycle_bucket_name("lab", ACCOUNT, REGION)
    info = bucket_info(s3, name)
    assert info["tags"]["hypd:cluster"] == "lab"
    assert info["tags"]["hypd:role"] == "lifecycle-bucket"
    assert all(s3.get_public_access_block(Bucket=name)[
        "PublicAccessBlockConfiguration"].values())
    assert s3.get_bucket_encryption(Bucket=name)["ServerSideEncryptionConfiguration"]
    again = lifecycle.ensure_lifecycle_bucket(s3, "lab", REGION, account_id=ACCOUNT)
    assert again == dict(made, created=False)
    # the same name for another cluster's tags is refused
    with pytest.raises(StorageError):
        lifecycle.ensure_lifecycle_bucket(s3, "lab", REGION,
                                          lifecycle.lifecycle_bucket_tags("other"),
                                          account_id=ACCOUNT)


def test_upload_scripts_is_idempotent_and_byte_for_byte(s3):
    bucket = lifecycle.ensure_lifecycle_bucket(s3, "lab", REGION, account_id=ACCOUNT)["name"]
    spy = Spy(s3)
    first = lifecycle.upload_scripts(spy, bucket)
    assert first["uri"] == f"s3://{bucket}/lifecycle/"
    assert first["on_create"] == "on_create.sh"
    assert first["uploaded"] == ["lifecycle/on_create.sh"]
    body = s3.get_object(Bucket=bucket, Key="lifecycle/on_create.sh")["Body"].read()
    assert body == (lifecycle.SCRIPTS_DIR / "on_create.sh").read_bytes()
    second = lifecycle.upload_scripts(spy, bucket)
    assert second["uploaded"] == [] and second["unchanged"] == ["lifecycle/on_create.sh"]
    assert spy.calls.count("put_object") == 1
    changed = lifecycle.upload_scripts(spy, bucket, files={"on_create.sh": b"#!/bin/bash\n"})
    assert changed["uploaded"] == ["lifecycle/on_create.sh"]
    # the URI fits the capacity function's rule for lifecycle locations
    instance_group_spec(name="w", instance_type="ml.g5.xlarge", count=1,
                        execution_role_arn=ROLE, lifecycle_s3_uri=first["uri"],
                        subnet_id=SUBNETS[0], security_group_ids=[SG])
    with pytest.raises(ValueError):
        lifecycle.upload_scripts(s3, bucket, files={"other.sh": b""})


def test_on_create_script_is_valid_bash_that_downloads_nothing():
    path = lifecycle.SCRIPTS_DIR / "on_create.sh"
    subprocess.run(["bash", "-n", str(path)], check=True)
    text = path.read_text()
    assert text.startswith("#!/bin/bash\n")
    assert "/var/log/provision/provisioning.log" in text
    assert "/opt/sagemaker" in text
    for fetcher in ("curl ", "wget ", "pip install", "yum install", "dnf install", "aws s3 cp"):
        assert fetcher not in text


# -- the hyperpod stage's pieces against the sandbox's faithful HyperPod --------------------
# These run last in this module: the local AWS keeps moto's state in this process, and the
# moto fixtures above reset it.


@pytest.fixture(scope="module")
def local_aws():
    from sandbox.local_aws import LocalAws

    local = LocalAws(speed=1000)
    local.start()
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture
def sandbox(local_aws, monkeypatch):
    from sandbox.control import SandboxControl
    from sandbox.local_aws import client_env

    for key, value in client_env(local_aws.url, REGION).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HYPD_AWS", "sandbox")
    monkeypatch.setenv("HYPD_REGION", REGION)
    aws.clear_cache()
    ctl = SandboxControl(local_aws.url)
    ctl.reset()
    ctl.reset_quotas()
    yield ctl
    ctl.reset_quotas()
    aws.clear_cache()


def _trust(service):
    import json

    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}]})


def _eks_and_network(ctl, name):
    """What earlier stages leave behind: a hypd network, roles, an ACTIVE EKS cluster."""
    from cloud import networks

    ec2, iam, eks = aws.client("ec2"), aws.client("iam"), aws.client("eks")
    vpc = networks.ensure_vpc(ec2, name)
    subnets = networks.ensure_subnets(ec2, name, vpc["vpc_id"], ["us-west-2a", "us-west-2b"])
    sg = networks.ensure_security_group(ec2, name, vpc["vpc_id"])["security_group_id"]
    private = [s["id"] for s in subnets if s["role"] == "private"]
    roles = {}
    for purpose, service in (("eks", "eks.amazonaws.com"), ("exec", "sagemaker.amazonaws.com"),
                             ("cluster", "sagemaker.amazonaws.com")):
        roles[purpose] = iam.create_role(RoleName=f"hypd-{name}-{purpose}",
                                         AssumeRolePolicyDocument=_trust(service))["Role"]["Arn"]
    eks_arn = eks.create_cluster(
        name=name, roleArn=roles["eks"],
        resourcesVpcConfig={"subnetIds": private, "securityGroupIds": [sg]},
        accessConfig={"authenticationMode": "API"})["cluster"]["arn"]
    ctl.advance_clock(700)
    assert eks.describe_cluster(name=name)["cluster"]["status"] == "ACTIVE"
    return ec2, vpc, private, sg, roles, eks_arn


def test_sandbox_hyperpod_stage_creates_once_with_the_allocators_subnet(sandbox):
    from cloud import discovery

    ec2, vpc, private, sg, roles, eks_arn = _eks_and_network(sandbox, "stage")
    s3, sm = aws.client("s3"), aws.client("sagemaker")
    account = aws.client("sts").get_caller_identity()["Account"]
    bucket = lifecycle.ensure_lifecycle_bucket(s3, "stage", REGION, account_id=account)["name"]
    scripts = lifecycle.upload_scripts(s3, bucket)
    compute = allocate_compute_subnet(ec2, vpc["vpc_id"], "us-west-2a",
                                      compute_subnet_tags("stage", "workers", "us-west-2a"))
    info = discovery.instance_type_info(
        discovery.describe_instance_types(ec2, ["g5.8xlarge"])[0])
    spec = instance_group_spec(
        name="workers", instance_type="ml.g5.8xlarge", count=2,
        execution_role_arn=roles["exec"], lifecycle_s3_uri=scripts["uri"],
        on_create=scripts["on_create"], subnet_id=compute["id"], security_group_ids=[sg],
        interface_mode="efa", instance_info=info,
        deep_health_checks=["InstanceStress", "InstanceConnectivity"], volume_size_gb=500)
    req = hyperpod.cluster_request("stage", eks_arn, [sg], private, [spec], roles["cluster"])

    arn = hyperpod.ensure_cluster(sm, req)
    assert hyperpod.ensure_cluster(sm, req) == arn  # a re-run adopts
    assert sandbox.counters()["by_action"].get("sagemaker:CreateCluster") == 1
    (sent,) = sandbox.calls(service="sagemaker", action="CreateCluster")
    params = sent["params"]
    assert params["NodeRecovery"] == "Automatic"
    assert params["NodeProvisioningMode"] == "Continuous"
    assert params["ClusterRole"] == roles["cluster"]
    assert params["Orchestrator"] == {"Eks": {"ClusterArn": eks_arn}}
    group = params["InstanceGroups"][0]
    assert group["OverrideVpcConfig"]["Subnets"] == [compute["id"]]
    assert compute["cidr"].endswith("/20")
    assert group["CapacityRequirements"] == {"OnDemand": {}}
    assert group["NetworkInterface"] == {"InterfaceType": "efa"}

    state = hyperpod.cluster_state(sm, "stage")
    assert state["arn"] == arn and state["status"] == "Creating" and not state["ready"]
    sandbox.advance_clock(2000)
    view = hyperpod.describe(sm, "stage")
    assert view["status"] == "InService"
    assert view["node_recovery"] == "Automatic" and view["cluster_role"] == roles["cluster"]
    (workers,) = view["instance_groups"]
    assert workers["target_count"] == 2 and workers["capacity_type"] == "on-demand"
    assert workers["efa_mode"] == "efa" and workers["subnet_ids"] == [compute["id"]]
    assert view["node_counts"]["total"] == 2
    assert all(n["id"].startswith("i-") for n in view["nodes"])
    assert view["events_available"] and view["events"]
    managed = hyperpod.list_clusters(sm, managed_only=True)
    assert [c["name"] for c in managed] == ["stage"]

    # the storage stage on the same cluster: the shared bucket as a PV/PVC in its Kubernetes
    from cloud import eks as eks_api
    from cloud import kube, storage

    data = storage.ensure_bucket(s3, storage.shared_bucket_name("stage", account, REGION),
                                 REGION, aws.tags_for(aws.CLUSTER_TAG, "stage",
                                                      role="shared-bucket"))
    api = eks_api.api_client("stage", REGION)
    for manifest in storage.s3_volume(data["name"], REGION, cluster="stage"):
        kube.server_side_apply(api, manifest)
    claim = kube.get_object(api, "v1", "PersistentVolumeClaim", "hypd-s3", "default")
    assert claim["spec"]["volumeName"] == storage.volume_name("default", "hypd-s3")
    volume = kube.get_object(api, "v1", "PersistentVolume", "hypd-default-hypd-s3")
    assert volume["spec"]["csi"]["volumeAttributes"]["bucketName"] == data["name"]
    nodes = kube.list_objects(api, "v1", "Node")
    assert len(nodes) == 2  # HyperPod's instances joined the cluster
    assert storage.storage_users(kube.list_objects(api, "v1", "Pod"), "hypd-s3") == []
    assert storage.delete_volume(api, "hypd-s3") == {"claim": True, "volume": True}
    assert storage.delete_volume(api, "hypd-s3") == {"claim": False, "volume": False}

    assert hyperpod.delete_cluster(sm, "stage") is True
    assert hyperpod.delete_cluster(sm, "stage") is False  # already deleting
    sandbox.advance_clock(1000)
    assert hyperpod.cluster_state(sm, "stage") is None


def test_sandbox_refuses_what_preflight_would_have_reported(sandbox):
    from cloud import preflight

    ec2, vpc, private, sg, roles, eks_arn = _eks_and_network(sandbox, "short")
    s3, sm = aws.client("s3"), aws.client("sagemaker")
    bucket = lifecycle.ensure_lifecycle_bucket(s3, "short", REGION, account_id=ACCOUNT)["name"]
    scripts = lifecycle.upload_scripts(s3, bucket)
    compute = allocate_compute_subnet(ec2, vpc["vpc_id"], "us-west-2b",
                                      compute_subnet_tags("short", "workers", "us-west-2b"))
    sandbox.set_quota(1, quota_name="ml.g5.8xlarge for cluster usage")
    report = preflight.check(aws.client("service-quotas"), sm, REGION, "ml.g5.8xlarge", 2,
                             "on-demand")
    assert [c["name"] for c in preflight.failed(report)] == ["instance_quota"]
    spec = instance_group_spec(
        name="workers", instance_type="ml.g5.8xlarge", count=2,
        execution_role_arn=roles["exec"], lifecycle_s3_uri=scripts["uri"],
        subnet_id=compute["id"], security_group_ids=[sg])
    req = hyperpod.cluster_request("short", eks_arn, [sg], private, [spec], roles["cluster"])
    with pytest.raises(ClientError) as caught:
        hyperpod.ensure_cluster(sm, req)
    assert aws.error_code(caught.value) == "ResourceLimitExceeded"
    assert hyperpod.cluster_state(sm, "short") is None


# -- instance groups -------------------------------------------------------------------------


def _stubbed_cluster(status="InService"):
    sm = aws.client("sagemaker", REGION, AWS_MODE)
    stub = Stubber(sm)
    arn = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/abcdefghijkl"
    stub.add_response("describe_cluster", {
        "ClusterArn": arn, "ClusterName": "lab", "ClusterStatus": status,
        "InstanceGroups": [], "NodeProvisioningMode": "Continuous"}, {"ClusterName": "lab"})
    stub.add_response("list_tags", {"Tags": [{"Key": "hypd:managed-by", "Value": "hypd"},
                                             {"Key": "hypd:cluster", "Value": "lab"}]},
                      {"ResourceArn": arn})
    return sm, stub


def test_an_update_refused_during_deep_health_checks_is_a_wait_not_a_failure():
    from cloud.errors import NotYet

    sm, stub = _stubbed_cluster()
    stub.add_client_error(
        "update_cluster", "ValidationException",
        "Deep health checks are in progress on 2 instance(s) of cluster lab; wait until they "
        "finish before updating the cluster.")
    with stub, pytest.raises(NotYet) as err:
        hyperpod.update_instance_groups(sm, "lab", [group()])
    assert "deep health checks" in str(err.value) and err.value.retry_after


def test_an_update_sends_the_whole_list_and_what_to_delete():
    sm, stub = _stubbed_cluster()
    stub.add_response("update_cluster", {"ClusterArn": "arn:aws:sagemaker:us-west-2:"
                                         f"{ACCOUNT}:cluster/abcdefghijkl"},
                      {"ClusterName": "lab", "InstanceGroups": [group("a"), group("b")],
                       "InstanceGroupsToDelete": ["c"]})
    with stub:
        hyperpod.update_instance_groups(sm, "lab", [group("a"), group("b")], delete=["c"])
    stub.assert_no_pending_responses()


def test_an_update_of_a_cluster_that_is_not_ours_is_refused_before_any_call():
    sm = aws.client("sagemaker", REGION, AWS_MODE)
    stub = Stubber(sm)
    arn = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/abcdefghijkl"
    stub.add_response("describe_cluster", {"ClusterArn": arn, "ClusterName": "lab",
                                           "ClusterStatus": "InService", "InstanceGroups": []},
                      {"ClusterName": "lab"})
    stub.add_response("list_tags", {"Tags": []}, {"ResourceArn": arn})
    with stub, pytest.raises(hyperpod.HyperPodError):
        hyperpod.update_instance_groups(sm, "lab", [group()])
    stub.assert_no_pending_responses()  # and no update_cluster was queued or sent
