"""The dependency graph of a cluster, as data: `cloud/data/dependencies.yaml`.

Entries are EKS add-ons, manifests, service accounts hypd makes for a consumer, and HyperPod
cluster settings, each in a `feature`. The base set (`enabled: true`) is what a cluster's
create installs; a managed feature (`toggle: true`) adds its own entries and what they
`require`. Each consumer that calls AWS states its identity: the mechanism (Pod Identity,
IRSA, or HyperPod's own ClusterRole) and the role key that cloud/iam.py builds a
least-privilege policy for. Nothing here calls AWS or Kubernetes: cloud/addons.py,
cloud/identity.py and cloud/features.py act on what this module reads.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cloud.errors import Invalid

DATA_FILE = Path(__file__).parent / "data" / "dependencies.yaml"
MANIFEST_DIR = Path(__file__).parent / "manifests"

# entry kinds
ADDON = "addon"
MANIFESTS = "manifests"
SERVICE_ACCOUNT = "service-account"
HYPERPOD = "hyperpod"
KINDS = (ADDON, MANIFESTS, SERVICE_ACCOUNT, HYPERPOD)

# identity mechanisms
POD_IDENTITY = "pod-identity"
IRSA = "irsa"
CLUSTER_ROLE = "hyperpod"
MECHANISMS = (POD_IDENTITY, IRSA, CLUSTER_ROLE)

# HyperPod settings a `hyperpod` entry turns on and off (UpdateCluster members)
TIERED_STORAGE = "TieredStorageConfig"
AUTOSCALING = "AutoScaling"
SETTINGS = (TIERED_STORAGE, AUTOSCALING)

DEFAULT_VERSION = "default"

# the values an add-on's `configuration` may name as `${name}`, known only when it is
# installed (cloud/addons.py resolves them)
CONFIGURATION_VALUES = ("role", "tls_bucket", "hyperpod_cluster_arn")


class DependencyError(Invalid):
    """The dependency data is inconsistent, or a request names what it does not know."""


@dataclass(frozen=True)
class Identity:
    """How a consumer gets AWS credentials: the role `hypd-<cluster>-<role>` and the
    mechanism that hands it to the consumer's service account."""

    mechanism: str
    role: str
    namespace: str | None = None
    service_account: str | None = None
    shared: bool = False
    """A role the cluster owns (made with it): a feature ensures it, never removes it."""
    tls_bucket: bool = False
    """The consumer keeps TLS certificates in a `hyperpod-tls-*` bucket of its own (the HyperPod
    inference operator: AWS's policy for its role reaches only buckets of that name), made
    and removed with its role."""

    @property
    def subject(self) -> str | None:
        """`namespace/service_account`, the Kubernetes identity the role is bound to."""
        if self.namespace and self.service_account:
            return f"{self.namespace}/{self.service_account}"
        return None


@dataclass(frozen=True)
class Dependency:
    name: str
    kind: str
    feature: str
    enabled: bool
    """In the base set: installed by the cluster create's dependencies stage."""
    version: str
    description: str = ""
    min_version: str | None = None
    manifests: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    configuration: Mapping[str, Any] | None = None
    identity: Identity | None = None
    setting: str | None = None
    sticky: bool = False
    """Also installed on demand outside the managed features (an endpoint's load balancer or
    autoscaler, FSx volumes), so turning a feature off never removes it."""


@dataclass(frozen=True)
class Feature:
    name: str
    description: str
    toggle: bool
    """A managed feature the user turns on and off."""
    note: str | None
    entries: tuple[str, ...]


# ---------------------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4)
def load(path: str = str(DATA_FILE)) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    _validate(data)
    return data


