"""Operation kind `cluster.software_update` (target `cluster/<c>`): HyperPod's
UpdateClusterSoftware for the cluster's nodes, followed until AWS has finished.

The call has no client token: before sending it again after a crash, the step looks for
the update it would start (the cluster SystemUpdating, a group's SoftwareUpdateStatus busy)
and, finding it, follows that one instead of starting a second.
"""

from __future__ import annotations

import time
from typing import Any

from cloud import hyperpod
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


def cluster_url(params: dict[str, Any]) -> str:
    return f"/api/v1/clusters/{params['name']}"


SOFTWARE_UPDATE = OperationKind(
    name="cluster.software_update",
    steps=(Step("software", "Update the HyperPod software of the nodes", start_update,
                wait_update),),
    resource_url=cluster_url,
)
