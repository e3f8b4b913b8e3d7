"""IAM roles hypd makes for a cluster, as Python policy documents, and their ensure/delete.

One function, `ensure_role`, makes the role of every purpose (the EKS cluster role,
HyperPod's execution and cluster roles, feature roles). Every role is named
`hypd-<cluster>-<purpose>` (at most 64 characters: cluster names are at most 32), tagged
`hypd:managed-by=hypd`, `hypd:cluster=<cluster>`, `hypd:role=<purpose>`, and created under
the path `/hypd/` with a permissions boundary: `HYPD_ROLE_BOUNDARY_ARN`, by default
`arn:<partition>:iam::<account>:policy/hypd/hypd-role-boundary`, the policy
deploy/cloudformation.yaml creates (the account is asked of STS once per process).

Path and boundary are properties of `ensure_role`, not of its callers, so no role is made
without them. That is what the template's policy for hypd relies on: CreateRole,
PutRolePolicy, AttachRolePolicy and the like only on `role/hypd/*` with the
`iam:PermissionsBoundary` condition, PassRole only on `role/hypd/*`; so no role hypd makes
can hold more than the boundary allows. A missing boundary policy makes IAM refuse the
create, answered as `precondition_failed` naming it.

`ensure_role` adopts a role of that name only when its tags say hypd made it for this
cluster, and converges it (trust policy, managed policies, inline policies); a same-named role
without them is refused with a clear error. A role adopted from before (path `/`, which cannot
change) or under another boundary setting gets the current boundary
(`PutRolePermissionsBoundary`). Deletion acts only on tagged roles.

Least privilege: actions are listed one by one and scoped to the cluster's own resources.
`Resource: "*"` appears only for actions that AWS documents as not supporting resource-level
permissions (see `STAR_RESOURCE_ACTIONS`), never with a wildcard action.

The suite checks, after every test that ran the stack, that each role the product created
carries both path and boundary and that every policy it put on one fits inside the boundary
(tests/conftest.py, from the local AWS's call log).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from cloud import aws
from cloud.aws import CLUSTER_TAG, MANAGED_BY, MANAGED_BY_VALUE, ROLE_TAG, error_code, is_not_found
from cloud.errors import Refusal
from cloud.settings import Settings

POLICY_VERSION = "2012-10-17"
MAX_ROLE_NAME = 64
ROLE_PATH = "/hypd/"
BOUNDARY_POLICY_NAME = "hypd-role-boundary"
"""The boundary policy deploy/cloudformation.yaml creates under ROLE_PATH."""

PURPOSE_EKS_CLUSTER = "eks-cluster"
PURPOSE_HYPERPOD_EXECUTION = "hp-exec"
PURPOSE_HYPERPOD_CLUSTER = "hp-cluster"
# the roles of managed features' consumers (their `identity.role` in dependencies.yaml)
PURPOSE_TRAINING_OPERATOR = "training-op"
PURPOSE_INFERENCE_OPERATOR = "inference-op"
PURPOSE_OBSERVABILITY = "observability"
PURPOSE_TIERED_CHECKPOINTING = "ckpt"
PURPOSE_MODEL_DOWNLOAD = "model-download"
PURPOSE_LB_CONTROLLER = "lb-controller"
PURPOSE_KEDA = "keda"
PURPOSE_SPACES = "spaces"
PURPOSE_EBS_CSI = "ebs-csi"
PURPOSE_MLFLOW_SERVER = "mlflow-server"
PURPOSE_MLFLOW = "mlflow"

EBS_CSI_TAG = "ebs.csi.aws.com/cluster"
"""The tag the EBS CSI driver puts on every volume it makes (its role may change only those)."""
SPACES_ADDON = "amazon-sagemaker-spaces"
SPACES_TAG_PREFIX = "sagemaker.amazonaws.com/"
"""The Spaces controller tags the SSM activations it makes `<prefix>managed-by` and
`<prefix>eks-cluster-arn` (AWS's policy for it allows no others)."""

POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"
SAGEMAKER_PRINCIPAL = "sagemaker.amazonaws.com"
WEB_IDENTITY_AUDIENCE = "sts.amazonaws.com"

EKS_CLUSTER_POLICY = "AmazonEKSClusterPolicy"
SAGEMAKER_CLUSTER_INSTANCE_POLICY = "AmazonSageMakerClusterInstanceRolePolicy"
INFERENCE_OPERATOR_POLICY = "AmazonSageMakerHyperPodInferenceAccess"
"""AWS's policy for the HyperPod inference operator's execution role: at start it calls
`sagemaker:UpdateClusterInference` (enables its watcher on the HyperPod cluster), and for an
endpoint it makes the SageMaker model, endpoint config and endpoint (tagged `CreatedBy:
HyperPodInference`), TLS certificates in ACM and the `hyperpod-tls*` bucket, network
interfaces. Maintained by AWS as the operator changes; hypd adds only the model bucket."""

STAR_RESOURCE_ACTIONS: dict[str, str] = {
    # action: why it is granted on "*" (AWS's Service Authorization Reference lists no
    # resource type for it, so it cannot be scoped)
    "ec2:DescribeInstances": "EC2 Describe* actions have no resource-level permissions",
    "ec2:DescribeInstanceTypes": "EC2 Describe* actions have no resource-level permissions",
    "ec2:DescribeNetworkInterfaces": "EC2 Describe* actions have no resource-level permissions",
    "ec2:DescribeSubnets": "EC2 Describe* actions have no resource-level permissions",
    "ec2:DescribeSecurityGroups": "EC2 Describe* actions have no resource-level permissions",
    "ec2:DescribeTags": "EC2 Describe* actions have no resource-level permissions",
    "ec2:DescribeVpcs": "EC2 Describe* actions have no resource-level permissions",
    "ec2:DescribeDhcpOptions": "EC2 Describe* actions have no resource-level permissions",
    "ecr:GetAuthorizationToken": "an account-wide call with no resource type",
    "ecr:BatchCheckLayerAvailability": "images come from AWS-owned registries in other "
                                       "accounts (EKS add-ons, HyperPod agents)",
    "ecr:BatchGetImage": "images come from AWS-owned registries in other accounts",
    "ecr:GetDownloadUrlForLayer": "images come from AWS-owned registries in other accounts",
    "cloudwatch:GetMetricData": "CloudWatch metric reads have no resource types",
    "cloudwatch:GetMetricStatistics": "CloudWatch metric reads have no resource types",
    "cloudwatch:ListMetrics": "CloudWatch metric reads have no resource types",
    "ec2:DescribeAvailabilityZones": "EC2 Describe* actions have no resource-level permissions",
    "ec2:DescribeVolumes": "EC2 Describe* actions have no resource-level permissions",
    "ec2:DescribeVolumesModifications": "EC2 Describe* actions have no resource-level "
                                        "permissions",
    "ssm:CreateActivation": "an activation has no ARN before it exists (scoped instead by the "
                            "tags it must be created with)",
    "ssm:DescribeActivations": "SSM's activation reads have no resource types",
    "ssm:DescribeSessions": "SSM's session reads have no resource types",
    "ssm:DeleteActivation": "SSM activations have no resource type in IAM",
}


class RoleConflict(Refusal):
    """A role of hypd's name exists that hypd did not make for this cluster."""


class BoundaryMissing(Refusal):
    """The permissions boundary every role hypd creates must carry does not exist."""

    default_code = "precondition_failed"


@dataclass(frozen=True)
class RoleSpec:
    """Everything `ensure_role` needs for one role."""

    name: str
    purpose: str
    cluster: str
    trust: dict[str, Any]
    managed_arns: tuple[str, ...] = ()
    inline: dict[str, dict[str, Any]] = field(default_factory=dict)
    description: str = ""

    @property
    def tags(self) -> list[dict[str, str]]:
        return role_tags(self.cluster, self.purpose)


def role_name(cluster: str, purpose: str) -> str:
    name = f"hypd-{cluster}-{purpose}"
    if len(name) > MAX_ROLE_NAME:
        raise ValueError(f"IAM role name {name!r} is longer than {MAX_ROLE_NAME} characters")
    return name


def role_tags(cluster: str, purpose: str) -> list[dict[str, str]]:
    return aws.tags_for(CLUSTER_TAG, cluster, role=purpose)


def account_id(sts: Any) -> str:
    """The AWS account the panel's credentials act in: role ARNs and hypd's globally unique
    bucket names are derived from it."""
    return sts.get_caller_identity()["Account"]


_accounts: dict[tuple[str, str | None], str] = {}


def permissions_boundary(settings: Settings | None = None) -> str:
    """The ARN of the permissions boundary every role hypd creates carries: the setting, or
    the template's `hypd-role-boundary` in the account of hypd's own credentials."""
    settings = settings or Settings.from_env()
    if settings.role_boundary_arn:
        return settings.role_boundary_arn
    key = (settings.aws_mode, aws.configured_endpoint("sts")[1])
    if key not in _accounts:
        _accounts[key] = account_id(aws.client("sts", settings=settings))
    return (f"arn:{partition_of(settings.region)}:iam::{_accounts[key]}:policy{ROLE_PATH}"
            f"{BOUNDARY_POLICY_NAME}")


def partition_of(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def managed_policy_arn(name: str, region: str = "us-east-1", service_role: bool = False) -> str:
    path = "service-role/" if service_role else ""
    return f"arn:{partition_of(region)}:iam::aws:policy/{path}{name}"


def service_trust(service: str) -> dict[str, Any]:
    """A trust policy letting one AWS service assume the role."""
    return {
        "Version": POLICY_VERSION,
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"Service": service},
            "Action": "sts:AssumeRole",
        }],
    }


