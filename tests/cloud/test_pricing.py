"""The hourly estimate: priced from the table kept as data, honest about what it cannot price."""

from __future__ import annotations

import pytest

from cloud import pricing
from cloud.capacity import hyperpod_instance_types


def test_price_table_is_dated_marked_and_well_formed():
    table = pricing.price_table()
    assert table["as_of"] and table["currency"] == "USD" and table["verified"] is False
    assert set(table["sources"]) >= {"hyperpod_instances", "eks_control_plane", "nat_gateway"}
    assert table["eks_control_plane_hourly"] == 0.10
    for region, rates in table["hyperpod_on_demand"].items():
        assert region in table["nat_gateway_hourly"]
        for instance_type, price in rates.items():
            assert instance_type in hyperpod_instance_types(), instance_type
            assert isinstance(price, int | float) and price > 0


def test_on_demand_plan_is_fully_priced():
    estimate = pricing.estimate({
        "region": "us-west-2",
        "instance_groups": [{"name": "workers", "instance_type": "ml.g5.8xlarge", "count": 2,
                             "capacity_type": "on-demand"}],
        "nat_gateways": 1,
    })
    unit = pricing.on_demand_price("us-west-2", "ml.g5.8xlarge")
    assert estimate["complete"] is True
    assert estimate["hourly_usd"] == pytest.approx(2 * unit + 0.10 + 0.045)
    kinds = [i["kind"] for i in estimate["items"]]
    assert kinds == ["hyperpod_instances", "eks_control_plane", "nat_gateway"]
    assert estimate["items"][0]["hourly_usd"] == pytest.approx(2 * unit)
    assert estimate["items"][0]["name"] == "HyperPod ml.g5.8xlarge (workers)"
    assert estimate["as_of"] == str(pricing.price_table()["as_of"])
    assert "Estimate" in estimate["note"] and "not a bill" in estimate["note"]


def test_spot_training_plan_and_unknown_prices_are_not_invented():
    estimate = pricing.estimate({
        "region": "us-west-2",
        "instance_groups": [
            {"instance_type": "ml.p5.48xlarge", "count": 2, "capacity_type": "spot"},
            {"instance_type": "ml.p5.48xlarge", "count": 4, "capacity_type": "training-plan"},
            {"instance_type": "ml.g6e.48xlarge", "count": 1, "capacity_type": "on-demand"},
        ],
        "eks_control_plane": False,
    })
    spot, reserved, unknown = estimate["items"]
    assert spot["hourly_usd"] is None and "spot price" in spot["note"]
    assert "on-demand would be" in spot["note"]
    assert reserved["hourly_usd"] is None and "up front" in reserved["note"]
    assert unknown["hourly_usd"] is None and "no price on file" in unknown["note"]
    assert estimate["complete"] is False and estimate["hourly_usd"] == 0
    assert "not in the total" in estimate["note"]


def test_unknown_region():
    estimate = pricing.estimate({"region": "eu-west-3", "nat_gateways": 2, "instance_groups": [
        {"instance_type": "ml.g5.xlarge", "count": 1}]})
    instances, eks, nat = estimate["items"]
    assert instances["hourly_usd"] is None and eks["hourly_usd"] == 0.10
    assert nat["quantity"] == 2 and nat["hourly_usd"] is None
    assert estimate["hourly_usd"] == 0.10 and not estimate["complete"]
    with pytest.raises(ValueError):
        pricing.estimate({"instance_groups": []})
    with pytest.raises(ValueError):
        pricing.estimate({"region": "us-west-2", "instance_groups": [
            {"instance_type": "ml.g5.xlarge", "count": 1, "capacity_type": "reserved"}]})
