"""What one operation did, step by step, as the sandbox saw it.

An operation's events (its Redis stream, ids chosen by the engine from its clock in
milliseconds) say when each step started applying, was applied and succeeded; the sandbox's
AWS call log and the local clusters' write log say when each call arrived. A call belongs to
the step whose window holds it: `apply` from the step's first `applying` to its last
`applied`, `wait` from there to its `succeeded`. The campaign reads a clean run's trace to
know where each step can be struck (its first mutation, its first call, its first call while
waiting), and every run's calls to count what it created.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sandbox.resources import is_mutation

KUBERNETES = "kubernetes"
ONCE_PER_PROCESS = frozenset({("eks", "DescribeCluster")})
"""Calls a worker process makes once and then remembers (cloud/eks.py's cluster clients)."""
CREATE_PREFIXES = ("Create", "Allocate", "Run", "Associate", "Attach", "Authorize", "Add",
                   "Batch", "Start", "Update", "Upgrade", "Register", "Import")
"""AWS actions that make something (or start a change AWS then carries out): made twice,
they are a second resource or a second change. Puts, tags, deletes and detaches are
idempotent re-assertions and are counted apart (`other`)."""


@dataclass(frozen=True)
class Call:
    """One AWS call, or one write to a cluster's Kubernetes API (service `kubernetes`,
    action `<verb> <plural>`, the name a hold or fault matches)."""

    service: str
    action: str
    at_ms: int
    mutation: bool


@dataclass
class StepTrace:
    name: str
    apply: list[Call] = field(default_factory=list)
    wait: list[Call] = field(default_factory=list)

    def first(self, phase: str = "apply", mutation: bool = False,
              steady: bool = False) -> Call | None:
        """The phase's first call (a mutation, with `mutation`). With `steady`, the first
        that every run of the step makes, where it has one: a worker process builds a
        cluster's Kubernetes client once (eks:DescribeCluster), so whether that call shows
        in a step depends on which process ran it before."""
        calls = [c for c in (self.apply if phase == "apply" else self.wait)
                 if c.mutation or not mutation]
        if steady:
            calls = [c for c in calls if (c.service, c.action) not in ONCE_PER_PROCESS] or calls
        return calls[0] if calls else None


def _ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def aws_calls(calls: list[dict[str, Any]]) -> list[Call]:
    return [Call(c["service"], c["action"], _ms(c["at"]), is_mutation(c["action"]))
            for c in calls]


def kube_calls(writes: list[dict[str, Any]]) -> list[Call]:
    return [Call(KUBERNETES, f"{w['verb']} {w['resource'].rsplit('/', 1)[-1]}", _ms(w["at"]),
                 True) for w in writes]


def steps_of(events: list[tuple[str, dict[str, Any]]], calls: list[Call],
             step_names: list[str]) -> dict[str, StepTrace]:
    """Each step's calls, from the operation's events (stream id, event)."""
    applying: dict[str, int] = {}
    applied: dict[str, int] = {}
    done: dict[str, int] = {}
    for entry_id, event in events:
        if event.get("type") != "step":
            continue
        at, name, phase = int(entry_id.split("-")[0]), event["step"], event["phase"]
        if phase == "applying":
            applying.setdefault(name, at)
        elif phase == "applied":
            applied[name] = at
        elif phase in ("succeeded", "failed"):
            done[name] = at
    traces = {name: StepTrace(name) for name in step_names}
    for call in sorted(calls, key=lambda c: c.at_ms):
        for name in step_names:
            start, mid = applying.get(name), applied.get(name)
            end = done.get(name, mid)
            if start is None or end is None or not start <= call.at_ms <= end:
                continue
            (traces[name].apply if mid is None or call.at_ms <= mid
             else traces[name].wait).append(call)
            break
    return traces


@dataclass
class Made:
    """What one run created: AWS create-like actions, other AWS mutations, Kubernetes
    objects (resource, namespace, name with the run's own names replaced by their roles),
    and Kubernetes objects made twice within the run (deleted and made again). An AWS
    resource made twice is a second resource with an id of its own: the counts show it."""

    creates: collections.Counter[str] = field(default_factory=collections.Counter)
    other: collections.Counter[str] = field(default_factory=collections.Counter)
    twice: list[str] = field(default_factory=list)

    def extra_over(self, clean: Made) -> dict[str, int]:
        """Creates this run made beyond the clean run's (negative: made fewer)."""
        keys = set(self.creates) | set(clean.creates)
        return {k: self.creates[k] - clean.creates[k] for k in sorted(keys)
                if self.creates[k] != clean.creates[k]}


def made(calls: list[dict[str, Any]], writes: list[dict[str, Any]],
         names: dict[str, str]) -> Made:
    result = Made()
    objects: collections.Counter[str] = collections.Counter()
    for c in calls:
        if c["status"] >= 400 or c["fault"] or not is_mutation(c["action"]):
            continue
        key = f"{c['service']}:{c['action']}"
        if c["action"].startswith(CREATE_PREFIXES) and not c["action"].endswith("Tags"):
            result.creates[key] += 1
        else:
            result.other[key] += 1
    for w in writes:
        if w["created"]:
            obj = f"{w['resource']} {w['namespace'] or '-'}/{w['name']}"
            result.creates[f"k8s {_generic(obj, names)}"] += 1
            objects[f"{w['cluster']} {obj}"] += 1
    result.twice = sorted(k for k, n in objects.items() if n > 1)
    return result


def _generic(text: str, names: dict[str, str]) -> str:
    """`text` with the run's own names (longest first) replaced by their roles."""
    for role, name in sorted(names.items(), key=lambda kv: -len(kv[1])):
        text = text.replace(name, "{" + role + "}")
    return text