# ---------------------------------------------------------------------------------------
# the roles
# ---------------------------------------------------------------------------------------


def eks_cluster_role(cluster: str, region: str) -> RoleSpec:
    """The role the EKS control plane assumes: trust `eks.amazonaws.com`, the AWS-managed
    `AmazonEKSClusterPolicy`, nothing else."""
    return RoleSpec(
        name=role_name(cluster, PURPOSE_EKS_CLUSTER),
        purpose=PURPOSE_EKS_CLUSTER,
        cluster=cluster,
        trust=service_trust("eks.amazonaws.com"),
        managed_arns=(managed_policy_arn(EKS_CLUSTER_POLICY, region),),
        description=f"hypd: EKS control plane of cluster {cluster}",
    )


def hyperpod_execution_role(cluster: str, region: str, account: str, eks_cluster_name: str,
                            lifecycle_bucket: str, vpc_id: str, subnet_ids: Iterable[str] = (),
                            security_group_ids: Iterable[str] = ()) -> RoleSpec:
    """The role HyperPod instances run as (instance group `ExecutionRole`): trust
    `sagemaker.amazonaws.com`, the AWS-managed `AmazonSageMakerClusterInstanceRolePolicy`,
    and one inline policy with what HyperPod documents for EKS orchestration — the VPC CNI's
    network-interface actions, image pulls, EKS Pod Identity for this cluster, and read
    access to the cluster's lifecycle-script bucket.

    The network-interface actions are scoped to this region's instances and interfaces, the
    cluster's VPC, and the subnets and security groups *in that VPC* (condition `ec2:Vpc`):
    compute subnets allocated later for new instance groups are covered without rewriting
    the role. `subnet_ids` / `security_group_ids` known now are listed explicitly as well."""
    partition = partition_of(region)
    ec2 = f"arn:{partition}:ec2:{region}:{account}"
    vpc_arn = f"{ec2}:vpc/{vpc_id}"
    eni_actions = [
        "ec2:AssignPrivateIpAddresses",
        "ec2:AttachNetworkInterface",
        "ec2:CreateNetworkInterface",
        "ec2:CreateNetworkInterfacePermission",
        "ec2:DeleteNetworkInterface",
        "ec2:DeleteNetworkInterfacePermission",
        "ec2:DetachNetworkInterface",
        "ec2:ModifyNetworkInterfaceAttribute",
        "ec2:UnassignPrivateIpAddresses",
    ]
    known = [f"{ec2}:subnet/{s}" for s in subnet_ids]
    known += [f"{ec2}:security-group/{g}" for g in security_group_ids]
    bucket = f"arn:{partition}:s3:::{lifecycle_bucket}"
    policy = {
        "Version": POLICY_VERSION,
        "Statement": [
            {
                "Sid": "VpcCniNetworkInterfaces",
                "Effect": "Allow",
                "Action": eni_actions,
                "Resource": sorted([f"{ec2}:instance/*", f"{ec2}:network-interface/*", vpc_arn,
                                    *known]),
            },
            {
                "Sid": "VpcCniSubnetsAndGroupsInVpc",
                "Effect": "Allow",
                "Action": eni_actions,
                "Resource": [f"{ec2}:security-group/*", f"{ec2}:subnet/*"],
                "Condition": {"ArnEquals": {"ec2:Vpc": vpc_arn}},
            },
            {
                "Sid": "VpcCniTagInterfaces",
                "Effect": "Allow",
                "Action": ["ec2:CreateTags"],
                "Resource": [f"arn:{partition}:ec2:{region}:{account}:network-interface/*"],
            },
            {
                "Sid": "Describe",
                "Effect": "Allow",
                "Action": [
                    "ec2:DescribeDhcpOptions",
                    "ec2:DescribeInstanceTypes",
                    "ec2:DescribeInstances",
                    "ec2:DescribeNetworkInterfaces",
                    "ec2:DescribeSecurityGroups",
                    "ec2:DescribeSubnets",
                    "ec2:DescribeTags",
                    "ec2:DescribeVpcs",
                ],
                "Resource": "*",
            },
            {
                "Sid": "PullImages",
                "Effect": "Allow",
                "Action": [
                    "ecr:BatchCheckLayerAvailability",
                    "ecr:BatchGetImage",
                    "ecr:GetAuthorizationToken",
                    "ecr:GetDownloadUrlForLayer",
                ],
                "Resource": "*",
            },
            {
                "Sid": "PodIdentity",
                "Effect": "Allow",
                "Action": ["eks-auth:AssumeRoleForPodIdentity"],
                "Resource": [f"arn:{partition}:eks:{region}:{account}:cluster/"
                             f"{eks_cluster_name}"],
            },
            {
                "Sid": "LifecycleScripts",
                "Effect": "Allow",
                "Action": ["s3:ListBucket"],
                "Resource": [bucket],
            },
            {
                "Sid": "LifecycleScriptObjects",
                "Effect": "Allow",
                "Action": ["s3:GetObject"],
                "Resource": [f"{bucket}/*"],
            },
        ],
    }
    return RoleSpec(
        name=role_name(cluster, PURPOSE_HYPERPOD_EXECUTION),
        purpose=PURPOSE_HYPERPOD_EXECUTION,
        cluster=cluster,
        trust=service_trust("sagemaker.amazonaws.com"),
        managed_arns=(managed_policy_arn(SAGEMAKER_CLUSTER_INSTANCE_POLICY, region),),
        inline={"hypd-hyperpod-eks-node": policy},
        description=f"hypd: HyperPod instances of cluster {cluster}",
    )


