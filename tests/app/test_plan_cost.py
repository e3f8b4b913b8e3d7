"""A plan's cost through REST on the full stack: priced from the (sandbox's) AWS Price List with
each figure's source and time, kept a day in Redis so a second plan asks AWS nothing, and
"unknown" — still a 200 plan — when the Price List fails."""

from __future__ import annotations

import uuid

import pytest

from cloud import pricing
from sandbox.gaps.pricing import products
from schemas.clusters import CostSchema
from vocabulary import kubernetes_versions

REGION = "us-west-2"
TYPE = "ml.g5.8xlarge"
PRICE_KEYS = "hypd:cache:price:*"


def _plan(stack, **extra) -> dict:
    body = {"name": f"cost-{uuid.uuid4().hex[:5]}", "availability_zone": f"{REGION}a",
            "instance_type": TYPE, "instance_count": 2, **extra}
    with stack.client("viewer") as c:
        reply = c.post("/api/v1/clusters", params={"dry_run": "true"}, json=body)
    assert reply.status_code == 200, reply.text
    return reply.json()["cost"]


def _price_calls(stack, since: int) -> list[dict]:
    return stack.sandbox.calls(service="pricing", action="GetProducts", since=since)


def _last_seq(stack) -> int:
    calls = stack.sandbox.calls()
    return calls[-1]["seq"] if calls else 0


@pytest.fixture
def no_cached_prices(stack):
    """Prices other tests of this session left in the cache are forgotten, before and after."""
    conn = stack.redis()

    def forget() -> None:
        for key in conn.scan_iter(PRICE_KEYS):
            conn.delete(key)

    stack.wait_idle()
    forget()
    yield conn
    stack.sandbox.clear_faults()
    forget()


def _shipped_price(usage_type: str) -> float:
    doc = next(p for p in products() if p["product"]["attributes"]["usagetype"] == usage_type)
    [term] = doc["terms"]["OnDemand"].values()
    [rate] = term["priceDimensions"].values()
    return float(rate["pricePerUnit"]["USD"])


def test_the_cost_names_its_source_and_a_second_plan_is_priced_from_the_cache(
        stack, no_cached_prices):
    since = _last_seq(stack)
    cost = _plan(stack)
    assert CostSchema().validate(cost) == {}
    assert cost["source"] == "aws-price-list" and cost["complete"] is True
    # the default version's EKS support today decides whether extended support is an item
    extended = _extended_today(kubernetes_versions.default())
    instances, eks, *extended_items, nat = cost["items"]
    assert [i["kind"] for i in cost["items"]] == (
        ["hyperpod_instances", "eks_control_plane"]
        + ["eks_extended_support"] * extended + ["nat_gateway"])
    assert all(i["basis"] == "list-price" for i in cost["items"])
    assert instances["unit_usd"] == _shipped_price(f"USW2-Cluster:{TYPE}")
    assert instances["source"]["usage_type"] == f"USW2-Cluster:{TYPE}"
    assert eks["source"]["usage_type"] == "USW2-AmazonEKS-Hours:perCluster"
    for item in extended_items:
        assert item["source"]["usage_type"] == "USW2-AmazonEKS-Hours:extendedSupport"
        assert item["unit_usd"] == _shipped_price("USW2-AmazonEKS-Hours:extendedSupport")
    assert nat["source"]["usage_type"] == "USW2-NatGateway-Hours"
    for item in cost["items"]:
        source = item["source"]
        assert source["name"] == "aws-price-list" and source["sku"]
        assert source["offer_term_code"] and source["effective_date"] and source["fetched_at"]
    assert cost["fetched_at"] == min(i["source"]["fetched_at"] for i in cost["items"])
    assert cost["hourly_usd"] == pytest.approx(sum(i["hourly_usd"] for i in cost["items"]))

    # three Price List calls, at the pricing endpoint's region, filtered by the cluster's
    calls = _price_calls(stack, since)
    assert [c["params"]["ServiceCode"] for c in calls] == (
        ["AmazonSageMaker", "AmazonEKS"] + ["AmazonEKS"] * extended + ["AmazonEC2"])
    assert {c["region"] for c in calls} == {"us-east-1"} and {c["status"] for c in calls} == {200}
    for call in calls:
        assert {"Type": "TERM_MATCH", "Field": "regionCode", "Value": REGION} in \
            call["params"]["Filters"]

    # each price is kept a day
    key = "hypd:cache:" + pricing.hyperpod_instance(REGION, TYPE).cache_key
    assert 86_000 < no_cached_prices.ttl(key) <= 86_400

    # a second plan within the day: the same figures and sources, no Price List call
    since = _last_seq(stack)
    again = _plan(stack)
    assert _price_calls(stack, since) == []
    assert again["items"] == cost["items"] and again["fetched_at"] == cost["fetched_at"]


