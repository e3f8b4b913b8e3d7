"""What the API server does to an object on its way in: names, stamps, status rules.

Kept apart from the store so the rules read as a list: names are validated the way
Kubernetes validates them, new objects get a uid, creationTimestamp, resourceVersion,
generation and namespace, `status` only changes through the status subresource (for types
that have one), and a CRD gets its `Established` condition.
"""

from __future__ import annotations

import copy
import datetime
import random
import re
import uuid
from typing import Any

from sandbox.kube.catalog import ResourceType
from sandbox.kube.errors import bad_request, invalid

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_RBAC = frozenset({"roles", "rolebindings", "clusterroles", "clusterrolebindings"})
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def now() -> str:
    """RFC 3339 in UTC with seconds, as Kubernetes writes timestamps."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def meta(obj: dict[str, Any]) -> dict[str, Any]:
    value = obj.get("metadata")
    if not isinstance(value, dict):
        value = {}
        obj["metadata"] = value
    return value


def check_name(rt: ResourceType, name: str) -> None:
    """Refuse a name this resource type cannot have (422, with the API server's wording)."""
    if rt.plural in _RBAC and rt.group == "rbac.authorization.k8s.io":
        bad = name in (".", "..") or "/" in name or "%" in name
        detail = 'may not contain "/" or "%", and may not be "." or ".."'
    elif rt.plural == "namespaces" and rt.group == "":
        bad = len(name) > 63 or not _LABEL.match(name)
        detail = (
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
            "'-', and must start and end with an alphanumeric character"
        )
    else:
        bad = len(name) > 253 or not _SUBDOMAIN.match(name)
        detail = (
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
            "characters, '-' or '.', and must start and end with an alphanumeric character"
        )
    if bad:
        raise invalid(rt.kind, rt.group, name, "metadata.name", detail, name)


def prepare_new(rt: ResourceType, namespace: str | None, body: Any, rv: int) -> dict[str, Any]:
    """A create request's object as it will be stored (raises for bad input)."""
    if not isinstance(body, dict):
        raise bad_request("the body of the request is not a Kubernetes object")
    obj = copy.deepcopy(body)
    check_kind(rt, obj)
    md = meta(obj)
    if rt.namespaced:
        given = md.get("namespace")
        if namespace and given and given != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on "
                "the request"
            )
        md["namespace"] = namespace or given or "default"
    else:
        md.pop("namespace", None)
    if not md.get("name"):
        prefix = md.get("generateName")
        if not prefix:
            raise invalid(
                rt.kind,
                rt.group,
                "",
                "metadata.name",
                "Required value: name or generateName is required",
            )
        md["name"] = prefix + "".join(random.choices(_GENERATE_ALPHABET, k=5))
    check_name(rt, md["name"])
    for key in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
        md.pop(key, None)
    md["uid"] = str(uuid.uuid4())
    md["creationTimestamp"] = now()
    md["resourceVersion"] = str(rv)
    md["generation"] = 1
    obj["apiVersion"] = rt.storage_api_version
    obj["kind"] = rt.kind
    initial_status(rt, obj)
    return obj


def check_kind(rt: ResourceType, obj: dict[str, Any]) -> None:
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if api_version and api_version != rt.api_version:
        raise bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({rt.api_version})"
        )
    if kind and kind != rt.kind:
        raise bad_request(
            f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})"
        )


def initial_status(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Status a new object starts with (a controller or the simulator fills in the rest)."""
    if rt.has_status and rt.crd is not None:
        obj.pop("status", None)  # custom resources: status only via /status
    if rt.group == "" and rt.plural == "pods":
        obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
    elif rt.group == "" and rt.plural == "namespaces":
        obj["status"] = {"phase": "Active"}
    elif rt.group == "apiextensions.k8s.io" and rt.plural == "customresourcedefinitions":
        crd_status(obj)


def carry_over(
    rt: ResourceType, old: dict[str, Any], new: dict[str, Any], subresource: str | None
) -> dict[str, Any]:
    """Keep what an update may not change: identity stamps, and status or everything else."""
    new = copy.deepcopy(new)
    old_md, md = old.get("metadata") or {}, meta(new)
    for key in ("uid", "creationTimestamp", "namespace", "name", "deletionTimestamp"):
        if key in old_md:
            md[key] = old_md[key]
        else:
            md.pop(key, None)
    md["generation"] = old_md.get("generation", 1)
    new["apiVersion"], new["kind"] = old.get("apiVersion"), old.get("kind")
    if subresource == "status":
        status = new.get("status")
        new = copy.deepcopy(old)
        if status is None:
            new.pop("status", None)
        else:
            new["status"] = status
    elif rt.has_status:
        if "status" in old:
            new["status"] = copy.deepcopy(old["status"])
        else:
            new.pop("status", None)
    if rt.group == "apiextensions.k8s.io" and rt.plural == "customresourcedefinitions":
        crd_status(new)
    if _spec_changed(old, new):
        md["generation"] = int(old_md.get("generation", 1)) + 1
    return new


def _spec_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    def body(obj: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in obj.items() if k not in ("metadata", "status")}

    return body(old) != body(new)


def crd_status(crd: dict[str, Any]) -> None:
    """A CRD is accepted and established at once (there is no controller to wait for)."""
    spec = crd.get("spec") or {}
    stamp = now()
    storage = [v.get("name") for v in spec.get("versions") or [] if v.get("storage")]
    crd["status"] = {
        "acceptedNames": copy.deepcopy(spec.get("names") or {}),
        "conditions": [
            {
                "type": "NamesAccepted",
                "status": "True",
                "reason": "NoConflicts",
                "message": "no conflicts found",
                "lastTransitionTime": stamp,
            },
            {
                "type": "Established",
                "status": "True",
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
                "lastTransitionTime": stamp,
            },
        ],
        "storedVersions": storage,
    }


def check_crd(rt: ResourceType, crd: dict[str, Any]) -> None:
    """The parts of a CRD the sandbox needs to serve it."""
    name = (crd.get("metadata") or {}).get("name", "")
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group, plural, kind = spec.get("group"), names.get("plural"), names.get("kind")
    if not group or not plural or not kind:
        raise invalid(
            rt.kind, rt.group, name, "spec", "Required value: group, names.plural and names.kind"
        )
    if name != f"{plural}.{group}":
        raise invalid(
            rt.kind,
            rt.group,
            name,
            "metadata.name",
            f'must be spec.names.plural+"."+spec.group ({plural}.{group})',
            name,
        )
    versions = spec.get("versions") or []
    if not versions or sum(1 for v in versions if v.get("storage")) != 1:
        raise invalid(
            rt.kind,
            rt.group,
            name,
            "spec.versions",
            "must have exactly one version marked as storage version",
        )
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        raise invalid(
            rt.kind,
            rt.group,
            name,
            "spec.scope",
            'Unsupported value: supported values: "Cluster", "Namespaced"',
            spec.get("scope"),
        )
