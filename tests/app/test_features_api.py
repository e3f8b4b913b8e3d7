"""Managed features through REST on the full stack: the actual state read from AWS and the
cluster, the explicit diff, the identity chain of tiered checkpointing made and removed
without residue, shared dependencies, one feature never touching another, and managed
autoscaling's bounds as NodePools."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.app.featurekit import (
    features,
    get,
    kube_api,
    last_seq,
    mutations_since,
    oidc_providers,
    patch,
    role_names,
    state,
    toggle,
)
from tests.app.test_clusters_api import _body, _client, _create

TRAINING_ADDON = "amazon-sagemaker-hyperpod-training-operator"
INFERENCE_ADDON = "amazon-sagemaker-hyperpod-inference"


@pytest.fixture(scope="module")
def cluster(stack):
    stack.wait_idle()
    name = f"feat-{uuid.uuid4().hex[:5]}"
    op = _create(stack, _body(name))
    assert op["status"] == "succeeded", op
    return name


def _addons(stack, cluster: str) -> set[str]:
    return set(_client(stack, "eks").list_addons(clusterName=cluster)["addons"])


def _mutations(stack) -> int:
    return sum(stack.sandbox.counters()["by_action"].values())


def test_every_feature_is_read_from_the_cluster_and_starts_off(stack, cluster):
    view = features(stack, cluster)
    assert set(view["features"]) == {"training_operator", "inference_operator",
                                     "tiered_checkpointing", "autoscaling", "observability",
                                     "task_governance", "spaces"}
    assert {f["state"] for f in view["features"].values()} == {"off"}
    # the base set the create installed is there, read from EKS and Kubernetes
    assert view["dependencies"]["eks-pod-identity-agent"]["present"] is True
    assert view["dependencies"]["hyperpod-health-monitoring-agent"]["status"] == "applied"
    # cert-manager is pulled in by the operators only, and says so
    assert view["dependencies"]["cert-manager"]["present"] is False
    assert view["dependencies"]["cert-manager"]["needed_by"] == ["training_operator",
                                                                 "inference_operator",
                                                                 "spaces"]
    assert view["oidc_provider"]["present"] is True
    training = view["features"]["training_operator"]
    assert training["identity"]["mechanism"] == "pod-identity"
    assert [r["name"] for r in training["requires"]] == ["eks-pod-identity-agent",
                                                         "cert-manager"]
    assert view["features"]["tiered_checkpointing"]["identity"]["mechanism"] == "irsa"
    scaling = view["features"]["autoscaling"]
    assert "not general EC2 capacity" in scaling["note"]
    assert scaling["groups"][0]["name"] == "workers"
    assert scaling["groups"][0]["autoscaled"] is False


def test_a_patch_that_matches_the_actual_state_makes_no_mutating_call(stack, cluster):
    stack.wait_idle()
    before, since = _mutations(stack), last_seq(stack)
    reply = patch(stack, cluster, {"training_operator": {"enabled": False},
                                   "tiered_checkpointing": {"enabled": False},
                                   "autoscaling": {"enabled": False}})
    assert reply.status_code == 200, reply.text
    assert reply.json()["changed"] is False
    assert _mutations(stack) == before
    assert mutations_since(stack, since) == []


def test_tiered_checkpointing_on_then_off_leaves_no_residue(stack, cluster):
    stack.wait_idle()
    roles_before = role_names(stack, cluster)
    providers = oidc_providers(stack)
    api = kube_api(stack, cluster)
    op = toggle(stack, cluster, {"tiered_checkpointing": {"enabled": True,
                                                          "memory_percent": 20}})
    assert op["status"] == "succeeded", op
    assert [s["name"] for s in op["steps"]] == ["requirements", "identity", "enable"]

    # the chain: role with its trust scoped to the service account, the policy scoped to
    # the cluster's bucket, the annotated service account, HyperPod's setting
    role = f"hypd-{cluster}-ckpt"
    iam = _client(stack, "iam")
    found = iam.get_role(RoleName=role)["Role"]
    [statement] = found["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert statement["Principal"]["Federated"] in providers
    conditions = statement["Condition"]["StringEquals"]
    assert any(v == "system:serviceaccount:default:hypd-tiered-checkpointing"
               for k, v in conditions.items() if k.endswith(":sub"))
    policy = iam.get_role_policy(RoleName=role, PolicyName="hypd-ckpt")["PolicyDocument"]
    resources = {r for s in policy["Statement"] for r in s["Resource"]}
    assert all(r.startswith(f"arn:aws:s3:::hypd-{cluster}-") for r in resources), resources
    account = get(api, "v1", "ServiceAccount", "hypd-tiered-checkpointing", "default")
    assert account["metadata"]["annotations"]["eks.amazonaws.com/role-arn"] == found["Arn"]
    described = _client(stack, "sagemaker").describe_cluster(ClusterName=cluster)
    assert described["TieredStorageConfig"] == {"Mode": "Enable",
                                                "InstanceMemoryAllocationPercentage": 20}
    view = features(stack, cluster)["features"]["tiered_checkpointing"]
    assert view["state"] == "on" and view["memory_percent"] == 20
    assert all(p["ok"] for p in view["parts"]), view["parts"]

    # a pod writing checkpoints as its service account: turning it off is refused, naming it
    from cloud import kube

    off = {"tiered_checkpointing": {"enabled": False}}
    kube.create_object(api, {"apiVersion": "v1", "kind": "Pod",
                             "metadata": {"name": "ckpt-writer", "namespace": "default"},
                             "spec": {"serviceAccountName": "hypd-tiered-checkpointing",
                                      "containers": [{"name": "main", "image": "trainer"}]}})
    refused = patch(stack, cluster, off)
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["details"]["dependents"] == [
        {"kind": "pod", "name": "ckpt-writer", "namespace": "default", "cluster": None,
         "why": "writes checkpoints as the feature's service account", "forceable": True}]
    with stack.client("viewer") as c:
        plan = c.patch(f"/api/v1/clusters/{cluster}/features", json=off,
                       params={"dry_run": "true"}).json()
    assert plan["refused"] is True and plan["dependents"] == refused.json()["error"][
        "details"]["dependents"]
    assert {f"iam role {role}", "service account default/hypd-tiered-checkpointing"} <= set(
        plan["removes"]), plan["removes"]
    with stack.client() as c:  # the user accepts that it loses its checkpoints' identity
        forced = c.patch(f"/api/v1/clusters/{cluster}/features", json=off,
                         params={"force": "true"})
    assert forced.status_code == 202, forced.text
    op = stack.wait_operation(forced.json()["operation"]["id"], 120)
    kube.delete_object(api, "v1", "Pod", "ckpt-writer", "default")
    assert op["status"] == "succeeded", op
    assert [s["name"] for s in op["steps"]] == ["disable", "identity_off", "release"]
    # nothing of the chain is left: no role (so no policy, no trust entry), no service
    # account (so no annotation); the shared OIDC provider and the cluster's roles stay
    assert role_names(stack, cluster) == roles_before
    assert role not in role_names(stack, cluster)
    assert get(api, "v1", "ServiceAccount", "hypd-tiered-checkpointing", "default") is None
    assert not any("hypd-tiered-checkpointing" in str(a.get("metadata")) for a in
                   _service_accounts(api))
    described = _client(stack, "sagemaker").describe_cluster(ClusterName=cluster)
    assert described["TieredStorageConfig"]["Mode"] == "Disable"
    assert oidc_providers(stack) == providers
    assert state(stack, cluster, "tiered_checkpointing") == "off"


def test_a_half_made_chain_is_finished_or_removed_by_the_same_toggle(stack, cluster):
    stack.wait_idle()
    role = f"hypd-{cluster}-ckpt"
    api = kube_api(stack, cluster)
    since = last_seq(stack)
    for then in (True, False):
        # AWS refuses the last part: the role and the service account are made, the setting
        # is not — a half-made chain, shown as such
        stack.sandbox.add_fault("sagemaker", "UpdateCluster", "error",
                                code="ValidationException", message="refused by the test")
        op = toggle(stack, cluster, {"tiered_checkpointing": {"enabled": True}})
        assert op["status"] == "failed" and op["error"]["step"] == "enable", op
        view = features(stack, cluster)["features"]["tiered_checkpointing"]
        assert view["state"] == "partial"
        assert {p["kind"]: p["present"] for p in view["parts"]} == {
            "iam_role": True, "service_account": True, "hyperpod_setting": False}
        op = toggle(stack, cluster, {"tiered_checkpointing": {"enabled": then}})
        assert op["status"] == "succeeded", op
        assert state(stack, cluster, "tiered_checkpointing") == ("on" if then else "off")
        if then:  # finished: the role made by the failed attempt was adopted, not made again
            created = [c for c in stack.sandbox.calls(action="CreateRole", since=since)
                       if c["params"]["RoleName"] == role and c["status"] == 200]
            assert len(created) == 1
            assert toggle(stack, cluster, {"tiered_checkpointing": {"enabled": False}})[
                "status"] == "succeeded"
    # removed: nothing of the chain left
    assert role not in role_names(stack, cluster)
    assert get(api, "v1", "ServiceAccount", "hypd-tiered-checkpointing", "default") is None


def _service_accounts(api) -> list[dict]:
    from cloud import kube

    return kube.list_objects(api, "v1", "ServiceAccount")


# The autoscaling tests run before the inference operator's: turning it on starts the Load
# Balancer Controller and KEDA in the cluster (they stay: endpoints use them too), and a pod
# on a group's node keeps Karpenter from giving that node back, as on AWS.


def test_autoscaling_bounds_are_node_pools_and_min_max_current_are_shown(stack, cluster):
    stack.wait_idle()
    op = toggle(stack, cluster, {"autoscaling": {"enabled": True, "groups": {
        "workers": {"min": 0, "max": 3}}}})
    assert op["status"] == "succeeded", op
    described = _client(stack, "sagemaker").describe_cluster(ClusterName=cluster)
    assert described["AutoScaling"]["Mode"] == "Enable"
    assert described["AutoScaling"]["AutoScalerType"] == "Karpenter"
    assert described["ClusterRole"].endswith(f"role/hypd/hypd-{cluster}-hp-cluster")
    api = kube_api(stack, cluster)
    pool = get(api, "karpenter.sh/v1", "NodePool", "hypd-workers")
    assert pool["spec"]["limits"] == {"nodes": "3"}
    assert pool["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "hypd-workers"
    node_class = get(api, "karpenter.sagemaker.amazonaws.com/v1", "HyperpodNodeClass",
                     "hypd-workers")
    assert node_class["spec"] == {"instanceGroups": ["workers"]}
    [group] = features(stack, cluster)["features"]["autoscaling"]["groups"]
    assert (group["autoscaled"], group["min"], group["max"]) == (True, 0, 3)
    assert group["current"] is not None
    # what the cluster can ever hold counts the group's autoscaling maximum (3 one-GPU
    # nodes): three servers of one GPU fit (refused only for the model not downloaded),
    # four do not
    assert _endpoint_refusal(stack, cluster, 3)["code"] == "validation_failed"
    refused = _endpoint_refusal(stack, cluster, 4)
    assert refused["code"] == "exceeds_capacity" and refused["details"]["can_hold"] == 3
    assert "now, autoscaling max 3)" in refused["message"]

    # only max given: min stays; a minimum adds the static pool
    op = toggle(stack, cluster, {"autoscaling": {"groups": {"workers": {"min": 1}}}})
    assert op["status"] == "succeeded", op
    assert [s["name"] for s in op["steps"]] == ["requirements", "identity", "enable",
                                                "node_pools"]
    floor = get(api, "karpenter.sh/v1", "NodePool", "hypd-workers-min")
    assert floor["spec"]["replicas"] == 1
    assert get(api, "karpenter.sh/v1", "NodePool", "hypd-workers")["spec"]["limits"] == {
        "nodes": "2"}
    [group] = features(stack, cluster)["features"]["autoscaling"]["groups"]
    assert (group["min"], group["max"]) == (1, 3)
    again = patch(stack, cluster, {"autoscaling": {"enabled": True, "groups": {
        "workers": {"min": 1, "max": 3}}}})
    assert again.status_code == 200 and again.json()["changed"] is False

    op = toggle(stack, cluster, {"autoscaling": {"enabled": False}})
    assert op["status"] == "succeeded", op
    assert get(api, "karpenter.sh/v1", "NodePool", "hypd-workers") is None
    assert get(api, "karpenter.sh/v1", "NodePool", "hypd-workers-min") is None
    described = _client(stack, "sagemaker").describe_cluster(ClusterName=cluster)
    assert described["AutoScaling"]["Mode"] == "Disable"
    # the cluster's own ClusterRole is shared: it stays
    assert f"hypd-{cluster}-hp-cluster" in role_names(stack, cluster)
    # autoscaling off: the group's nodes (as many as Karpenter left) are all it has
    held = max(_group_counts(stack, cluster, "workers"))
    assert _endpoint_refusal(stack, cluster, held + 1)["details"]["can_hold"] == held


def _endpoint_refusal(stack, cluster: str, replicas: int) -> dict:
    """The refusal of a one-GPU vLLM endpoint of `replicas` servers (its model was never
    downloaded, so one that fits is refused for that, after the capacity check)."""
    with stack.client() as c:
        reply = c.post(f"/api/v1/clusters/{cluster}/endpoints", json={
            "name": "fit", "kind": "vllm", "model": "absent", "gpus": 1,
            "replicas": replicas})
    assert reply.status_code == 422, reply.text
    return reply.json()["error"]


def _group_counts(stack, cluster: str, group: str) -> tuple[int, int]:
    described = _client(stack, "sagemaker").describe_cluster(ClusterName=cluster)
    found = next(g for g in described["InstanceGroups"] if g["InstanceGroupName"] == group)
    return found["CurrentCount"], found["TargetCount"]


def _daemon(pod: dict) -> bool:
    return any(o.get("kind") == "DaemonSet"
               for o in pod["metadata"].get("ownerReferences") or ())


def _burst_pod(index: int) -> dict:
    gpu = {"nvidia.com/gpu": "1"}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"burst-{index}", "namespace": "default"},
            "spec": {"nodeSelector": {"karpenter.sh/nodepool": "hypd-workers"},
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": gpu, "limits": gpu}}]}}


def test_a_group_scaled_from_zero_goes_up_to_max_for_pending_pods_and_back_to_min(stack,
                                                                                 cluster):
    from cloud import kube
    from tests.stack import wait_until

    stack.wait_idle()
    op = toggle(stack, cluster, {"autoscaling": {"enabled": True, "groups": {
        "workers": {"min": 0, "max": 2}}}})
    assert op["status"] == "succeeded", op
    # Karpenter owns the group now: with nothing pending (and nothing running but the
    # cluster's own kube-system pods, which it moves away) it goes to zero
    assert not [p["metadata"]["name"] for p in kube.list_objects(
        kube_api(stack, cluster), "v1", "Pod")
        if p["spec"].get("nodeName") and not _daemon(p)
        and p["metadata"]["namespace"] != "kube-system"], "pods run on the group's nodes"
    wait_until(lambda: _group_counts(stack, cluster, "workers") == (0, 0), 60,
               what="workers scaled to zero")
    api = kube_api(stack, cluster)
    for index in range(3):  # three single-GPU pods; a g5.8xlarge has one GPU
        kube.server_side_apply(api, _burst_pod(index))
    wait_until(lambda: _group_counts(stack, cluster, "workers") == (2, 2), 60,
               what="workers scaled up to its maximum")
    [group] = features(stack, cluster)["features"]["autoscaling"]["groups"]
    assert (group["min"], group["max"], group["current"]) == (0, 2, 2)
    assert _group_counts(stack, cluster, "workers")[1] == 2  # never beyond the maximum
    for index in range(3):  # the pods end
        kube.delete_object(api, "v1", "Pod", f"burst-{index}", "default")
    wait_until(lambda: _group_counts(stack, cluster, "workers") == (0, 0), 60,
               what="workers back to its minimum")
    # a minimum keeps nodes without any pod
    assert toggle(stack, cluster, {"autoscaling": {"groups": {"workers": {"min": 1}}}})[
        "status"] == "succeeded"
    wait_until(lambda: _group_counts(stack, cluster, "workers") == (1, 1), 60,
               what="workers at its new minimum")
    assert toggle(stack, cluster, {"autoscaling": {"enabled": False}})["status"] == "succeeded"


def test_enabling_one_feature_never_touches_another(stack, cluster):
    stack.wait_idle()
    op = toggle(stack, cluster, {"training_operator": {"enabled": True}})
    assert op["status"] == "succeeded", op
    assert state(stack, cluster, "training_operator") == "on"
    before = features(stack, cluster)["features"]["training_operator"]
    since = last_seq(stack)

    op = toggle(stack, cluster, {"inference_operator": {"enabled": True}})
    assert op["status"] == "succeeded", op
    touched = mutations_since(stack, since)
    assert touched, "enabling the inference operator changed nothing"
    training_role = f"hypd-{cluster}-training-op"
    for call in touched:
        params = call["params"]
        assert params.get("addonName") not in (TRAINING_ADDON, "cert-manager",
                                               "eks-pod-identity-agent"), call
        assert params.get("RoleName") != training_role, call
        assert call["action"] not in ("CreatePodIdentityAssociation",
                                      "DeletePodIdentityAssociation"), call
    after = features(stack, cluster)["features"]["training_operator"]
    assert after == before
    assert state(stack, cluster, "inference_operator") == "on"
    addon = _client(stack, "eks").describe_addon(clusterName=cluster,
                                                 addonName=INFERENCE_ADDON)["addon"]
    assert addon["serviceAccountRoleArn"].endswith(f"role/hypd/hypd-{cluster}-inference-op")
    # configured as AWS's setup guide asks: its execution role (the same role, which may pass
    # itself to SageMaker), its TLS bucket (a hyperpod-tls* name, which AWS's policy for it
    # reaches), the HyperPod cluster, and hypd's own load balancer controller and KEDA
    config = json.loads(addon["configurationValues"])
    assert config["executionRoleArn"] == addon["serviceAccountRoleArn"]
    assert config["hyperpodClusterArn"] == _client(stack, "sagemaker").describe_cluster(
        ClusterName=cluster)["ClusterArn"]
    assert config["alb"] == {"enabled": False} and config["keda"] == {"enabled": False}
    bucket = config["tlsCertificateS3Bucket"]
    assert bucket.startswith("hyperpod-tls-hypd-")
    tags = _client(stack, "s3").get_bucket_tagging(Bucket=bucket)["TagSet"]
    assert {"Key": "hypd:cluster", "Value": cluster} in tags
    # everything the add-on checks for is there: the CSI drivers, cert-manager,
    # metrics-server, the controllers (running), the role and the bucket
    assert addon["status"] == "ACTIVE" and addon["health"]["issues"] == [], addon
    view = features(stack, cluster)["features"]["inference_operator"]
    assert {"kind": "tls_bucket", "name": bucket, "present": True, "ok": True} in [
        {k: part[k] for k in ("kind", "name", "present", "ok")} for part in view["parts"]]
    for deployment, namespace in (("aws-load-balancer-controller", "kube-system"),
                                  ("keda-operator", "keda")):
        running = get(kube_api(stack, cluster), "apps/v1", "Deployment", deployment, namespace)
        assert running["status"]["availableReplicas"] >= 1, deployment
    keda_account = get(kube_api(stack, cluster), "v1", "ServiceAccount", "keda-operator",
                       "keda")
    assert keda_account["metadata"]["annotations"]["eks.amazonaws.com/role-arn"].endswith(
        f"role/hypd/hypd-{cluster}-keda")


def test_disabling_a_feature_keeps_a_dependency_another_still_needs(stack, cluster):
    stack.wait_idle()
    for feature in ("training_operator", "inference_operator"):
        if state(stack, cluster, feature) != "on":
            assert toggle(stack, cluster, {feature: {"enabled": True}})["status"] == "succeeded"
    assert "cert-manager" in _addons(stack, cluster)

    op = toggle(stack, cluster, {"training_operator": {"enabled": False}})
    assert op["status"] == "succeeded", op
    release = next(s for s in op["steps"] if s["name"] == "release")
    assert release["resources"]["removed"] == []
    assert "cert-manager" in release["resources"]["kept"]
    assert release["resources"]["still_needed_by"] == ["inference_operator"]
    present = _addons(stack, cluster)
    assert "cert-manager" in present and TRAINING_ADDON not in present
    assert f"hypd-{cluster}-training-op" not in role_names(stack, cluster)
    assert "eks-pod-identity-agent" in present  # the base set is never released

    # the last feature that needed it gone, cert-manager goes too
    bucket = json.loads(_client(stack, "eks").describe_addon(
        clusterName=cluster, addonName=INFERENCE_ADDON)["addon"]["configurationValues"])[
        "tlsCertificateS3Bucket"]
    _client(stack, "s3").put_object(Bucket=bucket, Key="certs/endpoint.pem", Body=b"pem")
    op = toggle(stack, cluster, {"inference_operator": {"enabled": False}})
    assert op["status"] == "succeeded", op
    assert "cert-manager" not in _addons(stack, cluster)
    assert "metrics-server" not in _addons(stack, cluster)
    assert "eks-pod-identity-agent" in _addons(stack, cluster)
    # the operator's TLS bucket goes with its role, certificates and all ...
    assert bucket not in {b["Name"] for b in _client(stack, "s3").list_buckets()["Buckets"]}
    assert f"hypd-{cluster}-inference-op" not in role_names(stack, cluster)
    # ... but the load balancer controller, KEDA and the FSx driver stay: endpoints and
    # volumes use them too
    assert "aws-fsx-csi-driver" in _addons(stack, cluster)
    api = kube_api(stack, cluster)
    assert get(api, "apps/v1", "Deployment", "aws-load-balancer-controller", "kube-system")
    assert get(api, "apps/v1", "Deployment", "keda-operator", "keda")
    assert f"hypd-{cluster}-keda" in role_names(stack, cluster)


def test_a_request_changing_two_features_or_naming_an_unknown_group_is_refused(stack,
                                                                             cluster):
    stack.wait_idle()
    before = _mutations(stack)
    two = patch(stack, cluster, {"training_operator": {"enabled": True},
                                 "observability": {"enabled": True}})
    assert two.status_code == 422, two.text
    assert "one feature per request" in two.json()["error"]["message"]
    unknown = patch(stack, cluster, {"autoscaling": {"enabled": True,
                                                     "groups": {"nope": {"max": 2}}}})
    assert unknown.status_code == 422, unknown.text
    assert "nope" in unknown.json()["error"]["message"]
    inverted = patch(stack, cluster, {"autoscaling": {"enabled": True, "groups": {
        "workers": {"min": 3, "max": 2}}}})
    assert inverted.status_code == 422, inverted.text
    options_off = patch(stack, cluster, {"tiered_checkpointing": {"enabled": False,
                                                                  "memory_percent": 10}})
    assert options_off.status_code == 422, options_off.text
    typo = patch(stack, cluster, {"training_operater": {"enabled": True}})
    assert typo.status_code == 422, typo.text
    viewer = patch(stack, cluster, {"training_operator": {"enabled": True}}, token="viewer")
    assert viewer.status_code == 403, viewer.text
    assert _mutations(stack) == before


@pytest.mark.asyncio
async def test_an_agent_reads_and_toggles_features_over_mcp(stack, cluster):
    from tests.mcp_server.test_mcp_e2e import _follow, _stdio

    stack.wait_idle()
    async with _stdio(stack, stack.operator_token) as client:
        read = await client.call_tool("get_features", {"cluster": cluster})
        assert not read.is_error, read.content[0].text
        assert read.structured_content["features"]["observability"]["state"] == "off"
        reply = (await client.call_tool("update_features", {
            "cluster": cluster, "observability": {"enabled": True}})).structured_content
        assert reply["status_tool"] == "wait_operation"
        done = await _follow(client, reply)
        assert done["operation"]["status"] == "succeeded", done
        # asked again (a new request, not a retry of the first): nothing to do
        again = (await client.call_tool("update_features", {
            "cluster": cluster, "observability": {"enabled": True},
            "idempotency_key": uuid.uuid4().hex})).structured_content
        assert again["changed"] is False and again["status_tool"] is None
        refused = await client.call_tool("update_features", {
            "cluster": cluster, "autoscaling": {"enabled": True, "groups": {
                "workers": {"min": 3, "max": 2}}}})
        assert refused.is_error and "validation_failed" in refused.content[0].text
        off = (await client.call_tool("update_features", {
            "cluster": cluster, "observability": {"enabled": False}})).structured_content
        assert (await _follow(client, off))["operation"]["status"] == "succeeded"
    assert state(stack, cluster, "observability") == "off"
    assert f"hypd-{cluster}-observability" not in role_names(stack, cluster)


def test_an_addon_someone_else_installed_is_bound_but_never_removed(stack, cluster):
    from tests.stack import wait_until

    stack.wait_idle()
    eks = _client(stack, "eks")
    addon = "amazon-sagemaker-hyperpod-observability"
    eks.create_addon(clusterName=cluster, addonName=addon)  # not hypd's: no tags, no role
    wait_until(lambda: eks.describe_addon(clusterName=cluster, addonName=addon)["addon"][
        "status"] in ("ACTIVE", "DEGRADED"), 60, what="the add-on installed by hand")
    view = features(stack, cluster)["features"]["observability"]
    assert view["state"] == "partial"  # there, but without its role
    [part] = [p for p in view["parts"] if p["kind"] == "addon"]
    assert part["present"] and part["hypds"] is False

    op = toggle(stack, cluster, {"observability": {"enabled": True}})
    assert op["status"] == "succeeded", op
    assert state(stack, cluster, "observability") == "on"
    [association] = eks.list_pod_identity_associations(
        clusterName=cluster, namespace="hyperpod-observability")["associations"]
    found = eks.describe_pod_identity_association(
        clusterName=cluster, associationId=association["associationId"])["association"]
    assert found["roleArn"].endswith(f"role/hypd/hypd-{cluster}-observability")
    assert found["tags"]["hypd:cluster"] == cluster

    refused = patch(stack, cluster, {"observability": {"enabled": False}})
    assert refused.status_code == 409, refused.text
    assert "not installed by hypd" in refused.json()["error"]["message"]

    eks.delete_addon(clusterName=cluster, addonName=addon)  # its owner removes it
    wait_until(lambda: addon not in _addons(stack, cluster), 60, what="the add-on gone")
    op = toggle(stack, cluster, {"observability": {"enabled": False}})
    assert op["status"] == "succeeded", op
    assert eks.list_pod_identity_associations(
        clusterName=cluster, namespace="hyperpod-observability")["associations"] == []
    assert f"hypd-{cluster}-observability" not in role_names(stack, cluster)
