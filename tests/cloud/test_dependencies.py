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
    # what the inference add-on checks for before it installs (AWS's troubleshooting guide),
    # each entry's own requirements (the controllers' service accounts) before it
    assert names(dependencies.requirements("inference_operator")) == [
        "aws-mountpoint-s3-csi-driver", "aws-fsx-csi-driver", "metrics-server", "cert-manager",
        "aws-load-balancer-controller-account", "aws-load-balancer-controller",
        "keda-operator-account", "keda"]
    assert names(dependencies.requirements("tiered_checkpointing")) == []
    assert dependencies.needed_by("cert-manager") == ["training_operator",
                                                      "inference_operator", "spaces"]


def test_turning_off_releases_only_what_no_other_enabled_feature_needs():
    # the inference operator still needs cert-manager: it stays
    assert dependencies.releasable("training_operator", ["inference_operator"]) == []
    # nothing else on: cert-manager goes; the Pod Identity agent is the base set's: it stays
    assert names(dependencies.releasable("training_operator", [])) == ["cert-manager"]
    assert names(dependencies.releasable("observability", [])) == []
    # the load balancer controller, KEDA and the FSx driver serve endpoints and volumes too:
    # turning the inference operator off leaves them; what only it needed goes
    assert names(dependencies.releasable("inference_operator", [])) == [
        "cert-manager", "metrics-server"]
    assert names(dependencies.releasable("inference_operator", ["training_operator"])) == [
        "metrics-server"]
    # spaces shares cert-manager with the operators: it stays while either is on
    assert names(dependencies.releasable("spaces", [])) == ["cert-manager"]
    assert names(dependencies.releasable("spaces", ["training_operator"])) == []
    assert names(dependencies.releasable("training_operator", ["spaces"])) == []


def test_spaces_is_the_add_on_its_ebs_driver_and_hypds_access_strategy():
    """What AWS's Spaces permission setup asks (the add-on's execution role and the EBS CSI
    driver's role, each by Pod Identity here), plus the access strategy every space names."""
    assert "spaces" in dependencies.toggles()
    assert names(dependencies.entries("spaces")) == [
        "aws-ebs-csi-driver", "amazon-sagemaker-spaces", "spaces-access-strategy"]
    assert names(dependencies.requirements("spaces")) == ["eks-pod-identity-agent",
                                                          "cert-manager"]
    by_name = dependencies.by_name()
    addon = by_name["amazon-sagemaker-spaces"]
    assert addon.kind == dependencies.ADDON and not addon.enabled
    assert set(addon.requires) == {"eks-pod-identity-agent", "cert-manager",
                                   "aws-ebs-csi-driver"}
    assert (addon.identity.mechanism, addon.identity.role, addon.identity.subject) == (
        dependencies.POD_IDENTITY, iam.PURPOSE_SPACES,
        "jupyter-k8s-system/jupyter-k8s-controller-manager")
    ebs = by_name["aws-ebs-csi-driver"]
    assert (ebs.identity.mechanism, ebs.identity.role, ebs.identity.subject) == (
        dependencies.POD_IDENTITY, iam.PURPOSE_EBS_CSI, "kube-system/ebs-csi-controller-sa")
    assert not ebs.sticky and not ebs.enabled
    strategy = by_name["spaces-access-strategy"]
    assert strategy.kind == dependencies.MANIFESTS
    assert strategy.requires == ("amazon-sagemaker-spaces",)


def test_an_add_ons_configuration_is_filled_in_at_install():
    inference = dependencies.by_name()["amazon-sagemaker-hyperpod-inference"]
    assert inference.identity.tls_bucket
    filled = dependencies.configuration(inference, {
        "role": "arn:aws:iam::1:role/hypd/hypd-c-inference-op",
        "tls_bucket": "hyperpod-tls-hypd-c-0123456789",
        "hyperpod_cluster_arn": "arn:aws:sagemaker:us-west-2:1:cluster/abc"})
    # hypd's own controllers serve the add-on: it must not install a second copy of either
    assert filled == {"executionRoleArn": "arn:aws:iam::1:role/hypd/hypd-c-inference-op",
                      "tlsCertificateS3Bucket": "hyperpod-tls-hypd-c-0123456789",
                      "hyperpodClusterArn": "arn:aws:sagemaker:us-west-2:1:cluster/abc",
                      "alb": {"enabled": False}, "keda": {"enabled": False}}
    with pytest.raises(ValueError, match="needs tls_bucket"):
        dependencies.configuration(inference, {"role": "r", "hyperpod_cluster_arn": "a"})
    assert dependencies.configuration(dependencies.by_name()["cert-manager"], {}) is None


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
    (lambda d: _entry(d, "amazon-sagemaker-hyperpod-inference")["configuration"].update(
        bucket="${bucket}"), "unknown value"),
    (lambda d: _entry(d, "keda").update(configuration={"a": 1}), "only an add-on"),
])
def test_bad_data_is_refused(tmp_path, change, message):
    with pytest.raises(dependencies.DependencyError, match=message):
        dependencies.load(_broken(tmp_path, change))
