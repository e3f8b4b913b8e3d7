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
