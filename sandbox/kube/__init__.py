"""Local Kubernetes for the sandbox: one TLS API server per EKS cluster (see registry.py)."""

from sandbox.kube.registry import KubeRegistry, LocalKube

__all__ = ["KubeRegistry", "LocalKube"]
