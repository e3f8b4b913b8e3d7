"""deploy/cloudformation.yaml: lint, least privilege derived from the code, no escalation
through CreateRole + PassRole, no inbound rule, and a deployment on the sandbox's
CloudFormation (moto).

What moto's CloudFormation does not do, precisely (moto 5.2.5), and what is checked instead:
- `AWS::S3::BucketPolicy` and `AWS::SecretsManager::Secret` are skipped (no moto model): the
  stack still completes; their properties are checked in the template.
- `AWS::S3::Bucket`: moto applies `BucketEncryption` and `Tags` and ignores
  `VersioningConfiguration`, `PublicAccessBlockConfiguration` and `OwnershipControls`.
- `AWS::IAM::Role`: moto ignores `ManagedPolicyArns` (the SSM core policy).
- `AWS::EC2::Instance`: moto ignores `SecurityGroupIds` and `LaunchTemplate` (IMDSv2, the
  encrypted volume) and does not run `UserData`.
- `Rules` are not evaluated.
Everything else (VPC, subnet, routes, security group, bucket, managed policies with their
paths and attachments, the instance with its profile, outputs) is created and read back.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from cloud import iam as hypd_iam
from tests.deploy import aws_calls
from tests.deploy.template import (
    TEMPLATE,
    actions,
    as_list,
    boundary_misses,
    documents,
    managed_documents,
    policy,
    resources,
    template,
)

REGION = "us-west-2"
OTHER_ACCOUNT = "210987654321"
IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/hypd:0.1.0"

NOT_IN_MOTO = {
    "AWS::S3::BucketPolicy": "no moto model",
    "AWS::SecretsManager::Secret": "no moto model",
}
"""Resource types of the template moto's CloudFormation skips."""

BOUNDARY_WILDCARDS = {"ec2:Describe*", "elasticloadbalancing:*", "sagemaker-mlflow:*"}
"""The boundary's only wildcards: AmazonEKSClusterPolicy uses the first two families whole;
`sagemaker-mlflow:*` is the MLflow REST API (its actions follow MLflow's versions), which the
jobs' MLflow role holds on one tracking server's ARN only. A ceiling, not a grant: a role gets
only what its own policies also allow."""

IAM_WRITES = ("iam:Create", "iam:Put", "iam:Attach", "iam:Update", "iam:Delete", "iam:Detach",
              "iam:Tag", "iam:Untag", "iam:Add", "iam:Remove", "iam:Set", "iam:PassRole")


def _statements(document: dict[str, Any]) -> list[dict[str, Any]]:
    return as_list(document["Statement"])


def _hypd_statements() -> list[dict[str, Any]]:
    return _statements(policy("HypdPolicy"))


# -- lint and static properties ---------------------------------------------------------------

def test_cfn_lint_passes():
    """The command line a person runs (`cfn-lint deploy/cloudformation.yaml`): errors and
    warnings both fail."""
    lint = subprocess.run([sys.executable, "-c", "import sys; from cfnlint.runner import main; "
                           "sys.argv[0] = 'cfn-lint'; sys.exit(main())", str(TEMPLATE)],
                          capture_output=True, text=True, timeout=300)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_no_statement_grants_every_action_on_every_resource():
    for where, document in documents():
        for statement in _statements(document):
            assert "NotAction" not in statement and "NotResource" not in statement, where
            if statement["Effect"] != "Allow" or where.endswith("trust"):
                continue
            granted = as_list(statement["Action"])
            assert "*" not in granted, (where, statement.get("Sid"))
            wildcards = {a for a in granted if "*" in a or "?" in a}
            if where in ("HypdPolicy", "BootstrapPolicy"):
                assert not wildcards, (where, wildcards)  # hypd's own: every action named
            elif where == "RoleBoundary":
                assert wildcards <= BOUNDARY_WILDCARDS, wildcards
            else:
                assert not wildcards, (where, wildcards)


