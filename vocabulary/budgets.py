"""A cluster's monthly budget: where it warns, and what a budget's read says of it.

A budget counts what the cluster has cost since 00:00 UTC on the first of the month (AWS's
monthly bill starts there), the same lower bound the cost read gives (app/readmodels/cost.py).
"""

from __future__ import annotations

WARN_AT: tuple[float, ...] = (0.8, 1.0)
"""Fractions of the budget at which a warning is raised, once each per month."""

UNSET = "unset"
UNDER = "under"
WARNING = "warning"
EXCEEDED = "exceeded"
BUDGET_STATES = (UNSET, UNDER, WARNING, EXCEEDED)
"""unset: no budget; under: below the first warning; warning: at or past it; exceeded: at
or past the whole budget."""

MAX_MONTHLY_USD = 100_000_000.0
MIN_MONTHLY_USD = 0.01


def state_of(fraction: float | None) -> str:
    """The budget's state at this fraction spent (None: no budget)."""
    if fraction is None:
        return UNSET
    if fraction >= WARN_AT[-1]:
        return EXCEEDED
    if fraction >= WARN_AT[0]:
        return WARNING
    return UNDER
