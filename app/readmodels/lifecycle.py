"""A cluster's lifecycle as its operations tell it: status reads, from Redis only.

A cluster's *current life* is its create, stage and delete operations since the newest
delete that succeeded. A cluster deleted and made again under the same name is a new
cluster: what the old one ran (its stages, its resource ids) is history, readable through
/api/v1/operations, and never the new one's state or a stage re-run's inputs. The list finds
clusters whose life has no EKS cluster (a create stopped before EKS) from one read of the
operations (`lives`).

A create that stops short (cancelled, failed) leaves an honest, recoverable state (issue 20).
The cluster's read (`GET /clusters/<c>`, and its list entry) says:

- each stage's `status` from the newest operation that ran it (`stage_view`, and
  `static/js/stages.js`'s `stageStatus` by the same rule): `succeeded` only when every step
  succeeded (a skipped step never counts as done; it used to, and a cancelled create read ✓
  for stages that never ran), `failed` with its `error` (step, code, message), `cancelled` (a
  cancel stopped it within the stage), `skipped` (nothing of it ran), `running`, `pending`
  (not reached: a running operation will, a retry would), `not_run` (no operation has it);
- the cluster's `state` (`state()`): `created` only when every stage succeeded; `creating`,
  `rerunning`, `deleting`; `create_cancelled` / `create_failed` (and `stage_cancelled` /
  `stage_failed` for a re-run) with the stage it stopped at and a summary in words ("create
  cancelled at stage hyperpod; skipped: storage", "create failed at stage eks: ...");
  `incomplete` (a re-run fixed the failed stage, later ones never ran); `delete_failed` /
  `delete_cancelled`; `imported`; `unknown` (no operation kept);
- after a stop (`UNFINISHED`), `left_in_aws` (`app/readmodels/leftovers.py`): what the life's
  creates and re-runs recorded making. That is `tasks.clusters.MADE_BY_STEP`, one entry per
  step, from the step's recorded resources (and, for names derived from the cluster's, the
  name once the step started, in case it stopped before recording). Each is checked in AWS
  now by `cloud/inventory.py` (EC2 by id filters per type; VPC endpoints, IAM, S3, EKS,
  SageMaker, FSx per resource; a type that cannot be read is `exists: null` with the reason,
  never "gone"). It says which of it is `billed_hourly` (the EKS cluster, a NAT gateway not
  failed, the HyperPod cluster with its running `nodes` by group and type, an FSx file
  system), what is `gone`, and `cost`: the billed items as a plan for
  `cloud.pricing.estimate` through `dry_run.priced`, the one way a plan and what is left are
  priced (the control plane with extended support when its version is in it, NAT gateways,
  HyperPod instances by type x running count; FSx is listed with no figure: it is billed by
  the GiB-month);
- `next_actions` (`next_actions()`, each a REST call from `app/readmodels/calls.py`: method,
  route template, its arguments, path and body). Resume: `POST /operations/<id>/retry` on
  the operation that stopped (`resumable`: the create while it is failed or cancelled, else
  the stopped re-run or delete); the engine's retry carries on from the failed or cancelled
  step (an `applied` step goes back to waiting), puts skipped steps back to `pending`, and
  every step adopts what exists. Delete what was made: `DELETE /clusters/<c>`.

A cancel's reply (`POST /operations/<id>/cancel`) for a cluster create or re-run carries the
same `next_actions`, after a `read` of the cluster (`after_cancel`); the MCP server gives
each call its tool (`mcp_server/routemap.py`). A retry of a cluster's operation whose
cluster was deleted since is refused (409: its recorded ids are gone; `superseded`). The
creation diagnosis reports a stopped create, never "healthy".

The dashboard shows the state as a banner and a "Left in AWS" card
(`static/js/views/cluster_left.js`: items, the hourly cost drawn by `static/js/cost.js` as the
plan's is, Resume and Delete), marks each stage honestly (✓ only for succeeded, - for
skipped, x for cancelled), and asks before Cancel on the progress panel (an inline
confirmation saying what stays).

Tests: `tests/app/test_cluster_unhappy.py` (a create cancelled at its HyperPod step by a hold,
resumed, cancelled again and deleted, proven by the local AWS's counters; a create failed
mid-network; one in a user's VPC), `tests/e2e/test_cluster_unhappy_page.py`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from app import context
from app.readmodels import calls
from schemas.clusters import STAGES
from tasks.clusters import CLUSTER_CREATE, CLUSTER_DELETE, CLUSTER_STAGE
from vocabulary.operations import OpStatus, StepPhase

BUILDS = (CLUSTER_CREATE.name, CLUSTER_STAGE.name)
"""The kinds that make a cluster's pieces (and so give its stages their state)."""
LIFECYCLE = (*BUILDS, CLUSTER_DELETE.name)
NOT_RUN = "not_run"
"""A stage no operation of the cluster's current life has."""
HISTORY_LIMIT = 200
LIVES_LIMIT = 5000
"""Operations on cluster targets (and below) read for the list of clusters."""