def test_role_creation_and_passing_are_confined_to_the_hypd_path_and_boundary():
    roles_arn = {"Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:role/hypd/*"}
    confined = {"iam:CreateRole", "iam:PutRolePolicy", "iam:AttachRolePolicy",
                "iam:DetachRolePolicy", "iam:DeleteRolePolicy", "iam:PutRolePermissionsBoundary"}
    seen: set[str] = set()
    for statement in _hypd_statements():
        granted = set(as_list(statement["Action"]))
        if granted & confined:
            # only together, only under /hypd/, only with hypd's boundary
            assert granted <= confined, statement["Sid"]
            assert statement["Resource"] == roles_arn, statement["Sid"]
            assert statement["Condition"] == {
                "StringEquals": {"iam:PermissionsBoundary": {"Ref": "RoleBoundary"}}}
            seen |= granted
        if "iam:PassRole" in granted:
            assert granted == {"iam:PassRole"} and statement["Resource"] == roles_arn
            seen.add("iam:PassRole")
        for action in granted - confined - {"iam:PassRole", "iam:CreateServiceLinkedRole"}:
            if action.startswith(IAM_WRITES):
                # other IAM writes: hypd's roles (tags, trust, deletion) and OIDC providers
                targets = {str(r) for r in as_list(statement["Resource"])}
                assert all(("role/hypd/*" in t or "oidc-provider/*" in t
                            or "instance-profile/*" in t) for t in targets), statement["Sid"]
    assert seen == confined | {"iam:PassRole"}
    linked = next(s for s in _hypd_statements()
                  if "iam:CreateServiceLinkedRole" in as_list(s["Action"]))
    assert "iam:AWSServiceName" in linked["Condition"]["StringEquals"]
    # the boundary is the one hypd's roles carry by default, and it writes nothing in IAM;
    # it passes no role but hypd's inference operator role (to itself, as its SageMaker
    # endpoints' execution role), to SageMaker only
    boundary = resources()["RoleBoundary"]["Properties"]
    assert boundary["Path"] == hypd_iam.ROLE_PATH
    assert boundary["ManagedPolicyName"] == hypd_iam.BOUNDARY_POLICY_NAME
    for statement in _statements(boundary["PolicyDocument"]):
        for action in as_list(statement["Action"]):
            if action == "iam:PassRole":
                assert as_list(statement["Action"]) == ["iam:PassRole"]
                assert statement["Resource"] == (
                    f"arn:*:iam::*:role/hypd/hypd-*-{hypd_iam.PURPOSE_INFERENCE_OPERATOR}")
                assert statement["Condition"] == {
                    "StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}}
            elif action.startswith("iam:"):
                assert action == "iam:CreateServiceLinkedRole" and statement["Condition"]
    # hypd's own role is not under /hypd/: hypd can neither change nor pass it
    assert resources()["InstanceRole"]["Properties"].get("Path", "/") != hypd_iam.ROLE_PATH


def test_the_security_group_has_no_inbound_rule():
    assert not resources("AWS::EC2::SecurityGroupIngress")
    for name, group in resources("AWS::EC2::SecurityGroup").items():
        props = group["Properties"]
        assert "SecurityGroupIngress" not in props, name
        assert [(r["IpProtocol"], r["FromPort"], r["ToPort"]) for r in
                props["SecurityGroupEgress"]] == [("tcp", 443, 443)]


def test_the_bucket_is_versioned_encrypted_private_and_tls_only():
    bucket = resources()["SharedBucket"]
    props = bucket["Properties"]
    assert bucket["DeletionPolicy"] == "Retain"
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
        "ServerSideEncryptionByDefault"]["SSEAlgorithm"] in ("AES256", "aws:kms")
    assert set(props["PublicAccessBlockConfiguration"].values()) == {True}
    assert len(props["PublicAccessBlockConfiguration"]) == 4
    deny = _statements(policy("SharedBucketPolicy"))[0]
    assert deny["Effect"] == "Deny"
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_hypds_policy_is_exactly_what_the_code_calls():
    """Derived from the code (tests/deploy/aws_calls.py reads every AWS call with botocore's
    models): a new call without its permission fails here, and so does a permission nothing
    calls any more."""
    scan = aws_calls.scan()
    assert not scan.unplaced, ("calls whose service the scan cannot tell; name the client "
                               f"after its service or list the receiver: {scan.unplaced}")
    needed = aws_calls.iam_actions()
    granted = actions(policy("HypdPolicy"))
    assert not needed - granted, f"calls without their permission: {sorted(needed - granted)}"
    assert not granted - needed, f"permissions nothing calls: {sorted(granted - needed)}"
    assert len(needed) > 90  # the scan sees the code (every service, paginators, tables)


