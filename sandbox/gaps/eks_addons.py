"""The EKS add-ons the sandbox offers (DescribeAddonVersions), as data, and what each one
puts into the cluster once ACTIVE: its namespace, its CRDs (so custom resources such as
HyperPodPyTorchJob or InferenceEndpointConfig exist only after their add-on, as on EKS) and
a workload object. A CRD is upstream's where it is public and stored under
sandbox/data/crds/ (the inference operator's, Kueue's), so its resources are validated
against the real schema; otherwise (the training operator's ...) its schema is open. The Spaces
add-on's three (Workspace, WorkspaceTemplate, WorkspaceAccessStrategy) are jupyter-k8s's,
upstream's. Versions are real add-on version strings (the Spaces add-on's is a stand-in);
each lists the Kubernetes versions it supports, and the newest compatible one is the
default.

`needs_nodes`: the add-on stays DEGRADED until a Ready node exists (CoreDNS's pods need a
node). `requires`: objects that must exist in the cluster for the add-on to be healthy (the
training operator needs cert-manager and the Pod Identity agent); until they do, it is
DEGRADED with a health issue, and it turns ACTIVE once they appear.

`configuration`: the JSON schema its configurationValues must satisfy (CreateAddon and
UpdateAddon refuse others, as EKS does against DescribeAddonConfiguration's schema), and
`references`: configuration keys that name an IAM role (`role`) or an S3 bucket (`bucket`)
that must exist for the add-on to be healthy. The inference operator's are the keys AWS's
HyperPod inference setup and troubleshooting guides pass to the add-on (`executionRoleArn`
and `tlsCertificateS3Bucket` required — its chart refuses to install without them —,
`hyperpodClusterArn`, `alb`, `keda`, `jumpstartGatedModelDownloadRoleArn`); the real schema
has more keys, so unknown ones are let through.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

CRD_DIR = Path(__file__).resolve().parent.parent / "data" / "crds"
"""Upstream CRDs, unchanged (SOURCES.md there): the sandbox serves them with their real
schemas, so a custom resource is validated and pruned as on a cluster with the add-on."""
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
KUBERNETES_VERSIONS = ("1.28", "1.29", "1.30", "1.31", "1.32", "1.33", "1.34")


@functools.cache
def upstream_crd(file: str) -> dict[str, Any]:
    """An upstream CRD file under CRD_DIR as the sandbox installs it (parsed once): less its
    conversion webhook and the annotations whose Helm placeholders a chart would fill in
    (the sandbox stores each kind once and serves it at every version; it converts
    nothing)."""
    with open(CRD_DIR / file, encoding="utf-8") as handle:
        crd = yaml.load(handle, Loader=_LOADER)
    crd["spec"].pop("conversion", None)
    metadata = crd["metadata"]
    metadata["annotations"] = {k: v for k, v in (metadata.get("annotations") or {}).items()
                               if "{{" not in str(v)}
    return crd


@dataclass(frozen=True)
class Crd:
    group: str
    kind: str
    plural: str
    scope: str = "Namespaced"
    versions: tuple[str, ...] = ("v1",)  # the first is the storage version
    file: str | None = None  # the upstream CRD under CRD_DIR; None: an open schema

    def manifest(self) -> dict[str, Any]:
        if self.file:
            crd = copy.deepcopy(upstream_crd(self.file))
            spec = crd["spec"]
            if (spec["group"], spec["names"]["kind"], spec["names"]["plural"]) != (
                    self.group, self.kind, self.plural):
                raise ValueError(f"{self.file} does not define {self.plural}.{self.group}")
            return crd
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{self.plural}.{self.group}"},
            "spec": {
                "group": self.group,
                "scope": self.scope,
                "names": {
                    "kind": self.kind,
                    "plural": self.plural,
                    "singular": self.kind.lower(),
                    "listKind": f"{self.kind}List",
                },
                "versions": [
                    {
                        "name": v,
                        "served": True,
                        "storage": i == 0,
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            }
                        },
                        "subresources": {"status": {}},
                    }
                    for i, v in enumerate(self.versions)
                ],
            },
        }


@dataclass(frozen=True)
class Addon:
    name: str
    type: str
    versions: tuple[tuple[str, str, str], ...]  # (version, oldest k8s, newest k8s), newest first
    owner: str = "aws"
    publisher: str = "eks"
    iam: bool = False  # requiresIamPermissions
    namespace: str = "kube-system"
    workload: tuple[str, str] | None = None  # (kind, name): a Deployment or DaemonSet
    crds: tuple[Crd, ...] = ()
    cluster_objects: tuple[dict[str, Any], ...] = ()
    needs_nodes: bool = False
    requires: tuple[tuple[str, str, str, str | None], ...] = ()  # (apiVersion, kind, name, ns)
    configuration: dict[str, Any] | None = None  # JSON schema of configurationValues
    references: tuple[tuple[str, str], ...] = ()  # (configuration key, "role" | "bucket")
    extra: dict[str, Any] = field(default_factory=dict)

    def compatible(self, kubernetes_version: str) -> list[str]:
        return [
            v
            for v, low, high in self.versions
            if _le(low, kubernetes_version) and _le(kubernetes_version, high)
        ]

    def default_version(self, kubernetes_version: str) -> str | None:
        found = self.compatible(kubernetes_version)
        return found[0] if found else None

    def objects(self) -> list[dict[str, Any]]:
        """What the add-on puts into the cluster (namespace first, CRDs, then workloads)."""
        out: list[dict[str, Any]] = []
        labels = {"app.kubernetes.io/managed-by": "EKS", "eks.amazonaws.com/addon": self.name}
        if self.namespace not in ("kube-system", "default"):
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": self.namespace, "labels": labels},
                }
            )
        out.extend(c.manifest() for c in self.crds)
        out.extend(self.cluster_objects)
        if self.workload:
            kind, name = self.workload
            out.append(
                {
                    "apiVersion": "apps/v1",
                    "kind": kind,
                    "metadata": {"name": name, "namespace": self.namespace, "labels": labels},
                    "spec": {
                        "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
                        "template": {
                            "metadata": {"labels": {"app.kubernetes.io/name": name}},
                            "spec": {"containers": [{"name": name, "image": f"eks/{self.name}"}]},
                        },
                    },
                }
            )
        return out


def _le(a: str, b: str) -> bool:
    return tuple(int(x) for x in a.split(".")) <= tuple(int(x) for x in b.split("."))


def _csi_driver(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": name},
        "spec": {"attachRequired": False, "podInfoOnMount": True},
    }


_CERT_MANAGER = (
    "apiextensions.k8s.io/v1",
    "CustomResourceDefinition",
    "certificates.cert-manager.io",
    None,
)
_POD_IDENTITY = ("apps/v1", "DaemonSet", "eks-pod-identity-agent", "kube-system")
_INFERENCE_NEEDS = (
    _CERT_MANAGER,
    ("storage.k8s.io/v1", "CSIDriver", "s3.csi.aws.com", None),
    ("storage.k8s.io/v1", "CSIDriver", "fsx.csi.aws.com", None),
    ("apps/v1", "Deployment", "metrics-server", "kube-system"),
    ("apps/v1", "Deployment", "aws-load-balancer-controller", "kube-system"),
    ("apps/v1", "Deployment", "keda-operator", "keda"),
)
SPACES = "amazon-sagemaker-spaces"
_SPACES_NEEDS = (
    _CERT_MANAGER,
    _POD_IDENTITY,
    ("storage.k8s.io/v1", "CSIDriver", "ebs.csi.aws.com", None),
)
_ENABLED = {"type": "object", "properties": {"enabled": {"type": "boolean"}}}
_INFERENCE_CONFIGURATION: dict[str, Any] = {
    "type": "object",
    "required": ["executionRoleArn", "tlsCertificateS3Bucket"],
    "properties": {
        "executionRoleArn": {"type": "string", "pattern": "^arn:aws[a-z-]*:iam::[0-9]{12}:role/"},
        "tlsCertificateS3Bucket": {"type": "string", "minLength": 3},
        "hyperpodClusterArn": {
            "type": "string",
            "pattern": "^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:[0-9]{12}:cluster/",
        },
        "jumpstartGatedModelDownloadRoleArn": {"type": "string"},
        "alb": _ENABLED,
        "keda": _ENABLED,
    },
}
_KUBE_PROXY = tuple((f"v{k}.0-eksbuild.1", k, k) for k in reversed(KUBERNETES_VERSIONS))

CATALOGUE: tuple[Addon, ...] = (
    Addon(
        "vpc-cni",
        "networking",
        (
            ("v1.20.4-eksbuild.1", "1.28", "1.34"),
            ("v1.19.6-eksbuild.7", "1.27", "1.33"),
            ("v1.18.6-eksbuild.1", "1.25", "1.31"),
        ),
        iam=True,
        workload=("DaemonSet", "aws-node"),
        crds=(
            Crd("crd.k8s.amazonaws.com", "ENIConfig", "eniconfigs", "Cluster", ("v1alpha1",)),
            Crd(
                "networking.k8s.aws",
                "PolicyEndpoint",
                "policyendpoints",
                "Namespaced",
                ("v1alpha1",),
            ),
        ),
    ),
    Addon(
        "coredns",
        "networking",
        (
            ("v1.12.1-eksbuild.2", "1.33", "1.34"),
            ("v1.11.4-eksbuild.14", "1.28", "1.33"),
            ("v1.11.3-eksbuild.2", "1.28", "1.31"),
        ),
        workload=("Deployment", "coredns"),
        needs_nodes=True,
    ),
    Addon("kube-proxy", "networking", _KUBE_PROXY, workload=("DaemonSet", "kube-proxy")),
    Addon(
        "eks-pod-identity-agent",
        "security",
        (("v1.3.8-eksbuild.2", "1.28", "1.34"), ("v1.3.4-eksbuild.1", "1.24", "1.32")),
        workload=("DaemonSet", "eks-pod-identity-agent"),
    ),
    Addon(
        "aws-mountpoint-s3-csi-driver",
        "storage",
        (("v2.1.0-eksbuild.1", "1.28", "1.34"), ("v1.15.0-eksbuild.1", "1.25", "1.33")),
        iam=True,
        workload=("DaemonSet", "s3-csi-node"),
        cluster_objects=(_csi_driver("s3.csi.aws.com"),),
    ),
    Addon(
        "aws-fsx-csi-driver",
        "storage",
        (("v1.6.0-eksbuild.1", "1.28", "1.34"), ("v1.5.0-eksbuild.1", "1.25", "1.33")),
        iam=True,
        workload=("DaemonSet", "fsx-csi-node"),
        cluster_objects=(_csi_driver("fsx.csi.aws.com"),),
    ),
    Addon(
        "aws-ebs-csi-driver",
        "storage",
        (("v1.48.0-eksbuild.2", "1.28", "1.34"), ("v1.45.0-eksbuild.2", "1.25", "1.33")),
        iam=True,
        workload=("DaemonSet", "ebs-csi-node"),
        cluster_objects=(_csi_driver("ebs.csi.aws.com"),),
    ),
    Addon(
        # SageMaker Spaces: the jupyter-k8s operator (its controller's service account
        # jupyter-k8s-controller-manager gets the add-on execution role by Pod Identity), with
        # upstream's three CRDs; healthy once cert-manager (its webhooks' certificates), the
        # Pod Identity agent and the EBS CSI driver (the spaces' home volumes) are there
        SPACES,
        "machine-learning",
        (("v1.0.0-eksbuild.1", "1.28", "1.34"),),
        iam=True,
        namespace="jupyter-k8s-system",
        workload=("Deployment", "jupyter-k8s-controller-manager"),
        crds=tuple(
            Crd(
                "workspace.jupyter.org",
                kind,
                plural,
                versions=("v1alpha1",),
                file=f"workspace.jupyter.org_{plural}.yaml",
            )
            for kind, plural in (
                ("Workspace", "workspaces"),
                ("WorkspaceTemplate", "workspacetemplates"),
                ("WorkspaceAccessStrategy", "workspaceaccessstrategies"),
            )
        ),
        requires=_SPACES_NEEDS,
    ),
    Addon(
        "metrics-server",
        "observability",
        (("v0.8.0-eksbuild.2", "1.28", "1.34"), ("v0.7.2-eksbuild.4", "1.25", "1.33")),
        owner="community",
        workload=("Deployment", "metrics-server"),
        needs_nodes=True,
    ),
    Addon(
        "cert-manager",
        "security",
        (("v1.18.2-eksbuild.2", "1.28", "1.34"), ("v1.17.2-eksbuild.1", "1.25", "1.33")),
        owner="community",
        namespace="cert-manager",
        workload=("Deployment", "cert-manager"),
        needs_nodes=True,
        crds=(
            Crd("cert-manager.io", "Certificate", "certificates"),
            Crd("cert-manager.io", "CertificateRequest", "certificaterequests"),
            Crd("cert-manager.io", "Issuer", "issuers"),
            Crd("cert-manager.io", "ClusterIssuer", "clusterissuers", "Cluster"),
            Crd("acme.cert-manager.io", "Order", "orders"),
            Crd("acme.cert-manager.io", "Challenge", "challenges"),
        ),
    ),
    Addon(
        "amazon-sagemaker-hyperpod-training-operator",
        "machine-learning",
        (("v1.2.0-eksbuild.1", "1.28", "1.34"), ("v1.1.1-eksbuild.1", "1.28", "1.33")),
        iam=True,
        namespace="aws-hyperpod",
        workload=("Deployment", "hp-training-operator-controller-manager"),
        crds=(Crd("sagemaker.amazonaws.com", "HyperPodPyTorchJob", "hyperpodpytorchjobs"),),
        requires=(_CERT_MANAGER, _POD_IDENTITY),
    ),
    Addon(
        "amazon-sagemaker-hyperpod-inference",
        "machine-learning",
        (("v3.0.0-eksbuild.1", "1.28", "1.34"),),
        iam=True,
        namespace="hyperpod-inference-system",
        workload=("Deployment", "hyperpod-inference-operator-controller-manager"),
        crds=(
            Crd(
                "inference.sagemaker.aws.amazon.com",
                "InferenceEndpointConfig",
                "inferenceendpointconfigs",
                versions=("v1", "v1alpha1"),
                file="inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml",
            ),
            Crd(
                "inference.sagemaker.aws.amazon.com",
                "JumpStartModel",
                "jumpstartmodels",
                versions=("v1", "v1alpha1"),
                file="inference.sagemaker.aws.amazon.com_jumpstartmodels.yaml",
            ),
            Crd(
                "inference.sagemaker.aws.amazon.com",
                "SageMakerEndpointRegistration",
                "sagemakerendpointregistrations",
                versions=("v1", "v1alpha1"),
                file="inference.sagemaker.aws.amazon.com_sagemakerendpointregistrations.yaml",
            ),
        ),
        requires=_INFERENCE_NEEDS,
        configuration=_INFERENCE_CONFIGURATION,
        references=(("executionRoleArn", "role"), ("tlsCertificateS3Bucket", "bucket")),
    ),
    Addon(
        "amazon-sagemaker-hyperpod-taskgovernance",
        "machine-learning",
        # v1.6 packages Kueue v0.19.2 (AWS's add-on upgrade guide): upstream's CRDs, whose
        # storage version is v1beta2 (sandbox/gaps/governance_addon.py plays its controller)
        (("v1.6.0-eksbuild.1", "1.30", "1.34"), ("v1.3.0-eksbuild.1", "1.28", "1.34"),
         ("v1.2.2-eksbuild.1", "1.28", "1.33")),
        namespace="kueue-system",
        workload=("Deployment", "kueue-controller-manager"),
        crds=tuple(
            Crd("kueue.x-k8s.io", kind, plural, scope, ("v1beta2", "v1beta1"),
                file=f"kueue.x-k8s.io_{plural}.yaml")
            for kind, plural, scope in (
                ("ClusterQueue", "clusterqueues", "Cluster"),
                ("LocalQueue", "localqueues", "Namespaced"),
                ("ResourceFlavor", "resourceflavors", "Cluster"),
                ("Workload", "workloads", "Namespaced"),
                ("WorkloadPriorityClass", "workloadpriorityclasses", "Cluster"),
            )
        ),
    ),
    Addon(
        "amazon-sagemaker-hyperpod-observability",
        "observability",
        (("v1.0.3-eksbuild.1", "1.28", "1.34"),),
        iam=True,
        namespace="hyperpod-observability",
        workload=("Deployment", "hyperpod-observability-collector"),
    ),
)

BY_NAME: dict[str, Addon] = {a.name: a for a in CATALOGUE}


def describe(addon: Addon, kubernetes_version: str | None) -> dict[str, Any] | None:
    """One `addons[]` item of DescribeAddonVersions (None: nothing for that k8s version)."""
    versions = []
    for version, low, high in addon.versions:
        clusters = [k for k in KUBERNETES_VERSIONS if _le(low, k) and _le(k, high)]
        if kubernetes_version is not None and kubernetes_version not in clusters:
            continue
        versions.append(
            {
                "addonVersion": version,
                "architecture": ["amd64", "arm64"],
                "computeTypes": ["ec2"],
                "compatibilities": [
                    {
                        "clusterVersion": k,
                        "platformVersions": ["*"],
                        "defaultVersion": addon.default_version(k) == version,
                    }
                    for k in clusters
                ],
                "requiresConfiguration": addon.configuration is not None,
                "requiresIamPermissions": addon.iam,
            }
        )
    if not versions:
        return None
    return {
        "addonName": addon.name,
        "type": addon.type,
        "addonVersions": versions,
        "publisher": addon.publisher,
        "owner": addon.owner,
    }
