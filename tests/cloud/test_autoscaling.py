"""cloud/autoscaling.py: each group's Karpenter objects, valid against the real NodePool
CRD (Karpenter v1.14, as a closed schema), and the bounds read back from them."""

from __future__ import annotations

import copy

import jsonschema
import pytest

from cloud import autoscaling
from cloud.autoscaling import Bounds
from tests.crdkit import validate

NODEPOOLS = "karpenter.sh_nodepools.yaml"


@pytest.mark.parametrize("bounds", [Bounds(0, 4), Bounds(2, 5), Bounds(3, 3)])
def test_node_pools_fit_the_nodepool_schema(bounds):
    pools = autoscaling.node_pools("workers", "ml.g5.8xlarge", bounds)
    for pool in pools:
        validate(pool, NODEPOOLS, "v1")
        # v1.14 requires it; hypd always sets it
        assert pool["spec"]["disruption"]["consolidateAfter"]
        assert pool["spec"]["template"]["spec"]["nodeClassRef"] == {
            "group": "karpenter.sagemaker.amazonaws.com", "kind": "HyperpodNodeClass",
            "name": "hypd-workers"}
    static = [p for p in pools if "replicas" in p["spec"]]
    # the CRD's CEL rules for static pools: only limits.nodes, no weight
    for pool in static:
        assert set(pool["spec"]["limits"]) == {"nodes"} and "weight" not in pool["spec"]
    assert len(static) == (1 if bounds.minimum else 0)
    assert autoscaling.bounds_of(pools) == {"workers": bounds}


def test_a_misspelt_field_fails_the_closed_schema():
    [pool] = autoscaling.node_pools("workers", "ml.g5.8xlarge", Bounds(0, 2))
    broken = copy.deepcopy(pool)
    broken["spec"]["disruption"]["consolidateAfterr"] = "30s"
    with pytest.raises(jsonschema.ValidationError):
        validate(broken, NODEPOOLS, "v1")
    missing = copy.deepcopy(pool)
    del missing["spec"]["disruption"]["consolidateAfter"]
    with pytest.raises(jsonschema.ValidationError):
        validate(missing, NODEPOOLS, "v1")


def test_node_class_names_only_its_group():
    assert autoscaling.node_class("workers") == {
        "apiVersion": "karpenter.sagemaker.amazonaws.com/v1", "kind": "HyperpodNodeClass",
        "metadata": {"name": "hypd-workers", "labels": {
            "app.kubernetes.io/managed-by": "hypd", "hypd/instance-group": "workers"}},
        "spec": {"instanceGroups": ["workers"]}}


@pytest.mark.parametrize("bounds", [Bounds(3, 2), Bounds(0, 0), Bounds(-1, 2),
                                    Bounds(0, autoscaling.MAX_NODES + 1)])
def test_impossible_bounds_are_refused(bounds):
    with pytest.raises(ValueError):
        autoscaling.node_pools("workers", "ml.g5.8xlarge", bounds)


def test_bounds_ignore_pools_hypd_did_not_make():
    theirs = {"metadata": {"name": "default", "labels": {}}, "spec": {"limits": {"nodes": 9}}}
    ours = autoscaling.node_pools("gpu", "ml.p5.48xlarge", Bounds(1, 2))
    assert autoscaling.bounds_of([theirs, *ours]) == {"gpu": Bounds(1, 2)}
