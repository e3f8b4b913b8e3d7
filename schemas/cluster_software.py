"""Cluster software: HyperPod's node software and the EKS Kubernetes version."""

from __future__ import annotations

import re

from marshmallow import Schema, fields, validate

from schemas.clusters import KubernetesVersion
from schemas.common import Pattern

GROUP_NAME_RE = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
IMAGE_ID_RE = re.compile(r"^(ami-[0-9a-fA-F]{8,17}|default)$")


class SoftwareUpdateSchema(Schema):
    instance_groups = fields.List(
        fields.String(validate=Pattern(GROUP_NAME_RE, error="not an instance group "
                                                            "name")),
        validate=validate.Length(min=1, max=100),
        metadata={"description": "the groups whose nodes to update; default: every group"})
    image_id = fields.String(
        validate=Pattern(IMAGE_ID_RE, error="an AMI id (ami-...) or default"),
        metadata={"description": "a custom AMI for the nodes, or `default` for HyperPod's "
                                 "newest; default: HyperPod's newest"})


class KubernetesUpgradeSchema(Schema):
    version = fields.String(
        required=True, validate=KubernetesVersion(),
        metadata={"description": "the next minor version after the cluster's (EKS upgrades "
                                 "one minor version at a time)"})
