"""EKS cluster version upgrades and the updates EKS reports (moto 5.2.5 has none of them).

- UpdateClusterVersion: one minor version up from the cluster's own, to a version EKS offers
  (`InvalidParameterException` otherwise, the same version included); only while the cluster
  is ACTIVE — an update under way, or a cluster being created or deleted, is
  `ResourceInUseException`; a `clientRequestToken` seen before answers that update again.
  The cluster is UPDATING for `VERSION_UPDATING_S` simulated seconds, then ACTIVE on the new
  `version` (its local Kubernetes reports it too), and the update goes InProgress →
  Successful. Add-ons keep their versions: moving them is the caller's next step.
- DescribeUpdate: a version update or an add-on update (UpdateAddon) by id.
- ListUpdates: the cluster's update ids, or an add-on's (`addonName`), newest last.
"""

from __future__ import annotations

from typing import Any

from sandbox.gaps import GapContext, answers
from sandbox.gaps.eks_addons import KUBERNETES_VERSIONS
from sandbox.gaps.eks_state import (
    ClusterRecord,
    existing,
    in_use,
    invalid,
    new_update,
    not_found,
    state,
)

# Simulated seconds (scaled by the sandbox speed): a control plane upgrade takes ~8 minutes.
VERSION_UPDATING_S = 480.0
PLATFORM_VERSION = "eks.1"


def _minor(version: str) -> tuple[int, int]:
    major, _, minor = version.partition(".")
    return int(major), int(minor)


def _upgraded(app: Any, rec: ClusterRecord, update_id: str, version: str) -> Any:
    """The timed end of a version update: ACTIVE on `version`, the update Successful."""

    def change() -> None:
        with state(app).lock:
            if state(app).clusters.get((rec.account, rec.region, rec.name)) is not rec:
                return  # deleted (or reset) in the meantime
            update = rec.updates.get(update_id)
            if update is None or update["status"] != "InProgress":
                return
            rec.kubernetes_version = version
            rec.obj.version = version
            if rec.obj.status == "UPDATING":
                rec.obj.status = "ACTIVE"
            kube = app.kubes.get(rec.name)
            if kube is not None:
                kube.kubernetes_version = version
            update["status"] = "Successful"

    return change


@answers("eks", "UpdateClusterVersion")
def update_cluster_version(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    rec = existing(ctx, p["name"])
    wanted = p["version"]
    with state(ctx).lock:
        made = rec.replay("cluster-update", p, rec.updates)
        if made is not None:
            return {"update": dict(made)}
        if rec.status != "ACTIVE":
            raise in_use(f"Cluster {rec.name} is {rec.status}: an update can start only when "
                         "it is ACTIVE.")
        if wanted not in KUBERNETES_VERSIONS:
            raise invalid(f"unsupported Kubernetes version {wanted}")
        major, minor = _minor(rec.kubernetes_version)
        if _minor(wanted) != (major, minor + 1):
            raise invalid(f"Unsupported Kubernetes minor version update from "
                          f"{rec.kubernetes_version} to {wanted}")
        update = new_update(
            rec,
            "VersionUpdate",
            [{"type": "Version", "value": wanted},
             {"type": "PlatformVersion", "value": PLATFORM_VERSION}],
            p,
        )
        rec.obj.status = "UPDATING"
        answer = {"update": dict(update)}
    # scheduled outside the lock: due changes run under the timeline's lock and take ours
    ctx.app.transitions.timeline.after(
        VERSION_UPDATING_S, _upgraded(ctx.app, rec, update["id"], wanted)
    )
    return answer


def _of(rec: ClusterRecord, addon: str | None) -> list[dict[str, Any]]:
    return [u for u in rec.updates.values() if u["_addon"] == addon]


@answers("eks", "DescribeUpdate")
def describe_update(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    rec = existing(ctx, p["name"])
    with state(ctx).lock:
        update = rec.updates.get(p["updateId"])
        if update is None or p.get("addonName") not in (None, update["_addon"]):
            raise not_found(f"No update found for ID: {p['updateId']}")
        return {"update": dict(update)}


@answers("eks", "ListUpdates")
def list_updates(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    rec = existing(ctx, p["name"])
    with state(ctx).lock:
        ids = [u["id"] for u in _of(rec, p.get("addonName"))]
    return ctx.page(ids, "updateIds", default=100)
