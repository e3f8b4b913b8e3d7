"""The identifier patterns hypd checks values against, each stated once.

AWS's come from botocore's service shapes where botocore has them (`from_botocore`): the
pattern AWS itself validates with, so hypd refuses what AWS would, before anything is made.
EC2 ids have no pattern in botocore, and Kubernetes' name rules are not AWS's: those are
written here. Every pattern is anchored (`^…$`) and compiled with `re.ASCII`, so `\\d` and
`\\w` mean what they mean in the dashboard's ECMAScript (botocore's patterns are written in
Java's dialect; tests/vocabulary checks each compiles and accepts and refuses as AWS does).

The length bounds botocore states beside a pattern stay beside it (`bounds`), not folded into
the regular expression as a look-ahead: the schemas give them to the OpenAPI document as
minLength/maxLength, which generators of valid values (the property tests) understand. `fits`
applies both; Python readers use it, or `fullmatch` (never `match`: Python's `$` lets a
trailing newline through).
"""

from __future__ import annotations

import functools
import re
from typing import Any

import botocore.session

_BOUNDS: dict[re.Pattern[str], tuple[int, int]] = {}


@functools.cache
def _model(service: str) -> Any:
    return botocore.session.get_session().get_service_model(service)


def _bounded(pattern: re.Pattern[str], metadata: dict[str, Any]) -> re.Pattern[str]:
    if "max" in metadata:
        _BOUNDS[pattern] = (max(int(metadata.get("min", 1)), 1), int(metadata["max"]))
    return pattern


def from_botocore(service: str, shape: str) -> re.Pattern[str]:
    """`shape`'s pattern in `service`'s botocore model, anchored; its length bounds are
    `bounds(pattern)`."""
    meta = _model(service).shape_for(shape).metadata
    return _bounded(re.compile(f"^(?:{meta['pattern']})$", re.ASCII), meta)


def arn_from_botocore(service: str, arn_shape: str, name_shape: str) -> re.Pattern[str]:
    """An ARN whose resource part is a name AWS takes. botocore's ARN patterns end in `.*`
    where the name goes, so an ARN with no name (or one no resource could have) passes them
    and is refused only by the call that reads it (a 502 instead of a 422); the name's own
    pattern takes the place of the `.*`. Its length bounds are the ARN's."""
    arn = _model(service).shape_for(arn_shape).metadata
    name = _model(service).shape_for(name_shape).metadata["pattern"]
    if not arn["pattern"].endswith(".*"):
        raise ValueError(f"{service} {arn_shape}'s pattern does not end in a name: {arn}")
    return _bounded(re.compile(f"^(?:{arn['pattern'][:-2]}(?:{name}))$", re.ASCII), arn)


def bounds(pattern: re.Pattern[str]) -> tuple[int, int] | None:
    """(least, most) characters AWS allows beside `pattern`, when it states them."""
    return _BOUNDS.get(pattern)


def fits(pattern: re.Pattern[str], value: object) -> bool:
    """Whether `value` is a string `pattern` takes whole, within its length bounds."""
    if not isinstance(value, str) or pattern.fullmatch(value) is None:
        return False
    low, high = bounds(pattern) or (0, len(value))
    return low <= len(value) <= high


def _here(source: str) -> re.Pattern[str]:
    return re.compile(source, re.ASCII)


# -- AWS, from botocore ----------------------------------------------------------------------