def hyperpod_cluster_role(cluster: str, region: str, account: str,
                          kms_key_arns: Iterable[str] = ()) -> RoleSpec:
    """The HyperPod `ClusterRole` that managed autoscaling (HyperPod's Karpenter) assumes to
    add and remove nodes: trust `hyperpod.sagemaker.amazonaws.com`, and only
    `sagemaker:BatchAddClusterNodes` / `sagemaker:BatchDeleteClusterNodes` on this account's
    HyperPod clusters in this region (the cluster's ARN carries a random id unknown before it
    exists, so `cluster/*` within the account and region is as tight as it gets). The KMS
    grant statement AWS documents is added only when customer-managed keys are used."""
    partition = partition_of(region)
    statements: list[dict[str, Any]] = [{
        "Sid": "ScaleHyperPodNodes",
        "Effect": "Allow",
        "Action": ["sagemaker:BatchAddClusterNodes", "sagemaker:BatchDeleteClusterNodes"],
        "Resource": [f"arn:{partition}:sagemaker:{region}:{account}:cluster/*"],
        "Condition": {"StringEquals": {"aws:ResourceAccount": "${aws:PrincipalAccount}"}},
    }]
    keys = sorted(kms_key_arns)
    if keys:
        statements.append({
            "Sid": "EncryptedVolumes",
            "Effect": "Allow",
            "Action": ["kms:CreateGrant", "kms:DescribeKey"],
            "Resource": keys,
            "Condition": {
                "StringLike": {"kms:ViaService": "sagemaker.*.amazonaws.com"},
                "Bool": {"kms:GrantIsForAWSResource": "true"},
                "ForAllValues:StringEquals": {"kms:GrantOperations": [
                    "CreateGrant", "Decrypt", "DescribeKey", "GenerateDataKeyWithoutPlaintext",
                    "ReEncryptTo", "ReEncryptFrom"]},
            },
        })
    return RoleSpec(
        name=role_name(cluster, PURPOSE_HYPERPOD_CLUSTER),
        purpose=PURPOSE_HYPERPOD_CLUSTER,
        cluster=cluster,
        trust=service_trust("hyperpod.sagemaker.amazonaws.com"),
        inline={"hypd-hyperpod-autoscaling": {"Version": POLICY_VERSION,
                                              "Statement": statements}},
        description=f"hypd: HyperPod managed autoscaling of cluster {cluster}",
    )


