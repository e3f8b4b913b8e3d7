"""The words of a Dev space (a JupyterLab or Code Editor workspace on the cluster, run by the
Spaces add-on's jupyter-k8s operator), stated once: the editors a space runs, the states hypd
shows, and the two statuses the operator's `spec.desiredStatus` takes.

The states are hypd's reading of the operator's conditions (cloud/spaces.py): the schemas
list them as an enum, so the dashboard and MCP read them from the OpenAPI document.
"""

from __future__ import annotations

JUPYTERLAB = "jupyterlab"
CODE_EDITOR = "code-editor"
APP_TYPES = (JUPYTERLAB, CODE_EDITOR)

STARTING = "starting"
RUNNING = "running"
STOPPING = "stopping"
STOPPED = "stopped"
FAILED = "failed"
DELETING = "deleting"
CREATING = "creating"
"""Read while the create operation runs and the cluster has no Workspace yet."""
STATES = (CREATING, STARTING, RUNNING, STOPPING, STOPPED, FAILED, DELETING)
SETTLED = (RUNNING, STOPPED, FAILED)
"""States a lifecycle operation ends on (nothing left to wait for)."""

DESIRED_RUNNING = "Running"
DESIRED_STOPPED = "Stopped"
"""The operator's `spec.desiredStatus` values (upstream's words)."""

ROUTE_PREFIX = "/s/"
"""Where hypd's spaces router (the `hypd spaces-router` process, at HYPD_SPACES_URL) takes a
space's requests: `/s/<cluster>/<namespace>/<name>/…`."""


def base_path(cluster: str, namespace: str, name: str) -> str:
    """The path a space's editor serves under, with its trailing slash:
    `/s/<cluster>/<namespace>/<name>/` (cluster: hypd's name, as in `/api/v1/clusters/<c>`).

    One spelling three parties share: the router forwards a request's whole path unchanged
    to the space's pod (through `pods/portforward`), so the editor must serve under exactly
    the path the router routes — the Workspace's command names it (cloud/spaces.py
    `manifest`), the access strategy renders the same path as the space's URL and as the
    `applicationBasePath` the operator's idle probe asks under
    (cloud/manifests/spaces-access-strategy.yaml), and the router parses it."""
    return f"{ROUTE_PREFIX}{cluster}/{namespace}/{name}/"
