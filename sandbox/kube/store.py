"""The objects of one local Kubernetes, kept in kmock's emulator, with API-server rules.

kmock's `KubernetesEmulator.objects` holds the state; this class adds what the API server
does around it: one resourceVersion counter, stamping, optimistic concurrency, field
managers, finalizers, garbage collection through ownerReferences, namespace deletion, CRDs
that register their resources, and a bounded event history for watches. Every method takes
the store's lock, so the HTTP handler (on the event loop) and the sandbox's own in-process
callers (other threads) see one consistent state.
"""

from __future__ import annotations

import base64
import collections
import copy
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kmock import KubernetesEmulator

from sandbox.kube import fields, objects, patches, validation
from sandbox.kube.catalog import Catalog, ResourceType
from sandbox.kube.errors import (
    KubeError,
    already_exists,
    bad_request,
    conflict,
    gone,
    not_found,
    unsupported_media_type,
)

EVENT_HISTORY = 4096  # watch events kept for clients that resume from a resourceVersion
ORPHAN_BY_DEFAULT = frozenset({("batch", "jobs")})
"""Kinds whose dependents a deletion without a propagation policy orphans."""
Key = tuple[Any, str | None, str]
Match = Callable[[dict[str, Any]], bool]


@dataclass
class Checks:
    """How a write treats fields its CRD's schema does not know (`?fieldValidation=`:
    Strict, Warn, Ignore), and where the warnings for them go (the answer's headers)."""

    mode: str = validation.WARN
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Event:
    """One change, as a watch reports it (`obj` is the new state, or the last one)."""

    rv: int
    type: str  # ADDED | MODIFIED | DELETED
    group: str
    plural: str
    obj: dict[str, Any]
    old: dict[str, Any] | None


