"""Known failure patterns (NCCL timeouts, EFA errors, NVIDIA Xid errors, out of memory) as
data: `cloud/data/failure_patterns.yaml` is the one table; this module reads it and tells
which pattern a line of text shows."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

TABLE = Path(__file__).parent / "data" / "failure_patterns.yaml"
REMEDIES = ("reboot", "replace", "none")
SEVERITIES = ("error", "warning")


@dataclass(frozen=True)
class FailurePattern:
    id: str
    kinds: tuple[str, ...]
    severity: str
    regex: re.Pattern[str]
    title: str
    meaning: str
    remedy: str
    """The node action that usually clears it once investigated (`none`: the workload's)."""
    examples: tuple[str, ...] = ()
    """Real lines this row must be the first match for (the table's own test)."""


@functools.cache
def patterns(path: Path = TABLE) -> tuple[FailurePattern, ...]:
    """The table, in order (the first pattern a line matches is the one it shows)."""
    rows = yaml.safe_load(path.read_text())["patterns"]
    found = []
    for row in rows:
        if row["remedy"] not in REMEDIES or row["severity"] not in SEVERITIES:
            raise ValueError(f"failure pattern {row['id']}: remedy must be one of {REMEDIES}, "
                             f"severity one of {SEVERITIES}")
        found.append(FailurePattern(row["id"], tuple(row["kinds"]), row["severity"],
                                    re.compile(row["regex"]), row["title"],
                                    " ".join(row["meaning"].split()), row["remedy"],
                                    tuple(row.get("examples") or ())))
    return tuple(found)


def match(line: str, kind: str) -> FailurePattern | None:
    """The first pattern of diagnostic `kind` that `line` shows, or None."""
    return next((p for p in patterns() if kind in p.kinds and p.regex.search(line)), None)
