"""cloud/addons.py: the dependency data, overrides, plan, apply (in-memory EKS + the TLS fake
API server), and the shipped manifests validated strictly against Kubernetes' schemas."""

from __future__ import annotations

import copy

import kubernetes_validate
import pytest
import yaml

from cloud import addons, kube
from tests.cloud.test_eks import FakeEks
from tests.cloud.test_kube import FakeKube

REGION = "us-west-2"
K8S_VERSION = "1.33"


def names(deps) -> list[str]:
    return [d.name for d in deps]


def by_name(name: str) -> addons.Dependency:
    return next(d for d in addons.catalog() if d.name == name)


@pytest.fixture
def fake_kube():
    server = FakeKube()
    yield server
    server.stop()


@pytest.fixture
def api(fake_kube):
    client = fake_kube.client()
    yield client
    client.close()


# ---------------------------------------------------------------------------------------
# the data
# ---------------------------------------------------------------------------------------


def test_dependency_data_loads_and_is_ordered():
    catalog = addons.catalog()
    assert len({d.name for d in catalog}) == len(catalog)
    position = {d.name: i for i, d in enumerate(catalog)}
    for dep in catalog:
        assert dep.version, dep.name
        assert dep.feature in addons.features(), dep.name
        for required in dep.requires:
            assert position[required] < position[dep.name]
        if dep.kind == addons.MANIFESTS:
            assert dep.manifests
    # the default set: EKS add-ons HyperPod needs, plus HyperPod's required components
    assert names(addons.desired()) == [
        "vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent",
        "aws-mountpoint-s3-csi-driver", "cert-manager", "hyperpod-namespace",
        "hyperpod-health-monitoring-agent", "hyperpod-deep-health-check",
        "hyperpod-job-auto-restart", "hyperpod-patching", "nvidia-device-plugin",
        "efa-device-plugin"]
    assert by_name("vpc-cni").min_version == "v1.18.3"
    assert by_name("cert-manager").version == "v1.18.2-eksbuild.2"
    off = [d.name for d in catalog if not d.enabled]
    assert "amazon-sagemaker-hyperpod-training-operator" in off
    assert "amazon-sagemaker-hyperpod-inference" in off


def test_bad_data_is_refused(tmp_path):
    data = yaml.safe_load(addons.DATA_FILE.read_text())
    broken = copy.deepcopy(data)
    broken["dependencies"][0]["requires"] = ["cert-manager"]  # listed later
    path = tmp_path / "deps.yaml"
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(addons.DependencyError, match="must be listed before"):
        addons._load(str(path))
    broken = copy.deepcopy(data)
    broken["dependencies"][0]["feature"] = "nope"
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(addons.DependencyError, match="unknown feature"):
        addons._load(str(path))


def test_overrides_turn_features_and_entries_on_and_off():
    wanted = names(addons.desired({"device-plugins": False, "training-operator": True}))
    assert "nvidia-device-plugin" not in wanted and "efa-device-plugin" not in wanted
    assert "amazon-sagemaker-hyperpod-training-operator" in wanted
    # a dependency's own key wins over its feature's
    wanted = names(addons.desired({"device-plugins": False, "efa-device-plugin": True}))
    assert "efa-device-plugin" in wanted and "nvidia-device-plugin" not in wanted
    with pytest.raises(addons.DependencyError, match="unknown"):
        addons.desired({"trainin-operator": True})
    with pytest.raises(addons.DependencyError, match="turned off"):
        addons.desired({"training-operator": True, "cert-manager": False})


def test_feature_overrides_round_trip_through_cluster_tags():
    tags = {**addons.feature_tag("device-plugins", False),
            **addons.feature_tag("training-operator", True),
            "hypd:feature:retired-feature": "off", "hypd:cluster": "lab"}
    assert tags["hypd:feature:device-plugins"] == "off"
    assert addons.overrides_from_tags(tags) == {"device-plugins": False,
                                                "training-operator": True}
    with pytest.raises(addons.DependencyError):
        addons.feature_tag("nope", True)


# ---------------------------------------------------------------------------------------
# plan
# ---------------------------------------------------------------------------------------