def _same(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Equal but for the times in managedFields (a no-op write changes nothing)."""

    def strip(obj: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(obj)
        for entry in (out.get("metadata") or {}).get("managedFields") or []:
            entry.pop("time", None)
        return out

    return strip(old) == strip(new)


def present(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """An object as served at `rt`'s version (stored once, served at every version)."""
    out = copy.deepcopy(obj)
    out["apiVersion"] = rt.api_version
    return out


class Store:
    def __init__(
        self, emulator: KubernetesEmulator, catalog: Catalog, on_event: Callable[[Event], None]
    ) -> None:
        self.emulator = emulator
        self.catalog = catalog
        self._on_event = on_event
        self._lock = threading.RLock()
        self._rv = 0
        self._history: collections.deque[Event] = collections.deque(maxlen=EVENT_HISTORY)
        self._evicted_rv = 0  # newest resourceVersion no longer in the history
        self.on_removed: list[Callable[[ResourceType, dict[str, Any]], None]] = []
        self.webhooks: list[Callable[[ResourceType, dict[str, Any]], None]] = []
        """Mutating admission of a new object (through the API or in-process, as a real
        webhook sees a controller's creates too): each may change it in place, e.g. the
        sandbox's Kueue gating a queued pod (simulator/kueue_jobs.py `pod_webhook`)."""

    # --- bookkeeping ------------------------------------------------------------------

    def current_rv(self) -> str:
        with self._lock:
            return str(self._rv)

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _key(self, rt: ResourceType, namespace: str | None, name: str) -> Key:
        return (rt.key, namespace if rt.namespaced else None, name)

    def _load(self, key: Key) -> dict[str, Any] | None:
        if key not in self.emulator.objects:
            return None
        obj = self.emulator.objects[key]
        return None if obj.deleted else copy.deepcopy(obj.raw)

    def _emit(
        self, kind: str, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        rv = int(obj["metadata"]["resourceVersion"])
        if len(self._history) == self._history.maxlen:
            self._evicted_rv = self._history[0].rv
        event = Event(rv, kind, rt.group, rt.plural, copy.deepcopy(obj), old)
        self._history.append(event)
        self._on_event(event)

    def _write(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> dict[str, Any]:
        md = obj["metadata"]
        md["resourceVersion"] = str(self._next_rv())
        key = self._key(rt, md.get("namespace"), md["name"])
        self.emulator.objects[key] = copy.deepcopy(obj)
        self._emit("ADDED" if old is None else "MODIFIED", rt, obj, old)
        self._after_write(rt, obj)
        if md.get("deletionTimestamp") and not md.get("finalizers"):
            self._remove(rt, obj, None)
        return obj

    def _admit(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        subresource: str | None,
        checks: Checks | None,
    ) -> dict[str, Any]:
        """A custom resource pruned and validated against its CRD version's schema."""
        if rt.crd is None:
            return obj
        checks = checks or Checks()
        return validation.admit(
            rt, self.catalog.schema(rt), obj, subresource, checks.mode, checks.warnings
        )

    def _mutate(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        for webhook in self.webhooks:
            webhook(rt, obj)

    def _after_write(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        if rt.group == "apiextensions.k8s.io" and rt.plural == "customresourcedefinitions":
            self.catalog.register_crd(obj)

    def _remove(
        self, rt: ResourceType, obj: dict[str, Any], propagation: str | None
    ) -> dict[str, Any]:
        md = obj["metadata"]
        key = self._key(rt, md.get("namespace"), md["name"])
        if key in self.emulator.objects:
            del self.emulator.objects[key]
        last = copy.deepcopy(obj)
        last["metadata"]["resourceVersion"] = str(self._next_rv())
        self._emit("DELETED", rt, last, None)
        for hook in self.on_removed:
            hook(rt, last)
        self._cascade(rt, last, propagation)
        return last

    def _cascade(self, rt: ResourceType, gone_obj: dict[str, Any], propagation: str | None) -> None:
        """What the garbage collector, namespace controller and CRD controller would do."""
        md = gone_obj["metadata"]
        if rt.group == "" and rt.plural == "namespaces":
            for (res, ns, _name), _obj in list(self.emulator.objects.items()):
                if ns == md["name"]:
                    dep_rt = self.catalog.storage_type(res.group or "", res.plural or "")
                    dependent = self._load((res, ns, _name))
                    if dep_rt is not None and dependent is not None:
                        self._remove(dep_rt, dependent, None)
        if rt.group == "apiextensions.k8s.io" and rt.plural == "customresourcedefinitions":
            for crt in self.catalog.unregister_crd(md["name"]):
                if crt.version != crt.storage_version:
                    continue
                for key in [k for k in self.emulator.objects if k[0] == crt.key]:
                    obj = self._load(key)
                    if obj is not None:
                        self._remove(crt, obj, None)
        uid = md.get("uid")
        if not uid:
            return
        for key, stored in list(self.emulator.objects.items()):
            # the owner test reads the stored object in place: copying every object of the
            # store at each removal made deleting n objects O(n²) copies
            if stored.deleted or not any(
                    r.get("uid") == uid
                    for r in (stored.raw.get("metadata") or {}).get("ownerReferences") or []):
                continue
            dependent = self._load(key)
            if dependent is None:
                continue
            refs = (dependent.get("metadata") or {}).get("ownerReferences") or []
            dep_rt = self.catalog.storage_type(key[0].group or "", key[0].plural or "")
            if dep_rt is None:
                continue
            if propagation == "Orphan":
                old = copy.deepcopy(dependent)
                dependent["metadata"]["ownerReferences"] = [r for r in refs if r.get("uid") != uid]
                self._write(dep_rt, dependent, old)
            else:
                self._delete_obj(dep_rt, dependent, None)

    def _delete_obj(
        self, rt: ResourceType, obj: dict[str, Any], propagation: str | None
    ) -> tuple[dict[str, Any], bool]:
        """Delete now, or mark for deletion while finalizers remain. (object, removed)"""
        md = obj["metadata"]
        if md.get("finalizers"):
            if not md.get("deletionTimestamp"):
                old = copy.deepcopy(obj)
                md["deletionTimestamp"] = objects.now()
                md["deletionGracePeriodSeconds"] = 0
                self._write(rt, obj, old)
            return obj, False
        return self._remove(rt, obj, propagation), True

    # --- reads ------------------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        with self._lock:
            obj = self._load(self._key(rt, namespace, name))
        if obj is None:
            raise not_found(rt.plural, rt.group, name)
        return present(rt, obj)

    def list(
        self,
        rt: ResourceType,
        namespace: str | None,
        match: Match,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> tuple[list[dict[str, Any]], str, str | None, int]:
        """(items, resourceVersion, continue token, remaining count)."""
        after: tuple[str, str] | None = None
        if continue_token:
            try:
                after = tuple(json.loads(base64.urlsafe_b64decode(continue_token + "==")))  # type: ignore[assignment]
            except ValueError as exc:
                raise bad_request("continue key is not valid") from exc
        with self._lock:
            found: list[tuple[tuple[str, str], dict[str, Any]]] = []
            key = rt.key  # built anew at each read: once, not once per stored object
            for (res, ns, name), _obj in self.emulator.objects.items():
                if res != key or (namespace is not None and ns != namespace):
                    continue
                obj = self._load((res, ns, name))
                if obj is not None and match(obj):
                    found.append(((ns or "", name), obj))
            rv = str(self._rv)
        found.sort(key=lambda pair: pair[0])
        if after is not None:
            found = [pair for pair in found if pair[0] > after]
        token = None
        remaining = 0
        if limit and len(found) > limit:
            remaining = len(found) - limit
            found = found[:limit]
            token = base64.urlsafe_b64encode(json.dumps(found[-1][0]).encode()).decode().rstrip("=")
        # each `found` object is this call's own copy (`_load`): served as it is, not copied
        # again (a list is the simulator's most frequent read)
        for _, obj in found:
            obj["apiVersion"] = rt.api_version
        return [obj for _, obj in found], rv, token, remaining

    def since(self, rt: ResourceType, rv: int) -> list[Event]:
        """Events of this resource after `rv` (410 Gone when they are no longer kept)."""
        with self._lock:
            if rv < self._evicted_rv:
                raise gone(f"too old resource version: {rv} ({self._evicted_rv + 1})")
            return [
                e
                for e in self._history
                if e.rv > rv and e.group == rt.group and e.plural == rt.plural
            ]

    # --- writes -----------------------------------------------------------------------

    def create(
        self,
        rt: ResourceType,
        namespace: str | None,
        body: Any,
        manager: str,
        dry_run: bool = False,
        checks: Checks | None = None,
    ) -> dict[str, Any]:
        with self._lock:
            obj = objects.prepare_new(rt, namespace, body, self._rv + 1)
            if rt.group == "apiextensions.k8s.io" and rt.plural == "customresourcedefinitions":
                objects.check_crd(rt, obj)
            self._mutate(rt, obj)
            obj = self._admit(rt, obj, None, checks)
            md = obj["metadata"]
            if self._load(self._key(rt, md.get("namespace"), md["name"])) is not None:
                raise already_exists(rt.plural, rt.group, md["name"])
            md.pop("managedFields", None)
            fields.record_update(None, obj, manager, rt.api_version, objects.now())
            if dry_run:
                return present(rt, obj)
            return present(rt, self._write(rt, obj, None))

    def replace(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: Any,
        manager: str,
        subresource: str | None = None,
        dry_run: bool = False,
        checks: Checks | None = None,
    ) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise bad_request("the body of the request is not a Kubernetes object")
        objects.check_kind(rt, body)
        body_md = body.get("metadata") or {}
        if body_md.get("name") and body_md["name"] != name:
            raise bad_request(
                f"the name of the object ({body_md['name']}) does not match the name on the "
                f"URL ({name})"
            )
        with self._lock:
            old = self._load(self._key(rt, namespace, name))
            if old is None:
                raise not_found(rt.plural, rt.group, name)
            wanted_rv = body_md.get("resourceVersion")
            if wanted_rv and wanted_rv != old["metadata"]["resourceVersion"]:
                raise conflict(rt.plural, rt.group, name)
            return self._update(rt, old, body, manager, subresource, dry_run, checks=checks)

    def _update(
        self,
        rt: ResourceType,
        old: dict[str, Any],
        wanted: dict[str, Any],
        manager: str,
        subresource: str | None,
        dry_run: bool,
        apply_manager: bool = False,
        checks: Checks | None = None,
    ) -> dict[str, Any]:
        new = objects.carry_over(rt, old, wanted, subresource)
        if rt.group == "apiextensions.k8s.io" and rt.plural == "customresourcedefinitions":
            objects.check_crd(rt, new)
        new = self._admit(rt, new, subresource, checks)
        if not apply_manager:
            new.setdefault("metadata", {})["managedFields"] = copy.deepcopy(
                (old.get("metadata") or {}).get("managedFields") or []
            )
            fields.record_update(old, new, manager, rt.api_version, objects.now(), subresource)
        if _same(old, new) and not dry_run:
            return present(rt, old)  # nothing changed: no new resourceVersion, no event
        if dry_run:
            return present(rt, new)
        return present(rt, self._write(rt, new, old))

    def patch(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        content_type: str,
        body: Any,
        manager: str,
        force: bool = False,
        subresource: str | None = None,
        dry_run: bool = False,
        checks: Checks | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """(object, created): only server-side apply creates."""
        if content_type == patches.STRATEGIC_MERGE_PATCH and rt.crd is not None:
            raise unsupported_media_type(
                content_type,
                [patches.JSON_PATCH, patches.MERGE_PATCH, patches.APPLY_PATCH],
            )
        with self._lock:
            key = self._key(rt, namespace, name)
            old = self._load(key)
            if content_type == patches.APPLY_PATCH:
                return self._apply(
                    rt, namespace, name, old, body, manager, force, subresource, dry_run, checks
                )
            if old is None:
                raise not_found(rt.plural, rt.group, name)
            if content_type == patches.JSON_PATCH:
                wanted = patches.json_patch(old, body)
            elif content_type == patches.MERGE_PATCH:
                if not isinstance(body, dict):
                    raise bad_request("a merge patch must be a JSON object")
                wanted = patches.merge_patch(old, body)
            else:
                if not isinstance(body, dict):
                    raise bad_request("a strategic merge patch must be a JSON object")
                wanted = patches.merge_patch(old, patches.strip_directives(body))
            wanted_rv = (wanted.get("metadata") or {}).get("resourceVersion")
            if wanted_rv and wanted_rv != old["metadata"]["resourceVersion"]:
                raise conflict(rt.plural, rt.group, name)
            return self._update(
                rt, old, wanted, manager, subresource, dry_run, checks=checks
            ), False

    def _apply(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        old: dict[str, Any] | None,
        config: Any,
        manager: str,
        force: bool,
        subresource: str | None,
        dry_run: bool,
        checks: Checks | None = None,
    ) -> tuple[dict[str, Any], bool]:
        if not isinstance(config, dict):
            raise bad_request("an apply configuration must be an object")
        if not config.get("apiVersion") or not config.get("kind"):
            raise bad_request("apiVersion and kind are required in an apply configuration")
        objects.check_kind(rt, config)
        config_md = config.get("metadata") or {}
        if config_md.get("name") and config_md["name"] != name:
            raise bad_request(
                f"the name of the object ({config_md['name']}) does not match the name on the "
                f"URL ({name})"
            )
        if rt.namespaced and config_md.get("namespace") and config_md["namespace"] != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on "
                "the request"
            )
        config = copy.deepcopy(config)
        config.setdefault("metadata", {})["name"] = name
        if rt.has_status and subresource != "status":
            config.pop("status", None)  # status is written through /status only, and unowned
        stamp = objects.now()
        if old is None:
            if subresource:
                raise not_found(rt.plural, rt.group, name)
            applied = fields.apply(None, config, manager, force, rt.api_version, stamp)
            owners = applied["metadata"].pop("managedFields", None)
            obj = objects.prepare_new(rt, namespace, applied, self._rv + 1)
            if owners:
                obj["metadata"]["managedFields"] = owners
            if rt.group == "apiextensions.k8s.io" and rt.plural == "customresourcedefinitions":
                objects.check_crd(rt, obj)
            obj = self._admit(rt, obj, None, checks)
            if dry_run:
                return present(rt, obj), True
            return present(rt, self._write(rt, obj, None)), True
        wanted_rv = config_md.get("resourceVersion")
        if wanted_rv and wanted_rv != old["metadata"]["resourceVersion"]:
            raise conflict(rt.plural, rt.group, name)
        applied = fields.apply(old, config, manager, force, rt.api_version, stamp)
        return self._update(
            rt, old, applied, manager, subresource, dry_run, apply_manager=True, checks=checks
        ), False

    def delete(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        propagation: str | None = None,
        preconditions: dict[str, Any] | None = None,
        dry_run: bool = False,
    ) -> tuple[dict[str, Any], bool]:
        """(last state, removed now). Without a propagation policy a kind's default
        applies: Background, except for batch/v1 Jobs, whose pods are orphaned (the Job
        registry's default, kept for compatibility; kubectl asks for Background)."""
        if propagation is None and (rt.group, rt.plural) in ORPHAN_BY_DEFAULT:
            propagation = "Orphan"
        with self._lock:
            obj = self._load(self._key(rt, namespace, name))
            if obj is None:
                raise not_found(rt.plural, rt.group, name)
            pre = preconditions or {}
            md = obj["metadata"]
            if (pre.get("uid") and pre["uid"] != md.get("uid")) or (
                pre.get("resourceVersion") and pre["resourceVersion"] != md.get("resourceVersion")
            ):
                raise conflict(rt.plural, rt.group, name)
            if dry_run:
                return present(rt, obj), not md.get("finalizers")
            last, removed = self._delete_obj(rt, obj, propagation)
            return present(rt, last), removed

    def delete_collection(
        self, rt: ResourceType, namespace: str | None, match: Match, propagation: str | None = None
    ) -> list[dict[str, Any]]:
        with self._lock:
            items, _, _, _ = self.list(rt, namespace, match)
            gone_items = []
            for item in items:
                md = item["metadata"]
                try:
                    last, _ = self.delete(rt, md.get("namespace"), md["name"], propagation)
                except KubeError:
                    continue
                gone_items.append(last)
            return gone_items

    # --- in-process writes (the sandbox's own simulator; no auth, no admission) ---------

    def put(self, obj: dict[str, Any], manager: str) -> dict[str, Any]:
        """Create or replace an object as given (stamping what a new object lacks)."""
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not api_version or not kind:
            raise ValueError("put_object needs apiVersion and kind")
        md = obj.get("metadata") or {}
        if not md.get("name"):
            raise ValueError("put_object needs metadata.name")
        with self._lock:
            rt = self.catalog.for_kind(api_version, kind) or self.catalog.guess(
                api_version, kind, namespaced=bool(md.get("namespace"))
            )
            namespace = (md.get("namespace") or "default") if rt.namespaced else None
            old = self._load(self._key(rt, namespace, md["name"]))
            if old is None:
                new = objects.prepare_new(rt, namespace, obj, self._rv + 1)
                self._mutate(rt, new)
                if "status" in obj:
                    new["status"] = copy.deepcopy(obj["status"])
                fields.record_update(None, new, manager, rt.api_version, objects.now())
                return present(rt, self._write(rt, new, None))
            new = copy.deepcopy(obj)
            new_md = objects.meta(new)
            for key in ("uid", "creationTimestamp", "namespace", "name"):
                if key in old["metadata"]:
                    new_md[key] = old["metadata"][key]
            new_md["generation"] = old["metadata"].get("generation", 1)
            if objects._spec_changed(old, new):
                new_md["generation"] = int(new_md["generation"]) + 1
            new["apiVersion"], new["kind"] = old["apiVersion"], old["kind"]
            new_md["managedFields"] = copy.deepcopy(old["metadata"].get("managedFields") or [])
            fields.record_update(old, new, manager, rt.api_version, objects.now())
            return present(rt, self._write(rt, new, old))

    def remove(self, rt: ResourceType, namespace: str | None, name: str) -> bool:
        """Delete at once, finalizers or not (the in-process path). True if it existed."""
        with self._lock:
            obj = self._load(self._key(rt, namespace, name))
            if obj is None:
                return False
            self._remove(rt, obj, None)
            return True
