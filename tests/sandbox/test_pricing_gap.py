"""The Price List API as the sandbox answers it, through boto3 over HTTP: its shipped products,
filters, pages, AWS's refusals, its endpoints, and faults."""

from __future__ import annotations

import json
import re
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from cloud.capacity import hyperpod_instance_types
from sandbox.control import SandboxControl
from sandbox.gaps import pricing as gap

SANDBOX_REGIONS = ("us-east-1", "us-east-2", "us-west-2")


@pytest.fixture(scope="module")
def price_list(local_aws: Any) -> Any:
    return _client(local_aws.url, "us-east-1")


def _client(url: str, region: str, **config: Any) -> Any:
    return boto3.client("pricing", endpoint_url=url, region_name=region,
                        aws_access_key_id="AKIATESTSANDBOX00000",
                        aws_secret_access_key="test-secret",
                        config=Config(retries={"total_max_attempts": 1}, **config))


def _match(field: str, value: str, kind: str = "TERM_MATCH") -> dict[str, str]:
    return {"Type": kind, "Field": field, "Value": value}


def _documents(reply: dict[str, Any]) -> list[dict[str, Any]]:
    assert reply["FormatVersion"] == "aws_v1"
    assert all(isinstance(entry, str) for entry in reply["PriceList"])  # as AWS: JSON strings
    return [json.loads(entry) for entry in reply["PriceList"]]


def _usage(doc: dict[str, Any]) -> str:
    return doc["product"]["attributes"]["usagetype"]


def test_a_hyperpod_instance_is_found_by_region_and_usage_type(price_list, control):
    reply = price_list.get_products(ServiceCode="AmazonSageMaker", FormatVersion="aws_v1",
                                    Filters=[_match("regionCode", "us-west-2"),
                                             _match("usagetype", "Cluster:ml.g5.8xlarge",
                                                    "CONTAINS")])
    [doc] = _documents(reply)
    assert _usage(doc) == "USW2-Cluster:ml.g5.8xlarge"
    assert doc["product"]["attributes"]["instanceType"] == "ml.g5.8xlarge-Cluster"
    [term] = doc["terms"]["OnDemand"].values()
    [rate] = term["priceDimensions"].values()
    assert term["offerTermCode"] == "JRTCKXETXF" and term["sku"] == doc["product"]["sku"]
    assert rate["unit"] == "Hrs" and float(rate["pricePerUnit"]["USD"]) > 0
    assert doc["publicationDate"] and term["effectiveDate"]
    [call] = control.calls(service="pricing", action="GetProducts")
    assert call["status"] == 200 and call["region"] == "us-east-1"


def test_the_shipped_products_are_price_list_shaped_and_cover_the_sandbox_regions():
    products = gap.products()
    skus = [p["product"]["sku"] for p in products]
    assert len(skus) == len(set(skus))
    known_types = hyperpod_instance_types()
    by_region: dict[str, set[str]] = {r: set() for r in SANDBOX_REGIONS}
    for doc in products:
        attributes = doc["product"]["attributes"]
        assert re.fullmatch(r"[A-Z0-9]{16}", doc["product"]["sku"])
        assert attributes["servicecode"] == doc["serviceCode"]
        [term] = doc["terms"]["OnDemand"].values()
        [rate] = term["priceDimensions"].values()
        assert rate["rateCode"].startswith(f"{doc['product']['sku']}.{term['offerTermCode']}.")
        assert float(rate["pricePerUnit"]["USD"]) > 0
        usage = re.sub(r"^[A-Z0-9]+-", "", attributes["usagetype"])  # the region prefix
        by_region[attributes["regionCode"]].add(usage)
        if doc["serviceCode"] == "AmazonSageMaker":
            assert usage.removeprefix("Cluster:") in known_types, usage
    for region, usages in by_region.items():
        assert {"AmazonEKS-Hours:perCluster", "NatGateway-Hours",
                "Cluster:ml.g5.8xlarge", "Cluster:ml.p5.48xlarge"} <= usages, region