def test_plan_installs_everything_on_a_bare_cluster():
    actions = addons.plan(addons.desired(), {})
    assert [a.dependency.name for a in actions] == names(addons.desired())
    kinds = {a.dependency.name: a.kind for a in actions}
    assert kinds["vpc-cni"] == addons.INSTALL_ADDON
    assert kinds["hyperpod-namespace"] == addons.APPLY_MANIFESTS


def test_plan_installs_only_what_is_missing_and_never_reinstalls():
    wanted = addons.desired()
    present = {
        "vpc-cni": {"kind": "addon", "status": "ACTIVE", "version": "v1.20.4-eksbuild.2"},
        "coredns": {"kind": "addon", "status": "DEGRADED", "version": "v1.11.4-eksbuild.2"},
        "cert-manager": {"kind": "addon", "status": "ACTIVE", "version": "v1.17.0-eksbuild.1"},
        "hyperpod-namespace": {"kind": "manifests", "objects": 1, "missing": []},
        "hyperpod-health-monitoring-agent": {"kind": "manifests", "objects": 3,
                                             "missing": ["DaemonSet/health-monitoring-agent"]},
    }
    actions = addons.plan(wanted, present)
    planned = {a.dependency.name: a for a in actions}
    # present ones are not touched, whatever their version or status (DEGRADED before nodes)
    assert "vpc-cni" not in planned and "coredns" not in planned
    assert "cert-manager" not in planned  # another version the user chose: kept
    assert "hyperpod-namespace" not in planned
    assert planned["hyperpod-health-monitoring-agent"].kind == addons.APPLY_MANIFESTS
    assert "DaemonSet/health-monitoring-agent" in planned[
        "hyperpod-health-monitoring-agent"].reason
    assert planned["kube-proxy"].kind == addons.INSTALL_ADDON


def test_plan_respects_disabled_entries():
    overrides = {"device-plugins": False, "storage-s3": False}
    actions = addons.plan(addons.desired(overrides), {})
    planned = [a.dependency.name for a in actions]
    assert "nvidia-device-plugin" not in planned
    assert "aws-mountpoint-s3-csi-driver" not in planned
    # a disabled entry slipped into the list is still skipped
    resolved = addons.resolve(overrides)
    assert "efa-device-plugin" not in [a.dependency.name for a in addons.plan(resolved, {})]


def test_plan_upgrades_below_minimum_and_repairs_failed_addons():
    present = {"vpc-cni": {"kind": "addon", "status": "ACTIVE",
                           "version": "v1.16.0-eksbuild.1"},
               "kube-proxy": {"kind": "addon", "status": "CREATE_FAILED", "version": "v1"}}
    planned = {a.dependency.name: a for a in addons.plan(addons.desired(), present)}
    assert planned["vpc-cni"].kind == addons.UPDATE_ADDON
    assert "below the required v1.18.3" in planned["vpc-cni"].reason
    assert planned["kube-proxy"].kind == addons.UPDATE_ADDON
    assert addons.below_minimum("v1.18.2-eksbuild.1", "v1.18.3")
    assert not addons.below_minimum("v1.18.3-eksbuild.1", "v1.18.3")
    assert not addons.below_minimum("v1.20.0", None)


def test_removal_plan_removes_only_what_is_turned_off_and_hypds():
    resolved = addons.resolve({"device-plugins": False, "cert-manager": False})
    present = {"nvidia-device-plugin": {"kind": "manifests", "objects": 1, "missing": []},
               "cert-manager": {"kind": "addon", "status": "ACTIVE", "managed": False},
               "vpc-cni": {"kind": "addon", "status": "ACTIVE", "managed": True}}
    actions = addons.removal_plan(resolved, present)
    assert [(a.kind, a.dependency.name) for a in actions] == [
        (addons.DELETE_MANIFESTS, "nvidia-device-plugin")]


# ---------------------------------------------------------------------------------------
# manifests
# ---------------------------------------------------------------------------------------


def manifest_deps() -> list[addons.Dependency]:
    return [d for d in addons.catalog() if d.kind == addons.MANIFESTS]


