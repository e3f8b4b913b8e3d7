"""A route's way to a cluster's Kubernetes API: refused (409) until the EKS cluster is
ACTIVE, and the API's failures said in the one error envelope (502 upstream_error)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import urllib3

from app.errors import ApiError
from cloud import eks, kube

if TYPE_CHECKING:
    from app.readmodels.clusters import ClusterRef


def not_active(cluster: ClusterRef) -> str | None:
    """Why the cluster's Kubernetes API cannot be reached yet, or None."""
    status = (cluster.eks or {}).get("status")
    if status == eks.ACTIVE:
        return None
    return (f"cluster {cluster.name} is {status or 'not created yet'}: its Kubernetes API "
            "answers once the EKS cluster is ACTIVE")


@contextlib.contextmanager
def talking_to(cluster: ClusterRef) -> Iterator[None]:
    """Failures of the cluster's Kubernetes API or of AWS, as the error envelope says them."""
    try:
        yield
    except kube.KubeError as exc:
        raise ApiError(502, "upstream_error", f"the Kubernetes API of cluster "
                                              f"{cluster.name} answered {exc}") from exc
    except (OSError, urllib3.exceptions.HTTPError) as exc:  # no answer at all
        raise ApiError(502, "upstream_error", f"the Kubernetes API of cluster "
                                              f"{cluster.name} did not answer: {exc}") from exc


def api_for(cluster: ClusterRef) -> Any:
    """The cluster's Kubernetes API client (409 while its EKS cluster is not ACTIVE)."""
    why = not_active(cluster)
    if why:
        raise ApiError(409, "conflict", why)
    with talking_to(cluster):
        return eks.api_client(cluster.name, cluster.region)
