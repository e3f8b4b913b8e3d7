"""What a space's update sets on its Workspace (tasks/spaces.py `resources_patch`), applied to
one made before its editor served under its base path: afterwards it is the Workspace a
create would make today, valid against the real CRD as a closed schema."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cloud import spaces
from tasks.spaces import resources_patch
from tests.crdkit import validate
from vocabulary import spaces as words


def _merged(into: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """JSON merge patch (RFC 7386), as the API server applies a merge-patch."""
    out = copy.deepcopy(into)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


@pytest.mark.parametrize("app_type", words.APP_TYPES)
def test_an_update_brings_an_older_space_to_today_s_workspace(app_type) -> None:
    space = spaces.Space.from_params({
        "name": "lab", "app_type": app_type, "image": "public.ecr.aws/x/y:1",
        "instance_group": "workers", "cpu": 4, "memory_gib": 16, "gpus": 0, "home_gib": 20,
        "idle_shutdown_minutes": 30})
    today = spaces.manifest(space, "c1", "ana", "op_1", "Running")
    older = copy.deepcopy(today)
    del older["spec"]["containerConfig"]  # made before the editor was told its base path
    older["spec"]["accessStrategy"] = {"name": "hypd-web", "namespace": "jupyter-k8s-system"}
    older["spec"]["resources"]["requests"][spaces.GPU] = "1"
    updated = _merged(older, resources_patch(space, "c1"))
    validate(updated, "workspace.jupyter.org_workspaces.yaml", "v1alpha1")
    assert updated["spec"] == today["spec"]
    assert words.base_path("c1", "default", "lab") in _args(updated)


def _args(ws: dict[str, Any]) -> str:
    return " ".join(ws["spec"]["containerConfig"]["args"])
