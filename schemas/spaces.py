"""Dev spaces: a JupyterLab or Code Editor workspace on one of the cluster's instance groups,
its home on its own volume and the cluster's bucket at /s3 (the claim the jobs mount), stopped
by itself after a while idle.

Sizes are whole numbers a person chooses from (vCPUs, GiB, GPUs); the image has a default per
editor and per GPU or not (`DEFAULT_IMAGES`, the SageMaker Distribution, which carries both
JupyterLab and Code Editor).
"""

from __future__ import annotations

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from schemas.common import Name, Pattern, WaitingPodSchema
from schemas.jobs import JobEventSchema, JobPodSchema, JobQueueSchema
from schemas.teams import priority_name, team_name
from vocabulary import patterns, spaces

DEFAULT_IMAGES = {
    "cpu": "public.ecr.aws/sagemaker/sagemaker-distribution:latest-cpu",
    "gpu": "public.ecr.aws/sagemaker/sagemaker-distribution:latest-gpu",
}
"""The image a space runs when the request names none: the SageMaker Distribution (both
editors, the usual ML libraries), its GPU build when the space asks for GPUs."""
IDLE_DEFAULT_MIN = 60
IDLE_MAX_MIN = 7 * 24 * 60


def _cpu(**kwargs) -> fields.Integer:
    return fields.Integer(validate=validate.Range(min=1, max=192),
                          metadata={"description": "vCPUs the space requests"}, **kwargs)


def _memory(**kwargs) -> fields.Integer:
    return fields.Integer(validate=validate.Range(min=1, max=2048),
                          metadata={"description": "GiB of memory the space requests (and "
                                                   "may use at most)"}, **kwargs)


def _gpus(**kwargs) -> fields.Integer:
    return fields.Integer(validate=validate.Range(min=0, max=16),
                          metadata={"description": "GPUs the space requests (0: none)"},
                          **kwargs)


def _idle(**kwargs) -> fields.Integer:
    return fields.Integer(
        allow_none=True, validate=validate.Range(min=1, max=IDLE_MAX_MIN),
        metadata={"description": "stop the space after this many minutes without activity "
                                 f"(default {IDLE_DEFAULT_MIN}; null: never stop it)"},
        **kwargs)


class SpaceCreateSchema(Schema):
    name = Name("The space's name. ", required=True)
    app_type = fields.String(load_default=spaces.JUPYTERLAB,
                             validate=validate.OneOf(spaces.APP_TYPES),
                             metadata={"description": "the editor the space runs"})
    image = fields.String(validate=Pattern(patterns.CONTAINER_IMAGE,
                                           error="not a container image reference"),
                          metadata={"description": "the image (default: the SageMaker "
                                                   "Distribution, its GPU build when gpus > 0)"})
    instance_group = fields.String(required=True, validate=Pattern(
        patterns.INSTANCE_GROUP_NAME, error="not an instance group name"),
        metadata={"description": "the instance group whose nodes run the space"})
    cpu = _cpu(load_default=2)
    memory_gib = _memory(load_default=8)
    gpus = _gpus(load_default=0)
    home_gib = fields.Integer(load_default=50, validate=validate.Range(min=5, max=16384),
                              metadata={"description": "its own EBS home volume, kept "
                                                       "while stopped"})
    idle_shutdown_minutes = _idle(load_default=IDLE_DEFAULT_MIN)
    team = team_name(metadata={"description": "the team it runs for, through the team's "
                                              "queue (default: your token's team)"})
    priority = priority_name(metadata={"description": "a priority class of the cluster's "
                                                      "scheduler config (with a team)"})


class SpaceUpdateSchema(Schema):
    cpu = _cpu()
    memory_gib = _memory()
    gpus = _gpus()
    idle_shutdown_minutes = _idle()

    @validates_schema
    def _something(self, data: dict, **_: object) -> None:
        if not data:
            raise ValidationError("name at least one of cpu, memory_gib, gpus, "
                                  "idle_shutdown_minutes", "_schema")


class SpaceResourcesSchema(Schema):
    cpu = fields.Integer(allow_none=True)
    memory_gib = fields.Integer(allow_none=True)
    gpus = fields.Integer(allow_none=True)


class SpaceMountSchema(Schema):
    path = fields.String(required=True)
    claim = fields.String(required=True)
    what = fields.String(required=True, metadata={"description": "what the mount holds"})


class SpaceAccessSchema(Schema):
    url = fields.String(allow_none=True, metadata={
        "description": "the address a person opens (the workspace's access strategy); "
                       "null until the space runs"})
    port_forward = fields.List(fields.String(), required=True, metadata={
        "description": "the kubectl command that reaches the editor on localhost:8888 (a "
                       "remote IDE, or a browser without the spaces router)"})
    local_url = fields.String(required=True, metadata={
        "description": "where the editor answers while that port-forward runs"})
    service = fields.String(required=True, metadata={"description": "namespace/service:port"})


class SpaceSchema(Schema):
    name = fields.String(required=True)
    cluster = fields.String(required=True)
    namespace = fields.String(required=True)
    owner = fields.String(allow_none=True, metadata={"description": "the token that made it"})
    team = fields.String(allow_none=True, metadata={"description": "the team it runs for"})
    priority = fields.String(allow_none=True, metadata={"description": "its priority class"})
    queue = fields.Nested(JobQueueSchema, allow_none=True, metadata={
        "description": "a team's space in its queue: its pod's Workload (null: not a team's "
                       "space, or stopped)"})
    app_type = fields.String(allow_none=True)
    image = fields.String(allow_none=True)
    state = fields.String(required=True, validate=validate.OneOf(spaces.STATES))
    message = fields.String(allow_none=True)
    instance_group = fields.String(allow_none=True)
    resources = fields.Nested(SpaceResourcesSchema, required=True)
    home_gib = fields.Integer(allow_none=True)
    idle_shutdown_minutes = fields.Integer(allow_none=True)
    last_activity = fields.String(allow_none=True, metadata={
        "description": "the editor's last activity (RFC 3339), while it runs"})
    idle_minutes = fields.Integer(allow_none=True, metadata={
        "description": "minutes since the last activity, while it runs"})
    access = fields.Nested(SpaceAccessSchema, allow_none=True)
    mounts = fields.List(fields.Nested(SpaceMountSchema), required=True)
    pods = fields.List(fields.Nested(JobPodSchema), required=True)
    waiting = fields.List(fields.Nested(WaitingPodSchema), required=True)
    events = fields.List(fields.Nested(JobEventSchema), required=True)
    created_at = fields.String(allow_none=True)
    operation_id = fields.String(allow_none=True, metadata={
        "description": "the space's newest operation (running, or the last one)"})


class SpaceSignInSchema(Schema):
    """A one-use sign-in to a space's editor, for the browser tab that is to show it: post
    `code` as a form field to `action` there; the spaces router answers with the space's
    session cookie and sends the tab on to `url`."""

    url = fields.String(required=True, metadata={"description": "the space's address"})
    action = fields.String(required=True, metadata={
        "description": "where the tab posts the code (application/x-www-form-urlencoded)"})
    code = fields.String(required=True, metadata={
        "description": "good once, for `expires_in_s` seconds; never put it in a URL"})
    expires_in_s = fields.Integer(required=True)


class SpaceListSchema(Schema):
    cluster = fields.String(required=True)
    items = fields.List(fields.Nested(SpaceSchema), required=True)
