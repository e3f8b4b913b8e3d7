"""What moto lacks or gets wrong, answered by the sandbox itself.

A gap module registers handlers by "service:Action":
- `@answers("eks", "CreateAddon")` — the handler answers the call instead of moto
  (`handler(ctx: GapContext) -> Reply`);
- `@rewrites("eks", "DescribeCluster")` — the handler may change moto's answer
  (`handler(ctx: GapContext, reply: Reply) -> Reply`).
Both run inside the layer's one request path, so faults, holds, the call log and the
counters apply to gap answers exactly as to moto's. Every module of this package is imported
by the layer (`load`); each keeps its state on the `LocalAwsApp` it is given (`ctx.app`), never in
module globals, so two local AWS in one process do not share more than moto does.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sandbox.identify import Call
from sandbox.reply import Reply


@dataclass
class GapContext:
    call: Call
    environ: dict[str, Any]
    body: bytes
    app: Any  # sandbox.layer.LocalAwsApp: its clock, transitions, kubes, and per-gap state


Answer = Callable[[GapContext], Reply]
Rewrite = Callable[[GapContext, Reply], Reply]

_ANSWERS: dict[str, Answer] = {}
_REWRITES: dict[str, list[Rewrite]] = {}


def answers(service: str, action: str) -> Callable[[Answer], Answer]:
    def register(fn: Answer) -> Answer:
        _ANSWERS[f"{service}:{action}"] = fn
        return fn

    return register


def rewrites(service: str, action: str) -> Callable[[Rewrite], Rewrite]:
    def register(fn: Rewrite) -> Rewrite:
        _REWRITES.setdefault(f"{service}:{action}", []).append(fn)
        return fn

    return register


def load() -> None:
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


def answer_for(key: str) -> Answer | None:
    return _ANSWERS.get(key)


def rewrites_for(key: str) -> list[Rewrite]:
    return _REWRITES.get(key, [])
