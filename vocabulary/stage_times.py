"""How long each stage of a cluster's create typically takes on AWS, in whole minutes (low,
high): what the dashboard shows beside a running stage ("typically 10-15 min; running for
3m 12s"). The one table: the OpenAPI document carries it (`x-hypd-typical-minutes` on
`Stage.name`), the dashboard reads it from there (static/js/rules.js).

AWS documents few of these as numbers: they are typical figures, not promises, and each row
says where it comes from (the sandbox plays the same waits: sandbox/timing.py, sandbox/gaps/):

- network: the VPC, subnets and routes take seconds; the NAT gateway is `pending` before it
  is `available` (Amazon VPC user guide, NAT gateways), commonly a minute or few;
- eks: the EKS control plane. AWS's CreateCluster reference says "several minutes"; the EKS
  team's roadmap item aws/containers-roadmap#1227 put the average at 15 minutes; the access
  entry and OIDC provider add seconds;
- activate: hypd's own records: seconds;
- dependencies: EKS add-ons (each `CREATING` for a minute or two) and HyperPod's Helm
  dependencies;
- hyperpod: SageMaker's CreateCluster (its cluster-level resources, commonly 10 minutes or
  more), then each instance's launch, lifecycle scripts and kubelet join (several more).
  AWS documents no figure. On-start deep health checks add 15 minutes or more (not in the
  range);
- storage: the shared S3 bucket and its mount, seconds to a minute; an FSx for Lustre file
  system adds commonly 5 to 10 minutes.
"""

from __future__ import annotations

SOURCES = {
    "vpc_nat": "https://docs.aws.amazon.com/vpc/latest/userguide/vpc-nat-gateway.html",
    "eks_create": "https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html",
    "eks_roadmap": "https://github.com/aws/containers-roadmap/issues/1227",
    "hyperpod_create": "https://docs.aws.amazon.com/sagemaker/latest/APIReference/"
                       "API_CreateCluster.html",
}

TYPICAL_MINUTES: dict[str, tuple[int, int]] = {
    "network": (2, 5),
    "eks": (10, 15),
    "activate": (0, 1),
    "dependencies": (2, 5),
    "hyperpod": (15, 25),
    "storage": (1, 2),
}
