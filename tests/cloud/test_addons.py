"""cloud/addons.py: plan, apply (in-memory EKS + the TLS fake API server), and the shipped
manifests validated strictly against Kubernetes' schemas. The data itself:
tests/cloud/test_dependencies.py."""

from __future__ import annotations

import base64
import hashlib
import json
import logging

import kubernetes_validate
import pytest
from cryptography import x509

from cloud import addons, dependencies, kube, serving_certs
from cloud.errors import Refusal
from tests import crdkit
from tests.cloud.test_eks import FakeEks
from tests.cloud.test_kube import FakeKube

REGION = "us-west-2"
K8S_VERSION = "1.33"


def names(deps) -> list[str]:
    return [d.name for d in deps]


def by_name(name: str) -> dependencies.Dependency:
    return dependencies.by_name()[name]


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
# plan
# ---------------------------------------------------------------------------------------


def test_plan_installs_everything_on_a_bare_cluster():
    actions = addons.plan(dependencies.desired(), {})
    assert [a.dependency.name for a in actions] == names(dependencies.desired())
    kinds = {a.dependency.name: a.kind for a in actions}
    assert kinds["vpc-cni"] == addons.INSTALL_ADDON
    assert kinds["hyperpod-namespace"] == addons.APPLY_MANIFESTS


def test_plan_installs_only_what_is_missing_and_never_reinstalls():
    wanted = dependencies.desired()
    present = {
        "vpc-cni": {"kind": "addon", "status": "ACTIVE", "version": "v1.20.4-eksbuild.2"},
        "coredns": {"kind": "addon", "status": "DEGRADED", "version": "v1.11.4-eksbuild.2"},
        "eks-pod-identity-agent": {"kind": "addon", "status": "ACTIVE",
                                   "version": "v1.2.0-eksbuild.1"},
        "hyperpod-namespace": {"kind": "manifests", "objects": 1, "missing": []},
        "hyperpod-health-monitoring-agent": {"kind": "manifests", "objects": 3,
                                             "missing": ["DaemonSet/health-monitoring-agent"]},
    }
    actions = addons.plan(wanted, present)
    planned = {a.dependency.name: a for a in actions}
    # present ones are not touched, whatever their version or status (DEGRADED before nodes)
    assert "vpc-cni" not in planned and "coredns" not in planned
    assert "eks-pod-identity-agent" not in planned  # another version the user chose: kept
    assert "hyperpod-namespace" not in planned
    assert planned["hyperpod-health-monitoring-agent"].kind == addons.APPLY_MANIFESTS
    assert "DaemonSet/health-monitoring-agent" in planned[
        "hyperpod-health-monitoring-agent"].reason
    assert planned["kube-proxy"].kind == addons.INSTALL_ADDON


def test_plan_acts_only_on_what_it_is_given():
    # a feature's requirements: cert-manager is not in the base set, but planned when asked
    wanted = dependencies.requirements("training_operator")
    planned = [a.dependency.name for a in addons.plan(wanted, {})]
    assert planned == ["eks-pod-identity-agent", "cert-manager"]
    # entries that are not add-ons or manifests (roles, HyperPod settings) are not the plan's
    assert addons.plan(dependencies.entries("tiered_checkpointing"), {}) == []


def test_plan_upgrades_below_minimum_and_repairs_failed_addons():
    present = {"vpc-cni": {"kind": "addon", "status": "ACTIVE",
                           "version": "v1.16.0-eksbuild.1"},
               "kube-proxy": {"kind": "addon", "status": "CREATE_FAILED", "version": "v1"}}
    planned = {a.dependency.name: a for a in addons.plan(dependencies.desired(), present)}
    assert planned["vpc-cni"].kind == addons.UPDATE_ADDON
    assert "below the required v1.18.3" in planned["vpc-cni"].reason
    assert planned["kube-proxy"].kind == addons.UPDATE_ADDON
    assert addons.below_minimum("v1.18.2-eksbuild.1", "v1.18.3")
    assert not addons.below_minimum("v1.18.3-eksbuild.1", "v1.18.3")
    assert not addons.below_minimum("v1.20.0", None)


