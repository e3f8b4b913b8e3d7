"""The task-governance add-on's controller, simulated: SageMaker's compute quotas and
cluster scheduler config become Kueue objects in the local Kubernetes of the HyperPod
cluster's EKS cluster.

While `amazon-sagemaker-hyperpod-taskgovernance` is ACTIVE on an EKS cluster, `sync` makes
that cluster hold exactly the objects `kueue_objects.desired` builds from the quotas and
scheduler config of the HyperPod clusters it orchestrates: a quota counts from the moment it
is Created (its current version once Updated; while Updating, the version before; while
Deleting, the last one) until it is gone; then its namespace (with what is in it), queues and
unused flavors go. Objects the add-on made carry `sagemaker.amazonaws.com/
sagemaker-managed-queue: "true"`; others are left alone. A namespace that already exists
keeps its other labels.

Every custom object is written through the local API server's own admission (pruning and
structural validation against the real Kueue v0.19.2 CRDs the add-on installs, with
`fieldValidation=Strict`), so a field the CRD does not know is an error here, not a silent
loss. The writes are the add-on's (manager `kueue-addon`), not a client's: the clusters'
write log does not count them.

When: after each governance change (`sagemaker_governance._change`) and when the add-on
turns ACTIVE (`eks_addon_calls._becomes`), both as a timed change due at once, so that no
other gap's lock is held while this takes theirs one at a time.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from typing import Any

from sandbox.gaps.eks_addon_calls import GOVERNANCE_ADDON as ADDON
from sandbox.gaps.eks_state import state as eks
from sandbox.gaps.sagemaker_governance import GOVERNANCE, QUOTA, SCHEDULER
from sandbox.gaps.sagemaker_state import hyperpod
from sandbox.kube import validation
from sandbox.kube.errors import KubeError
from sandbox.kube.patches import MERGE_PATCH
from sandbox.kube.store import Checks
from sandbox.simulator import kueue_objects as ko

log = logging.getLogger(__name__)

MANAGER = "kueue-addon"
SETTLED = ("Created", "Updated", "Deleting")
MANAGED_KINDS = (("v1", "Namespace"), (ko.API_VERSION, "LocalQueue"),
                 (ko.API_VERSION, "ClusterQueue"), (ko.API_VERSION, "ResourceFlavor"),
                 (ko.API_VERSION, "WorkloadPriorityClass"))


def _applied(record: dict[str, Any], version_key: str) -> dict[str, Any] | None:
    """The version of a quota or config the add-on has made real, if any."""
    current = record["current"]
    if current["Status"] in SETTLED:
        return current
    if current["Status"] == "Updating":
        return record["versions"].get(current[version_key] - 1)
    return None


def _governed(app: Any) -> list[tuple[str, list[dict[str, Any]], dict[str, Any] | None]]:
    """(EKS cluster name, applied quotas, applied scheduler config) of every EKS cluster with
    the add-on ACTIVE (each gap's lock taken alone, in turn)."""
    with eks(app).lock:
        active = {(r.account, r.region, r.name) for r in eks(app).clusters.values()
                  if (r.addons.get(ADDON) or {}).get("status") == "ACTIVE"}
    hp = hyperpod(app)
    with hp.lock:
        arns = {c.arn: (account, region, c.eks_name)
                for (account, region), clusters in hp.clusters.items()
                for c in clusters.values()}
    gov = GOVERNANCE.of(app)
    with gov.lock:
        quotas = [(r["current"]["ClusterArn"], _applied(r, QUOTA.version_key))
                  for r in gov.book(QUOTA).values()]
        configs = [(r["current"]["ClusterArn"], _applied(r, SCHEDULER.version_key))
                   for r in gov.book(SCHEDULER).values()]
        quotas, configs = copy.deepcopy(quotas), copy.deepcopy(configs)
    out = []
    for account, region, name in sorted(active):
        mine = {arn for arn, where in arns.items() if where == (account, region, name)}
        out.append((name, [q for arn, q in quotas if arn in mine and q is not None],
                    next((c for arn, c in configs if arn in mine and c is not None), None)))
    return out


def sync(app: Any) -> None:
    """Bring every governed cluster's Kueue objects in line with SageMaker's records."""
    for name, quotas, config in _governed(app):
        kube = app.kubes.get(name)
        if kube is None or kube.catalog.for_kind(ko.API_VERSION, "ClusterQueue") is None:
            continue
        try:
            _apply(kube, ko.desired(quotas, config))
        except Exception:  # a sandbox bug must not break the AWS call that ticked the clock
            log.exception("task governance add-on: sync of %s failed", name)


def _key(obj: dict[str, Any]) -> tuple[str, str, str | None]:
    md = obj["metadata"]
    return obj["kind"], md["name"], md.get("namespace")


def _apply(kube: Any, wanted: list[dict[str, Any]]) -> None:
    keep = {_key(o) for o in wanted}
    for obj in wanted:
        _put(kube, obj)
    selector = f"{ko.MANAGED_QUEUE}=true"
    for api_version, kind in MANAGED_KINDS:
        for found in kube.list_objects(api_version, kind, None, selector):
            md = found["metadata"]
            if (kind, md["name"], md.get("namespace")) not in keep:
                kube.delete_object(api_version, kind, md["name"], md.get("namespace"))


def _put(kube: Any, obj: dict[str, Any]) -> None:
    rt = kube.catalog.for_kind(obj["apiVersion"], obj["kind"])
    md = obj["metadata"]
    namespace = md.get("namespace") if rt.namespaced else None
    old = kube.get_object(obj["apiVersion"], obj["kind"], md["name"], namespace)
    checks = Checks(mode=validation.STRICT)
    if old is None:
        kube.store.create(rt, namespace, obj, MANAGER, checks=checks)
        return
    if obj["kind"] == "Namespace":  # someone's namespace: only the add-on's labels change
        labels = (old["metadata"].get("labels") or {})
        if any(labels.get(k) != v for k, v in md["labels"].items()):
            with contextlib.suppress(KubeError):
                kube.store.patch(rt, None, md["name"], MERGE_PATCH,
                                 {"metadata": {"labels": md["labels"]}}, MANAGER)
        return
    # a replace that changes nothing writes nothing (the store compares after defaulting)
    kube.store.replace(rt, namespace, md["name"], obj, MANAGER, checks=checks)
