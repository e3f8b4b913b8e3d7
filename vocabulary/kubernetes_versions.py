"""Which Kubernetes versions a cluster may run, and what EKS support each is in on a day.

The table (`CALENDAR`, with its `SOURCES`) holds exactly the minor versions SageMaker
HyperPod documents for EKS, each with the EKS release calendar's two dates: the end of
standard support (from that day the cluster is billed at the extended-support hourly rate,
the Price List's extendedSupport usage type) and the end of extended support (from that day
EKS no longer runs the version: it refuses to create a cluster on it and auto-upgrades the
ones that remain). When HyperPod documents a new version, add it with its calendar dates:
the API's choices and refusals, the plan's cost, the cluster page and the tests read it.

A version is offered while EKS still runs it; past its standard support a cluster costs
more per hour (the plan prices it), past its extended support EKS refuses to create it —
so hypd refuses it first, before a network is made for a cluster that cannot exist.

In the vocabulary (a Python table, no file to parse) because the schemas read it at import,
and the schemas import nothing but the vocabulary.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

SOURCES = {
    "hyperpod": "https://docs.aws.amazon.com/sagemaker/latest/dg/"
                "sagemaker-hyperpod-eks-prerequisites.html",
    "eks_calendar": "https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html",
    "eks_pricing": "https://aws.amazon.com/eks/pricing/",
}
READ_ON = date(2026, 12, 3)
"""The day the sources were last read."""

CALENDAR: dict[str, tuple[date, date]] = {
    # version: (end of standard support, end of extended support)
    "1.28": (date(2024, 11, 26), date(2025, 11, 26)),
    "1.29": (date(2025, 3, 23), date(2026, 3, 23)),
    "1.30": (date(2025, 7, 23), date(2026, 7, 23)),
    "1.31": (date(2025, 11, 26), date(2026, 11, 26)),
    "1.32": (date(2026, 3, 23), date(2027, 3, 23)),
    "1.33": (date(2026, 7, 29), date(2027, 7, 29)),
    "1.34": (date(2026, 12, 2), date(2027, 12, 2)),
}

STANDARD = "standard"
EXTENDED = "extended"
ENDED = "ended"


@dataclass(frozen=True)
class Version:
    name: str
    end_of_standard_support: date
    end_of_extended_support: date

    def support(self, day: date) -> str:
        """standard | extended | ended on `day` (an end date is the first day without)."""
        if day < self.end_of_standard_support:
            return STANDARD
        if day < self.end_of_extended_support:
            return EXTENDED
        return ENDED

    def describe(self, day: date) -> dict[str, Any]:
        """The version's support as the API shows it: the phase and both dates."""
        return {"version": self.name, "support": self.support(day),
                "end_of_standard_support": self.end_of_standard_support.isoformat(),
                "end_of_extended_support": self.end_of_extended_support.isoformat()}


def today() -> date:
    return datetime.now(UTC).date()


@functools.lru_cache(maxsize=1)
def table() -> dict[str, Version]:
    """Every HyperPod-documented version, oldest first."""
    versions = [Version(name, standard, extended)
                for name, (standard, extended) in CALENDAR.items()]
    return {v.name: v for v in sorted(versions, key=lambda v: _key(v.name))}


def sources() -> dict[str, str]:
    return dict(SOURCES)


def get(name: str | None) -> Version | None:
    """The table's row for `name`; None for a version not in it (or no version)."""
    return table().get(name) if name else None


def support_of(name: str | None, day: date | None = None) -> dict[str, Any] | None:
    """`name`'s EKS support on `day` (default today) as the API shows it — standard,
    extended (billed on top of the cluster hour) or ended, with both dates — or None for a
    version not in the table (an imported cluster's older one)."""
    version = get(name)
    return version.describe(day or today()) if version else None


def offered(day: date | None = None) -> tuple[str, ...]:
    """The versions a new cluster (or an upgrade) may take on `day`: EKS still runs them."""
    day = day or today()
    return tuple(v.name for v in table().values() if v.support(day) != ENDED)


def default(day: date | None = None) -> str:
    """The newest offered version: the longest support, the latest features. When the table
    has gone stale and none is offered, its newest — which the API then refuses, saying so
    (`ended_message`), rather than hypd failing to start."""
    return (offered(day) or tuple(table()))[-1]


def ended_message(name: str) -> str | None:
    """Why `name` cannot be created or upgraded to today, or None when it can."""
    version = get(name)
    if version is None or version.support(today()) != ENDED:
        return None
    still = offered()
    return (f"EKS ended support for Kubernetes {name} on "
            f"{version.end_of_extended_support.isoformat()}; "
            + (f"choose one of {', '.join(still)}" if still else
               "no version in vocabulary/kubernetes_versions.py is still supported: add "
               "the versions SageMaker HyperPod documents now"))


def _key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split("."))
