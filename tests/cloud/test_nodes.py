"""Node reading and acting: batch sizes from botocore's model, the join with Kubernetes, the
batch calls' answers, and the evidence an interrupted call leaves."""

from __future__ import annotations

import datetime

import botocore.session
import pytest
from botocore.stub import Stubber

from cloud import aws, nodes
from schemas import nodes as schemas_nodes
from tests.cloud.botocore_shape import validate_input
from tests.cloud.conftest import REGION

A, B, C = "i-0aaaaaaaaaaaaaaa1", "i-0aaaaaaaaaaaaaaa2", "i-0aaaaaaaaaaaaaaa3"


def _stubbed():
    client = aws.boto3.client("sagemaker", region_name=REGION, aws_access_key_id="x",
                              aws_secret_access_key="x")
    return client, Stubber(client)


def test_batches_are_the_smallest_limit_botocore_gives_any_node_call():
    model = botocore.session.get_session().get_service_model("sagemaker")
    limits = {op: model.operation_model(op).input_shape.members["NodeIds"].metadata["max"]
              for op in ("BatchRebootClusterNodes", "BatchReplaceClusterNodes",
                         "BatchDeleteClusterNodes")}
    assert nodes.batch_size() == min(limits.values()) == 25
    assert nodes.request_limit() == max(limits.values())
    # what the OpenAPI document tells clients (the dashboard's batch split) is the same
    assert nodes.batch_size() == schemas_nodes.BATCH_SIZE
    assert nodes.request_limit() == schemas_nodes.MAX_NODE_IDS
    ids = [f"i-{n:017x}" for n in range(60)]
    assert [len(b) for b in nodes.batches(ids)] == [25, 25, 10]
    assert [n for b in nodes.batches(ids) for n in b] == ids
    assert nodes.batch_count(60) == 3 and nodes.batch_count(25) == 1


def test_which_states_each_action_takes():
    assert nodes.REBOOT.acts_on("Running") and not nodes.REBOOT.acts_on("Failure")
    assert nodes.REPLACE.acts_on("Failure") and not nodes.REPLACE.acts_on("Pending")
    assert nodes.DELETE.acts_on("Pending") and not nodes.DELETE.acts_on("ShuttingDown")
    assert nodes.DELETE.accepted_states() == "any state but ShuttingDown"
    assert nodes.REPLACE.accepted_states() == "Failure or Running"


def test_a_kubernetes_node_is_joined_by_its_provider_id_else_hyperpods_name():
    assert nodes.instance_of({"spec": {"providerID": f"aws:///us-west-2a/{A}"}}) == A
    assert nodes.instance_of({"metadata": {"name": f"hyperpod-{B}"}, "spec": {}}) == B
    assert nodes.instance_of({"metadata": {"name": "ip-10-0-0-1"}, "spec": {}}) is None
    node = {"metadata": {"name": f"hyperpod-{A}", "labels": {nodes.HEALTH_LABEL: "Schedulable"}},
            "spec": {"unschedulable": True},
            "status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    joined = nodes.join([{"id": B, "status": "Running"}, {"id": A, "status": "Running"}],
                        {A: nodes.kube_view(node)})
    assert [n["id"] for n in joined] == [A, B]
    assert joined[0] == {"id": A, "status": "Running", "node_name": f"hyperpod-{A}",
                          "ready": False, "health": "Schedulable", "unschedulable": True}
    assert joined[1]["node_name"] is None and joined[1]["ready"] is None
    assert nodes.join([{"id": A}], None)[0]["health"] is None  # Kubernetes unreadable


@pytest.mark.parametrize(("action", "node", "label", "events", "shown"), [
    (nodes.REBOOT, None, None, [], "no longer in the cluster"),
    (nodes.REBOOT, {"status": "Pending"}, None, [], "now Pending"),
    (nodes.REBOOT, {"status": "Running"}, "UnschedulablePendingReboot", [],
     "labelled UnschedulablePendingReboot"),
    (nodes.REBOOT, {"status": "Running"}, "Schedulable", [{"Description": "rebooted"}],
     "HyperPod event: rebooted"),
    (nodes.REBOOT, {"status": "Running"}, "Schedulable", [], None),
    # an event of the node that is not the action's says nothing of the call (found by the
    # fault campaign: a throttled replace, retried, adopted the node's "is running" event
    # and then waited for ever for a replacement never asked for)
    (nodes.REPLACE, {"status": "Running"}, "Schedulable",
     [{"Description": f"Instance {A} is running."}], None),
    (nodes.REPLACE, {"status": "Running"}, "Schedulable",
     [{"Description": f"Instance {A} is running."},
      {"Description": f"Instance {A} is being replaced."}],
     f"HyperPod event: Instance {A} is being replaced."),
    (nodes.REBOOT, {"status": "Running"}, "Schedulable",
     [{"Description": "Deep health checks passed."}], None),
    (nodes.DELETE, {"status": "Running"}, None,
     [{"Description": f"Instance {A} is being deleted."}],
     f"HyperPod event: Instance {A} is being deleted."),
    (nodes.REPLACE, {"status": "Failure"}, None, [], None),
    (nodes.REPLACE, {"status": "ShuttingDown"}, None, [], "now ShuttingDown"),
    (nodes.REPLACE, {"status": "Running"}, "UnschedulablePendingReplacement", [],
     "labelled UnschedulablePendingReplacement"),
    (nodes.DELETE, {"status": "Running"}, "UnschedulablePendingReboot", [], None),
    (nodes.DELETE, None, None, [], "no longer in the cluster"),
])
def test_evidence_of_a_call_that_went_through(action, node, label, events, shown):
    found = nodes.evidence(action, [A], {A: node} if node else {}, {A: label},
                           {A: events} if events else {})
    assert found == ({A: shown} if shown else {})


