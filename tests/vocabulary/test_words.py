"""The shared words: statuses and their helpers, roles and their order, the EFA rule."""

from __future__ import annotations

import pytest

from vocabulary.capacity import (
    EFA,
    EFA_MIN_INTERFACES,
    EFA_MODES,
    EFA_ONLY,
    default_efa_mode,
    efa_interfaces,
    efa_refusal,
)
from vocabulary.operations import OpStatus, StageStatus, StepPhase
from vocabulary.roles import ACCESS_LEVELS, PUBLIC, Role


def test_statuses_split_into_active_and_finished():
    assert OpStatus.active() | OpStatus.finished() == set(OpStatus)
    assert not OpStatus.active() & OpStatus.finished()
    assert OpStatus.unsuccessful() == OpStatus.finished() - {OpStatus.SUCCEEDED}
    assert OpStatus.QUEUED.is_active and OpStatus.CANCELLED.is_finished
    assert OpStatus("failed") == "failed"  # a member is the word it stores


def test_a_step_is_done_only_when_it_succeeded_or_was_skipped():
    assert {p for p in StepPhase if p.is_done} == {StepPhase.SUCCEEDED, StepPhase.SKIPPED}
    assert StepPhase.in_flight() == {StepPhase.APPLYING, StepPhase.APPLIED}
    assert {str(s) for s in StageStatus} >= {"not_run", "running", "skipped"}


def test_an_operator_may_do_what_a_viewer_may_and_not_the_reverse():
    assert Role.OPERATOR.covers(Role.VIEWER) and Role.OPERATOR.covers(PUBLIC)
    assert Role.VIEWER.covers(Role.VIEWER) and Role.VIEWER.covers(PUBLIC)
    assert not Role.VIEWER.covers(Role.OPERATOR)
    assert ACCESS_LEVELS == ("public", "viewer", "operator")
    with pytest.raises(ValueError):
        Role.OPERATOR.covers("admin")


@pytest.mark.parametrize(("supported", "most", "interfaces"), [
    (False, None, 0), (False, 4, 0), (True, None, 1), (True, 0, 1), (True, 1, 1), (True, 32, 32)])
def test_a_type_that_supports_efa_has_at_least_one_interface(supported, most, interfaces):
    assert efa_interfaces(supported, most) == interfaces


def test_the_efa_rule():
    assert set(EFA_MIN_INTERFACES) == set(EFA_MODES)
    assert default_efa_mode(True) == EFA and default_efa_mode(False) is None
    assert efa_refusal(EFA, "ml.g5.8xlarge", 1) is None
    assert efa_refusal(EFA_ONLY, "ml.p5.48xlarge", 32) is None
    assert efa_refusal(EFA, "ml.g4dn.xlarge", 0) == \
        "ml.g4dn.xlarge does not support EFA; leave efa_mode unset"
    assert efa_refusal(EFA_ONLY, "ml.g5.8xlarge", 1) == \
        "efa-only needs an instance type with several EFA interfaces; ml.g5.8xlarge has 1"
