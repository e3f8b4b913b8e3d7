"""moto's per-request costs that grow with the world or repeat the same work, answered the
same way faster.

The local AWS lives as long as a `hypd sandbox` (or a test session): every VPC, subnet and
cluster made stays, and some of moto 5.2's code paths cost more with each one, or redo on
every request what cannot change while the process runs. Measured with py-spy on the suite's
sandboxes (2 cores): a quarter of a sandbox's CPU went to these four.

- `TaggedEC2Resource.get_tags` reads one resource's tags by scanning every tag of every
  resource with a compiled `resource-id` filter; `DescribeSubnets` with a tag filter does it
  for each subnet, so the cost grows with subnets times tags. Here: the resource's own entry of
  the same table, the same dicts in the same order.
- `list_of_moto_modules` lists moto's package directory on every request (to tell whether the
  host names a service); the directory does not change while the process runs.
- `method_names_from_class` inspects a response class's members on every call of an action.
- EKS's role ARN check builds a new boto3 Session (reading botocore's endpoints file) on
  every CreateCluster / CreateNodegroup, for the list of partitions.

Nothing here changes an answer: tests/sandbox/test_moto_speed.py compares each with moto's
own on the same state. Applied once per process, before the first request (`apply`).
"""

from __future__ import annotations

import functools
import threading
from typing import Any

_applied = False
_lock = threading.Lock()


def _own_tags(resource: Any) -> list[dict[str, str]]:
    """What `describe_tags(filters={"resource-id": [id]})` answers for one id, read from the
    id's own entry (ids carry no wildcards, and moto's ids of one prefix do not prefix one
    another)."""
    from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, get_prefix

    resource_id = resource.id
    if not resource_id:
        return []
    tags = resource.ec2_backend.tags.get(resource_id)
    if not tags:
        return []
    kind = EC2_PREFIX_TO_RESOURCE.get(get_prefix(resource_id), "")
    return [{"resource_id": resource_id, "key": key, "value": value, "resource_type": kind}
            for key, value in list(tags.items())]


class _Partitions:
    """The one thing moto's EKS asks of a boto3 Session, asked once."""

    @staticmethod
    @functools.cache
    def get_available_partitions() -> list[str]:
        from boto3 import Session

        return Session().get_available_partitions()


def apply() -> None:
    global _applied
    with _lock:
        if _applied:
            return
        import moto.backends
        import moto.core.responses
        import moto.eks.utils
        from moto.ec2.models.core import TaggedEC2Resource

        TaggedEC2Resource.get_tags = _own_tags  # type: ignore[method-assign]
        modules = tuple(moto.backends.list_of_moto_modules())
        moto.backends.list_of_moto_modules = lambda: modules  # type: ignore[assignment]
        moto.core.responses.method_names_from_class = functools.cache(  # type: ignore[assignment]
            moto.core.responses.method_names_from_class)
        moto.eks.utils.Session = _Partitions  # type: ignore[assignment, misc]
        _applied = True