# ---------------------------------------------------------------------------------------
# managed features' consumers: trust by mechanism, policy by role
# ---------------------------------------------------------------------------------------


def pod_identity_trust(account: str, eks_cluster_arn: str) -> dict[str, Any]:
    """EKS Pod Identity: the agent assumes the role for pods of this cluster only (the
    `aws:SourceAccount` / `aws:SourceArn` conditions keep another cluster's agent out)."""
    return {
        "Version": POLICY_VERSION,
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"Service": POD_IDENTITY_PRINCIPAL},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
            "Condition": {"StringEquals": {"aws:SourceAccount": account},
                          "ArnEquals": {"aws:SourceArn": eks_cluster_arn}},
        }],
    }


def irsa_trust(oidc_provider_arn: str, issuer_url: str, namespace: str,
               service_account: str) -> dict[str, Any]:
    """IAM roles for service accounts: web identities from the cluster's OIDC provider,
    only for this one service account and only for STS."""
    host_path = issuer_url.removeprefix("https://").rstrip("/")
    return {
        "Version": POLICY_VERSION,
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"Federated": oidc_provider_arn},
            "Action": "sts:AssumeRoleWithWebIdentity",
            "Condition": {"StringEquals": {
                f"{host_path}:sub": f"system:serviceaccount:{namespace}:{service_account}",
                f"{host_path}:aud": WEB_IDENTITY_AUDIENCE,
            }},
        }],
    }


def _statement(sid: str, actions: Iterable[str], resources: Iterable[str] | str
               ) -> dict[str, Any]:
    return {"Sid": sid, "Effect": "Allow", "Action": sorted(actions),
            "Resource": resources if isinstance(resources, str) else sorted(resources)}


