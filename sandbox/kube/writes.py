"""The local Kubernetes clusters' write log and create counters.

The AWS side has its call log and mutation counters (sandbox.calllog); this is the same for
the clusters' API servers: every write a client sends through a cluster's API (create,
update, patch, delete) is logged with its outcome, and every object a client *created* — a
POST that answered 201, or a server-side apply that made the object (also 201) — is counted
per cluster, resource, namespace and name. A test reads these to prove what the product did
to a cluster ("this Deployment was created once") without trusting the product's own
account of it. Writes of the sandbox's own simulator (pods of a Deployment, Nodes) do not go
through the API and are not here; dry runs change nothing and are not counted.
"""

from __future__ import annotations

import collections
import threading
from datetime import UTC, datetime
from typing import Any

# Oldest entries fall off beyond this, as in the AWS call log.
MAX_WRITES = 20_000


class KubeWrites:
    """Numbered record of API writes to every local cluster, plus creates per object."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._writes: collections.deque[dict[str, Any]] = collections.deque(maxlen=MAX_WRITES)
        self._seq = 0
        self._creates: collections.Counter[tuple[str, str, str, str]] = collections.Counter()

    def record(self, cluster: str, verb: str, resource: str, namespace: str | None,
               name: str | None, status: int, created: bool, fault: str | None = None,
               dry_run: bool = False) -> int:
        """Log one write (`resource` is `<group>/<plural>`, or `<plural>` for the core group)
        and count it if it created the object; returns its sequence number."""
        with self._lock:
            self._seq += 1
            self._writes.append({
                "seq": self._seq, "cluster": cluster, "verb": verb, "resource": resource,
                "namespace": namespace, "name": name, "status": status, "created": created,
                "fault": fault, "dry_run": dry_run,
                "at": datetime.now(UTC).isoformat(timespec="milliseconds"),
            })
            if created:
                self._creates[(cluster, resource, namespace or "", name or "")] += 1
            return self._seq

    def writes(self, cluster: str | None = None, since: int = 0) -> list[dict[str, Any]]:
        """Logged writes after `since`, optionally of one cluster only."""
        with self._lock:
            return [w for w in self._writes
                    if w["seq"] > since and cluster in (None, w["cluster"])]

    def counters(self) -> dict[str, Any]:
        """{"creates": [{"cluster", "resource", "namespace", "name", "count"}]}."""
        with self._lock:
            return {"creates": [
                {"cluster": c, "resource": r, "namespace": ns or None, "name": n, "count": k}
                for (c, r, ns, n), k in sorted(self._creates.items())]}

    def clear(self) -> None:
        """Forget all writes and counts (sequence numbers keep rising)."""
        with self._lock:
            self._writes.clear()
            self._creates.clear()
