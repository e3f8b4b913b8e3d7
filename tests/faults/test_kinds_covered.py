"""The fault campaign covers every operation kind: a kind added to tasks/kinds.py that no
chain runs fails here, in the default suite, before anyone runs the long form."""

from __future__ import annotations

from tasks.kinds import KINDS
from tests.faults import chains, test_campaign_clusters, test_campaign_workloads


def test_every_operation_kind_is_in_a_chain_the_campaign_runs():
    ran = [c for module in (test_campaign_clusters, test_campaign_workloads)
           for c in module.CHAINS]
    assert sorted(c.name for c in ran) == sorted(c.name for c in chains.ALL)
    covered = {kind for chain in ran for kind in chain.kinds}
    assert covered == set(KINDS), {"not in the campaign": sorted(set(KINDS) - covered),
                                   "not a kind": sorted(covered - set(KINDS))}
