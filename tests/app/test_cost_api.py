"""A running cluster's cost through REST on the full stack: the hourly rate now, priced from
the (sandbox's) AWS Price List item by item as a plan is, a lower bound of what it has cost
so far from its nodes' launch times and its control plane's creation, the same from the
first of the month, and the monthly budget held against that, whose warnings are raised
once each."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime

import pytest

from schemas.clusters import ClusterCostSchema
from tasks import budgets
from tests.app.test_clusters_api import _body, _create
from tests.app.test_metrics import _scrape, _value
from tests.stack import wait_until

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


def _as_of(cost: dict) -> datetime:
    return datetime.fromisoformat(cost["as_of"].replace("Z", "+00:00"))


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
    as_of = _as_of(cost)
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


def test_accrued_cost_grows_with_the_sandbox_clock(stack, cluster):
    """An hour of the sandbox's clock is an hour of the world's age (the sandbox moves every
    reported launch and creation time back by the jump): what the cluster has cost so far
    grows by an hour of what it runs, at the read's own hourly rate."""
    jump_s = 3600
    before = _cost(stack, cluster)
    stack.sandbox.advance_clock(jump_s)
    after = _cost(stack, cluster)
    # the wall clock ran on between the reads too (`as_of` is to the second: ±1 s)
    hours = (jump_s + (_as_of(after) - _as_of(before)).total_seconds()) / 3600
    rate = {i["name"]: i["hourly_usd"] for i in after["hourly"]["items"]}
    priced = [line["name"] for line in after["accrued"]["items"] if line["usd"] is not None]
    assert priced and all(rate[name] is not None for name in priced)
    lines = [{line["name"]: line for line in cost["accrued"]["items"]} for cost in (before, after)]
    for name in priced:  # each line, rounded to the cent in each read; a NAT gateway the VPC's
        assert lines[1][name]["usd"] - lines[0][name]["usd"] == pytest.approx(
            rate[name] * hours, abs=0.01 + rate[name] / 3600), name
    hourly = sum(rate[name] for name in priced)
    rounding = 0.005 * 2 * (len(priced) + 1)  # every line and the total, in both reads
    grown = after["accrued"]["usd"] - before["accrued"]["usd"]
    assert grown == pytest.approx(hourly * hours, abs=rounding + hourly / 3600)
    nodes = stack.aws("sagemaker").list_cluster_nodes(ClusterName=cluster)["ClusterNodeSummaries"]
    instances = [{i["kind"]: i for i in cost["accrued"]["items"]}["hyperpod_instances"]
                 for cost in (before, after)]
    assert instances[1]["hours"] - instances[0]["hours"] == pytest.approx(
        len(nodes) * hours, abs=0.01 + len(nodes) / 3600)


def test_an_unknown_cluster_has_no_cost(stack):
    with stack.client("viewer") as c:
        reply = c.get("/api/v1/clusters/no-such-cluster/cost")
    assert reply.status_code == 404
    assert reply.json()["error"]["code"] == "not_found"


# -- this month, and the monthly budget ------------------------------------------------------

def test_this_month_counts_the_same_history_from_the_first_of_the_month(stack, cluster):
    cost = _cost(stack, cluster)
    as_of = _as_of(cost)
    start = datetime.fromisoformat(cost["month_start"].replace("Z", "+00:00"))
    assert (start.day, start.hour, start.minute, start.second) == (1, 0, 0, 0)
    assert (start.year, start.month) == (as_of.year, as_of.month)
    accrued = {i["kind"]: i for i in cost["accrued"]["items"]}
    for item in cost["month"]["items"]:  # made this month: the same hours as since creation
        whole = accrued[item["kind"]]
        if whole["since"] and whole["since"] >= cost["month_start"]:
            assert (item["hours"], item["since"]) == (whole["hours"], whole["since"])
        else:  # made before: counted from the first, 00:00 UTC
            assert item["since"] in (None, cost["month_start"])
            assert item["hours"] <= whole["hours"]
    assert cost["month"]["usd"] == pytest.approx(
        sum(i["usd"] for i in cost["month"]["items"] if i["usd"] is not None), abs=0.02)
    assert cost["budget"]["state"] == "unset" and cost["budget"]["monthly_usd"] is None
    # the month split by UTC day, for its chart: every day from the first to today, adding up
    days = cost["days"]
    assert [d["date"] for d in days] == [
        f"{as_of.year:04}-{as_of.month:02}-{day:02}" for day in range(1, as_of.day + 1)]
    assert sum(d["usd"] for d in days) == pytest.approx(cost["month"]["usd"],
                                                        abs=0.01 * len(days))
    created = min(i["since"] for i in cost["accrued"]["items"] if i["since"])
    assert all(d["usd"] == 0 for d in days if d["date"] < created[:10])


def _budget_warnings(stack, cluster: str) -> list[dict]:
    with stack.client() as c:  # the audit log is an operator's read
        entries = c.get("/api/v1/audit", params={"target": f"cluster/{cluster}/budget",
                                                 "outcome": "warning"}).json()["items"]
    return sorted(entries, key=lambda e: e["code"])


