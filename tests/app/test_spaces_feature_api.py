"""The `spaces` managed feature through REST on the full stack: what AWS's Spaces setup asks
(the Spaces add-on with its execution role by Pod Identity, the EBS CSI driver with its own,
cert-manager and the Pod Identity agent) and hypd's access strategies `hypd-web` and
`hypd-web-root`, all there when it is on and gone when it is off — the Workspace kinds served
by the cluster only between the two —, refused off while a space exists (409 naming it, the
dry run listing it, force going ahead), and cert-manager kept while the training operator
still needs it."""

from __future__ import annotations

import uuid

import pytest
from kubernetes import client as k8s

from cloud import dependents, kube, spaces
from tests.app.featurekit import features, get, kube_api, patch, role_names, state, toggle
from tests.app.test_clusters_api import _body, _client, _create

SPACES_ADDON = "amazon-sagemaker-spaces"
EBS_ADDON = "aws-ebs-csi-driver"
WORKSPACE_CRD = "workspaces.workspace.jupyter.org"
CRDS = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")
STRATEGY = ("workspace.jupyter.org/v1alpha1", "WorkspaceAccessStrategy", "hypd-web",
            "jupyter-k8s-system")


@pytest.fixture(scope="module")
def cluster(stack):
    stack.wait_idle()
    name = f"spc-{uuid.uuid4().hex[:5]}"
    op = _create(stack, _body(name))
    assert op["status"] == "succeeded", op
    return name


def _addons(stack, cluster: str) -> set[str]:
    return set(_client(stack, "eks").list_addons(clusterName=cluster)["addons"])


def _association_role(stack, cluster: str, namespace: str, account: str) -> str | None:
    eks = _client(stack, "eks")
    found = eks.list_pod_identity_associations(clusterName=cluster, namespace=namespace,
                                               serviceAccount=account)["associations"]
    if not found:
        return None
    [one] = found
    return eks.describe_pod_identity_association(
        clusterName=cluster, associationId=one["associationId"])["association"]["roleArn"]


def _workspace(name: str, namespace: str = "default") -> dict:
    return {"apiVersion": spaces.API_VERSION, "kind": spaces.KIND,
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"displayName": name, "desiredStatus": "Running",
                     "accessStrategy": {"name": "hypd-web",
                                        "namespace": "jupyter-k8s-system"}}}


