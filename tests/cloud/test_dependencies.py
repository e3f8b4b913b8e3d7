"""cloud/dependencies.py: the dependency graph as data — the base set, the managed
features, their requirements and identities, and what turning one off may release."""

from __future__ import annotations

import copy

import pytest
import yaml

from cloud import dependencies, iam
from schemas.features import FEATURES


def names(deps) -> list[str]:
    return [d.name for d in deps]


def test_the_data_loads_in_install_order():
    catalog = dependencies.catalog()
    assert len({d.name for d in catalog}) == len(catalog)
    position = {d.name: i for i, d in enumerate(catalog)}
    for dep in catalog:
        assert dep.version, dep.name
        assert dep.feature in dependencies.features(), dep.name
        for required in dep.requires:
            assert position[required] < position[dep.name]


def test_the_base_set_is_what_a_cluster_create_installs():
    assert names(dependencies.desired()) == [
        "vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent",
        "aws-mountpoint-s3-csi-driver", "hyperpod-namespace",
        "hyperpod-health-monitoring-agent", "hyperpod-deep-health-check",
        "hyperpod-job-auto-restart", "hyperpod-patching", "nvidia-device-plugin",
        "efa-device-plugin"]
    assert dependencies.by_name()["vpc-cni"].min_version == "v1.18.3"


def test_the_managed_features_are_the_ones_the_api_names():
    assert dependencies.toggles() == list(FEATURES)
    assert "not general EC2 capacity" in dependencies.feature("autoscaling").note


def test_each_consumer_states_its_identity_mechanism():
    by_name = dependencies.by_name()
    mechanisms = {name: by_name[name].identity.mechanism for name in (
        "amazon-sagemaker-hyperpod-training-operator", "amazon-sagemaker-hyperpod-inference",
        "amazon-sagemaker-hyperpod-observability", "tiered-checkpointing-account",
        "managed-karpenter")}
    assert mechanisms == {
        "amazon-sagemaker-hyperpod-training-operator": dependencies.POD_IDENTITY,
        "amazon-sagemaker-hyperpod-inference": dependencies.IRSA,
        "amazon-sagemaker-hyperpod-observability": dependencies.POD_IDENTITY,
        "tiered-checkpointing-account": dependencies.IRSA,
        "managed-karpenter": dependencies.CLUSTER_ROLE}
    assert by_name["managed-karpenter"].identity.shared is True
    assert by_name["tiered-checkpointing-account"].identity.subject == \
        "default/hypd-tiered-checkpointing"
    # every role key has a least-privilege policy in cloud/iam.py
    for dep in dependencies.catalog():
        if dep.identity and dep.identity.mechanism != dependencies.CLUSTER_ROLE:
            assert dep.identity.role in iam.FEATURE_PURPOSES, dep.name


def test_requirements_come_first_and_sharing_is_known():
    assert names(dependencies.requirements("training_operator")) == [
        "eks-pod-identity-agent", "cert-manager"]
    assert names(dependencies.requirements("inference_operator")) == [
        "aws-mountpoint-s3-csi-driver", "cert-manager"]
    assert names(dependencies.requirements("tiered_checkpointing")) == []
    assert dependencies.needed_by("cert-manager") == ["training_operator",
                                                      "inference_operator"]


def test_turning_off_releases_only_what_no_other_enabled_feature_needs():
    # the inference operator still needs cert-manager: it stays
    assert dependencies.releasable("training_operator", ["inference_operator"]) == []
    # nothing else on: cert-manager goes; the Pod Identity agent is the base set's: it stays
    assert names(dependencies.releasable("training_operator", [])) == ["cert-manager"]
    assert names(dependencies.releasable("observability", [])) == []


def _broken(tmp_path, change) -> str:
    data = yaml.safe_load(dependencies.DATA_FILE.read_text())
    broken = copy.deepcopy(data)
    change(broken)
    path = tmp_path / "deps.yaml"
    path.write_text(yaml.safe_dump(broken))
    return str(path)


def _entry(data, name):
    return next(e for e in data["dependencies"] if e["name"] == name)


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["dependencies"][0].update(requires=["cert-manager"]), "must be listed before"),
    (lambda d: d["dependencies"][0].update(feature="nope"), "unknown feature"),
    (lambda d: _entry(d, "hyperpod-namespace").update(requires=["cert-manager"]),
     "base set but requires"),
    (lambda d: _entry(d, "tiered-checkpointing-account")["identity"].update(
        mechanism="pod-identity"), "bound with IRSA"),
    (lambda d: _entry(d, "amazon-sagemaker-hyperpod-inference")["identity"].pop("namespace"),
     "names its namespace"),
    (lambda d: _entry(d, "tiered-storage").update(setting="Nope"), "setting must be"),
])
def test_bad_data_is_refused(tmp_path, change, message):
    with pytest.raises(dependencies.DependencyError, match=message):
        dependencies.load(_broken(tmp_path, change))
