"""The AWS API calls hypd's code can make, found by reading the code with botocore's models.

Every boto3 client comes from `cloud.aws.client("<service>")` (or a step's
`ctx.client("<service>")`), so the services are the string literals passed to those. A call
is an attribute of a client named after one of its operations (`ec2.create_vpc`, called or
handed to a helper), a page or presign of one (`get_paginator("list_roles")`,
`generate_presigned_url("get_caller_identity")`), or, where the code picks the operation at
run time (`getattr(ec2, operation)`, `get_paginator(operation)`), any operation of that
client's service named by a string literal in the same module.

Which service an attribute belongs to: the client expression itself (`aws.client("ec2")`),
else the receiver's name (hypd names clients after their service: `ec2`, `sm`,
`quotas_client`), else the operation name when only one of the services has it. A receiver
that is not a client (a module of ours, a compiled regex) is listed in NOT_CLIENTS; anything
else that cannot be placed is reported, so a new call can never go uncounted.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import botocore.session
from botocore import xform_name

from tests.stack import REPO

PRODUCT = ("app", "cloud", "tasks")
"""The packages whose code calls AWS (mcp_server speaks HTTP only; sandbox and tests are not
the product)."""

RECEIVERS = {
    "ec2": "ec2", "eks": "eks", "fsx": "fsx", "iam": "iam", "s3": "s3", "sts": "sts",
    "sm": "sagemaker", "sagemaker": "sagemaker", "sm_client": "sagemaker",
    "quotas": "service-quotas", "quotas_client": "service-quotas",
}
"""Receiver names hypd gives clients of each service."""

NOT_CLIENTS = {
    "kube": "cloud/kube.py: Kubernetes objects (get_object, list_objects, delete_object)",
    "storage": "cloud/storage.py's own functions (delete_bucket, delete_volume)",
    "hyperpod": "cloud/hyperpod.py's own functions (delete_cluster)",
    "jobs": "cloud/jobs.py's own functions (list_jobs: training jobs in a cluster)",
    "_VERSION": "a compiled regular expression (search)",
    "p.regex": "cloud/failure_patterns.py: a pattern's compiled regular expression (search)",
    "_SENTENCE_END": "app/openapi.py: a compiled regular expression (search)",
    "SECRET_KEY": "cloud/rehearsal.py: a compiled regular expression (search)",
    "NAME_KEY": "cloud/rehearsal.py: a compiled regular expression (search)",
    "NOT_DRY_RUNNABLE": "cloud/rehearsal.py: a compiled regular expression (search)",
    "PREEMPTOR_JOB": "cloud/queueing.py: a compiled regular expression (search)",
}
"""Receivers whose attributes share a name with an AWS operation but are not AWS clients."""

DYNAMIC = frozenset({"get_paginator", "generate_presigned_url", "get_waiter"})


@dataclass
class Scan:
    actions: set[str] = field(default_factory=set)
    unplaced: list[str] = field(default_factory=list)
    """`file:line receiver.name` of operation-like attributes no rule places."""


def _sources() -> Iterator[tuple[Path, ast.AST]]:
    for package in PRODUCT:
        for path in sorted((REPO / package).rglob("*.py")):
            yield path, ast.parse(path.read_text(), filename=str(path))


def _client_service(node: ast.AST) -> str | None:
    """`aws.client("ec2", ...)` / `ctx.client("ec2")` / `client("ec2")` (a factory passed
    in) → "ec2"."""
    named = isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Attribute) and node.func.attr == "client")
        or (isinstance(node.func, ast.Name) and node.func.id == "client"))
    if (named and node.args
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return node.args[0].value
    return None


def services() -> set[str]:
    """The services the product builds clients for."""
    return {s for _, tree in _sources() for node in ast.walk(tree)
            if (s := _client_service(node))}


@functools.cache
def _model(service: str):
    return botocore.session.get_session().get_service_model(service)


def iam_prefix(service: str) -> str:
    """The IAM action prefix of a service (`service-quotas` → `servicequotas`)."""
    return "servicequotas" if service == "service-quotas" else _model(service).signing_name


def _operations(used: set[str]) -> dict[str, dict[str, str]]:
    """python name → {service: OperationName} over the used services."""
    table: dict[str, dict[str, str]] = {}
    for service in used:
        for operation in _model(service).operation_names:
            table.setdefault(xform_name(operation), {})[service] = operation
    return table


def _receiver_service(node: ast.AST, assigned: dict[str, str]) -> str | None:
    service = _client_service(node)
    if service:
        return service
    if isinstance(node, ast.Name):
        return assigned.get(node.id) or RECEIVERS.get(node.id)
    return None


@functools.cache  # the code does not change during a run
def scan() -> Scan:
    used = services()
    table = _operations(used)
    result = Scan()

    def add(service: str, name: str) -> None:
        result.actions.add(f"{iam_prefix(service)}:{table[name][service]}")

    for path, tree in _sources():
        where = path.relative_to(REPO)
        assigned = {t.id: s for node in ast.walk(tree) if isinstance(node, ast.Assign)
                    and (s := _client_service(node.value))
                    for t in node.targets if isinstance(t, ast.Name)}
        calls_of = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
        literals = {n.value for n in ast.walk(tree)
                    if isinstance(n, ast.Constant) and isinstance(n.value, str)
                    and n.value in table}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id == "getattr" and len(node.args) >= 2 \
                    and not isinstance(node.args[1], ast.Constant):
                service = _receiver_service(node.args[0], assigned)
                for name in literals:
                    if service and service in table[name]:
                        add(service, name)
            if not isinstance(node, ast.Attribute):
                continue
            receiver = node.value
            label = ast.unparse(receiver)
            if label in NOT_CLIENTS:
                continue
            service = _receiver_service(receiver, assigned)
            if node.attr in DYNAMIC:
                call = calls_of.get(id(node))
                if call is None or not call.args:
                    continue
                arg = call.args[0]
                names = {arg.value} if isinstance(arg, ast.Constant) else literals
            else:
                names = {node.attr}
            for name in names & table.keys():
                candidates = table[name]
                if service in candidates:
                    add(service, name)
                elif service is None and len(candidates) == 1:
                    add(next(iter(candidates)), name)
                elif service is None or node.attr not in DYNAMIC:
                    result.unplaced.append(f"{where}:{node.lineno} {label}.{name}")
    return result


def calls() -> set[str]:
    """API calls (`ec2:CreateVpc`) the product's code can make."""
    return scan().actions


