"""EKS add-ons and manifests of the dependency graph (cloud/dependencies.py): what is
installed, the plan, the apply, the wait.

`plan` acts only on wanted entries that are missing — a re-run never reinstalls what is
there. There is no Helm here: what HyperPod's chart does that HyperPod documents as required
and that fits in a few small manifests is kept as data and applied with server-side apply;
a Secret annotated for a serving certificate is generated and created once instead
(cloud/serving_certs.py), as a chart's install-time certificate would be.
An add-on whose consumer has an identity is installed bound to its role: Pod Identity
through the add-on's own `podIdentityAssociations`, IRSA through `serviceAccountRoleArn`.

Usage by a stage:

    wanted = dependencies.desired()
    actions = plan(wanted, installed(eks, api, cluster))
    for action in actions:
        apply(action, eks, api, cluster, region, client_token=...)
    # then wait: addons_settled(eks, cluster, [a.dependency.name for a in actions ...])
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from botocore.exceptions import ClientError
from kubernetes.client import ApiClient

from cloud import dependencies, kube, serving_certs
from cloud.aws import CLUSTER_TAG, MANAGED_BY, MANAGED_BY_VALUE, error_code, is_not_found, tags_for
from cloud.dependencies import (
    ADDON,
    DEFAULT_VERSION,
    IRSA,
    MANIFEST_DIR,
    MANIFESTS,
    POD_IDENTITY,
    Dependency,
    DependencyError,
    catalog,
    images,
)
from cloud.errors import NotYet

DEPENDENCY_LABEL = "hypd/dependency"
VERSION_ANNOTATION = "hypd/dependency-version"
IMAGE_PREFIX = "hypd-image:"

INSTALL_ADDON = "install_addon"
UPDATE_ADDON = "update_addon"
APPLY_MANIFESTS = "apply_manifests"
REMOVE_ADDON = "remove_addon"
DELETE_MANIFESTS = "delete_manifests"

# EKS add-on statuses
ADDON_ACTIVE = "ACTIVE"
ADDON_DEGRADED = "DEGRADED"
ADDON_SETTLING = ("CREATING", "UPDATING", "DELETING")
ADDON_FAILED = ("CREATE_FAILED", "UPDATE_FAILED", "DELETE_FAILED")


@dataclass(frozen=True)
class Action:
    kind: str  # INSTALL_ADDON | UPDATE_ADDON | APPLY_MANIFESTS | REMOVE_ADDON | DELETE_MANIFESTS
    dependency: Dependency
    reason: str = ""

    def describe(self) -> dict[str, Any]:
        return {"action": self.kind, "name": self.dependency.name,
                "feature": self.dependency.feature, "version": self.dependency.version,
                "reason": self.reason}


# ---------------------------------------------------------------------------------------
# manifests
# ---------------------------------------------------------------------------------------


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader when PyYAML has it: upstream CRDs are large (KEDA's ScaledJob is
0.6 MB: 2.6 s with the pure-Python loader, 0.3 s with this one)."""


@functools.lru_cache(maxsize=64)
def _manifest_file(file: str) -> tuple[dict[str, Any], ...]:
    with open(MANIFEST_DIR / file, encoding="utf-8") as handle:
        return tuple(doc for doc in yaml.load_all(handle, Loader=_LOADER) if doc)


def image_for(key: str, region: str) -> str:
    spec = images().get(key)
    if spec is None:
        raise DependencyError(f"no image {key!r} in the dependency data")
    if "image" in spec:
        return spec["image"]
    account = (spec.get("registry_accounts") or {}).get(region)
    if not account:
        raise DependencyError(
            f"image {spec['repository']} is not published in {region}; HyperPod publishes it "
            f"in {', '.join(sorted(spec.get('registry_accounts') or {}))}", "precondition_failed")
    suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"{account}.dkr.ecr.{region}.{suffix}/{spec['repository']}:{spec['tag']}"


def _containers(obj: dict[str, Any]) -> Iterable[dict[str, Any]]:
    spec = obj.get("spec") or {}
    pod = spec if obj.get("kind") == "Pod" else (spec.get("template") or {}).get("spec") or {}
    for key in ("initContainers", "containers"):
        yield from pod.get(key) or ()


