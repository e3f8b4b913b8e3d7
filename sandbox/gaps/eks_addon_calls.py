"""EKS add-ons (moto 5.2.5 has none): create, describe, list, update, delete, versions.

An add-on is CREATING for `ADDON_CREATING_S` simulated seconds, then ACTIVE — or DEGRADED
with a health issue while what it needs is missing (a Ready node for CoreDNS and the like,
cert-manager and the Pod Identity agent for the training operator), turning ACTIVE once it is
there. When it turns ACTIVE its objects appear in the cluster's local Kubernetes (namespace,
CRDs, workload), so e.g. HyperPodPyTorchJob exists only once the training operator add-on
is installed; deleting the add-on (DELETING, then gone) removes them unless `preserve`.
Updates are UPDATING, then ACTIVE, and are visible through DescribeUpdate.
"""

from __future__ import annotations

import uuid
from typing import Any

import jsonschema
import yaml

from sandbox.gaps import GapContext, answers
from sandbox.gaps.eks_access import add_association
from sandbox.gaps.eks_addons import BY_NAME, CATALOGUE, Addon, describe
from sandbox.gaps.eks_state import (
    ClusterRecord,
    arn,
    existing,
    in_use,
    invalid,
    new_update,
    not_found,
    now,
    state,
)
from sandbox.gaps.sagemaker_common import iam_role, s3_bucket
from sandbox.gaps.sagemaker_governance import settle_kueue

ADDON_CREATING_S = 90.0
ADDON_UPDATING_S = 60.0
ADDON_DELETING_S = 60.0
GOVERNANCE_ADDON = "amazon-sagemaker-hyperpod-taskgovernance"


def _after(ctx: GapContext, seconds: float, change: Any) -> None:
    ctx.app.transitions.timeline.after(seconds, change)


def _spec(name: str, kubernetes_version: str) -> Addon:
    spec = BY_NAME.get(name)
    if spec is None or not spec.compatible(kubernetes_version):
        raise invalid(
            f"Addon {name} specified is not supported in {kubernetes_version} kubernetes version"
        )
    return spec


def _version(spec: Addon, wanted: str | None, kubernetes_version: str) -> str:
    if wanted is None:
        return str(spec.default_version(kubernetes_version))
    if wanted not in spec.compatible(kubernetes_version):
        raise invalid(
            f"Addon version specified is not supported: {spec.name} {wanted} does not support "
            f"Kubernetes {kubernetes_version}"
        )
    return wanted


def parsed_configuration(value: str | None) -> dict[str, Any]:
    if value is None or not value.strip():
        return {}
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _configuration(value: str | None, spec: Addon) -> None:
    """Refuse configurationValues that are not an object or break the add-on's schema (an
    add-on that requires configuration refuses none at all)."""
    if value is None:
        if spec.configuration is not None:
            raise invalid(
                f"ConfigurationValue is required for {spec.name}: see "
                "DescribeAddonConfiguration for its schema"
            )
        return
    try:
        parsed = yaml.safe_load(value) if value.strip() else {}
    except yaml.YAMLError as exc:
        raise invalid(f"ConfigurationValue provided in request is not supported: {exc}") from exc
    if not isinstance(parsed, dict):
        raise invalid(
            "ConfigurationValue provided in request is not supported: not a JSON/YAML object"
        )
    if spec.configuration is not None:
        problem = next(iter(jsonschema.Draft7Validator(spec.configuration).iter_errors(parsed)),
                       None)
        if problem is not None:
            where = "/".join(str(x) for x in problem.absolute_path) or "(root)"
            raise invalid(
                "ConfigurationValue provided in request is not supported: Json schema "
                f"validation failed with error: [{where}: {problem.message}]"
            )


def _reference_issues(rec: ClusterRecord, addon: dict[str, Any], spec: Addon
                      ) -> list[dict[str, Any]]:
    """A role or bucket the configuration names that does not exist: the add-on's pods fail
    (AssumeRoleWithWebIdentity, certificate upload), so it is unhealthy."""
    config = parsed_configuration(addon.get("configurationValues"))
    issues = []
    for key, kind in spec.references:
        value = config.get(key)
        if not isinstance(value, str):
            continue
        if kind == "role":
            found = iam_role(rec.account, value) is not None
        else:
            found = s3_bucket(rec.account, value.removeprefix("s3://")) is not None
        if not found:
            issues.append(
                {
                    "code": "ConfigurationConflict",
                    "message": f"{key} names {value}, which does not exist in this account.",
                    "resourceIds": [value],
                }
            )
    return issues


# --- health and the cluster's objects ----------------------------------------------------


