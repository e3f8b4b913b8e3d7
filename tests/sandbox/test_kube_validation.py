"""Custom resources checked against their CRD's schema (sandbox/kube/validation.py): the
walker on its own (types, required, enum, bounds, pruning, the Kubernetes extensions), then
through the official client over the local Kubernetes (422 with causes, the warning header,
`fieldValidation=Strict`, status writes; KubeRay's real RayJob CRD, and the real CRDs of the
inference operator and Karpenter the sandbox's add-ons install)."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from cloud import autoscaling, inference, recipes
from cloud.autoscaling import Bounds
from cloud.dependencies import MANIFEST_DIR
from cloud.inference import Autoscaling, Endpoint
from cloud.training import JobSpec
from sandbox.gaps import eks_addons, karpenter
from sandbox.kube import KubeRegistry
from sandbox.kube.access import CLUSTER_ADMIN
from sandbox.kube.catalog import ResourceType
from sandbox.kube.errors import KubeError
from sandbox.kube.validation import IGNORE, STRICT, WARN, admit, field_validation
from tests.sandbox.ekskit import api_client, call, eks_token
from tests.sandbox.test_local_kube import ME, _described, _sts

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["image"],
            "properties": {
                "image": {"type": "string", "minLength": 1},
                "replicas": {"type": "integer", "minimum": 0, "maximum": 10},
                "tier": {"type": "string", "enum": ["small", "large"]},
                "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
                "port": {"x-kubernetes-int-or-string": True,
                         "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "args": {"type": "array", "items": {"type": "string"}, "maxItems": 2,
                         "x-kubernetes-list-type": "set"},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                          "properties": {"level": {"type": "integer"}}},
                "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "properties": {"metadata": {"type": "object"},
                                            "spec": {"type": "object",
                                                     "properties": {"x": {"type": "string"}}}}},
                "closed": {"type": "object"},
                "note": {"type": "string", "nullable": True},
            },
        },
        "status": {
            "type": "object",
            "properties": {"phase": {"type": "string", "enum": ["Running", "Done"]},
                           "since": {"type": "string", "format": "date-time"}},
        },
    },
}
WIDGET = ResourceType(group="example.com", version="v1", plural="widgets", kind="Widget",
                      namespaced=True, storage_version="v1", subresources=frozenset({"status"}),
                      crd="widgets.example.com")


def _widget(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "labels": {"a": "b"}, "someday": 1},
            "spec": {"image": "repo/app:1", **spec}}


def _causes(exc: pytest.ExceptionInfo[KubeError]) -> dict[str, tuple[str, str]]:
    assert exc.value.code == 422 and exc.value.reason == "Invalid"
    return {c["field"]: (c["reason"], c["message"]) for c in exc.value.details["causes"]}


def test_a_wrong_type_is_422_with_the_api_servers_wording():
    with pytest.raises(KubeError) as caught:
        admit(WIDGET, SCHEMA, _widget(replicas="3"))
    assert _causes(caught) == {"spec.replicas": (
        "FieldValueTypeInvalid",
        'Invalid value: "string": spec.replicas in body must be of type integer: "string"')}
    assert caught.value.message == (
        'Widget.example.com "w" is invalid: spec.replicas: Invalid value: "string": '
        'spec.replicas in body must be of type integer: "string"')


def test_a_missing_required_field_an_enum_miss_and_bounds_are_each_a_cause():
    bad = _widget(tier="medium", replicas=11, name="Bad_Name", args=["a", "b", "c"],
                  labels={"k": 1}, port=1.5)
    del bad["spec"]["image"]
    with pytest.raises(KubeError) as caught:
        admit(WIDGET, SCHEMA, bad)
    causes = _causes(caught)
    assert causes["spec.image"] == ("FieldValueRequired", "Required value")
    assert causes["spec.tier"] == ("FieldValueNotSupported",
                                   'Unsupported value: "medium": supported values: "small", '
                                   '"large"')
    assert causes["spec.replicas"][1].endswith("should be less than or equal to 10")
    assert causes["spec.name"][1].endswith("should match '^[a-z]+$'")
    assert causes["spec.args"][0] == "FieldValueTooMany"
    assert causes["spec.labels.k"][0] == "FieldValueTypeInvalid"
    assert causes["spec.port"][0] == "FieldValueTypeInvalid"  # neither integer nor string
    assert caught.value.message.startswith('Widget.example.com "w" is invalid: [')
    with pytest.raises(KubeError) as caught:
        admit(WIDGET, SCHEMA, _widget(args=["a", "a"], image=""))
    assert set(_causes(caught)) == {"spec.args[1]", "spec.image"}


def test_a_valid_object_passes_and_int_or_string_takes_both():
    for port in (8080, "http"):
        obj = _widget(replicas=2, tier="small", name="web", port=port, labels={"k": "v"},
                      args=["a"], note=None)
        assert admit(WIDGET, SCHEMA, copy.deepcopy(obj)) == obj


def test_unknown_fields_are_pruned_with_a_warning_and_refused_under_strict():
    obj = _widget(replics=2, closed={"anything": 1}, template={
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}},
        "spec": {"x": "1", "y": 2}})
    obj["top"] = True
    warnings: list[str] = []
    kept = admit(WIDGET, SCHEMA, copy.deepcopy(obj), mode=WARN, warnings=warnings)
    unknown = ["spec.replics", "spec.closed.anything", "spec.template.spec.y", "top"]
    assert sorted(warnings) == sorted(f'unknown field "{f}"' for f in unknown)
    assert "replics" not in kept["spec"] and "top" not in kept and kept["spec"]["closed"] == {}
    # root and embedded apiVersion/kind/metadata are always kept; ObjectMeta is not pruned
    assert kept["metadata"] == obj["metadata"]
    assert kept["spec"]["template"] == {"apiVersion": "v1", "kind": "Pod",
                                        "metadata": {"name": "p", "labels": {"a": "b"}},
                                        "spec": {"x": "1"}}
    quiet: list[str] = []
    assert admit(WIDGET, SCHEMA, copy.deepcopy(obj), mode=IGNORE, warnings=quiet) == kept
    assert quiet == []
    with pytest.raises(KubeError) as caught:
        admit(WIDGET, SCHEMA, copy.deepcopy(obj), mode=STRICT)
    assert caught.value.code == 400 and caught.value.reason == "BadRequest"
    assert 'Widget in version "v1" cannot be handled as a Widget: strict decoding error: ' \
           'unknown field "spec.replics"' in caught.value.message


def test_preserve_unknown_fields_keeps_them_and_still_checks_what_is_listed():
    kept = admit(WIDGET, SCHEMA, _widget(extra={"free": {"x": [1]}, "level": 2}))
    assert kept["spec"]["extra"] == {"free": {"x": [1]}, "level": 2}
    with pytest.raises(KubeError) as caught:
        admit(WIDGET, SCHEMA, _widget(extra={"free": 1, "level": "high"}))
    assert set(_causes(caught)) == {"spec.extra.level"}
    open_schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    anything = _widget(replicas="x", more={"a": 1})
    assert admit(WIDGET, open_schema, copy.deepcopy(anything)) == anything
    assert admit(WIDGET, None, copy.deepcopy(anything)) == anything


def test_a_null_a_field_may_not_hold_is_dropped():
    kept = admit(WIDGET, SCHEMA, _widget(replicas=None, note=None))
    assert "replicas" not in kept["spec"] and kept["spec"]["note"] is None


def test_a_status_write_checks_the_status_and_a_spec_write_leaves_it_alone():
    obj = {**_widget(), "status": {"phase": "Lost", "since": "yesterday", "extra": 1}}
    with pytest.raises(KubeError) as caught:
        admit(WIDGET, SCHEMA, copy.deepcopy(obj), subresource="status")
    assert set(_causes(caught)) == {"status.phase", "status.since"}
    good = {**_widget(), "status": {"phase": "Done", "since": "2026-12-02T21:00:00Z", "x": 1}}
    warnings: list[str] = []
    kept = admit(WIDGET, SCHEMA, good, subresource="status", warnings=warnings)
    assert kept["status"] == {"phase": "Done", "since": "2026-12-02T21:00:00Z"}
    assert warnings == ['unknown field "status.x"']
    # a main-resource write carries the stored status over: not checked again there
    assert admit(WIDGET, SCHEMA, copy.deepcopy(obj))["status"] == obj["status"]


def test_a_write_is_defaulted_after_pruning_and_before_validation():
    schema = {"type": "object", "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {"type": "object", "required": ["mode"], "properties": {
            "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
            "limits": {"type": "object", "default": {},
                       "properties": {"cpu": {"type": "integer", "default": 2},
                                      "gpu": {"type": "integer"}}},
            "note": {"type": "string", "default": "none"},
            "ports": {"type": "array", "items": {"type": "object", "properties": {
                "port": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}}}},
        }}}}
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
           "spec": {"note": None, "ports": [{"port": 80}], "stray": 1}}
    made = admit(WIDGET, schema, obj)
    # the required `mode` is satisfied by its default; a default's own properties get theirs;
    # a null the field may not hold is dropped, then defaulted; list items are defaulted too
    assert made["spec"] == {"mode": "a", "limits": {"cpu": 2}, "note": "none",
                            "ports": [{"port": 80, "protocol": "TCP"}]}
    assert obj["spec"]["note"] is None  # the request is not changed in place
    kept = admit(WIDGET, schema, {**obj, "spec": {"mode": "b", "limits": {"gpu": 1}}})
    assert kept["spec"] == {"mode": "b", "limits": {"gpu": 1, "cpu": 2}, "note": "none"}


def test_field_validation_defaults_to_warn_and_refuses_other_words():
    assert field_validation(None) == WARN and field_validation("Strict") == STRICT
    with pytest.raises(KubeError) as caught:
        field_validation("strict")
    assert caught.value.code == 400


# --- over HTTP, through the official client ----------------------------------------------


@pytest.fixture(scope="module")
def api() -> Iterator[k8s.ApiClient]:
    kubes = KubeRegistry()
    try:
        local = kubes.ensure("lk-validate")
        kubes.set_access("lk-validate", ME, {CLUSTER_ADMIN: {"type": "cluster"}})
        yield api_client(_described(local), eks_token(_sts(), local.name))
    finally:
        kubes.close()


@pytest.fixture(scope="module")
def group(api: k8s.ApiClient) -> str:
    name = f"g{uuid.uuid4().hex[:6]}.example.com"
    k8s.ApiextensionsV1Api(api).create_custom_resource_definition({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{name}"},
        "spec": {"group": name, "scope": "Namespaced",
                 "names": {"kind": "Widget", "plural": "widgets"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": SCHEMA}}]}})
    return name


def _kept(sent: Any, made: Any, path: str = "") -> list[str]:
    """Asserts every value `sent` is in `made` unchanged; returns the paths `made` adds (the
    CRD's defaults)."""
    if isinstance(sent, dict):
        assert isinstance(made, dict), path
        for key in sent:
            assert key in made, f"{path}.{key} was pruned"
        added = [f"{path}.{k}" for k in made if k not in sent]
        return added + [p for k, v in sent.items() for p in _kept(v, made[k], f"{path}.{k}")]
    if isinstance(sent, list):
        assert isinstance(made, list) and len(made) == len(sent), path
        return [p for i, (a, b) in enumerate(zip(sent, made, strict=True))
                for p in _kept(a, b, f"{path}[{i}]")]
    assert made == sent, path
    return []


def _body(exc: k8s.ApiException) -> dict[str, Any]:
    return json.loads(exc.body)


def test_over_http_a_bad_widget_is_422_and_an_unknown_field_a_warning(api, group):
    custom = k8s.CustomObjectsApi(api)
    bad = {**_widget(replicas="3"), "apiVersion": f"{group}/v1"}
    with pytest.raises(k8s.ApiException) as caught:
        custom.create_namespaced_custom_object(group, "v1", "default", "widgets", bad)
    status = _body(caught.value)
    assert caught.value.status == 422 and status["reason"] == "Invalid"
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.replicas"]
    assert status["message"].startswith(f'Widget.{group} "w" is invalid: spec.replicas: ')

    typo = {**_widget(replics=2), "apiVersion": f"{group}/v1"}
    code, _, headers = call(api, "POST", f"/apis/{group}/v1/namespaces/default/widgets", typo,
                            "application/json")
    assert code == 201
    assert headers.get("Warning") == '299 - "unknown field \\"spec.replics\\""'
    stored = custom.get_namespaced_custom_object(group, "v1", "default", "widgets", "w")
    assert stored["spec"] == {"image": "repo/app:1"}

    with pytest.raises(k8s.ApiException) as caught:
        custom.patch_namespaced_custom_object(group, "v1", "default", "widgets", "w",
                                              {"spec": {"tier": "huge"}})
    assert [c["field"] for c in _body(caught.value)["details"]["causes"]] == ["spec.tier"]
    with pytest.raises(k8s.ApiException) as caught:
        custom.patch_namespaced_custom_object(group, "v1", "default", "widgets", "w",
                                              {"spec": {"replics": 3}}, field_validation="Strict")
    assert caught.value.status == 400 and "strict decoding error" in _body(caught.value)["message"]
    with pytest.raises(k8s.ApiException) as caught:
        custom.patch_namespaced_custom_object_status(group, "v1", "default", "widgets", "w",
                                                     {"status": {"phase": "Lost"}})
    assert [c["field"] for c in _body(caught.value)["details"]["causes"]] == ["status.phase"]
    done = custom.patch_namespaced_custom_object_status(
        group, "v1", "default", "widgets", "w", {"status": {"phase": "Done"}})
    assert done["status"] == {"phase": "Done"}


def test_kuberays_real_crd_takes_the_rayjob_hypd_makes_unchanged(api):
    crd = yaml.load((MANIFEST_DIR / "kuberay-crds" / "ray.io_rayjobs.yaml").read_text(),
                    Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    k8s.ApiextensionsV1Api(api).create_custom_resource_definition(crd)
    spec = JobSpec(name="rl", namespace="default", recipe="verl", image="verlai/verl:latest",
                   command=(), nodes=2, processes_per_node=1, gpus_per_node=1, efa_per_node=0,
                   instance_group="workers", env=(("A", "1"),))
    manifest = recipes.build("verl", spec, {"config": "/s3/rl/ppo.yaml"}).manifest
    custom = k8s.CustomObjectsApi(api)
    made = custom.create_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", manifest)
    # nothing pruned, nothing refused; the API server adds the CRD's defaults
    assert ".submissionMode" in _kept(manifest["spec"], made["spec"])
    assert made["spec"]["submissionMode"] == "K8sJobMode"
    broken = copy.deepcopy(manifest)
    broken["metadata"]["name"] = "rl-2"
    broken["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["replicas"] = "two"
    with pytest.raises(k8s.ApiException) as caught:
        custom.create_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", broken)
    assert [c["field"] for c in _body(caught.value)["details"]["causes"]] == [
        "spec.rayClusterSpec.workerGroupSpecs[0].replicas"]


def test_the_add_ons_real_crds_take_hypds_objects_unchanged_and_refuse_bad_ones(api):
    """The inference operator's and Karpenter's CRDs are upstream's (sandbox/data/crds/),
    put in as the add-ons put them: hypd's InferenceEndpointConfig and NodePools pass as
    they are; a wrong type is refused at its field."""
    inference_addon = eks_addons.BY_NAME["amazon-sagemaker-hyperpod-inference"]
    crds = [c.manifest() for c in inference_addon.crds + karpenter.CRDS]
    files = {c.file for c in inference_addon.crds + karpenter.CRDS} - {None}
    assert len(files) == 4
    ext = k8s.ApiextensionsV1Api(api)
    for crd in crds:
        assert "conversion" not in crd["spec"]
        assert "{{" not in json.dumps(crd["metadata"])
        ext.create_custom_resource_definition(crd)
    custom = k8s.CustomObjectsApi(api)
    group = "inference.sagemaker.aws.amazon.com"
    endpoint = Endpoint(name="managed", kind="managed", model="llama", gpus=4, replicas=2,
                        instance_type="ml.g5.12xlarge", routing="kvaware", kv_cache_l2=True,
                        autoscaling=Autoscaling(min=1, max=4))
    config = inference.endpoint_config(endpoint, "hypd-lab-bucket", "us-west-2")
    made = custom.create_namespaced_custom_object(group, "v1", "default",
                                                  "inferenceendpointconfigs", config)
    assert _kept(config["spec"], made["spec"])  # kept as sent, with the CRD's defaults
    config["metadata"]["name"] = "wrong"
    config["spec"]["replicas"] = "two"
    with pytest.raises(k8s.ApiException) as caught:
        custom.create_namespaced_custom_object(group, "v1", "default",
                                               "inferenceendpointconfigs", config)
    assert [c["field"] for c in _body(caught.value)["details"]["causes"]] == ["spec.replicas"]
    for pool in autoscaling.node_pools("workers", "ml.g5.8xlarge", Bounds(1, 4)):
        made = custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", pool)
        _kept(pool["spec"], made["spec"])
    pool = autoscaling.node_pools("other", "ml.g5.8xlarge", Bounds(0, 2))[0]
    del pool["spec"]["disruption"]["consolidateAfter"]
    with pytest.raises(k8s.ApiException) as caught:
        custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", pool)
    assert [c["field"] for c in _body(caught.value)["details"]["causes"]] == [
        "spec.disruption.consolidateAfter"]
