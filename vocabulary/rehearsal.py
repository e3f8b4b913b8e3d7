"""What a dry run says of each step of the operation it rehearsed (tasks/engine/rehearsal.py)."""

from __future__ import annotations

from enum import StrEnum


class StepPlan(StrEnum):
    CHANGES = "changes"
    """it would make the calls listed"""
    EXISTS = "exists"
    """what it makes is already there: the operation would adopt it (`found`)"""
    NOTHING = "nothing"
    """it would change nothing"""
    WAITS = "waits"
    """it would wait first (its `error` says for what), then act"""
    DECIDED_AT_RUN_TIME = "decided_at_run_time"
    """it acts on what earlier steps would make; what it does is known only then"""
    FAILS = "fails"
    """the operation would stop here (`error`)"""
    NOT_REACHED = "not_reached"
    """after a step that would fail"""