def _ready_nodes(kube: Any) -> bool:
    for node in kube.list_objects("v1", "Node"):
        for condition in (node.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "Ready" and condition.get("status") == "True":
                return True
    return False


def _issues(kube: Any, spec: Addon) -> list[dict[str, Any]]:
    issues: list[dict[str, Any]] = []
    if kube is None:
        return [
            {
                "code": "ClusterUnreachable",
                "message": "The cluster is unreachable.",
                "resourceIds": [],
            }
        ]
    if spec.needs_nodes and not _ready_nodes(kube):
        issues.append(
            {
                "code": "InsufficientNumberOfReplicas",
                "message": "The add-on is unhealthy because it doesn't have the desired number "
                "of replicas.",
                "resourceIds": [],
            }
        )
    for api_version, kind, name, namespace in spec.requires:
        if kube.get_object(api_version, kind, name, namespace) is None:
            where = f"{namespace}/{name}" if namespace else name
            issues.append(
                {
                    "code": "K8sResourceNotFound",
                    "message": f"{kind} {where} not found: install what {spec.name} depends on "
                    "first.",
                    "resourceIds": [where],
                }
            )
    return issues


def _settle(app: Any, rec: ClusterRecord, name: str) -> None:
    """ACTIVE or DEGRADED, from what the cluster holds now (installed add-ons only)."""
    addon = rec.addons.get(name)
    if addon is None or addon["status"] not in ("ACTIVE", "DEGRADED"):
        return
    kube = app.kubes.get(rec.name)
    spec = BY_NAME[name]
    issues = _issues(kube, spec) + _reference_issues(rec, addon, spec)
    addon["health"] = {"issues": issues}
    addon["status"] = "DEGRADED" if issues else "ACTIVE"


def _install_objects(app: Any, rec: ClusterRecord, spec: Addon) -> None:
    kube = app.kubes.get(rec.name)
    if kube is None:
        return
    for obj in spec.objects():
        kube.put_object(obj)


def _remove_objects(app: Any, rec: ClusterRecord, spec: Addon) -> None:
    kube = app.kubes.get(rec.name)
    if kube is None:
        return
    for obj in reversed(spec.objects()):
        md = obj["metadata"]
        kube.delete_object(obj["apiVersion"], obj["kind"], md["name"], md.get("namespace"))


def _becomes(
    app: Any,
    rec: ClusterRecord,
    name: str,
    addon_id: str,
    status: str,
    update_id: str | None = None,
) -> Any:
    """A timed change: CREATING/UPDATING → ACTIVE (or DEGRADED) for this very add-on."""

    def change() -> None:
        with state(app).lock:
            addon = rec.addons.get(name)
            if addon is None or addon["_id"] != addon_id or addon["status"] != status:
                return
            if status == "CREATING":
                _install_objects(app, rec, BY_NAME[name])
                if name == GOVERNANCE_ADDON:  # the add-on's controller makes the quotas real
                    settle_kueue(app)
            addon["status"] = "ACTIVE"
            addon["modifiedAt"] = now()
            _settle(app, rec, name)
            if update_id and update_id in rec.updates:
                rec.updates[update_id]["status"] = "Successful"

    return change


def _gone(app: Any, rec: ClusterRecord, name: str, addon_id: str, preserve: bool) -> Any:
    def change() -> None:
        with state(app).lock:
            addon = rec.addons.get(name)
            if addon is None or addon["_id"] != addon_id or addon["status"] != "DELETING":
                return
            del rec.addons[name]
            for association_id in addon.get("_associations", []):
                rec.pod_identities.pop(association_id, None)
            if not preserve:
                _remove_objects(app, rec, BY_NAME[name])

    return change


def _current(ctx: GapContext, rec: ClusterRecord) -> None:
    """Re-evaluate installed add-ons' health (nodes or dependencies may have appeared)."""
    for name in list(rec.addons):
        _settle(ctx.app, rec, name)


def _addon(rec: ClusterRecord, name: str) -> dict[str, Any]:
    addon = rec.addons.get(name)
    if addon is None:
        raise not_found(f"No addon: {name} found in cluster: {rec.name}")
    return addon


# --- calls -------------------------------------------------------------------------------


@answers("eks", "CreateAddon")
def create_addon(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    rec = existing(ctx, p["clusterName"])
    name = p["addonName"]
    with state(ctx).lock:
        made = rec.replay("addon", p, rec.addons)
        if made is not None and made["addonName"] == name:
            return {"addon": dict(made)}
        if name in rec.addons:
            raise in_use("Addon already exists.")
        rec.require_active()
        spec = _spec(name, rec.kubernetes_version)
        version = _version(spec, p.get("addonVersion"), rec.kubernetes_version)
        _configuration(p.get("configurationValues"), spec)
        addon_arn = arn(ctx, "addon", rec.name, name, str(uuid.uuid4()))
        associations = [
            add_association(
                ctx, rec, spec.namespace, item["serviceAccount"], item["roleArn"],
                owner_arn=addon_arn,
            )
            for item in p.get("podIdentityAssociations") or []
        ]
        stamp = now()
        addon: dict[str, Any] = {
            "addonName": name,
            "clusterName": rec.name,
            "status": "CREATING",
            "addonVersion": version,
            "health": {"issues": []},
            "addonArn": addon_arn,
            "createdAt": stamp,
            "modifiedAt": stamp,
            "tags": dict(p.get("tags") or {}),
            "publisher": spec.publisher,
            "owner": spec.owner,
            "podIdentityAssociations": [a["associationArn"] for a in associations],
            "_id": uuid.uuid4().hex,
            "_associations": [a["associationId"] for a in associations],
        }
        for key in ("serviceAccountRoleArn", "configurationValues", "namespaceConfig"):
            if p.get(key) is not None:
                addon[key] = p[key]
        rec.addons[name] = addon
        rec.remember("addon", p, name)
        answer = {"addon": dict(addon)}
    # scheduled outside the lock: due changes run under the timeline's lock and take ours
    _after(ctx, ADDON_CREATING_S, _becomes(ctx.app, rec, name, addon["_id"], "CREATING"))
    return answer


@answers("eks", "DescribeAddon")
def describe_addon(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    rec = existing(ctx, p["clusterName"])
    with state(ctx).lock:
        _current(ctx, rec)
        return {"addon": dict(_addon(rec, p["addonName"]))}


@answers("eks", "ListAddons")
def list_addons(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    rec = existing(ctx, p["clusterName"])
    return ctx.page(sorted(rec.addons), "addons", default=100)


@answers("eks", "UpdateAddon")
def update_addon(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    rec = existing(ctx, p["clusterName"])
    name = p["addonName"]
    with state(ctx).lock:
        made = rec.replay("addon-update", p, rec.updates)
        if made is not None:
            return {"update": dict(made)}
        addon = _addon(rec, name)
        if addon["status"] in ("CREATING", "UPDATING", "DELETING"):
            raise in_use(f"Addon {name} is in {addon['status']} state and can't be updated now.")
        spec = _spec(name, rec.kubernetes_version)
        params: list[dict[str, str]] = []
        if p.get("addonVersion") is not None:
            addon["addonVersion"] = _version(spec, p["addonVersion"], rec.kubernetes_version)
            params.append({"type": "AddonVersion", "value": addon["addonVersion"]})
        if p.get("serviceAccountRoleArn") is not None:
            addon["serviceAccountRoleArn"] = p["serviceAccountRoleArn"]
            params.append({"type": "ServiceAccountRoleArn", "value": p["serviceAccountRoleArn"]})
        if p.get("configurationValues") is not None:
            _configuration(p["configurationValues"], BY_NAME[name])
            addon["configurationValues"] = p["configurationValues"]
            params.append({"type": "ConfigurationValues", "value": p["configurationValues"]})
        if p.get("resolveConflicts") is not None:
            params.append({"type": "ResolveConflicts", "value": p["resolveConflicts"]})
        update = new_update(rec, "AddonUpdate", params, p, addon=name)
        addon["status"] = "UPDATING"
        addon["modifiedAt"] = now()
        answer = {"update": dict(update)}
    _after(
        ctx, ADDON_UPDATING_S, _becomes(ctx.app, rec, name, addon["_id"], "UPDATING", update["id"])
    )
    return answer


@answers("eks", "DeleteAddon")
def delete_addon(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    rec = existing(ctx, p["clusterName"])
    name = p["addonName"]
    with state(ctx).lock:
        addon = _addon(rec, name)
        starting = addon["status"] != "DELETING"
        if starting:
            addon["status"] = "DELETING"
            addon["modifiedAt"] = now()
        answer = {"addon": dict(addon)}
    if starting:
        _after(
            ctx, ADDON_DELETING_S, _gone(ctx.app, rec, name, addon["_id"], bool(p.get("preserve")))
        )
    return answer


@answers("eks", "DescribeAddonVersions")
def describe_addon_versions(ctx: GapContext, p: dict[str, Any]) -> dict[str, Any]:
    items = []
    for spec in CATALOGUE:
        if p.get("addonName") not in (None, spec.name):
            continue
        if p.get("types") and spec.type not in p["types"]:
            continue
        if p.get("publishers") and spec.publisher not in p["publishers"]:
            continue
        if p.get("owners") and spec.owner not in p["owners"]:
            continue
        item = describe(spec, p.get("kubernetesVersion"))
        if item is not None:
            items.append(item)
    return ctx.page(items, "addons", default=100)
