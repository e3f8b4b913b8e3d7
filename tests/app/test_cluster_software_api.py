"""Cluster software through REST (and MCP): HyperPod's node software update is one
UpdateClusterSoftware followed to its end, and a Kubernetes upgrade one UpdateClusterVersion
one minor version up with the EKS add-ons moved to the new version's defaults after it —
each never sent twice, not even when the worker dies right after AWS accepted it."""

from __future__ import annotations

import uuid

import pytest

from cloud.eks import next_minor
from tests.app.dryrunkit import calls_in_order, rehearsed
from tests.app.test_clusters_api import _body, _calls, _client, _create, _last_seq
from tests.mcp_server.test_mcp_e2e import _stdio
from vocabulary import kubernetes_versions

OFFERED = kubernetes_versions.offered()
assert len(OFFERED) >= 3, ("the tests below upgrade twice: vocabulary/kubernetes_versions.py "
                           f"needs the versions HyperPod documents now (offered: {OFFERED})")
FIRST_VERSION = OFFERED[-3]  # room for the two upgrades below


@pytest.fixture(scope="module")
def cluster(stack):
    stack.wait_idle()
    name = f"sw-{uuid.uuid4().hex[:5]}"
    assert _create(stack, _body(name, kubernetes_version=FIRST_VERSION))["status"] == "succeeded"
    return name


def _update(stack, name: str, body: dict | None = None):
    with stack.client() as c:
        return c.post(f"/api/v1/clusters/{name}/software-update", json=body or {})


def _software_calls(stack, name: str, since: int) -> list[dict]:
    return [c for c in _calls(stack, "sagemaker", "UpdateClusterSoftware", since)
            if c["params"]["ClusterName"] == name]


def test_the_update_is_followed_until_every_group_succeeded(stack, cluster):
    since = _last_seq(stack)
    reply = _update(stack, cluster, {"instance_groups": ["workers"]})
    assert reply.status_code == 202, reply.text
    op = stack.wait_operation(reply.json()["operation"]["id"], 120)
    assert op["status"] == "succeeded", op
    [call] = _software_calls(stack, cluster, since)
    assert call["params"]["InstanceGroups"] == [{"InstanceGroupName": "workers"}]
    described = _client(stack, "sagemaker").describe_cluster(ClusterName=cluster)
    assert described["ClusterStatus"] == "InService"
    assert {g["InstanceGroupName"]: g.get("SoftwareUpdateStatus")
            for g in described["InstanceGroups"]} == {"workers": "Succeeded"}


def test_an_unknown_group_is_refused_and_nothing_is_sent(stack, cluster):
    since = _last_seq(stack)
    reply = _update(stack, cluster, {"instance_groups": ["nope"]})
    assert reply.status_code == 422
    assert "nope" in reply.json()["error"]["message"]
    assert _software_calls(stack, cluster, since) == []
    imported_or_missing = _update(stack, "no-such-cluster")
    assert imported_or_missing.status_code == 404


def _killed_once_aws_answered(stack, service: str, action: str, submit) -> dict:
    """The operation `submit()` started, its worker killed once AWS answered service:action."""
    op = stack.killed_once_answered(service, action, submit)
    assert op["status"] == "succeeded", op
    assert op["steps"][0]["attempts"] >= 2  # interrupted, then resumed by adopting
    return op


def test_a_worker_killed_after_aws_accepted_the_update_never_sends_it_again(stack, cluster):
    since = _last_seq(stack)
    _killed_once_aws_answered(stack, "sagemaker", "UpdateClusterSoftware",
                              lambda: _update(stack, cluster))
    assert len(_software_calls(stack, cluster, since)) == 1


# -- Kubernetes version -------------------------------------------------------------------


def _upgrade(stack, name: str, version: str):
    with stack.client() as c:
        return c.post(f"/api/v1/clusters/{name}/kubernetes-version", json={"version": version})


def _version_calls(stack, name: str, since: int) -> list[dict]:
    return [c for c in _calls(stack, "eks", "UpdateClusterVersion", since)
            if c["params"]["name"] == name]


def _running(stack, name: str) -> str:
    return _client(stack, "eks").describe_cluster(name=name)["cluster"]["version"]


def _default_addon_version(eks, addon: str, kubernetes_version: str) -> str:
    offered = eks.describe_addon_versions(addonName=addon, kubernetesVersion=kubernetes_version)
    (default,) = [v["addonVersion"] for a in offered["addons"] for v in a["addonVersions"]
                  if any(c["defaultVersion"] and c["clusterVersion"] == kubernetes_version
                         for c in v["compatibilities"])]
    return default


