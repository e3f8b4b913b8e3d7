"""API discovery documents (`/api`, `/apis`, `/api/v1`, `/apis/<group>/<version>`, `/version`)
built from the catalogue, so CRDs created through the API are discoverable at once."""

from __future__ import annotations

from typing import Any

from sandbox.kube.catalog import Catalog, ResourceType
from sandbox.kube.errors import no_such_resource


def version(kubernetes_version: str) -> dict[str, Any]:
    major, _, minor = kubernetes_version.partition(".")
    return {
        "major": major,
        "minor": minor,
        "emulationMajor": major,
        "emulationMinor": minor,
        "gitVersion": f"v{kubernetes_version}.0-eks-sandbox",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def core_versions() -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "versions": [{"groupVersion": f"{name}/{v}", "version": v} for v in versions],
        "preferredVersion": {"groupVersion": f"{name}/{versions[0]}", "version": versions[0]},
    }


def group_list(catalog: Catalog) -> dict[str, Any]:
    groups = catalog.group_versions()
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group(name, groups[name]) for name in sorted(groups) if name],
    }


def group(catalog: Catalog, name: str) -> dict[str, Any]:
    versions = catalog.group_versions().get(name)
    if not name or not versions:
        raise no_such_resource()
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def _resource(rt: ResourceType) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": sorted(rt.verbs),
    }
    if rt.shortnames:
        main["shortNames"] = sorted(rt.shortnames)
    if rt.categories:
        main["categories"] = sorted(rt.categories)
    out = [main]
    for sub in sorted(rt.subresources):
        kind = {"scale": "Scale", "eviction": "Eviction", "binding": "Binding"}.get(sub, rt.kind)
        verbs = {"log": ["get"], "eviction": ["create"], "scale": ["get", "patch", "update"]}.get(
            sub, ["get", "patch", "update"]
        )
        out.append(
            {
                "name": f"{rt.plural}/{sub}",
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": kind,
                "verbs": verbs,
            }
        )
    return out


def resource_list(catalog: Catalog, group_name: str, version_name: str) -> dict[str, Any]:
    types = catalog.in_group_version(group_name, version_name)
    if not types:
        raise no_such_resource()
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group_name}/{version_name}" if group_name else version_name,
        "resources": [
            entry for rt in sorted(types, key=lambda r: r.plural) for entry in _resource(rt)
        ],
    }


def root_paths(catalog: Catalog) -> dict[str, Any]:
    paths = {"/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version"}
    for name, versions in catalog.group_versions().items():
        if name:
            paths.add(f"/apis/{name}")
            paths.update(f"/apis/{name}/{v}" for v in versions)
    return {"paths": sorted(paths)}
