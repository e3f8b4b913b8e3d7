"""The local Kubernetes behind each EKS cluster, through the official kubernetes client over
TLS with EKS tokens: authentication and access policies, the API-server behaviour the
adapter adds to kmock (stamping, selectors, replace, apply, patches, delete, CRDs, watches,
logs, discovery), and the in-process methods the sandbox's simulator uses.

The clusters here come straight from a `KubeRegistry` (access entries set directly, as the
EKS gap sets them); tests/sandbox/test_eks_gaps.py drives the same through the EKS API.
"""

from __future__ import annotations

import base64
import datetime
import json
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import urllib3
from kubernetes import client as k8s
from kubernetes import watch

from sandbox.kube import KubeRegistry, LocalKube
from sandbox.kube.access import CLUSTER_ADMIN, EDIT, VIEW
from sandbox.local_aws import client_env
from tests.sandbox.ekskit import REGION, api_client, call, eks_token

# The principal moto's STS reports for the sandbox's credentials, in access-entry form.
ME = "arn:aws:iam::123456789012:user/moto"
APPLY = "application/apply-patch+yaml"


def _sts(**overrides: Any) -> Any:
    env = client_env("http://127.0.0.1:9", REGION)  # presigning makes no request
    kwargs = {
        "region_name": REGION,
        "endpoint_url": env["AWS_ENDPOINT_URL"],
        "aws_access_key_id": env["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
        "aws_session_token": env["AWS_SESSION_TOKEN"],
    }
    return boto3.client("sts", **{**kwargs, **overrides})


def _described(kube: LocalKube) -> dict[str, Any]:
    """What DescribeCluster reports for it (endpoint and CA)."""
    return {
        "endpoint": kube.url,
        "certificateAuthority": {"data": base64.b64encode(kube.ca_pem).decode()},
    }


@pytest.fixture(scope="module")
def registry() -> Iterator[KubeRegistry]:
    kubes = KubeRegistry()
    try:
        yield kubes
    finally:
        kubes.close()


@pytest.fixture(scope="module")
def sts() -> Any:
    return _sts()


@pytest.fixture(scope="module")
def kube(registry: KubeRegistry) -> LocalKube:
    local = registry.ensure("lk-main")
    registry.set_access("lk-main", ME, {CLUSTER_ADMIN: {"type": "cluster"}})
    return local


@pytest.fixture(scope="module")
def api(kube: LocalKube, sts: Any) -> k8s.ApiClient:
    return api_client(_described(kube), eks_token(sts, kube.name))


@pytest.fixture
def ns(api: k8s.ApiClient) -> str:
    """A namespace of its own per test."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    k8s.CoreV1Api(api).create_namespace({"metadata": {"name": name}})
    return name


def _cm(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "data": data}


# --- TLS, tokens, access policies --------------------------------------------------------


def test_tls_needs_the_clusters_own_ca(registry: KubeRegistry, kube: LocalKube, sts: Any) -> None:
    token = eks_token(sts, kube.name)
    assert kube.url.startswith("https://127.0.0.1:")
    assert k8s.CoreV1Api(api_client(_described(kube), token)).list_namespace().items
    with pytest.raises(urllib3.exceptions.MaxRetryError) as refused:
        k8s.CoreV1Api(api_client(_described(kube), token, with_ca=False)).list_namespace()
    assert "CERTIFICATE_VERIFY_FAILED" in str(refused.value)

    other = registry.ensure("lk-other-ca")
    mixed = {**_described(kube), "certificateAuthority": _described(other)["certificateAuthority"]}
    with pytest.raises(urllib3.exceptions.MaxRetryError):
        k8s.CoreV1Api(api_client(mixed, token)).list_namespace()
    assert other.url != kube.url and other.ca_pem != kube.ca_pem


def _status(exc: pytest.ExceptionInfo[k8s.ApiException]) -> dict[str, Any]:
    return json.loads(exc.value.body)


def test_tokens_are_checked_as_eks_checks_them(kube: LocalKube, sts: Any, monkeypatch) -> None:
    cluster = _described(kube)

    def refused(token: str | None) -> tuple[int, dict[str, Any]]:
        with pytest.raises(k8s.ApiException) as caught:
            k8s.CoreV1Api(api_client(cluster, token)).list_namespace()
        return caught.value.status, _status(caught)

    status, body = refused(None)  # anonymous: EKS lets it in as system:anonymous, then refuses
    assert status == 403 and 'User "system:anonymous"' in body["message"]
    assert refused("not-a-token")[0] == 401
    good = eks_token(sts, kube.name)
    assert refused(good.replace("k8s-aws-v1.", "k8s-aws-v2."))[0] == 401
    assert refused(good[:-4] + ("AAAA" if not good.endswith("AAAA") else "BBBB"))[0] == 401
    assert refused(eks_token(sts, "some-other-cluster"))[0] == 401
    assert refused(eks_token(_sts(aws_secret_access_key="wrong-secret"), kube.name))[0] == 401
    assert refused(eks_token(_sts(aws_access_key_id="AKIAUNKNOWN000000000"), kube.name))[0] == 401

    old = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) - datetime.timedelta(minutes=16)
    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda: old)
    expired = eks_token(sts, kube.name)
    monkeypatch.undo()
    status, body = refused(expired)
    assert status == 401 and body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }
    # /version is public on EKS; the discovery documents are not
    assert k8s.VersionApi(api_client(cluster, None)).get_code().git_version.startswith("v1.33")
    assert k8s.CoreV1Api(api_client(cluster, good)).list_namespace().items  # the good one works


def test_access_entry_and_policy_are_both_needed(registry: KubeRegistry, sts: Any) -> None:
    local = registry.ensure("lk-access")
    v1 = k8s.CoreV1Api(api_client(_described(local), eks_token(sts, local.name)))

    with pytest.raises(k8s.ApiException) as caught:  # a valid token, but no access entry
        v1.list_namespace()
    assert caught.value.status == 401

    registry.set_access(local.name, ME, {})  # an entry alone grants nothing
    with pytest.raises(k8s.ApiException) as caught:
        v1.list_namespaced_pod("default")
    body = _status(caught)
    assert caught.value.status == 403 and body["kind"] == "Status" and body["reason"] == "Forbidden"
    assert body["message"] == (
        f'pods is forbidden: User "{ME}" cannot list resource "pods" in API group "" '
        'in the namespace "default"'
    )

    registry.set_access(local.name, ME, {VIEW: {"type": "namespace", "namespaces": ["team-*"]}})
    assert v1.list_namespaced_pod("team-a").items == []
    with pytest.raises(k8s.ApiException) as caught:
        v1.list_namespaced_pod("default")
    assert caught.value.status == 403
    with pytest.raises(k8s.ApiException) as caught:
        v1.create_namespaced_config_map("team-a", _cm("x"))
    assert caught.value.status == 403

    registry.set_access(local.name, ME, {EDIT: {"type": "cluster"}})
    v1.create_namespaced_config_map("team-a", _cm("x"))
    with pytest.raises(k8s.ApiException) as caught:  # edit: no RBAC, no nodes
        k8s.RbacAuthorizationV1Api(v1.api_client).list_namespaced_role("team-a")
    assert caught.value.status == 403

    registry.set_access(local.name, ME, {CLUSTER_ADMIN: {"type": "cluster"}})
    assert {n.metadata.name for n in v1.list_namespace().items} >= {"default", "kube-system"}
    registry.set_access(local.name, ME, None)  # entry deleted
    with pytest.raises(k8s.ApiException) as caught:
        v1.list_namespace()
    assert caught.value.status == 401


def test_aws_auth_config_map_maps_principals_in_config_map_mode(
    registry: KubeRegistry, sts: Any
) -> None:
    local = registry.ensure("lk-configmap")
    local.access.set_mode("CONFIG_MAP")
    v1 = k8s.CoreV1Api(api_client(_described(local), eks_token(sts, local.name)))
    with pytest.raises(k8s.ApiException) as caught:
        v1.list_namespace()
    assert caught.value.status == 401
    local.put_object(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "aws-auth", "namespace": "kube-system"},
            "data": {"mapUsers": f"- userarn: {ME}\n  username: me\n  groups: [system:masters]\n"},
        }
    )
    assert v1.list_namespace().items


# --- objects -----------------------------------------------------------------------------


def test_create_stamps_and_answers_201(api: k8s.ApiClient, ns: str) -> None:
    v1 = k8s.CoreV1Api(api)
    created = v1.create_namespaced_config_map(ns, _cm("a", {"x": "1"}, k="v"))
    md = created.metadata
    assert md.namespace == ns and md.uid and md.generation == 1
    assert int(md.resource_version) > 0 and md.creation_timestamp is not None
    assert md.managed_fields[0].manager == "OpenAPI-Generator"
    status, body, _ = call(api, "POST", f"/api/v1/namespaces/{ns}/configmaps", _cm("b"))
    assert status == 201 and body["metadata"]["namespace"] == ns
    with pytest.raises(k8s.ApiException) as caught:
        v1.create_namespaced_config_map(ns, _cm("a"))
    assert caught.value.status == 409 and _status(caught)["reason"] == "AlreadyExists"
    with pytest.raises(k8s.ApiException) as caught:
        v1.read_namespaced_config_map("nope", ns)
    assert (
        caught.value.status == 404 and _status(caught)["message"] == 'configmaps "nope" not found'
    )
    with pytest.raises(k8s.ApiException) as caught:
        v1.create_namespaced_config_map(ns, _cm("Bad_Name"))
    assert caught.value.status == 422
    generated = v1.create_namespaced_config_map(ns, {"metadata": {"generateName": "gen-"}})
    assert generated.metadata.name.startswith("gen-") and len(generated.metadata.name) == 9
    # a namespace need not exist (the sandbox does not enforce it: see sandbox/README.md)
    assert v1.create_namespaced_config_map(f"{ns}-absent", _cm("c")).metadata.name == "c"


def test_selectors_filter_lists(api: k8s.ApiClient, ns: str) -> None:
    v1 = k8s.CoreV1Api(api)
    for name, labels in (("a", {"app": "web", "tier": "1"}), ("b", {"app": "db"}), ("c", {})):
        v1.create_namespaced_config_map(ns, _cm(name, labels))

    def names(**kwargs: str) -> list[str]:
        return sorted(i.metadata.name for i in v1.list_namespaced_config_map(ns, **kwargs).items)

    assert names() == ["a", "b", "c"]
    assert names(label_selector="app=web") == ["a"]
    assert names(label_selector="app!=web") == ["b", "c"]
    assert names(label_selector="app in (web,db)") == ["a", "b"]
    assert names(label_selector="app notin (web)") == ["b", "c"]
    assert names(label_selector="tier") == ["a"]
    assert names(label_selector="!app") == ["c"]
    assert names(label_selector="app,app!=db") == ["a"]
    assert names(field_selector="metadata.name=b") == ["b"]
    assert names(field_selector="metadata.name!=b") == ["a", "c"]
    with pytest.raises(k8s.ApiException) as caught:
        v1.list_namespaced_config_map(ns, label_selector="app in web")
    assert caught.value.status == 400
    with pytest.raises(k8s.ApiException) as caught:
        v1.list_namespaced_config_map(ns, field_selector="data.k=v")
    assert caught.value.status == 400
    page = v1.list_namespaced_config_map(ns, limit=2)
    assert [i.metadata.name for i in page.items] == ["a", "b"] and page.metadata._continue
    rest = v1.list_namespaced_config_map(ns, limit=2, _continue=page.metadata._continue)
    assert [i.metadata.name for i in rest.items] == ["c"] and not rest.metadata._continue
    # a type that never had an object lists empty; an unknown type is 404
    assert k8s.BatchV1Api(api).list_namespaced_job(ns).items == []
    assert call(api, "GET", "/apis/example.com/v1/widgets")[0] == 404


def test_replace_checks_resource_version_and_bumps_generation(api: k8s.ApiClient, ns: str) -> None:
    apps = k8s.AppsV1Api(api)
    deployment = _deployment("web", replicas=1)
    created = apps.create_namespaced_deployment(ns, deployment)
    stale = created.metadata.resource_version
    body = apps.read_namespaced_deployment("web", ns).to_dict()
    body["spec"]["replicas"] = 3
    replaced = apps.replace_namespaced_deployment("web", ns, body)
    assert replaced.spec.replicas == 3 and replaced.metadata.generation == 2
    assert replaced.metadata.uid == created.metadata.uid
    body["metadata"]["resource_version"] = stale
    with pytest.raises(k8s.ApiException) as caught:
        apps.replace_namespaced_deployment("web", ns, body)
    assert caught.value.status == 409 and _status(caught)["reason"] == "Conflict"
    body["metadata"]["labels"] = {"changed": "yes"}
    body["metadata"]["resource_version"] = None
    relabelled = apps.replace_namespaced_deployment("web", ns, body)
    assert relabelled.metadata.generation == 2  # metadata only: no new generation
    with pytest.raises(k8s.ApiException) as caught:
        apps.replace_namespaced_deployment("ghost", ns, {**body, "metadata": {"name": "ghost"}})
    assert caught.value.status == 404


def _deployment(name: str, replicas: int = 1, image: str = "nginx:1") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": image}]},
            },
        },
    }


def _apply(
    api: k8s.ApiClient, path: str, body: Any, manager: str | None = "hypd", force: bool = False
) -> tuple[int, Any]:
    query = [("fieldManager", manager)] if manager else []
    if force:
        query.append(("force", "true"))
    status, answer, _ = call(api, "PATCH", path, body, APPLY, query)
    return status, answer


def test_server_side_apply_creates_then_updates(api: k8s.ApiClient, ns: str) -> None:
    path = f"/api/v1/namespaces/{ns}/configmaps/settings"
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "labels": {"app.kubernetes.io/managed-by": "hypd"}},
        "data": {"a": "1", "b": "2"},
    }
    status, created = _apply(api, path, config)
    assert status == 201 and created["metadata"]["namespace"] == ns and created["metadata"]["uid"]
    assert created["metadata"]["managedFields"][0]["manager"] == "hypd"
    assert created["metadata"]["managedFields"][0]["operation"] == "Apply"
    status, same = _apply(api, path, config)  # nothing changed: same resourceVersion
    assert (
        status == 200
        and same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    )
    yaml_body = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"
        "  labels:\n    app.kubernetes.io/managed-by: hypd\ndata:\n  a: '10'\n"
    )
    status, updated = _apply(api, path, yaml_body)  # YAML; `b` no longer applied: removed
    assert status == 200 and updated["data"] == {"a": "10"}
    assert updated["metadata"]["uid"] == created["metadata"]["uid"]

    status, refused = _apply(api, path, config, manager=None)
    assert status == 422 and "fieldManager" in refused["message"]

    # another manager changing a field hypd owns: conflict, unless forced
    theirs = {**config, "data": {"a": "99"}}
    status, conflict = _apply(api, path, theirs, manager="someone-else")
    assert status == 409 and conflict["reason"] == "Conflict"
    assert 'conflict with "hypd"' in conflict["message"] and ".data.a" in conflict["message"]
    status, forced = _apply(api, path, theirs, manager="someone-else", force=True)
    assert status == 200 and forced["data"]["a"] == "99"
    owners = {m["manager"]: m["fieldsV1"] for m in forced["metadata"]["managedFields"]}
    assert "f:a" in owners["someone-else"]["f:data"] and "f:data" not in owners["hypd"]


def test_server_side_apply_of_a_deployment(api: k8s.ApiClient, ns: str) -> None:
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/web"
    status, created = _apply(api, path, _deployment("web", replicas=1))
    assert status == 201 and created["metadata"]["generation"] == 1
    status, updated = _apply(api, path, _deployment("web", replicas=2, image="nginx:2"))
    assert status == 200 and updated["spec"]["replicas"] == 2
    assert updated["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
    assert updated["metadata"]["generation"] == 2
    read = k8s.AppsV1Api(api).read_namespaced_deployment("web", ns)
    assert read.spec.replicas == 2
    # status is the controllers' (the simulator's): apply does not write it
    status, with_status = _apply(
        api, path, {**_deployment("web", 2, "nginx:2"), "status": {"replicas": 9}}
    )
    assert status == 200 and "status" not in with_status


def test_patches(api: k8s.ApiClient, ns: str) -> None:
    v1 = k8s.CoreV1Api(api)
    v1.create_namespaced_config_map(ns, _cm("p", {"a": "1"}, x="1", y="2"))
    merged = v1.patch_namespaced_config_map("p", ns, {"data": {"x": "9", "y": None}})  # strategic
    assert merged.data == {"x": "9"}
    status, body, _ = call(
        api,
        "PATCH",
        f"/api/v1/namespaces/{ns}/configmaps/p",
        {"metadata": {"labels": {"b": "2"}}},
        "application/merge-patch+json",
    )
    assert status == 200 and body["metadata"]["labels"] == {"a": "1", "b": "2"}
    patched = v1.patch_namespaced_config_map(
        "p",
        ns,
        [{"op": "add", "path": "/data/z", "value": "3"}, {"op": "remove", "path": "/data/x"}],
    )
    assert patched.data == {"z": "3"}
    with pytest.raises(k8s.ApiException) as caught:
        v1.patch_namespaced_config_map("p", ns, [{"op": "test", "path": "/data/z", "value": "4"}])
    assert caught.value.status == 422
    assert call(api, "PATCH", f"/api/v1/namespaces/{ns}/configmaps/p", "{}", "text/plain")[0] == 415


def test_delete_finalizers_owners_and_namespaces(api: k8s.ApiClient, ns: str) -> None:
    v1 = k8s.CoreV1Api(api)
    v1.create_namespaced_config_map(ns, _cm("plain"))
    status, body, _ = call(api, "DELETE", f"/api/v1/namespaces/{ns}/configmaps/plain")
    assert status == 200 and body["kind"] == "Status" and body["status"] == "Success"
    with pytest.raises(k8s.ApiException) as caught:
        v1.delete_namespaced_config_map("plain", ns)
    assert caught.value.status == 404

    held = v1.create_namespaced_config_map(
        ns, {"metadata": {"name": "held", "finalizers": ["x/y"]}}
    )
    v1.delete_namespaced_config_map("held", ns)
    marked = v1.read_namespaced_config_map("held", ns)
    assert marked.metadata.deletion_timestamp is not None
    v1.patch_namespaced_config_map("held", ns, {"metadata": {"finalizers": None}})
    with pytest.raises(k8s.ApiException):
        v1.read_namespaced_config_map("held", ns)
    del held

    owner = v1.create_namespaced_config_map(ns, _cm("owner"))
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}
    v1.create_namespaced_config_map(ns, {"metadata": {"name": "child", "ownerReferences": [ref]}})
    v1.delete_namespaced_config_map("owner", ns)
    assert [i.metadata.name for i in v1.list_namespaced_config_map(ns).items] == []

    v1.create_namespaced_config_map(ns, _cm("inside"))
    v1.delete_namespace(ns)
    assert v1.list_namespaced_config_map(ns).items == []
    assert ns not in {n.metadata.name for n in v1.list_namespace().items}


def test_crd_makes_its_resources_servable_and_discoverable(api: k8s.ApiClient, ns: str) -> None:
    group = f"g{uuid.uuid4().hex[:6]}.example.com"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "subresources": {"status": {}}},
                {"name": "v1beta1", "served": True, "storage": False},
            ],
        },
    }
    custom = k8s.CustomObjectsApi(api)
    with pytest.raises(k8s.ApiException) as caught:
        custom.list_namespaced_custom_object(group, "v1", ns, "widgets")
    assert caught.value.status == 404
    ext = k8s.ApiextensionsV1Api(api)
    made = ext.create_custom_resource_definition(crd)
    conditions = {c.type: c.status for c in made.status.conditions}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}

    widget = {
        "apiVersion": f"{group}/v1",
        "kind": "Widget",
        "metadata": {"name": "w1"},
        "spec": {"size": 3},
    }
    created = custom.create_namespaced_custom_object(group, "v1", ns, "widgets", widget)
    assert created["metadata"]["uid"] and created["metadata"]["namespace"] == ns
    beta = custom.get_namespaced_custom_object(group, "v1beta1", ns, "widgets", "w1")
    assert beta["apiVersion"] == f"{group}/v1beta1" and beta["spec"] == {"size": 3}
    assert [
        w["metadata"]["name"]
        for w in custom.list_cluster_custom_object(group, "v1", "widgets")["items"]
    ] == ["w1"]
    strategic = call(
        api,
        "PATCH",
        f"/apis/{group}/v1/namespaces/{ns}/widgets/w1",
        {"spec": {}},
        "application/strategic-merge-patch+json",
    )
    assert strategic[0] == 415  # custom resources take no strategic merge patch
    custom.patch_namespaced_custom_object_status(
        group, "v1", ns, "widgets", "w1", {"status": {"ready": True}}
    )
    status_only = custom.patch_namespaced_custom_object(
        group, "v1", ns, "widgets", "w1", {"status": {"ready": False}, "spec": {"size": 4}}
    )
    assert status_only["status"] == {"ready": True} and status_only["spec"] == {"size": 4}

    groups = {g["name"]: g for g in call(api, "GET", "/apis")[1]["groups"]}
    assert groups[group]["preferredVersion"]["version"] == "v1"
    resources = call(api, "GET", f"/apis/{group}/v1")[1]["resources"]
    assert {r["name"] for r in resources} == {"widgets", "widgets/status"}

    ext.delete_custom_resource_definition(f"widgets.{group}")
    assert call(api, "GET", f"/apis/{group}/v1/widgets")[0] == 404
    assert group not in {g["name"] for g in call(api, "GET", "/apis")[1]["groups"]}


def test_discovery_and_version(api: k8s.ApiClient) -> None:
    assert call(api, "GET", "/api")[1]["versions"] == ["v1"]
    core = {r["name"]: r for r in call(api, "GET", "/api/v1/")[1]["resources"]}
    assert core["pods"]["namespaced"] and not core["namespaces"]["namespaced"]
    assert "pods/log" in core and core["configmaps"]["kind"] == "ConfigMap"
    groups = {g["name"] for g in call(api, "GET", "/apis")[1]["groups"]}
    assert {"apps", "batch", "rbac.authorization.k8s.io", "apiextensions.k8s.io"} <= groups
    assert "gateway.networking.k8s.io" not in groups  # not on EKS without add-ons
    assert call(api, "GET", "/version/")[1]["gitVersion"] == "v1.33.0-eks-sandbox"
    assert call(api, "GET", "/apis/apps/v1")[1]["groupVersion"] == "apps/v1"


def test_scale_and_status_subresources(api: k8s.ApiClient, ns: str) -> None:
    apps = k8s.AppsV1Api(api)
    apps.create_namespaced_deployment(ns, _deployment("s", replicas=1))
    scale = apps.read_namespaced_deployment_scale("s", ns)
    assert scale.spec.replicas == 1 and scale.status.selector == "app=s"
    apps.patch_namespaced_deployment_scale("s", ns, {"spec": {"replicas": 4}})
    assert apps.read_namespaced_deployment("s", ns).spec.replicas == 4
    apps.patch_namespaced_deployment_status(
        "s", ns, {"status": {"readyReplicas": 4, "replicas": 4}}
    )
    assert apps.read_namespaced_deployment("s", ns).status.ready_replicas == 4


# --- watches and logs --------------------------------------------------------------------


def test_watch_streams_changes_from_a_resource_version(
    api: k8s.ApiClient, kube: LocalKube, ns: str
) -> None:
    v1 = k8s.CoreV1Api(api)
    start = v1.list_namespaced_config_map(ns).metadata.resource_version
    v1.create_namespaced_config_map(ns, _cm("w", {"watch": "me"}))
    v1.patch_namespaced_config_map("w", ns, {"data": {"k": "2"}})
    v1.create_namespaced_config_map(ns, _cm("other"))
    kube.delete_object("v1", "ConfigMap", "w", ns)
    seen = [
        (e["type"], e["object"].metadata.name)
        for e in watch.Watch().stream(
            v1.list_namespaced_config_map,
            ns,
            resource_version=start,
            label_selector="watch=me",
            timeout_seconds=1,
        )
    ]
    assert seen == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]

    events: list[tuple[str, str]] = []
    stream = watch.Watch()

    def follow() -> None:
        for event in stream.stream(v1.list_namespaced_config_map, ns, timeout_seconds=5):
            events.append((event["type"], event["object"].metadata.name))
            if len(events) == 3:
                stream.stop()

    thread = threading.Thread(target=follow)
    thread.start()
    time.sleep(0.3)
    kube.put_object(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "live", "namespace": ns}}
    )
    v1.delete_namespaced_config_map("live", ns)
    thread.join(10)
    assert events == [("ADDED", "other"), ("ADDED", "live"), ("DELETED", "live")]


def test_watch_from_a_forgotten_resource_version_is_gone(
    registry: KubeRegistry, sts: Any, monkeypatch
) -> None:
    monkeypatch.setattr("sandbox.kube.store.EVENT_HISTORY", 4)
    local = registry.ensure("lk-history")
    registry.set_access(local.name, ME, {CLUSTER_ADMIN: {"type": "cluster"}})
    api = api_client(_described(local), eks_token(sts, local.name))
    for i in range(8):
        local.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}})
    status, body, _ = call(
        api, "GET", "/api/v1/configmaps", query=[("watch", "true"), ("resourceVersion", "1")]
    )
    event = json.loads(body.splitlines()[0]) if isinstance(body, str) else body
    assert status == 200 and event["type"] == "ERROR" and event["object"]["code"] == 410


def _pod(name: str, containers: tuple[str, ...] = ("main",)) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": c, "image": "busybox"} for c in containers]},
    }


def test_pod_logs_are_text_and_follow_until_the_pod_ends(
    api: k8s.ApiClient, kube: LocalKube, ns: str
) -> None:
    v1 = k8s.CoreV1Api(api)
    v1.create_namespaced_pod(ns, _pod("job"))
    with pytest.raises(k8s.ApiException) as caught:  # Pending, nothing written yet
        v1.read_namespaced_pod_log("job", ns)
    assert caught.value.status == 400 and "waiting to start" in _status(caught)["message"]
    kube.append_log(ns, "job", "step 1\nstep 2")
    status, text, headers = call(api, "GET", f"/api/v1/namespaces/{ns}/pods/job/log")
    assert (
        status == 200
        and text == "step 1\nstep 2\n"
        and headers["Content-Type"].startswith("text/plain")
    )
    assert v1.read_namespaced_pod_log("job", ns, tail_lines=1) == "step 2\n"

    def finish() -> None:
        time.sleep(0.3)
        kube.append_log(ns, "job", "step 3")
        pod = kube.get_object("v1", "Pod", "job", ns)
        assert pod is not None
        kube.put_object({**pod, "status": {"phase": "Succeeded"}})

    threading.Thread(target=finish).start()
    started = time.monotonic()
    followed = v1.read_namespaced_pod_log("job", ns, follow=True, _preload_content=False)
    assert followed.read().decode() == "step 1\nstep 2\nstep 3\n"
    assert time.monotonic() - started < 5

    v1.create_namespaced_pod(ns, _pod("two", ("a", "b")))
    with pytest.raises(k8s.ApiException) as caught:
        v1.read_namespaced_pod_log("two", ns)
    assert caught.value.status == 400 and "choose one of: [a b]" in _status(caught)["message"]


# --- in-process methods (the simulator's) and several clusters ---------------------------


def test_in_process_methods_stamp_and_select(kube: LocalKube, api: k8s.ApiClient) -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "hyperpod-i-0abc",
            "labels": {"sagemaker.amazonaws.com/node-health-status": "Schedulable"},
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    stored = kube.put_object(node)
    assert stored["metadata"]["uid"] and stored["status"]["conditions"][0]["type"] == "Ready"
    again = kube.put_object({**node, "metadata": {**node["metadata"], "labels": {"x": "y"}}})
    assert again["metadata"]["uid"] == stored["metadata"]["uid"]
    assert int(again["metadata"]["resourceVersion"]) > int(stored["metadata"]["resourceVersion"])
    assert (
        kube.list_objects("v1", "Node", label_selector="x=y")[0]["metadata"]["name"]
        == "hyperpod-i-0abc"
    )
    assert kube.list_objects("v1", "Node", label_selector="x=z") == []
    read = k8s.CoreV1Api(api).read_node("hyperpod-i-0abc")
    assert read.status.conditions[0].status == "True"
    assert kube.delete_object("v1", "Node", "hyperpod-i-0abc") is True
    assert kube.get_object("v1", "Node", "hyperpod-i-0abc") is None
    assert kube.delete_object("v1", "Node", "hyperpod-i-0abc") is False
    # a kind no CRD declared is registered on first write
    job = kube.put_object(
        {
            "apiVersion": "example.com/v1",
            "kind": "Thing",
            "metadata": {"name": "t", "namespace": "default"},
        }
    )
    assert job["metadata"]["namespace"] == "default"
    assert call(api, "GET", "/apis/example.com/v1/namespaces/default/things/t")[0] == 200


def test_two_clusters_are_two_kubernetes(registry: KubeRegistry, sts: Any) -> None:
    first, second = registry.ensure("lk-one"), registry.ensure("lk-two")
    assert registry.ensure("lk-one") is first and registry.get("lk-two") is second
    assert first.url != second.url
    for local in (first, second):
        registry.set_access(local.name, ME, {CLUSTER_ADMIN: {"type": "cluster"}})
    v1_first = k8s.CoreV1Api(api_client(_described(first), eks_token(sts, "lk-one")))
    v1_first.create_namespaced_config_map("default", _cm("only-in-one"))
    v1_second = k8s.CoreV1Api(api_client(_described(second), eks_token(sts, "lk-two")))
    assert [i.metadata.name for i in v1_second.list_namespaced_config_map("default").items] == []
    cross = k8s.CoreV1Api(api_client(_described(second), eks_token(sts, "lk-one")))
    with pytest.raises(k8s.ApiException) as caught:
        cross.list_namespace()
    assert caught.value.status == 401
    registry.remove("lk-two")
    assert registry.get("lk-two") is None
    with pytest.raises(urllib3.exceptions.MaxRetryError):
        v1_second.list_namespace()
