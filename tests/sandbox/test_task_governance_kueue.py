"""HyperPod task governance played on the local cluster: SageMaker's compute quotas and
scheduler config (boto3 against the local AWS) become Kueue objects (the add-on's controller,
sandbox/gaps/governance_addon.py), each valid against the real Kueue v0.19.2 CRDs as a
closed schema; jobs labelled with a team's queue wait, are admitted, borrow idle capacity and
are preempted as Kueue decides (sandbox/simulator/kueue.py), seen through the cluster's API
with the kubernetes client: Workload conditions, the job's suspend flag and its pods, queue
statuses."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from sandbox.control import SandboxControl
from sandbox.kube.access import CLUSTER_ADMIN
from sandbox.local_aws import LocalAws
from tests import crdkit
from tests.sandbox.ekskit import local_api
from tests.sandbox.hyperpodkit import cluster_request, gpu_group, make_lab, wait_for
from tests.sandbox.test_pod_lifecycle import ME

KUEUE = ("kueue.x-k8s.io", "v1beta2")
GOVERNANCE = "amazon-sagemaker-hyperpod-taskgovernance"
TRAINING = "amazon-sagemaker-hyperpod-training-operator"
P5 = "ml.p5.48xlarge"  # 8 GPUs, 192 vCPUs, 2048 GiB, 32 EFA interfaces
PLURALS = {"ClusterQueue": "clusterqueues", "LocalQueue": "localqueues",
           "ResourceFlavor": "resourceflavors", "Workload": "workloads",
           "WorkloadPriorityClass": "workloadpriorityclasses"}


@dataclass
class Governed:
    """A HyperPod cluster (two p5 instances) on an EKS cluster with the task-governance and
    training-operator add-ons ACTIVE, and a kubernetes client for that cluster."""

    arn: str
    eks: str
    sm: Any
    control: SandboxControl
    api: k8s.ApiClient

    @property
    def custom(self) -> k8s.CustomObjectsApi:
        return k8s.CustomObjectsApi(self.api)

    @property
    def core(self) -> k8s.CoreV1Api:
        return k8s.CoreV1Api(self.api)

    def kueue(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        """A Kueue object read through the API, checked against its real CRD (closed)."""
        plural = PLURALS[kind]
        if namespace is None:
            obj = self.custom.get_cluster_custom_object(*KUEUE, plural, name)
        else:
            obj = self.custom.get_namespaced_custom_object(*KUEUE, namespace, plural, name)
        crdkit.validate(obj, f"kueue.x-k8s.io_{plural}.yaml", "v1beta2")
        return obj

    def eventually(self, check: Any, timeout: float = 10.0) -> Any:
        """Poll `check` after an AWS call each time (a call applies the sandbox's due timed
        changes, the governance transitions among them)."""
        return wait_for(lambda: self.sm.list_compute_quotas(MaxResults=1) is not None
                        and check(), timeout)

    def gone(self, kind: str, name: str, namespace: str | None = None) -> bool:
        try:
            self.kueue(kind, name, namespace)
        except ApiException as exc:
            return exc.status == 404
        return False


def _governed(local_aws: LocalAws, client_factory: Any, prefix: str) -> Governed:
    control = SandboxControl(local_aws.url)
    lab = make_lab(client_factory, control, prefix)
    sm, eks = client_factory("sagemaker"), client_factory("eks")
    group = gpu_group(lab, InstanceCount=2)
    group.pop("OnStartDeepHealthChecks")
    arn = sm.create_cluster(**cluster_request(lab, groups=[group]))["ClusterArn"]
    for addon in (GOVERNANCE, TRAINING):
        eks.create_addon(clusterName=lab.eks_name, addonName=addon)
    control.advance_clock(600)
    wait_for(lambda: all(eks.describe_addon(clusterName=lab.eks_name, addonName=a)["addon"][
        "status"] in ("ACTIVE", "DEGRADED") for a in (GOVERNANCE, TRAINING)))
    kubes = local_aws.app.kubes
    kubes.set_access(lab.eks_name, ME, {CLUSTER_ADMIN: {"type": "cluster"}})
    api = local_api(kubes.get(lab.eks_name))
    governed = Governed(arn, lab.eks_name, sm, control, api)
    wait_for(lambda: sum(1 for n in governed.core.list_node().items
                         if n.metadata.labels.get("node.kubernetes.io/instance-type") == P5
                         ) == 2 and sm.describe_cluster(ClusterName=arn)["ClusterStatus"]
             == "InService", timeout=20)
    return governed


@pytest.fixture(scope="module")
def objects_lab(local_aws: LocalAws, client_factory: Any) -> Governed:
    return _governed(local_aws, client_factory, "kqo")


@pytest.fixture(scope="module")
def queue_lab(local_aws: LocalAws, client_factory: Any) -> Iterator[Governed]:
    """Teams `a` and `b` (one p5 each, B may borrow all of A's), team `c` (one p5, lends and
    borrows nothing, preempts its own lower-priority tasks), priority classes."""
    lab = _governed(local_aws, client_factory, "kqq")
    lab.sm.create_cluster_scheduler_config(
        Name="policy", ClusterArn=lab.arn, SchedulerConfig={
            "PriorityClasses": [{"Name": "low", "Weight": 10}, {"Name": "medium", "Weight": 50},
                                {"Name": "high", "Weight": 90}], "FairShare": "Disabled"})
    for team, sharing, preempt in (
            ("a", {"Strategy": "LendAndBorrow", "BorrowLimit": 100}, "Never"),
            ("b", {"Strategy": "LendAndBorrow", "BorrowLimit": 100}, "Never"),
            ("c", {"Strategy": "DontLend"}, "LowerPriority")):
        lab.sm.create_compute_quota(**_quota(lab.arn, team, ResourceSharingConfig=sharing,
                                             PreemptTeamTasks=preempt))
    lab.eventually(lambda: not any(lab.gone("ClusterQueue", f"hyperpod-ns-{t}-clusterqueue")
                                   for t in "abc"))
    yield lab


def _quota(cluster: str, team: str, count: int = 1, **config: Any) -> dict[str, Any]:
    return {"Name": team, "ClusterArn": cluster, "ComputeQuotaTarget": {"TeamName": team},
            "ComputeQuotaConfig": {"ComputeQuotaResources": [
                {"InstanceType": P5, "Count": count}], **config}}


def _settled(lab: Governed, ident: str, status: str) -> None:
    wait_for(lambda: lab.sm.describe_compute_quota(ComputeQuotaId=ident)["Status"] == status)


def _resources(cq: dict[str, Any]) -> dict[str, dict[str, Any]]:
    flavor = cq["spec"]["resourceGroups"][0]["flavors"][0]
    return {r["name"]: r for r in flavor["resources"]}


def test_a_quota_and_the_scheduler_config_become_kueue_objects_and_follow_updates_and_deletes(
        objects_lab: Governed) -> None:
    lab, team = objects_lab, f"t{uuid.uuid4().hex[:6]}"
    made = lab.sm.create_compute_quota(**{
        **_quota(lab.arn, team, 2), "ComputeQuotaTarget": {"TeamName": team,
                                                            "FairShareWeight": 20}})
    ident = made["ComputeQuotaId"]
    namespace, cq_name = f"hyperpod-ns-{team}", f"hyperpod-ns-{team}-clusterqueue"
    assert lab.gone("ClusterQueue", cq_name)  # Creating: the add-on has not acted yet
    _settled(lab, ident, "Created")
    ns = lab.core.read_namespace(namespace)
    labels = ns.metadata.labels
    assert {"sagemaker.amazonaws.com/sagemaker-managed-queue": "true",
            "sagemaker.amazonaws.com/quota-allocation-id": team,
            "sagemaker.amazonaws.com/activate-quota": "Enabled"}.items() <= labels.items()
    cq = lab.kueue("ClusterQueue", cq_name)
    assert cq["metadata"]["labels"] == {"sagemaker.amazonaws.com/sagemaker-managed-queue": "true",
                                        "sagemaker.amazonaws.com/quota-allocation-id": team}
    spec = cq["spec"]
    assert spec["cohortName"] == "hyperpod-cohort"
    assert spec["fairSharing"] == {"weight": "20"}  # FairShare is Enabled by default
    assert spec["preemption"]["withinClusterQueue"] == "LowerPriority"  # the default
    assert spec["preemption"]["reclaimWithinCohort"] == "Any"
    assert spec["resourceGroups"][0]["flavors"][0]["name"] == P5
    # two p5s, in the type's nominal figures; BorrowLimit 50 (the default) of each
    assert {r: (v["nominalQuota"], v["borrowingLimit"]) for r, v in _resources(cq).items()} == {
        "cpu": ("384", "192"), "memory": ("4096Gi", "2048Gi"), "nvidia.com/gpu": ("16", "8"),
        "aws.amazon.com/neuron": ("0", "0"), "vpc.amazonaws.com/efa": ("64", "32")}
    lq = lab.kueue("LocalQueue", f"hyperpod-ns-{team}-localqueue", namespace)
    assert lq["spec"]["clusterQueue"] == cq_name
    assert lq["metadata"]["labels"]["sagemaker.amazonaws.com/quota-allocation-id"] == team
    flavor = lab.kueue("ResourceFlavor", P5)
    assert flavor["spec"]["nodeLabels"] == {"node.kubernetes.io/instance-type": P5}
    assert lab.kueue("ClusterQueue", cq_name)["status"]["conditions"][0]["type"] == "Active"

    config = lab.sm.create_cluster_scheduler_config(
        Name="policy", ClusterArn=lab.arn, SchedulerConfig={
            "PriorityClasses": [{"Name": "training", "Weight": 80}], "FairShare": "Enabled"})
    wait_for(lambda: lab.sm.describe_cluster_scheduler_config(ClusterSchedulerConfigId=config[
        "ClusterSchedulerConfigId"])["Status"] == "Created")
    wpc = lab.kueue("WorkloadPriorityClass", "training-priority")
    assert wpc["value"] == 80

    lab.sm.update_compute_quota(
        ComputeQuotaId=ident, TargetVersion=1, ActivationState="Disabled",
        ComputeQuotaConfig={"ComputeQuotaResources": [{"InstanceType": P5, "Count": 1}],
                            "ResourceSharingConfig": {"Strategy": "DontLend"},
                            "PreemptTeamTasks": "Never"})
    assert _resources(lab.kueue("ClusterQueue", cq_name))["nvidia.com/gpu"][
        "nominalQuota"] == "16"  # Updating: still the version before
    _settled(lab, ident, "Updated")
    cq = lab.kueue("ClusterQueue", cq_name)
    assert {r: (v["nominalQuota"], v["borrowingLimit"], v.get("lendingLimit"))
            for r, v in _resources(cq).items()}["nvidia.com/gpu"] == ("8", "0", "0")
    assert cq["spec"]["preemption"]["withinClusterQueue"] == "Never"
    assert cq["spec"]["stopPolicy"] == "Hold"
    assert lab.core.read_namespace(namespace).metadata.labels[
        "sagemaker.amazonaws.com/activate-quota"] == "Disabled"

    lab.sm.delete_compute_quota(ComputeQuotaId=ident)
    assert not lab.gone("ClusterQueue", cq_name)  # Deleting: still there
    lab.eventually(lambda: lab.gone("ClusterQueue", cq_name))
    assert lab.gone("LocalQueue", f"hyperpod-ns-{team}-localqueue", namespace)
    assert lab.gone("ResourceFlavor", P5)  # no quota names the type any more
    lab.sm.delete_cluster_scheduler_config(
        ClusterSchedulerConfigId=config["ClusterSchedulerConfigId"])
    lab.eventually(lambda: lab.gone("WorkloadPriorityClass", "training-priority"))
