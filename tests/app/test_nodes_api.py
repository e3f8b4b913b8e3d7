"""Nodes through REST on the full stack: the listing joins HyperPod with Kubernetes, pages by
node id (every node once, also while nodes come and go), filters; one node in full; reboot,
replace and delete of 60 nodes are three batch calls each (25 + 25 + 10, read back from the
sandbox's call log) and the sandbox's nodes show them; what AWS would refuse is refused
before anything is recorded."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from cloud.preflight import quota_name
from schemas.nodes import NodeDetailSchema, NodeListSchema
from tasks.nodes import listing_cache_key
from tests.app.test_clusters_api import ZONE, _calls, _client, _last_seq
from tests.cloud.botocore_shape import validate_input
from tests.mcp_server.test_mcp_e2e import _follow, _stdio
from tests.stack import wait_until

TYPE = "ml.g4dn.xlarge"  # 10 addresses a node: a few hundred fit in one /20
WORKERS = 60
BULK = 240
HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:5]}"


def _done(stack, reply, timeout: float = 120) -> dict:
    assert reply.status_code == 202, reply.text
    op = stack.wait_operation(reply.json()["operation"]["id"], timeout)
    assert op["status"] == "succeeded", op
    return op


@pytest.fixture(scope="module")
def cluster(stack):
    """A cluster of 300 Running nodes in two groups, and a third group whose 2 nodes are in
    Failure (their lifecycle script is missing)."""
    stack.wait_idle()
    stack.sandbox.set_quota(1000, quota_name=quota_name(TYPE))
    name = _name("nodes")
    with stack.client() as c:
        _done(stack, c.post("/api/v1/clusters", json={
            "name": name, "availability_zone": ZONE, "instance_type": TYPE,
            "instance_count": WORKERS}), 300)
        _done(stack, c.post(f"/api/v1/clusters/{name}/instance-groups", json={
            "name": "bulk", "instance_type": TYPE, "instance_count": BULK}), 300)
        _done(stack, c.post(f"/api/v1/clusters/{name}/instance-groups", json={
            "name": "broken", "instance_type": TYPE, "instance_count": 2,
            "on_create": "missing.sh"}))
    wait_until(lambda: len(_failed(stack, name)) == 2, 30, what="the broken group's nodes")
    yield name
    # its 300 nodes go before the quota that allowed them does, so the account is within the
    # default quotas again for the tests that run after this module in the same session
    stack.wait_idle()
    with stack.client() as c:
        _done(stack, c.delete(f"/api/v1/clusters/{name}"), 300)
    stack.sandbox.reset_quotas()


def _sm(stack):
    return _client(stack, "sagemaker")


def _aws_nodes(stack, cluster: str) -> dict[str, dict]:
    pages = _sm(stack).get_paginator("list_cluster_nodes").paginate(ClusterName=cluster)
    return {n["InstanceId"]: n for p in pages for n in p["ClusterNodeSummaries"]}


def _failed(stack, cluster: str) -> list[str]:
    return sorted(i for i, n in _aws_nodes(stack, cluster).items()
                  if n["InstanceStatus"]["Status"] == "Failure")


def _of_group(stack, cluster: str, group: str, status: str | None = "Running") -> list[str]:
    return sorted(i for i, n in _aws_nodes(stack, cluster).items()
                  if n["InstanceGroupName"] == group
                  and status in (None, n["InstanceStatus"]["Status"]))


def _kube_nodes(stack, cluster: str) -> dict[str, dict]:
    kube = stack.kube(cluster)
    return {n["metadata"]["name"]: n for n in kube.list_objects("v1", "Node")}


def _fresh(stack, cluster: str) -> None:
    stack.redis().delete(listing_cache_key(cluster))


def _all_pages(stack, cluster: str, **query) -> tuple[list[dict], list[dict]]:
    """Every page of the listing: (nodes in order, the page replies)."""
    items, replies, cursor = [], [], None
    with stack.client("viewer") as c:
        while True:
            params = {**query, **({"cursor": cursor} if cursor else {})}
            reply = c.get(f"/api/v1/clusters/{cluster}/nodes", params=params)
            assert reply.status_code == 200, reply.text
            body = reply.json()
            replies.append(body)
            items += body["items"]
            cursor = body["next_cursor"]
            if cursor is None:
                return items, replies


def _batch_calls(stack, action: str, since: int) -> list[list[str]]:
    calls = _calls(stack, "sagemaker", action, since)
    for call in calls:
        assert validate_input("sagemaker", action, call["params"]) == []
    return [c["params"]["NodeIds"] for c in calls]


def _assert_three_batches(stack, action: str, since: int, node_ids: list[str]) -> None:
    batches = _batch_calls(stack, action, since)
    assert [len(b) for b in batches] == [25, 25, 10], [len(b) for b in batches]
    assert [n for b in batches for n in b] == node_ids  # in the order asked
    assert set(Counter(n for b in batches for n in b).values()) == {1}


# -- reads ---------------------------------------------------------------------------------

def test_pages_hold_every_node_once_in_id_order_joined_with_kubernetes(stack, cluster):
    _fresh(stack, cluster)
    items, replies = _all_pages(stack, cluster, limit=37)
    ids = [n["id"] for n in items]
    assert len(ids) == len(set(ids)) == WORKERS + BULK + 2
    assert set(ids) == set(_aws_nodes(stack, cluster))
    assert ids == sorted(ids)
    assert all(len(r["items"]) <= 37 for r in replies) and len(replies) == -(-len(ids) // 37)
    assert {r["total"] for r in replies} == {len(ids)}
    assert all(NodeListSchema().validate(r) == {} for r in replies)
    assert all(r["kubernetes_readable"] for r in replies)
    kube = _kube_nodes(stack, cluster)
    running = [n for n in items if n["status"] == "Running"]
    assert len(running) == WORKERS + BULK
    for node in running:
        assert node["node_name"] == f"hyperpod-{node['id']}" and node["node_name"] in kube
        assert node["ready"] is True and node["unschedulable"] is False
        assert node["health"] == kube[node["node_name"]]["metadata"]["labels"][HEALTH_LABEL]
    broken = [n for n in items if n["instance_group"] == "broken"]
    assert [n["status"] for n in broken] == ["Failure", "Failure"]
    assert all("missing.sh" in n["message"] and n["node_name"] is None for n in broken)


def test_a_page_boundary_neither_repeats_nor_skips_while_nodes_come_and_go(stack, cluster):
    sm = _sm(stack)
    before = set(_aws_nodes(stack, cluster))
    _fresh(stack, cluster)
    with stack.client("viewer") as c:
        first = c.get(f"/api/v1/clusters/{cluster}/nodes", params={"limit": 100}).json()
    boundary = first["next_cursor"]
    bulk = _of_group(stack, cluster, "bulk")
    # between two pages, ten nodes go (on both sides of the boundary) and ten join
    gone = [n for n in bulk if n <= boundary][:5] + [n for n in bulk if n > boundary][:5]
    assert sm.batch_delete_cluster_nodes(ClusterName=cluster, NodeIds=gone)["Successful"]
    sm.batch_add_cluster_nodes(ClusterName=cluster, NodesToAdd=[
        {"InstanceGroupName": "bulk", "IncrementTargetCountBy": 10}])
    wait_until(lambda: len(_of_group(stack, cluster, "bulk", None)) == BULK
               and len(_of_group(stack, cluster, "bulk")) == BULK, 30, what="the churn")
    _fresh(stack, cluster)
    rest, _ = _all_pages(stack, cluster, cursor=boundary, limit=100)
    seen = [n["id"] for n in first["items"] + rest]
    assert len(seen) == len(set(seen))  # nothing repeated
    assert before - set(gone) <= set(seen)  # nothing that was there throughout is skipped
    assert not {n for n in gone if n > boundary} & set(seen)  # gone before its page came
    joined = set(_of_group(stack, cluster, "bulk")) - before
    assert len(joined) == 10
    # the newcomers after the boundary are on the later pages; before it, on none
    assert {n for n in joined if n > boundary} <= set(seen)
    assert not {n for n in joined if n <= boundary} & set(seen)


def test_filters_by_group_status_and_health(stack, cluster):
    _fresh(stack, cluster)
    workers, _ = _all_pages(stack, cluster, instance_group="workers", limit=500)
    assert len(workers) == WORKERS and {n["instance_group"] for n in workers} == {"workers"}
    failed, _ = _all_pages(stack, cluster, status="Failure")
    assert [n["id"] for n in failed] == _failed(stack, cluster)
    unknown, _ = _all_pages(stack, cluster, health="Unknown")
    assert sorted(n["id"] for n in unknown) == _failed(stack, cluster)  # no Node at all
    # HyperPod's agent marks two nodes for reboot: the health filter finds exactly those
    kube = stack.kube(cluster)
    marked = [n["node_name"] for n in workers[:2]]
    for name in marked:
        kube.label_node(name, {HEALTH_LABEL: "UnschedulablePendingReboot"})
    _fresh(stack, cluster)
    pending, _ = _all_pages(stack, cluster, health="UnschedulablePendingReboot")
    assert [n["node_name"] for n in pending] == marked
    schedulable, _ = _all_pages(stack, cluster, health="Schedulable", limit=500)
    assert len(schedulable) == WORKERS + BULK - 2
    both, _ = _all_pages(stack, cluster, health="Schedulable", instance_group="bulk",
                         status="Running", limit=500)
    assert len(both) == BULK
    for name in marked:
        kube.label_node(name, {HEALTH_LABEL: "Schedulable"})
    with stack.client("viewer") as c:
        bad = c.get(f"/api/v1/clusters/{cluster}/nodes", params={"health": "Poorly"})
        assert bad.status_code == 422 and "health" in bad.json()["error"]["details"]["fields"]
        bad = c.get(f"/api/v1/clusters/{cluster}/nodes", params={"cursor": "nope"})
        assert bad.status_code == 422
        assert c.get("/api/v1/clusters/no-such/nodes").status_code == 404


def test_a_warm_page_is_served_from_the_cache_without_aws(stack, cluster):
    _fresh(stack, cluster)
    with stack.client("viewer") as c:
        c.get(f"/api/v1/clusters/{cluster}/nodes")  # cold: reads AWS and Kubernetes
        since = _last_seq(stack)
        warm = c.get(f"/api/v1/clusters/{cluster}/nodes", params={"limit": 10})
    assert warm.status_code == 200 and len(warm.json()["items"]) == 10
    assert stack.sandbox.calls(since=since) == []
    assert warm.headers["Server-Timing"].startswith("app;dur=")


def test_one_node_in_full_with_its_pods_and_events(stack, cluster):
    node_id = _of_group(stack, cluster, "workers")[0]
    kube = stack.kube(cluster)
    kube.create_pod({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "trainer", "namespace": "default"},
                     "spec": {"nodeName": f"hyperpod-{node_id}",
                              "containers": [{"name": "c", "image": "x"}]},
                     "status": {"phase": "Running"}})
    try:
        with stack.client("viewer") as c:
            node = c.get(f"/api/v1/clusters/{cluster}/nodes/{node_id}").json()
            missing = c.get(f"/api/v1/clusters/{cluster}/nodes/i-0123456789abcdef0")
            nonsense = c.get(f"/api/v1/clusters/{cluster}/nodes/not-a-node")
    finally:
        kube.delete_object("v1", "Pod", "trainer", "default")
    assert NodeDetailSchema().validate(node) == {}
    assert node["id"] == node_id and node["status"] == "Running"
    assert node["instance_group"] == "workers" and node["availability_zone"] == ZONE
    assert node["node_name"] == f"hyperpod-{node_id}" and node["ready"] is True
    assert node["health"] == "Schedulable"
    assert {"type": "Ready", "status": "True"}.items() <= next(
        c for c in node["conditions"] if c["type"] == "Ready").items()
    # the cluster's own pods (coredns's replicas, scheduled by the simulator) may share it
    mine = [p for p in node["pods"] if p["namespace"] == "default"]
    assert mine == [{"namespace": "default", "name": "trainer", "phase": "Running",
                     "owner": None}]
    assert all(p["namespace"] == "kube-system" for p in node["pods"] if p not in mine)
    assert any(node_id in e["description"] for e in node["events"])
    assert missing.status_code == 404 and "i-0123456789abcdef0" in missing.text
    assert nonsense.status_code == 404


# -- what is refused -------------------------------------------------------------------------

def test_unknown_nodes_and_states_aws_would_refuse_are_named_and_nothing_is_sent(stack,
                                                                               cluster):
    stack.wait_idle()
    workers = _of_group(stack, cluster, "workers")
    broken = _failed(stack, cluster)
    since, ops_before = _last_seq(stack), stack.redis().zcard("hypd:ops")
    with stack.client() as c:
        url = f"/api/v1/clusters/{cluster}/nodes"
        unknown = c.post(f"{url}/reboot", json={"node_ids": [workers[0], "i-0123456789abcdef0"]})
        assert unknown.status_code == 422, unknown.text
        assert unknown.json()["error"]["details"]["unknown"] == ["i-0123456789abcdef0"]
        assert "i-0123456789abcdef0" in unknown.json()["error"]["message"]
        state = c.post(f"{url}/reboot", json={"node_ids": [workers[0], *broken]})
        assert state.status_code == 409, state.text
        assert state.json()["error"]["details"]["nodes"] == {n: "Failure" for n in broken}
        assert f"{broken[0]} is Failure" in state.json()["error"]["message"]
        assert "Running" in state.json()["error"]["message"]
        twice = c.post(f"{url}/delete", json={"node_ids": [workers[0], workers[0]]})
        assert twice.status_code == 422 and "more than once" in twice.text
        empty = c.post(f"{url}/replace", json={"node_ids": []})
        assert empty.status_code == 422
    assert [c for c in stack.sandbox.calls(since=since) if c["action"].startswith("Batch")] == []
    assert stack.redis().zcard("hypd:ops") == ops_before


def test_nodes_of_an_imported_cluster_are_read_but_not_acted_on(stack, cluster):
    name = _name("imp")
    described = _client(stack, "eks").describe_cluster(name=cluster)["cluster"]
    role = _client(stack, "iam").create_role(RoleName=f"outside-{name}",
                                             AssumeRolePolicyDocument="{}")["Role"]
    _client(stack, "eks").create_cluster(
        name=name, roleArn=role["Arn"],
        resourcesVpcConfig={"subnetIds": described["resourcesVpcConfig"]["subnetIds"]})
    with stack.client() as c:
        imported = c.post("/api/v1/clusters/import",
                          json={"name": name, "hyperpod_cluster": cluster})
        assert imported.status_code == 201, imported.text
        try:
            listed = c.get(f"/api/v1/clusters/{name}/nodes", params={"limit": 5})
            assert listed.status_code == 200 and len(listed.json()["items"]) == 5
            refused = c.post(f"/api/v1/clusters/{name}/nodes/reboot",
                             json={"node_ids": [listed.json()["items"][0]["id"]]})
            assert refused.status_code == 409, refused.text
            assert "imported" in refused.json()["error"]["message"]
        finally:
            c.delete(f"/api/v1/clusters/{name}")
            # its owner removes it too: a cluster in the network keeps the module's cluster
            # (and its network) from being deleted after it
            _client(stack, "eks").delete_cluster(name=name)


# -- over MCP ------------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_an_agent_investigates_then_reboots_over_mcp(stack, cluster):
    """The playbook's path with a real MCP client over stdio: list, look, act, follow."""
    stack.wait_idle()
    async with _stdio(stack, stack.operator_token) as client:
        listed = (await client.call_tool("list_nodes", {
            "cluster": cluster, "instance_group": "workers", "limit": 2})).structured_content
        assert len(listed["items"]) == 2 and listed["total"] == WORKERS
        ids = [n["id"] for n in listed["items"]]
        node = (await client.call_tool("get_node", {"cluster": cluster, "node_id": ids[0]}))
        assert node.structured_content["status"] == "Running"
        refused = await client.call_tool("reboot_nodes", {"cluster": cluster,
                                                          "node_ids": ["not-a-node"]})
        assert refused.is_error and "validation_failed" in refused.content[0].text
        reply = (await client.call_tool("reboot_nodes", {"cluster": cluster,
                                                         "node_ids": ids})).structured_content
        done = await _follow(client, reply)
    assert done["operation"]["status"] == "succeeded", done
    assert done["operation"]["kind"] == "nodes.reboot"


