"""The campaign over networks and clusters (tests/faults/campaign.py)."""

from __future__ import annotations

import pytest

from tests.faults.campaign import Fault
from tests.faults.chains import NETWORK

CHAINS = (NETWORK,)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("chain", "fault"), [(c, f) for c in CHAINS for f in Fault],
                         ids=lambda v: getattr(v, "name", v))
def test_every_step_struck_finishes_as_the_clean_run(campaign, record, chain, fault):
    runs = campaign.run(chain, fault)
    record(runs)
    assert [r.kind for r in runs] == list(chain.kinds), [r.figures() for r in runs]
    problems = [p for r in runs for p in r.problems()]
    assert not problems, problems
