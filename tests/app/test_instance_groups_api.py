"""Instance groups through REST on the full stack: each capacity path sends the UpdateCluster
AWS expects (read back from the sandbox's call log, valid against botocore's model), the
whole list of groups every time; fixed fields are refused with nothing sent; a PATCH that
matches changes nothing; concurrent adds never overlap; deletes refuse what they should."""

from __future__ import annotations

import ipaddress
import threading
import uuid

import pytest

from cloud.preflight import quota_name
from tests.app.test_clusters_api import TYPE, ZONE, _body, _calls, _client, _create, _last_seq
from tests.cloud.botocore_shape import validate_input

P5 = "ml.p5.48xlarge"


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:5]}"


@pytest.fixture(scope="module")
def cluster(stack):
    stack.wait_idle()
    name = _name("grp")
    op = _create(stack, _body(name))
    assert op["status"] == "succeeded", op
    steps = {s["name"]: s["resources"] for s in op["steps"]}
    return {"name": name, "vpc_id": steps["vpc"]["vpc_id"],
            "first_subnet": steps["compute_subnet"]["subnet_id"]}


def _groups_url(cluster: str, group: str | None = None) -> str:
    return f"/api/v1/clusters/{cluster}/instance-groups" + (f"/{group}" if group else "")


def _add(stack, cluster: str, body: dict, expect: int = 202):
    with stack.client() as c:
        reply = c.post(_groups_url(cluster), json=body)
    assert reply.status_code == expect, reply.text
    return reply


def _added(stack, cluster: str, body: dict) -> dict:
    op = stack.wait_operation(_add(stack, cluster, body).json()["operation"]["id"], 120)
    assert op["status"] == "succeeded", op
    return op


def _updates(stack, cluster: str, since: int) -> list[dict]:
    return [c["params"] for c in _calls(stack, "sagemaker", "UpdateCluster", since)
            if c["params"]["ClusterName"] == cluster]


def _group_in(request: dict, name: str) -> dict:
    return next(g for g in request["InstanceGroups"] if g["InstanceGroupName"] == name)


def _subnet(stack, subnet_id: str) -> dict:
    return _client(stack, "ec2").describe_subnets(SubnetIds=[subnet_id])["Subnets"][0]


def test_a_spot_group_is_one_update_with_the_whole_list_and_its_own_subnet(stack, cluster):
    name, since = cluster["name"], _last_seq(stack)
    _added(stack, name, {"name": "spot", "instance_type": TYPE, "instance_count": 2,
                         "capacity_type": "spot", "labels": {"team": "ml"},
                         "taints": [{"key": "spot", "effect": "PreferNoSchedule"}],
                         "threads_per_core": 1, "volume_size_gb": 200})
    [request] = _updates(stack, name, since)
    assert validate_input("sagemaker", "UpdateCluster", request) == []
    assert {g["InstanceGroupName"] for g in request["InstanceGroups"]} >= {"workers", "spot"}
    group = _group_in(request, "spot")
    assert group["CapacityRequirements"] == {"Spot": {}}
    assert group["NetworkInterface"] == {"InterfaceType": "efa"}  # g5.8xlarge has EFA
    assert group["KubernetesConfig"] == {
        "Labels": {"team": "ml"}, "Taints": [{"Key": "spot", "Effect": "PreferNoSchedule"}]}
    assert group["InstanceStorageConfigs"] == [{"EbsVolumeConfig": {"VolumeSizeInGB": 200}}]
    subnet = _subnet(stack, group["OverrideVpcConfig"]["Subnets"][0])
    assert ipaddress.ip_network(subnet["CidrBlock"]).prefixlen == 20
    assert subnet["AvailabilityZone"] == ZONE and subnet["VpcId"] == cluster["vpc_id"]
    assert subnet["SubnetId"] != cluster["first_subnet"]
    tags = {t["Key"]: t["Value"] for t in subnet["Tags"]}
    assert tags["hypd:cluster"] == name and tags["hypd:instance-group"] == "spot"
    first = _group_in(request, "workers")  # the untouched group is sent as it is
    assert first["InstanceCount"] == 2 and first["CapacityRequirements"] == {"OnDemand": {}}
    with stack.client("viewer") as c:
        listed = {g["name"]: g for g in c.get(_groups_url(name)).json()["items"]}
    assert listed["spot"]["capacity_type"] == "spot"
    assert listed["spot"]["availability_zone"] == ZONE
    assert listed["spot"]["labels"] == {"team": "ml"}
    assert listed["spot"]["target_count"] == 2