Operation = dict[str, Any]


def current_life(name: str) -> list[Operation]:
    """The cluster's create, stage and delete operations since its newest successful
    delete, newest first (empty when it has none, or its newest is that delete)."""
    target = f"cluster/{name}"
    return _since_deleted(op for op in context.engine().store.list(target=target,
                                                                   limit=HISTORY_LIMIT)
                          if op["target"] == target)


def lives() -> dict[str, list[Operation]]:
    """Every cluster's current life (non-empty ones), from one read of the operations: what
    the list of clusters shows of each, and how it finds clusters that have no EKS cluster
    (a create that failed or was cancelled before EKS existed, a delete under way)."""
    by_name: dict[str, list[Operation]] = {}
    for op in context.engine().store.list(target="cluster", limit=LIVES_LIMIT):
        parts = op["target"].split("/")
        if len(parts) == 2:
            by_name.setdefault(parts[1], []).append(op)
    found = {name: _since_deleted(ops) for name, ops in by_name.items()}
    return {name: life for name, life in found.items() if life}


def _since_deleted(ops: Iterable[Operation]) -> list[Operation]:
    life: list[Operation] = []
    for op in ops:
        if op["kind"] not in LIFECYCLE:
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
    """Each stage's state from the newest operation that ran it: succeeded, failed (with
    the step's error), cancelled (stopped within it), skipped (a cancel came first),
    running, pending (not reached yet: a running operation will, a retry would) or not_run
    (no operation has it)."""
    views: dict[str, dict[str, Any]] = {}
    for op in (o for o in life if o["kind"] in BUILDS):
        for stage in STAGES:
            steps = [s for s in op["steps"] if s.get("stage") == stage]
            if stage not in views and steps:
                views[stage] = {"name": stage, "status": _stage_status(op, steps),
                                "operation_id": op["id"],
                                "steps": [{"name": s["name"], "phase": s["phase"],
                                           "detail": s["detail"]} for s in steps],
                                "error": _stage_error(op, steps)}
    return [views.get(stage, {"name": stage, "status": NOT_RUN, "operation_id": None,
                              "steps": [], "error": None}) for stage in STAGES]


def _stage_status(op: Operation, steps: list[dict[str, Any]]) -> str:
    """One rule, also static/js/stages.js's `stageStatus`: a skipped step is never counted
    as done, so a stage a cancel skipped reads skipped, and one it stopped in cancelled."""
    phases = {StepPhase(s["phase"]) for s in steps}
    if StepPhase.FAILED in phases:
        return StepPhase.FAILED.value
    if phases == {StepPhase.SUCCEEDED}:
        return StepPhase.SUCCEEDED.value
    if phases == {StepPhase.SKIPPED}:
        return StepPhase.SKIPPED.value
    if op["status"] == OpStatus.CANCELLED:
        return OpStatus.CANCELLED.value
    if phases & {StepPhase.APPLYING, StepPhase.APPLIED} or (
            StepPhase.SUCCEEDED in phases and OpStatus(op["status"]) in OpStatus.active()):
        return OpStatus.RUNNING.value
    return StepPhase.PENDING.value