PLACES = {"hypd-cluster-name": "cluster", "hypd-region": "region"}
"""Values a manifest's container argument ends with (`--cluster-name=hypd-cluster-name`) that
stand for the cluster's name and region (a controller that must be told them)."""


def _place(arg: str, cluster: str | None, region: str) -> str:
    flag, sep, value = arg.partition("=")
    if not sep or value not in PLACES:
        return arg
    placed = {"cluster": cluster or "", "region": region}[PLACES[value]]
    return f"{flag}={placed}"


MANIFEST_VALUES = ("spaces_url", "cluster")
"""The values a manifest's strings may name as `${name}` (a part of a string: the access
strategy's URL template starts with the address people open spaces at, and its paths name
hypd's cluster), filled at install."""


def _filled(value: Any, values: Mapping[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: _filled(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v, values) for v in value]
    if isinstance(value, str) and "${" in value:
        for name in MANIFEST_VALUES:
            if "${" + name + "}" in value:
                if name not in values:
                    raise DependencyError(f"a manifest names ${{{name}}}, which the install "
                                          "did not give")
                value = value.replace("${" + name + "}", values[name])
    return value


def render(dep: Dependency, region: str, cluster: str | None = None,
           values: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The dependency's manifests ready to apply: images resolved for the region, the
    cluster's name and region placed in the arguments that ask for them, `${name}` values
    filled (MANIFEST_VALUES; a delete needs none: names never hold them), and each object
    labelled with hypd's labels and the dependency, annotated with its version."""
    out = []
    for file in dep.manifests:
        for doc in _manifest_file(file):
            obj = kube.stamped(_filled(copy.deepcopy(doc), values) if values is not None
                               else copy.deepcopy(doc))
            metadata = obj["metadata"]
            metadata["labels"][DEPENDENCY_LABEL] = dep.name
            metadata["annotations"] = {**(metadata.get("annotations") or {}),
                                       VERSION_ANNOTATION: dep.version}
            for container in _containers(obj):
                image = container.get("image", "")
                if image.startswith(IMAGE_PREFIX):
                    container["image"] = image_for(image[len(IMAGE_PREFIX):], region)
                if container.get("args"):
                    container["args"] = [_place(str(a), cluster, region)
                                         for a in container["args"]]
            out.append(obj)
    return out


# ---------------------------------------------------------------------------------------
# what is installed
# ---------------------------------------------------------------------------------------


def _list_addons(eks: Any, cluster: str) -> list[str]:
    names, token = [], None
    while True:
        kwargs: dict[str, Any] = {"clusterName": cluster}
        if token:
            kwargs["nextToken"] = token
        reply = eks.list_addons(**kwargs)
        names += reply.get("addons") or []
        token = reply.get("nextToken")
        if not token:
            return names


def addon_state(eks: Any, cluster: str, name: str) -> dict[str, Any] | None:
    """{name, status, version, issues, managed} of an EKS add-on, or None if absent."""
    try:
        addon = eks.describe_addon(clusterName=cluster, addonName=name)["addon"]
    except ClientError as exc:
        if is_not_found(exc):
            return None
        raise
    tags = addon.get("tags") or {}
    return {
        "name": name,
        "status": addon.get("status"),
        "version": addon.get("addonVersion"),
        "issues": [f"{i.get('code', '')}: {i.get('message', '')}".strip(": ")
                   for i in (addon.get("health") or {}).get("issues") or ()],
        "managed": tags.get(MANAGED_BY) == MANAGED_BY_VALUE and tags.get(CLUSTER_TAG) == cluster,
        "service_account_role_arn": addon.get("serviceAccountRoleArn"),
        "pod_identity_associations": list(addon.get("podIdentityAssociations") or ()),
        "configuration": _parsed_configuration(addon.get("configurationValues")),
    }


def _parsed_configuration(raw: str | None) -> dict[str, Any] | None:
    """An add-on's configurationValues as EKS holds them (JSON or YAML), parsed to compare."""
    if not raw:
        return None
    try:
        parsed = yaml.safe_load(raw)
    except yaml.YAMLError:
        return None
    return parsed if isinstance(parsed, dict) else None


def manifest_state(api: ApiClient, dep: Dependency) -> dict[str, Any] | None:
    """{name, version, objects, missing} for a manifests dependency; None when none of its
    objects exist."""
    objects = [doc for file in dep.manifests for doc in _manifest_file(file)]
    present, missing, version = 0, [], None
    for obj in objects:
        meta = obj["metadata"]
        found = kube.get_object(api, obj["apiVersion"], obj["kind"], meta["name"],
                                meta.get("namespace"), metadata_only=True)
        if found is None:
            missing.append(f"{obj['kind']}/{meta['name']}")
            continue
        present += 1
        version = version or ((found.get("metadata") or {}).get("annotations") or {}).get(
            VERSION_ANNOTATION)
    if not present:
        return None
    return {"name": dep.name, "version": version, "objects": present, "missing": missing}


def installed(eks: Any, api: ApiClient | None, cluster: str,
              dependencies: Iterable[Dependency] | None = None) -> dict[str, dict[str, Any]]:
    """What of the catalog's add-ons and manifests is on the cluster now: {name: state}.
    Add-ons from EKS (`addon_state`); manifests from the Kubernetes API (`manifest_state`,
    skipped when `api` is None)."""
    deps = list(dependencies) if dependencies is not None else catalog()
    present = set(_list_addons(eks, cluster))
    out: dict[str, dict[str, Any]] = {}
    for dep in deps:
        if dep.kind == ADDON:
            if dep.name in present:
                state = addon_state(eks, cluster, dep.name)
                if state is not None:
                    out[dep.name] = {"kind": ADDON, **state}
        elif dep.kind == MANIFESTS and api is not None:
            state = manifest_state(api, dep)
            if state is not None:
                out[dep.name] = {"kind": MANIFESTS, **state}
    return out


# ---------------------------------------------------------------------------------------
# plan
# ---------------------------------------------------------------------------------------

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def version_tuple(version: str | None) -> tuple[int, int, int] | None:
    match = _VERSION.search(version or "")
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def below_minimum(version: str | None, minimum: str | None) -> bool:
    have, need = version_tuple(version), version_tuple(minimum)
    return bool(have and need and have < need)


def plan(wanted: Iterable[Dependency], present: Mapping[str, Mapping[str, Any]]
         ) -> list[Action]:
    """What to do, in order: install what is missing (a manifests dependency with some
    objects missing is applied again — server-side apply is idempotent); upgrade an add-on
    below its `min_version`. Nothing that is present is reinstalled. Only add-ons and
    manifests are planned here (identities and HyperPod settings: cloud/features.py)."""
    actions = []
    for dep in wanted:
        if dep.kind not in (ADDON, MANIFESTS):
            continue
        state = present.get(dep.name)
        if dep.kind == ADDON:
            if state is None:
                actions.append(Action(INSTALL_ADDON, dep, "not installed"))
            elif state.get("status") in ADDON_FAILED:
                actions.append(Action(UPDATE_ADDON, dep, f"add-on is {state.get('status')}"))
            elif below_minimum(state.get("version"), dep.min_version):
                actions.append(Action(UPDATE_ADDON, dep, f"{state.get('version')} is below "
                                                         f"the required {dep.min_version}"))
        else:
            if state is None:
                actions.append(Action(APPLY_MANIFESTS, dep, "not installed"))
            elif state.get("missing"):
                actions.append(Action(APPLY_MANIFESTS, dep,
                                      "missing " + ", ".join(state["missing"])))
    return actions


def removal_plan(remove: Iterable[Dependency], present: Mapping[str, Mapping[str, Any]]
                 ) -> list[Action]:
    """For a managed-features switch: remove those of `remove` that are present and hypd's
    (add-ons tagged by hypd; manifests are always hypd's), in reverse install order."""
    actions = []
    for dep in reversed(list(remove)):
        state = present.get(dep.name)
        if state is None:
            continue
        if dep.kind == ADDON and state.get("managed"):
            actions.append(Action(REMOVE_ADDON, dep, "turned off"))
        elif dep.kind == MANIFESTS:
            actions.append(Action(DELETE_MANIFESTS, dep, "turned off"))
    return actions


# ---------------------------------------------------------------------------------------
# apply
# ---------------------------------------------------------------------------------------


def apply(action: Action, eks: Any, api: ApiClient | None, cluster: str, region: str,
          roles: Mapping[str, str] | None = None, client_token: str | None = None,
          values: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Carry out one action, ensure-style (an add-on that already exists is adopted, not
    created again). `roles` maps an identity's role key to the IAM role ARN its consumer is
    bound to; `values` fills an add-on's configuration (`${tls_bucket}`, ...; `${role}` is
    its consumer's role). Returns what was done, for the step's record."""
    dep = action.dependency
    roles = roles or {}
    if action.kind == INSTALL_ADDON:
        role_arn = roles.get(dep.identity.role) if dep.identity else None
        config = dependencies.configuration(dep, {**(values or {}), "role": role_arn or ""})
        return _install_addon(eks, cluster, dep, role_arn, client_token, config)
    if action.kind == UPDATE_ADDON:
        request: dict[str, Any] = {"clusterName": cluster, "addonName": dep.name,
                                   "resolveConflicts": "OVERWRITE"}
        if dep.version != DEFAULT_VERSION:
            request["addonVersion"] = dep.version
        elif dep.min_version:
            request["addonVersion"] = _default_version(eks, cluster, dep.name)
        if client_token:
            request["clientRequestToken"] = client_token
        update = eks.update_addon(**request).get("update") or {}
        return {"name": dep.name, "action": action.kind, "update_id": update.get("id")}
    if action.kind == APPLY_MANIFESTS:
        if api is None:
            raise ValueError("applying manifests needs a kubernetes ApiClient")
        applied, kept = [], []
        for obj in render(dep, region, cluster, values or {}):
            name = f"{obj['kind']}/{obj['metadata']['name']}"
            if serving_certs.service_of(obj):
                # made once, never applied again: a re-run must not rotate the certificate
                if not serving_certs.ensure_secret(api, obj):
                    kept.append(name)
                    continue
            else:
                kube.server_side_apply(api, obj)
            applied.append(name)
        return {"name": dep.name, "action": action.kind, "objects": applied, "kept": kept}
    if action.kind == REMOVE_ADDON:
        try:
            eks.delete_addon(clusterName=cluster, addonName=dep.name)
        except ClientError as exc:
            if not is_not_found(exc):
                raise
        return {"name": dep.name, "action": action.kind}
    if action.kind == DELETE_MANIFESTS:
        if api is None:
            raise ValueError("deleting manifests needs a kubernetes ApiClient")
        deleted = []
        for obj in reversed(render(dep, region)):
            if kube.delete_manifest(api, obj):
                deleted.append(f"{obj['kind']}/{obj['metadata']['name']}")
        return {"name": dep.name, "action": action.kind, "objects": deleted}
    raise ValueError(f"unknown action {action.kind!r}")


def _install_addon(eks: Any, cluster: str, dep: Dependency, role_arn: str | None,
                   client_token: str | None, config: Mapping[str, Any] | None
                   ) -> dict[str, Any]:
    existing = addon_state(eks, cluster, dep.name)
    if existing is not None:
        return {"name": dep.name, "action": INSTALL_ADDON, "adopted": True,
                "status": existing["status"], "version": existing["version"]}
    request: dict[str, Any] = {
        "clusterName": cluster,
        "addonName": dep.name,
        # EKS's own self-managed copies (vpc-cni, kube-proxy, coredns) are taken over
        "resolveConflicts": "OVERWRITE",
        "tags": {t["Key"]: t["Value"] for t in tags_for(CLUSTER_TAG, cluster,
                                                         dependency=dep.name)},
    }
    if dep.version != DEFAULT_VERSION:
        request["addonVersion"] = dep.version
    if config:
        request["configurationValues"] = configuration_values(config)
    identity = dep.identity
    if role_arn and identity is not None and identity.mechanism == POD_IDENTITY:
        request["podIdentityAssociations"] = [{"serviceAccount": identity.service_account,
                                               "roleArn": role_arn}]
    elif role_arn and identity is not None and identity.mechanism == IRSA:
        request["serviceAccountRoleArn"] = role_arn
    if client_token:
        request["clientRequestToken"] = client_token
    try:
        addon = eks.create_addon(**request)["addon"]
    except ClientError as exc:
        if error_code(exc) != "ResourceInUseException":
            raise
        existing = addon_state(eks, cluster, dep.name)
        if existing is None:
            raise
        return {"name": dep.name, "action": INSTALL_ADDON, "adopted": True,
                "status": existing["status"], "version": existing["version"]}
    return {"name": dep.name, "action": INSTALL_ADDON, "adopted": False,
            "status": addon.get("status"), "version": addon.get("addonVersion")}


def configuration_values(config: Mapping[str, Any]) -> str:
    """configurationValues as hypd sends them (JSON, keys sorted: one text per content)."""
    return json.dumps(config, sort_keys=True)


def _default_version(eks: Any, cluster: str, name: str, version: str | None = None) -> str:
    """The add-on version EKS marks default for the cluster's Kubernetes (or `version`)."""
    version = version or eks.describe_cluster(name=cluster)["cluster"]["version"]
    reply = eks.describe_addon_versions(addonName=name, kubernetesVersion=version)
    for addon in reply.get("addons") or ():
        for candidate in addon.get("addonVersions") or ():
            if any(c.get("defaultVersion") for c in candidate.get("compatibilities") or ()):
                return candidate["addonVersion"]
    raise DependencyError(f"EKS offers no default {name} version for Kubernetes {version}",
                          "upstream_error")


def upgrade_addons(eks: Any, cluster: str, kubernetes_version: str,
                   token: Callable[[str], str]) -> list[dict[str, str]]:
    """After a Kubernetes upgrade: every EKS add-on of the cluster moved to the version EKS
    marks default for the new Kubernetes version, where it runs another. An add-on already
    there, or already updating to it, is not asked again; `token(name)` gives each call its
    client request token. Answers [{name, from, to}] of the updates asked for."""
    asked = []
    for name in _list_addons(eks, cluster):
        state = addon_state(eks, cluster, name)
        if state is None:
            continue
        wanted = _default_version(eks, cluster, name, kubernetes_version)
        if state["version"] == wanted:
            continue
        if state["status"] in ADDON_SETTLING:
            raise NotYet(f"add-on {name} is {state['status']}", 15.0)
        eks.update_addon(clusterName=cluster, addonName=name, addonVersion=wanted,
                         resolveConflicts="PRESERVE", clientRequestToken=token(name))
        asked.append({"name": name, "from": state["version"], "to": wanted})
    return asked


# ---------------------------------------------------------------------------------------
# waiting
# ---------------------------------------------------------------------------------------


def addons_settled(eks: Any, cluster: str, names: Iterable[str]) -> dict[str, list[str]]:
    """Where the add-ons stand: {"settled": [...], "pending": [...], "failed": [...],
    "missing": [...]}. ACTIVE and DEGRADED count as settled: on a cluster without nodes yet
    (HyperPod joins after this stage) CoreDNS and other add-ons with pods stay DEGRADED until
    nodes arrive, so a stage must not wait for ACTIVE there. Failed carries the reasons."""
    out: dict[str, list[str]] = {"settled": [], "pending": [], "failed": [], "missing": []}
    for name in names:
        state = addon_state(eks, cluster, name)
        if state is None:
            out["missing"].append(name)
        elif state["status"] in (ADDON_ACTIVE, ADDON_DEGRADED):
            out["settled"].append(name)
        elif state["status"] in ADDON_FAILED:
            issues = "; ".join(state["issues"]) or "no details from EKS"
            out["failed"].append(f"{name} ({state['status']}: {issues})")
        else:
            out["pending"].append(name)
    return out
