"""app/readmodels/lifecycle.py: a cluster's current life, its stages and a re-run's inputs,
from its operations alone."""

from __future__ import annotations

import pytest

from app.readmodels import lifecycle
from mcp_server.routemap import ROUTES


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
                                        "detail": None}], "error": None}
    assert stages["activate"]["status"] == "pending"
    assert stages["storage"] == {"name": "storage", "status": "not_run", "operation_id": None,
                                 "steps": [], "error": None}
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


# what a stopped create reads as ------------------------------------------------------------

def _create_steps(*phases: str) -> list[dict]:
    """One step per stage of a create, in order, with these phases."""
    names = ("vpc", "eks_cluster", "activate", "dependencies", "hyperpod_cluster", "s3_bucket")
    stages = ("network", "eks", "activate", "dependencies", "hyperpod", "storage")
    return [_step(n, s, p) for n, s, p in zip(names, stages, phases, strict=True)]


def _read(name: str = "lab") -> tuple[dict, dict]:
    life = lifecycle.current_life(name)
    stages = lifecycle.stage_view(life)
    return {s["name"]: s["status"] for s in stages}, lifecycle.state(life, stages)


def test_a_cancelled_create_reads_skipped_stages_as_skipped_never_succeeded(app_ctx, store):
    store.add("cluster.create", "lab", status="cancelled", steps=_create_steps(
        "succeeded", "succeeded", "succeeded", "succeeded", "applied", "skipped"))
    stages, now = _read()
    assert stages == {"network": "succeeded", "eks": "succeeded", "activate": "succeeded",
                      "dependencies": "succeeded", "hyperpod": "cancelled",
                      "storage": "skipped"}
    assert (now["status"], now["stage"]) == ("create_cancelled", "hyperpod")
    assert now["summary"] == "create cancelled at stage hyperpod; skipped: storage"


def test_a_cancel_at_a_stage_boundary_says_before_which_stage(app_ctx, store):
    store.add("cluster.create", "lab", status="cancelled", steps=_create_steps(
        "succeeded", "succeeded", "skipped", "skipped", "skipped", "skipped"))
    stages, now = _read()
    assert list(stages.values()) == ["succeeded", "succeeded"] + ["skipped"] * 4
    assert now["summary"] == ("create cancelled before stage activate; skipped: activate, "
                              "dependencies, hyperpod, storage")


def test_a_failed_create_reads_failed_at_its_stage_with_the_error(app_ctx, store):
    op = store.add("cluster.create", "lab", status="failed", steps=_create_steps(
        "succeeded", "failed", "pending", "pending", "pending", "pending"))
    op["steps"][1]["detail"] = "AccessDeniedException: injected"
    op["error"] = {"code": "upstream_error", "message": "AccessDeniedException: injected",
                   "step": "eks_cluster"}
    life = lifecycle.current_life("lab")
    stages = lifecycle.stage_view(life)
    now = lifecycle.state(life, stages)
    assert [s["status"] for s in stages] == ["succeeded", "failed"] + ["pending"] * 4
    assert stages[1]["error"] == {"step": "eks_cluster", "code": "upstream_error",
                                  "message": "AccessDeniedException: injected"}
    assert (now["status"], now["stage"]) == ("create_failed", "eks")
    assert now["summary"] == "create failed at stage eks: AccessDeniedException: injected"
    assert now["error"]["step"] == "eks_cluster"


def test_only_every_stage_succeeded_reads_created(app_ctx, store):
    store.add("cluster.create", "lab", status="failed", steps=_create_steps(
        "succeeded", "succeeded", "succeeded", "succeeded", "failed", "pending"))
    store.add("cluster.stage", "lab", steps=[_step("hyperpod_cluster", "hyperpod")])
    _, now = _read()
    assert (now["status"], now["stage"]) == ("incomplete", "storage")
    assert now["summary"] == "incomplete: not done: storage (pending)"
    store.add("cluster.stage", "lab", steps=[_step("s3_bucket", "storage")])
    assert _read()[1]["status"] == "created"


def test_running_and_deleting_states(app_ctx, store):
    store.add("cluster.create", "lab", status="running", steps=_create_steps(
        "succeeded", "applied", "pending", "pending", "pending", "pending"))
    stages, now = _read()
    assert (stages["eks"], stages["activate"], now["status"]) == ("running", "pending",
                                                                  "creating")
    store.ops[-1]["status"] = "succeeded"
    for step in store.ops[-1]["steps"]:
        step["phase"] = "succeeded"
    delete = store.add("cluster.delete", "lab", status="failed",
                       steps=[_step("hyperpod_cluster", "hyperpod", "failed")])
    _, now = _read()
    assert (now["status"], now["stage"], now["operation_id"]) == (
        "delete_failed", "hyperpod", delete["id"])


def test_the_ways_on_resume_the_stopped_operation_or_delete_what_was_made(app_ctx, store):
    create = store.add("cluster.create", "lab", status="cancelled", steps=_create_steps(
        "succeeded", "applied", "skipped", "skipped", "skipped", "skipped"))
    life = lifecycle.current_life("lab")
    now = lifecycle.state(life, lifecycle.stage_view(life))
    actions = ROUTES.translate(lifecycle.next_actions("lab", life, now))  # as an agent reads them
    assert [(a["action"], a["tool"], a["rest"]["method"], a["rest"]["path"])
            for a in actions] == [
        ("resume", "retry_operation", "POST", f"/api/v1/operations/{create['id']}/retry"),
        ("delete", "delete_cluster", "DELETE", "/api/v1/clusters/lab")]
    assert all(a["mutating"] for a in actions)
    # the cancel's reply points at the read first
    assert [a["rest"]["route"] for a in lifecycle.after_cancel(create)] == [
        "/api/v1/clusters/{name}", "/api/v1/operations/{operation_id}/retry",
        "/api/v1/clusters/{name}"]
    assert [a["tool"] for a in ROUTES.translate(lifecycle.after_cancel(create))] == [
        "get_cluster", "retry_operation", "delete_cluster"]
    assert lifecycle.after_cancel({"kind": "network.create", "params": {}}) == []
    # a stopped delete is resumed, not deleted again
    delete = store.add("cluster.delete", "lab", status="cancelled")
    life = lifecycle.current_life("lab")
    now = lifecycle.state(life, lifecycle.stage_view(life))
    assert [(a["action"], a["rest"]["args"]) for a in lifecycle.next_actions("lab", life, now)] == [
        ("resume", {"operation_id": delete["id"]})]


def test_a_created_cluster_has_no_ways_on_and_a_deleted_ones_create_cannot_resume(
        app_ctx, store):
    create = store.add("cluster.create", "lab", status="cancelled", steps=_create_steps(
        "succeeded", "applied", "skipped", "skipped", "skipped", "skipped"))
    assert lifecycle.superseded(create) is None
    store.add("cluster.delete", "lab")
    assert "was deleted after operation" in lifecycle.superseded(create)
    assert lifecycle.superseded({"kind": "network.create", "target": "network/lab",
                                 "params": {"name": "lab"}}) is None
    store.add("cluster.create", "lab", steps=_create_steps(*["succeeded"] * 6))
    life = lifecycle.current_life("lab")
    now = lifecycle.state(life, lifecycle.stage_view(life))
    assert now["status"] == "created" and lifecycle.next_actions("lab", life, now) == []
