"""The fault campaign (tests/faults/campaign.py) over what runs on a cluster, on one shared
cluster: storage items, an instance group and its nodes' actions, managed features, MLflow,
a model download and inference endpoints."""

from __future__ import annotations

import uuid

import pytest

from tests.faults.campaign import Campaign, Fault
from tests.faults.chains import (
    ENDPOINT,
    FEATURE,
    GROUP,
    MLFLOW_CHAIN,
    MODEL,
    SHARED_TYPE,
    STORAGE,
    ZONE,
)

CHAINS = (STORAGE, GROUP, FEATURE, MLFLOW_CHAIN, MODEL, ENDPOINT)

# a round of a chain strikes every step of several operations: minutes, not the suite's 300 s
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def shared(campaign: Campaign) -> str:
    """A GPU cluster (two nodes of four GPUs) with the models the endpoints serve."""
    stack = campaign.stack
    name = f"fw-{uuid.uuid4().hex[:5]}"
    with stack.client() as c:
        reply = c.post("/api/v1/clusters", json={
            "name": name, "availability_zone": ZONE, "instance_type": SHARED_TYPE,
            "instance_count": 2})
    assert reply.status_code == 202, reply.text
    op = stack.wait_operation(reply.json()["operation"]["id"], timeout=300)
    assert op["status"] == "succeeded", op
    s3 = stack.aws("s3")
    bucket = next(b["Name"] for b in s3.list_buckets()["Buckets"]
                  if b["Name"].startswith(f"hypd-{name}-"))
    for model in ("llama", "qwen"):
        s3.put_object(Bucket=bucket, Key=f"models/{model}/config.json", Body=b"{}")
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