def test_removal_plan_removes_only_what_is_present_and_hypds():
    remove = [by_name("nvidia-device-plugin"), by_name("cert-manager"), by_name("vpc-cni"),
              by_name("efa-device-plugin")]
    present = {"nvidia-device-plugin": {"kind": "manifests", "objects": 1, "missing": []},
               "cert-manager": {"kind": "addon", "status": "ACTIVE", "managed": False},
               "vpc-cni": {"kind": "addon", "status": "ACTIVE", "managed": True}}
    actions = addons.removal_plan(remove, present)
    assert [(a.kind, a.dependency.name) for a in actions] == [
        (addons.REMOVE_ADDON, "vpc-cni"), (addons.DELETE_MANIFESTS, "nvidia-device-plugin")]


# ---------------------------------------------------------------------------------------
# manifests
# ---------------------------------------------------------------------------------------


def manifest_deps() -> list[dependencies.Dependency]:
    return [d for d in dependencies.catalog() if d.kind == dependencies.MANIFESTS]


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
    with pytest.raises(dependencies.DependencyError, match="not published in af-south-1"):
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
    hyperpods = [d for d in manifest_deps()
                 if d.feature in ("hyperpod_resiliency", "device_plugins")]
    for obj in (o for d in hyperpods for o in addons.render(d, REGION)):
        if obj["kind"] in ("ServiceAccount", "DaemonSet"):
            assert obj["metadata"]["namespace"] in ("aws-hyperpod", "kube-system")
    # KubeRay (a job's dependency, not HyperPod's) keeps to a namespace of its own
    kuberay = addons.render(by_name("kuberay-operator"), REGION)
    assert {o["metadata"].get("namespace") for o in kuberay
            if o["kind"] in ("ServiceAccount", "Deployment")} == {"kuberay"}


CUSTOM_KINDS = {("workspace.jupyter.org/v1alpha1", "WorkspaceAccessStrategy"):
                "workspace.jupyter.org_workspaceaccessstrategies.yaml"}
"""Kinds an add-on serves whose objects a manifest writes: checked against the upstream CRD
(tests/crdkit.py, closed), since kubernetes-validate knows only Kubernetes' own."""


@pytest.mark.parametrize("dep", manifest_deps(), ids=lambda d: d.name)
def test_shipped_manifests_validate_strictly(dep):
    for obj in addons.render(dep, REGION):
        crd = CUSTOM_KINDS.get((obj["apiVersion"], obj["kind"]))
        if crd is not None:
            crdkit.validate(obj, crd, obj["apiVersion"].rsplit("/", 1)[1])
        else:
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


UPSTREAM_CRDS = {  # dependency: (folder, {file: its git blob upstream}) — SOURCES.md there
    "keda": ("keda-crds", {  # kedacore/keda v2.17.2 config/crd/bases/
        "keda.sh_scaledobjects.yaml": "88ab656f0b815b9c825ce68cf378e44523979c41",
        "keda.sh_scaledjobs.yaml": "9fa25c6729b413d0ee22ef8023088192db69d7ef",
        "keda.sh_triggerauthentications.yaml": "c81f78a4d79ea6080f43a69e00ddfc2bf707f1e6",
        "keda.sh_clustertriggerauthentications.yaml":
            "bbd2e34b920a488f147135273f007fc4358ec066",
        "eventing.keda.sh_cloudeventsources.yaml": "14c1fc9ace475e3e74fb97b6c47f24f5ba76028e",
        "eventing.keda.sh_clustercloudeventsources.yaml":
            "5ba7b0910d55d6f630541b2849529b7ff2d08462"}),
    "aws-load-balancer-controller": ("aws-load-balancer-controller-crds", {
        # kubernetes-sigs/aws-load-balancer-controller v2.13.4 config/crd/bases/
        "elbv2.k8s.aws_targetgroupbindings.yaml": "f5385c977d4cfbe882c92090ad1e227bf3c849bd",
        "elbv2.k8s.aws_ingressclassparams.yaml": "d33ee151aa863837ee6a1c83b1f2e5501eb5806e"}),
    "kuberay-operator": ("kuberay-crds", {  # ray-project/kuberay v1.7.0 config/crd/bases/
        "ray.io_rayjobs.yaml": "c7d3f081af8cf08c256a8c33a0c3b6ea28b816a0",
        "ray.io_rayclusters.yaml": "ff0be58ada3bd457605eff1f258c16df21e61e21",
        # no RayJob uses it, but the operator's RayService controller always starts
        "ray.io_rayservices.yaml": "7ee63d6ddd11237a5649e04b3a8db3c52074c867"}),
}