def _spent_at_least(stack, cluster: str, usd: float) -> None:
    wait_until(lambda: _cost(stack, cluster)["month"]["usd"] >= usd, 60,
               what=f"{cluster} to have cost ${usd} this month")


def test_a_budget_warns_once_at_each_threshold_in_the_read_the_audit_log_and_a_metric(
        stack, cluster):
    path = f"/api/v1/clusters/{cluster}/budget"
    with stack.client("viewer") as v:
        assert v.put(path, json={"monthly_usd": 100}).status_code == 403
        assert v.get(path).json()["state"] == "unset"
    with stack.client() as c:
        refused = c.put(path, json={"monthly_usd": 0})
        assert refused.status_code == 422
        assert "monthly_usd" in refused.json()["error"]["details"]["fields"]
        assert c.put("/api/v1/clusters/no-such-cluster/budget",
                     json={"monthly_usd": 5}).status_code == 404
        roomy = c.put(path, json={"monthly_usd": 1_000_000})
    assert roomy.status_code == 200, roomy.text
    body = roomy.json()
    assert (body["state"], body["monthly_usd"], body["warnings"]) == ("under", 1_000_000, [])
    assert (body["set_by"], body["warn_at"]) == ("operator", [0.8, 1.0])
    assert _budget_warnings(stack, cluster) == []

    _spent_at_least(stack, cluster, 0.02)
    with stack.client() as c:
        tight = c.put(path, json={"monthly_usd": 0.01}).json()
    assert tight["state"] == "exceeded" and tight["fraction"] >= 1
    assert [w["at"] for w in tight["warnings"]] == [0.8, 1.0]
    raised = _budget_warnings(stack, cluster)
    assert [(e["code"], e["method"], e["token"]) for e in raised] == [
        ("budget_100", "HYPD", None), ("budget_80", "HYPD", None)]
    assert "exceeded" in raised[0]["message"] and "$0.01" in raised[0]["message"]
    for _ in range(2):  # seen again by every read: raised once all the same
        assert _cost(stack, cluster)["budget"]["state"] == "exceeded"
        with stack.client("viewer") as v:
            assert v.get(path).json()["warnings"] == tight["warnings"]
    assert len(_budget_warnings(stack, cluster)) == 2
    samples = _scrape(stack)
    for at in ("0.8", "1.0"):
        assert _value(samples, "hypd_budget_warnings_total", cluster=cluster, team="",
                      at=at) == 1

    with stack.client() as c:
        cleared = c.delete(path)
    assert cleared.status_code == 200 and cleared.json()["state"] == "unset"
    assert cleared.json()["warnings"] == []
    with stack.client() as c:
        done = c.get("/api/v1/audit", params={"target": f"cluster/{cluster}/budget",
                                              "outcome": "done"}).json()["items"]
    assert [(e["method"], e["token"]) for e in done] == [
        ("DELETE", "operator"), ("PUT", "operator"), ("PUT", "operator")]


def test_the_web_processes_raise_a_crossed_budget_when_nobody_reads_it(stack, cluster):
    """No read of the cluster's cost or budget: the web processes' watcher (every
    HYPD_BUDGET_CHECK_S, 2 s in the suite) finds the budget crossed and raises it once."""
    _spent_at_least(stack, cluster, 0.02)
    conn = stack.redis()
    month = datetime.now(UTC).strftime("%Y-%m")
    before = len(_budget_warnings(stack, cluster))  # an earlier test's, on the same cluster
    budgets.set_budget(conn, cluster, 0.01, "operator", "2026-01-01T00:00:00Z", month)
    try:
        wait_until(lambda: len(_budget_warnings(stack, cluster)) == before + 2, 60,
                   what="the watcher to raise both warnings")
        assert set(budgets.raised(conn, cluster, month)) == {0.8, 1.0}
        time.sleep(3 * 2)  # three more turns of the watcher: nothing raised again
        assert len(_budget_warnings(stack, cluster)) == before + 2
    finally:
        budgets.clear(conn, cluster)


@pytest.mark.asyncio
async def test_an_agent_sets_reads_and_clears_a_budget_over_mcp(stack, cluster):
    from jsonschema import Draft202012Validator

    from tests.mcp_server.test_mcp_e2e import _stdio

    async with _stdio(stack, stack.operator_token) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        set_reply = await client.call_tool("set_cluster_budget",
                                           {"name": cluster, "monthly_usd": 123456})
        assert not set_reply.is_error, set_reply.content[0].text
        out = set_reply.structured_content
        assert (out["monthly_usd"], out["state"], out["status_tool"]) == (
            123456, "under", "get_cluster_budget")
        assert out["status_args"] == {"name": cluster}
        assert not list(Draft202012Validator(listed["set_cluster_budget"].output_schema)
                        .iter_errors(out))
        read = await client.call_tool("get_cluster_budget", out["status_args"])
        assert read.structured_content["monthly_usd"] == 123456
        refused = await client.call_tool("set_cluster_budget",
                                         {"name": cluster, "monthly_usd": -1})
        assert refused.is_error and "monthly_usd" in refused.content[0].text
        cleared = await client.call_tool("clear_cluster_budget", {"name": cluster})
        assert not cleared.is_error and cleared.structured_content["state"] == "unset"
