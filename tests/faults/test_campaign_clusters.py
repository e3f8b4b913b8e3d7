"""The fault campaign (tests/faults/campaign.py) over the chains that make their own
network or cluster: a network's create and delete; a cluster's create, stage re-run,
Kubernetes upgrade, software update, first RayJob and delete."""

from __future__ import annotations

import pytest

from tests.faults.campaign import Fault
from tests.faults.chains import CLUSTER, NETWORK

CHAINS = (NETWORK, CLUSTER)

# a round of a chain strikes every step of several operations: minutes, not the suite's 300 s
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


@pytest.mark.parametrize(("chain", "fault"), [(c, f) for c in CHAINS for f in Fault],
                         ids=lambda v: getattr(v, "name", v))
def test_every_step_struck_finishes_as_the_clean_run(campaign, record, chain, fault):
    runs = campaign.run(chain, fault)
    record(runs)
    problems = [p for r in runs for p in r.problems()]
    assert not problems, problems
    assert [r.kind for r in runs] == list(chain.kinds)
