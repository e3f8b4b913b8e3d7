"""The `spaces` feature's access strategies, `hypd-web` and `hypd-web-root` (cloud/manifests/
spaces-access-strategy.yaml), as hypd applies them: valid against the Spaces add-on's real
WorkspaceAccessStrategy CRD (jupyter-k8s's, sandbox/data/crds/) as a closed schema, and the
objects hypd's spaces name (`spec.accessStrategy`: hypd-web for JupyterLab, hypd-web-root
for Code Editor, in jupyter-k8s-system)."""

from __future__ import annotations

import copy

import jsonschema
import pytest

from cloud import addons, dependencies, spaces
from tests.crdkit import validate
from vocabulary import spaces as words

CRD = "workspace.jupyter.org_workspaceaccessstrategies.yaml"
WORKSPACE_CRD = "workspace.jupyter.org_workspaces.yaml"


BASE = "https://spaces.example.com"
CLUSTER = "ml-1"


def _objects() -> list[dict]:
    return addons.render(dependencies.by_name()["spaces-access-strategy"], "us-west-2",
                         values={"spaces_url": BASE, "cluster": CLUSTER})


def _strategies() -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in _objects()
            if o["kind"] == "WorkspaceAccessStrategy"}


def _rendered() -> dict:
    return _strategies()["hypd-web"]


def test_the_home_volumes_class_is_ebs_gp3_bound_where_the_pod_lands():
    [cls] = [o for o in _objects() if o["kind"] == "StorageClass"]
    assert cls["metadata"]["name"] == spaces.STORAGE_CLASS
    assert (cls["provisioner"], cls["parameters"]["type"]) == ("ebs.csi.aws.com", "gp3")
    assert cls["volumeBindingMode"] == "WaitForFirstConsumer"


def test_the_url_base_is_filled_at_install_and_never_left_as_a_placeholder():
    assert _rendered()["spec"]["accessURLTemplate"].startswith(f"{BASE}/s/{CLUSTER}/")
    dep = dependencies.by_name()["spaces-access-strategy"]
    with pytest.raises(dependencies.DependencyError, match="spaces_url"):
        addons.render(dep, "us-west-2", values={"cluster": CLUSTER})
    with pytest.raises(dependencies.DependencyError, match="cluster"):
        addons.render(dep, "us-west-2", values={"spaces_url": BASE})


def test_the_url_and_base_path_are_the_routers_path_to_the_space():
    """The operator renders the URL people open and the base path its idle probe asks under
    (it appends httpGet.path, so no trailing slash); both are the space's base path, the one
    the editor serves under."""
    spec = _rendered()["spec"]

    def rendered(template: str) -> str:  # as the operator fills the Workspace's fields
        return template.replace("{{ .Workspace.Namespace }}", "hyperpod-ns-vision").replace(
            "{{ .Workspace.Name }}", "lab")

    base = words.base_path(CLUSTER, "hyperpod-ns-vision", "lab")
    assert rendered(spec["accessURLTemplate"]) == f"{BASE}{base}"
    assert rendered(spec["applicationBasePathTemplate"]) == base.rstrip("/")
    assert "${" not in spec["accessURLTemplate"] + spec["applicationBasePathTemplate"]


def test_the_access_strategy_is_valid_against_the_real_crd_as_a_closed_schema():
    strategy = _rendered()
    assert (strategy["apiVersion"], strategy["kind"]) == ("workspace.jupyter.org/v1alpha1",
                                                          "WorkspaceAccessStrategy")
    assert (strategy["metadata"]["name"], strategy["metadata"]["namespace"]) == (
        "hypd-web", "jupyter-k8s-system")
    # hypd's labels and the dependency's version, as on every manifest it applies
    assert strategy["metadata"]["labels"]["hypd/dependency"] == "spaces-access-strategy"
    assert strategy["metadata"]["annotations"]["hypd/dependency-version"] == "3"
    validate(strategy, CRD, "v1alpha1")
    # minimal: what the CRD requires, and the URL the controller writes to each space's status
    assert set(strategy["spec"]) == {"displayName", "accessResourceTemplates",
                                     "accessURLTemplate", "applicationBasePathTemplate"}
    assert strategy["spec"]["accessResourceTemplates"] == []
    assert "{{ .Workspace.Name }}" in strategy["spec"]["accessURLTemplate"]


@pytest.mark.parametrize("break_it", [
    lambda s: s["spec"].pop("displayName"),
    lambda s: s["spec"].pop("accessResourceTemplates"),
    lambda s: s["spec"].update(accessUrlTemplate="http://x/"),  # misspelt: closed schema
    lambda s: s["spec"].update(accessResourceTemplates=[{"kind": "Service"}]),
], ids=["no-display-name", "no-templates", "misspelt-field", "incomplete-template"])
def test_the_closed_schema_refuses_a_broken_strategy(break_it):
    strategy = copy.deepcopy(_rendered())
    break_it(strategy)
    with pytest.raises(jsonschema.ValidationError):
        validate(strategy, CRD, "v1alpha1")


def test_a_space_naming_hypd_web_fits_the_workspace_crd():
    """The reference the contract's Workspaces carry is the one the Workspace CRD takes."""
    strategy = _rendered()
    workspace = {"apiVersion": "workspace.jupyter.org/v1alpha1", "kind": "Workspace",
                 "metadata": {"name": "nb", "namespace": "default"},
                 "spec": {"displayName": "nb", "accessStrategy": {
                     "name": strategy["metadata"]["name"],
                     "namespace": strategy["metadata"]["namespace"]}}}
    validate(workspace, WORKSPACE_CRD, "v1alpha1")


def test_each_editor_names_a_strategy_the_feature_installs():
    strategies = _strategies()
    assert set(strategies) == {"hypd-web", "hypd-web-root"}
    for app_type in words.APP_TYPES:
        ref = spaces.access_strategy(app_type)
        assert ref["namespace"] == strategies[ref["name"]]["metadata"]["namespace"]
    assert spaces.access_strategy(words.JUPYTERLAB)["name"] == "hypd-web"
    assert spaces.access_strategy(words.CODE_EDITOR)["name"] == "hypd-web-root"


def test_code_editor_s_strategy_renders_the_same_url_and_no_base_path():
    """Code Editor answers its idle route at the server's root only: with no
    applicationBasePathTemplate the operator probes `/api/idle` itself (and the editor
    still serves under the base path the URL names)."""
    root, web = _strategies()["hypd-web-root"], _rendered()
    validate(root, CRD, "v1alpha1")
    assert root["metadata"]["namespace"] == "jupyter-k8s-system"
    assert root["metadata"]["labels"]["hypd/dependency"] == "spaces-access-strategy"
    assert set(root["spec"]) == {"displayName", "accessResourceTemplates", "accessURLTemplate"}
    assert root["spec"]["accessResourceTemplates"] == []
    assert root["spec"]["accessURLTemplate"] == web["spec"]["accessURLTemplate"]