def test_rendered_manifests_carry_labels_versions_and_regional_images():
    dep = by_name("hyperpod-health-monitoring-agent")
    objects = addons.render(dep, "eu-west-1")
    for obj in objects:
        meta = obj["metadata"]
        assert meta["labels"]["app.kubernetes.io/managed-by"] == "hypd"
        assert meta["labels"]["hypd/dependency"] == dep.name
        assert meta["annotations"]["hypd/dependency-version"] == dep.version
    images = [c["image"] for o in objects if o["kind"] == "DaemonSet"
              for c in o["spec"]["template"]["spec"]["containers"]]
    assert images == 2 * ["533267293120.dkr.ecr.eu-west-1.amazonaws.com/"
                          "hyperpod-health-monitoring-agent:1.0.1892.0_1.0.424.0"]
    with pytest.raises(addons.DependencyError, match="not published in af-south-1"):
        addons.render(dep, "af-south-1")
    for other in manifest_deps():
        for obj in addons.render(other, REGION):
            for container in addons._containers(obj):
                assert not container["image"].startswith(addons.IMAGE_PREFIX)
    # the shipped files themselves are never modified by rendering
    assert addons._manifest_file("health-monitoring-agent.yaml")[3]["spec"]["template"][
        "spec"]["containers"][0]["image"] == "hypd-image:health-monitoring-agent"


def test_hyperpod_namespace_and_bindings_are_what_hyperpod_expects():
    namespace = addons.render(by_name("hyperpod-namespace"), REGION)[0]
    assert namespace["kind"] == "Namespace"
    assert namespace["metadata"]["name"] == "aws-hyperpod"
    for dep in ("hyperpod-job-auto-restart", "hyperpod-patching"):
        binding = next(o for o in addons.render(by_name(dep), REGION)
                       if o["kind"] == "ClusterRoleBinding")
        assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io",
                                        "kind": "User", "name": "hyperpod-service-linked-role"}]
    for obj in (o for d in manifest_deps() for o in addons.render(d, REGION)):
        if obj["kind"] in ("ServiceAccount", "DaemonSet"):
            assert obj["metadata"]["namespace"] in ("aws-hyperpod", "kube-system")


@pytest.mark.parametrize("dep", manifest_deps(), ids=lambda d: d.name)
def test_shipped_manifests_validate_strictly(dep):
    for obj in addons.render(dep, REGION):
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_strict_validation_catches_a_misspelt_field():
    obj = addons.render(by_name("nvidia-device-plugin"), REGION)[0]
    obj["spec"]["template"]["spec"]["tolerations"][0]["efect"] = "NoSchedule"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


# ---------------------------------------------------------------------------------------
# installed / apply / settle
# ---------------------------------------------------------------------------------------


