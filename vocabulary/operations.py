"""The statuses of an operation, the phases of its steps, and the status of a cluster's
stage (read from the newest operation that ran it).

Enums with helpers, so "is it finished?" is asked one way only (SkyPilot's
`finished_status()` habit); StrEnum, so a member is equal to the word it stores and the
JSON it is dumped to.
"""

from __future__ import annotations

from enum import StrEnum


class OpStatus(StrEnum):
    """queued → running → succeeded | failed | cancelled."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @classmethod
    def finished(cls) -> frozenset[OpStatus]:
        return frozenset({cls.SUCCEEDED, cls.FAILED, cls.CANCELLED})

    @classmethod
    def active(cls) -> frozenset[OpStatus]:
        return frozenset({cls.QUEUED, cls.RUNNING})

    @classmethod
    def unsuccessful(cls) -> frozenset[OpStatus]:
        """Finished without doing what it was asked: what a read model shows as failed."""
        return frozenset({cls.FAILED, cls.CANCELLED})

    @property
    def is_finished(self) -> bool:
        return self in OpStatus.finished()

    @property
    def is_active(self) -> bool:
        return self in OpStatus.active()


class StepPhase(StrEnum):
    """pending → applying → applied → succeeded | failed | skipped."""

    PENDING = "pending"
    APPLYING = "applying"
    APPLIED = "applied"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"

    @classmethod
    def in_flight(cls) -> frozenset[StepPhase]:
        """Between its persisted start and its verdict: the step is working."""
        return frozenset({cls.APPLYING, cls.APPLIED})

    @property
    def is_done(self) -> bool:
        return self in (StepPhase.SUCCEEDED, StepPhase.SKIPPED)


class StageStatus(StrEnum):
    """A cluster stage's status, from the newest operation that ran the stage."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"
    RUNNING = "running"
    PENDING = "pending"
    NOT_RUN = "not_run"
