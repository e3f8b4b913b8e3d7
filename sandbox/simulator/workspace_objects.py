"""The objects the workspace controller makes from a Workspace, as upstream's builders
(jupyter-k8s internal/controller: constants.go GenerateLabels and the resource names,
pvc_builder.go, deployment_builder.go, service_builder.go, access_resources_builder.go's
URL templates) make them; `workspaces` decides when.
"""

from __future__ import annotations

import base64
import copy
import re
from typing import Any

from sandbox.simulator.workloads import owner_ref
from sandbox.simulator.workspace_server import PORT

NAME_LABEL = "workspace.jupyter.org/workspace-name"
COMPONENT_LABEL = "workspace.jupyter.org/component"
STRATEGY_LABELS = ("workspace.jupyter.org/access-strategy-name",
                   "workspace.jupyter.org/access-strategy-namespace")
CONTAINER = "workspace"
STORAGE_VOLUME = "workspace-storage"
DEFAULT_MOUNT = "/home/jovyan"
DEFAULT_SIZE = "10Gi"
DEFAULT_IMAGE = "jk8s-application-jupyter-uv:latest"
DEFAULT_REQUESTS = {"cpu": "100m", "memory": "128Mi"}
_TEMPLATE = re.compile(r"\{\{-?\s*(b32encode\s+)?\.([A-Za-z.]+)\s*-?\}\}")


def _md(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def labels(name: str) -> dict[str, str]:
    """upstream's GenerateLabels."""
    return {"app": "jupyter", NAME_LABEL: name, COMPONENT_LABEL: "workspace"}


def names(name: str) -> tuple[str, str, str]:
    """(Deployment, Service, home PVC) of a workspace."""
    return f"workspace-{name}", f"workspace-{name}-service", f"workspace-{name}-pvc"


def render(template: str, workspace: dict[str, Any], strategy: dict[str, Any],
           service: dict[str, Any] | None) -> str:
    """An access strategy's Go template: `{{ .Workspace.Name }}`, `{{ .Service.Name }}`,
    `{{ .Workspace.Spec.DisplayName }}`, `{{ b32encode .Workspace.Namespace }}` …; a field
    path the objects lack raises ValueError (Go's template fails too)."""
    objects = {"Workspace": workspace, "AccessStrategy": strategy, "Service": service or {}}

    def value(match: re.Match[str]) -> str:
        parts = match.group(2).split(".")
        if parts[0] not in objects:
            raise ValueError(f"can't evaluate field {parts[0]} in {match.group(0)}")
        node: Any = objects[parts[0]]
        for i, part in enumerate(parts[1:]):
            if i == 0 and part in ("Name", "Namespace", "UID", "Labels", "Annotations"):
                node = (node.get("metadata") or {}).get(part.lower() if part != "UID"
                                                        else "uid")
                continue
            key = part[:1].lower() + part[1:]
            if not isinstance(node, dict) or key not in node:
                raise ValueError(f"can't evaluate field {part} in {match.group(0)}")
            node = node[key]
        text = "" if node is None else str(node)
        if match.group(1):
            text = base64.b32encode(text.encode()).decode().lower().rstrip("=")
        return text

    return _TEMPLATE.sub(value, template)


def pvc(workspace: dict[str, Any]) -> dict[str, Any]:
    md, storage = _md(workspace), (workspace.get("spec") or {}).get("storage") or {}
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {
        "requests": {"storage": str(storage.get("size") or DEFAULT_SIZE)}}}
    if storage.get("storageClassName") is not None:
        spec["storageClassName"] = storage["storageClassName"]
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": names(md["name"])[2], "namespace": md.get("namespace"),
                         "labels": labels(md["name"]),
                         "ownerReferences": [owner_ref(workspace)]},
            "spec": spec}

def deployment(workspace: dict[str, Any]) -> dict[str, Any]:
    md, spec = _md(workspace), workspace.get("spec") or {}
    name = md["name"]
    own_labels = {**labels(name), **(md.get("labels") or {})}
    annotations = dict(md.get("annotations") or {})
    resources = copy.deepcopy(spec.get("resources")) if spec.get("resources") else {
        "requests": dict(DEFAULT_REQUESTS), "limits": dict(DEFAULT_REQUESTS)}
    resources.setdefault("requests", dict(DEFAULT_REQUESTS))
    container: dict[str, Any] = {
        "name": CONTAINER, "image": spec.get("image") or DEFAULT_IMAGE,
        "ports": [{"name": "http", "containerPort": PORT, "protocol": "TCP"}],
        "resources": resources}
    config = spec.get("containerConfig") or {}
    for key in ("command", "args"):
        if config.get(key):
            container[key] = list(config[key])
    for key, field in (("env", "env"), ("readinessProbe", "readinessProbe"),
                       ("lifecycle", "lifecycle"),
                       ("securityContext", "containerSecurityContext")):
        if spec.get(field):
            container[key] = copy.deepcopy(spec[field])
    pod: dict[str, Any] = {"containers": [container]}
    mounts, volumes = [], []
    if spec.get("storage") is not None:
        volumes.append({"name": STORAGE_VOLUME,
                        "persistentVolumeClaim": {"claimName": names(name)[2]}})
        mounts.append({"name": STORAGE_VOLUME, "mountPath": (spec["storage"] or {}).get(
            "mountPath") or DEFAULT_MOUNT})
    for volume in spec.get("volumes") or []:
        if volume.get("name") == STORAGE_VOLUME:
            continue  # upstream skips a name that clashes with the home volume
        volumes.append({"name": volume["name"], "persistentVolumeClaim": {
            "claimName": volume["persistentVolumeClaimName"]}})
        mounts.append({"name": volume["name"], "mountPath": volume["mountPath"]})
    if mounts:
        container["volumeMounts"] = mounts
        pod["volumes"] = volumes
    for key, field in (("nodeSelector", "nodeSelector"), ("affinity", "affinity"),
                       ("tolerations", "tolerations"),
                       ("serviceAccountName", "serviceAccountName"),
                       ("securityContext", "podSecurityContext"),
                       ("initContainers", "initContainers")):
        if spec.get(field):
            pod[key] = copy.deepcopy(spec[field])
    template_md: dict[str, Any] = {"labels": dict(own_labels)}
    if annotations:
        template_md["annotations"] = dict(annotations)
    metadata: dict[str, Any] = {"name": names(name)[0], "namespace": md.get("namespace"),
                                "labels": own_labels,
                                "ownerReferences": [owner_ref(workspace)]}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata,
            "spec": {"replicas": 1, "strategy": {"type": "Recreate"},
                     "selector": {"matchLabels": labels(name)},
                     "template": {"metadata": template_md, "spec": pod}}}

def service(workspace: dict[str, Any]) -> dict[str, Any]:
    md = _md(workspace)
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": names(md["name"])[1], "namespace": md.get("namespace"),
                         "labels": labels(md["name"]),
                         "ownerReferences": [owner_ref(workspace)]},
            "spec": {"type": "ClusterIP", "selector": labels(md["name"]),
                     "ports": [{"name": "http", "port": PORT, "targetPort": PORT,
                                "protocol": "TCP"}]}}