def test_apply_installs_then_a_rerun_plans_nothing(api):
    eks = FakeEks()
    wanted = addons.desired()
    actions = addons.plan(wanted, addons.installed(eks, api, "lab"))
    assert len(actions) == len(wanted)
    done = [addons.apply(a, eks, api, "lab", REGION, roles={"s3-csi": "arn:aws:iam::1:role/s3"},
                         client_token=f"tok-{a.dependency.name}") for a in actions]
    created = {kw["addonName"]: kw for kw in eks.mutations("create_addon")}
    assert set(created) == {"vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent",
                            "aws-mountpoint-s3-csi-driver", "cert-manager"}
    assert created["vpc-cni"]["resolveConflicts"] == "OVERWRITE"
    assert "addonVersion" not in created["vpc-cni"]  # EKS's default for the cluster version
    assert created["cert-manager"]["addonVersion"] == "v1.18.2-eksbuild.2"
    assert created["aws-mountpoint-s3-csi-driver"]["serviceAccountRoleArn"] == \
        "arn:aws:iam::1:role/s3"
    assert created["coredns"]["clientRequestToken"] == "tok-coredns"
    assert created["coredns"]["tags"]["hypd:cluster"] == "lab"
    applied = next(d for d in done if d["name"] == "hyperpod-health-monitoring-agent")
    assert "DaemonSet/health-monitoring-agent" in applied["objects"]
    daemonset = kube.get_object(api, "apps/v1", "DaemonSet", "health-monitoring-agent",
                                "aws-hyperpod")
    assert daemonset["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "hypd"

    present = addons.installed(eks, api, "lab")
    assert set(present) == set(names(wanted))
    assert present["hyperpod-health-monitoring-agent"]["version"] == "1.0.1892.0_1.0.424.0"
    assert addons.plan(wanted, present) == []  # a re-run does nothing

    # an object deleted by hand is put back, and only that dependency is re-applied
    kube.delete_object(api, "apps/v1", "DaemonSet", "aws-efa-k8s-device-plugin", "kube-system")
    again = addons.plan(wanted, addons.installed(eks, api, "lab"))
    assert [a.dependency.name for a in again] == ["efa-device-plugin"]


def test_install_adopts_an_existing_addon():
    eks = FakeEks()
    eks.create_addon(clusterName="lab", addonName="coredns")
    action = addons.Action(addons.INSTALL_ADDON, by_name("coredns"))
    result = addons.apply(action, eks, None, "lab", REGION)
    assert result["adopted"] is True
    assert len(eks.mutations("create_addon")) == 1


def test_update_below_minimum_goes_to_the_default_version():
    eks = FakeEks()
    eks.create_addon(clusterName="lab", addonName="vpc-cni", addonVersion="v1.16.0-eksbuild.1")
    (action,) = [a for a in addons.plan(addons.desired(), addons.installed(eks, None, "lab"))
                 if a.dependency.name == "vpc-cni"]
    addons.apply(action, eks, None, "lab", REGION)
    (update,) = eks.mutations("update_addon")
    assert update["addonVersion"] == "v1.20.4-eksbuild.2"
    assert update["resolveConflicts"] == "OVERWRITE"


def test_remove_actions(api):
    eks = FakeEks()
    dep = by_name("nvidia-device-plugin")
    addons.apply(addons.Action(addons.APPLY_MANIFESTS, dep), eks, api, "lab", REGION)
    assert addons.manifest_state(api, dep)["missing"] == []
    result = addons.apply(addons.Action(addons.DELETE_MANIFESTS, dep), eks, api, "lab", REGION)
    assert result["objects"] == ["DaemonSet/nvidia-device-plugin"]
    assert addons.manifest_state(api, dep) is None
    eks.create_addon(clusterName="lab", addonName="cert-manager")
    addons.apply(addons.Action(addons.REMOVE_ADDON, by_name("cert-manager")), eks, None, "lab",
                 REGION)
    addons.apply(addons.Action(addons.REMOVE_ADDON, by_name("cert-manager")), eks, None, "lab",
                 REGION)  # already gone: fine
    assert addons.addon_state(eks, "lab", "cert-manager") is None


def test_addons_settled_accepts_degraded_before_nodes():
    eks = FakeEks()
    for name, status in (("vpc-cni", "ACTIVE"), ("coredns", "DEGRADED"),
                         ("kube-proxy", "CREATING"), ("cert-manager", "CREATE_FAILED")):
        eks.create_addon(clusterName="lab", addonName=name)
        eks.addons[("lab", name)]["status"] = status
    eks.addons[("lab", "cert-manager")]["health"]["issues"] = [
        {"code": "InsufficientNumberOfReplicas", "message": "webhook not ready"}]
    state = addons.addons_settled(eks, "lab", ["vpc-cni", "coredns", "kube-proxy",
                                               "cert-manager", "eks-pod-identity-agent"])
    assert state["settled"] == ["vpc-cni", "coredns"]
    assert state["pending"] == ["kube-proxy"]
    assert state["missing"] == ["eks-pod-identity-agent"]
    assert state["failed"] == ["cert-manager (CREATE_FAILED: InsufficientNumberOfReplicas: "
                               "webhook not ready)"]


def test_features_summary():
    summary = addons.features()
    assert summary["core"]["default"] is True
    assert summary["training-operator"]["default"] is False
    assert summary["device-plugins"]["dependencies"] == ["nvidia-device-plugin",
                                                          "efa-device-plugin"]
    assert "Pod Identity" in summary["pod-identity"]["description"]