def test_kubernetes_goes_one_minor_version_up_and_the_addons_follow(stack, cluster):
    stack.wait_idle()
    eks = _client(stack, "eks")
    before = _running(stack, cluster)
    wanted = next_minor(before)
    addons = eks.list_addons(clusterName=cluster)["addons"]
    assert "kube-proxy" in addons
    old_versions = {a: eks.describe_addon(clusterName=cluster, addonName=a)["addon"][
        "addonVersion"] for a in addons}
    # the plan first: the version update, then each add-on's, nothing sent
    plan = rehearsed(stack, "POST", f"/api/v1/clusters/{cluster}/kubernetes-version",
                     {"version": wanted}, kind="cluster.kubernetes_upgrade")
    assert calls_in_order(plan, [("eks", "UpdateClusterVersion")]), plan
    assert _running(stack, cluster) == before
    since = _last_seq(stack)
    reply = _upgrade(stack, cluster, wanted)
    assert reply.status_code == 202, reply.text
    op = stack.wait_operation(reply.json()["operation"]["id"], 120)
    assert op["status"] == "succeeded", op

    [call] = _version_calls(stack, cluster, since)
    assert call["params"]["version"] == wanted and call["params"]["clientRequestToken"]
    described = eks.describe_cluster(name=cluster)["cluster"]
    assert (described["status"], described["version"]) == ("ACTIVE", wanted)
    with stack.client() as c:
        shown = c.get(f"/api/v1/clusters/{cluster}").json()["eks"]
    assert shown["version"] == wanted
    # with its EKS support today: standard or extended (billed on top), and until when
    assert shown["support"] == kubernetes_versions.support_of(wanted)
    assert shown["support"]["support"] in ("standard", "extended")
    moved = {c["params"]["addonName"]: c["params"]["addonVersion"]
             for c in _calls(stack, "eks", "UpdateAddon", since)
             if c["params"]["name"] == cluster}
    for addon in addons:
        default = _default_addon_version(eks, addon, wanted)
        state = eks.describe_addon(clusterName=cluster, addonName=addon)["addon"]
        assert state["addonVersion"] == default, addon
        assert state["status"] in ("ACTIVE", "DEGRADED"), state
        # asked to move exactly when its default changed, and never twice
        assert (addon in moved) == (old_versions[addon] != default), addon
    assert moved["kube-proxy"] == f"v{wanted}.0-eksbuild.1"

    # the version it runs now: nothing to do; two minor versions up: refused, nothing sent
    since = _last_seq(stack)
    same = _upgrade(stack, cluster, wanted)
    assert same.status_code == 200, same.text
    assert same.json()["changed"] is False
    too_far = _upgrade(stack, cluster, next_minor(next_minor(wanted)))
    assert too_far.status_code == 422, too_far.text
    error = too_far.json()["error"]
    assert error["code"] == "validation_failed" and "version" in error["message"], error
    assert _version_calls(stack, cluster, since) == []
    assert _calls(stack, "eks", "UpdateAddon", since) == []


@pytest.mark.asyncio
async def test_an_agent_asking_for_the_version_the_cluster_runs_changes_nothing(stack, cluster):
    since = _last_seq(stack)
    running = _running(stack, cluster)
    async with _stdio(stack, stack.operator_token) as client:
        result = await client.call_tool("upgrade_kubernetes",
                                        {"name": cluster, "version": running})
    assert not result.is_error, result.content[0].text
    assert result.structured_content["changed"] is False
    assert _version_calls(stack, cluster, since) == []


def test_a_worker_killed_after_eks_accepted_the_upgrade_never_sends_it_again(stack, cluster):
    stack.wait_idle()
    wanted = next_minor(_running(stack, cluster))
    since = _last_seq(stack)
    counted = _upgrades_counted(stack)
    _killed_once_aws_answered(stack, "eks", "UpdateClusterVersion",
                              lambda: _upgrade(stack, cluster, wanted))
    assert len(_version_calls(stack, cluster, since)) == 1  # the sandbox's log: sent once
    assert _upgrades_counted(stack) == counted + 1  # and its mutation counters
    assert _running(stack, cluster) == wanted


def _upgrades_counted(stack) -> int:
    return stack.sandbox.counters()["by_action"].get("eks:UpdateClusterVersion", 0)