def _feature_policy(purpose: str, region: str, account: str, bucket: str | None,
                    cluster: str) -> dict[str, Any]:
    """What each managed feature's consumer may do, and nothing more."""
    partition = partition_of(region)
    clusters = f"arn:{partition}:sagemaker:{region}:{account}:cluster/*"
    bucket_arn = f"arn:{partition}:s3:::{bucket}"
    if purpose == PURPOSE_TRAINING_OPERATOR:
        # the operator reads its nodes' HyperPod state to decide restarts and replacements
        statements = [_statement("ReadHyperPodNodes", ["sagemaker:DescribeClusterNode"],
                                 [clusters])]
    elif purpose == PURPOSE_INFERENCE_OPERATOR:
        # the rest comes with AWS's INFERENCE_OPERATOR_POLICY (see feature_role); that policy
        # passes only roles named SageMakerHyperPodInference* to SageMaker, so the role may
        # pass itself (the execution role of the SageMaker endpoints the operator makes)
        own = (f"arn:{partition}:iam::{account}:role{ROLE_PATH}"
               f"{role_name(cluster, PURPOSE_INFERENCE_OPERATOR)}")
        statements = [
            _statement("ListModelBucket", ["s3:ListBucket"], [bucket_arn]),
            _statement("ReadModelWeights", ["s3:GetObject"], [f"{bucket_arn}/*"]),
            {**_statement("PassItselfToSageMaker", ["iam:PassRole"], [own]),
             "Condition": {"StringEquals": {"iam:PassedToService": SAGEMAKER_PRINCIPAL}}},
        ]
    elif purpose == PURPOSE_KEDA:
        # KEDA reads the CloudWatch metrics of the inference operator's CloudWatch triggers
        statements = [_statement("ReadMetrics", ["cloudwatch:GetMetricData",
                                                 "cloudwatch:GetMetricStatistics",
                                                 "cloudwatch:ListMetrics"], "*")]
    elif purpose == PURPOSE_OBSERVABILITY:
        statements = [_statement("WriteMetrics", ["aps:RemoteWrite"],
                                 [f"arn:{partition}:aps:{region}:{account}:workspace/*"])]
    elif purpose == PURPOSE_TIERED_CHECKPOINTING:
        # what the checkpointing library does with the durable tier: list, read, write,
        # delete old checkpoints, abort an interrupted multipart upload
        statements = [
            _statement("ListCheckpoints", ["s3:ListBucket"], [bucket_arn]),
            _statement("ReadWriteCheckpoints", ["s3:AbortMultipartUpload", "s3:DeleteObject",
                                                "s3:GetObject", "s3:PutObject"],
                       [f"{bucket_arn}/*"]),
        ]
    elif purpose == PURPOSE_MODEL_DOWNLOAD:
        # the download Job: find what is there already, write models/ only (multipart
        # uploads included); a download's S3 source is granted to it alone, then taken back
        statements = [
            {**_statement("ListModels", ["s3:ListBucket"], [bucket_arn]),
             "Condition": {"StringLike": {"s3:prefix": ["models/*"]}}},
            _statement("WriteModels", ["s3:AbortMultipartUpload", "s3:PutObject"],
                       [f"{bucket_arn}/models/*"]),
        ]
    elif purpose == PURPOSE_EBS_CSI:
        # the spaces' home volumes: dynamic provisioning, attach/detach, resize and delete of
        # the volumes the driver itself made (it tags each ebs.csi.aws.com/cluster=true;
        # AWS's AmazonEBSCSIDriverPolicy less snapshots, which hypd does not take)
        ec2 = f"arn:{partition}:ec2:{region}:{account}"
        volumes = f"{ec2}:volume/*"
        made_by_driver = {"StringEquals": {f"aws:ResourceTag/{EBS_CSI_TAG}": "true"}}
        statements = [
            _statement("Describe", ["ec2:DescribeAvailabilityZones", "ec2:DescribeInstances",
                                    "ec2:DescribeTags", "ec2:DescribeVolumes",
                                    "ec2:DescribeVolumesModifications"], "*"),
            {**_statement("CreateVolumes", ["ec2:CreateVolume"], [volumes]),
             "Condition": {"StringEquals": {f"aws:RequestTag/{EBS_CSI_TAG}": "true"}}},
            {**_statement("TagNewVolumes", ["ec2:CreateTags"], [volumes]),
             "Condition": {"StringEquals": {"ec2:CreateAction": "CreateVolume"}}},
            _statement("AttachToInstances", ["ec2:AttachVolume", "ec2:DetachVolume"],
                       [f"{ec2}:instance/*"]),
            {**_statement("ItsOwnVolumes", ["ec2:AttachVolume", "ec2:DeleteVolume",
                                            "ec2:DetachVolume", "ec2:ModifyVolume"],
                          [volumes]),
             "Condition": made_by_driver},
        ]
    elif purpose == PURPOSE_SPACES:
        # the Spaces controller (AWS's AmazonSageMakerSpacesControllerPolicy, less its KMS
        # part: that signs the web UI router's tokens, and hypd's access strategy uses no
        # router): SSM activations for a space's remote IDE session, only with the tags
        # that tie them to this cluster, and the reads of activations and sessions
        eks_cluster = f"arn:{partition}:eks:{region}:{account}:cluster/{cluster}"
        statements = [
            {**_statement("ActivationsOfThisCluster", ["ssm:CreateActivation"], "*"),
             "Condition": {"StringEquals": {
                 f"aws:RequestTag/{SPACES_TAG_PREFIX}managed-by": SPACES_ADDON,
                 f"aws:RequestTag/{SPACES_TAG_PREFIX}eks-cluster-arn": eks_cluster}}},
            _statement("ActivationsAndSessions", ["ssm:DeleteActivation",
                                                  "ssm:DescribeActivations",
                                                  "ssm:DescribeSessions"], "*"),
            _statement("TagSpaceInstances", ["ssm:AddTagsToResource"],
                       [f"arn:{partition}:ssm:{region}:{account}:managed-instance/*"]),
        ]
    elif purpose == PURPOSE_LB_CONTROLLER:
        # NLBs for LoadBalancer Services: read the network, make and tag load balancers,
        # target groups, listeners and their security groups (none of these calls can be
        # scoped to resources that do not exist yet; the controller tags what it makes)
        statements = [
            _statement("ReadNetwork", ["ec2:DescribeAvailabilityZones",
                                       "ec2:DescribeInstances", "ec2:DescribeInternetGateways",
                                       "ec2:DescribeNetworkInterfaces",
                                       "ec2:DescribeSecurityGroups", "ec2:DescribeSubnets",
                                       "ec2:DescribeTags", "ec2:DescribeVpcs"], "*"),
            _statement("LoadBalancerSecurityGroups", [
                "ec2:AuthorizeSecurityGroupIngress", "ec2:CreateSecurityGroup",
                "ec2:CreateTags", "ec2:DeleteSecurityGroup",
                "ec2:RevokeSecurityGroupIngress"], "*"),
            _statement("LoadBalancers", [
                "elasticloadbalancing:AddTags", "elasticloadbalancing:CreateListener",
                "elasticloadbalancing:CreateLoadBalancer",
                "elasticloadbalancing:CreateTargetGroup",
                "elasticloadbalancing:DeleteListener",
                "elasticloadbalancing:DeleteLoadBalancer",
                "elasticloadbalancing:DeleteTargetGroup",
                "elasticloadbalancing:DeregisterTargets",
                "elasticloadbalancing:Describe*",
                "elasticloadbalancing:ModifyListener",
                "elasticloadbalancing:ModifyLoadBalancerAttributes",
                "elasticloadbalancing:ModifyTargetGroup",
                "elasticloadbalancing:ModifyTargetGroupAttributes",
                "elasticloadbalancing:RegisterTargets",
                "elasticloadbalancing:RemoveTags"], "*"),
        ]
    else:
        raise ValueError(f"no policy for a consumer role {purpose!r}")
    return {"Version": POLICY_VERSION, "Statement": statements}