def test_spaces_on_installs_what_aws_asks_and_off_removes_all_of_it(stack, cluster):
    stack.wait_idle()
    api = kube_api(stack, cluster)
    roles_before = role_names(stack, cluster)
    view = features(stack, cluster)
    spaces = view["features"]["spaces"]
    assert spaces["state"] == "off"
    assert [r["name"] for r in spaces["requires"]] == ["eks-pod-identity-agent",
                                                       "cert-manager"]
    assert spaces["identity"]["mechanism"] == "pod-identity"
    assert spaces["identity"]["service_account"] == \
        "jupyter-k8s-system/jupyter-k8s-controller-manager"
    assert "spaces" in view["dependencies"]["cert-manager"]["needed_by"]
    # before the add-on the cluster does not serve the Workspace kinds
    assert get(api, *CRDS, WORKSPACE_CRD) is None

    op = toggle(stack, cluster, {"spaces": {"enabled": True}})
    assert op["status"] == "succeeded", op
    assert [s["name"] for s in op["steps"]] == ["requirements", "identity", "enable"]

    eks = _client(stack, "eks")
    assert {SPACES_ADDON, EBS_ADDON, "cert-manager", "eks-pod-identity-agent"} <= _addons(
        stack, cluster)
    for addon in (SPACES_ADDON, EBS_ADDON):
        found = eks.describe_addon(clusterName=cluster, addonName=addon)["addon"]
        assert found["status"] == "ACTIVE" and found["health"]["issues"] == [], found
        assert found["tags"]["hypd:cluster"] == cluster
    # each controller gets its role by EKS Pod Identity, made with its add-on
    spaces_role = f"hypd-{cluster}-spaces"
    ebs_role = f"hypd-{cluster}-ebs-csi"
    assert _association_role(stack, cluster, "jupyter-k8s-system",
                             "jupyter-k8s-controller-manager").endswith(f"/{spaces_role}")
    assert _association_role(stack, cluster, "kube-system",
                             "ebs-csi-controller-sa").endswith(f"/{ebs_role}")
    iam = _client(stack, "iam")
    for role, policy in ((spaces_role, "hypd-spaces"), (ebs_role, "hypd-ebs-csi")):
        found = iam.get_role(RoleName=role)["Role"]
        [trust] = found["AssumeRolePolicyDocument"]["Statement"]
        assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
        assert iam.get_role_policy(RoleName=role, PolicyName=policy)["PolicyDocument"]
    # hypd's access strategy, and the kinds the add-on brings, served by the cluster
    strategy = get(api, *STRATEGY)
    assert strategy is not None
    assert strategy["spec"]["displayName"] and strategy["spec"]["accessResourceTemplates"] == []
    assert strategy["metadata"]["labels"]["hypd/dependency"] == "spaces-access-strategy"
    # its paths name hypd's cluster, as the spaces router's do (filled at install)
    assert strategy["spec"]["applicationBasePathTemplate"] == (
        f"/s/{cluster}/{{{{ .Workspace.Namespace }}}}/{{{{ .Workspace.Name }}}}")
    assert strategy["spec"]["accessURLTemplate"].endswith(
        strategy["spec"]["applicationBasePathTemplate"] + "/")
    # Code Editor's: the same URL, no base path for the idle probe (its route is at the root)
    root = get(api, *STRATEGY[:2], "hypd-web-root", STRATEGY[3])
    assert root is not None and "applicationBasePathTemplate" not in root["spec"]
    assert root["spec"]["accessURLTemplate"] == strategy["spec"]["accessURLTemplate"]
    assert get(api, *CRDS, WORKSPACE_CRD) is not None
    assert dependents.workspaces(api) == []
    view = features(stack, cluster)["features"]["spaces"]
    assert view["state"] == "on" and view["enabled"] is True
    assert all(p["ok"] for p in view["parts"]), view["parts"]
    assert {(p["kind"], p["name"]) for p in view["parts"]} >= {
        ("addon", SPACES_ADDON), ("addon", EBS_ADDON), ("iam_role", spaces_role),
        ("iam_role", ebs_role), ("manifests", "spaces-access-strategy"),
        ("pod_identity_association", "jupyter-k8s-system/jupyter-k8s-controller-manager"),
        ("pod_identity_association", "kube-system/ebs-csi-controller-sa")}
    assert view["identity"]["role"] == spaces_role
    again = patch(stack, cluster, {"spaces": {"enabled": True}})
    assert again.status_code == 200 and again.json()["changed"] is False

    # a space (anyone's, in any namespace; this one made by hand, not through hypd):
    # turning the feature off is refused, naming it
    kube.create_object(api, {"apiVersion": "v1", "kind": "Namespace",
                             "metadata": {"name": "team-a"}})
    k8s.CustomObjectsApi(api).create_namespaced_custom_object(
        "workspace.jupyter.org", "v1alpha1", "team-a", "workspaces",
        _workspace("alice-notebook", "team-a"))
    off = {"spaces": {"enabled": False}}
    refused = patch(stack, cluster, off)
    assert refused.status_code == 409, refused.text
    error = refused.json()["error"]
    assert error["code"] == "in_use"
    assert error["details"]["dependents"] == [
        {"kind": "space", "name": "alice-notebook", "namespace": "team-a", "cluster": None,
         "why": "a space: its Workspace goes with the Spaces add-on's CRD (not made through "
                "hypd)", "forceable": True}]
    assert "alice-notebook" in error["message"]
    assert state(stack, cluster, "spaces") == "on"  # nothing was changed
    with stack.client("viewer") as c:
        plan = c.patch(f"/api/v1/clusters/{cluster}/features", json=off,
                       params={"dry_run": "true"}).json()
    assert plan["refused"] is True and plan["force_allowed"] is True
    assert plan["dependents"] == error["details"]["dependents"]
    assert {f"iam role {spaces_role}", f"addon {SPACES_ADDON}", f"addon {EBS_ADDON}",
            "manifests spaces-access-strategy"} <= set(plan["removes"]), plan["removes"]
    with stack.client() as c:  # the user accepts that the space goes
        forced = c.patch(f"/api/v1/clusters/{cluster}/features", json=off,
                         params={"force": "true"})
    assert forced.status_code == 202, forced.text
    op = stack.wait_operation(forced.json()["operation"]["id"], 180)
    assert op["status"] == "succeeded", op
    assert [s["name"] for s in op["steps"]] == ["disable", "identity_off", "release"]
    release = next(s for s in op["steps"] if s["name"] == "release")
    assert release["resources"]["removed"] == ["cert-manager"]

    # nothing of it left: add-ons (and so the Workspace kinds), roles, associations, the
    # access strategy; the base set's Pod Identity agent stays
    present = _addons(stack, cluster)
    assert not present & {SPACES_ADDON, EBS_ADDON, "cert-manager"}, present
    assert "eks-pod-identity-agent" in present
    assert role_names(stack, cluster) == roles_before
    assert _association_role(stack, cluster, "jupyter-k8s-system",
                             "jupyter-k8s-controller-manager") is None
    assert _association_role(stack, cluster, "kube-system", "ebs-csi-controller-sa") is None
    assert get(api, *CRDS, WORKSPACE_CRD) is None
    assert get(api, "apiextensions.k8s.io/v1", "CustomResourceDefinition",
               "workspaceaccessstrategies.workspace.jupyter.org") is None
    assert state(stack, cluster, "spaces") == "off"


def test_turning_spaces_off_keeps_cert_manager_while_the_training_operator_needs_it(stack,
                                                                                    cluster):
    stack.wait_idle()
    for feature in ("training_operator", "spaces"):
        op = toggle(stack, cluster, {feature: {"enabled": True}})
        assert op is None or op["status"] == "succeeded", op
    assert "cert-manager" in _addons(stack, cluster)

    op = toggle(stack, cluster, {"spaces": {"enabled": False}})
    assert op["status"] == "succeeded", op
    release = next(s for s in op["steps"] if s["name"] == "release")
    assert release["resources"]["removed"] == []
    assert "cert-manager" in release["resources"]["kept"]
    assert release["resources"]["still_needed_by"] == ["training_operator"]
    present = _addons(stack, cluster)
    assert "cert-manager" in present
    assert not present & {SPACES_ADDON, EBS_ADDON}, present
    assert state(stack, cluster, "training_operator") == "on"

    op = toggle(stack, cluster, {"training_operator": {"enabled": False}})
    assert op["status"] == "succeeded", op
    assert "cert-manager" not in _addons(stack, cluster)
