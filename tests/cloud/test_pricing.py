"""The hourly estimate from the AWS Price List: the products it asks for, the exact product it
takes among look-alikes, the source it names, and what it says when a price cannot be had."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime

import boto3
import pytest
from botocore.stub import Stubber

from cloud import aws, pricing
from cloud.settings import Settings
from schemas.clusters import CostSchema

REGION = "us-west-2"
NOW = datetime(2026, 11, 20, 9, 30, tzinfo=UTC)
FETCHED = "2026-11-20T09:30:00Z"


def document(usage_type: str, usd: str, *, sku: str = "SKU0000000000001",
             unit: str = "Hrs", service: str = "AmazonSageMaker", begin: str = "0",
             **attributes: str) -> dict:
    """One product in the Price List's shape (aws_v1)."""
    term = f"{sku}.JRTCKXETXF"
    return {
        "product": {"productFamily": "ML Instance", "sku": sku,
                    "attributes": {"regionCode": REGION, "usagetype": usage_type,
                                   **attributes}},
        "serviceCode": service,
        "terms": {"OnDemand": {term: {
            "priceDimensions": {f"{term}.6YS6EN2CT7": {
                "unit": unit, "beginRange": begin, "endRange": "Inf",
                "rateCode": f"{term}.6YS6EN2CT7", "description": f"${usd} per hour",
                "appliesTo": [], "pricePerUnit": {"USD": usd}}},
            "sku": sku, "effectiveDate": "2026-09-01T00:00:00Z", "offerTermCode": "JRTCKXETXF",
            "termAttributes": {}}}},
        "version": "20260916170501",
        "publicationDate": "2026-09-16T17:05:01Z",
    }


G5 = pricing.hyperpod_instance(REGION, "ml.g5.8xlarge")


# -- parsing ---------------------------------------------------------------------------------

def test_the_hyperpod_cluster_product_is_taken_among_look_alikes_with_its_source():
    documents = [
        document("USW2-ReservedCluster:ml.g5.8xlarge", "2.0000000000", sku="RESERVED00000001"),
        document("USW2-Train:ml.g5.8xlarge", "3.5000000000", sku="TRAINING00000001"),
        document("USW2-Studio:ml.g5.8xlarge", "4.0000000000", sku="STUDIO0000000001"),
        document("USW2-Cluster:ml.g5.8xlarge.extra", "9.0000000000", sku="LONGER0000000001"),
        document("USW2-Cluster:ml.g5.8xlarge", "3.0600000000", sku="YQXD4PZ3BTQ5N2P4",
                 instanceType="ml.g5.8xlarge-Cluster", component="Cluster"),
    ]
    quote = pricing.quote_from(documents, G5, FETCHED)
    assert quote["usd_per_hour"] == 3.06 and quote["note"] is None
    assert quote["source"] == {
        "name": "aws-price-list", "service_code": "AmazonSageMaker", "sku": "YQXD4PZ3BTQ5N2P4",
        "offer_term_code": "JRTCKXETXF", "rate_code": "YQXD4PZ3BTQ5N2P4.JRTCKXETXF.6YS6EN2CT7",
        "usage_type": "USW2-Cluster:ml.g5.8xlarge", "description": "$3.0600000000 per hour",
        "effective_date": "2026-09-01T00:00:00Z", "publication_date": "2026-09-16T17:05:01Z",
        "fetched_at": FETCHED}


def test_the_nat_hour_is_matched_with_or_without_a_region_prefix_and_bytes_are_not():
    nat = pricing.nat_gateway("us-east-1")
    documents = [document("NatGateway-Bytes", "0.045", unit="GB", sku="BYTES00000000001"),
                 document("NatGateway-Hours", "0.045", sku="HOURS00000000001")]
    assert pricing.quote_from(documents, nat, FETCHED)["source"]["sku"] == "HOURS00000000001"
    prefixed = [document("USW2-NatGateway-Hours", "0.045", sku="HOURS00000000002")]
    assert pricing.quote_from(prefixed, pricing.nat_gateway(REGION), FETCHED)[
        "usd_per_hour"] == 0.045


