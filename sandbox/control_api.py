"""The `/_sandbox/...` control routes served next to the local AWS.

Tests and demos drive the sandbox over HTTP, so a test process and a worker process see the
same faults, holds and call log no matter which process started the sandbox. Every route
speaks JSON, but the page a presigned MLflow UI link opens (HTML, for a person); errors are
`{"error": {"code", "message"}}`. The route table is `ROUTES`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from werkzeug.wrappers import Request

from sandbox.calllog import CallLog
from sandbox.env import CONTROL_PATH
from sandbox.faults import FaultBook, FaultError
from sandbox.holds import HoldBook, HoldError
from sandbox.reply import Reply
from sandbox.timing import Clock, Transitions

PREFIX = CONTROL_PATH


@dataclass
class Controls:
    """Everything the control routes act on."""

    faults: FaultBook
    holds: HoldBook
    log: CallLog
    clock: Clock
    transitions: Transitions
    # The LocalAwsApp: its gaps' state (quotas, training plans) and its AWS reset.
    app: Any = None


class _BadRequest(Exception):
    pass


def _body(request: Request) -> dict[str, Any]:
    raw = request.get_data()
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise _BadRequest(f"body is not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise _BadRequest("body must be a JSON object")
    return value


def _error(status: int, code: str, message: str) -> Reply:
    return Reply.json({"error": {"code": code, "message": message}}, status)


def _info(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    return Reply.json(
        {
            "speed": c.clock.speed,
            "clock_s": round(c.clock.now(), 3),
            "pending_transitions": c.transitions.timeline.pending(),
        }
    )


def _add_fault(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    try:
        fault = c.faults.add(_body(r))
    except FaultError as exc:
        raise _BadRequest(str(exc)) from exc
    return Reply.json(fault.as_dict(), 201)


def _list_faults(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    return Reply.json({"faults": c.faults.list()})


def _clear_faults(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    c.faults.clear()
    return Reply.json({"faults": []})


def _add_hold(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    try:
        hold = c.holds.arm(_body(r))
    except HoldError as exc:
        raise _BadRequest(str(exc)) from exc
    return Reply.json(hold.as_dict(), 201)


def _list_holds(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    return Reply.json({"holds": c.holds.list()})


def _get_hold(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    hold = c.holds.get(m["id"])
    if hold is None:
        return _error(404, "not_found", f"no hold {m['id']}")
    return Reply.json(hold)


def _release_hold(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    drop = _body(r).get("drop", False)
    if not isinstance(drop, bool):
        raise _BadRequest("drop must be true or false")
    hold = c.holds.release(m["id"], drop=drop)
    if hold is None:
        return _error(404, "not_found", f"no hold {m['id']}")
    return Reply.json(c.holds.get(m["id"]))


def _clear_holds(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    c.holds.clear()
    return Reply.json({"holds": []})


def _calls(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    calls = c.log.calls(r.args.get("service") or None, r.args.get("action") or None, _since(r))
    return Reply.json({"calls": calls})


def _counters(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    return Reply.json(c.log.counters())


def _mlflow_ui(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    """What a presigned MLflow UI link opens (an HTML page for a person, not JSON)."""
    from sandbox.gaps import sagemaker_mlflow

    return sagemaker_mlflow.ui_page(c.app, m["token"])


def _since(r: Request) -> int:
    try:
        return int(r.args.get("since", "0"))
    except ValueError as exc:
        raise _BadRequest("since must be an integer") from exc


def _kube_writes(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    return Reply.json({"writes": c.app.kube_writes.writes(r.args.get("cluster") or None,
                                                          _since(r))})


def _kube_counters(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    return Reply.json(c.app.kube_writes.counters())


def _reset(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    wipe_aws = _body(r).get("aws", False)
    if not isinstance(wipe_aws, bool):
        raise _BadRequest("aws must be true or false")
    c.faults.clear()
    c.holds.clear()
    c.log.clear()
    if c.app is not None:
        c.app.training.reset()
        c.app.kube_writes.clear()
    if wipe_aws:
        c.app.reset_aws()
    return Reply.json({"reset": True, "aws": wipe_aws})


def _advance(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    seconds = _body(r).get("seconds")
    if not isinstance(seconds, int | float) or seconds < 0:
        raise _BadRequest("seconds must be a non-negative number")
    c.clock.advance(float(seconds))
    ran = c.transitions.timeline.run_due()
    return Reply.json({"clock_s": round(c.clock.now(), 3), "applied": ran})


def _set_quota(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    from sandbox.gaps import quotas

    try:
        return Reply.json(quotas.control_set(c.app, _body(r)))
    except quotas.QuotaControlError as exc:
        raise _BadRequest(str(exc)) from exc


def _list_quotas(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    from sandbox.gaps import quotas

    overridden = r.args.get("overridden", "").lower() in ("1", "true", "yes")
    return Reply.json(
        quotas.control_list(
            c.app, r.args.get("service_code") or None, r.args.get("region") or None,
            overridden,
        )
    )


def _reset_quotas(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    from sandbox.gaps import quotas

    quotas.control_reset(c.app)
    return Reply.json({"quotas": []})


def _add_training_plan(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    from sandbox.gaps import sagemaker_plans

    try:
        return Reply.json(sagemaker_plans.control_add_plan(c.app, _body(r)), 201)
    except sagemaker_plans.PlanControlError as exc:
        raise _BadRequest(str(exc)) from exc


def _list_training_plans(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    from sandbox.gaps import sagemaker_plans

    return Reply.json(sagemaker_plans.control_list_plans(c.app))


def _clear_training_plans(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    from sandbox.gaps import sagemaker_plans

    sagemaker_plans.control_clear_plans(c.app)
    return Reply.json({"training_plans": []})


def _training(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    from sandbox.simulator.training import TrainingControlError

    book = c.app.training
    if r.method == "GET":
        return Reply.json({"settings": book.configure({}), "faults": book.faults()})
    try:
        return Reply.json({"settings": book.configure(_body(r)), "faults": book.faults()})
    except TrainingControlError as exc:
        raise _BadRequest(str(exc)) from exc


def _add_training_fault(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    from sandbox.simulator.training import TrainingControlError

    try:
        return Reply.json(c.app.training.add_fault(_body(r)).as_dict(), 201)
    except TrainingControlError as exc:
        raise _BadRequest(str(exc)) from exc


def _list_training_faults(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    return Reply.json({"faults": c.app.training.faults()})


def _clear_training_faults(c: Controls, r: Request, m: re.Match[str]) -> Reply:
    c.app.training.clear_faults()
    return Reply.json({"faults": []})


_Handler = Callable[[Controls, Request, "re.Match[str]"], Reply]

ROUTES: list[tuple[str, str, _Handler]] = [
    ("GET", r"", _info),
    ("POST", r"/faults", _add_fault),
    ("GET", r"/faults", _list_faults),
    ("DELETE", r"/faults", _clear_faults),
    ("POST", r"/holds", _add_hold),
    ("GET", r"/holds", _list_holds),
    ("DELETE", r"/holds", _clear_holds),
    ("GET", r"/holds/(?P<id>[\w-]+)", _get_hold),
    ("POST", r"/holds/(?P<id>[\w-]+)/release", _release_hold),
    ("GET", r"/calls", _calls),
    ("GET", r"/counters", _counters),
    ("GET", r"/kube/writes", _kube_writes),
    ("GET", r"/kube/counters", _kube_counters),
    ("POST", r"/reset", _reset),
    ("POST", r"/clock/advance", _advance),
    ("GET", r"/quotas", _list_quotas),
    ("PUT", r"/quotas", _set_quota),
    ("POST", r"/quotas", _set_quota),
    ("DELETE", r"/quotas", _reset_quotas),
    ("GET", r"/training-plans", _list_training_plans),
    ("POST", r"/training-plans", _add_training_plan),
    ("DELETE", r"/training-plans", _clear_training_plans),
    ("GET", r"/training", _training),
    ("PUT", r"/training", _training),
    ("POST", r"/training/faults", _add_training_fault),
    ("GET", r"/training/faults", _list_training_faults),
    ("DELETE", r"/training/faults", _clear_training_faults),
    ("GET", r"/mlflow-ui/(?P<token>[\w-]+)", _mlflow_ui),
]
_COMPILED = [(method, re.compile(PREFIX + path + "/?"), fn) for method, path, fn in ROUTES]


def handle(controls: Controls, environ: dict[str, Any]) -> Reply:
    """Answer one control request."""
    request = Request(environ)
    path_known = False
    for method, pattern, handler in _COMPILED:
        found = pattern.fullmatch(request.path)
        if found is None:
            continue
        path_known = True
        if method == request.method:
            try:
                return handler(controls, request, found)
            except _BadRequest as exc:
                return _error(400, "bad_request", str(exc))
    if path_known:
        return _error(405, "method_not_allowed", f"{request.method} {request.path}")
    return _error(404, "not_found", f"no route {request.path}")