# -- the actions -----------------------------------------------------------------------------

def test_reboot_of_60_nodes_is_three_batches_and_they_come_back(stack, cluster):
    stack.wait_idle()
    nodes = _of_group(stack, cluster, "workers")
    assert len(nodes) == WORKERS
    since = _last_seq(stack)
    with stack.client() as c:
        reply = c.post(f"/api/v1/clusters/{cluster}/nodes/reboot", json={"node_ids": nodes})
    op = _done(stack, reply)
    assert op["kind"] == "nodes.reboot" and op["target"] == f"cluster/{cluster}/nodes"
    assert [s["name"] for s in op["steps"]] == ["batch_1", "batch_2", "batch_3"]
    assert [len(s["resources"]["done"]) for s in op["steps"]] == [25, 25, 10]
    assert reply.json()["status_route"] == f"/api/v1/operations/{op['id']}"
    _assert_three_batches(stack, "BatchRebootClusterNodes", since, nodes)
    now = _aws_nodes(stack, cluster)
    assert all(now[n]["InstanceStatus"]["Status"] == "Running" for n in nodes)
    kube = _kube_nodes(stack, cluster)
    assert {kube[f"hyperpod-{n}"]["metadata"]["labels"][HEALTH_LABEL] for n in nodes} == {
        "Schedulable"}
    events = _sm(stack).get_paginator("list_cluster_events").paginate(
        ClusterName=cluster, ResourceType="Instance")
    rebooted = {e["InstanceId"] for p in events for e in p["Events"]
                if "rebooting" in e["Description"]}
    assert set(nodes) <= rebooted


