"""Which Kubernetes versions a cluster may run, and what EKS support each is in on a day.

The table is data (`cloud/data/kubernetes_versions.yaml`, with its sources): the versions
SageMaker HyperPod documents for EKS, each with the EKS release calendar's end of standard
and of extended support. A version is offered while EKS still runs it; past its standard
support a cluster costs more per hour (the plan prices it), past its extended support EKS
refuses to create it — so hypd refuses it first, before a network is made for a cluster
that cannot exist. Light on purpose (no boto3): the schemas read it at import.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import yaml

DATA_FILE = Path(__file__).parent / "data" / "kubernetes_versions.yaml"

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
    with DATA_FILE.open(encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    versions = [Version(str(name), dates["end_of_standard_support"],
                        dates["end_of_extended_support"])
                for name, dates in data["versions"].items()]
    return {v.name: v for v in sorted(versions, key=lambda v: _key(v.name))}


@functools.lru_cache(maxsize=1)
def sources() -> dict[str, str]:
    with DATA_FILE.open(encoding="utf-8") as handle:
        return dict(yaml.safe_load(handle)["sources"])


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
               f"no version in {DATA_FILE.name} is still supported: add the versions "
               "SageMaker HyperPod documents now"))


def _key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split("."))
