"""Which space a request's path names: `/s/<cluster>/<namespace>/<name>/<rest>`, the base
path vocabulary/spaces.py spells."""

from __future__ import annotations

import re
from dataclasses import dataclass

from vocabulary import patterns
from vocabulary.spaces import ROUTE_PREFIX, base_path

_LABEL = r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?"
_PATH = re.compile(rf"^{re.escape(ROUTE_PREFIX)}([^/]+)/({_LABEL})/({_LABEL})(/.*)?$")


@dataclass(frozen=True)
class SpacePath:
    cluster: str
    namespace: str
    name: str
    rest: str | None
    """What follows the base path (`""` at the base itself; None: the path lacks the base's
    trailing slash)."""

    @property
    def base(self) -> str:
        return base_path(self.cluster, self.namespace, self.name)


def parse(path: str) -> SpacePath | None:
    """The space a path names, or None (not a space's path, or a name no cluster or
    Kubernetes object can have)."""
    found = _PATH.match(path)
    if found is None or not patterns.fits(patterns.EKS_CLUSTER_NAME, found.group(1)):
        return None
    rest = found.group(4)
    return SpacePath(found.group(1), found.group(2), found.group(3),
                     None if rest is None else rest[1:])
