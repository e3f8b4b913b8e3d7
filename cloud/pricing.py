"""Hourly cost estimate of a cluster plan, from the price table kept as data.

`estimate(plan)` prices what a dry run would make:

    plan = {
        "region": "us-west-2",
        "instance_groups": [{"name": "workers", "instance_type": "ml.g5.8xlarge",
                             "count": 2, "capacity_type": "on-demand"}],
        "eks_control_plane": True,   # default True: one EKS cluster
        "nat_gateways": 1,           # default 0: an existing VPC brings its own
    }

Each item says what it is, how many, the unit price and the hourly total — or `None` with a
note when the table has no honest figure (spot prices move, a training plan is paid up front,
a type or region missing from the table). `hourly_usd` sums the known items; `complete` says
whether every item was priced. The table (`cloud/data/prices.yaml`) carries its `as_of` date
and sources; everything here is an estimate, never a bill.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from cloud.capacity import ON_DEMAND, SPOT, TRAINING_PLAN

PRICES_FILE = Path(__file__).parent / "data" / "prices.yaml"


@functools.lru_cache(maxsize=4)
def price_table(path: Path = PRICES_FILE) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def on_demand_price(region: str, instance_type: str,
                    table: Mapping[str, Any] | None = None) -> float | None:
    """The table's HyperPod on-demand hourly price, or None when it has none."""
    table = table if table is not None else price_table()
    rates = (table.get("hyperpod_on_demand") or {}).get(region) or {}
    price = rates.get(instance_type)
    return float(price) if price is not None else None


def estimate(plan: Mapping[str, Any], table: Mapping[str, Any] | None = None) -> dict[str, Any]:
    table = table if table is not None else price_table()
    region = plan.get("region")
    if not region:
        raise ValueError("a plan to price names its region")
    items: list[dict[str, Any]] = []
    for group in plan.get("instance_groups") or ():
        items.append(_instances(region, group, table))
    if plan.get("eks_control_plane", True):
        price = table.get("eks_control_plane_hourly")
        items.append(_item("EKS control plane", "eks_control_plane", 1,
                           float(price) if price is not None else None,
                           None if price is not None else "no EKS price on file"))
    nat = int(plan.get("nat_gateways") or 0)
    if nat:
        price = (table.get("nat_gateway_hourly") or {}).get(region)
        items.append(_item("NAT gateway", "nat_gateway", nat,
                           float(price) if price is not None else None,
                           "hourly charge only; data processed is billed per GB" if price
                           is not None else f"no NAT gateway price on file for {region}"))
    known = [i["hourly_usd"] for i in items if i["hourly_usd"] is not None]
    return {
        "hourly_usd": round(sum(known), 4),
        "complete": len(known) == len(items),
        "currency": table.get("currency", "USD"),
        "as_of": str(table.get("as_of")),
        "verified": bool(table.get("verified", False)),
        "items": items,
        "note": ("Estimate from hypd's price table (list prices as of "
                 f"{table.get('as_of')}); not a bill. "
                 + ("" if len(known) == len(items)
                    else "Items without a price are not in the total. ")
                 + "Data transfer, storage and taxes are not included."),
        "sources": dict(table.get("sources") or {}),
    }


def _instances(region: str, group: Mapping[str, Any], table: Mapping[str, Any]) -> dict:
    instance_type = group.get("instance_type")
    count = int(group.get("count") or 0)
    capacity = group.get("capacity_type") or ON_DEMAND
    label = f"HyperPod {instance_type}" + (f" ({group['name']})" if group.get("name") else "")
    if capacity == ON_DEMAND:
        price = on_demand_price(region, instance_type, table)
        note = None if price is not None else f"no price on file for {instance_type} in {region}"
        return _item(label, "hyperpod_instances", count, price, note, capacity)
    if capacity == SPOT:
        reference = on_demand_price(region, instance_type, table)
        note = "spot capacity is billed at the current spot price, which moves: no fixed figure"
        if reference is not None:
            note += f" (on-demand would be {reference:g} USD per instance-hour)"
        return _item(label, "hyperpod_instances", count, None, note, capacity)
    if capacity == TRAINING_PLAN:
        return _item(label, "hyperpod_instances", count, None,
                     "reserved by a training plan, paid up front when the plan was bought "
                     "(see the plan's UpfrontFee): no hourly charge here", capacity)
    raise ValueError(f"unknown capacity type {capacity!r}")


def _item(name: str, kind: str, quantity: int, unit: float | None, note: str | None,
          capacity_type: str | None = None) -> dict[str, Any]:
    item = {
        "name": name,
        "kind": kind,
        "quantity": quantity,
        "unit_usd": unit,
        "hourly_usd": round(unit * quantity, 4) if unit is not None else None,
        "note": note,
    }
    if capacity_type:
        item["capacity_type"] = capacity_type
    return item
