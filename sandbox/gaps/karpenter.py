"""HyperPod-managed Karpenter in the sandbox.

When a cluster's AutoScaling is turned on, HyperPod installs Karpenter's CRDs (NodePool,
NodeClaim) and its own HyperpodNodeClass in the EKS cluster — so those objects can be made
only from then on, as on AWS (they stay when it is turned off: the objects in them are the
cluster owner's) — and Karpenter starts watching pods.

Karpenter here is one daemon thread per local AWS, looking every `TICK_S` simulated seconds
(never more often than `MIN_REAL_TICK_S` of real time) at every cluster whose AutoScaling is
on: sandbox/autoscaler.py says how many nodes each autoscaled group should have, and the
group is scaled up at once, down once the surplus has lasted its pool's `consolidateAfter` —
through HyperPod's own node calls (the SageMaker gap's `karpenter_scale`, what
BatchAddClusterNodes / BatchDeleteClusterNodes do as the cluster's ClusterRole). The thread
ends when no cluster has AutoScaling on, and starts again when one does.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from sandbox import autoscaler
from sandbox.gaps import GapState
from sandbox.gaps.eks_addons import Crd
from sandbox.gaps.sagemaker_state import hyperpod
from sandbox.simulator import instance_info

log = logging.getLogger(__name__)

CRDS = (
    Crd("karpenter.sh", "NodePool", "nodepools", "Cluster", file="karpenter.sh_nodepools.yaml"),
    Crd("karpenter.sh", "NodeClaim", "nodeclaims", "Cluster"),
    Crd("karpenter.sagemaker.amazonaws.com", "HyperpodNodeClass", "hyperpodnodeclasses",
        "Cluster"),
)
TICK_S = 10.0
MIN_REAL_TICK_S = 0.05
SKIPPED_GROUPS = ("Creating", "Deleting", "Failed")

Scale = Callable[[Any, Any, str, int], None]
"""(HyperPod state, cluster, group name, target): the SageMaker gap's karpenter_scale."""


def install(app: Any, eks_cluster: str | None) -> None:
    """Register the CRDs in the EKS cluster's local Kubernetes (idempotent)."""
    kubes = getattr(app, "kubes", None)
    if not eks_cluster or kubes is None:
        return
    try:
        kube = kubes.ensure(eks_cluster)
        for crd in CRDS:
            kube.put_object(crd.manifest())
    except Exception:
        log.exception("sandbox: could not install Karpenter's CRDs in %s", eks_cluster)


def enable(hp: Any, eks_cluster: str | None, scale: Scale) -> None:
    """AutoScaling was turned on for a cluster: its CRDs, and Karpenter running."""
    install(hp.app, eks_cluster)
    KARPENTER.of(hp.app).ensure_running(scale)


class Karpenter:
    """One local AWS's Karpenter: its thread, and since when each group has had nodes it no
    longer needs."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.scale: Scale | None = None
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.surplus_since: dict[tuple[str, str], float] = {}

    @property
    def hp(self) -> Any:
        return hyperpod(self.app)

    def ensure_running(self, scale: Scale) -> None:
        with self.lock:
            self.scale = scale
            if self.thread is not None and self.thread.is_alive():
                return
            self.thread = threading.Thread(target=self._run, name="sandbox-karpenter",
                                           daemon=True)
            self.thread.start()

    def _run(self) -> None:
        interval = max(MIN_REAL_TICK_S, TICK_S / self.app.clock.speed)
        while True:
            time.sleep(interval)
            if KARPENTER.peek(self.app) is not self:  # the local AWS was reset
                return
            try:
                if self.tick():
                    continue
            except Exception:
                log.exception("sandbox: Karpenter's look at the clusters failed")
                continue
            with self.lock:
                if not self._enabled():  # none left: stop (enable() starts it again)
                    self.thread = None
                    return

    def _enabled(self) -> list[Any]:
        hp = self.hp
        with hp.lock:
            return [c for clusters in hp.clusters.values() for c in clusters.values()
                    if (c.request.get("AutoScaling") or {}).get("Mode") == "Enable"
                    and c.eks_name]

    def tick(self) -> bool:
        """One look at every cluster with AutoScaling on; False when there is none."""
        clusters = self._enabled()
        for cluster in clusters:
            if str(cluster.status) == "InService":
                self._reconcile(cluster)
        return bool(clusters)

    def _reconcile(self, cluster: Any) -> None:
        kube = self.app.kubes.get(cluster.eks_name)
        if kube is None:
            return
        plans = autoscaler.plans(kube.list_objects(*autoscaler.NODEPOOL),
                                 kube.list_objects(*autoscaler.NODECLASS))
        if not plans:
            return
        pods = kube.list_objects("v1", "Pod")
        nodes = kube.list_objects("v1", "Node")
        now = self.app.clock.now()
        for name, plan in plans.items():
            with self.hp.lock:
                group = cluster.groups.get(name)
                if group is None or str(group.status) in SKIPPED_GROUPS:
                    continue
                target, instance_type = group.target, group.instance_type
            info = instance_info(instance_type)
            if info is None:
                continue
            mine = {n["metadata"]["name"] for n in nodes
                    if (n["metadata"].get("labels") or {}).get(autoscaler.GROUP_LABEL) == name}
            needed = autoscaler.nodes_needed(autoscaler.demand(pods, plan, mine), info.vcpus,
                                             info.memory_mib, info.gpus, info.max_pods)
            want = autoscaler.desired(plan, needed)
            key = (cluster.arn, name)
            scale = self.scale
            if scale is None:
                return
            if want > target:
                self.surplus_since.pop(key, None)
                scale(self.hp, cluster, name, want)
            elif want < target:
                since = self.surplus_since.setdefault(key, now)
                after = plan.consolidate_after_s
                if after is not None and now - since >= after:
                    self.surplus_since.pop(key, None)
                    scale(self.hp, cluster, name, want)
            else:
                self.surplus_since.pop(key, None)


KARPENTER: GapState[Karpenter] = GapState("karpenter", Karpenter)
