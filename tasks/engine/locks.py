"""Target paths and how they conflict.

A target conflicts with itself, its ancestors and its descendants: a cluster delete is
refused while one of its feature toggles runs, and a toggle while the cluster is deleted.
The lock table is one Redis hash (target → operation id), changed only inside the engine's
WATCH/MULTI transactions, and cleared when the operation finishes — never a TTL.
"""

from __future__ import annotations

from collections.abc import Mapping

LOCKS_KEY = "hypd:locks"


def conflicts(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def conflicting_holders(target: str, held: Mapping[str, str]) -> dict[str, str]:
    """The held targets (→ operation ids) that conflict with `target`."""
    return {path: op_id for path, op_id in held.items() if conflicts(target, path)}
