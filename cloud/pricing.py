"""Hourly cost of a cluster plan, from the AWS Price List API — never from a table of ours.

The hand-written `cloud/data/prices.yaml` is gone. `estimate(plan, quote)` prices what a dry
run would make (app/readmodels/dry_run.py calls it):

    plan = {
        "region": "us-west-2",
        "instance_groups": [{"name": "workers", "instance_type": "ml.g5.8xlarge",
                             "count": 2, "capacity_type": "on-demand"}],
        "eks_control_plane": True,   # default True: one EKS cluster
        "kubernetes_version": "1.34",  # optional: prices EKS extended support when it is in it
        "nat_gateways": 1,           # default 0: an existing VPC brings its own
        "file_systems": [{"id": "fs-0123", "capacity_gib": 1200}],  # FSx: never priced
    }

`quote(product)` answers one product's price: `PriceList(client).quote`. It calls
`GetProducts` through the one client factory, with a client at `HYPD_PRICING_REGION` (the
endpoint's region, not the cluster's) and filters on the cluster's region (`regionCode`) and
a usage type (`CONTAINS`). The answer's usage type is then checked exactly, after its region
prefix, so that look-alikes (training, hosting, studio, reserved-cluster capacity, NAT data
processed) are never taken for the price. Where each price is in the Price List:

- HyperPod instances, on-demand: service `AmazonSageMaker`, usage type
  `<region prefix>-Cluster:<ml type>` (e.g. `USW2-Cluster:ml.g5.8xlarge`; the product's
  `instanceType` is `<ml type>-Cluster`, e.g. `ml.g5.8xlarge-Cluster`, its `component`
  `Cluster`);
- the EKS control plane: `AmazonEKS`, `<prefix>-AmazonEKS-Hours:perCluster`. For a Kubernetes
  version past its end of standard support (vocabulary/kubernetes_versions.py, on the day of the
  estimate) also extended support, billed per cluster-hour on top of it:
  `<prefix>-AmazonEKS-Hours:extendedSupport`, item kind `eks_extended_support`, its note
  saying since when and until when;
- a NAT gateway's hour: `AmazonEC2`, `[<prefix>-]NatGateway-Hours` (data processed is billed
  per GB and is not in the estimate);
- an FSx for Lustre file system is billed per GiB-month of storage (and throughput), not by
  the hour: listed, with no figure and that reason, never converted by a guess.

Each item names where its figure came from (`source`: `aws-price-list`, the service code, SKU,
offer term, rate code, usage type, AWS's description, the price's effective date, the offer's
publication date, and `fetched_at`, when hypd fetched it) or says why it has none (`basis`).
The cost as a whole carries `source` and `fetched_at` (its oldest figure's). The bases:

- `list-price`: the on-demand hourly list price;
- `spot`: HyperPod spot capacity is billed at a price that moves, and the Price List carries
  no fixed HyperPod spot rate: no figure; the on-demand list price is given as
  `on_demand_unit_usd` for comparison;
- `training-plan`: reserved by a training plan, paid up front when the plan was bought: no
  hourly figure, and no call;
- `unknown`: the price cannot be had. The service is failing, throttled or refusing the
  credentials (the panel's role needs `pricing:GetProducts`), there is no such product, or
  there are several different figures. Null figures and a note saying why; never a guess. The
  dry run still answers 200.

The pricing client makes 2 attempts with a 10 s read timeout, and after one failure an
estimate asks the Price List nothing more (a person is waiting).

Caching: cloud/ keeps no cache of its own. The read model wraps each quote in the app's one
read cache (`app/cache.py`), `hypd:cache:price:v1:<service>:<region>:<usage type>`, for a day,
so a second plan within the day calls AWS not at all. A failure raises out of the cache's
loader and is not kept, so the next plan asks again; a "not in the Price List" answer is
kept: it is an answer.

The sandbox answers `pricing:GetProducts` (`sandbox/gaps/pricing.py`) from Price List-shaped
products it ships (`sandbox/data/price_list.json`: HyperPod cluster instances of 16 types,
the EKS hour and extended support's, the NAT gateway hour and GB, in us-east-1, us-east-2 and
us-west-2, each entry a JSON string as AWS answers). Other types are "not in the Price List"
there, and a client signed for a region without a Price List endpoint is refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cloud import aws
from cloud.errors import Refusal
from cloud.settings import Settings
from vocabulary import kubernetes_versions
from vocabulary.capacity import (
    EKS_CONTROL_PLANE,
    EKS_EXTENDED_SUPPORT,
    FSX_FILE_SYSTEM,
    HYPERPOD_INSTANCES,
    LIST_PRICE,
    NAT_GATEWAY,
    ON_DEMAND,
    SPOT,
    TRAINING_PLAN,
    UNKNOWN_PRICE,
)

SOURCE = "aws-price-list"
CURRENCY = "USD"
FORMAT_VERSION = "aws_v1"
PAGE_SIZE = 100
MAX_ATTEMPTS = 2
READ_TIMEOUT_S = 10.0
"""A dry run is answered to a person waiting: one retry, and a price rather unknown than late."""

_HOURLY_UNITS = frozenset({"hrs", "hr", "hours", "hour"})
_ACCESS_DENIED = ("AccessDenied", "AccessDeniedException")


class PriceListUnavailable(Refusal):
    """The Price List could not be read (failing, throttled, access denied, an answer hypd
    cannot read). The estimate turns it into "price unknown"; it never fails a dry run."""

    default_code = "upstream_error"
    retryable = True


@dataclass(frozen=True)
class Product:
    """One thing with an hourly list price, and how to find it in the Price List."""

    service_code: str
    region: str
    usage_type: str
    """The usage type after its region prefix, e.g. `Cluster:ml.g5.8xlarge`."""
    what: str
    """For notes: "HyperPod ml.g5.8xlarge on-demand"."""

    @property
    def cache_key(self) -> str:
        return f"price:v1:{self.service_code}:{self.region}:{self.usage_type}"

    def filters(self) -> list[dict[str, str]]:
        return [{"Type": "TERM_MATCH", "Field": "regionCode", "Value": self.region},
                {"Type": "CONTAINS", "Field": "usagetype", "Value": self.usage_type}]

    def matches(self, usage_type: str) -> bool:
        """`USW2-Cluster:ml.g5.8xlarge` or (us-east-1, some services) the bare usage type;
        never `USW2-ReservedCluster:...` or `USW2-NatGateway-Bytes`."""
        return re.fullmatch(r"(?:[A-Z0-9]+-)?" + re.escape(self.usage_type), usage_type) \
            is not None


def hyperpod_instance(region: str, instance_type: str) -> Product:
    return Product("AmazonSageMaker", region, f"Cluster:{instance_type}",
                   f"HyperPod {instance_type} on-demand")


def eks_control_plane(region: str) -> Product:
    return Product("AmazonEKS", region, "AmazonEKS-Hours:perCluster", "EKS control plane hour")


def eks_extended_support(region: str) -> Product:
    return Product("AmazonEKS", region, "AmazonEKS-Hours:extendedSupport",
                   "EKS extended support hour")


def nat_gateway(region: str) -> Product:
    return Product("AmazonEC2", region, "NatGateway-Hours", "NAT gateway hour")


Quote = dict[str, Any]
"""{"usd_per_hour": float | None, "note": str | None, "fetched_at": iso, "source": {...} |
None}: JSON, so the app can cache it as it is."""


def client(settings: Settings | None = None) -> Any:
    """The Price List client: at the pricing endpoint's region, not the cluster's."""
    settings = settings or Settings.from_env()
    return aws.client("pricing", region=settings.pricing_region, settings=settings,
                      max_attempts=MAX_ATTEMPTS, read_timeout_s=READ_TIMEOUT_S)


class PriceList:
    """Quotes from the Price List for one estimate. After a failure it asks no more: the
    service is failing, and each further call would only make the person wait again."""

    def __init__(self, pricing_client: Any, now: Callable[[], datetime] | None = None) -> None:
        self._client = pricing_client
        self._now = now or (lambda: datetime.now(UTC))
        self.failure: PriceListUnavailable | None = None

    def quote(self, product: Product) -> Quote:
        if self.failure is not None:
            raise self.failure
        try:
            documents = list(self._documents(product))
            return quote_from(documents, product, _iso(self._now()))
        except (ClientError, BotoCoreError) as exc:
            self.failure = PriceListUnavailable(_reason(exc))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            self.failure = PriceListUnavailable(
                f"the AWS Price List answered something hypd cannot read ({exc})")
        raise self.failure

    def _documents(self, product: Product) -> Iterable[Mapping[str, Any]]:
        pages = self._client.get_paginator("get_products").paginate(
            ServiceCode=product.service_code, Filters=product.filters(),
            FormatVersion=FORMAT_VERSION, PaginationConfig={"PageSize": PAGE_SIZE})
        for page in pages:
            for entry in page.get("PriceList") or ():
                # the API answers each product as a JSON string
                yield json.loads(entry) if isinstance(entry, str) else entry


def quote_from(documents: Iterable[Mapping[str, Any]], product: Product,
               fetched_at: str) -> Quote:
    """The product's on-demand hourly USD price among Price List documents: one figure with
    its source, or none with the reason (absent; several different figures)."""
    found = []
    for document in documents:
        attributes = document["product"].get("attributes") or {}
        if not product.matches(str(attributes.get("usagetype", ""))):
            continue
        for term, dimension in _hourly_rates(document):
            found.append((document, term, dimension))
    where = (f"{product.service_code}, usage type *{product.usage_type}, "
             f"region {product.region}")
    if not found:
        return {"usd_per_hour": None, "fetched_at": fetched_at, "source": None,
                "note": f"the AWS Price List has no on-demand hourly price for {product.what} "
                        f"({where})"}
    figures = sorted({float(d["pricePerUnit"][CURRENCY]) for _, _, d in found})
    if len(figures) > 1:
        return {"usd_per_hour": None, "fetched_at": fetched_at, "source": None,
                "note": f"the AWS Price List has {len(figures)} different hourly prices for "
                        f"{product.what} ({where}: {', '.join(f'{f:g}' for f in figures)}); "
                        "hypd does not pick one"}
    document, term, dimension = min(found, key=lambda f: f[0]["product"]["sku"])
    attributes = document["product"].get("attributes") or {}
    return {
        "usd_per_hour": figures[0],
        "fetched_at": fetched_at,
        "note": None,
        "source": {
            "name": SOURCE,
            "service_code": product.service_code,
            "sku": document["product"]["sku"],
            "offer_term_code": term.get("offerTermCode"),
            "rate_code": dimension.get("rateCode"),
            "usage_type": attributes.get("usagetype"),
            "description": dimension.get("description"),
            "effective_date": term.get("effectiveDate"),
            "publication_date": document.get("publicationDate"),
            "fetched_at": fetched_at,
        },
    }


def _hourly_rates(document: Mapping[str, Any]) -> Iterable[tuple[Mapping, Mapping]]:
    """(term, price dimension) of each on-demand USD per-hour rate, first tier only."""
    for term in ((document.get("terms") or {}).get("OnDemand") or {}).values():
        for dimension in (term.get("priceDimensions") or {}).values():
            if str(dimension.get("unit", "")).lower() not in _HOURLY_UNITS:
                continue
            if CURRENCY not in (dimension.get("pricePerUnit") or {}):
                continue
            if str(dimension.get("beginRange", "0")) not in ("0", "0.0"):
                continue
            yield term, dimension


def _reason(exc: Exception) -> str:
    code = aws.error_code(exc)
    if code in _ACCESS_DENIED:
        return (f"the AWS Price List refused hypd's credentials ({code}); its role needs "
                "pricing:GetProducts")
    if code in aws.THROTTLING_CODES:
        return f"the AWS Price List is throttling hypd ({code}); try the plan again shortly"
    if isinstance(exc, ClientError):
        message = exc.response.get("Error", {}).get("Message") or ""
        return f"the AWS Price List answered {code}: {message}".rstrip(": ")
    return f"the AWS Price List could not be reached ({type(exc).__name__}: {exc})"


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


# ---------------------------------------------------------------------------------------
# the estimate
# ---------------------------------------------------------------------------------------

def estimate(plan: Mapping[str, Any], quote: Callable[[Product], Quote],
             day: date | None = None) -> dict[str, Any]:
    """The plan's hourly estimate: every item priced by `quote`, or said to be unpriced.
    `day` (default today, UTC) decides the Kubernetes version's EKS support."""
    region = plan.get("region")
    if not region:
        raise ValueError("a plan to price names its region")
    items: list[dict[str, Any]] = []
    for group in plan.get("instance_groups") or ():
        items.append(_instances(region, group, quote))
    if plan.get("eks_control_plane", True):
        items += _eks(region, plan.get("kubernetes_version"), quote,
                      day or kubernetes_versions.today())
    nat = int(plan.get("nat_gateways") or 0)
    if nat:
        item = _listed("NAT gateway", NAT_GATEWAY, nat, nat_gateway(region), quote)
        if item["basis"] == LIST_PRICE:
            item["note"] = "hourly charge only; data processed is billed per GB"
        items.append(item)
    for system in plan.get("file_systems") or ():
        items.append(_item(f"FSx for Lustre {system['id']}", FSX_FILE_SYSTEM, 1, UNKNOWN_PRICE,
                           None,
                           f"billed per GiB-month of storage ({system.get('capacity_gib')} "
                           "GiB) and of throughput, not by the hour: hypd does not price it "
                           "(see AWS's FSx for Lustre pricing)"))
    known = [i["hourly_usd"] for i in items if i["hourly_usd"] is not None]
    complete = len(known) == len(items)
    fetched = sorted(i["source"]["fetched_at"] for i in items if i.get("source"))
    return {
        "hourly_usd": round(sum(known), 4),
        "complete": complete,
        "currency": CURRENCY,
        "source": SOURCE,
        "fetched_at": fetched[0] if fetched else None,
        "items": items,
        "note": ("Estimate from AWS's on-demand list prices (the AWS Price List); not a bill. "
                 + ("" if complete else "Items without a price are not in the total. ")
                 + "Discounts, Savings Plans, data transfer, storage and taxes are not "
                   "included."),
    }


