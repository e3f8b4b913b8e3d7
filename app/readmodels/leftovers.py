"""What a cluster's create left in AWS, and what of it is billed by the hour.

Read after a create (or a stage re-run, or a delete) stopped short — cancelled or failed —
so that the user sees what to pay for before choosing a way on. What was made comes from the
operations' own records (each step's recorded resources, `tasks.clusters.made`); whether it
still exists, from AWS now (`cloud.inventory`); what it costs per hour, priced as the plan is
priced (`dry_run.priced`: the AWS Price List through the read cache), with the same rule:
a price that cannot be had is unknown, with the reason, never a guess.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from app.readmodels import dry_run, lifecycle
from cloud import aws, inventory
from tasks import clusters
from vocabulary.capacity import ON_DEMAND

BILLED_STATES: dict[str, frozenset[str] | None] = {
    inventory.EKS_CLUSTER: None,
    inventory.NAT_GATEWAY: frozenset({"pending", "available", "deleting"}),
    inventory.HYPERPOD_CLUSTER: None,
    inventory.FSX_FILE_SYSTEM: None,
}
"""What is billed by the hour while it exists (None: in any state; else only in these):
the EKS control plane, a NAT gateway (a failed one is not), HyperPod's nodes (priced by
instance type and the count running), an FSx file system (by the GiB-month: listed unpriced)."""


def made(life: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """Every resource the life's creates and stage re-runs recorded making, once each, in
    the order the create made them: {type, id, stage, step, operation_id}."""
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for op in reversed([o for o in life if o["kind"] in lifecycle.BUILDS]):  # oldest first
        for step in op["steps"]:
            for kind, value in clusters.made(step, name):
                seen.setdefault((kind, value), {
                    "type": kind, "id": value, "stage": step.get("stage"),
                    "step": step["name"], "operation_id": op["id"],
                    "resources": step.get("resources") or {}})
    return list(seen.values())


def read(name: str, region: str, life: list[dict[str, Any]], eks: dict[str, Any] | None,
         hyperpod: dict[str, Any] | None) -> dict[str, Any]:
    """{as_of, items, gone, cost} (LeftInAwsSchema): what exists of what was made, each with
    its state and whether it is billed by the hour; what is gone; the hourly cost of what
    is left. `eks` and `hyperpod` are the cluster's as just read (their version and groups)."""
    wanted = made(life, name)
    found = inventory.states(lambda service: aws.client(service, region=region),
                             [(w["type"], w["id"]) for w in wanted])
    items, gone = [], []
    for want in wanted:
        now = found[(want["type"], want["id"])]
        if now["exists"] is False:
            gone.append({"type": want["type"], "id": want["id"]})
            continue
        item = {k: v for k, v in want.items() if k != "resources"}
        item.update(exists=now["exists"], state=now["state"], note=now["note"],
                    billed_hourly=_billed(want["type"], now))
        if want["type"] == inventory.HYPERPOD_CLUSTER and hyperpod:
            item["nodes"] = _nodes(hyperpod)
        items.append(item)
    cost = dry_run.priced(_plan(region, wanted, items, eks, hyperpod))
    unread = [i for i in items if i["exists"] is None and i["type"] in BILLED_STATES]
    if unread:
        cost["complete"] = False
        cost["note"] += (" Not counted, as they could not be read now: "
                         + ", ".join(f"{i['type']} {i['id']}" for i in unread) + ".")
    as_of = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {"as_of": as_of, "items": items, "gone": gone, "cost": cost}


def _billed(kind: str, now: dict[str, Any]) -> bool:
    if kind not in BILLED_STATES or not now["exists"]:
        return False
    states = BILLED_STATES[kind]
    return states is None or now["state"] in states


def _nodes(hyperpod: dict[str, Any]) -> list[dict[str, Any]]:
    """Its instance groups' running instances: what HyperPod bills by the hour."""
    return [{"instance_group": g["name"], "instance_type": g["instance_type"],
             "count": g.get("current_count") or 0,
             "capacity_type": g.get("capacity_type") or ON_DEMAND}
            for g in hyperpod.get("instance_groups") or ()]


def _plan(region: str, wanted: list[dict[str, Any]], items: list[dict[str, Any]],
          eks: dict[str, Any] | None, hyperpod: dict[str, Any] | None) -> dict[str, Any]:
    """What is left, as `cloud.pricing.estimate` prices a plan."""
    billed = [i for i in items if i["billed_hourly"]]
    kinds = {i["type"] for i in billed}
    groups = [{"name": n["instance_group"], "instance_type": n["instance_type"],
               "count": n["count"], "capacity_type": n["capacity_type"]}
              for i in billed if i["type"] == inventory.HYPERPOD_CLUSTER
              for n in i.get("nodes") or () if n["count"]]
    capacity = {w["id"]: w["resources"].get("capacity_gib") for w in wanted}
    return {
        "region": region,
        "eks_control_plane": inventory.EKS_CLUSTER in kinds,
        "kubernetes_version": (eks or {}).get("version") if inventory.EKS_CLUSTER in kinds
        else None,
        "nat_gateways": sum(i["type"] == inventory.NAT_GATEWAY for i in billed),
        "instance_groups": groups if hyperpod else [],
        "file_systems": [{"id": i["id"], "capacity_gib": capacity.get(i["id"])}
                         for i in billed if i["type"] == inventory.FSX_FILE_SYSTEM],
    }
