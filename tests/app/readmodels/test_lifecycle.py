"""app/readmodels/lifecycle.py: a cluster's current life, its stages and a re-run's inputs,
from its operations alone."""

from __future__ import annotations

import pytest

from app.readmodels import lifecycle


def _step(name: str, stage: str, phase: str = "succeeded", **resources) -> dict:
    return {"name": name, "stage": stage, "phase": phase, "detail": None,
            "resources": resources}


def test_the_current_life_starts_after_the_newest_successful_delete(app_ctx, store):
    store.add("cluster.create", "lab")
    store.add("cluster.delete", "lab", status="failed")
    store.add("cluster.delete", "lab")
    create = store.add("cluster.create", "lab", status="running")
    store.add("storage.create", "lab", target="cluster/lab/storage/data")
    store.add("cluster.create", "lab-2")
    assert [op["id"] for op in lifecycle.current_life("lab")] == [create["id"]]
    assert lifecycle.last_create(lifecycle.current_life("lab")) == create


def test_each_stage_from_the_newest_operation_that_ran_it(app_ctx, store):
    store.add("cluster.create", "lab", status="failed", steps=[
        _step("vpc", "network"), _step("eks_cluster", "eks", "failed"),
        _step("activate", "activate", "pending")])
    rerun = store.add("cluster.stage", "lab", status="running",
                      steps=[_step("eks_cluster", "eks", "applying")])
    stages = {s["name"]: s for s in lifecycle.stage_view(lifecycle.current_life("lab"))}
    assert stages["network"]["status"] == "succeeded"
    assert stages["eks"] == {"name": "eks", "status": "running", "operation_id": rerun["id"],
                             "steps": [{"name": "eks_cluster", "phase": "applying",
                                        "detail": None}]}
    assert stages["activate"]["status"] == "pending"
    assert stages["storage"] == {"name": "storage", "status": "not_run", "operation_id": None,
                                 "steps": []}
    store.ops[-1]["status"] = "cancelled"
    store.ops[-1]["steps"][0]["phase"] = "pending"
    stages = {s["name"]: s for s in lifecycle.stage_view(lifecycle.current_life("lab"))}
    assert stages["eks"]["status"] == "cancelled"


def test_a_rerun_takes_its_inputs_from_this_life_only(app_ctx, store):
    store.add("cluster.create", "lab", steps=[_step("vpc", "network", vpc_id="vpc-old"),
                                              _step("eks_cluster", "eks", arn="old")])
    store.add("cluster.delete", "lab")
    store.add("cluster.create", "lab", status="failed", steps=[
        _step("vpc", "network", vpc_id="vpc-new"), _step("eks_cluster", "eks", "failed")])
    store.add("cluster.stage", "lab", steps=[_step("eks_cluster", "eks", arn="new")])
    life = lifecycle.current_life("lab")
    params, inputs = lifecycle.stage_rerun(life, "hyperpod")
    assert params == {"name": "lab", "region": "us-west-2", "stage": "hyperpod"}
    assert inputs == {"vpc": {"vpc_id": "vpc-new"}, "eks_cluster": {"arn": "new"}}
    _, inputs = lifecycle.stage_rerun(life, "eks")
    assert inputs == {"vpc": {"vpc_id": "vpc-new"}}
    assert lifecycle.region(life) == "us-west-2"
    with pytest.raises(ValueError):
        lifecycle.stage_rerun([], "eks")
