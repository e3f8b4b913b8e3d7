"""app/readmodels/jobs.py: a job its operation has not made reads from that operation —
`submitting` while it runs (naming the step it is at), `failed` with the operation's reason
once it ended without the job — and a job the cluster has names the operation changing it."""

from __future__ import annotations

from typing import Any

from app.readmodels import jobs as readmodel
from cloud import recipes, training
from cloud.training import JobSpec, RunPolicy

SPEC = JobSpec(name="fit", namespace="team", recipe="torchrun", image="repo/train:1",
               command=(), nodes=2, max_nodes=None, processes_per_node=1, gpus_per_node=1,
               efa_per_node=0, instance_group=None, env=(),
               run_policy=RunPolicy(job_max_retry_count=3))


def _create(store, status: str, steps: list[dict[str, Any]], error: dict | None = None,
            kind: str = "job.create") -> dict[str, Any]:
    op = store.add(kind, "lab", status=status, steps=steps, target="cluster/lab/job/fit")
    manifest = recipes.build("torchrun", SPEC, {"script": "/s3/code/train.py"}).manifest
    op["params"].update(name="fit", namespace="team", recipe="torchrun", manifest=manifest)
    op["error"] = error
    return op


def _steps(*phases: str) -> list[dict[str, Any]]:
    return [{"name": name, "phase": phase}
            for name, phase in zip(("namespace", "mlflow", "submit"), phases, strict=False)]


def test_a_running_submission_reads_as_submitting_at_its_step(app_ctx, store):
    op = _create(store, "running", _steps("succeeded", "applying", "pending"))
    newest = readmodel.operations("lab")
    assert list(newest) == ["fit"] and readmodel.unsubmitted(newest["fit"])
    job = readmodel.from_operation("lab", newest["fit"])
    assert (job["name"], job["state"], job["operation_id"]) == ("fit", "submitting", op["id"])
    assert job["message"] == f"operation {op['id']} is running: mlflow"
    assert (job["kind"], job["namespace"], job["nodes"]) == (training.PYTORCH_KIND, "team", 2)
    assert job["finished_at"] is None and job["pods"] == []


def test_a_failed_submission_reads_as_failed_with_the_operations_reason(app_ctx, store):
    op = _create(store, "failed", _steps("succeeded", "skipped", "failed"),
                 {"code": "precondition_failed", "message": "cluster lab does not serve X"})
    job = readmodel.from_operation("lab", readmodel.operations("lab")["fit"])
    assert job["state"] == "failed" and job["operation_id"] == op["id"]
    assert job["message"] == (f"its submission failed (operation {op['id']}): cluster lab "
                              "does not serve X")


def test_only_a_create_that_made_nothing_stands_for_the_job(app_ctx, store):
    _create(store, "failed", _steps("failed"))
    assert readmodel.unsubmitted(readmodel.operations("lab")["fit"])
    _create(store, "succeeded", _steps("succeeded", "succeeded", "succeeded"))
    assert not readmodel.unsubmitted(readmodel.operations("lab")["fit"])  # the job is made
    _create(store, "succeeded", [{"name": "delete", "phase": "succeeded"}], kind="job.delete")
    assert not readmodel.unsubmitted(readmodel.operations("lab")["fit"])  # and deleted
    assert not readmodel.unsubmitted(None)


def test_a_job_names_the_operation_changing_it_only_while_it_runs(app_ctx, store):
    running = _create(store, "running", [{"name": "delete", "phase": "applying"}],
                      kind="job.delete")
    assert readmodel.with_operation({"operation_id": None}, running)["operation_id"] == \
        running["id"]
    running["status"] = "succeeded"
    assert readmodel.with_operation({"operation_id": None}, running)["operation_id"] is None
