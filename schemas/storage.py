"""Storage mounted in a cluster: S3 buckets and FSx for Lustre file systems, each a PV + PVC.

A storage item has a user-chosen name (the one name rule), which is also the name of its
PersistentVolumeClaim, in one namespace of the cluster.
"""

from __future__ import annotations

from marshmallow import Schema, ValidationError, fields, validate, validates, validates_schema

from schemas.common import Name, Pattern
from vocabulary import patterns

KINDS = ("s3", "fsx")
STATES = ("creating", "available", "deleting", "failed", "incomplete")
FSX_DEPLOYMENT_TYPES = ("PERSISTENT_2", "SCRATCH_2")
FSX_THROUGHPUT = (125, 250, 500, 1000)
# S3's rules for a general-purpose bucket name (the rest are checked against S3 itself).


class FsxSchema(Schema):
    """An FSx for Lustre file system (in a cluster create's `fsx`, or a storage item's)."""

    storage_capacity_gib = fields.Integer(
        load_default=1200,
        validate=validate.Range(min=1200, max=2_400_000),
        metadata={"description": "FSx for Lustre capacity: 1200 GiB or a multiple of 2400"},
    )
    deployment_type = fields.String(
        load_default="PERSISTENT_2", validate=validate.OneOf(FSX_DEPLOYMENT_TYPES),
        metadata={"description": "SCRATCH_2: temporary, not replicated"})
    per_unit_storage_throughput = fields.Integer(
        validate=validate.OneOf(FSX_THROUGHPUT),
        metadata={"description": "MB/s per TiB, PERSISTENT_2 only (default 125)"})

    @validates("storage_capacity_gib")
    def _capacity(self, value: int, **_: object) -> None:
        if value != 1200 and value % 2400:
            raise ValidationError("must be 1200 or a multiple of 2400 GiB (FSx for Lustre "
                                  "SCRATCH_2 / PERSISTENT_2 sizes)")

    @validates_schema
    def _throughput(self, data: dict, **_: object) -> None:
        if data.get("per_unit_storage_throughput") and \
                data.get("deployment_type") != "PERSISTENT_2":
            raise ValidationError("only with deployment_type PERSISTENT_2",
                                  "per_unit_storage_throughput")


class S3Schema(Schema):
    """An S3 bucket: a new one hypd makes, or an existing one the user names."""

    bucket = fields.String(
        validate=[Pattern(patterns.S3_BUCKET, error="not an S3 bucket name"),
                  validate.Length(max=63)],
        metadata={"description": "an existing bucket to mount, never deleted; unset: a new "
                                 "one hypd owns"})
    prefix = fields.String(
        validate=[validate.Length(min=1, max=512),
                  Pattern(r"^[^\s]+$", error="no spaces in a prefix")],
        metadata={"description": "mount only this prefix of the bucket (e.g. datasets/)"})
    read_only = fields.Boolean(load_default=False,
                               metadata={"description": "mount read-only"})


class StorageCreateSchema(Schema):
    name = Name(required=True)
    kind = fields.String(required=True, validate=validate.OneOf(KINDS),
                         metadata={"description": "s3 (a bucket) or fsx (FSx for Lustre)"})
    namespace = fields.String(
        load_default="default",
        validate=Pattern(patterns.DNS_LABEL, error="not a Kubernetes namespace name"),
        metadata={"description": "where the claim (PVC) is made; default `default`"})
    s3 = fields.Nested(S3Schema, metadata={"description": "with kind s3"})
    fsx = fields.Nested(FsxSchema, metadata={"description": "with kind fsx"})

    @validates_schema
    def _kind_options(self, data: dict, **_: object) -> None:
        for kind in KINDS:
            if data.get(kind) is not None and data.get("kind") != kind:
                raise ValidationError(f"only with kind {kind}", kind)


class StorageS3Schema(Schema):
    bucket = fields.String(allow_none=True)
    prefix = fields.String(allow_none=True)
    read_only = fields.Boolean(allow_none=True)
    exists = fields.Boolean(metadata={"description": "the bucket exists"})
    made_by_hypd = fields.Boolean(metadata={"description": "hypd made it: removing the "
                                                           "storage deletes it"})


class StorageFsxSchema(Schema):
    file_system_id = fields.String(allow_none=True)
    lifecycle = fields.String(allow_none=True, metadata={
        "description": "AVAILABLE, CREATING, DELETING, FAILED, ... (AWS's)"})
    dns_name = fields.String(allow_none=True)
    mount_name = fields.String(allow_none=True)
    capacity_gib = fields.Integer(allow_none=True)
    deployment_type = fields.String(allow_none=True)
    failure = fields.String(allow_none=True)
    made_by_hypd = fields.Boolean()


class StorageSchema(Schema):
    name = fields.String(required=True)
    cluster = fields.String(required=True)
    kind = fields.String(required=True, validate=validate.OneOf(KINDS))
    namespace = fields.String(allow_none=True)
    claim = fields.String(allow_none=True, metadata={
        "description": "the PersistentVolumeClaim pods mount (same as the name)"})
    volume = fields.String(allow_none=True, metadata={"description": "the PersistentVolume"})
    mounted = fields.Boolean(metadata={"description": "its PV and PVC exist"})
    state = fields.String(validate=validate.OneOf(STATES))
    s3 = fields.Nested(StorageS3Schema, allow_none=True)
    fsx = fields.Nested(StorageFsxSchema, allow_none=True)
    deletes_data = fields.Boolean(metadata={
        "description": "removing it also deletes its bucket or file system (hypd made it for "
                       "this item); otherwise only the PV and PVC go"})
    users = fields.List(fields.String(), metadata={
        "description": "workloads mounting it (`kind/namespace/name`); while any runs, it "
                       "cannot be removed"})
    operation_id = fields.String(allow_none=True, metadata={
        "description": "the newest operation on it (creating, deleting, or the failed one)"})
    message = fields.String(allow_none=True)


class StorageListSchema(Schema):
    cluster = fields.String(required=True)
    items = fields.List(fields.Nested(StorageSchema), required=True)
    note = fields.String(allow_none=True, metadata={
        "description": "why the list may be partial (e.g. the cluster is not ACTIVE yet)"})
