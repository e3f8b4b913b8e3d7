"""The fault campaign's figures, printed at the end of a run that ran it.

The hook lives in the root conftest (tests/conftest.py calls `terminal_summary`): under xdist
the controlling process loads only the initial conftests, never tests/faults/conftest.py, so
a hook there printed nothing in CI's `-n 2` run. Each test keeps its runs' figures on its
report (tests/faults/conftest.py `record`), which xdist carries back to the controller.
"""

from __future__ import annotations

import collections
import json
from typing import Any

from tasks.kinds import KINDS
from tests.faults.campaign import Fault

FIGURES = "fault_campaign"
"""The user_properties name of a run's figures."""


def terminal_summary(terminalreporter: Any) -> None:
    runs = [json.loads(value) for reports in terminalreporter.stats.values()
            for report in reports if getattr(report, "when", None) == "call"
            for name, value in getattr(report, "user_properties", ()) if name == FIGURES]
    if runs:
        for line in summary(runs):
            terminalreporter.write_line(line)


def summary(runs: list[dict[str, Any]]) -> list[str]:
    """The campaign's figures: per kind and fault the steps struck of the steps run, runs
    finished, creates beyond the clean run's; then the totals."""
    table: dict[tuple[str, str], dict[str, Any]] = collections.defaultdict(
        lambda: {"steps": set(), "struck": set(), "runs": 0, "finished": 0, "extra": 0,
                 "unstrikable": set(), "seconds": 0.0})
    for run in runs:
        row = table[(run["kind"], run["fault"])]
        row["steps"].update(run["steps"])
        row["struck"].update(run["struck"])
        row["unstrikable"].update(run["unstrikable"])
        row["runs"] += 1
        row["finished"] += run["finished"]
        row["extra"] += sum(abs(n) for n in run["extra"].values()) + len(run["twice"])
        row["seconds"] += run.get("seconds", 0.0)
    kinds = sorted({k for k, _ in table})
    faults = [f.value for f in Fault]
    per_step = [f for f in faults if f != Fault.WEB]
    lines = ["", "fault campaign: kind, its steps, then per fault the steps struck of those run "
             f"({', '.join(per_step)}) or the operations struck ({Fault.WEB.value}), with (runs "
             "finished/runs, creates beyond the clean run's)"]
    for kind in kinds:
        steps = set().union(*(table[(kind, f)]["steps"] for f in faults if (kind, f) in table))
        cells = []
        for fault in faults:
            row = table.get((kind, fault))
            struck = (f"{row['runs']} ops" if fault == Fault.WEB else
                      f"{len(row['struck'])}/{len(row['steps'])}") if row else ""
            cells.append("-" if row is None else
                         f"{struck} ({row['finished']}/{row['runs']}, {row['extra']})")
        lines.append(f"  {kind:28} {len(steps):3}  " + "  ".join(f"{c:>16}" for c in cells))
    tried = sum(len(r["struck"]) for (_, f), r in table.items() if f in per_step)
    total = sum(len(r["steps"]) for (_, f), r in table.items() if f in per_step)
    web = [r for (_, f), r in table.items() if f == Fault.WEB]
    runs_all = sum(r["runs"] for r in table.values())
    lines.append(f"  {len(kinds)} kinds: {tried} of {total} (kind, step, fault) struck by "
                 f"{len(per_step)} faults at every step; {sum(r['runs'] for r in web)} "
                 f"operations of {len(web)} kinds struck by {Fault.WEB.value}; "
                 f"{sum(r['finished'] for r in table.values())} of {runs_all} faulted runs "
                 f"finished; {sum(r['extra'] for r in table.values())} extra creates")
    restarts = sum(sum(r["struck"].values()) for r in runs if r["fault"] == Fault.REDIS)
    lines.append(f"  {restarts} Redis restarts, "
                 f"{sum(len(r['lost']) for r in runs)} records lost across them")
    lines.append("  seconds of faulted runs per fault: " + ", ".join(
        f"{f} {sum(r['seconds'] for (_, g), r in table.items() if g == f):.0f}"
        for f in faults))
    waits = [w for run in runs for w in run.get("waits_missed", ())]
    if waits:
        lines.append(f"  polls while waiting that the clean run made and a struck run did not "
                     f"(its wait ended at once), not struck: {len(waits)}")
    unstrikable = sorted({f"{k}:{s}" for (k, _), r in table.items() for s in r["unstrikable"]})
    if unstrikable:
        lines.append(f"  steps the sandbox sees no call of: {', '.join(unstrikable)}")
    unselected = []
    for kind in kinds:
        ran = set().union(*(r["steps"] for (k, _), r in table.items() if k == kind))
        left = [s.name for s in KINDS[kind].steps if s.name not in ran] if kind in KINDS else []
        if left:
            more = f" and {len(left) - 3} more" if len(left) > 3 else ""
            unselected.append(f"{kind}: {', '.join(left[:3])}{more}")
    if unselected:
        lines.append("  steps a kind declares that no operation of the campaign selected: "
                     + "; ".join(unselected))
    return lines
