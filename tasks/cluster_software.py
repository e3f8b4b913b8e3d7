"""Operation kinds on target `cluster/<c>` that change a cluster's software:

- `cluster.software_update`: HyperPod's UpdateClusterSoftware for the cluster's nodes,
  followed until AWS has finished. The call has no client token: before sending it again
  after a crash, the step looks for the update it would start (running now, or nodes
  updated since the newest update time recorded before the call) and follows that one.
- `cluster.kubernetes_upgrade`: EKS one minor version up (UpdateClusterVersion with a client
  token; an update to that version already under way is followed), then every EKS add-on
  moved to the version EKS marks default for the new Kubernetes version.
"""

from __future__ import annotations

import time
from typing import Any

from cloud import addons, eks, hyperpod
from tasks.engine.kinds import OperationKind, Step, StepContext, StepFailed
from tasks.outcomes import guarded

SOFTWARE_POLL_S = 30.0
REPORT_GRACE_S = 300.0
"""How long after the call AWS may take to show the update (a group with no status yet is
starting, not done)."""


def _cluster(ctx: StepContext) -> str:
    return ctx.params["name"]


def _state(ctx: StepContext) -> dict[str, Any]:
    state = hyperpod.software_state(ctx.client("sagemaker"), _cluster(ctx))
    if state is None:
        raise StepFailed(f"HyperPod cluster {_cluster(ctx)} does not exist", "not_found")
    return state


@guarded
def start_update(ctx: StepContext) -> dict[str, Any]:
    sm = ctx.client("sagemaker")
    groups = ctx.params.get("instance_groups")
    if ctx.resources.get("started"):
        return {"started": True}
    if "updated_before" in ctx.resources:
        # an earlier attempt may have been answered before it could record so: follow the
        # update it started rather than start a second (running now, or nodes updated since)
        newest = hyperpod.last_software_update(sm, _cluster(ctx), groups)
        moved = newest is not None and newest != ctx.resources["updated_before"]
        if moved or hyperpod.software_update_running(_state(ctx), groups):
            ctx.record(started=True)
            return {"started": True}
    else:
        ctx.record(updated_before=hyperpod.last_software_update(sm, _cluster(ctx), groups),
                   started_at=time.time())
    hyperpod.start_software_update(sm, _cluster(ctx), groups, ctx.params.get("image_id"),
                                   owner=_cluster(ctx))
    ctx.record(started=True)
    return {"started": True}


@guarded
def wait_update(ctx: StepContext) -> float | None:
    state = _state(ctx)
    names = ctx.params.get("instance_groups") or list(state["groups"])
    failed = [g for g in names if state["groups"].get(g) in hyperpod.SOFTWARE_FAILED]
    if failed:
        raise StepFailed(f"the software update of {', '.join(failed)} failed (see the "
                         "cluster's events)", "upstream_error")
    statuses = {g: state["groups"].get(g) for g in names}
    if all(s == "Succeeded" for s in statuses.values()):
        return None
    started_at = ctx.resources.get("started_at") or 0.0
    if not hyperpod.software_update_running(state, names) and (
            time.time() - started_at > REPORT_GRACE_S):
        return None  # AWS reports no status for these groups: the update is over
    ctx.detail("updating: " + ", ".join(f"{g} {s or 'starting'}" for g, s in statuses.items()))
    return SOFTWARE_POLL_S


# -- Kubernetes version ---------------------------------------------------------------------------

@guarded
def upgrade_eks(ctx: StepContext) -> dict[str, Any]:
    update_id = eks.start_version_update(ctx.client("eks"), _cluster(ctx),
                                         ctx.params["version"], ctx.token("eks_version"))
    return {"update_id": update_id, "version": ctx.params["version"]}


@guarded
def wait_eks(ctx: StepContext) -> float | None:
    later = eks.version_wait(ctx.client("eks"), _cluster(ctx), ctx.params["version"],
                             ctx.resources.get("update_id"))
    if later:
        ctx.detail(f"EKS is upgrading {_cluster(ctx)} to Kubernetes {ctx.params['version']}")
    return later


@guarded
def upgrade_addons(ctx: StepContext) -> dict[str, Any]:
    asked = addons.upgrade_addons(ctx.client("eks"), _cluster(ctx), ctx.params["version"],
                                  lambda name: ctx.token("addon", name))
    done = [*(ctx.resources.get("updated") or []), *asked]
    return {"updated": done}


@guarded
def wait_addons(ctx: StepContext) -> float | None:
    names = [a["name"] for a in ctx.resources.get("updated") or ()]
    state = addons.addons_settled(ctx.client("eks"), _cluster(ctx), names)
    if state["failed"]:
        raise StepFailed("add-ons failed to update: " + "; ".join(state["failed"]),
                         "upstream_error")
    if state["pending"]:
        ctx.detail("updating add-ons: " + ", ".join(state["pending"]))
        return 15.0
    return None


def cluster_url(params: dict[str, Any]) -> str:
    return f"/api/v1/clusters/{params['name']}"


SOFTWARE_UPDATE = OperationKind(
    name="cluster.software_update",
    steps=(Step("software", "Update the HyperPod software of the nodes", start_update,
                wait_update),),
    resource_url=cluster_url,
)
KUBERNETES_UPGRADE = OperationKind(
    name="cluster.kubernetes_upgrade",
    steps=(
        Step("eks_version", "Upgrade EKS one minor version", upgrade_eks, wait_eks),
        Step("addons", "Move the EKS add-ons to the new version's defaults", upgrade_addons,
             wait_addons),
    ),
    resource_url=cluster_url,
)