def _eks(region: str, version_name: str | None, quote: Callable[[Product], Quote],
         day: date) -> list[dict[str, Any]]:
    """The control plane's hour, and extended support's when the version is past its
    standard support on `day` (six times the cluster hour in AWS's pricing: worth seeing
    before choosing an older version)."""
    control_plane = _listed("EKS control plane", EKS_CONTROL_PLANE, 1,
                            eks_control_plane(region), quote)
    version = kubernetes_versions.get(version_name)
    if version is None:
        return [control_plane]
    support = version.support(day)
    standard_end = version.end_of_standard_support.isoformat()
    extended_end = version.end_of_extended_support.isoformat()
    if support == kubernetes_versions.STANDARD:
        control_plane["note"] = (f"Kubernetes {version.name} is in EKS standard support until "
                                 f"{standard_end}; after that, extended support is billed "
                                 "on top of this until the cluster is upgraded")
        return [control_plane]
    if support == kubernetes_versions.ENDED:
        control_plane["note"] = (f"EKS ended support for Kubernetes {version.name} on "
                                 f"{extended_end}: EKS will not create it")
        return [control_plane]
    extended = _listed(f"EKS extended support (Kubernetes {version.name})",
                       EKS_EXTENDED_SUPPORT, 1, eks_extended_support(region), quote)
    said = (f"Kubernetes {version.name} left EKS standard support on {standard_end}; "
            f"extended support is billed on top of the cluster hour until the cluster is "
            f"upgraded (EKS upgrades it itself on {extended_end})")
    extended["note"] = said if extended["note"] is None else f"{extended['note']}; {said}"
    return [control_plane, extended]


