"""cloud/dependents.py's rules, each against a cluster's objects held in memory: which pods a
node's or group's end would lose, what each managed feature's off would break, who logs to a
tracking server, what a pool serves, which workloads use a cluster's storage, and how the
in_use refusal names them and what force may override. (The network's finders run against
moto in tests/tasks/test_networks_steps.py and against the stack in
tests/app/test_dependents_api.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from cloud import dependents, inference, kube, spaces, storage, training
from cloud.dependents import Dependent, InUse

JOB_LABEL = training.JOB_LABEL


class FakeKube:
    """Objects by (apiVersion, kind), listed with the label selectors the finders use (`k=v`,
    `k`, `k in (a,b)`, comma-joined) and a namespace."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = list(objects)

    @staticmethod
    def _terms(selector: str) -> list[str]:
        """The selector's terms: split on the commas outside parentheses."""
        depth, part, parts = 0, "", []
        for char in selector:
            depth += {"(": 1, ")": -1}.get(char, 0)
            if char == "," and not depth:
                parts.append(part.strip())
                part = ""
            else:
                part += char
        return [*parts, part.strip()]

    def _matches(self, labels: dict[str, str], selector: str | None) -> bool:
        for term in self._terms(selector) if selector else ():
            if " in (" in term:
                key, values = term.split(" in (")
                if labels.get(key) not in values.rstrip(")").split(","):
                    return False
            elif "=" in term:
                key, value = term.split("=", 1)
                if labels.get(key) != value:
                    return False
            elif term not in labels:
                return False
        return True

    def list(self, api: Any, api_version: str, kind: str, namespace: str | None = None,
             label_selector: Any = None, field_selector: str | None = None
             ) -> list[dict[str, Any]]:
        if isinstance(label_selector, dict):
            label_selector = ",".join(f"{k}={v}" for k, v in label_selector.items())
        return [o for o in self.objects
                if (o["apiVersion"], o["kind"]) == (api_version, kind)
                and (namespace is None or o["metadata"].get("namespace") == namespace)
                and self._matches(o["metadata"].get("labels") or {}, label_selector)]


@pytest.fixture
def cluster(monkeypatch) -> FakeKube:
    fake = FakeKube()
    monkeypatch.setattr(kube, "list_objects", fake.list)
    monkeypatch.setattr(kube, "iter_objects", lambda *a, **k: iter(fake.list(*a, **k)))
    return fake


def pod(name: str, node: str | None = None, *, owner: str | None = None, phase: str = "Running",
        labels: dict[str, str] | None = None, namespace: str = "default",
        **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}}
    if owner:
        kind, owner_name = owner.split("/")
        meta["ownerReferences"] = [{"kind": kind, "name": owner_name, "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": node, "containers": [{"name": "main"}], **spec},
            "status": {"phase": phase}}


def node(name: str, group: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                         "labels": {"sagemaker.amazonaws.com/instance-group-name": group}}}


# -- the refusal ----------------------------------------------------------------------------------

def test_the_refusal_names_what_blocks_and_says_whether_force_may_go_ahead():
    job = Dependent("training_job", "fit", "HyperPodPyTorchJob running", namespace="default")
    other = Dependent("cluster", "b", "EKS cluster in VPC vpc-1", forceable=False)
    with pytest.raises(InUse) as refused:
        dependents.refuse("cluster a", [job])
    assert refused.value.status == 409 and refused.value.code == "in_use"
    assert refused.value.message == (
        "cluster a is in use: training job default/fit (HyperPodPyTorchJob running). Nothing "
        "was changed; stop or remove them first, or repeat the request with force=true to go "
        "ahead anyway (they break)")
    assert refused.value.details == {"target": "cluster a", "dependents": [job.view()],
                                     "total": 1, "force_allowed": True}
    dependents.refuse("cluster a", [job], force=True)  # a person's decision: goes ahead
    with pytest.raises(InUse) as still:  # force never overrides what is not forceable
        dependents.refuse("cluster a", [job, other], force=True)
    assert still.value.details["dependents"] == [other.view()]
    assert still.value.details["force_allowed"] is False
    assert "force does not override this" in still.value.message
    dependents.refuse("cluster a", [])