def _validate(data: Mapping[str, Any]) -> None:
    features = data.get("features") or {}
    seen: dict[str, Mapping[str, Any]] = {}
    for entry in data.get("dependencies") or ():
        name = entry.get("name")
        if not name or name in seen:
            raise DependencyError(f"dependency {name!r} is unnamed or listed twice")
        kind = entry.get("kind")
        if kind not in KINDS:
            raise DependencyError(f"dependency {name}: kind must be one of {', '.join(KINDS)}")
        if entry.get("feature") not in features:
            raise DependencyError(f"dependency {name}: unknown feature {entry.get('feature')!r}")
        if not isinstance(entry.get("enabled"), bool) or not entry.get("version"):
            raise DependencyError(f"dependency {name}: needs enabled (true/false) and version")
        for required in entry.get("requires") or ():
            if required not in seen:
                raise DependencyError(f"dependency {name} requires {required!r}, which must "
                                      "be listed before it")
            if entry["enabled"] and not seen[required]["enabled"]:
                raise DependencyError(f"dependency {name} is in the base set but requires "
                                      f"{required}, which is not")
        if kind == MANIFESTS:
            files = entry.get("manifests") or ()
            if not files:
                raise DependencyError(f"dependency {name}: lists no manifests")
            for file in files:
                if not (MANIFEST_DIR / file).is_file():
                    raise DependencyError(f"dependency {name}: no manifest file {file}")
        if kind == HYPERPOD and entry.get("setting") not in SETTINGS:
            raise DependencyError(f"dependency {name}: setting must be one of "
                                  f"{', '.join(SETTINGS)}")
        _validate_identity(name, kind, entry.get("identity"))
        _validate_configuration(name, kind, entry.get("configuration"))
        seen[name] = entry
    for feature, meta in features.items():
        if (meta or {}).get("toggle") and not any(
                e.get("feature") == feature for e in data.get("dependencies") or ()):
            raise DependencyError(f"feature {feature} can be toggled but has no entries")


def _validate_identity(name: str, kind: str, identity: Mapping[str, Any] | None) -> None:
    if identity is None:
        if kind == SERVICE_ACCOUNT:
            raise DependencyError(f"dependency {name}: a service account needs an identity")
        return
    mechanism = identity.get("mechanism")
    if mechanism not in MECHANISMS:
        raise DependencyError(f"dependency {name}: identity mechanism must be one of "
                              f"{', '.join(MECHANISMS)}")
    if not identity.get("role"):
        raise DependencyError(f"dependency {name}: identity needs a role")
    bound = identity.get("namespace") and identity.get("service_account")
    if mechanism in (POD_IDENTITY, IRSA) and not bound:
        raise DependencyError(f"dependency {name}: a {mechanism} identity names its "
                              "namespace and service_account")
    if kind == SERVICE_ACCOUNT and mechanism != IRSA:
        raise DependencyError(f"dependency {name}: a service account hypd makes is bound "
                              "with IRSA (its annotation)")


def _placeholders(value: Any) -> Iterable[str]:
    """The `${name}` values in an add-on's configuration (a whole string each)."""
    if isinstance(value, Mapping):
        for item in value.values():
            yield from _placeholders(item)
    elif isinstance(value, list):
        for item in value:
            yield from _placeholders(item)
    elif isinstance(value, str) and value.startswith("${") and value.endswith("}"):
        yield value[2:-1]


def _validate_configuration(name: str, kind: str, configuration: Any) -> None:
    if configuration is None:
        return
    if kind != ADDON or not isinstance(configuration, Mapping):
        raise DependencyError(f"dependency {name}: only an add-on has a configuration, a "
                              "mapping")
    for value in _placeholders(configuration):
        if value not in CONFIGURATION_VALUES:
            raise DependencyError(f"dependency {name}: configuration names an unknown value "
                                  f"${{{value}}} (known: {', '.join(CONFIGURATION_VALUES)})")