def test_no_product_non_hourly_rates_and_several_figures_give_no_price_and_say_why():
    absent = pricing.quote_from([document("USW2-Train:ml.g5.8xlarge", "3.5")], G5, FETCHED)
    assert absent["usd_per_hour"] is None and absent["source"] is None
    assert "no on-demand hourly price for HyperPod ml.g5.8xlarge" in absent["note"]
    assert "Cluster:ml.g5.8xlarge" in absent["note"] and absent["fetched_at"] == FETCHED
    monthly = [document("USW2-Cluster:ml.g5.8xlarge", "99", unit="GB-Mo"),
               document("USW2-Cluster:ml.g5.8xlarge", "1.0", begin="1000")]
    assert pricing.quote_from(monthly, G5, FETCHED)["usd_per_hour"] is None
    two = [document("USW2-Cluster:ml.g5.8xlarge", "3.06", sku="A000000000000001"),
           document("USW2-Cluster:ml.g5.8xlarge", "3.10", sku="B000000000000001")]
    ambiguous = pricing.quote_from(two, G5, FETCHED)
    assert ambiguous["usd_per_hour"] is None and "does not pick one" in ambiguous["note"]
    same = [document("USW2-Cluster:ml.g5.8xlarge", "3.06", sku="B000000000000001"),
            document("USW2-Cluster:ml.g5.8xlarge", "3.0600", sku="A000000000000001")]
    assert pricing.quote_from(same, G5, FETCHED)["source"]["sku"] == "A000000000000001"


# -- the Price List client -------------------------------------------------------------------

def _stubbed() -> tuple[pricing.PriceList, Stubber]:
    client = boto3.client("pricing", region_name="us-east-1", aws_access_key_id="x",
                          aws_secret_access_key="x")
    return pricing.PriceList(client, now=lambda: NOW), Stubber(client)


def _request(product: pricing.Product, **extra) -> dict:
    return {"ServiceCode": product.service_code, "FormatVersion": "aws_v1", "MaxResults": 100,
            "Filters": [
                {"Type": "TERM_MATCH", "Field": "regionCode", "Value": product.region},
                {"Type": "CONTAINS", "Field": "usagetype", "Value": product.usage_type}],
            **extra}


def test_quote_asks_for_the_region_and_usage_type_follows_pages_and_reads_json_strings():
    prices, stub = _stubbed()
    stub.add_response("get_products", {
        "FormatVersion": "aws_v1", "NextToken": "page-2",
        "PriceList": [json.dumps(document("USW2-ReservedCluster:ml.g5.8xlarge", "2.0"))]},
        _request(G5))
    stub.add_response("get_products", {
        "FormatVersion": "aws_v1",
        "PriceList": [json.dumps(document("USW2-Cluster:ml.g5.8xlarge", "3.06"))]},
        _request(G5, NextToken="page-2"))
    with stub:
        quote = prices.quote(G5)
    stub.assert_no_pending_responses()
    assert quote["usd_per_hour"] == 3.06 and quote["fetched_at"] == FETCHED
    assert quote["source"]["usage_type"] == "USW2-Cluster:ml.g5.8xlarge"


@pytest.mark.parametrize(("code", "said"), [
    ("ThrottlingException", "throttling"),
    ("AccessDeniedException", "pricing:GetProducts"),
    ("InternalErrorException", "InternalErrorException"),
])
def test_a_failing_price_list_is_unavailable_and_is_not_asked_again(code, said):
    prices, stub = _stubbed()
    stub.add_client_error("get_products", code, "no", http_status_code=400, expected_params=None)
    with stub:
        with pytest.raises(pricing.PriceListUnavailable, match=said) as failed:
            prices.quote(G5)
        # the stubber has no answer left: a second call would fail differently
        with pytest.raises(pricing.PriceListUnavailable) as again:
            prices.quote(pricing.eks_control_plane(REGION))
    assert again.value is failed.value


def test_an_unreadable_answer_is_unavailable_not_a_crash():
    prices, stub = _stubbed()
    stub.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": ["{not json"]},
                      _request(G5))
    with stub, pytest.raises(pricing.PriceListUnavailable, match="cannot read"):
        prices.quote(G5)


