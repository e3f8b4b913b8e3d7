"""sandbox/autoscaler.py: Karpenter's decisions from NodePools, node classes and pods (the
scaling itself, through the stack, is in tests/app/test_features_api.py)."""

from __future__ import annotations

import pytest

from cloud import autoscaling
from sandbox import autoscaler


def _cluster(minimum: int, maximum: int):
    pools = autoscaling.node_pools("workers", "ml.g5.8xlarge",
                                   autoscaling.Bounds(minimum, maximum))
    return pools, [autoscaling.node_class("workers")]


def _pod(name: str, selector: dict | None = None, gpus: int = 0, cpu: str = "1",
         phase: str | None = None, node: str | None = None) -> dict:
    requests = {"cpu": cpu, **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    spec: dict = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if selector:
        spec["nodeSelector"] = selector
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name}, "spec": spec,
            **({"status": {"phase": phase}} if phase else {})}


def test_plans_read_min_and_max_from_the_pools():
    plan = autoscaler.plans(*_cluster(1, 4))["workers"]
    assert (plan.minimum, plan.maximum, plan.consolidate_after_s) == (1, 4, 60.0)
    assert set(plan.pools) == {"hypd-workers", "hypd-workers-min"}
    assert autoscaler.plans(*_cluster(0, 2))["workers"].minimum == 0


def test_only_pods_that_ask_for_the_group_count():
    plan = autoscaler.plans(*_cluster(0, 3))["workers"]
    pods = [
        _pod("by-pool", {"karpenter.sh/nodepool": "hypd-workers"}),
        _pod("by-group", {"sagemaker.amazonaws.com/instance-group-name": "workers"}),
        _pod("by-template-label", {"hypd/instance-group": "workers"}),
        _pod("running-there", node="hyperpod-i-1"),
        _pod("elsewhere", {"karpenter.sh/nodepool": "other"}),
        _pod("no-selector"),
        _pod("mixed", {"karpenter.sh/nodepool": "hypd-workers", "zone": "x"}),
        _pod("done", {"karpenter.sh/nodepool": "hypd-workers"}, phase="Succeeded"),
    ]
    asked = {p["metadata"]["name"] for p in autoscaler.demand(pods, plan, {"hyperpod-i-1"})}
    assert asked == {"by-pool", "by-group", "by-template-label", "running-there"}


def test_pods_are_packed_onto_the_instance_capacity():
    # a g5.8xlarge: 32 vCPUs, 128 GiB, 1 GPU
    gpu_pods = [_pod(f"g{i}", gpus=1) for i in range(3)]
    assert autoscaler.nodes_needed(gpu_pods, 32, 131072, 1, 29) == 3
    cpu_pods = [_pod(f"c{i}", cpu="10") for i in range(5)]
    assert autoscaler.nodes_needed(cpu_pods, 32, 131072, 1, 29) == 2
    assert autoscaler.nodes_needed([], 32, 131072, 1, 29) == 0
    many = [_pod(f"p{i}", cpu="10m") for i in range(30)]
    assert autoscaler.nodes_needed(many, 32, 131072, 1, 29) == 2  # pods per node bound it


@pytest.mark.parametrize(("bounds", "needed", "want"), [
    ((0, 2), 0, 0), ((0, 2), 3, 2), ((0, 2), 1, 1), ((1, 3), 0, 1), ((1, 3), 5, 3),
    ((2, 2), 9, 2)])
def test_desired_stays_between_min_and_max(bounds, needed, want):
    plan = autoscaler.plans(*_cluster(*bounds))["workers"]
    assert autoscaler.desired(plan, needed) == want


def test_durations_and_quantities():
    assert autoscaler.seconds("1h30m") == 5400 and autoscaler.seconds("Never") is None
    assert autoscaler.quantity("500m") == 0.5 and autoscaler.quantity("2Gi") == 2 * 1024 ** 3
