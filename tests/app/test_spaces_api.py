"""Dev spaces on the full stack, through REST and MCP: a space made from the API runs with the
cluster's bucket at /s3 — the claim the jobs mount, so a job's output is in its listing —,
stops, starts, is resized and deleted, each change an operation; it stops itself when idle
(the sandbox clock); only its owner changes it (another operator only deletes it, with
force, and the audit says so); what can never work is refused before anything is made.

The sandbox plays the Spaces add-on's controller (sandbox/simulator/workspaces.py); hypd sees
only the Workspace, its pod and the URL its access strategy renders."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from mcp import Client

from cloud import kube, spaces, storage
from tests.app import spacekit
from tests.app.dryrunkit import calls_in_order, rehearsed
from tests.crdkit import validate
from tests.mcp_server.agentkit import Agent
from tests.stack import wait_until

WORKSPACE_CRD = "workspace.jupyter.org_workspaces.yaml"
JOB = {"recipe": "ray", "image": "rayproject/ray:2.9.0",
       "command": ["sh", "-c", "echo from-the-job > $HYPD_OUTPUT_DIR/result.txt"]}


@pytest.fixture
def cluster(spaces_cluster) -> str:
    """The test process's spaces cluster (tests/conftest.py): one node, the feature on."""
    return spaces_cluster["name"]


def _url(cluster: str, name: str = "") -> str:
    return f"/api/v1/clusters/{cluster}/spaces" + (f"/{name}" if name else "")


def _follow(stack, reply: httpx.Response, timeout: float = 120) -> dict[str, Any]:
    assert reply.status_code == 202, reply.text
    op = stack.wait_operation(reply.json()["operation"]["id"], timeout)
    assert op["status"] == "succeeded", op
    return op


SPACE = {"instance_group": "workers", "cpu": 2, "memory_gib": 8, "home_gib": 20,
         "idle_shutdown_minutes": None}  # the sandbox runs 1000x


def _create_space(stack, cluster: str, name: str, **extra: Any) -> dict[str, Any]:
    body = {"name": name, **SPACE, **extra}
    with stack.client() as c:
        reply = c.post(_url(cluster), json=body)
    return _follow(stack, reply)


def _read(stack, cluster: str, name: str) -> dict[str, Any]:
    with stack.client("viewer") as c:
        reply = c.get(_url(cluster, name))
    assert reply.status_code == 200, reply.text
    return reply.json()


def _workspace(stack, cluster: str, name: str) -> dict[str, Any] | None:
    return kube.get_object(stack.kube(cluster).api, spaces.API_VERSION, spaces.KIND, name,
                           spaces.NAMESPACE)


def test_a_space_is_refused_while_the_cluster_runs_no_spaces_operator(stack, spaces_cluster):
    """Asked for before the feature was on (the shared cluster's fixture sent it then)."""
    reply = spaces_cluster["refused"]
    assert reply.status_code == 412, reply.text
    assert "spaces feature" in reply.json()["error"]["message"]
    assert spaces_cluster["early"] is None
    # nor was it made later, once the feature was on
    assert _workspace(stack, spaces_cluster["name"], "early") is None