def _instances(region: str, group: Mapping[str, Any],
               quote: Callable[[Product], Quote]) -> dict[str, Any]:
    instance_type = group.get("instance_type")
    count = int(group.get("count") or 0)
    capacity = group.get("capacity_type") or ON_DEMAND
    name = f"HyperPod {instance_type}" + (f" ({group['name']})" if group.get("name") else "")
    product = hyperpod_instance(region, str(instance_type))
    if capacity == ON_DEMAND:
        item = _listed(name, HYPERPOD_INSTANCES, count, product, quote)
    elif capacity == SPOT:
        item = _item(name, HYPERPOD_INSTANCES, count, SPOT, None, None)
        reference = _quote_or_unknown(product, quote)
        note = ("spot capacity is billed at the current spot price, which moves; the AWS "
                "Price List has no fixed HyperPod spot rate, so there is no figure")
        if reference["usd_per_hour"] is not None:
            item["on_demand_unit_usd"] = reference["usd_per_hour"]
            item["source"] = reference["source"]
            note += (f" (on-demand would be {reference['usd_per_hour']:g} USD per "
                     "instance-hour)")
        item["note"] = note
    elif capacity == TRAINING_PLAN:
        item = _item(name, HYPERPOD_INSTANCES, count, TRAINING_PLAN, None,
                     "reserved by a training plan, paid up front when the plan was bought "
                     "(see the plan's UpfrontFee): no hourly charge here")
    else:
        raise ValueError(f"unknown capacity type {capacity!r}")
    item["capacity_type"] = capacity
    return item


def _listed(name: str, kind: str, quantity: int, product: Product,
            quote: Callable[[Product], Quote]) -> dict[str, Any]:
    """An item at its list price, or unknown with the reason."""
    found = _quote_or_unknown(product, quote)
    unit = found["usd_per_hour"]
    if unit is None:
        item = _item(name, kind, quantity, UNKNOWN_PRICE, None, f"price unknown: {found['note']}")
    else:
        item = _item(name, kind, quantity, LIST_PRICE, unit, found["note"])
    item["source"] = found["source"]
    return item


def _quote_or_unknown(product: Product, quote: Callable[[Product], Quote]) -> Quote:
    try:
        return quote(product)
    except PriceListUnavailable as exc:
        return {"usd_per_hour": None, "source": None, "fetched_at": None,
                "note": exc.message}


def _item(name: str, kind: str, quantity: int, basis: str, unit: float | None,
          note: str | None) -> dict[str, Any]:
    return {
        "name": name,
        "kind": kind,
        "quantity": quantity,
        "basis": basis,
        "unit_usd": unit,
        "hourly_usd": round(unit * quantity, 4) if unit is not None else None,
        "note": note,
        "source": None,
    }
