"""A running cluster's cost through REST on the full stack: the hourly rate now, priced from
the (sandbox's) AWS Price List item by item as a plan is, and a lower bound of what it has
cost so far from its nodes' launch times and its control plane's creation."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from schemas.clusters import ClusterCostSchema
from tests.app.test_clusters_api import _body, _create

TYPE = "ml.g5.8xlarge"


@pytest.fixture(scope="module")
def cluster(stack):
    stack.wait_idle()
    name = f"cost-{uuid.uuid4().hex[:5]}"
    assert _create(stack, _body(name, instance_type=TYPE, instance_count=2))["status"] == \
        "succeeded"
    return name


def _cost(stack, cluster: str) -> dict:
    with stack.client("viewer") as c:
        reply = c.get(f"/api/v1/clusters/{cluster}/cost")
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert not ClusterCostSchema().validate(body), ClusterCostSchema().validate(body)
    return body


def _plan_unit(stack) -> float:
    """The list price a plan of the same type quotes (the same Price List, the same way)."""
    body = {"name": "cost-plan", "availability_zone": "us-west-2a", "instance_type": TYPE,
            "instance_count": 1}
    with stack.client("viewer") as c:
        plan = c.post("/api/v1/clusters", params={"dry_run": "true"}, json=body).json()
    [item] = [i for i in plan["cost"]["items"] if i["kind"] == "hyperpod_instances"]
    return item["unit_usd"]


def test_the_hourly_rate_is_what_runs_now_priced_item_by_item(stack, cluster):
    cost = _cost(stack, cluster)
    hourly = cost["hourly"]
    by_kind = {i["kind"]: i for i in hourly["items"]}
    nodes = stack.aws("sagemaker").list_cluster_nodes(ClusterName=cluster)["ClusterNodeSummaries"]
    instances = by_kind["hyperpod_instances"]
    assert instances["quantity"] == len(nodes) == 2
    assert instances["basis"] == "list-price" and instances["unit_usd"] == _plan_unit(stack)
    assert instances["hourly_usd"] == pytest.approx(2 * instances["unit_usd"], abs=1e-4)
    assert by_kind["eks_control_plane"]["unit_usd"] > 0
    assert by_kind["nat_gateway"]["quantity"] == 1  # the cluster's own network's
    assert "shared by every cluster" in by_kind["nat_gateway"]["note"]
    assert hourly["hourly_usd"] == pytest.approx(
        sum(i["hourly_usd"] for i in hourly["items"] if i["hourly_usd"] is not None), abs=1e-3)
    assert all(i["source"] for i in hourly["items"] if i["basis"] == "list-price")


def test_what_it_cost_so_far_counts_each_node_since_its_launch(stack, cluster):
    cost = _cost(stack, cluster)
    as_of = datetime.fromisoformat(cost["as_of"].replace("Z", "+00:00"))
    accrued = {i["kind"]: i for i in cost["accrued"]["items"]}
    unit = {i["kind"]: i["unit_usd"] for i in cost["hourly"]["items"]}
    nodes = stack.aws("sagemaker").list_cluster_nodes(ClusterName=cluster)["ClusterNodeSummaries"]
    launched = [n["LaunchTime"].astimezone(UTC) for n in nodes]
    hours = sum((as_of - t).total_seconds() for t in launched) / 3600
    instances = accrued["hyperpod_instances"]
    assert instances["hours"] == pytest.approx(hours, abs=0.01)
    assert instances["usd"] == pytest.approx(unit["hyperpod_instances"] * instances["hours"],
                                             abs=0.011)
    assert instances["since"] == min(launched).isoformat(timespec="seconds").replace(
        "+00:00", "Z")
    created = stack.aws("eks").describe_cluster(name=cluster)["cluster"]["createdAt"]
    plane = accrued["eks_control_plane"]
    assert plane["hours"] == pytest.approx((as_of - created).total_seconds() / 3600, abs=0.01)
    assert cost["accrued"]["usd"] == pytest.approx(
        sum(i["usd"] for i in cost["accrued"]["items"] if i["usd"] is not None), abs=0.02)
    assert "lower bound" in cost["accrued"]["note"]


def test_an_unknown_cluster_has_no_cost(stack):
    with stack.client("viewer") as c:
        reply = c.get("/api/v1/clusters/no-such-cluster/cost")
    assert reply.status_code == 404
    assert reply.json()["error"]["code"] == "not_found"
