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
- hyperpod: SageMaker's CreateCluster until `InService`: its cluster-level resources, then
  each instance's launch, lifecycle scripts and kubelet join. An estimate: AWS's
  CreateCluster reference and HyperPod guide give no figure (searched 2026-12). The only
  figures found are reports: Alchemy's SageMaker provider says provisioning a HyperPod
  cluster takes 10-25 minutes; AWS Labs' SageMaker AI MCP server says about 30 minutes for
  its whole stack (VPC, EKS and HyperPod together, so its HyperPod share is less). On-start
  deep health checks add 15 minutes or more (not in the range);
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
    # reports, not AWS's word: the hyperpod row is an estimate (the docstring says why)
    "hyperpod_report_alchemy": "https://alchemy.run/providers/aws/sagemaker/cluster",
    "hyperpod_report_awslabs": "https://github.com/awslabs/mcp/tree/main/src/"
                               "sagemaker-ai-mcp-server",
}

TYPICAL_MINUTES: dict[str, tuple[int, int]] = {
    "network": (2, 5),
    "eks": (10, 15),
    "activate": (0, 1),
    "dependencies": (2, 5),
    "hyperpod": (10, 25),  # an estimate from reports: AWS gives no figure
    "storage": (1, 2),
}
