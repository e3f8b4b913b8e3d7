"""deploy/cloudformation.yaml read as data (CloudFormation's short tags as their long forms)."""

from __future__ import annotations

import fnmatch
import functools
import json
from collections.abc import Iterator
from typing import Any

import yaml

from tests.stack import REPO

TEMPLATE = REPO / "deploy" / "cloudformation.yaml"


class _Loader(yaml.SafeLoader):
    """`!Ref X` → {"Ref": X}, `!GetAtt A.B` → {"Fn::GetAtt": [A, B]}, `!Sub s` →
    {"Fn::Sub": s}, and so on."""


def _tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    if suffix == "Ref":
        return {"Ref": value}
    if suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {f"Fn::{suffix}": value}


_Loader.add_multi_constructor("!", _tag)


@functools.cache
def _load(text: str) -> dict[str, Any]:
    return yaml.load(text, Loader=_Loader)  # a SafeLoader with the short tags added


def template() -> dict[str, Any]:
    return _load(TEMPLATE.read_text())


def resources(kind: str | None = None) -> dict[str, dict[str, Any]]:
    return {name: r for name, r in template()["Resources"].items()
            if kind is None or r["Type"] == kind}


def policy(name: str) -> dict[str, Any]:
    """The policy document of a resource (a managed policy, a bucket policy)."""
    return template()["Resources"][name]["Properties"]["PolicyDocument"]


def documents() -> Iterator[tuple[str, dict[str, Any]]]:
    """Every IAM policy document in the template: (where, document)."""
    for name, resource in template()["Resources"].items():
        props = resource.get("Properties", {})
        if "PolicyDocument" in props:
            yield name, props["PolicyDocument"]
        if "AssumeRolePolicyDocument" in props:
            yield f"{name} trust", props["AssumeRolePolicyDocument"]
        for inline in props.get("Policies", []):
            yield f"{name} {inline['PolicyName']}", inline["PolicyDocument"]


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def actions(document: dict[str, Any]) -> set[str]:
    return {a for s in document["Statement"] if s["Effect"] == "Allow"
            for a in as_list(s.get("Action", []))}


def allows(patterns: set[str], action: str) -> bool:
    """IAM's matching: case-insensitive, `*` and `?` wildcards."""
    return any(fnmatch.fnmatchcase(action.lower(), p.lower()) for p in patterns)


@functools.cache
def _aws_managed_policies() -> dict[str, Any]:
    """moto's copy of AWS's published managed policies, parsed once (4.7 MB of JSON: the
    boundary check after every test would otherwise parse it each time)."""
    from moto.iam.aws_managed_policies import aws_managed_policies_data

    return json.loads(aws_managed_policies_data)


def managed_documents(arns: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """The documents of AWS-managed policies (moto carries AWS's published set)."""
    if not arns:
        return []
    data = _aws_managed_policies()
    found = []
    for arn in sorted(arns):
        name = arn.rsplit("/", 1)[-1]
        assert name in data, f"{arn}: not an AWS-managed policy moto knows"
        found.append((name, data[name]["Document"]))
    return found


def boundary_misses(documents_: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Actions the given policies grant that the template's role boundary would cut
    (`where: action`): a role hypd creates would lose them."""
    ceiling = actions(policy("RoleBoundary"))
    return [f"{where}: {action}" for where, document in documents_
            for action in actions(document) if not allows(ceiling, action)]
