"""Asking for a change's plan (`?dry_run=true`) and checking it changed nothing: no
operation recorded, no AWS change (the local AWS's counters), only `dryRun=All` writes to
Kubernetes. For every module whose resources a plan is asked about."""

from __future__ import annotations

from typing import Any

from schemas.dependents import DestroyPlanSchema
from schemas.rehearsal import RehearsalSchema


def rehearsed(stack, method: str, path: str, body: dict[str, Any] | None = None, *,
              kind: str, token: str = "viewer", **query: str) -> dict[str, Any]:
    """The plan of `method path` (as `token`), after checking nothing was recorded or
    changed and that it is a well-formed plan of an operation of `kind` (a destructive
    route's DestroyPlan carries its rehearsal too)."""
    with stack.client() as c:
        ops_before = c.get("/api/v1/operations", params={"limit": 200}).json()["items"]
    changes_before = stack.sandbox.counters()["by_action"]
    kube_seq = max((w["seq"] for w in stack.sandbox.kube_writes()), default=0)
    with stack.client(token) as c:
        reply = c.request(method, path, params={"dry_run": "true", **query}, json=body)
    with stack.client() as c:
        ops_after = c.get("/api/v1/operations", params={"limit": 200}).json()["items"]
    assert [o["id"] for o in ops_after] == [o["id"] for o in ops_before]
    assert stack.sandbox.counters()["by_action"] == changes_before
    writes = stack.sandbox.kube_writes(since=kube_seq)
    assert all(w["dry_run"] for w in writes), [w for w in writes if not w["dry_run"]]
    assert reply.status_code == 200, reply.text
    plan = reply.json()
    schema = DestroyPlanSchema() if "removes" in plan else RehearsalSchema()
    assert not schema.validate(plan), schema.validate(plan)
    assert plan["dry_run"] is True and plan["kind"] == kind, plan
    assert plan["changes"] == sum(len(s["calls"]) for s in plan["steps"])
    return plan


def steps_of(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["step"]: s for s in plan["steps"]}


def calls_in_order(plan: dict[str, Any], wanted: list[tuple[str, str]]) -> bool:
    """`wanted` (service, AWS operation — or for Kubernetes the kind written, else the
    resource a path names) appear in the plan's calls in this order."""
    said = iter((c["service"], (c["params"].get("kind") or c["params"].get("resource"))
                 if c["service"] == "kubernetes" else c["operation"])
                for s in plan["steps"] for c in s["calls"])
    return all(any(w == s for s in said) for w in wanted)