def test_efa_only_needs_a_type_with_several_interfaces(stack, cluster):
    name = cluster["name"]
    refused = _add(stack, name, {"name": "eo", "instance_type": TYPE, "instance_count": 1,
                                 "efa_mode": "efa-only"}, expect=422)
    assert "efa_mode" in refused.json()["error"]["details"]["fields"]
    stack.sandbox.set_quota(4, quota_name=quota_name(P5))
    try:
        since = _last_seq(stack)
        _added(stack, name, {"name": "p5", "instance_type": P5, "instance_count": 1,
                             "efa_mode": "efa-only"})
        [request] = _updates(stack, name, since)
        assert validate_input("sagemaker", "UpdateCluster", request) == []
        assert _group_in(request, "p5")["NetworkInterface"] == {"InterfaceType": "efa-only"}
    finally:
        stack.sandbox.reset_quotas()


def test_a_group_in_an_existing_subnet_makes_no_subnet(stack, cluster):
    name = cluster["name"]
    ec2 = _client(stack, "ec2")
    given = ec2.create_subnet(VpcId=cluster["vpc_id"], CidrBlock="10.0.240.0/20",
                              AvailabilityZone="us-west-2b")["Subnet"]["SubnetId"]
    since = _last_seq(stack)
    _added(stack, name, {"name": "given", "instance_type": TYPE, "instance_count": 1,
                         "subnet_id": given})
    [request] = _updates(stack, name, since)
    assert _group_in(request, "given")["OverrideVpcConfig"]["Subnets"] == [given]
    assert _calls(stack, "ec2", "CreateSubnet", since) == []
    with stack.client("viewer") as c:
        assert c.get(_groups_url(name, "given")).json()["availability_zone"] == "us-west-2b"
    elsewhere = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    foreign = ec2.create_subnet(VpcId=elsewhere, CidrBlock="10.9.0.0/20",
                                AvailabilityZone=ZONE)["Subnet"]["SubnetId"]
    refused = _add(stack, name, {"name": "foreign", "instance_type": TYPE,
                                 "instance_count": 1, "subnet_id": foreign}, expect=422)
    assert "subnet_id" in refused.json()["error"]["details"]["fields"]


def test_a_training_plan_places_the_group_in_its_zone(stack, cluster):
    name = cluster["name"]
    plan = stack.sandbox.add_training_plan(f"plan-{uuid.uuid4().hex[:5]}", P5, 2,
                                           "us-west-2c")
    arn = plan["TrainingPlanArn"]
    try:
        conflict = _add(stack, name, {"name": "planned", "instance_type": P5,
                                      "instance_count": 2, "capacity_type": "training-plan",
                                      "training_plan_arn": arn,
                                      "availability_zone": ZONE}, expect=422)
        assert "us-west-2c" in conflict.json()["error"]["message"]
        since = _last_seq(stack)
        _added(stack, name, {"name": "planned", "instance_type": P5, "instance_count": 2,
                             "capacity_type": "training-plan", "training_plan_arn": arn})
        [request] = _updates(stack, name, since)
        group = _group_in(request, "planned")
        assert group["TrainingPlanArn"] == arn and "CapacityRequirements" not in group
        subnet = _subnet(stack, group["OverrideVpcConfig"]["Subnets"][0])
        assert subnet["AvailabilityZone"] == "us-west-2c"
    finally:
        # every later UpdateCluster sends this group too: it goes before its plan does
        with stack.client() as c:
            reply = c.delete(_groups_url(name, "planned"), params={"force": "true"})
        if reply.status_code == 202:
            stack.wait_operation(reply.json()["operation"]["id"], 120)
        stack.sandbox.clear_training_plans()


