"""Kubernetes API paths: `/api/v1/...` and `/apis/<group>/<version>/...`, namespaced or not,
with an optional name and subresource. (kmock mis-parses `/api/v1/namespaces`.)"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    group: str
    version: str
    plural: str
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None


def parse(path: str) -> Target | None:
    """The resource a path addresses, or None for discovery and other non-resource paths."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 3 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    if (
        group == ""
        and rest[0] == "namespaces"
        and len(rest) == 3
        and rest[2] in ("status", "finalize")
    ):
        return Target(group, version, "namespaces", None, rest[1], rest[2])
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, plural, tail = rest[1], rest[2], rest[3:]
    else:
        namespace, plural, tail = None, rest[0], rest[1:]
    name = tail[0] if tail else None
    subresource = "/".join(tail[1:]) or None
    return Target(group, version, plural, namespace, name, subresource)