def test_a_space_runs_with_the_jobs_bucket_stops_starts_resizes_and_goes(stack, cluster):
    # each change is planned first (a viewer may ask): nothing recorded, sent or kept
    plan = rehearsed(stack, "POST", _url(cluster), {**SPACE, "name": "lab"}, kind="space.create")
    assert calls_in_order(plan, [("kubernetes", "Workspace")]), plan
    assert plan["would_fail"] is None and _workspace(stack, cluster, "lab") is None
    op = _create_space(stack, cluster, "lab")
    assert op["resource_url"] == _url(cluster, "lab")
    # what hypd wrote: valid against the add-on's real CRD as a closed schema
    ws = _workspace(stack, cluster, "lab")
    validate({k: ws[k] for k in ("apiVersion", "kind", "spec")}
             | {"metadata": {k: ws["metadata"][k] for k in ("name", "namespace", "labels",
                                                            "annotations")}},
             WORKSPACE_CRD, "v1alpha1")
    view = _read(stack, cluster, "lab")
    assert (view["state"], view["owner"], view["app_type"]) == ("running", "operator",
                                                                "jupyterlab")
    assert view["resources"] == {"cpu": 2, "memory_gib": 8, "gpus": 0}
    assert view["image"].endswith("sagemaker-distribution:latest-cpu")
    [pod] = view["pods"]
    assert pod["node"] and pod["ready"]
    assert any(m["path"] == "/s3" and m["claim"] == storage.DEFAULT_CLAIM
               for m in view["mounts"]), view["mounts"]
    # the pod mounts the very claim the jobs mount, at /s3
    api = stack.kube(cluster).api
    [running] = spaces.pods(api, "lab")
    claims = {v["name"]: v.get("persistentVolumeClaim", {}).get("claimName")
              for v in running["spec"]["volumes"]}
    mounts = {m["name"]: m["mountPath"] for m in running["spec"]["containers"][0]["volumeMounts"]}
    s3 = next(n for n, claim in claims.items() if claim == storage.DEFAULT_CLAIM)
    assert mounts[s3] == "/s3"
    assert view["access"]["port_forward"][:2] == ["kubectl", "port-forward"]
    assert view["access"]["local_url"] == f"http://localhost:8888/s/{cluster}/default/lab/"
    url = view["access"]["url"]
    assert url == f"{stack.spaces_url}/s/{cluster}/default/lab/", url

    # the data contract: a job writes under /s3, the space's /s3 lists it (opened as the
    # dashboard's Open does: a one-use code posted to the spaces router)
    signed_url, cookie = spacekit.sign_in(stack, cluster, "lab")
    assert signed_url == url
    first = spacekit.read(url, cookie)
    assert first.status_code == 200, (url, first.status_code, first.text)
    assert first.json()["mount"] == "/s3"
    with stack.client() as c:
        _follow(stack, c.post(f"/api/v1/clusters/{cluster}/jobs", json={"name": "writer", **JOB}),
                timeout=240)
    key = "jobs/writer/output/result.txt"
    wait_until(lambda: key in {f["path"] for f in spacekit.read(url, cookie).json()["files"]},
               timeout=120, what=f"{key} in the space's /s3")
    after = _read(stack, cluster, "lab")
    assert after["idle_minutes"] == 0 and after["last_activity"]

    # stop: the pod goes, the URL stops answering; a second stop changes nothing
    plan = rehearsed(stack, "POST", _url(cluster, "lab") + "/stop", kind="space.stop",
                     token="operator")  # the owner's plan: another token's is refused
    assert calls_in_order(plan, [("kubernetes", "workspaces")]), plan
    assert _read(stack, cluster, "lab")["state"] == "running"
    with stack.client() as c:
        _follow(stack, c.post(_url(cluster, "lab") + "/stop"))
        again = c.post(_url(cluster, "lab") + "/stop")
    assert again.status_code == 200 and again.json()["changed"] is False, again.text
    stopped = _read(stack, cluster, "lab")
    assert (stopped["state"], stopped["pods"]) == ("stopped", [])
    wait_until(lambda: spacekit.read(url, cookie).status_code == 503, timeout=30,
               what="the router's 503 for a stopped space")
    with stack.client() as c:
        refused = c.post(_url(cluster, "lab") + "/sign-in")
    assert refused.status_code == 409 and "stopped" in refused.json()["error"]["message"]
    # start: the same home volume, running again
    plan = rehearsed(stack, "POST", _url(cluster, "lab") + "/start", kind="space.start",
                     token="operator")
    assert plan["changes"] >= 1 and _read(stack, cluster, "lab")["state"] == "stopped"
    with stack.client() as c:
        _follow(stack, c.post(_url(cluster, "lab") + "/start"))
    assert _read(stack, cluster, "lab")["state"] == "running"
    wait_until(lambda: spacekit.read(url, cookie).status_code == 200, timeout=30,
               what="the router reaching the started space (the same session)")
    # resize: the running pod asks for the new size
    plan = rehearsed(stack, "PATCH", _url(cluster, "lab"), {"cpu": 4, "memory_gib": 16},
                     kind="space.update", token="operator")
    assert plan["changes"] >= 1, plan
    with stack.client() as c:
        _follow(stack, c.patch(_url(cluster, "lab"), json={"cpu": 4, "memory_gib": 16}))
        same = c.patch(_url(cluster, "lab"), json={"cpu": 4})
    assert same.status_code == 200 and same.json()["changed"] is False
    [pod] = spaces.pods(api, "lab")
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "4",
                                                                     "memory": "16Gi"}
    # delete: the plan first (a viewer may ask), then the space and its home volume go
    with stack.client("viewer") as c:
        plan = c.delete(_url(cluster, "lab"), params={"dry_run": "true"})
    assert plan.status_code == 200 and any("home volume" in r for r in plan.json()["removes"])
    with stack.client() as c:
        _follow(stack, c.delete(_url(cluster, "lab")))
    with stack.client("viewer") as c:
        assert c.get(_url(cluster, "lab")).status_code == 404
    assert _workspace(stack, cluster, "lab") is None
    assert kube.get_object(api, "v1", "PersistentVolumeClaim", "workspace-lab-pvc",
                           spaces.NAMESPACE) is None
    # a space made again by the same name is another space: the old session opens nothing
    _create_space(stack, cluster, "lab")
    refused = spacekit.read(url, cookie)
    assert refused.status_code == 401 and "deleted since" in refused.text, refused.text
    assert spacekit.read(url, spacekit.sign_in(stack, cluster, "lab")[1]).status_code == 200
    with stack.client() as c:
        _follow(stack, c.delete(_url(cluster, "lab")))
    # the job's file stays in the bucket
    with stack.client() as c:
        _follow(stack, c.delete(f"/api/v1/clusters/{cluster}/jobs/writer",
                                params={"force": "true"}))