S3_ACTION = {
    "HeadBucket": "ListBucket",
    "HeadObject": "GetObject",
    "ListObjects": "ListBucket",
    "ListObjectsV2": "ListBucket",
    "ListObjectVersions": "ListBucketVersions",
    "DeleteObjects": "DeleteObject",
    "GetBucketEncryption": "GetEncryptionConfiguration",
    "PutBucketEncryption": "PutEncryptionConfiguration",
    "GetPublicAccessBlock": "GetBucketPublicAccessBlock",
    "PutPublicAccessBlock": "PutBucketPublicAccessBlock",
}
"""S3 calls whose IAM action has another name (AWS's Service Authorization Reference, Amazon
S3); every other service's calls are authorized by the action of the same name."""

IMPLIED = {
    "iam:PassRole": "eks:CreateCluster passes the cluster role, sagemaker:CreateCluster and "
                    "UpdateCluster the execution and cluster roles, eks:CreateAddon an "
                    "add-on's role",
    "iam:TagRole": "iam:CreateRole with Tags",
    "iam:TagOpenIDConnectProvider": "iam:CreateOpenIDConnectProvider with Tags",
    "iam:CreateServiceLinkedRole": "EKS, HyperPod and FSx create their service-linked "
                                   "roles on first use, as the caller",
    "ec2:CreateTags": "every EC2 create carries TagSpecifications",
    "eks:TagResource": "eks:CreateCluster, CreateAddon and CreateAccessEntry with tags",
    "sagemaker:AddTags": "sagemaker:CreateCluster with Tags",
    "fsx:TagResource": "fsx:CreateFileSystem with Tags",
    "s3:TagResource": "s3:CreateBucket with Tags (CreateBucketConfiguration)",
    "s3:DeleteObjectVersion": "emptying a versioned bucket deletes its object versions "
                              "(DeleteObjects with VersionId)",
}
"""IAM actions a call needs besides its own (AWS authorizes them on the same request)."""


def iam_actions() -> set[str]:
    """The IAM actions hypd's own role needs: each call's action, and what calls imply."""
    needed = set(IMPLIED)
    for call in calls():
        service, operation = call.split(":", 1)
        needed.add(f"s3:{S3_ACTION.get(operation, operation)}" if service == "s3" else call)
    return needed