def test_the_client_is_made_at_the_pricing_endpoint_with_a_short_retry_budget(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    aws.clear_cache()
    try:
        made = pricing.client(Settings(aws_mode="aws", region=REGION,
                                       pricing_region="eu-central-1"))
        assert made.meta.region_name == "eu-central-1"
        assert made.meta.config.retries["total_max_attempts"] == pricing.MAX_ATTEMPTS
        assert made.meta.config.read_timeout == pricing.READ_TIMEOUT_S
        default = aws.client("ec2", REGION, Settings(aws_mode="aws", region=REGION))
        assert default.meta.config.retries["total_max_attempts"] == aws.MAX_ATTEMPTS
    finally:
        aws.clear_cache()


# -- the estimate ----------------------------------------------------------------------------

def _quotes(prices: dict[str, float], fetched: dict[str, str] | None = None):
    """A quote function answering from `prices` by usage type (others: not in the list), and
    the products it was asked for."""
    asked: list[pricing.Product] = []

    def quote(product: pricing.Product) -> pricing.Quote:
        asked.append(product)
        usd = prices.get(product.usage_type)
        at = (fetched or {}).get(product.usage_type, FETCHED)
        doc = [document(f"USW2-{product.usage_type}", str(usd), service=product.service_code)]
        return pricing.quote_from(doc if usd is not None else [], product, at)

    return quote, asked


LISTED = {"Cluster:ml.g5.8xlarge": 3.06, "Cluster:ml.p5.48xlarge": 55.04,
          "AmazonEKS-Hours:perCluster": 0.10, "NatGateway-Hours": 0.045}


def test_an_on_demand_plan_is_fully_priced_and_names_its_sources():
    quote, asked = _quotes(LISTED, {"AmazonEKS-Hours:perCluster": "2026-11-19T08:00:00Z"})
    estimate = pricing.estimate({
        "region": REGION, "nat_gateways": 1,
        "instance_groups": [{"name": "workers", "instance_type": "ml.g5.8xlarge", "count": 2,
                             "capacity_type": "on-demand"}]}, quote)
    assert [p.service_code for p in asked] == ["AmazonSageMaker", "AmazonEKS", "AmazonEC2"]
    assert estimate["complete"] is True and estimate["source"] == "aws-price-list"
    assert estimate["hourly_usd"] == pytest.approx(2 * 3.06 + 0.10 + 0.045)
    instances, eks, nat = estimate["items"]
    assert instances["name"] == "HyperPod ml.g5.8xlarge (workers)"
    assert (instances["basis"], instances["unit_usd"], instances["hourly_usd"]) == (
        "list-price", 3.06, 6.12)
    assert instances["source"]["service_code"] == "AmazonSageMaker"
    assert eks["source"]["usage_type"] == "USW2-AmazonEKS-Hours:perCluster"
    assert "data processed is billed per GB" in nat["note"]
    assert estimate["fetched_at"] == "2026-11-19T08:00:00Z"  # the oldest figure's
    assert "not a bill" in estimate["note"]
    assert CostSchema().validate(estimate) == {}


def test_spot_and_training_plan_are_labelled_and_carry_no_invented_figure():
    quote, asked = _quotes(LISTED)
    estimate = pricing.estimate({"region": REGION, "eks_control_plane": False, "instance_groups": [
        {"instance_type": "ml.p5.48xlarge", "count": 2, "capacity_type": "spot"},
        {"instance_type": "ml.p5.48xlarge", "count": 4, "capacity_type": "training-plan"},
    ]}, quote)
    spot, reserved = estimate["items"]
    assert (spot["basis"], spot["capacity_type"], spot["hourly_usd"]) == ("spot", "spot", None)
    assert spot["unit_usd"] is None and spot["on_demand_unit_usd"] == 55.04
    assert "no fixed HyperPod spot rate" in spot["note"] and "on-demand would be" in spot["note"]
    assert spot["source"]["usage_type"] == "USW2-Cluster:ml.p5.48xlarge"  # of the reference
    assert reserved["basis"] == "training-plan" and reserved["hourly_usd"] is None
    assert "up front" in reserved["note"] and reserved["source"] is None
    assert len(asked) == 1  # the training plan asked the Price List nothing
    assert estimate["complete"] is False and estimate["hourly_usd"] == 0
    assert "not in the total" in estimate["note"] and estimate["fetched_at"] == FETCHED
    assert CostSchema().validate(estimate) == {}


def test_a_price_that_cannot_be_had_is_unknown_and_said_so():
    quote, _ = _quotes({"AmazonEKS-Hours:perCluster": 0.10})

    def failing(product: pricing.Product) -> pricing.Quote:
        if product.service_code == "AmazonEC2":
            raise pricing.PriceListUnavailable("the AWS Price List is throttling hypd")
        return quote(product)

    estimate = pricing.estimate({"region": REGION, "nat_gateways": 2, "instance_groups": [
        {"instance_type": "ml.g6e.48xlarge", "count": 1}]}, failing)
    missing, eks, nat = estimate["items"]
    assert (missing["basis"], missing["unit_usd"], missing["hourly_usd"]) == (
        "unknown", None, None)
    assert missing["note"].startswith("price unknown: the AWS Price List has no on-demand")
    assert (nat["basis"], nat["quantity"], nat["hourly_usd"]) == ("unknown", 2, None)
    assert nat["note"] == "price unknown: the AWS Price List is throttling hypd"
    assert eks["basis"] == "list-price"
    assert estimate["hourly_usd"] == 0.10 and estimate["complete"] is False
    assert CostSchema().validate(estimate) == {}
    with pytest.raises(ValueError):
        pricing.estimate({"instance_groups": []}, failing)
    with pytest.raises(ValueError):
        pricing.estimate({"region": REGION, "instance_groups": [
            {"instance_type": "ml.g5.xlarge", "count": 1, "capacity_type": "reserved"}]}, failing)


def _eks_items(version: str, day: date, prices: dict[str, float] = LISTED) -> list[dict]:
    quote, _ = _quotes(prices)
    estimate = pricing.estimate({"region": REGION, "instance_groups": [],
                                 "kubernetes_version": version}, quote, day=day)
    assert CostSchema().validate(estimate) == {}
    return estimate["items"]


def test_a_version_in_extended_support_adds_its_hour_to_the_control_planes():
    """1.33 left standard support on 2026-07-29 and leaves extended support on 2027-07-29
    (vocabulary/kubernetes_versions.py, from the EKS release calendar)."""
    prices = {**LISTED, "AmazonEKS-Hours:extendedSupport": 0.50}
    before = _eks_items("1.33", date(2026, 7, 28), prices)
    assert [i["kind"] for i in before] == ["eks_control_plane"]
    assert "standard support until 2026-07-29" in before[0]["note"]

    control_plane, extended = _eks_items("1.33", date(2026, 7, 29), prices)
    assert (extended["kind"], extended["basis"], extended["hourly_usd"]) == (
        "eks_extended_support", "list-price", 0.50)
    assert extended["name"] == "EKS extended support (Kubernetes 1.33)"
    assert extended["source"]["usage_type"] == "USW2-AmazonEKS-Hours:extendedSupport"
    assert "left EKS standard support on 2026-07-29" in extended["note"]
    assert "2027-07-29" in extended["note"]
    assert control_plane["hourly_usd"] + extended["hourly_usd"] == pytest.approx(0.60)


def test_extended_support_without_a_listed_price_is_unknown_never_left_out():
    control_plane, extended = _eks_items("1.33", date(2027, 1, 1))  # no extendedSupport rate
    assert control_plane["basis"] == "list-price"
    assert (extended["basis"], extended["hourly_usd"]) == ("unknown", None)
    assert extended["note"].startswith("price unknown: the AWS Price List has no on-demand")
    assert "Kubernetes 1.33 left EKS standard support on 2026-07-29" in extended["note"]


def test_an_ended_version_says_eks_will_not_create_it():
    [control_plane] = _eks_items("1.28", date(2026, 12, 3))
    assert "EKS ended support for Kubernetes 1.28 on 2025-11-26" in control_plane["note"]
