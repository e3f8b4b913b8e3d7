"""The AWS Price List API (`pricing:GetProducts`), answered from price data the sandbox ships.

moto 5.2.5 has no Price List service. This gap answers GetProducts from
`sandbox/data/price_list.json`: products in the Price List's own shape (product, attributes,
SKU, on-demand terms with their price dimensions, version, publication date), each answered
as a JSON *string* in `PriceList`, as AWS does. What the file holds and where its figures come
from is written in the file (`about`).

As AWS answers:
- only at the endpoints that serve the Price List (us-east-1, eu-central-1, ap-south-1). A
  client made for the priced region instead (us-west-2) reaches no endpoint on AWS; here it
  gets `UnknownEndpoint`, so that mistake fails in the sandbox too;
- the request checked against botocore's model (ServiceCode required, at most 50 filters,
  MaxResults 1-100); FormatVersion `aws_v1` only; a service code without products is
  `NotFoundException`;
- filters (all must match): TERM_MATCH and EQUALS (the exact value), CONTAINS (a substring),
  ANY_OF and NONE_OF (comma-separated values). A field is `ServiceCode`, `productFamily`,
  `sku` or any product attribute (`regionCode`, `usagetype`, `instanceType` ...), its name
  matched without regard to case; a product without the attribute does not match;
- paged: MaxResults (default 100) and NextToken (`InvalidNextTokenException` when unreadable).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from sandbox.gaps import AwsError, GapContext, answers, page
from sandbox.gaps.sagemaker_model import RequestInvalid

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "price_list.json"
ENDPOINT_REGIONS = ("us-east-1", "eu-central-1", "ap-south-1")
FORMAT_VERSION = "aws_v1"
DEFAULT_PAGE = 100


@functools.cache
def products() -> tuple[dict[str, Any], ...]:
    """The shipped products (read once; never changed)."""
    with open(DATA_FILE, encoding="utf-8") as handle:
        return tuple(json.load(handle)["products"])


def _field(product: dict[str, Any], name: str) -> str | None:
    """The value a filter field names in a product, or None when the product has none."""
    wanted = name.lower()
    if wanted == "servicecode":
        return str(product["serviceCode"])
    if wanted == "productfamily":
        return product["product"].get("productFamily")
    if wanted == "sku":
        return str(product["product"]["sku"])
    for key, value in product["product"].get("attributes", {}).items():
        if key.lower() == wanted:
            return str(value)
    return None


def _matches(product: dict[str, Any], rule: dict[str, str]) -> bool:
    value = _field(product, rule["Field"])
    if value is None:
        return False
    kind, wanted = rule["Type"], rule["Value"]
    if kind in ("TERM_MATCH", "EQUALS"):
        return value == wanted
    if kind == "CONTAINS":
        return wanted in value
    listed = {v.strip() for v in wanted.split(",")}
    return value in listed if kind == "ANY_OF" else value not in listed


@answers("pricing", "GetProducts")
def get_products(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any]:
    if ctx.call.region not in ENDPOINT_REGIONS:
        raise AwsError("UnknownEndpoint",
                       f"There is no Price List endpoint in {ctx.call.region}: AWS serves the "
                       f"Price List API from {', '.join(ENDPOINT_REGIONS)} (each prices every "
                       "region).", 404)
    version = params.get("FormatVersion") or FORMAT_VERSION
    if version != FORMAT_VERSION:
        raise AwsError("InvalidParameterException",
                       f"Unsupported FormatVersion {version!r}; use {FORMAT_VERSION}.")
    service = params["ServiceCode"]
    offered = [p for p in products() if p["serviceCode"] == service]
    if not offered:
        raise AwsError("NotFoundException", f"Service code {service!r} was not found.")
    rules = params.get("Filters") or []
    found = [p for p in offered if all(_matches(p, rule) for rule in rules)]
    try:
        chunk, token = page(found, params, default=DEFAULT_PAGE)
    except RequestInvalid as exc:  # the Price List names a bad token its own way
        raise AwsError("InvalidNextTokenException", exc.message) from exc
    answer: dict[str, Any] = {"FormatVersion": FORMAT_VERSION,
                              "PriceList": [json.dumps(p) for p in chunk]}
    if token:
        answer["NextToken"] = token
    return answer