def test_a_long_list_is_cut_in_the_message_and_the_details():
    many = [Dependent("pod", f"p{i:03}", "x") for i in range(120)]
    with pytest.raises(InUse) as refused:
        dependents.refuse("nodes", many)
    assert refused.value.message.count("pod p") == dependents.NAMED_IN_MESSAGE
    assert "; and 115 more." in refused.value.message
    assert len(refused.value.details["dependents"]) == dependents.LISTED_MAX
    assert refused.value.details["total"] == 120


# -- pods a node's or a group's end would lose ----------------------------------------------------

def test_pods_that_would_not_come_back_elsewhere_are_named(cluster):
    cluster.objects += [
        pod("bare", "n1"),
        pod("fit-worker-0", "n1", owner="HyperPodPyTorchJob/fit", labels={JOB_LABEL: "fit"}),
        pod("web-abc", "n1", owner="ReplicaSet/web-7d"),  # moves elsewhere
        pod("pinned-abc", "n1", owner="ReplicaSet/pinned-7d",
            nodeSelector={"sagemaker.amazonaws.com/instance-group-name": "gpu"}),
        pod("here-abc", "n1", owner="ReplicaSet/here-7d",
            nodeSelector={"kubernetes.io/hostname": "n1"}),
        pod("agent", "n1", owner="DaemonSet/agent"),  # goes with its node
        pod("done", "n1", phase="Succeeded"),
        pod("elsewhere", "n2"),
    ]
    found = {d.name: d.why for d in dependents.pods_on_nodes(None, ["n1"], "gpu")}
    assert found == {
        "bare": "runs on node n1; no controller recreates it elsewhere",
        "fit-worker-0": "a pod of training job fit, running on node n1",
        "pinned-abc": "runs on instance group gpu; its ReplicaSet pinned-7d does not move it",
        "here-abc": "runs on node n1; its ReplicaSet here-7d does not move it",
    }
    assert dependents.pods_on_nodes(None, []) == []


def test_a_groups_nodes_are_found_by_its_label(cluster):
    cluster.objects += [node("n1", "gpu"), node("n2", "cpu"), node("n3", "gpu")]
    assert sorted(dependents.group_nodes(None, ["gpu"])) == ["n1", "n3"]
    assert dependents.group_nodes(None, []) == []


# -- a managed feature being turned off -----------------------------------------------------------

def _pytorch_job(name: str, condition: str, hypds: bool = True) -> dict[str, Any]:
    labels = {kube.MANAGED_BY_LABEL: kube.MANAGED_BY_VALUE} if hypds else {}
    return {"apiVersion": training.PYTORCH_API, "kind": training.PYTORCH_KIND,
            "metadata": {"name": name, "namespace": "default", "labels": labels},
            "status": {"conditions": [{"type": condition, "status": "True"}]}}


def test_the_training_operators_off_breaks_the_jobs_not_finished_whoever_made_them(cluster):
    cluster.objects += [_pytorch_job("ours", "Running"), _pytorch_job("theirs", "Created", False),
                        _pytorch_job("done", "Completed")]
    found = {d.name: d.why for d in dependents.feature_users(None, "training_operator")}
    assert found == {"ours": "HyperPodPyTorchJob running",
                     "theirs": "HyperPodPyTorchJob pending (not submitted through hypd)"}


def test_each_features_users(cluster):
    ep = inference.Endpoint(name="llm", kind=inference.MANAGED, model="m", gpus=1)
    config = {"apiVersion": inference.IEC_API, "kind": inference.IEC_KIND,
              "metadata": {"name": "llm", "namespace": "default",
                           "annotations": inference.spec_annotation(ep)}}
    foreign = {"apiVersion": inference.IEC_API, "kind": inference.IEC_KIND,
               "metadata": {"name": "byhand", "namespace": "team"}}
    cluster.objects += [
        config, foreign,
        pod("ckpt", "n1", serviceAccountName="hypd-tiered-checkpointing"),
        pod("ckpt-done", "n1", phase="Failed", serviceAccountName="hypd-tiered-checkpointing"),
        pod("queued", "n1", labels={dependents.QUEUE_LABEL: "team-a"}),
        node("n1", "workers"), pod("on-autoscaled", "n1"),
    ]
    assert [(d.kind, d.name) for d in dependents.feature_users(None, "inference_operator")] == [
        ("endpoint", "llm"), ("inferenceendpointconfig", "byhand")]
    assert [d.name for d in dependents.feature_users(None, "tiered_checkpointing")] == ["ckpt"]
    assert [(d.name, d.why) for d in dependents.feature_users(None, "task_governance")] == [
        ("queued", "admitted through Kueue queue team-a")]
    autoscaled = dependents.feature_users(None, "autoscaling", ["workers"])
    assert {d.name for d in autoscaled} == {"ckpt", "queued", "on-autoscaled"}
    assert dependents.feature_users(None, "autoscaling", []) == []
    assert dependents.feature_users(None, "observability") == []