def _role_spec_documents() -> list[tuple[str, dict[str, Any]]]:
    account = "123456789012"
    specs = [hypd_iam.eks_cluster_role("lab", REGION),
             hypd_iam.hyperpod_execution_role("lab", REGION, account, "lab", "sagemaker-x",
                                              "vpc-0123", ["subnet-0a"], ["sg-0b"]),
             hypd_iam.hyperpod_cluster_role("lab", REGION, account,
                                            [f"arn:aws:kms:{REGION}:{account}:key/k"])]
    return [(f"{s.name} {n}", doc) for s in specs for n, doc in s.inline.items()]


def test_the_boundary_leaves_the_roles_hypd_creates_what_they_need():
    managed = {arn for spec in (hypd_iam.eks_cluster_role("lab", REGION),
                                hypd_iam.hyperpod_execution_role("lab", REGION, "1", "lab", "b",
                                                                 "v"))
               for arn in spec.managed_arns}
    assert not boundary_misses(_role_spec_documents() + managed_documents(managed))


# -- deployed on the sandbox's CloudFormation ---------------------------------------------------

@pytest.fixture(scope="module")
def local_aws():
    from sandbox.local_aws import LocalAws, client_env

    aws = LocalAws(speed=1000)
    url = aws.start()
    env = client_env(url, REGION)
    session = boto3.session.Session(aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                                    aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
                                    region_name=REGION)

    other = session.client("sts", endpoint_url=url).assume_role(
        RoleArn=f"arn:aws:iam::{OTHER_ACCOUNT}:role/deployer", RoleSessionName="deploy")[
        "Credentials"]
    elsewhere = boto3.session.Session(aws_access_key_id=other["AccessKeyId"],
                                      aws_secret_access_key=other["SecretAccessKey"],
                                      aws_session_token=other["SessionToken"],
                                      region_name=REGION)

    def client(service: str, account: str | None = None) -> Any:
        """A client in moto's default account, or (moto's way) in another one."""
        return (elsewhere if account else session).client(service, endpoint_url=url)

    try:
        yield client
    finally:
        aws.stop()


def _deploy(cfn: Any, name: str, **parameters: str) -> dict[str, Any]:
    cfn.create_stack(StackName=name, TemplateBody=TEMPLATE.read_text(),
                     Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"],
                     Parameters=[{"ParameterKey": k, "ParameterValue": v}
                                 for k, v in {"ContainerImage": IMAGE, **parameters}.items()])
    deadline = time.monotonic() + 60
    while True:
        stack = cfn.describe_stacks(StackName=name)["Stacks"][0]
        if not stack["StackStatus"].endswith("_IN_PROGRESS") or time.monotonic() > deadline:
            return stack
        time.sleep(0.2)


