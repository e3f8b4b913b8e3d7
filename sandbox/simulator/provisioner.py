"""Dynamic provisioning of EBS volumes, as a pure function: what the EBS CSI driver's
external-provisioner and the PV controller's default-class rule do to claims.

- A claim without `storageClassName` at all gets the default StorageClass (annotated
  `storageclass.kubernetes.io/is-default-class: "true"`; the newest if several) — the
  DefaultStorageClass admission plugin does it at creation, the PV controller later
  (retroactive default class assignment, GA in 1.28). An explicit `""` means no class.
- A pending claim of a class whose provisioner is `ebs.csi.aws.com` (or the in-tree
  `kubernetes.io/aws-ebs`, migrated to the CSI driver) gets a PersistentVolume
  `pvc-<claim uid>` once the driver is installed (its CSIDriver object exists: the
  aws-ebs-csi-driver add-on makes it): the request rounded up to whole GiB, the claim's
  access modes, the class's reclaim policy (Delete unless it says), `csi` with the driver,
  a `vol-…` handle and the class's `csi.storage.k8s.io/fstype` (ext4), a claimRef reserving
  it for the claim, `pv.kubernetes.io/provisioned-by`; the claim is annotated
  `volume.kubernetes.io/storage-provisioner`. The binder (`volumes.plan`) then binds them.
- A volume it provisioned, `Released` (its claim gone) with reclaim policy Delete, is
  deleted (and the EBS volume behind it).

Not played: WaitForFirstConsumer's wait (a claim is provisioned when seen, not when its
first pod is scheduled, and the volume has no zone affinity), expansion, other drivers.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

from sandbox.simulator.scheduling import quantity

EBS_DRIVER = "ebs.csi.aws.com"
MIGRATED = {"kubernetes.io/aws-ebs": EBS_DRIVER}
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
STORAGE_PROVISIONER = ("volume.kubernetes.io/storage-provisioner",
                       "volume.beta.kubernetes.io/storage-provisioner")
GIB = 1024 ** 3


@dataclass(frozen=True)
class Action:
    """`claim`: merge-patch a claim; `create`: a new volume; `delete`: a volume."""

    verb: str
    name: str
    namespace: str | None = None
    body: dict[str, Any] | None = None


def _md(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _default_class(classes: list[dict[str, Any]]) -> str | None:
    defaults = [c for c in classes
                if (_md(c).get("annotations") or {}).get(DEFAULT_CLASS) == "true"]
    defaults.sort(key=lambda c: _md(c).get("creationTimestamp") or "")
    return str(_md(defaults[-1])["name"]) if defaults else None


def _volume(claim: dict[str, Any], klass: dict[str, Any], driver: str) -> dict[str, Any]:
    md, spec = _md(claim), claim.get("spec") or {}
    wanted = quantity(((spec.get("resources") or {}).get("requests") or {}).get("storage", 0))
    size = max(1, math.ceil(wanted / GIB))
    uid = str(md.get("uid"))
    handle = "vol-" + hashlib.sha256(uid.encode()).hexdigest()[:17]
    parameters = klass.get("parameters") or {}
    csi: dict[str, Any] = {"driver": driver, "volumeHandle": handle,
                           "fsType": parameters.get("csi.storage.k8s.io/fstype", "ext4")}
    return {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": f"pvc-{uid}", "annotations": {PROVISIONED_BY: driver}},
        "spec": {"capacity": {"storage": f"{size}Gi"},
                 "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
                 "persistentVolumeReclaimPolicy": klass.get("reclaimPolicy") or "Delete",
                 "storageClassName": _md(klass)["name"], "volumeMode": "Filesystem",
                 "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                              "namespace": md.get("namespace"), "name": md["name"],
                              "uid": uid},
                 "csi": csi},
    }


def plan(claims: list[dict[str, Any]], volumes: list[dict[str, Any]],
         classes: list[dict[str, Any]], drivers: set[str]) -> list[Action]:
    """What the provisioner and the default-class rule do now (see the module docstring)."""
    actions: list[Action] = []
    by_name = {str(_md(c)["name"]): c for c in classes}
    default = _default_class(classes)
    claimed = {(_md(c).get("namespace"), _md(c).get("name"), _md(c).get("uid")) for c in claims}
    existing = {str(_md(v)["name"]) for v in volumes}
    for claim in claims:
        md, spec = _md(claim), claim.get("spec") or {}
        if md.get("deletionTimestamp") or spec.get("volumeName"):
            continue
        class_name = spec.get("storageClassName")
        if class_name is None:  # absent: the default class, then provisioned as its claim
            if default is None:
                continue
            class_name = default
            actions.append(Action("claim", md["name"], md.get("namespace"),
                                  {"spec": {"storageClassName": default}}))
        klass = by_name.get(str(class_name))
        provisioner = str((klass or {}).get("provisioner") or "")
        driver = MIGRATED.get(provisioner, provisioner)
        if klass is None or driver != EBS_DRIVER or driver not in drivers or \
                (claim.get("status") or {}).get("phase", "Pending") != "Pending":
            continue
        volume = _volume(claim, klass, driver)
        if volume["metadata"]["name"] in existing:
            continue
        annotations = md.get("annotations") or {}
        if any(annotations.get(k) != driver for k in STORAGE_PROVISIONER):
            actions.append(Action("claim", md["name"], md.get("namespace"), {
                "metadata": {"annotations": dict.fromkeys(STORAGE_PROVISIONER, driver)}}))
        actions.append(Action("create", volume["metadata"]["name"], None, volume))
    for volume in volumes:
        md, spec = _md(volume), volume.get("spec") or {}
        ref = spec.get("claimRef") or {}
        if (md.get("annotations") or {}).get(PROVISIONED_BY) != EBS_DRIVER or \
                spec.get("persistentVolumeReclaimPolicy", "Delete") != "Delete" or \
                (volume.get("status") or {}).get("phase") != "Released" or \
                (ref.get("namespace"), ref.get("name"), ref.get("uid")) in claimed:
            continue
        actions.append(Action("delete", str(md["name"])))
    return actions