def test_replace_of_60_nodes_is_three_batches_and_new_instances_take_their_place(stack,
                                                                                 cluster):
    stack.wait_idle()
    nodes = _of_group(stack, cluster, "workers")
    since = _last_seq(stack)
    with stack.client() as c:
        op = _done(stack, c.post(f"/api/v1/clusters/{cluster}/nodes/replace",
                                 json={"node_ids": nodes}))
    assert op["kind"] == "nodes.replace"
    _assert_three_batches(stack, "BatchReplaceClusterNodes", since, nodes)
    assert not set(nodes) & set(_aws_nodes(stack, cluster))  # every old instance is gone
    assert not {f"hyperpod-{n}" for n in nodes} & set(_kube_nodes(stack, cluster))
    wait_until(lambda: len(_of_group(stack, cluster, "workers")) == WORKERS, 30,
               what="the replacements running")
    assert not set(nodes) & set(_of_group(stack, cluster, "workers"))


def test_replace_takes_failed_nodes(stack, cluster):
    stack.wait_idle()
    broken = _failed(stack, cluster)
    with stack.client() as c:
        op = _done(stack, c.post(f"/api/v1/clusters/{cluster}/nodes/replace",
                                 json={"node_ids": broken}))
    assert op["steps"][0]["resources"]["done"] == broken
    assert not set(broken) & set(_aws_nodes(stack, cluster))