def test_the_template_deploys_on_the_sandbox_and_its_outputs_are_present(local_aws):
    from moto.cloudformation.parsing import get_model_map

    types = {r["Type"] for r in resources().values()}
    assert {t: NOT_IN_MOTO[t] for t in types - set(get_model_map())} == NOT_IN_MOTO

    cfn, ec2, iam, s3 = (local_aws(s) for s in ("cloudformation", "ec2", "iam", "s3"))
    name = f"hypd-{uuid.uuid4().hex[:6]}"
    stack = _deploy(cfn, name)
    assert stack["StackStatus"] == "CREATE_COMPLETE", stack.get("StackStatusReason")
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}
    assert set(outputs) == set(template()["Outputs"])
    instance_id = outputs["InstanceId"]
    command = outputs["SsmPortForwardCommand"]
    assert f"--target {instance_id}" in command
    assert "AWS-StartPortForwardingSession" in command
    assert json.loads(command.split("--parameters ", 1)[1].strip("'")) == {
        "portNumber": ["3099"], "localPortNumber": ["3099"]}
    assert f"--secret-id {name}/hypd/operator-token" in outputs["OperatorTokenCommand"]

    # what moto made, read back
    physical = {r["LogicalResourceId"]: r["PhysicalResourceId"] for r in
                cfn.describe_stack_resources(StackName=name)["StackResources"]
                if "LogicalResourceId" in r}
    instance = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0][
        "Instances"][0]
    assert instance["SubnetId"] == physical["PublicSubnet"]
    assert instance["IamInstanceProfile"]["Arn"].endswith(physical["InstanceProfile"])
    group = ec2.describe_security_groups(GroupIds=[physical["InstanceSecurityGroup"]])[
        "SecurityGroups"][0]
    assert group["IpPermissions"] == []
    assert group["VpcId"] == physical["Vpc"]
    assert s3.get_bucket_encryption(Bucket=outputs["BucketName"])[
        "ServerSideEncryptionConfiguration"]["Rules"][0]["ApplyServerSideEncryptionByDefault"][
        "SSEAlgorithm"] == "AES256"
    boundary = iam.get_policy(PolicyArn=outputs["RoleBoundaryArn"])["Policy"]
    assert boundary["Path"] == hypd_iam.ROLE_PATH
    assert boundary["PolicyName"] == hypd_iam.BOUNDARY_POLICY_NAME
    role = outputs["HypdRoleArn"].rsplit("/", 1)[1]
    attached = iam.list_attached_role_policies(RoleName=role)["AttachedPolicies"]
    assert len(attached) == 2  # hypd's policy and the bootstrap policy
    documents_ = [iam.get_policy_version(PolicyArn=p["PolicyArn"], VersionId=iam.get_policy(
        PolicyArn=p["PolicyArn"])["Policy"]["DefaultVersionId"])["PolicyVersion"]["Document"]
        for p in attached]
    granted = set().union(*(actions(d) for d in documents_))
    assert aws_calls.iam_actions() <= granted
    # as deployed, the PermissionsBoundary condition names the boundary's real ARN
    conditions = [s["Condition"] for d in documents_ for s in _statements(d)
                  if "iam:CreateRole" in as_list(s["Action"])]
    assert conditions == [{"StringEquals": {"iam:PermissionsBoundary":
                                            outputs["RoleBoundaryArn"]}}]

    # another deployment in this account would clash on the boundary's name (one hypd
    # per account); an existing network is deployed in a second account: no VPC of its
    # own, the instance in the given subnet
    with pytest.raises(ClientError, match="hypd-role-boundary already exists"):
        _deploy(cfn, f"{name}-y")
    cfn, ec2 = (local_aws(s, account=OTHER_ACCOUNT) for s in ("cloudformation", "ec2"))
    vpc = ec2.create_vpc(CidrBlock="10.251.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.251.0.0/24")["Subnet"]["SubnetId"]
    existing = _deploy(cfn, f"{name}-x", VpcId=vpc, SubnetId=subnet,
                       BucketName=f"{name}-shared", HypdRegion="eu-west-1")
    assert existing["StackStatus"] == "CREATE_COMPLETE", existing.get("StackStatusReason")
    made = {r["ResourceType"] for r in cfn.describe_stack_resources(
        StackName=f"{name}-x")["StackResources"] if "ResourceType" in r}
    assert "AWS::EC2::VPC" not in made and "AWS::EC2::Subnet" not in made
    again = {o["OutputKey"]: o["OutputValue"] for o in existing["Outputs"]}
    assert again["BucketName"] == f"{name}-shared"
    second = ec2.describe_instances(InstanceIds=[again["InstanceId"]])["Reservations"][0][
        "Instances"][0]
    assert second["SubnetId"] == subnet
    assert again["RoleBoundaryArn"].split(":")[4] == OTHER_ACCOUNT