def test_groups_added_at_once_never_get_overlapping_subnets(stack, cluster):
    name = cluster["name"]
    replies: dict[str, int] = {}
    ops: dict[str, str] = {}

    def add(group: str) -> None:
        with stack.client() as c:
            reply = c.post(_groups_url(name), json={"name": group, "instance_type": TYPE,
                                                    "instance_count": 1})
        replies[group] = reply.status_code
        if reply.status_code == 202:
            ops[group] = reply.json()["operation"]["id"]

    threads = [threading.Thread(target=add, args=(g,)) for g in ("race-a", "race-b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(replies.values()) <= {202, 409} and 202 in replies.values()
    for op_id in ops.values():
        assert stack.wait_operation(op_id, 120)["status"] == "succeeded"
    subnets = _client(stack, "ec2").describe_subnets(
        Filters=[{"Name": "vpc-id", "Values": [cluster["vpc_id"]]}])["Subnets"]
    blocks = [ipaddress.ip_network(s["CidrBlock"]) for s in subnets]
    assert not [(a, b) for i, a in enumerate(blocks) for b in blocks[i + 1:] if a.overlaps(b)]
    with stack.client("viewer") as c:
        listed = {g["name"] for g in c.get(_groups_url(name)).json()["items"]}
    assert set(ops) <= listed


def test_fixed_fields_are_refused_and_a_matching_patch_sends_nothing(stack, cluster):
    name = cluster["name"]
    stack.wait_idle()
    since = _last_seq(stack)
    with stack.client() as c:
        for field, value in (("capacity_type", "spot"), ("efa_mode", "efa-only"),
                             ("availability_zone", "us-west-2b"),
                             ("instance_type", "ml.g5.12xlarge")):
            reply = c.patch(_groups_url(name, "workers"), json={field: value})
            assert reply.status_code == 422, reply.text
            assert reply.json()["error"]["code"] == "immutable_field"
            assert reply.json()["error"]["details"]["field"] == field
        same = c.patch(_groups_url(name, "workers"),
                       json={"instance_count": 2, "capacity_type": "on-demand",
                             "availability_zone": ZONE})
        assert same.status_code == 200, same.text
        assert same.json()["changed"] is False
        unknown = c.patch(_groups_url(name, "workers"), json={"colour": "blue"})
        assert unknown.status_code == 422
    mutations = [c for c in stack.sandbox.calls(since=since)
                 if c["action"] in ("UpdateCluster", "CreateSubnet")]
    assert mutations == []


def test_a_count_change_is_one_update_and_is_read_back(stack, cluster):
    name = cluster["name"]
    since = _last_seq(stack)
    with stack.client() as c:
        reply = c.patch(_groups_url(name, "workers"), json={"instance_count": 3,
                                                            "labels": {"tier": "a"}})
    assert reply.status_code == 202, reply.text
    op = stack.wait_operation(reply.json()["operation"]["id"], 120)
    assert op["status"] == "succeeded", op
    [request] = _updates(stack, name, since)
    workers = _group_in(request, "workers")
    assert workers["InstanceCount"] == 3
    assert workers["KubernetesConfig"]["Labels"] == {"tier": "a"}
    assert workers["CapacityRequirements"] == {"OnDemand": {}}  # kept as it was
    with stack.client("viewer") as c:
        group = c.get(_groups_url(name, "workers")).json()
    assert group["target_count"] == 3 and group["labels"] == {"tier": "a"}


def test_delete_refuses_pods_that_cannot_move_then_removes_group_and_subnet(stack, cluster):
    name = cluster["name"]
    stack.wait_idle()
    _added(stack, name, {"name": "doomed", "instance_type": TYPE, "instance_count": 1})
    with stack.client("viewer") as c:
        subnet_id = c.get(_groups_url(name, "doomed")).json()["subnet_ids"][0]
    kube = stack.kube(name)
    node = next(n["metadata"]["name"] for n in kube.list_objects("v1", "Node")
                if n["metadata"]["labels"].get("sagemaker.amazonaws.com/instance-group-name")
                == "doomed")
    kube.create_pod({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "pinned", "namespace": "default"},
                     "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]},
                     "status": {"phase": "Running"}})
    with stack.client("viewer") as c:
        plan = c.delete(_groups_url(name, "doomed"), params={"dry_run": "true"}).json()
    assert plan["refused"] is True and plan["force_allowed"] is True
    assert plan["removes"][0] == f"instance group doomed: 1 {TYPE} node(s)"
    with stack.client() as c:
        refused = c.delete(_groups_url(name, "doomed"))
        assert refused.status_code == 409, refused.text
        error = refused.json()["error"]
        assert error["code"] == "in_use" and error["details"]["force_allowed"] is True
        assert [(d["kind"], d["namespace"], d["name"], d["why"])
                for d in error["details"]["dependents"]] == [
            ("pod", "default", "pinned",
             f"runs on node {node}; no controller recreates it elsewhere")]
        assert plan["dependents"] == error["details"]["dependents"]
        since = _last_seq(stack)
        reply = c.delete(_groups_url(name, "doomed"), params={"force": "true"})
    assert reply.status_code == 202, reply.text
    op = stack.wait_operation(reply.json()["operation"]["id"], 120)
    assert op["status"] == "succeeded", op
    [request] = _updates(stack, name, since)
    assert request["InstanceGroupsToDelete"] == ["doomed"]
    assert "doomed" not in {g["InstanceGroupName"] for g in request["InstanceGroups"]}
    with stack.client("viewer") as c:
        assert c.get(_groups_url(name, "doomed")).status_code == 404
    gone = _client(stack, "ec2").describe_subnets(
        Filters=[{"Name": "subnet-id", "Values": [subnet_id]}])["Subnets"]
    assert gone == []


def test_the_last_group_cannot_be_deleted(stack):
    stack.wait_idle()
    name = _name("one")
    assert _create(stack, _body(name, instance_count=1))["status"] == "succeeded"
    with stack.client() as c:
        refused = c.delete(_groups_url(name, "workers"))
    assert refused.status_code == 409 and "last instance group" in refused.json()["error"][
        "message"]
