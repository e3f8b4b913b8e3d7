"""Field ownership (`metadata.managedFields`) and server-side apply.

Each manager owns the leaf fields it set. A write by a manager (`fieldManager`, else the
client's User-Agent product) takes the fields whose value it changed; an apply with
`?fieldManager=M` owns exactly the fields in its configuration, removes the fields it applied
before and no longer applies (unless someone else owns them), and is refused with 409 when
it would change a value that another manager owns — unless `force=true`, which takes the
field over. Lists are owned whole (the real API server merges some lists by key, e.g.
containers by name); maps are merged.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from sandbox.kube.errors import apply_conflict

Path = tuple[str, ...]
_MISSING = object()
# Identity and bookkeeping fields nobody owns.
_UNTRACKED_META = frozenset(
    {
        "name",
        "namespace",
        "generateName",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    }
)


def leaves(obj: dict[str, Any] | None) -> dict[Path, Any]:
    """Owned leaf paths of an object and their values (scalars, lists, empty maps)."""
    found: dict[Path, Any] = {}
    if not obj:
        return found

    def walk(node: Any, path: Path) -> None:
        if isinstance(node, dict) and node:
            for key, value in node.items():
                walk(value, (*path, key))
        else:
            found[path] = node

    for key, value in obj.items():
        if key in ("apiVersion", "kind"):
            continue
        if key == "metadata" and isinstance(value, dict):
            for mkey, mvalue in value.items():
                if mkey not in _UNTRACKED_META:
                    walk(mvalue, ("metadata", mkey))
            continue
        walk(value, (key,))
    return found


def value_at(obj: Any, path: Path) -> Any:
    node = obj
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def set_at(obj: dict[str, Any], path: Path, value: Any) -> None:
    node = obj
    for part in path[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[path[-1]] = copy.deepcopy(value)


def delete_at(obj: dict[str, Any], path: Path) -> None:
    """Remove a field, then any map it leaves empty (never a top-level section)."""
    chain: list[dict[str, Any]] = [obj]
    node: Any = obj
    for part in path[:-1]:
        if not isinstance(node, dict) or not isinstance(node.get(part), dict):
            return
        node = node[part]
        chain.append(node)
    if not isinstance(node, dict) or path[-1] not in node:
        return
    del node[path[-1]]
    for depth in range(len(path) - 1, 1, -1):
        parent, key = chain[depth - 1], path[depth - 1]
        if parent.get(key) == {}:
            del parent[key]
        else:
            break


def overlaps(a: Path, b: Path) -> bool:
    return a[: len(b)] == b or b[: len(a)] == a


def dotted(path: Path) -> str:
    return "." + ".".join(path)


def to_fields_v1(paths: set[Path]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path in sorted(paths):
        node = tree
        for part in path:
            node = node.setdefault(f"f:{part}", {})
    return tree


def from_fields_v1(tree: dict[str, Any]) -> set[Path]:
    paths: set[Path] = set()

    def walk(node: dict[str, Any], path: Path) -> None:
        children = {k: v for k, v in node.items() if k.startswith("f:")}
        if not children:
            if path:
                paths.add(path)
            return
        for key, child in children.items():
            walk(child if isinstance(child, dict) else {}, (*path, key[2:]))

    walk(tree or {}, ())
    return paths


@dataclass
class Entry:
    manager: str
    operation: str  # "Apply" | "Update"
    api_version: str
    time: str
    subresource: str | None = None
    fields: set[Path] = field(default_factory=set)

    def render(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": to_fields_v1(self.fields),
        }
        if self.subresource:
            out["subresource"] = self.subresource
        return out


def entries_of(obj: dict[str, Any] | None) -> list[Entry]:
    found: list[Entry] = []
    for raw in ((obj or {}).get("metadata") or {}).get("managedFields") or []:
        if not isinstance(raw, dict) or not raw.get("manager"):
            continue
        found.append(
            Entry(
                manager=str(raw["manager"]),
                operation=str(raw.get("operation") or "Update"),
                api_version=str(raw.get("apiVersion") or ""),
                time=str(raw.get("time") or ""),
                subresource=raw.get("subresource"),
                fields=from_fields_v1(raw.get("fieldsV1") or {}),
            )
        )
    return found


def _store(obj: dict[str, Any], entries: list[Entry]) -> None:
    kept = [e for e in entries if e.fields]
    meta = obj.setdefault("metadata", {})
    if kept:
        meta["managedFields"] = [e.render() for e in kept]
    else:
        meta.pop("managedFields", None)


def _entry(
    entries: list[Entry], manager: str, operation: str, api_version: str, now: str, sub: str | None
) -> Entry:
    for entry in entries:
        if (entry.manager, entry.operation, entry.subresource) == (manager, operation, sub):
            entry.api_version, entry.time = api_version, now
            return entry
    entry = Entry(manager, operation, api_version, now, sub)
    entries.append(entry)
    return entry


def record_update(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    manager: str,
    api_version: str,
    now: str,
    subresource: str | None = None,
) -> None:
    """Give `manager` the fields a non-apply write set or changed (in `new`, in place)."""
    before, after = leaves(old), leaves(new)
    changed = {p for p, v in after.items() if before.get(p, _MISSING) != v}
    removed = set(before) - set(after)
    entries = entries_of(old)
    for entry in entries:
        entry.fields = {
            q for q in entry.fields if not any(overlaps(q, p) for p in changed | removed)
        }
    if changed:
        _entry(entries, manager, "Update", api_version, now, subresource).fields |= changed
    _store(new, entries)


def apply(
    current: dict[str, Any] | None,
    config: dict[str, Any],
    manager: str,
    force: bool,
    api_version: str,
    now: str,
) -> dict[str, Any]:
    """The object after `manager` applies `config` (raises 409 on conflicts unless forced)."""
    wanted = leaves(config)
    entries = entries_of(current)
    if current is None:
        new = copy.deepcopy(config)
        new.get("metadata", {}).pop("managedFields", None)
        _entry(entries, manager, "Apply", api_version, now, None).fields = set(wanted)
        _store(new, entries)
        return new

    conflicts: list[tuple[str, str]] = []
    taken: dict[int, set[Path]] = {}
    for path, value in wanted.items():
        if value_at(current, path) == value:
            continue  # same value: shared ownership, never a conflict
        for index, entry in enumerate(entries):
            if entry.manager == manager:
                continue
            hits = {q for q in entry.fields if overlaps(q, path)}
            if hits:
                taken.setdefault(index, set()).update(hits)
                conflicts.append((entry.manager, dotted(path)))
    if conflicts and not force:
        raise apply_conflict(conflicts)

    new = copy.deepcopy(current)
    mine = next(
        (e for e in entries if (e.manager, e.operation, e.subresource) == (manager, "Apply", None)),
        None,
    )
    others = {q for e in entries if e.manager != manager for q in e.fields}
    for path in (mine.fields if mine else set()) - set(wanted):
        if any(overlaps(path, q) for q in others) or any(overlaps(path, w) for w in wanted):
            continue
        delete_at(new, path)
    for path, value in wanted.items():
        set_at(new, path, value)
    for index, hits in taken.items():
        entries[index].fields -= hits
    _entry(entries, manager, "Apply", api_version, now, None).fields = set(wanted)
    _store(new, entries)
    return new