FEATURE_MANAGED_POLICIES: dict[str, tuple[str, ...]] = {
    PURPOSE_INFERENCE_OPERATOR: (INFERENCE_OPERATOR_POLICY,),
}
"""AWS-managed policies a consumer's role carries beside hypd's inline one."""

FEATURE_SERVICE_PRINCIPALS: dict[str, str] = {
    PURPOSE_INFERENCE_OPERATOR: SAGEMAKER_PRINCIPAL,
}
"""An AWS service a consumer's role is also trusted by: the inference operator passes its role
to SageMaker as its endpoints' execution role (AWS's setup guide trusts
sagemaker.amazonaws.com beside the OIDC provider)."""

FEATURE_PURPOSES = (PURPOSE_TRAINING_OPERATOR, PURPOSE_INFERENCE_OPERATOR,
                    PURPOSE_OBSERVABILITY, PURPOSE_TIERED_CHECKPOINTING,
                    PURPOSE_MODEL_DOWNLOAD, PURPOSE_LB_CONTROLLER, PURPOSE_KEDA,
                    PURPOSE_SPACES, PURPOSE_EBS_CSI)
NEEDS_BUCKET = (PURPOSE_INFERENCE_OPERATOR, PURPOSE_TIERED_CHECKPOINTING,
                PURPOSE_MODEL_DOWNLOAD)


def feature_role(cluster: str, region: str, account: str, purpose: str,
                 trust: dict[str, Any], bucket: str | None = None) -> RoleSpec:
    """The role of a managed feature's consumer: `trust` from `pod_identity_trust` or
    `irsa_trust` (the consumer's mechanism), one inline policy `hypd-<purpose>`. `bucket`:
    the cluster's shared bucket, for the consumers that read or write it."""
    if purpose in NEEDS_BUCKET and not bucket:
        raise ValueError(f"the {purpose} role is scoped to the cluster's bucket: give it")
    managed = FEATURE_MANAGED_POLICIES.get(purpose, ())
    service = FEATURE_SERVICE_PRINCIPALS.get(purpose)
    if service is not None:
        trust = {**trust, "Statement": [*trust["Statement"],
                                        *service_trust(service)["Statement"]]}
    return RoleSpec(
        name=role_name(cluster, purpose),
        purpose=purpose,
        cluster=cluster,
        trust=trust,
        managed_arns=tuple(managed_policy_arn(name, region) for name in managed),
        inline={f"hypd-{purpose}": _feature_policy(purpose, region, account, bucket,
                                                   cluster)},
        description=f"hypd: {purpose} of cluster {cluster}",
    )


def mlflow_server_role(cluster: str, region: str, bucket: str, prefix: str) -> RoleSpec:
    """The role SageMaker's managed MLflow tracking server assumes to keep its artifacts:
    trust `sagemaker.amazonaws.com`, and only list/read/write/delete under `prefix/` of the
    cluster's bucket (AWS suggests AmazonS3FullAccess; the artifact store is one prefix, so
    this is all it needs). Automatic model registration is off, so no SageMaker rights."""
    bucket_arn = f"arn:{partition_of(region)}:s3:::{bucket}"
    policy = {"Version": POLICY_VERSION, "Statement": [
        {**_statement("ListArtifacts", ["s3:ListBucket"], [bucket_arn]),
         "Condition": {"StringLike": {"s3:prefix": [f"{prefix}/*"]}}},
        _statement("ReadWriteArtifacts", ["s3:AbortMultipartUpload", "s3:DeleteObject",
                                          "s3:GetObject", "s3:PutObject"],
                   [f"{bucket_arn}/{prefix}/*"]),
    ]}
    return RoleSpec(
        name=role_name(cluster, PURPOSE_MLFLOW_SERVER), purpose=PURPOSE_MLFLOW_SERVER,
        cluster=cluster, trust=service_trust("sagemaker.amazonaws.com"),
        inline={f"hypd-{PURPOSE_MLFLOW_SERVER}": policy},
        description=f"hypd: the MLflow tracking server of cluster {cluster} (its artifacts)")