def test_delete_of_60_nodes_is_three_batches_and_shrinks_the_group(stack, cluster):
    stack.wait_idle()
    nodes = _of_group(stack, cluster, "bulk")[:60]
    with stack.client("viewer") as c:
        c.get(f"/api/v1/clusters/{cluster}/nodes")
        target = c.get(f"/api/v1/clusters/{cluster}/instance-groups/bulk").json()["target_count"]
    assert stack.redis().exists(listing_cache_key(cluster))
    # a bare pod on one of them would be lost: refused, naming it, and nothing sent
    kube = stack.kube(cluster)
    kube.create_pod({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "scratch", "namespace": "default"},
                     "spec": {"nodeName": f"hyperpod-{nodes[0]}",
                              "containers": [{"name": "c", "image": "x"}]},
                     "status": {"phase": "Running"}})
    since, ops_before = _last_seq(stack), stack.redis().zcard("hypd:ops")
    with stack.client() as c:
        refused = c.post(f"/api/v1/clusters/{cluster}/nodes/delete", json={"node_ids": nodes})
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["details"]["dependents"] == [
        {"kind": "pod", "name": "scratch", "namespace": "default", "cluster": None,
         "forceable": True,
         "why": f"runs on node hyperpod-{nodes[0]}; no controller recreates it elsewhere"}]
    assert _batch_calls(stack, "BatchDeleteClusterNodes", since) == []
    assert stack.redis().zcard("hypd:ops") == ops_before
    with stack.client() as c:  # forced: the user accepts losing it
        reply = c.post(f"/api/v1/clusters/{cluster}/nodes/delete", json={"node_ids": nodes},
                       params={"force": "true"})
        assert not stack.redis().exists(listing_cache_key(cluster))  # the action dropped it
        op = _done(stack, reply)
        group = c.get(f"/api/v1/clusters/{cluster}/instance-groups/bulk").json()
        listed, _ = _all_pages(stack, cluster, instance_group="bulk", limit=500)
    kube.delete_object("v1", "Pod", "scratch", "default")
    assert op["kind"] == "nodes.delete"
    _assert_three_batches(stack, "BatchDeleteClusterNodes", since, nodes)
    assert group["target_count"] == target - 60
    assert not set(nodes) & set(_aws_nodes(stack, cluster))
    assert not set(nodes) & {n["id"] for n in listed}
    assert len(_of_group(stack, cluster, "bulk")) == target - 60