def test_an_idle_space_stops_itself_and_starts_again(stack, cluster):
    """At the sandbox's speed a minute passes in well under a second: the create may end
    with the space already stopped by its idle shutdown (its operation says so)."""
    _create_space(stack, cluster, "nap", idle_shutdown_minutes=1)
    assert _read(stack, cluster, "nap")["idle_shutdown_minutes"] == 1
    stack.sandbox.advance_clock(180)
    wait_until(lambda: _read(stack, cluster, "nap")["state"] == "stopped", timeout=60,
               what="the idle space stopped")
    assert _workspace(stack, cluster, "nap")["spec"]["desiredStatus"] == "Stopped"
    with stack.client() as c:
        # kept running now: no idle shutdown
        _follow(stack, c.patch(_url(cluster, "nap"), json={"idle_shutdown_minutes": None}))
        _follow(stack, c.post(_url(cluster, "nap") + "/start"))
        assert _read(stack, cluster, "nap")["state"] == "running"
        _follow(stack, c.delete(_url(cluster, "nap")))


def test_only_the_owner_changes_a_space_and_a_forced_delete_is_audited(stack, cluster):
    _create_space(stack, cluster, "theirs")
    assert _read(stack, cluster, "theirs")["idle_shutdown_minutes"] is None
    with stack.client("viewer") as c:
        for method, path in (("POST", "/stop"), ("POST", "/start"), ("DELETE", ""),
                             ("POST", "/sign-in")):
            reply = c.request(method, _url(cluster, "theirs") + path)
            assert reply.status_code == 403, (method, path, reply.text)
        assert c.post(_url(cluster), json={"name": "v", "instance_group": "workers"}
                      ).status_code == 403
    # another token's space (its owner annotation, as another operator's create writes it)
    kube.merge_patch(stack.kube(cluster).api, spaces.API_VERSION, spaces.KIND, "theirs",
                     spaces.NAMESPACE, {"metadata": {"annotations": {
                         spaces.OWNER_ANNOTATION: "alice"}}})
    with stack.client() as c:
        for method, path, body in (("POST", "/stop", None), ("PATCH", "", {"cpu": 3}),
                                   ("DELETE", "", None), ("POST", "/sign-in", None)):
            reply = c.request(method, _url(cluster, "theirs") + path, json=body)
            assert reply.status_code == 403, (method, path, reply.text)
            assert reply.json()["error"]["details"]["owner"] == "alice"
        forced = c.delete(_url(cluster, "theirs"), params={"force": "true"})
        _follow(stack, forced)
        entries = c.get("/api/v1/audit", params={"target": f"cluster/{cluster}/space/theirs"}
                        ).json()["items"]
    deleted = next(e for e in entries if e["method"] == "DELETE" and e["status"] == 202)
    assert (deleted["token"], deleted["forced"]) == ("operator", True)
    refused = [e for e in entries if e["status"] == 403 and e["token"] == "operator"]
    assert refused and not any(e["forced"] for e in refused)


