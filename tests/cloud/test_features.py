"""cloud/features.py: the explicit diff (`matches`), which groups may be autoscaled, and the
view of a cluster without EKS. Reading the actual state from AWS and the cluster is shown
end to end in tests/app/test_features_api.py."""

from __future__ import annotations

import pytest

from cloud import dependencies, features


def _view(state: str, **extra) -> dict:
    return {"state": state, **extra}


@pytest.mark.parametrize(("state", "wanted", "holds"), [
    ("on", {"enabled": True}, True),
    ("settling", {"enabled": True}, True),
    ("partial", {"enabled": True}, False),
    ("failed", {"enabled": True}, False),
    ("off", {"enabled": False}, True),
    ("partial", {"enabled": False}, False),
    ("on", {"enabled": False}, False),
])
def test_enabled_matches_only_a_finished_state(state, wanted, holds):
    assert features.matches(_view(state), wanted) is holds


def test_options_are_compared_only_when_asked():
    view = _view("on", memory_percent=20, groups=[
        {"name": "workers", "autoscaled": True, "min": 0, "max": 4},
        {"name": "spare", "autoscaled": False, "min": None, "max": None}])
    assert features.matches(view, {"enabled": True})
    assert features.matches(view, {"memory_percent": 20})
    assert not features.matches(view, {"memory_percent": 30})
    assert features.matches(view, {"groups": {"workers": {"min": 0, "max": 4}}})
    assert not features.matches(view, {"groups": {"workers": {"min": 1, "max": 4}}})
    assert features.matches(view, {"groups": {"spare": None}})
    assert not features.matches(view, {"groups": {"workers": None}})
    assert not features.matches(view, {"groups": {"spare": {"min": 0, "max": 1}}})


@pytest.mark.parametrize(("group", "reason"), [
    ({"capacity_type": "on-demand", "deep_health_checks": []}, None),
    ({"capacity_type": None, "deep_health_checks": []}, None),
    ({"capacity_type": "spot", "deep_health_checks": []}, "on-demand groups only"),
    ({"capacity_type": "training-plan", "training_plan_arn": "arn:x",
      "deep_health_checks": []}, "on-demand groups only"),
    ({"capacity_type": "on-demand", "deep_health_checks": ["InstanceStress"]},
     "deep health checks"),
])
def test_only_groups_karpenter_may_scale_are_eligible(group, reason):
    found = features.ineligible(group)
    assert (found is None) if reason is None else reason in found


def test_a_cluster_without_eks_has_every_feature_off():
    view = features.empty()
    assert list(view["features"]) == dependencies.toggles()
    assert {f["state"] for f in view["features"].values()} == {features.OFF}
    assert view["hyperpod_cluster"] is False
    assert features.summary(view)["autoscaling"] == {
        "enabled": False, "state": "off",
        "description": dependencies.feature("autoscaling").description}
