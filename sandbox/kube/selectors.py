"""Label and field selectors, as `?labelSelector=` and `?fieldSelector=` spell them.

Label selectors: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x,y)`, `a` (exists), `!a`
(does not exist), joined by commas. Field selectors: `path=value`, `path==value`,
`path!=value` on the fields the API server indexes: `metadata.name` and
`metadata.namespace` for every resource, plus a few per resource (below); any other field is
refused as the API server refuses it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sandbox.kube.errors import bad_request

_KEY = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_./]*)?[A-Za-z0-9]$")
_SET_OP = re.compile(r"^\s*(!?)\s*([^\s!=(),]+)\s+(in|notin)\s*\((.*)\)\s*$")
_EQ_OP = re.compile(r"^\s*([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)\s*([^\s!=(),]+)\s*$")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!exists"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "=":
            return present and value == self.values[0]
        if self.op == "!=":
            return not present or value != self.values[0]
        if self.op == "in":
            return present and value in self.values
        if self.op == "notin":
            return not present or value not in self.values
        if self.op == "exists":
            return present
        return not present


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    depth = 0
    current = ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p for p in (p.strip() for p in parts) if p]


def _check_key(key: str, selector: str) -> None:
    if len(key) > 316 or not _KEY.match(key):
        raise bad_request(f'unable to parse requirement: invalid label key "{key}" in "{selector}"')


def parse_labels(selector: str | None) -> list[Requirement]:
    """Parse a label selector; a malformed one is a 400, as on the API server."""
    if not selector:
        return []
    requirements: list[Requirement] = []
    for part in _split_top_level(selector):
        found = _SET_OP.match(part)
        if found:
            if found.group(1):
                raise bad_request(f'unable to parse requirement: "{part}"')
            key, op = found.group(2), found.group(3)
            values = tuple(v.strip() for v in found.group(4).split(",") if v.strip())
            _check_key(key, selector)
            if not values:
                raise bad_request(f'unable to parse requirement: "{part}": values required')
            requirements.append(Requirement(key, op, values))
            continue
        found = _EQ_OP.match(part)
        if found:
            key, op, value = found.groups()
            _check_key(key, selector)
            requirements.append(Requirement(key, "!=" if op == "!=" else "=", (value,)))
            continue
        found = _EXISTS.match(part)
        if found:
            _check_key(found.group(2), selector)
            requirements.append(
                Requirement(found.group(2), "!exists" if found.group(1) else "exists")
            )
            continue
        raise bad_request(f'unable to parse requirement: "{part}"')
    return requirements


def labels_match(requirements: list[Requirement], obj: dict[str, Any]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(r.matches(labels) for r in requirements)


# Fields the API server lets you select on, per resource (besides metadata.name/namespace).
_FIELDS: dict[tuple[str, str], frozenset[str]] = {
    ("", "pods"): frozenset(
        {
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        }
    ),
    ("", "nodes"): frozenset({"spec.unschedulable"}),
    ("", "secrets"): frozenset({"type"}),
    ("", "namespaces"): frozenset({"status.phase"}),
    ("", "events"): frozenset(
        {
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        }
    ),
    ("batch", "jobs"): frozenset({"status.successful"}),
    ("", "replicationcontrollers"): frozenset({"status.replicas"}),
    ("apps", "replicasets"): frozenset({"status.replicas"}),
}
_ALWAYS = frozenset({"metadata.name", "metadata.namespace"})


@dataclass(frozen=True)
class FieldRequirement:
    path: str
    negate: bool
    value: str

    def matches(self, obj: dict[str, Any]) -> bool:
        current: Any = obj
        for part in self.path.split("."):
            current = current.get(part) if isinstance(current, dict) else None
        if isinstance(current, bool):
            text = "true" if current else "false"
        elif current is None:
            text = ""
        else:
            text = str(current)
        return (text != self.value) if self.negate else (text == self.value)


def parse_fields(selector: str | None, group: str, plural: str) -> list[FieldRequirement]:
    if not selector:
        return []
    allowed = _ALWAYS | _FIELDS.get((group, plural), frozenset())
    requirements: list[FieldRequirement] = []
    for part in _split_top_level(selector):
        found = re.match(r"^\s*([^\s!=]+)\s*(==|=|!=)\s*(.*?)\s*$", part)
        if not found:
            raise bad_request(f"invalid selector: '{selector}'; can't understand '{part}'")
        path, op, value = found.groups()
        if path not in allowed:
            raise bad_request(f"field label not supported: {path}")
        requirements.append(FieldRequirement(path, op == "!=", value))
    return requirements


def fields_match(requirements: list[FieldRequirement], obj: dict[str, Any]) -> bool:
    return all(r.matches(obj) for r in requirements)


def matcher(
    labels: list[Requirement], fields: list[FieldRequirement]
) -> Callable[[dict[str, Any]], bool]:
    """One predicate for both selectors."""

    def match(obj: dict[str, Any]) -> bool:
        return labels_match(labels, obj) and fields_match(fields, obj)

    return match