def configuration(dep: Dependency, values: Mapping[str, str]) -> dict[str, Any] | None:
    """The add-on's configuration with each `${name}` replaced by `values[name]` (the
    consumer's role, its TLS bucket, the HyperPod cluster's ARN), as EKS is to be sent it."""
    if dep.configuration is None:
        return None

    def fill(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {k: fill(v) for k, v in value.items()}
        if isinstance(value, list):
            return [fill(v) for v in value]
        if isinstance(value, str) and value.startswith("${") and value.endswith("}"):
            found = values.get(value[2:-1])
            if not found:
                raise ValueError(f"{dep.name}'s configuration needs {value[2:-1]}")
            return found
        return value

    return fill(dep.configuration)


def _identity(raw: Mapping[str, Any] | None) -> Identity | None:
    if raw is None:
        return None
    return Identity(mechanism=raw["mechanism"], role=raw["role"],
                    namespace=raw.get("namespace"), service_account=raw.get("service_account"),
                    shared=bool(raw.get("shared")), tls_bucket=bool(raw.get("tls_bucket")))


def _dependency(entry: Mapping[str, Any]) -> Dependency:
    return Dependency(
        name=entry["name"],
        kind=entry["kind"],
        feature=entry["feature"],
        enabled=entry["enabled"],
        version=str(entry["version"]),
        description=" ".join(str(entry.get("description") or "").split()),
        min_version=entry.get("min_version"),
        manifests=tuple(entry.get("manifests") or ()),
        requires=tuple(entry.get("requires") or ()),
        configuration=entry.get("configuration"),
        identity=_identity(entry.get("identity")),
        setting=entry.get("setting"),
        sticky=bool(entry.get("sticky")),
    )


# ---------------------------------------------------------------------------------------
# reading the data
# ---------------------------------------------------------------------------------------


def catalog() -> list[Dependency]:
    """Every entry, in install order."""
    return [_dependency(e) for e in load()["dependencies"]]


def by_name() -> dict[str, Dependency]:
    return {d.name: d for d in catalog()}


def images() -> dict[str, Any]:
    return dict(load().get("images") or {})


def features() -> dict[str, Feature]:
    """Every feature, in the data's order."""
    deps = catalog()
    out = {}
    for name, meta in load()["features"].items():
        meta = meta or {}
        out[name] = Feature(
            name=name,
            description=" ".join(str(meta.get("description", "")).split()),
            toggle=bool(meta.get("toggle")),
            note=" ".join(str(meta["note"]).split()) if meta.get("note") else None,
            entries=tuple(d.name for d in deps if d.feature == name))
    return out


def toggles() -> list[str]:
    """The managed features a user turns on and off."""
    return [f.name for f in features().values() if f.toggle]


def feature(name: str) -> Feature:
    found = features().get(name)
    if found is None:
        raise DependencyError(f"unknown feature {name!r}")
    return found


def desired() -> list[Dependency]:
    """The base set, in install order: what a cluster's create installs."""
    return [d for d in catalog() if d.enabled]


def entries(feature_name: str) -> list[Dependency]:
    """The feature's own entries, in install order."""
    return [d for d in catalog() if d.feature == feature_name]


def _closure(names: Iterable[str]) -> set[str]:
    index = by_name()
    out: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in out:
            continue
        out.add(name)
        todo.extend(index[name].requires)
    return out


def with_requirements(names: Iterable[str]) -> list[Dependency]:
    """The entries named and everything they require (transitively), in install order."""
    wanted = _closure(names)
    return [d for d in catalog() if d.name in wanted]


def requirements(feature_name: str) -> list[Dependency]:
    """What the feature's entries need from other features (transitively), in install
    order: ensured before the feature's own entries."""
    own = {d.name for d in entries(feature_name)}
    needed = _closure(r for d in entries(feature_name) for r in d.requires) - own
    return [d for d in catalog() if d.name in needed]


def needed_by(dependency: str) -> list[str]:
    """The managed features whose entries need `dependency` (directly or not)."""
    return [f for f in toggles()
            if dependency in _closure(r for d in entries(f) for r in d.requires)]


def releasable(feature_name: str, enabled_features: Iterable[str]) -> list[Dependency]:
    """The requirements of `feature_name` that turning it off may remove: outside the base
    set, not `sticky` (something outside the features may use it), and needed by none of
    `enabled_features` (the other features that stay on), in reverse install order."""
    keep = _closure(r for f in enabled_features if f != feature_name
                    for d in entries(f) for r in (d.name, *d.requires))
    return [d for d in reversed(requirements(feature_name))
            if not d.enabled and not d.sticky and d.name not in keep]