def test_a_batch_calls_answer_and_its_per_node_failures():
    client, stub = _stubbed()
    stub.add_response("batch_reboot_cluster_nodes", {
        "Successful": [A], "Failed": [{"NodeId": B, "ErrorCode": "InvalidInstanceStatus",
                                       "Message": "Node is Pending."}]},
        {"ClusterName": "lab", "NodeIds": [A, B]})
    stub.add_response("batch_delete_cluster_nodes", {
        "Successful": [C], "Failed": [{"NodeId": A, "Code": "NodeIdNotFound",
                                       "Message": "not found"}]},
        {"ClusterName": "lab", "NodeIds": [C, A]})
    with stub:
        assert nodes.send(client, "lab", nodes.REBOOT, [A, B]) == (
            [A], [{"node_id": B, "code": "InvalidInstanceStatus", "message": "Node is Pending."}])
        assert nodes.send(client, "lab", nodes.DELETE, [C, A]) == (
            [C], [{"node_id": A, "code": "NodeIdNotFound", "message": "not found"}])
    assert validate_input("sagemaker", "BatchRebootClusterNodes",
                          {"ClusterName": "lab", "NodeIds": [A, B]}) == []
    with pytest.raises(ValueError, match="at most 25"):
        nodes.send(client, "lab", nodes.REPLACE, [f"i-{n:017x}" for n in range(26)])


def test_instance_events_since_a_call_allow_for_clock_skew():
    client, stub = _stubbed()
    since = datetime.datetime(2026, 12, 1, 12, 0, 0, tzinfo=datetime.UTC)
    at = since + datetime.timedelta(seconds=1)
    event = {"EventId": "e", "ClusterArn": "arn", "ClusterName": "lab",
             "ResourceType": "Instance", "EventTime": at, "Description": "rebooting"}
    stub.add_response("list_cluster_events", {
        "Events": [dict(event, InstanceId=A), dict(event, EventId="f", InstanceId=A),
                   dict(event, EventId="g", InstanceId=B)], "NextToken": "t"},
        {"ClusterName": "lab", "ResourceType": "Instance", "MaxResults": 100,
         "EventTimeAfter": since - datetime.timedelta(seconds=nodes.EVENT_SLACK_S)})
    stub.add_response("list_cluster_events", {"Events": [dict(event, EventId="h")]}, {
        "ClusterName": "lab", "ResourceType": "Instance", "MaxResults": 100, "NextToken": "t",
        "EventTimeAfter": since - datetime.timedelta(seconds=nodes.EVENT_SLACK_S)})
    with stub:
        found = nodes.instance_events_since(client, "lab", since)
    assert {k: len(v) for k, v in found.items()} == {A: 2, B: 1}


def test_a_missing_hyperpod_cluster_is_a_refusal():
    client, stub = _stubbed()
    stub.add_client_error("list_cluster_nodes", "ResourceNotFound", "Cluster lab not found")
    with stub, pytest.raises(nodes.NoHyperPodCluster, match="no HyperPod cluster 'lab'"):
        nodes.nodes_by_id(client, "lab")


def test_one_node_is_described_with_its_current_labels_and_taints():
    client, stub = _stubbed()
    launched = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)
    stub.add_response("describe_cluster_node", {"NodeDetails": {
        "InstanceGroupName": "workers", "InstanceId": A, "InstanceType": "ml.g5.8xlarge",
        "InstanceStatus": {"Status": "Failure", "Message": "GPU fell off"},
        "LaunchTime": launched, "PrivatePrimaryIp": "10.0.0.9",
        "Placement": {"AvailabilityZone": "us-west-2a"}, "CapacityType": "Spot",
        "KubernetesConfig": {"CurrentLabels": {"team": "ml"}, "DesiredLabels": {"team": "x"},
                             "CurrentTaints": [{"Key": "gpu", "Effect": "NoSchedule"}]}}},
        {"ClusterName": "lab", "NodeId": A})
    stub.add_client_error("describe_cluster_node", "ResourceNotFound", "Node not found")
    with stub:
        node = nodes.describe_node(client, "lab", A)
        assert nodes.describe_node(client, "lab", B) is None
    assert node["status"] == "Failure" and node["message"] == "GPU fell off"
    assert node["availability_zone"] == "us-west-2a" and node["capacity_type"] == "Spot"
    assert node["labels"] == {"team": "ml"}
    assert node["taints"] == [{"key": "gpu", "effect": "NoSchedule"}]
    assert node["launched_at"] == launched.isoformat()