def _artifact_statements(partition: str, artifact_store_uri: str) -> list[dict[str, Any]]:
    """List, read and write under the tracking server's artifact store: MLflow's client
    uploads an artifact (`mlflow.log_artifact`, a logged model) to the store itself, with
    the caller's credentials, and reads it back the same way."""
    bucket, _, prefix = artifact_store_uri.removeprefix("s3://").partition("/")
    prefix = prefix.strip("/")
    bucket_arn = f"arn:{partition}:s3:::{bucket}"
    objects = f"{bucket_arn}/{prefix}/*" if prefix else f"{bucket_arn}/*"
    listing = _statement("ListArtifacts", ["s3:ListBucket"], [bucket_arn])
    if prefix:
        listing["Condition"] = {"StringLike": {"s3:prefix": [f"{prefix}/*"]}}
    return [listing, _statement("ReadWriteArtifacts", ["s3:AbortMultipartUpload",
                                                       "s3:GetObject", "s3:PutObject"],
                                [objects])]


def mlflow_role(cluster: str, account: str, eks_cluster_arn: str,
                tracking_server_arn: str, artifact_store_uri: str | None = None) -> RoleSpec:
    """The role a training job's pods log to MLflow as (EKS Pod Identity, bound to the
    job service account): `sagemaker-mlflow:*` on the cluster's one tracking server ARN, and
    list/read/write under that server's S3 artifact store (artifacts go there from the
    client) — not on the nodes' role, which every pod and the node itself would hold."""
    statements = [_statement("LogToTrackingServer", ["sagemaker-mlflow:*"],
                             [tracking_server_arn])]
    if artifact_store_uri and artifact_store_uri.startswith("s3://"):
        statements += _artifact_statements(eks_cluster_arn.split(":")[1], artifact_store_uri)
    policy = {"Version": POLICY_VERSION, "Statement": statements}
    return RoleSpec(
        name=role_name(cluster, PURPOSE_MLFLOW), purpose=PURPOSE_MLFLOW, cluster=cluster,
        trust=pod_identity_trust(account, eks_cluster_arn),
        inline={f"hypd-{PURPOSE_MLFLOW}": policy},
        description=f"hypd: training jobs of cluster {cluster} logging to MLflow")


def role_state(iam: Any, name: str) -> dict[str, Any] | None:
    """{arn, trust, policies: {name: document}} of a role, or None when absent: what a
    feature's state is read from."""
    role = _get_role(iam, name)
    if role is None:
        return None
    return {"arn": role["Arn"], "trust": _policy_doc(role.get("AssumeRolePolicyDocument")),
            "policies": {p: _inline_policy(iam, name, p) for p in _inline_names(iam, name)}}


# ---------------------------------------------------------------------------------------
# ensure / delete
# ---------------------------------------------------------------------------------------


def _tag_map(tags: Iterable[Mapping[str, str]]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in tags}


def _role_tags(iam: Any, name: str) -> dict[str, str]:
    tags: dict[str, str] = {}
    marker = None
    while True:
        kwargs: dict[str, Any] = {"RoleName": name}
        if marker:
            kwargs["Marker"] = marker
        reply = iam.list_role_tags(**kwargs)
        tags.update(_tag_map(reply.get("Tags") or ()))
        if not reply.get("IsTruncated"):
            return tags
        marker = reply.get("Marker")


def _get_role(iam: Any, name: str) -> dict[str, Any] | None:
    try:
        return iam.get_role(RoleName=name)["Role"]
    except ClientError as exc:
        if is_not_found(exc):
            return None
        raise


def _policy_doc(value: Any) -> Any:
    """IAM answers policy documents URL-decoded JSON (boto3 parses them) or as strings."""
    if isinstance(value, str):
        from urllib.parse import unquote

        return json.loads(unquote(value))
    return value


def _check_owner(iam: Any, name: str, cluster: str) -> None:
    tags = _role_tags(iam, name)
    if tags.get(MANAGED_BY) != MANAGED_BY_VALUE or tags.get(CLUSTER_TAG) != cluster:
        raise RoleConflict(
            f"an IAM role named {name!r} already exists and hypd did not create it for "
            f"cluster {cluster!r}; delete or rename that role, or choose another cluster name")


