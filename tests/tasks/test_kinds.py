"""The table of operation kinds is complete: every kind a tasks module declares is listed."""

from __future__ import annotations

import importlib
import pkgutil

import tasks
from tasks.engine.kinds import OperationKind
from tasks.kinds import KINDS


def test_every_declared_kind_is_in_the_table():
    declared = {}
    for info in pkgutil.iter_modules(tasks.__path__):
        module = importlib.import_module(f"tasks.{info.name}")
        for value in vars(module).values():
            if isinstance(value, OperationKind):
                declared[value.name] = value
    assert declared, "no kinds found: the walk is broken"
    assert set(declared) == set(KINDS)
    for name, kind in declared.items():
        assert KINDS[name] is kind, name