def _grants(role: dict, group: str, resource: str, verbs: set[str]) -> bool:
    return any((group in rule["apiGroups"] or "*" in rule["apiGroups"])
               and (resource in rule["resources"] or "*" in rule["resources"])
               and (verbs <= set(rule["verbs"]) or "*" in rule["verbs"])
               for rule in role["rules"])


@pytest.mark.parametrize("name", sorted(UPSTREAM_CRDS))
def test_a_controllers_crds_are_upstreams_unchanged_and_it_may_watch_every_kind(name):
    """The CRDs as upstream ships them (the API server holds a resource to its real schema,
    not an open one), applied before the controller, which starts a controller for each
    kind and so must be allowed to list and watch them all."""
    folder, blobs = UPSTREAM_CRDS[name]
    for file, blob in blobs.items():
        data = (dependencies.MANIFEST_DIR / folder / file).read_bytes()
        assert hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == blob, file
    objects = addons.render(by_name(name), REGION)
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    assert objects[:len(crds)] == crds and len(crds) == len(blobs)
    role = _only(objects, "ClusterRole")
    for crd in crds:
        for version in crd["spec"]["versions"]:
            schema = version["schema"]["openAPIV3Schema"]
            assert schema["properties"]["spec"]["type"] == "object"
            assert not schema.get("x-kubernetes-preserve-unknown-fields")
        assert _grants(role, crd["spec"]["group"], crd["spec"]["names"]["plural"],
                       {"list", "watch"}), crd["metadata"]["name"]
    if name == "keda":
        assert _grants(role, "batch", "jobs", {"list", "watch", "create"})  # ScaledJobs'
    if name == "kuberay-operator":  # what its RayCluster and RayJob controllers own
        for resource in ("pods", "services", "secrets", "persistentvolumeclaims"):
            assert _grants(role, "", resource, {"list", "watch", "create"}), resource
        assert _grants(role, "batch", "jobs", {"list", "watch", "create"})


def test_strict_validation_catches_a_misspelt_field():
    obj = addons.render(by_name("nvidia-device-plugin"), REGION)[0]
    obj["spec"]["template"]["spec"]["tolerations"][0]["efect"] = "NoSchedule"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def _only(objects, kind: str) -> dict:
    (found,) = [o for o in objects if o["kind"] == kind]
    return found