INSTANCE_GROUP_NAME = from_botocore("sagemaker", "ClusterInstanceGroupName")
HYPERPOD_CLUSTER_NAME = from_botocore("sagemaker", "ClusterName")
ROLE_ARN = from_botocore("sagemaker", "RoleArn")
TRAINING_PLAN_ARN = arn_from_botocore("sagemaker", "TrainingPlanArn", "TrainingPlanName")
EKS_CLUSTER_ARN = from_botocore("sagemaker", "EksClusterArn")
NODE_ID = from_botocore("sagemaker", "ClusterNodeId")
IMAGE_ID = from_botocore("sagemaker", "ImageId")
"""A HyperPod group's AMI: an `ami-…` id or `default`."""
TRACKING_SERVER_NAME = from_botocore("sagemaker", "TrackingServerName")
TRACKING_SERVER_ARN = arn_from_botocore("sagemaker", "TrackingServerArn", "TrackingServerName")
TEAM_NAME = from_botocore("sagemaker", "ComputeQuotaTargetTeamName")
"""A task-governance team (a compute quota's `TeamName`)."""
PRIORITY_CLASS_NAME = from_botocore("sagemaker", "ClusterSchedulerPriorityClassName")
TRACKING_SERVER = _bounded(re.compile(
    f"{TRACKING_SERVER_NAME.pattern}|{TRACKING_SERVER_ARN.pattern}", re.ASCII),
    {"min": 1, "max": _BOUNDS[TRACKING_SERVER_ARN][1]})
"""An MLflow tracking server named by its name or its ARN."""
_EKS_NAME = _model("eks").operation_model("CreateCluster").input_shape.members["name"].metadata
EKS_CLUSTER_NAME = _bounded(
    re.compile(f"^(?:{_EKS_NAME['pattern'].lstrip('^')})$", re.ASCII), _EKS_NAME)
"""EKS keeps the pattern on CreateCluster's `name` member, not on a named shape."""

# -- AWS, stated here (botocore's EC2 model has no patterns) --------------------------------

VPC_ID = _here(r"^vpc-[0-9a-f]{8,17}$")
SUBNET_ID = _here(r"^subnet-[0-9a-f]{8,17}$")
SECURITY_GROUP_ID = _here(r"^sg-[0-9a-f]{8,17}$")
ML_INSTANCE_TYPE = _here(r"^ml\.[a-z0-9]+\.[a-z0-9]+$")
"""A SageMaker instance type (`ml.p5.48xlarge`); which ones HyperPod takes is botocore's
`ClusterInstanceType` enum, checked where a group is built."""
REGION = _here(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]$")
ZONE = _here(r"^[a-z]{2}(-gov)?-[a-z]+-[0-9][a-z]$")
_BUCKET = r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]"
S3_BUCKET = _here(rf"^{_BUCKET}$")
S3_OBJECT_URI = _here(rf"^s3://({_BUCKET})/([A-Za-z0-9!_.*'()/-]{{1,900}})$")
"""`s3://bucket/prefix`: group 1 the bucket, group 2 the key or prefix."""

# -- Kubernetes ------------------------------------------------------------------------------

DNS_LABEL = _here(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
"""RFC 1123 label: a namespace, a Service, most object names."""
LABEL_KEY = _here(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
"""A label (or taint) key: an optional DNS-subdomain prefix and `/`, then a name of at most
63 characters."""
LABEL_VALUE = _here(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")
CONTAINER_IMAGE = _here(r"^[a-z0-9]([a-z0-9._/-]{0,200})(:[A-Za-z0-9._-]{1,128})?"
                        r"(@sha256:[a-f0-9]{64})?$")
"""A container image reference: a lowercase repository path, an optional tag, an optional
digest (an endpoint's or a space's image)."""

# -- hypd ------------------------------------------------------------------------------------

NAME = _here(r"^[a-z]([a-z0-9-]{0,30}[a-z0-9])?$")
"""A user-chosen name: it becomes Kubernetes object names and AWS tags, so a DNS-1123 label
that starts with a letter, at most 32 characters."""
NAME_RULE = (
    "must start with a lowercase letter, contain only lowercase letters, digits and hyphens, "
    "not end with a hyphen, and be at most 32 characters"
)
OPERATION_ID = _here(r"^op_[0-9A-Z]{26}$")
"""An operation's id: `op_` and a ULID in Crockford's base 32 (tasks/engine/model.py)."""