def test_filters_match_as_aws_describes_them(price_list):
    def usages(*filters: dict[str, str], service: str = "AmazonEC2") -> set[str]:
        reply = price_list.get_products(ServiceCode=service, Filters=list(filters))
        return {_usage(d) for d in _documents(reply)}

    oregon = _match("regionCode", "us-west-2")
    assert usages(oregon, _match("productFamily", "NAT Gateway")) == {
        "USW2-NatGateway-Hours", "USW2-NatGateway-Bytes"}
    assert usages(_match("REGIONCODE", "us-east-1"), _match("usagetype", "Hours", "CONTAINS")) \
        == {"NatGateway-Hours"}  # field names without regard to case; us-east-1 unprefixed
    assert usages(oregon, _match("usagetype", "USW2-NatGateway-Bytes", "EQUALS")) == {
        "USW2-NatGateway-Bytes"}
    assert usages(_match("regionCode", "us-east-2,us-west-2", "ANY_OF"),
                  _match("usagetype", "Hours", "CONTAINS")) == {
        "USE2-NatGateway-Hours", "USW2-NatGateway-Hours"}
    assert usages(oregon, _match("usagetype", "USW2-NatGateway-Hours", "NONE_OF")) == {
        "USW2-NatGateway-Bytes"}
    assert usages(oregon, _match("noSuchAttribute", "x")) == set()
    assert usages(_match("regionCode", "eu-west-3"), service="AmazonEKS") == set()


def test_pages_follow_next_token(price_list):
    seen: list[str] = []
    token = None
    pages = 0
    while True:
        extra = {"NextToken": token} if token else {}
        reply = price_list.get_products(ServiceCode="AmazonSageMaker", MaxResults=5,
                                        Filters=[_match("regionCode", "us-west-2")], **extra)
        docs = _documents(reply)
        assert len(docs) <= 5
        seen += [d["product"]["sku"] for d in docs]
        pages += 1
        token = reply.get("NextToken")
        if not token:
            break
    shipped = [p for p in gap.products() if p["serviceCode"] == "AmazonSageMaker"
               and p["product"]["attributes"]["regionCode"] == "us-west-2"]
    assert sorted(seen) == sorted(p["product"]["sku"] for p in shipped)
    assert pages == -(-len(shipped) // 5)
    with pytest.raises(ClientError) as bad_token:
        price_list.get_products(ServiceCode="AmazonSageMaker", NextToken="not-a-token")
    assert bad_token.value.response["Error"]["Code"] == "InvalidNextTokenException"


def test_what_aws_refuses_is_refused(local_aws, price_list):
    def refused(client: Any, **request: Any) -> str:
        with pytest.raises(ClientError) as caught:
            client.get_products(**request)
        return caught.value.response["Error"]["Code"]

    assert refused(price_list, ServiceCode="AmazonNothing") == "NotFoundException"
    assert refused(price_list, ServiceCode="AmazonEKS",
                   FormatVersion="aws_v2") == "InvalidParameterException"
    # botocore's model is the contract (the client's own checks off, so the sandbox's count)
    unchecked = _client(local_aws.url, "us-east-1", parameter_validation=False)
    assert refused(unchecked, ServiceCode="AmazonEKS",
                   Filters=[_match("regionCode", "us-west-2", "REGEX")]) == "ValidationException"
    assert refused(unchecked, ServiceCode="AmazonEKS", MaxResults=101) == "ValidationException"
    # the Price List is served from a few regions only: a client made for the cluster's is lost
    lost = _client(local_aws.url, "us-west-2")
    assert refused(lost, ServiceCode="AmazonEKS") == "UnknownEndpoint"
    assert _documents(_client(local_aws.url, "eu-central-1").get_products(
        ServiceCode="AmazonEKS", Filters=[_match("regionCode", "us-east-2")]))


def test_an_injected_fault_answers_instead(price_list, control: SandboxControl):
    control.add_fault("pricing", "GetProducts", "throttle")
    with pytest.raises(ClientError) as caught:
        price_list.get_products(ServiceCode="AmazonEKS")
    assert caught.value.response["Error"]["Code"] == "ThrottlingException"
    assert _documents(price_list.get_products(ServiceCode="AmazonEKS"))
    statuses = [c["status"] for c in control.calls(service="pricing", action="GetProducts")]
    assert statuses == [400, 200]
