"""The fault campaign (tests/faults/campaign.py) over what runs on a cluster, on one shared
cluster: storage items, an instance group and its nodes' actions, managed features, MLflow,
a model downloaded and removed, inference endpoints, a dev space's whole life, and task
governance's (the scheduler config and a team)."""

from __future__ import annotations

import uuid

import pytest

from tests.app.test_clusters_api import _body, _create
from tests.app.test_endpoints_api import _upload_model
from tests.faults.campaign import Campaign, Fault
from tests.faults.chains import (
    ENDPOINT,
    FEATURE,
    GROUP,
    MLFLOW_CHAIN,
    MODEL,
    SHARED_TYPE,
    SPACE,
    STORAGE,
    TEAM,
)

CHAINS = (STORAGE, GROUP, FEATURE, MLFLOW_CHAIN, MODEL, ENDPOINT, SPACE, TEAM)

# a round of a chain strikes every step of several operations: minutes, not the suite's 300 s
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def shared(campaign: Campaign) -> str:
    """A GPU cluster (two nodes of four GPUs) with the models the endpoints serve."""
    name = f"fw-{uuid.uuid4().hex[:5]}"
    op = _create(campaign.stack, _body(name, instance_type=SHARED_TYPE))
    assert op["status"] == "succeeded", op
    for model in ("llama", "qwen"):
        _upload_model(campaign.stack, name, model)
    campaign.context["cluster"] = name
    return name


@pytest.mark.parametrize(("chain", "fault"), [(c, f) for c in CHAINS for f in Fault],
                         ids=lambda v: getattr(v, "name", v))
def test_every_step_struck_finishes_as_the_clean_run(campaign, shared, record, chain, fault):
    runs = campaign.run(chain, fault)
    record(runs)
    problems = [p for r in runs for p in r.problems()]
    assert not problems, problems
    assert [r.kind for r in runs] == list(chain.kinds)