def test_spaces_off_breaks_every_workspace_in_any_namespace(cluster):
    def workspace(name: str, namespace: str, hypds: bool = False) -> dict[str, Any]:
        labels = {kube.MANAGED_BY_LABEL: kube.MANAGED_BY_VALUE} if hypds else {}
        return {"apiVersion": spaces.API_VERSION, "kind": spaces.KIND,
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
                "spec": {"displayName": name}}

    assert dependents.feature_users(None, "spaces") == []
    cluster.objects += [workspace("zoe", "team-b"), workspace("ana", "default", hypds=True),
                        pod("not-a-space", "n1")]
    found = dependents.feature_users(None, "spaces")
    assert [(d.kind, d.namespace, d.name, d.forceable) for d in found] == [
        ("space", "default", "ana", True), ("space", "team-b", "zoe", True)]
    assert found[1].why.endswith("(not made through hypd)")
    assert not found[0].why.endswith("(not made through hypd)")
    assert [w["metadata"]["name"] for w in dependents.workspaces(None)] == ["ana", "zoe"]


# -- MLflow, pools, storage -----------------------------------------------------------------------

def test_the_jobs_logging_to_a_tracking_server_are_named_once_each(cluster):
    arn = "arn:aws:sagemaker:us-west-2:111122223333:mlflow-tracking-server/hypd-lab"

    def logging(name: str, uri: str, job: str | None = None, phase: str = "Running"):
        made = pod(name, "n1", phase=phase, labels={JOB_LABEL: job} if job else {})
        made["spec"]["containers"][0]["env"] = [{"name": "MLFLOW_TRACKING_URI", "value": uri}]
        return made

    cluster.objects += [logging("fit-0", arn, "fit"), logging("fit-1", arn, "fit"),
                        logging("notebook", arn), logging("old", arn, "old", "Succeeded"),
                        logging("elsewhere", arn + "-2", "other")]
    assert sorted((d.kind, d.name) for d in dependents.tracking_users(None, arn)) == [
        ("pod", "notebook"), ("training_job", "fit")]


def test_a_pools_models_served_now_with_their_workers(cluster):
    ep = inference.Endpoint(name="pool", kind=inference.VLLM, model="a", gpus=1,
                            service=inference.POOL, pool_models=("a", "b"))

    def worker(name: str, model: str) -> dict[str, Any]:
        return pod(name, "n1", labels={inference.ENDPOINT_LABEL: "pool",
                                       inference.ROLE_LABEL: "server",
                                       inference.MODEL_LABEL: model})

    cluster.objects += [worker("w1", "a"), worker("w2", "unassigned"), worker("w3", "a"),
                        worker("w4", "b")]
    assert [(d.name, d.why) for d in dependents.pool_assignments(None, ep)] == [
        ("a", "served by pool workers w1, w3"), ("b", "served by pool worker w4")]


def test_workloads_hypd_did_not_submit_using_the_clusters_storage(cluster, monkeypatch):
    monkeypatch.setattr(storage, "volumes", lambda api: [
        {"namespace": "default", "claim": "hypd-s3", "claim_exists": True}])
    mount = {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "hypd-s3"}}]}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "notebook", "namespace": "default"},
                  "spec": {"template": {"spec": mount}}}
    cluster.objects += [
        pod("lab", "n1", **mount),
        pod("notebook-abc", "n1", owner="ReplicaSet/notebook-7d", **mount),  # its Deployment
        pod("fit-0", "n1", labels={JOB_LABEL: "fit"}, **mount),  # hypd's job: listed as one
        pod("other-ns", "n1", namespace="team", **mount),  # another namespace's claim
        pod("no-mount", "n1"),
        deployment,
    ]
    assert sorted((d.kind, d.name, d.why) for d in dependents.storage_workloads(None)) == [
        ("deployment", "notebook", "mounts hypd-s3 (the cluster's storage)"),
        ("pod", "lab", "mounts hypd-s3 (the cluster's storage)")]


