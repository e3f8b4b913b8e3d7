"""Cluster software: HyperPod's node software and the EKS Kubernetes version."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from schemas.clusters import KubernetesVersion
from schemas.common import Matching
from vocabulary import patterns


class SoftwareUpdateSchema(Schema):
    instance_groups = fields.List(
        fields.String(validate=Matching(patterns.INSTANCE_GROUP_NAME, error="not an instance group "
                                                            "name")),
        validate=validate.Length(min=1, max=100),
        metadata={"description": "the groups whose nodes to update; default: every group"})
    image_id = fields.String(
        validate=Matching(patterns.IMAGE_ID, error="an AMI id (ami-...) or default"),
        metadata={"description": "a custom AMI, or `default`: HyperPod's newest (the "
                                 "default)"})


class KubernetesUpgradeSchema(Schema):
    version = fields.String(
        required=True, validate=KubernetesVersion(),
        metadata={"description": "the next minor version after the cluster's (EKS upgrades "
                                 "one minor version at a time)"})