@pytest.mark.parametrize(("body", "status", "code", "field"), [
    ({"instance_group": "nowhere"}, 422, "validation_failed", "instance_group"),
    ({"cpu": 64}, 422, "exceeds_capacity", "instance_group"),
    ({"gpus": 2}, 422, "exceeds_capacity", "instance_group"),
    ({"name": "Bad_Name"}, 422, "validation_failed", "name"),
    ({"app_type": "vim"}, 422, "validation_failed", "app_type"),
    ({"idle_shutdown_minutes": 0}, 422, "validation_failed", "idle_shutdown_minutes"),
    ({"image": "not an image"}, 422, "validation_failed", "image"),
], ids=["unknown-group", "too-many-cpus", "too-many-gpus", "bad-name", "bad-editor",
        "idle-zero", "bad-image"])
def test_what_can_never_work_is_refused_before_anything_is_made(stack, cluster, body, status,
                                                                 code, field):
    wanted = {"name": "never", "instance_group": "workers", **body}
    with stack.client() as c:
        reply = c.post(_url(cluster), json=wanted)
    assert reply.status_code == status, reply.text
    error = reply.json()["error"]
    assert error["code"] == code
    assert field in json.dumps(error["details"]), error
    assert _workspace(stack, cluster, wanted["name"]) is None


@pytest.mark.asyncio
async def test_an_agent_runs_a_space_through_the_mcp_tools(stack, cluster):
    """The MCP face: each tool's reply within its output schema (checked here and by the SDK's
    client), the mutating ones followed with wait_operation, the delete planned first."""
    from mcp_server.server import build_server

    async with Client(build_server(stack.url, stack.operator_token)) as client:
        agent = await Agent.of(client)
        call, done = agent.call, agent.done

        here = {"cluster": cluster, "name": "agent"}
        await done("create_space", {**here, "instance_group": "workers", "cpu": 1,
                                    "memory_gib": 4, "app_type": "code-editor",
                                    "idle_shutdown_minutes": None})
        listed = await call("list_spaces", {"cluster": cluster})
        assert "agent" in {s["name"] for s in listed["items"]}
        one = await call("get_space", here)
        assert (one["state"], one["app_type"]) == ("running", "code-editor")
        # its activity read where Code Editor reports it (`/api/idle` at its root); its
        # editor still answers a port-forward under its base path
        assert one["last_activity"] and one["idle_minutes"] == 0, one
        assert one["access"]["local_url"] == f"http://localhost:8888/s/{cluster}/default/agent/"
        await done("stop_space", here)
        assert (await call("get_space", here))["state"] == "stopped"
        await done("start_space", here)
        await done("update_space", {**here, "cpu": 2})
        assert (await call("get_space", here))["resources"]["cpu"] == 2
        plan = await call("delete_space", {**here, "dry_run": True})
        assert plan["removes"]
        await done("delete_space", here)
    assert _workspace(stack, cluster, "agent") is None