# -- a network ------------------------------------------------------------------------------------

class FakeEks:
    def __init__(self, clusters: dict[str, dict[str, Any]]) -> None:
        self.clusters = clusters

    def get_paginator(self, name: str) -> Any:
        assert name == "list_clusters"
        names = list(self.clusters)
        return type("P", (), {"paginate": lambda _self, **_: [{"clusters": names}]})()

    def describe_cluster(self, name: str) -> dict[str, Any]:
        return {"cluster": {"name": name, **self.clusters[name]}}


class FakeSageMaker:
    def __init__(self, clusters: dict[str, dict[str, Any]]) -> None:
        self.clusters = clusters

    def get_paginator(self, name: str) -> Any:
        assert name == "list_clusters"
        pages = [{"ClusterSummaries": [{"ClusterName": n} for n in self.clusters]}]
        return type("P", (), {"paginate": lambda _self, **_: pages})()

    def describe_cluster(self, ClusterName: str) -> dict[str, Any]:
        return {"ClusterName": ClusterName, "ClusterArn": f"arn:{ClusterName}",
                **self.clusters[ClusterName]}


def test_a_networks_dependents_are_every_cluster_in_it_and_the_interfaces_no_cluster_explains(
        monkeypatch):
    view = {"name": "lab", "vpc_id": "vpc-1", "subnets": [{"id": "subnet-a"}, {"id": "subnet-b"}]}
    eks = FakeEks({
        "ours": {"status": "ACTIVE", "resourcesVpcConfig": {"vpcId": "vpc-1"},
                 "tags": {"hypd:managed-by": "hypd", "hypd:cluster": "ours"}},
        "by-subnet": {"status": "CREATING", "resourcesVpcConfig": {"subnetIds": ["subnet-b"]}},
        "elsewhere": {"status": "ACTIVE", "resourcesVpcConfig": {"vpcId": "vpc-2"}},
    })
    sm = FakeSageMaker({
        "ours": {"ClusterStatus": "InService", "VpcConfig": {"Subnets": ["subnet-a"]}},
        "hp-only": {"ClusterStatus": "InService", "VpcConfig": {"Subnets": ["subnet-x"]},
                    "InstanceGroups": [{"OverrideVpcConfig": {"Subnets": ["subnet-b"]}}]},
        "hp-elsewhere": {"ClusterStatus": "InService", "VpcConfig": {"Subnets": ["subnet-z"]}},
    })
    monkeypatch.setattr("cloud.networks.foreign_interfaces", lambda ec2, name, vpc: [
        {"NetworkInterfaceId": "eni-eks", "Description": "Amazon EKS ours",
         "InterfaceType": "interface", "SubnetId": "subnet-a"},
        {"NetworkInterfaceId": "eni-stray", "Description": "", "InterfaceType": "interface",
         "SubnetId": "subnet-b", "Attachment": {"InstanceId": "i-1"}}])
    found = dependents.in_network(None, eks, sm, view)
    assert [(d.kind, d.name, d.why) for d in found] == [
        ("cluster", "ours", "EKS cluster (ACTIVE, made by hypd) in VPC vpc-1"),
        ("cluster", "by-subnet", "EKS cluster (CREATING, not made by hypd) in VPC vpc-1"),
        ("hyperpod_cluster", "hp-only",
         "HyperPod cluster (InService) with nodes in the network's subnets"),
        ("network_interface", "eni-stray", "interface in subnet subnet-b (instance i-1)")]
    assert not any(d.forceable for d in found)
    assert [d.name for d in dependents.in_network(None, eks, sm, view, interfaces=False)] == [
        "ours", "by-subnet", "hp-only"]
