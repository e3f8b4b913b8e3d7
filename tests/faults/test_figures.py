"""The campaign's summary counts what its runs report (tests/faults/figures.py), in the
default suite: the long run's figures are only as good as this arithmetic."""

from __future__ import annotations

from tests.faults.figures import summary


def _run(kind: str, fault: str, steps: list[str], struck: dict[str, int], *,
         finished: bool = True, extra: dict[str, int] | None = None,
         twice: list[str] | None = None, lost: list[str] | None = None) -> dict:
    return {"kind": kind, "fault": fault, "steps": steps, "struck": struck,
            "unstrikable": [], "missed": [], "waits_missed": [], "finished": finished,
            "extra": extra or {}, "twice": twice or [], "lost": lost or [], "other": {},
            "seconds": 2.0}


def test_struck_finished_and_extra_creates_are_counted_per_kind_and_fault():
    runs = [
        _run("network.create", "kill_at_start", ["vpc", "subnets"], {"vpc": 1, "subnets": 1}),
        _run("network.create", "throttle_5xx", ["vpc", "subnets"], {"vpc": 1},
             finished=False, extra={"ec2:CreateVpc": 1}, twice=["vpc-1"]),
        _run("network.create", "redis_restart", ["vpc", "subnets"], {"vpc": 2, "subnets": 1},
             lost=["audit 1-1"]),
        _run("network.create", "web_killed", [], {}),
    ]
    lines = summary(runs)
    row = next(line for line in lines if line.strip().startswith("network.create"))
    assert "2/2 (1/1, 0)" in row  # killed at start: both steps struck, finished, no extra
    assert "1/2 (0/1, 2)" in row  # throttled: one step, not finished, 1 extra + 1 twice
    assert "1 ops (1/1, 0)" in row
    totals = next(line for line in lines if "kinds:" in line)
    assert "5 of 6 (kind, step, fault) struck" in totals
    assert "3 of 4 faulted runs finished; 2 extra creates" in totals
    assert any("3 Redis restarts, 1 records lost" in line for line in lines)
