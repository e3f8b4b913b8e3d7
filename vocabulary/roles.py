"""Who may do what: a token's role, and a route's access level (a role, or public).

A role covers the ones before it in `Role`'s order: an operator may do what a viewer may.
"""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    """A token's role, weakest first."""

    VIEWER = "viewer"
    OPERATOR = "operator"

    def covers(self, needed: str) -> bool:
        """Whether this role may do what `needed` (a role, or PUBLIC) may."""
        return needed == PUBLIC or _RANK[self] >= _RANK[Role(needed)]


PUBLIC = "public"
"""A route's access level that needs no token (health, the dashboard's files, the OpenAPI
document)."""

ACCESS_LEVELS: tuple[str, ...] = (PUBLIC, *Role)
"""A route's access level, weakest first."""

_ORDER: tuple[Role, ...] = tuple(Role)
_RANK: dict[str, int] = {role: rank for rank, role in enumerate(_ORDER)}
"""A role's place in `_ORDER` (a StrEnum member hashes as its word)."""
