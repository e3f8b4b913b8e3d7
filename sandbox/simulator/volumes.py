"""The PersistentVolume binder (kube-controller-manager's), as a pure function.

A claim naming its volume (`spec.volumeName`, static provisioning as hypd's S3 and FSx
claims do) is bound to it when the volume is free or reserved for it (`claimRef`), of the
same storage class, offering the claim's access modes and at least its size; a claim
naming none is bound to the smallest such free volume. Binding fills the volume's
`claimRef` (uid included) and sets both phases to `Bound`; the claim's status reports the
volume's access modes and capacity. A volume whose bound claim is gone is `Released`, one
never bound is `Available`; a claim whose volume is gone is `Lost`, one still waiting
`Pending`. Dynamic provisioning is not played (such claims stay `Pending`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sandbox.simulator.scheduling import quantity

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"


@dataclass(frozen=True)
class Change:
    """A write: a merge patch of the object (or None) and its new status (or None)."""

    kind: str  # PersistentVolume | PersistentVolumeClaim
    namespace: str | None
    name: str
    patch: dict[str, Any] | None
    status: dict[str, Any] | None


def _md(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _class(obj: dict[str, Any]) -> str:
    return (obj.get("spec") or {}).get("storageClassName") or ""


def _fits(pv: dict[str, Any], pvc: dict[str, Any]) -> bool:
    pv_spec, pvc_spec = pv.get("spec") or {}, pvc.get("spec") or {}
    if _class(pv) != _class(pvc):
        return False
    if not set(pvc_spec.get("accessModes") or []) <= set(pv_spec.get("accessModes") or []):
        return False
    wanted = ((pvc_spec.get("resources") or {}).get("requests") or {}).get("storage", 0)
    return quantity((pv_spec.get("capacity") or {}).get("storage", 0)) >= quantity(wanted)


def _reserved_for(pv: dict[str, Any], pvc: dict[str, Any]) -> bool | None:
    """True if the volume's claimRef names this claim, False if another, None if none."""
    ref = (pv.get("spec") or {}).get("claimRef")
    if not ref:
        return None
    md = _md(pvc)
    same = ref.get("name") == md.get("name") and ref.get("namespace") == md.get("namespace")
    return same and (not ref.get("uid") or ref.get("uid") == md.get("uid"))


def _status_change(obj: dict[str, Any], wanted: dict[str, Any]) -> dict[str, Any] | None:
    current = obj.get("status") or {}
    if all(current.get(k) == v for k, v in wanted.items()):
        return None
    return {**current, **wanted}


def plan(pvs: list[dict[str, Any]], pvcs: list[dict[str, Any]]) -> list[Change]:
    """The writes that bring volumes and claims to the binder's view of them."""
    changes: list[Change] = []
    by_name = {_md(pv).get("name"): pv for pv in pvs}
    bound: dict[str, dict[str, Any]] = {}  # pv name → claim bound to it now
    for pvc in sorted(pvcs, key=lambda c: (_md(c).get("creationTimestamp") or "",
                                           _md(c).get("namespace"), _md(c).get("name"))):
        md = _md(pvc)
        if md.get("deletionTimestamp"):
            continue
        wanted_pv = (pvc.get("spec") or {}).get("volumeName")
        was_bound = (pvc.get("status") or {}).get("phase") == "Bound"
        chosen: dict[str, Any] | None = None
        if wanted_pv:
            pv = by_name.get(wanted_pv)
            if pv is not None and _reserved_for(pv, pvc) is not False and _fits(pv, pvc):
                chosen = pv
            elif pv is None and was_bound:
                changes.append(Change("PersistentVolumeClaim", md.get("namespace"),
                                      md["name"], None, _status_change(pvc, {"phase": "Lost"})))
                continue
        else:
            free = [pv for pv in pvs if _md(pv).get("name") not in bound
                    and _reserved_for(pv, pvc) is not False and _fits(pv, pvc)]
            free.sort(key=lambda pv: (_reserved_for(pv, pvc) is not True, quantity(
                ((pv.get("spec") or {}).get("capacity") or {}).get("storage", 0))))
            chosen = free[0] if free else None
        if chosen is None or _md(chosen).get("name") in bound:
            status = _status_change(pvc, {"phase": "Pending"})
            if status is not None:
                changes.append(Change("PersistentVolumeClaim", md.get("namespace"),
                                      md["name"], None, status))
            continue
        pv_name = str(_md(chosen).get("name"))
        bound[pv_name] = pvc
        annotations = md.get("annotations") or {}
        pvc_patch: dict[str, Any] = {}
        wanted_notes = {BIND_COMPLETED: "yes"}
        if not wanted_pv:
            wanted_notes[BOUND_BY_CONTROLLER] = "yes"
            pvc_patch["spec"] = {"volumeName": pv_name}
        if any(annotations.get(k) != v for k, v in wanted_notes.items()):
            pvc_patch["metadata"] = {"annotations": wanted_notes}
        pv_spec = chosen.get("spec") or {}
        status = _status_change(pvc, {
            "phase": "Bound",
            "accessModes": list(pv_spec.get("accessModes") or []),
            "capacity": dict(pv_spec.get("capacity") or {}),
        })
        if pvc_patch or status is not None:
            changes.append(Change("PersistentVolumeClaim", md.get("namespace"), md["name"],
                                  pvc_patch or None, status))
        ref = pv_spec.get("claimRef") or {}
        want_ref = {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                    "namespace": md.get("namespace"), "name": md["name"], "uid": md.get("uid")}
        pv_patch: dict[str, Any] = {}
        if any(ref.get(k) != v for k, v in want_ref.items()):
            pv_patch["spec"] = {"claimRef": want_ref}
            if not ref:
                pv_patch["metadata"] = {"annotations": {BOUND_BY_CONTROLLER: "yes"}}
        pv_status = _status_change(chosen, {"phase": "Bound"})
        if pv_patch or pv_status is not None:
            changes.append(Change("PersistentVolume", None, pv_name, pv_patch or None, pv_status))
    claims = {(_md(c).get("namespace"), _md(c).get("name")): c for c in pvcs}
    for pv in pvs:
        name = _md(pv).get("name")
        if name in bound or _md(pv).get("deletionTimestamp"):
            continue
        ref = (pv.get("spec") or {}).get("claimRef")
        claim = claims.get((ref.get("namespace"), ref.get("name"))) if ref else None
        if ref and ref.get("uid") and (claim is None or _md(claim).get("uid") != ref["uid"]):
            phase = "Released"
        else:
            phase = "Available"
        status = _status_change(pv, {"phase": phase})
        if status is not None:
            changes.append(Change("PersistentVolume", None, str(name), None, status))
    return changes