def _stage_error(op: Operation, steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The failed step's error: the operation's code and message when it is that step's."""
    failed = next((s for s in steps if s["phase"] == StepPhase.FAILED), None)
    if failed is None:
        return None
    error = op.get("error") or {}
    if error.get("step") == failed["name"]:
        return {"step": failed["name"], "code": error.get("code"),
                "message": error.get("message") or failed["detail"]}
    return {"step": failed["name"], "code": None, "message": failed["detail"]}


# the cluster's state as its operations tell it ------------------------------------------------

CREATING, RERUNNING, CREATED, INCOMPLETE = "creating", "rerunning", "created", "incomplete"
CREATE_FAILED, CREATE_CANCELLED = "create_failed", "create_cancelled"
STAGE_FAILED, STAGE_CANCELLED = "stage_failed", "stage_cancelled"
DELETING, DELETE_FAILED, DELETE_CANCELLED = "deleting", "delete_failed", "delete_cancelled"
IMPORTED, UNKNOWN = "imported", "unknown"
UNFINISHED = frozenset({INCOMPLETE, CREATE_FAILED, CREATE_CANCELLED, STAGE_FAILED,
                        STAGE_CANCELLED, DELETE_FAILED, DELETE_CANCELLED})
"""States in which something hypd made may be left in AWS with nothing running on it: the
read lists what is left, its hourly cost, and the ways on."""


def state(life: list[Operation], stages: list[dict[str, Any]]) -> dict[str, Any]:
    """{status, summary, operation_id, stage, error}: where the cluster's life stands, in
    words that say what happened (a cancelled or failed create is said to be so, with the
    stage it stopped at) — never "created" unless every stage succeeded."""
    newest = life[0] if life else None
    if newest is None:
        return _state(UNKNOWN, "hypd keeps no operation of it (its records are gone)", None)
    status = OpStatus(newest["status"])
    if newest["kind"] == CLUSTER_DELETE.name:
        where = _stopped_at(newest)
        if status in OpStatus.active():
            return _state(DELETING, "being deleted", newest, where)
        if status == OpStatus.FAILED:
            return _state(DELETE_FAILED, f"delete failed at stage {where}: "
                          f"{(newest.get('error') or {}).get('message')}", newest, where)
        return _state(DELETE_CANCELLED, f"delete cancelled at stage {where}", newest, where)
    if status in OpStatus.active():
        if newest["kind"] == CLUSTER_CREATE.name:
            return _state(CREATING, "being created", newest, _stopped_at(newest))
        stage = newest["params"].get("stage")
        return _state(RERUNNING, f"stage {stage} is being run again", newest, stage)
    not_done = [s for s in stages if s["status"] != StepPhase.SUCCEEDED]
    if not not_done:
        return _state(CREATED, "created: every stage succeeded", newest)
    if status == OpStatus.SUCCEEDED:  # a re-run succeeded; the create never finished
        names = ", ".join(f"{s['name']} ({s['status']})" for s in not_done)
        return _state(INCOMPLETE, f"incomplete: not done: {names}",
                      last_create(life) or newest, not_done[0]["name"])
    create = newest["kind"] == CLUSTER_CREATE.name
    where = _stopped_at(newest)
    if status == OpStatus.FAILED:
        error = (newest.get("error") or {}).get("message")
        return _state(CREATE_FAILED if create else STAGE_FAILED,
                      f"{'create' if create else 'stage re-run'} failed at stage {where}: "
                      f"{error}", newest, where)
    skipped = [s["name"] for s in stages if s["status"] == StepPhase.SKIPPED]
    stopped = next((s for s in stages if s["name"] == where), None)
    how = "at" if stopped and stopped["status"] == OpStatus.CANCELLED else "before"
    return _state(CREATE_CANCELLED if create else STAGE_CANCELLED,
                  f"{'create' if create else 'stage re-run'} cancelled {how} stage {where}"
                  + (f"; skipped: {', '.join(skipped)}" if skipped else ""), newest, where)


def _state(status: str, summary: str, op: Operation | None,
           stage: str | None = None) -> dict[str, Any]:
    error = (op or {}).get("error") if status in (CREATE_FAILED, STAGE_FAILED,
                                                  DELETE_FAILED) else None
    return {"status": status, "summary": summary, "operation_id": op["id"] if op else None,
            "stage": stage, "error": error}


def _stopped_at(op: Operation) -> str | None:
    """The stage of the first step an operation has not done (its failed one, the one a
    cancel stopped in or before, the one running)."""
    step = next((s for s in op["steps"] if not StepPhase(s["phase"]).is_done
                 or s["phase"] == StepPhase.SKIPPED), None)
    return step.get("stage") if step else None


def resumable(life: list[Operation]) -> Operation | None:
    """The operation a resume retries: the newest failed or cancelled create, stage re-run
    or delete that nothing has superseded (a retry carries on from its failed or cancelled
    step; the steps it skipped run)."""
    stopped = (OpStatus.FAILED, OpStatus.CANCELLED)
    newest = life[0] if life else None
    if newest is None or OpStatus(newest["status"]) in OpStatus.active():
        return None
    if newest["kind"] == CLUSTER_DELETE.name:
        return newest if newest["status"] in stopped else None
    create = last_create(life)
    if create is not None and create["status"] in stopped:
        return create  # it resumes every stage it did not finish
    return newest if newest["status"] in stopped else None


def next_actions(name: str, life: list[Operation], now: dict[str, Any]
                 ) -> list[dict[str, Any]]:
    """The two ways on from an unfinished state, each as a tool call and its route: resume
    (retry the operation that stopped: it carries on from its failed or cancelled step and
    runs the steps it skipped) and delete what was made (a stopped delete is resumed)."""
    if now["status"] not in UNFINISHED:
        return []
    actions = []
    op = resumable(life)
    if op is not None:
        actions.append(resume_action(op))
    if now["status"] not in (DELETE_FAILED, DELETE_CANCELLED):
        actions.append(delete_action(name))
    return actions


def resume_action(op: Operation) -> dict[str, Any]:
    what = {CLUSTER_CREATE.name: "the create", CLUSTER_DELETE.name: "the delete"}.get(
        op["kind"], f"the re-run of stage {op['params'].get('stage')}")
    return {"action": "resume", "title": f"Resume {what}",
            "why": f"retries operation {op['id']} with the same id from the step it stopped "
                   "at; the steps it skipped run, what earlier steps made is adopted, "
                   "nothing is made twice",
            **calls.call(calls.RETRY_OPERATION, {"operation_id": op["id"]})}


def delete_action(name: str) -> dict[str, Any]:
    return {"action": "delete", "title": "Delete what was made",
            "why": "removes what hypd made for the cluster, in reverse order, and nothing "
                   "else; the shared bucket (the user's data) is kept unless delete_data "
                   "is true",
            **calls.call(calls.DELETE_CLUSTER, {"name": name})}


def read_action(name: str) -> dict[str, Any]:
    return {"action": "read", "title": f"Read cluster {name}",
            "why": "once the operation stops: each stage as it ended, what is left in AWS "
                   "and its hourly cost, and these ways on",
            **calls.call(calls.CLUSTER, {"name": name})}


def after_cancel(op: Operation) -> list[dict[str, Any]]:
    """What a cancel's reply points at: for a cluster's create (or re-run), the cluster's
    read, then resume or delete what was made; nothing for other kinds."""
    if op["kind"] not in BUILDS:
        return []
    name = op["params"]["name"]
    return [read_action(name), resume_action(op), delete_action(name)]


def superseded(op: Operation) -> str | None:
    """Why a cluster's create, re-run or delete may no longer be retried — the cluster was
    deleted after it (its recorded resource ids are gone; create it again instead) — or
    None."""
    if op["kind"] not in LIFECYCLE or not op["target"].startswith("cluster/"):
        return None
    life = current_life(op["params"]["name"])
    if any(o["id"] == op["id"] for o in life):
        return None
    return (f"cluster {op['params']['name']!r} was deleted after operation {op['id']}: what "
            "it recorded is gone, so it cannot be resumed; create the cluster again")


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
