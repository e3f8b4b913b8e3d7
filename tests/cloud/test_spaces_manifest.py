"""A space's Workspace as cloud/spaces.py builds it, with task governance: a team's space is
made in the team's namespace and carries Kueue's queue and priority-class labels on its
metadata — where HyperPod's CLI (`hyp create hyp-space --queue-name/--priority`) puts them
and whence the jupyter-k8s operator copies them to its Deployment and pod — and the
Workspace stays valid against the real CRD as a closed schema."""

from __future__ import annotations

from cloud import kube, queueing, spaces
from tests.crdkit import validate
from vocabulary import teams

WORKSPACE_CRD = "workspace.jupyter.org_workspaces.yaml"


def _space(**extra) -> spaces.Space:
    return spaces.Space.from_params({
        "name": "lab", "app_type": "jupyterlab", "image": "public.ecr.aws/x/y:1",
        "instance_group": "workers", "cpu": 2, "memory_gib": 8, "gpus": 1, "home_gib": 20,
        "idle_shutdown_minutes": 60, **extra})


def _validated(ws: dict) -> dict:
    validate(ws, WORKSPACE_CRD, "v1alpha1")
    return ws


def test_a_team_s_space_carries_its_queue_and_priority_in_the_team_s_namespace():
    ws = _validated(spaces.manifest(_space(team="vision", priority="urgent"), "ana", "op_1",
                                    "Running"))
    md = ws["metadata"]
    assert md["namespace"] == "hyperpod-ns-vision"
    assert md["labels"]["kueue.x-k8s.io/queue-name"] == "hyperpod-ns-vision-localqueue"
    assert md["labels"]["kueue.x-k8s.io/priority-class"] == "urgent-priority"
    assert md["labels"][kube.MANAGED_BY_LABEL] == kube.MANAGED_BY_VALUE
    assert md["labels"][spaces.SPACE_LABEL] == "lab"
    # read back: the space as asked names its team and class again (an update keeps them)
    asked = spaces.asked(ws)
    assert (asked.team, asked.priority, asked.namespace) == ("vision", "urgent",
                                                             "hyperpod-ns-vision")
    assert queueing.team_of(ws) == ("vision", "urgent")
    assert spaces.access(ws)["service"].startswith("hyperpod-ns-vision/")


def test_a_team_s_space_without_a_priority_has_the_queue_label_only():
    labels = _validated(spaces.manifest(_space(team="vision"), "ana", "op_1",
                                        "Running"))["metadata"]["labels"]
    assert labels[teams.QUEUE_LABEL] == "hyperpod-ns-vision-localqueue"
    assert teams.PRIORITY_LABEL not in labels


def test_a_space_outside_any_team_is_not_queued():
    ws = _validated(spaces.manifest(_space(), "ana", "op_1", "Running"))
    assert ws["metadata"]["namespace"] == spaces.NAMESPACE
    assert not {teams.QUEUE_LABEL, teams.PRIORITY_LABEL} & set(ws["metadata"]["labels"])
    assert queueing.team_of(ws) == (None, None)
    assert spaces.asked(ws) == _space()
