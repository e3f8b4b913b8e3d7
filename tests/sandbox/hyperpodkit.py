"""Test helpers for the HyperPod gaps: what a real CreateCluster needs, made in the sandbox.

A `Lab` is a VPC with two private /20 subnets in two zones, a security group, an execution
role and a cluster role in IAM, a lifecycle bucket with its script, and an ACTIVE EKS
cluster on those subnets — everything the product creates before it asks for HyperPod.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

REGION = "us-west-2"
TRUST = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "sagemaker.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
)


@dataclass
class Lab:
    name: str
    vpc_id: str
    subnet_a: str  # /20 in us-west-2a
    subnet_b: str  # /20 in us-west-2b
    security_group: str
    execution_role: str
    cluster_role: str
    bucket: str
    eks_name: str
    eks_arn: str

    @property
    def lifecycle(self) -> dict[str, str]:
        return {"SourceS3Uri": f"s3://{self.bucket}/lifecycle", "OnCreate": "on_create.sh"}


def unique(prefix: str) -> str:
    """A name no other test in this process uses (moto's state is per process)."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def make_lab(client: Any, control: Any, prefix: str = "lab") -> Lab:
    """Build a lab through the API, as the product would, and wait for EKS to be ACTIVE."""
    name = unique(prefix)
    ec2, iam, s3, eks = (client(s) for s in ("ec2", "iam", "s3", "eks"))
    second = uuid.uuid4().int % 200 + 20
    vpc = ec2.create_vpc(CidrBlock=f"10.{second}.0.0/16")["Vpc"]["VpcId"]
    subnet_a = ec2.create_subnet(
        VpcId=vpc, CidrBlock=f"10.{second}.0.0/20", AvailabilityZone=f"{REGION}a"
    )["Subnet"]["SubnetId"]
    subnet_b = ec2.create_subnet(
        VpcId=vpc, CidrBlock=f"10.{second}.16.0/20", AvailabilityZone=f"{REGION}b"
    )["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName=name, Description="efa", VpcId=vpc)["GroupId"]
    execution = iam.create_role(RoleName=f"{name}-exec", AssumeRolePolicyDocument=TRUST)
    cluster_role = iam.create_role(RoleName=f"{name}-cluster", AssumeRolePolicyDocument=TRUST)
    bucket = f"sagemaker-{name}"
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
    s3.put_object(Bucket=bucket, Key="lifecycle/on_create.sh", Body=b"#!/bin/bash\nexit 0\n")
    created = eks.create_cluster(
        name=name,
        roleArn=cluster_role["Role"]["Arn"],
        resourcesVpcConfig={"subnetIds": [subnet_a, subnet_b]},
        accessConfig={"authenticationMode": "API"},
    )["cluster"]
    control.advance_clock(600)
    wait_for(lambda: eks.describe_cluster(name=name)["cluster"]["status"] == "ACTIVE")
    return Lab(
        name=name,
        vpc_id=vpc,
        subnet_a=subnet_a,
        subnet_b=subnet_b,
        security_group=group,
        execution_role=execution["Role"]["Arn"],
        cluster_role=cluster_role["Role"]["Arn"],
        bucket=bucket,
        eks_name=name,
        eks_arn=created["arn"],
    )


def gpu_group(lab: Lab, **overrides: Any) -> dict[str, Any]:
    """The product's first instance group: p5, on-demand, EFA, its own /20, deep checks."""
    group: dict[str, Any] = {
        "InstanceGroupName": "gpu",
        "InstanceType": "ml.p5.48xlarge",
        "InstanceCount": 2,
        "ExecutionRole": lab.execution_role,
        "LifeCycleConfig": lab.lifecycle,
        "ThreadsPerCore": 1,
        "InstanceStorageConfigs": [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}],
        "OnStartDeepHealthChecks": ["InstanceStress", "InstanceConnectivity"],
        "OverrideVpcConfig": {"SecurityGroupIds": [lab.security_group], "Subnets": [lab.subnet_b]},
        "CapacityRequirements": {"OnDemand": {}},
        "NetworkInterface": {"InterfaceType": "efa"},
        "KubernetesConfig": {"Labels": {"hypd/pool": "train"}},
    }
    group.update(overrides)
    return group


def cluster_request(lab: Lab, name: str | None = None, groups: list[dict[str, Any]] | None = None,
                    **overrides: Any) -> dict[str, Any]:
    """A full CreateCluster request the way hypd sends it."""
    request: dict[str, Any] = {
        "ClusterName": name or unique("hp"),
        "InstanceGroups": groups if groups is not None else [gpu_group(lab)],
        "VpcConfig": {"SecurityGroupIds": [lab.security_group], "Subnets": [lab.subnet_a]},
        "Orchestrator": {"Eks": {"ClusterArn": lab.eks_arn}},
        "NodeRecovery": "Automatic",
        "NodeProvisioningMode": "Continuous",
        "ClusterRole": lab.cluster_role,
        "AutoScaling": {"Mode": "Enable", "AutoScalerType": "Karpenter"},
        "TieredStorageConfig": {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20},
        "Tags": [{"Key": "hypd:managed-by", "Value": "hypd"}],
    }
    request.update(overrides)
    return request


def wait_for(condition: Any, timeout: float = 10.0, interval: float = 0.02) -> Any:
    """Poll until `condition()` is truthy (each poll is an AWS call, which applies due
    changes); returns its value."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"condition not met after {timeout} s")
        time.sleep(interval)


def nodes(sm: Any, cluster: str) -> list[dict[str, Any]]:
    pages = sm.get_paginator("list_cluster_nodes").paginate(ClusterName=cluster)
    return [n for page in pages for n in page["ClusterNodeSummaries"]]


def statuses(sm: Any, cluster: str) -> list[str]:
    return sorted(n["InstanceStatus"]["Status"] for n in nodes(sm, cluster))
