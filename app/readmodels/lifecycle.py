"""A cluster's lifecycle as its operations tell it: status reads, from Redis only.

A cluster's *current life* is its create, stage and delete operations since the newest
delete that succeeded. A cluster deleted and made again under the same name is a new
cluster: what the old one ran (its stages, its resource ids) is history, readable through
/api/v1/operations, and never the new one's state or a stage re-run's inputs.
"""

from __future__ import annotations

from typing import Any

from app import context
from schemas.clusters import STAGES
from tasks.clusters import CLUSTER_CREATE, CLUSTER_DELETE, CLUSTER_STAGE
from tasks.engine.model import OpStatus, StepPhase

BUILDS = (CLUSTER_CREATE.name, CLUSTER_STAGE.name)
"""The kinds that make a cluster's pieces (and so give its stages their state)."""
LIFECYCLE = (*BUILDS, CLUSTER_DELETE.name)
HISTORY_LIMIT = 200

Operation = dict[str, Any]


def current_life(name: str) -> list[Operation]:
    """The cluster's create, stage and delete operations since its newest successful
    delete, newest first (empty when it has none, or its newest is that delete)."""
    target = f"cluster/{name}"
    life: list[Operation] = []
    for op in context.engine().store.list(target=target, limit=HISTORY_LIMIT):
        if op["target"] != target or op["kind"] not in LIFECYCLE:
            continue  # its storage and the like have targets of their own below it
        if op["kind"] == CLUSTER_DELETE.name and op["status"] == OpStatus.SUCCEEDED:
            break
        life.append(op)
    return life


def last_create(life: list[Operation]) -> Operation | None:
    return next((op for op in life if op["kind"] == CLUSTER_CREATE.name), None)


def region(life: list[Operation]) -> str | None:
    """The region the cluster's operations act in (a create records the one it was given or
    the panel's default)."""
    return next((op["params"]["region"] for op in life if op["params"].get("region")), None)


def stage_view(life: list[Operation]) -> list[dict[str, Any]]:
    """Each stage's state from the newest operation that ran it."""
    views: dict[str, dict[str, Any]] = {}
    for op in (o for o in life if o["kind"] in BUILDS):
        for stage in STAGES:
            steps = [s for s in op["steps"] if s.get("stage") == stage]
            if stage not in views and steps:
                views[stage] = {"name": stage, "status": _stage_status(op, steps),
                                "operation_id": op["id"],
                                "steps": [{"name": s["name"], "phase": s["phase"],
                                           "detail": s["detail"]} for s in steps]}
    return [views.get(stage, {"name": stage, "status": "not_run", "operation_id": None,
                              "steps": []}) for stage in STAGES]


def _stage_status(op: Operation, steps: list[dict[str, Any]]) -> str:
    phases = {StepPhase(s["phase"]) for s in steps}
    if all(p.is_done for p in phases):
        return "succeeded"
    if StepPhase.FAILED in phases:
        return "failed"
    if op["status"] == OpStatus.CANCELLED:
        return "cancelled"
    if phases & {StepPhase.APPLYING, StepPhase.APPLIED}:
        return "running"
    return "pending"


def stage_rerun(life: list[Operation], stage: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(params, inputs) of a re-run of one stage: the create's params, and the resources of
    every other step, newer runs overriding older ones. The life must hold a create."""
    create = last_create(life)
    if create is None:
        raise ValueError("a stage re-run needs the cluster's create")
    params = {**create["params"], "stage": stage}
    inputs = {s["name"]: s["resources"] for s in create["steps"] if s.get("stage") != stage}
    for op in reversed([o for o in life if o["kind"] in BUILDS]):
        inputs.update({s["name"]: s["resources"] for s in op["steps"]
                       if s.get("stage") != stage and s["resources"]})
    return params, inputs
