"""The worst moment to die while making or stopping a dev space: the worker's whole process
group is SIGKILLed after the cluster's API server took the step's write (the Workspace's
apply, the `desiredStatus` merge patch) and before hypd recorded it. The operation finishes
when the sweeper picks it up, and the space is made once — one Workspace (the same object,
its uid, created once by the sandbox's counters), its one pod — or stopped once: one change
of its spec (the patch sent again changes nothing), its pod gone.

The fault campaign (tests/faults/chains.py SPACE) strikes every step of every space kind with
five faults; these are the default suite's two."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from cloud import spaces
from tests.app.test_spaces_api import _create_space, _read, _url, _workspace

WORKSPACES = "workspace.jupyter.org/workspaces"
SPACE = {"instance_group": "workers", "cpu": 2, "memory_gib": 8, "home_gib": 20,
         "idle_shutdown_minutes": None}  # the sandbox runs 1000x: no idle shutdown


@pytest.fixture
def cluster(spaces_cluster) -> str:
    """The test process's spaces cluster (tests/conftest.py): one node, the spaces feature
    on, shared with the other spaces tests (each space here has a name of its own)."""
    return spaces_cluster["name"]


def _writes(stack, cluster: str, since: int, resource: str, name: str) -> list[dict[str, Any]]:
    """The cluster's API server's successful writes of one object after `since`."""
    return [w for w in stack.sandbox.kube_writes(cluster=cluster, since=since)
            if w["resource"] == resource and w["name"] == name and 200 <= w["status"] < 300]


def _creates(stack, cluster: str, resource: str, name: str) -> int:
    """How many times the object was created on the cluster (the sandbox's counters)."""
    return sum(c["count"] for c in stack.sandbox.kube_creates()
               if (c["cluster"], c["resource"], c["name"]) == (cluster, resource, name))


def _last_write(stack) -> int:
    writes = stack.sandbox.kube_writes()
    return writes[-1]["seq"] if writes else 0


def test_a_worker_killed_mid_create_makes_the_space_once(stack, cluster):
    name = f"once-{uuid.uuid4().hex[:4]}"
    since = _last_write(stack)
    seen: dict[str, Any] = {}

    def create():
        with stack.client() as c:
            return c.post(_url(cluster), json={"name": name, **SPACE})

    def the_api_server_has_it() -> None:  # hypd has not heard it yet
        seen.update(_workspace(stack, cluster, name) or {})
        assert seen

    op = stack.killed_once_answered("kubernetes", "patch workspaces", create,
                                    while_held=the_api_server_has_it)
    assert op["status"] == "succeeded", op
    [step] = op["steps"]
    assert step["attempts"] >= 2, step  # interrupted, then resumed by adopting
    # one Workspace: the one the API server had when the worker died, created once
    assert _workspace(stack, cluster, name)["metadata"]["uid"] == seen["metadata"]["uid"]
    assert [w["seq"] for w in _writes(stack, cluster, since, WORKSPACES, name)
            if w["created"]] == [next(w["seq"] for w in _writes(stack, cluster, since,
                                                                 WORKSPACES, name))]
    assert _creates(stack, cluster, WORKSPACES, name) == 1
    # and one editor of it running (the operator's Deployment has one pod)
    assert len(spaces.pods(stack.kube(cluster).api, name)) == 1
    view = _read(stack, cluster, name)
    assert view["state"] == "running" and view["access"]["url"], view


def test_a_worker_killed_mid_stop_stops_the_space_once(stack, cluster):
    name = f"halt-{uuid.uuid4().hex[:4]}"
    _create_space(stack, cluster, name)  # as SPACE asks
    running = _workspace(stack, cluster, name)
    [pod] = spaces.pods(stack.kube(cluster).api, name)
    since = _last_write(stack)

    def stop():
        with stack.client() as c:
            return c.post(_url(cluster, name) + "/stop")

    def the_api_server_has_it() -> None:  # hypd has not heard it yet
        assert spaces.desired(_workspace(stack, cluster, name)) == "Stopped"

    op = stack.killed_once_answered("kubernetes", "patch workspaces", stop,
                                    while_held=the_api_server_has_it)
    assert op["status"] == "succeeded", op
    [step] = op["steps"]
    assert step["attempts"] >= 2, step
    stopped = _workspace(stack, cluster, name)
    assert stopped["metadata"]["uid"] == running["metadata"]["uid"]
    # the patch went to the API server again and changed nothing: one change of the spec
    assert len(_writes(stack, cluster, since, WORKSPACES, name)) >= 2
    assert stopped["metadata"]["generation"] == running["metadata"]["generation"] + 1
    view = _read(stack, cluster, name)
    assert (view["state"], view["pods"]) == ("stopped", []), view
    assert pod["metadata"]["name"] not in {
        p["metadata"]["name"] for p in spaces.pods(stack.kube(cluster).api, name)}
    assert _creates(stack, cluster, WORKSPACES, name) == 1
