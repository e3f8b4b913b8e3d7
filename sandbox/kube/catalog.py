"""Which resource types a local Kubernetes serves: the built-in ones and those CRDs add.

The built-in types come from kmock's bundled discovery data (taken from a real cluster),
less the groups an EKS cluster does not serve out of the box (Gateway API, metrics). A
`CustomResourceDefinition` written to the cluster registers its served versions here, so its
resources become listable and discoverable at once, as on a real API server; deleting it
unregisters them. Each served version's schema is kept for validating its objects
(sandbox/kube/validation.py). Every group/plural is stored under one version (the CRD's
storage version, or the preferred built-in version) and served at all of its versions.
"""

from __future__ import annotations

import gzip
import importlib.resources
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from kmock import KubernetesEmulator, ResourceInfo, resource

# Served by kmock's bundled data (a k3s cluster) but not by EKS without add-ons.
_NOT_ON_EKS = frozenset({"gateway.networking.k8s.io", "metrics.k8s.io"})
ALL_VERBS = frozenset(
    {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
)
_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key, best first: GA before beta before alpha, higher numbers first."""
    found = _VERSION.match(version)
    if not found:
        return (3, 0, 0, version)
    major, stage, minor = int(found.group(1)), found.group(2), int(found.group(3) or 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -major, -minor, version)


@dataclass(frozen=True)
class ResourceType:
    """One resource at one served version."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    storage_version: str
    singular: str = ""
    shortnames: frozenset[str] = frozenset()
    categories: frozenset[str] = frozenset()
    verbs: frozenset[str] = ALL_VERBS
    subresources: frozenset[str] = frozenset()
    crd: str | None = None  # the CRD that defines it

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage_api_version(self) -> str:
        return f"{self.group}/{self.storage_version}" if self.group else self.storage_version

    @property
    def key(self) -> resource:
        """Where its objects are kept in the emulator (one version per group/plural)."""
        return resource(self.group, self.storage_version, self.plural)

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources


def split_api_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


@dataclass
class Catalog:
    """The served resource types of one cluster (kept in sync with kmock's discovery data)."""

    emulator: KubernetesEmulator
    _types: dict[tuple[str, str, str], ResourceType] = field(default_factory=dict)
    _schemas: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)

    def __post_init__(self) -> None:
        bundled = self.emulator.resources
        # kmock's own `load_bundled()` reads this file through a deprecated importlib API
        data = importlib.resources.files("kmock._internal").joinpath("resources.json.gz")
        bundled.load_data(gzip.decompress(data.read_bytes()))
        for res in list(bundled):
            if res.group in _NOT_ON_EKS:
                del bundled[res]
        by_plural: dict[tuple[str, str], list[str]] = {}
        for res in bundled:
            by_plural.setdefault((res.group or "", res.plural or ""), []).append(res.version or "")
        for res in bundled:
            info = bundled[res]
            group, plural = res.group or "", res.plural or ""
            storage = min(by_plural[(group, plural)], key=version_priority)
            self._types[(group, res.version or "", plural)] = ResourceType(
                group=group,
                version=res.version or "",
                plural=plural,
                kind=info.kind or plural.capitalize(),
                namespaced=bool(info.namespaced),
                storage_version=storage,
                singular=info.singular or (info.kind or "").lower(),
                shortnames=frozenset(info.shortnames),
                categories=frozenset(info.categories),
                verbs=frozenset(info.verbs) or ALL_VERBS,
                subresources=frozenset(info.subresources),
            )

    # --- lookups ----------------------------------------------------------------------

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._types.get((group, version, plural))

    def for_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group, version = split_api_version(api_version)
        with self._lock:
            for rt in self._types.values():
                if rt.group == group and rt.version == version and rt.kind == kind:
                    return rt
        return None

    def storage_type(self, group: str, plural: str) -> ResourceType | None:
        with self._lock:
            for rt in self._types.values():
                if rt.group == group and rt.plural == plural and rt.version == rt.storage_version:
                    return rt
        return None

    def schema(self, rt: ResourceType) -> dict[str, Any] | None:
        """The `openAPIV3Schema` its CRD gives this version (None: a built-in type, or a
        CRD version without a schema)."""
        with self._lock:
            return self._schemas.get((rt.group, rt.version, rt.plural))

    def all(self) -> list[ResourceType]:
        with self._lock:
            return list(self._types.values())

    def group_versions(self) -> dict[str, list[str]]:
        """Group → served versions, preferred first."""
        found: dict[str, set[str]] = {}
        for rt in self.all():
            found.setdefault(rt.group, set()).add(rt.version)
        return {g: sorted(vs, key=version_priority) for g, vs in found.items()}

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [rt for rt in self.all() if rt.group == group and rt.version == version]

    # --- custom resources -------------------------------------------------------------

    def register_crd(self, crd: dict[str, Any]) -> None:
        """Serve the versions a CRD declares (replacing what it declared before)."""
        name = crd["metadata"]["name"]
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        served = [v for v in spec.get("versions") or [] if v.get("served", True)]
        storage = next(
            (v["name"] for v in spec.get("versions") or [] if v.get("storage")),
            served[0]["name"] if served else "v1",
        )
        with self._lock:
            self.unregister_crd(name)
            for version in served:
                subresources = frozenset((version.get("subresources") or {}).keys())
                rt = ResourceType(
                    group=spec["group"],
                    version=version["name"],
                    plural=names["plural"],
                    kind=names["kind"],
                    namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                    storage_version=storage,
                    singular=names.get("singular") or names["kind"].lower(),
                    shortnames=frozenset(names.get("shortNames") or ()),
                    categories=frozenset(names.get("categories") or ()),
                    subresources=subresources,
                    crd=name,
                )
                self._types[(rt.group, rt.version, rt.plural)] = rt
                schema = (version.get("schema") or {}).get("openAPIV3Schema")
                if isinstance(schema, dict):
                    self._schemas[(rt.group, rt.version, rt.plural)] = schema
                self.emulator.resources[resource(rt.group, rt.version, rt.plural)] = ResourceInfo(
                    namespaced=rt.namespaced,
                    kind=rt.kind,
                    singular=rt.singular,
                    verbs=ALL_VERBS,
                    shortnames=rt.shortnames,
                    categories=rt.categories,
                    subresources=subresources,
                )

    def unregister_crd(self, name: str) -> list[ResourceType]:
        with self._lock:
            gone = [rt for rt in self._types.values() if rt.crd == name]
            for rt in gone:
                del self._types[(rt.group, rt.version, rt.plural)]
                self._schemas.pop((rt.group, rt.version, rt.plural), None)
                key = resource(rt.group, rt.version, rt.plural)
                if key in self.emulator.resources:
                    del self.emulator.resources[key]
            return gone

    def guess(self, api_version: str, kind: str, namespaced: bool) -> ResourceType:
        """Register a type nobody declared (in-process writes of the sandbox's own simulator).

        The plural is the lower-case kind plus "s", which is what CRDs conventionally use.
        """
        group, version = split_api_version(api_version)
        plural = kind.lower() + ("es" if kind.lower().endswith("s") else "s")
        rt = ResourceType(
            group=group,
            version=version,
            plural=plural,
            kind=kind,
            namespaced=namespaced,
            storage_version=version,
            singular=kind.lower(),
            subresources=frozenset({"status"}),
        )
        with self._lock:
            self._types[(group, version, plural)] = rt
            self.emulator.resources[resource(group, version, plural)] = ResourceInfo(
                namespaced=namespaced, kind=kind, singular=kind.lower(), verbs=ALL_VERBS
            )
        return rt