def _extended_today(version: str) -> bool:
    return kubernetes_versions.get(version).support(kubernetes_versions.today()) == "extended"


def test_a_version_in_extended_support_is_priced_with_it_and_the_plan_says_so(
        stack, no_cached_prices):
    """Whichever offered version is in EKS extended support today (each is, for a year after
    its standard support): its plan adds extended support's hour and says until when."""
    today = kubernetes_versions.today()
    in_extended = [v for v in kubernetes_versions.offered() if _extended_today(v)]
    in_standard = [v for v in kubernetes_versions.offered() if not _extended_today(v)]
    for version in in_extended[:1] + in_standard[:1]:
        body = {"name": f"cost-{uuid.uuid4().hex[:5]}", "availability_zone": f"{REGION}a",
                "instance_type": TYPE, "instance_count": 2, "kubernetes_version": version}
        with stack.client("viewer") as c:
            reply = c.post("/api/v1/clusters", params={"dry_run": "true"}, json=body)
        assert reply.status_code == 200, reply.text
        [eks] = [r for r in reply.json()["plan"][1]["resources"] if r["type"] == "eks_cluster"]
        assert eks["support"] == kubernetes_versions.get(version).describe(today)
        kinds = [i["kind"] for i in reply.json()["cost"]["items"]]
        assert ("eks_extended_support" in kinds) == (version in in_extended), (version, kinds)
    assert in_extended or in_standard


def test_with_the_price_list_failing_the_plan_says_the_price_is_unknown(stack, no_cached_prices):
    stack.sandbox.add_fault("pricing", "GetProducts", "server_error", count=10)
    since = _last_seq(stack)
    cost = _plan(stack)  # the plan itself still answers
    assert CostSchema().validate(cost) == {}
    assert cost["complete"] is False and cost["hourly_usd"] == 0 and cost["fetched_at"] is None
    assert "not in the total" in cost["note"]
    for item in cost["items"]:
        assert (item["basis"], item["unit_usd"], item["hourly_usd"], item["source"]) == (
            "unknown", None, None, None), item
        assert item["note"].startswith("price unknown: the AWS Price List answered "
                                       "InternalFailure"), item["note"]
    # asked once (with its one retry), not once per item: a failing service is not hammered
    calls = _price_calls(stack, since)
    assert len(calls) == pricing.MAX_ATTEMPTS
    assert {c["fault"] for c in calls} == {"server_error"}
    # nothing unknown was kept: once the Price List answers again, so does the plan
    assert list(no_cached_prices.scan_iter(PRICE_KEYS)) == []
    stack.sandbox.clear_faults()
    assert _plan(stack)["complete"] is True


def test_spot_capacity_is_labelled_with_no_figure(stack, no_cached_prices):
    cost = _plan(stack, capacity_type="spot")
    spot = cost["items"][0]
    assert (spot["capacity_type"], spot["basis"], spot["unit_usd"], spot["hourly_usd"]) == (
        "spot", "spot", None, None)
    assert spot["on_demand_unit_usd"] == _shipped_price(f"USW2-Cluster:{TYPE}")
    assert "no fixed HyperPod spot rate" in spot["note"]
    assert cost["complete"] is False