def ensure_role(iam: Any, name: str, trust: dict[str, Any], managed_arns: Iterable[str] = (),
                inline: Mapping[str, dict[str, Any]] | None = None,
                tags: list[dict[str, str]] | None = None, description: str = "") -> str:
    """The role `name` with exactly this trust policy, these managed policies and these
    inline policies (extra ones hypd does not know are left alone). Returns its ARN.
    `tags` must carry `hypd:cluster`; a same-named role without hypd's tags for that
    cluster raises `RoleConflict`."""
    tags = list(tags or ())
    cluster = _tag_map(tags).get(CLUSTER_TAG)
    if not cluster:
        raise ValueError("a hypd role needs the hypd:cluster tag")
    inline = dict(inline or {})
    boundary = permissions_boundary()
    role = _get_role(iam, name)
    if role is None:
        try:
            role = iam.create_role(RoleName=name, Path=ROLE_PATH, PermissionsBoundary=boundary,
                                   AssumeRolePolicyDocument=json.dumps(trust),
                                   Description=description[:1000], Tags=tags)["Role"]
        except ClientError as exc:
            if error_code(exc) == "NoSuchEntity":
                raise BoundaryMissing(
                    f"IAM refused to create role {name!r}: its permissions boundary {boundary} "
                    "does not exist. Deploy deploy/cloudformation.yaml (it creates the "
                    "boundary), or set HYPD_ROLE_BOUNDARY_ARN to the policy to use") from exc
            if error_code(exc) != "EntityAlreadyExists":
                raise
            role = _get_role(iam, name)
            if role is None:
                raise
            _check_owner(iam, name, cluster)
    else:
        _check_owner(iam, name, cluster)
        if _policy_doc(role.get("AssumeRolePolicyDocument")) != trust:
            iam.update_assume_role_policy(RoleName=name, PolicyDocument=json.dumps(trust))
    if (role.get("PermissionsBoundary") or {}).get("PermissionsBoundaryArn") != boundary:
        # a role adopted from before boundaries (its path cannot change), or a boundary
        # setting that changed: the role is brought under the boundary hypd uses now
        iam.put_role_permissions_boundary(RoleName=name, PermissionsBoundary=boundary)
    attached = {p["PolicyArn"] for p in _attached(iam, name)}
    for arn in managed_arns:
        if arn not in attached:
            iam.attach_role_policy(RoleName=name, PolicyArn=arn)
    for policy_name, document in inline.items():
        if _inline_policy(iam, name, policy_name) != document:
            iam.put_role_policy(RoleName=name, PolicyName=policy_name,
                                PolicyDocument=json.dumps(document))
    return role["Arn"]


def _inline_policy(iam: Any, role: str, policy_name: str) -> Any:
    """The inline policy's document as IAM holds it, or None: a policy already as wanted is
    not written again (a re-run of an ensure changes nothing)."""
    try:
        return _policy_doc(iam.get_role_policy(RoleName=role,
                                               PolicyName=policy_name)["PolicyDocument"])
    except ClientError as exc:
        if is_not_found(exc):
            return None
        raise


def ensure_role_spec(iam: Any, spec: RoleSpec) -> str:
    return ensure_role(iam, spec.name, spec.trust, spec.managed_arns, spec.inline, spec.tags,
                       spec.description)


def _attached(iam: Any, name: str) -> list[dict[str, Any]]:
    pages = iam.get_paginator("list_attached_role_policies").paginate(RoleName=name)
    return [p for page in pages for p in page.get("AttachedPolicies") or ()]


def _inline_names(iam: Any, name: str) -> list[str]:
    pages = iam.get_paginator("list_role_policies").paginate(RoleName=name)
    return [p for page in pages for p in page.get("PolicyNames") or ()]


def delete_role(iam: Any, name: str, cluster: str | None = None) -> bool:
    """Delete a role hypd made (detach managed policies, delete inline policies, leave
    instance profiles, then the role). False when it is already gone. A role without hypd's
    tags (for `cluster`, when given) raises `RoleConflict` and is left alone."""
    role = _get_role(iam, name)
    if role is None:
        return False
    tags = _role_tags(iam, name)
    if tags.get(MANAGED_BY) != MANAGED_BY_VALUE or (cluster is not None
                                                    and tags.get(CLUSTER_TAG) != cluster):
        raise RoleConflict(f"IAM role {name!r} was not created by hypd for this cluster; "
                           "refusing to delete it")

    def gone_ok(call: Any, **kwargs: Any) -> None:
        try:
            call(**kwargs)
        except ClientError as exc:
            if not is_not_found(exc):
                raise

    for policy in _attached(iam, name):
        gone_ok(iam.detach_role_policy, RoleName=name, PolicyArn=policy["PolicyArn"])
    for policy_name in _inline_names(iam, name):
        gone_ok(iam.delete_role_policy, RoleName=name, PolicyName=policy_name)
    pages = iam.get_paginator("list_instance_profiles_for_role").paginate(RoleName=name)
    for page in pages:
        for profile in page.get("InstanceProfiles") or ():
            gone_ok(iam.remove_role_from_instance_profile,
                    InstanceProfileName=profile["InstanceProfileName"], RoleName=name)
    try:
        iam.delete_role(RoleName=name)
    except ClientError as exc:
        if is_not_found(exc):
            return False
        raise
    return True


def cluster_roles(iam: Any, cluster: str) -> list[dict[str, str]]:
    """hypd's roles for a cluster, found by name prefix and confirmed by tags:
    [{name, arn, purpose}]."""
    prefix = f"hypd-{cluster}-"
    found = []
    for page in iam.get_paginator("list_roles").paginate():
        for role in page.get("Roles") or ():
            if not role["RoleName"].startswith(prefix):
                continue
            tags = _role_tags(iam, role["RoleName"])
            if tags.get(MANAGED_BY) == MANAGED_BY_VALUE and tags.get(CLUSTER_TAG) == cluster:
                found.append({"name": role["RoleName"], "arn": role["Arn"],
                              "purpose": tags.get(ROLE_TAG, "")})
    return sorted(found, key=lambda r: r["name"])


def delete_cluster_roles(iam: Any, cluster: str) -> list[str]:
    """Delete every role hypd made for the cluster; returns their names."""
    deleted = []
    for role in cluster_roles(iam, cluster):
        if delete_role(iam, role["name"], cluster):
            deleted.append(role["name"])
    return deleted
