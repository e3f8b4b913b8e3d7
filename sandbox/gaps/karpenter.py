"""What HyperPod installs in the EKS cluster when managed autoscaling is turned on:
Karpenter's CRDs (NodePool, NodeClaim) and HyperPod's HyperpodNodeClass. So those objects
can be made only once a cluster's AutoScaling is enabled, as on AWS; they stay when it is
turned off again (the objects in them are the cluster owner's)."""

from __future__ import annotations

import logging
from typing import Any

from sandbox.gaps.eks_addons import Crd

log = logging.getLogger(__name__)

CRDS = (
    Crd("karpenter.sh", "NodePool", "nodepools", "Cluster"),
    Crd("karpenter.sh", "NodeClaim", "nodeclaims", "Cluster"),
    Crd("karpenter.sagemaker.amazonaws.com", "HyperpodNodeClass", "hyperpodnodeclasses",
        "Cluster"),
)


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