def test_the_lb_controller_mounts_its_serving_certificate_and_its_webhook_service_reaches_it():
    """The controller exits without ca.crt/tls.crt/tls.key in its webhook server's directory
    (kubernetes-sigs/aws-load-balancer-controller#1942): the chart's Secret, mount, Service."""
    objects = addons.render(by_name("aws-load-balancer-controller"), REGION, "lab")
    secret, service = _only(objects, "Secret"), _only(objects, "Service")
    deployment = _only(objects, "Deployment")
    for obj in (secret, service, deployment):
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    assert secret["metadata"]["namespace"] == "kube-system"
    assert secret["type"] == "kubernetes.io/tls" and "data" not in secret  # filled once, live
    assert serving_certs.service_of(secret) == service["metadata"]["name"] == \
        "aws-load-balancer-webhook-service"
    pod = deployment["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    (volume,) = [v for v in pod["spec"]["volumes"]
                 if (v.get("secret") or {}).get("secretName") == secret["metadata"]["name"]]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
    assert mount["mountPath"] == "/tmp/k8s-webhook-server/serving-certs"
    assert mount["readOnly"] is True
    # the Service selects the controller's pods and sends 443 to its webhook port, 9443
    assert service["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    (port,) = service["spec"]["ports"]
    assert (port["name"], port["port"]) == ("webhook-server", 443)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports[port["targetPort"]] == 9443
    # no admission webhooks: nothing in the API server calls it, the Service mutator stays off
    assert "--enable-service-mutator-webhook=false" in container["args"]
    assert not [o for o in objects if "WebhookConfiguration" in o["kind"]]


# ---------------------------------------------------------------------------------------
# installed / apply / settle
# ---------------------------------------------------------------------------------------


def test_apply_installs_then_a_rerun_plans_nothing(api):
    eks = FakeEks()
    wanted = dependencies.desired()
    actions = addons.plan(wanted, addons.installed(eks, api, "lab"))
    assert len(actions) == len(wanted)
    done = [addons.apply(a, eks, api, "lab", REGION, client_token=f"tok-{a.dependency.name}")
            for a in actions]
    created = {kw["addonName"]: kw for kw in eks.mutations("create_addon")}
    assert set(created) == {"vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent",
                            "aws-mountpoint-s3-csi-driver"}
    assert created["vpc-cni"]["resolveConflicts"] == "OVERWRITE"
    assert "addonVersion" not in created["vpc-cni"]  # EKS's default for the cluster version
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
    (action,) = [a for a in addons.plan(dependencies.desired(), addons.installed(eks, None, "lab"))
                 if a.dependency.name == "vpc-cni"]
    addons.apply(action, eks, None, "lab", REGION)
    (update,) = eks.mutations("update_addon")
    assert update["addonVersion"] == "v1.20.4-eksbuild.2"
    assert update["resolveConflicts"] == "OVERWRITE"


def test_remove_actions(api, fake_kube):
    eks = FakeEks()
    dep = by_name("nvidia-device-plugin")
    addons.apply(addons.Action(addons.APPLY_MANIFESTS, dep), eks, api, "lab", REGION)
    assert addons.manifest_state(api, dep)["missing"] == []
    # presence is read as metadata only (KubeRay's CRDs are 1.2 MB of JSON)
    assert fake_kube.requests[-1]["method"] == "GET"
    assert fake_kube.requests[-1]["accept"] == kube.METADATA_ONLY
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


def test_an_addon_is_installed_bound_to_its_role_by_its_mechanism():
    eks = FakeEks()
    roles = {"training-op": "arn:aws:iam::1:role/hypd-lab-training-op",
             "inference-op": "arn:aws:iam::1:role/hypd-lab-inference-op"}
    for name in ("amazon-sagemaker-hyperpod-training-operator",
                 "amazon-sagemaker-hyperpod-inference", "cert-manager"):
        addons.apply(addons.Action(addons.INSTALL_ADDON, by_name(name)), eks, None, "lab",
                     REGION, roles=roles, values={
                         "tls_bucket": "hyperpod-tls-hypd-lab-0123456789",
                         "hyperpod_cluster_arn": "arn:aws:sagemaker:us-west-2:1:cluster/x"})
    created = {kw["addonName"]: kw for kw in eks.mutations("create_addon")}
    # Pod Identity: the add-on's own association for its service account
    training = created["amazon-sagemaker-hyperpod-training-operator"]
    assert training["podIdentityAssociations"] == [{
        "serviceAccount": "hp-training-operator-controller-manager",
        "roleArn": roles["training-op"]}]
    assert "serviceAccountRoleArn" not in training
    # IRSA: the role EKS annotates the add-on's service account with
    inference = created["amazon-sagemaker-hyperpod-inference"]
    assert inference["serviceAccountRoleArn"] == roles["inference-op"]
    assert "podIdentityAssociations" not in inference
    # ... configured with its execution role (the same), its TLS bucket and its cluster
    assert json.loads(inference["configurationValues"]) == {
        "executionRoleArn": roles["inference-op"],
        "tlsCertificateS3Bucket": "hyperpod-tls-hypd-lab-0123456789",
        "hyperpodClusterArn": "arn:aws:sagemaker:us-west-2:1:cluster/x",
        "alb": {"enabled": False}, "keda": {"enabled": False}}
    assert "configurationValues" not in training
    # no identity: neither
    assert created["cert-manager"]["addonVersion"] == "v1.18.2-eksbuild.2"
    assert not {"podIdentityAssociations", "serviceAccountRoleArn"} & set(created["cert-manager"])


def test_the_lb_controllers_certificate_secret_is_made_once_and_its_key_never_shown(
        api, fake_kube, caplog):
    caplog.set_level(logging.DEBUG)
    eks, dep = FakeEks(), by_name("aws-load-balancer-controller")
    action = addons.Action(addons.APPLY_MANIFESTS, dep)
    first = addons.apply(action, eks, api, "lab", REGION)
    assert "Secret/aws-load-balancer-tls" in first["objects"] and first["kept"] == []
    secret = kube.get_object(api, "v1", "Secret", "aws-load-balancer-tls", "kube-system")
    assert secret["type"] == "kubernetes.io/tls"
    assert set(secret["data"]) == {"ca.crt", "tls.crt", "tls.key"}
    assert secret["metadata"]["labels"]["hypd/dependency"] == dep.name
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    cert.verify_directly_issued_by(
        x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["ca.crt"])))
    assert "aws-load-balancer-webhook-service.kube-system.svc" in cert.extensions\
        .get_extension_for_class(x509.SubjectAlternativeName).value\
        .get_values_for_type(x509.DNSName)

    # a re-run (the webhook Service deleted by hand: the plan applies the manifests again)
    # puts the Service back and keeps the Secret: no second create, nothing applied over it
    kube.delete_object(api, "v1", "Service", "aws-load-balancer-webhook-service", "kube-system")
    (again,) = addons.plan([dep], addons.installed(eks, api, "lab", [dep]))
    writes = len(fake_kube.requests)
    second = addons.apply(again, eks, api, "lab", REGION)
    assert second["kept"] == ["Secret/aws-load-balancer-tls"]
    assert "Service/aws-load-balancer-webhook-service" in second["objects"]
    assert not [r for r in fake_kube.requests[writes:]
                if r["path"].endswith(("/secrets", "/secrets/aws-load-balancer-tls"))
                and r["method"] != "GET"]
    assert kube.get_object(api, "v1", "Secret", "aws-load-balancer-tls", "kube-system") == secret
    assert addons.plan([dep], addons.installed(eks, api, "lab", [dep])) == []

    key = secret["data"]["tls.key"]
    shown = json.dumps([first, second]) + caplog.text
    assert key not in shown and base64.b64decode(key).decode() not in shown
    assert "PRIVATE KEY" not in shown


def test_a_foreign_secret_without_the_certificate_files_is_refused_not_overwritten(api):
    dep = by_name("aws-load-balancer-controller")
    theirs = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
              "metadata": {"name": "aws-load-balancer-tls", "namespace": "kube-system"},
              "data": {"tls.crt": "eA=="}}
    kube.server_side_apply(api, theirs)
    with pytest.raises(Refusal, match=r"without ca\.crt, tls\.key") as refused:
        addons.apply(addons.Action(addons.APPLY_MANIFESTS, dep), FakeEks(), api, "lab", REGION)
    assert refused.value.code == "precondition_failed"
    kept = kube.get_object(api, "v1", "Secret", "aws-load-balancer-tls", "kube-system")
    assert kept["data"] == {"tls.crt": "eA=="}
