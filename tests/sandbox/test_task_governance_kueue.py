"""HyperPod task governance played on the local cluster: SageMaker's compute quotas and
scheduler config (boto3 against the local AWS) become Kueue objects (the add-on's controller,
sandbox/gaps/governance_addon.py), each valid against the real Kueue v0.19.2 CRDs as a
closed schema; jobs labelled with a team's queue wait, are admitted, borrow idle capacity and
are preempted as Kueue decides (sandbox/simulator/kueue.py), seen through the cluster's API
with the kubernetes client: Workload conditions, the job's suspend flag and its pods, queue
statuses."""

from __future__ import annotations

import copy
import hashlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from cloud.dependencies import MANIFEST_DIR
from sandbox.control import SandboxControl
from sandbox.gaps.eks_addons import BY_NAME, CRD_DIR
from sandbox.kube.access import CLUSTER_ADMIN
from sandbox.local_aws import LocalAws
from sandbox.simulator.kueue_jobs import INTEGRATIONS
from tests import crdkit
from tests.sandbox.ekskit import local_api
from tests.sandbox.hyperpodkit import cluster_request, gpu_group, make_lab, wait_for
from tests.sandbox.test_pod_lifecycle import ME

KUEUE = ("kueue.x-k8s.io", "v1beta2")
HPJ = ("sagemaker.amazonaws.com", "v1", "hyperpodpytorchjobs")
RAY = ("ray.io", "v1", "rayjobs")
KINDS = {"HyperPodPyTorchJob": HPJ, "RayJob": RAY}
RAY_IMAGE = "rayproject/ray:2.9.0"
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
    training: Any  # the local AWS's TrainingBook: how long training containers run

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


def _governed(local_aws: LocalAws, client_factory: Any, prefix: str,
              addons: tuple[str, ...] = (GOVERNANCE, TRAINING)) -> Governed:
    control = SandboxControl(local_aws.url)
    lab = make_lab(client_factory, control, prefix)
    sm, eks = client_factory("sagemaker"), client_factory("eks")
    group = gpu_group(lab, InstanceCount=2)
    group.pop("OnStartDeepHealthChecks")
    arn = sm.create_cluster(**cluster_request(lab, groups=[group]))["ClusterArn"]
    for addon in addons:
        eks.create_addon(clusterName=lab.eks_name, addonName=addon)
    control.advance_clock(600)
    wait_for(lambda: all(eks.describe_addon(clusterName=lab.eks_name, addonName=a)["addon"][
        "status"] in ("ACTIVE", "DEGRADED") for a in addons))
    kubes = local_aws.app.kubes
    kubes.set_access(lab.eks_name, ME, {CLUSTER_ADMIN: {"type": "cluster"}})
    api = local_api(kubes.get(lab.eks_name))
    governed = Governed(arn, lab.eks_name, sm, control, api, local_aws.app.training)
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
    """Teams `a` and `b` (one p5 each, B may borrow all of A's), teams `c` and `d` (one p5
    each, lend and borrow nothing, preempt their own lower-priority tasks), priority
    classes. Each test deletes the jobs it made (the cluster has two p5 nodes)."""
    lab = _governed(local_aws, client_factory, "kqq")
    lab.sm.create_cluster_scheduler_config(
        Name="policy", ClusterArn=lab.arn, SchedulerConfig={
            "PriorityClasses": [{"Name": "low", "Weight": 10}, {"Name": "medium", "Weight": 50},
                                {"Name": "high", "Weight": 90}], "FairShare": "Disabled"})
    for team, sharing, preempt in (
            ("a", {"Strategy": "LendAndBorrow", "BorrowLimit": 100}, "Never"),
            ("b", {"Strategy": "LendAndBorrow", "BorrowLimit": 100}, "Never"),
            ("c", {"Strategy": "DontLend"}, "LowerPriority"),
            ("d", {"Strategy": "DontLend"}, "LowerPriority")):
        lab.sm.create_compute_quota(**_quota(lab.arn, team, ResourceSharingConfig=sharing,
                                             PreemptTeamTasks=preempt))
    lab.eventually(lambda: not any(lab.gone("ClusterQueue", f"hyperpod-ns-{t}-clusterqueue")
                                   for t in "abcd"))
    yield lab


@pytest.fixture(scope="module")
def kuberay(queue_lab: Governed) -> Governed:
    """The queue lab with KubeRay's RayJob CRD (v1.7.0, the one hypd installs, as a closed
    schema with its defaults) put in through the API: the sandbox's KubeRay runs RayJobs."""
    crd = yaml.load((MANIFEST_DIR / "kuberay-crds" / "ray.io_rayjobs.yaml").read_text(),
                    Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    k8s.ApiextensionsV1Api(queue_lab.api).create_custom_resource_definition(crd)
    return queue_lab


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
    config_id = config["ClusterSchedulerConfigId"]
    lab.sm.update_cluster_scheduler_config(
        ClusterSchedulerConfigId=config_id, TargetVersion=1, SchedulerConfig={
            "PriorityClasses": [{"Name": "inference", "Weight": 100}], "FairShare": "Disabled"})
    wait_for(lambda: lab.sm.describe_cluster_scheduler_config(
        ClusterSchedulerConfigId=config_id)["Status"] == "Updated")
    assert lab.kueue("WorkloadPriorityClass", "inference-priority")["value"] == 100
    assert lab.gone("WorkloadPriorityClass", "training-priority")
    assert "fairSharing" not in lab.kueue("ClusterQueue", cq_name)["spec"]  # FairShare off

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
    lab.eventually(lambda: lab.gone("WorkloadPriorityClass", "inference-priority"))


def _job(name: str, team: str | None, replicas: int, gpus: int = 8,
         priority: str | None = None, queue: str | None = None) -> dict[str, Any]:
    """A HyperPodPyTorchJob as hypd submits it to a team's queue: `replicas` pods of `gpus`
    GPUs each, on p5 nodes."""
    labels = {"kueue.x-k8s.io/queue-name": queue or f"hyperpod-ns-{team}-localqueue"}
    if priority:
        labels["kueue.x-k8s.io/priority-class"] = f"{priority}-priority"
    container = {"name": "pytorch", "image": "pytorch/pytorch:latest",
                 "command": ["hyperpodrun", "train.py"],
                 "resources": {"requests": {"nvidia.com/gpu": str(gpus)},
                               "limits": {"nvidia.com/gpu": str(gpus)}}}
    return {"apiVersion": "sagemaker.amazonaws.com/v1", "kind": "HyperPodPyTorchJob",
            "metadata": {"name": name, "labels": labels},
            "spec": {"nprocPerNode": str(gpus), "replicaSpecs": [{
                "name": "pods", "replicas": replicas,
                "template": {"spec": {"nodeSelector": {"node.kubernetes.io/instance-type": P5},
                                      "containers": [container],
                                      "restartPolicy": "OnFailure"}}}],
                     "runPolicy": {"jobMaxRetryCount": 3}}}


def _ray_job(name: str, team: str, workers: int, gpus: int = 8,
             priority: str | None = None) -> dict[str, Any]:
    """A RayJob as hypd submits it to a team's queue: a head without GPUs and one worker
    group `gpu` of `workers` pods of `gpus` GPUs each, on p5 nodes, the cluster shut down when
    the job ends (Kueue requires it of a queued RayJob)."""
    labels = {"kueue.x-k8s.io/queue-name": f"hyperpod-ns-{team}-localqueue"}
    if priority:
        labels["kueue.x-k8s.io/priority-class"] = f"{priority}-priority"
    on_p5 = {"node.kubernetes.io/instance-type": P5}
    gpu = {"requests": {"nvidia.com/gpu": str(gpus)}, "limits": {"nvidia.com/gpu": str(gpus)}}
    head = {"spec": {"nodeSelector": on_p5,
                     "containers": [{"name": "ray-head", "image": RAY_IMAGE}]}}
    worker = {"spec": {"nodeSelector": on_p5, "containers": [
        {"name": "ray-worker", "image": RAY_IMAGE, "resources": gpu}]}}
    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": name, "labels": labels},
            "spec": {"entrypoint": "python -m verl.trainer.main_ppo",
                     "shutdownAfterJobFinishes": True,
                     "rayClusterSpec": {
                         "headGroupSpec": {"rayStartParams": {}, "template": head},
                         "workerGroupSpecs": [{
                             "groupName": "gpu", "replicas": workers, "minReplicas": workers,
                             "maxReplicas": workers, "rayStartParams": {},
                             "template": worker}]}}}


def _submit(lab: Governed, namespace: str, job: dict[str, Any], steps: int = 100000
            ) -> dict[str, Any]:
    """Create the job; its training containers print `steps` lines, one a simulated second
    (the default: until the test deletes it)."""
    lab.training.configure({"job": job["metadata"]["name"], "steps": steps,
                            "lines_per_second": 1})
    return lab.custom.create_namespaced_custom_object(
        *KINDS[job["kind"]][:2], namespace, KINDS[job["kind"]][2], job)


def _delete(lab: Governed, namespace: str, *jobs: str, kind: tuple[str, ...] = HPJ) -> None:
    for job in jobs:
        lab.custom.delete_namespaced_custom_object(*kind[:2], namespace, kind[2], job)


def _read_job(lab: Governed, namespace: str, name: str, kind: tuple[str, ...] = HPJ
              ) -> dict[str, Any]:
    return lab.custom.get_namespaced_custom_object(*kind[:2], namespace, kind[2], name)


def _workload(lab: Governed, namespace: str, job: str, kind: tuple[str, ...] = HPJ
              ) -> dict[str, Any] | None:
    """The job's Workload, found as a product would: by the job-uid label Kueue sets."""
    uid = _read_job(lab, namespace, job, kind)["metadata"]["uid"]
    found = lab.custom.list_namespaced_custom_object(
        *KUEUE, namespace, "workloads", label_selector=f"kueue.x-k8s.io/job-uid={uid}")["items"]
    if not found:
        return None
    return lab.kueue("Workload", found[0]["metadata"]["name"], namespace)


def _condition(wl: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    return next((c for c in ((wl or {}).get("status") or {}).get("conditions") or []
                 if c["type"] == kind), {})


def _admitted(lab: Governed, namespace: str, job: str, kind: tuple[str, ...] = HPJ
              ) -> dict[str, Any]:
    return wait_for(lambda: (lambda wl: wl if _condition(wl, "Admitted").get("status") == "True"
                             else None)(_workload(lab, namespace, job, kind)), 15)


def _running_pods(lab: Governed, namespace: str, job: str) -> list[Any]:
    pods = lab.core.list_namespaced_pod(namespace, label_selector=f"HPJob={job}").items
    return pods if pods and all(p.status.phase == "Running" for p in pods) else []


def _suspended(lab: Governed, namespace: str, job: str) -> bool:
    return bool(_read_job(lab, namespace, job)["spec"]["runPolicy"].get("suspend"))


def _usage(status: dict[str, Any], resource: str = "nvidia.com/gpu") -> dict[str, str]:
    flavor = next(f for f in status["flavorsUsage"] if f["name"] == P5)
    return next(r for r in flavor["resources"] if r["name"] == resource)


def test_b_borrows_a_s_idle_capacity_and_is_preempted_when_a_needs_it_back(
        queue_lab: Governed) -> None:
    lab = queue_lab
    ns_a, ns_b = "hyperpod-ns-a", "hyperpod-ns-b"
    big, mine = f"b-{uuid.uuid4().hex[:5]}", f"a-{uuid.uuid4().hex[:5]}"
    # B asks for two p5s' GPUs (16) with a quota of one: it borrows A's idle 8
    made = _submit(lab, ns_b, _job(big, "b", replicas=2, priority="high"))
    wl_b = _admitted(lab, ns_b, big)
    assert wl_b["status"]["admission"]["clusterQueue"] == "hyperpod-ns-b-clusterqueue"
    assert wl_b["metadata"]["ownerReferences"][0]["uid"] == made["metadata"]["uid"]
    assert wl_b["spec"]["priority"] == 90 and wl_b["spec"]["priorityClassRef"]["name"] == \
        "high-priority"
    assert _condition(wl_b, "QuotaReserved")["message"] == \
        "Quota reserved in ClusterQueue hyperpod-ns-b-clusterqueue"
    assert not _suspended(lab, ns_b, big)
    assert len(wait_for(lambda: _running_pods(lab, ns_b, big), 20)) == 2
    cq_b = lab.kueue("ClusterQueue", "hyperpod-ns-b-clusterqueue")["status"]
    assert (cq_b["admittedWorkloads"], cq_b["pendingWorkloads"]) == (1, 0)
    assert _usage(cq_b) == {"name": "nvidia.com/gpu", "total": "16", "borrowed": "8"}

    # A submits work its own quota covers: Kueue reclaims the lent GPUs, whatever B's priority
    urgent = _submit(lab, ns_a, _job(mine, "a", replicas=1, priority="low"))
    wl_a = _admitted(lab, ns_a, mine)
    assert len(wait_for(lambda: _running_pods(lab, ns_a, mine), 20)) == 1
    wl_b = _workload(lab, ns_b, big)
    evicted, preempted = _condition(wl_b, "Evicted"), _condition(wl_b, "Preempted")
    assert (evicted["status"], evicted["reason"]) == ("True", "Preempted")
    assert (preempted["status"], preempted["reason"]) == ("True", "InCohortReclamation")
    assert evicted["message"] == (
        f"Preempted to accommodate a workload (UID: {wl_a['metadata']['uid']}, JobUID: "
        f"{urgent['metadata']['uid']}) due to reclamation within the cohort; preemptor path: "
        "/hyperpod-cohort/hyperpod-ns-a-clusterqueue; preemptee path: "
        "/hyperpod-cohort/hyperpod-ns-b-clusterqueue")
    assert _condition(wl_b, "QuotaReserved")["status"] == "False"
    assert _condition(wl_b, "Admitted")["status"] == "False"
    assert "admission" not in wl_b["status"]
    # the job is held again and its pods are gone
    assert _suspended(lab, ns_b, big)
    wait_for(lambda: not lab.core.list_namespaced_pod(ns_b, label_selector=f"HPJob={big}").items)
    job_b = _read_job(lab, ns_b, big)
    assert any(c["type"] == "Suspended" and c["status"] == "True"
               for c in job_b["status"]["conditions"])
    # and the job's events tell its story as Kueue records it
    events = {e.reason: e.message for e in lab.core.list_namespaced_event(
        ns_b, field_selector=f"involvedObject.name={big}").items}
    assert events["CreatedWorkload"] == f"Created Workload: {ns_b}/{wl_b['metadata']['name']}"
    assert events["Started"] == "Admitted by clusterQueue hyperpod-ns-b-clusterqueue"
    assert events["Stopped"] == evicted["message"]
    # it waits for quota, in Kueue's words, while A's runs within A's quota
    wait_for(lambda: "insufficient unused quota for nvidia.com/gpu in flavor ml.p5.48xlarge"
             in _condition(_workload(lab, ns_b, big), "QuotaReserved").get("message", ""))
    cq_a = lab.kueue("ClusterQueue", "hyperpod-ns-a-clusterqueue")["status"]
    assert _usage(cq_a) == {"name": "nvidia.com/gpu", "total": "8", "borrowed": "0"}
    cq_b = lab.kueue("ClusterQueue", "hyperpod-ns-b-clusterqueue")["status"]
    assert (cq_b["admittedWorkloads"], cq_b["pendingWorkloads"]) == (0, 1)
    lq_b = lab.kueue("LocalQueue", "hyperpod-ns-b-localqueue", ns_b)["status"]
    assert (lq_b["admittedWorkloads"], lq_b["pendingWorkloads"]) == (0, 1)
    lq_a = lab.kueue("LocalQueue", "hyperpod-ns-a-localqueue", ns_a)["status"]
    assert (lq_a["admittedWorkloads"], lq_a["reservingWorkloads"]) == (1, 1)

    # A's job goes: B is admitted again, and the old eviction reads as history
    _delete(lab, ns_a, mine)
    wl_b = _admitted(lab, ns_b, big)
    assert _condition(wl_b, "Evicted")["status"] == "False"
    assert _condition(wl_b, "Evicted")["message"].startswith("Previously: Preempted to")
    _delete(lab, ns_b, big)


def test_within_a_team_the_lowest_priority_task_is_preempted_first(queue_lab: Governed) -> None:
    lab, ns = queue_lab, "hyperpod-ns-c"  # C: one p5, lends and borrows nothing
    tag = uuid.uuid4().hex[:5]
    low, medium, high = f"low-{tag}", f"medium-{tag}", f"high-{tag}"
    _submit(lab, ns, _job(medium, "c", replicas=1, gpus=4, priority="medium"))
    _admitted(lab, ns, medium)
    _submit(lab, ns, _job(low, "c", replicas=1, gpus=4, priority="low"))
    _admitted(lab, ns, low)
    cq = lab.kueue("ClusterQueue", "hyperpod-ns-c-clusterqueue")["status"]
    assert _usage(cq) == {"name": "nvidia.com/gpu", "total": "8", "borrowed": "0"}
    made = _submit(lab, ns, _job(high, "c", replicas=1, gpus=4, priority="high"))
    wl_high = _admitted(lab, ns, high)
    wl_low, wl_medium = _workload(lab, ns, low), _workload(lab, ns, medium)
    preempted = _condition(wl_low, "Preempted")
    assert (preempted["status"], preempted["reason"]) == ("True", "InClusterQueue")
    assert preempted["message"].startswith(
        f"Preempted to accommodate a workload (UID: {wl_high['metadata']['uid']}, JobUID: "
        f"{made['metadata']['uid']}) due to prioritization in the ClusterQueue")
    assert _condition(wl_medium, "Admitted")["status"] == "True"
    assert _condition(wl_medium, "Evicted") == {}
    assert _suspended(lab, ns, low) and not _suspended(lab, ns, medium)
    # the high-priority task goes: the preempted one is admitted again
    _delete(lab, ns, high)
    _admitted(lab, ns, low)
    _delete(lab, ns, low, medium)


def test_a_job_naming_a_queue_that_does_not_exist_waits_suspended_with_kueue_s_reason(
        queue_lab: Governed) -> None:
    lab, ns = queue_lab, "hyperpod-ns-a"
    name = f"lost-{uuid.uuid4().hex[:5]}"
    _submit(lab, ns, _job(name, None, replicas=1, queue="nowhere-localqueue"))
    wl = wait_for(lambda: (lambda w: w if _condition(w, "QuotaReserved") else None)(
        _workload(lab, ns, name)))
    reserved = _condition(wl, "QuotaReserved")
    assert (reserved["status"], reserved["reason"], reserved["message"]) == (
        "False", "Inadmissible", "LocalQueue nowhere-localqueue doesn't exist")
    assert _suspended(lab, ns, name)
    assert not lab.core.list_namespaced_pod(ns, label_selector=f"HPJob={name}").items
    # a queue nobody governs is not counted on any team's queue
    lq = lab.kueue("LocalQueue", "hyperpod-ns-a-localqueue", ns)["status"]
    assert lq["pendingWorkloads"] == 0
    _delete(lab, ns, name)


def test_a_finished_job_gives_its_quota_back_and_a_queued_batch_job_waits_for_it(
        queue_lab: Governed) -> None:
    lab, ns = queue_lab, "hyperpod-ns-d"  # D: one p5 (8 GPUs), DontLend
    tag = uuid.uuid4().hex[:5]
    first = f"short-{tag}"
    _submit(lab, ns, _job(first, "d", replicas=1), steps=3000)  # ~3 s at the tests' speed
    _admitted(lab, ns, first)
    batch = k8s.BatchV1Api(lab.api)
    container = {"name": "main", "image": "busybox", "command": ["true"],
                 "resources": {"requests": {"nvidia.com/gpu": "8"},
                               "limits": {"nvidia.com/gpu": "8"}}}
    batch.create_namespaced_job(ns, {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": f"etl-{tag}",
                     "labels": {"kueue.x-k8s.io/queue-name": "hyperpod-ns-d-localqueue"}},
        "spec": {"template": {"spec": {
            "nodeSelector": {"node.kubernetes.io/instance-type": P5},
            "containers": [container], "restartPolicy": "Never"}}}})
    # the Job waits, suspended, for the GPUs the training job holds
    uid = batch.read_namespaced_job(f"etl-{tag}", ns).metadata.uid

    def etl() -> dict[str, Any] | None:
        found = lab.custom.list_namespaced_custom_object(
            *KUEUE, ns, "workloads", label_selector=f"kueue.x-k8s.io/job-uid={uid}")["items"]
        return lab.kueue("Workload", found[0]["metadata"]["name"], ns) if found else None

    wait_for(lambda: _condition(etl(), "QuotaReserved").get("reason") == "Pending", 2)
    assert etl()["metadata"]["name"].startswith(f"job-etl-{tag}-")
    assert batch.read_namespaced_job(f"etl-{tag}", ns).spec.suspend is True
    # the training job completes: its Workload is Finished and the Job gets the quota
    done = wait_for(lambda: (lambda wl: wl if _condition(wl, "Finished").get("status") == "True"
                             else None)(_workload(lab, ns, first)), 20)
    assert _condition(done, "Finished")["reason"] == "Succeeded"
    wait_for(lambda: _condition(etl(), "Admitted").get("status") == "True")
    assert batch.read_namespaced_job(f"etl-{tag}", ns).spec.suspend is False
    # it runs (its container exits at once) and finishes too: the queue is empty again
    wait_for(lambda: _condition(etl(), "Finished").get("reason") == "Succeeded")
    assert batch.read_namespaced_job(f"etl-{tag}", ns).status.succeeded == 1
    cq = lab.kueue("ClusterQueue", "hyperpod-ns-d-clusterqueue")["status"]
    assert (cq["admittedWorkloads"], cq["pendingWorkloads"], _usage(cq)["total"]) == (0, 0, "0")
    batch.delete_namespaced_job(f"etl-{tag}", ns, propagation_policy="Background")
    _delete(lab, ns, first)


def _ray_pods(lab: Governed, namespace: str, job: str) -> list[Any]:
    return lab.core.list_namespaced_pod(
        namespace, label_selector=f"ray.io/originated-from-cr-name={job}").items


def _ray_status(lab: Governed, namespace: str, job: str, deployment: str) -> dict[str, Any]:
    """The RayJob's status once KubeRay's `jobDeploymentStatus` reads `deployment`."""
    return wait_for(lambda: (lambda st: st if st.get("jobDeploymentStatus") == deployment
                             else None)(_read_job(lab, namespace, job, RAY).get("status") or {}),
                    20)


def test_a_queued_rayjob_waits_suspended_runs_once_admitted_and_is_suspended_when_preempted(
        kuberay: Governed) -> None:
    lab, ns = kuberay, "hyperpod-ns-c"  # C: one p5 (8 GPUs), lends and borrows nothing
    tag = uuid.uuid4().hex[:5]
    holder, ray, urgent = f"holder-{tag}", f"rl-{tag}", f"urgent-{tag}"
    _submit(lab, ns, _job(holder, "c", replicas=1, priority="high"))
    _admitted(lab, ns, holder)
    made = _submit(lab, ns, _ray_job(ray, "c", workers=1, priority="low"))
    # C's GPUs are taken: the RayJob waits, suspended, without a Ray cluster
    wl = wait_for(lambda: (lambda w: w if _condition(w, "QuotaReserved").get("reason")
                           == "Pending" else None)(_workload(lab, ns, ray, RAY)))
    assert _condition(wl, "QuotaReserved")["message"] == (
        "couldn't assign flavors to pod set gpu: insufficient unused quota for nvidia.com/gpu "
        "in flavor ml.p5.48xlarge, 8 more needed")
    assert wl["metadata"]["name"].startswith(f"rayjob-{ray}-")
    owner = wl["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "RayJob", ray, made["metadata"]["uid"], True)
    # Kueue's pod sets of a RayJob: the head, each worker group, the K8sJobMode submitter
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [
        ("head", 1), ("gpu", 1), ("submitter", 1)]
    submitter = wl["spec"]["podSets"][2]["template"]["spec"]["containers"][0]
    assert (submitter["name"], submitter["image"], submitter["resources"]["requests"]) == (
        "ray-job-submitter", RAY_IMAGE, {"cpu": "500m", "memory": "200Mi"})
    assert _read_job(lab, ns, ray, RAY)["spec"]["suspend"] is True
    assert _ray_status(lab, ns, ray, "Suspended").get("jobStatus") is None
    assert not _ray_pods(lab, ns, ray)

    # the holder goes: the RayJob is admitted, unsuspended, and its Ray cluster runs
    _delete(lab, ns, holder)
    wl = _admitted(lab, ns, ray, RAY)
    assert [(a["name"], a["count"], a["resourceUsage"].get("nvidia.com/gpu"))
            for a in wl["status"]["admission"]["podSetAssignments"]] == [
        ("head", 1, None), ("gpu", 1, "8"), ("submitter", 1, None)]
    assert _read_job(lab, ns, ray, RAY)["spec"]["suspend"] is False
    running = _ray_status(lab, ns, ray, "Running")
    assert (running["jobStatus"], running["rayClusterName"]) == ("RUNNING", f"{ray}-raycluster")
    assert sorted(p.metadata.name for p in _ray_pods(lab, ns, ray)) == [
        f"{ray}-gpu-worker-0", f"{ray}-head"]

    # a high-priority job of the same team preempts it: suspended again, its cluster gone
    preemptor = _submit(lab, ns, _job(urgent, "c", replicas=1, priority="high"))
    wl_urgent = _admitted(lab, ns, urgent)
    wl = _workload(lab, ns, ray, RAY)
    evicted, preempted = _condition(wl, "Evicted"), _condition(wl, "Preempted")
    assert (evicted["status"], preempted["status"], preempted["reason"]) == (
        "True", "True", "InClusterQueue")
    assert preempted["message"].startswith(
        f"Preempted to accommodate a workload (UID: {wl_urgent['metadata']['uid']}, JobUID: "
        f"{preemptor['metadata']['uid']}) due to prioritization in the ClusterQueue")
    assert _read_job(lab, ns, ray, RAY)["spec"]["suspend"] is True
    suspended = _ray_status(lab, ns, ray, "Suspended")
    assert not {"jobStatus", "rayClusterName", "jobId", "message"} & set(suspended)
    wait_for(lambda: not _ray_pods(lab, ns, ray))
    events = {e.reason: e.message for e in lab.core.list_namespaced_event(
        ns, field_selector=f"involvedObject.name={ray}").items}
    assert events["CreatedWorkload"] == f"Created Workload: {ns}/{wl['metadata']['name']}"
    assert events["Started"] == "Admitted by clusterQueue hyperpod-ns-c-clusterqueue"
    assert events["Stopped"] == evicted["message"]

    # the preemptor goes: the RayJob starts again as a new job, finishes, and frees the quota
    lab.training.configure({"job": ray, "steps": 2000, "lines_per_second": 1})  # ~2 s
    _delete(lab, ns, urgent)
    _admitted(lab, ns, ray, RAY)
    done = wait_for(lambda: (lambda w: w if _condition(w, "Finished").get("status") == "True"
                             else None)(_workload(lab, ns, ray, RAY)), 20)
    finished = _condition(done, "Finished")
    assert (finished["reason"], finished["message"]) == ("Succeeded", "Job finished successfully.")
    complete = _ray_status(lab, ns, ray, "Complete")
    assert complete["jobStatus"] == "SUCCEEDED"
    cq = lab.kueue("ClusterQueue", "hyperpod-ns-c-clusterqueue")["status"]
    assert (cq["admittedWorkloads"], _usage(cq)["total"]) == (0, "0")
    _delete(lab, ns, ray, kind=RAY)


def test_a_rayjob_s_pod_sets_follow_its_worker_groups_and_submission_mode() -> None:
    """Kueue v0.19.2's rayjob integration (pure: what the Workload's podSets would be)."""
    ray = next(i for i in INTEGRATIONS if i.plural == "rayjobs")
    job = _ray_job("rl", "c", workers=2)
    groups = job["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    groups.append({**copy.deepcopy(groups[0]), "groupName": "Rollout", "numOfHosts": 2})
    del groups[1]["replicas"]  # unset: Kueue counts 1 replica, times its hosts

    def shape(sets: list[dict[str, Any]]) -> list[tuple[str, int, list[str]]]:
        return [(p["name"], p["count"], [c["name"] for c in p["template"]["spec"]["containers"]])
                for p in sets]

    assert shape(ray.pod_sets(job)) == [
        ("head", 1, ["ray-head"]), ("gpu", 2, ["ray-worker"]), ("rollout", 2, ["ray-worker"]),
        ("submitter", 1, ["ray-job-submitter"])]
    job["spec"]["submitterPodTemplate"] = {"spec": {"containers": [
        {"name": "submit", "image": RAY_IMAGE}], "restartPolicy": "Never"}}
    assert shape(ray.pod_sets(job))[-1] == ("submitter", 1, ["submit"])
    job["spec"]["submissionMode"] = "SidecarMode"  # the submitter runs in the head pod
    assert shape(ray.pod_sets(job))[0] == ("head", 1, ["ray-head", "ray-job-submitter"])
    assert [p["name"] for p in ray.pod_sets(job)] == ["head", "gpu", "rollout"]
    job["spec"]["submissionMode"] = "HTTPMode"
    assert shape(ray.pod_sets(job))[0] == ("head", 1, ["ray-head"])
    assert len(ray.pod_sets(job)) == 3
    assert ray.finished(job) is None
    job["status"] = {"jobDeploymentStatus": "Failed", "jobStatus": "FAILED", "message": "boom"}
    assert ray.finished(job) == (False, "boom")


def test_the_kueue_crds_the_add_on_installs_are_upstream_s_unchanged() -> None:
    """kubernetes-sigs/kueue v0.19.2 `config/components/crd/bases/` (SOURCES.md there)."""
    blobs = {"clusterqueues": "a605e10a33050f30a5a31a5240444216a2a4f553",
             "localqueues": "379c64452ad090fa12861c24aad7f102d0118a5f",
             "resourceflavors": "6c3216d8ce5f59a77dcee45e3697bc110a249df9",
             "workloadpriorityclasses": "75c01e1ac63cc3f885437334dccb168364c6ed94",
             "workloads": "fc1fd767332d555e72b6330017309d7d9f8ff79d"}
    for plural, blob in blobs.items():
        data = (CRD_DIR / f"kueue.x-k8s.io_{plural}.yaml").read_bytes()
        assert hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == blob, plural
    installed = {c.plural: c for c in BY_NAME[GOVERNANCE].crds}
    assert set(installed) == set(blobs)
    assert all(c.manifest()["spec"]["names"]["plural"] == p for p, c in installed.items())


def test_quotas_act_on_the_cluster_only_once_the_add_on_is_active(
        local_aws: LocalAws, client_factory: Any) -> None:
    lab = _governed(local_aws, client_factory, "kqn", addons=())
    ident = lab.sm.create_compute_quota(**_quota(lab.arn, "early"))["ComputeQuotaId"]
    _settled(lab, ident, "Created")
    with pytest.raises(ApiException) as missing:  # no add-on: no Kueue at all
        lab.custom.list_cluster_custom_object(*KUEUE, "clusterqueues")
    assert missing.value.status == 404
    eks = client_factory("eks")
    eks.create_addon(clusterName=lab.eks, addonName=GOVERNANCE)  # ACTIVE 90 s later
    lab.control.advance_clock(90)
    lab.eventually(lambda: not lab.gone("ClusterQueue", "hyperpod-ns-early-clusterqueue"))
    assert lab.kueue("LocalQueue", "hyperpod-ns-early-localqueue", "hyperpod-ns-early")[
        "spec"]["clusterQueue"] == "hyperpod-ns-early-clusterqueue"


def _deployment(name: str, team: str, replicas: int, gpus: int = 8) -> dict[str, Any]:
    """A Deployment whose pods carry a team's queue label, as the jupyter-k8s operator makes a
    team's Dev space (it copies the Workspace's labels to the pod template): `replicas` pods
    of `gpus` GPUs each, on p5 nodes."""
    labels = {"app": name, "kueue.x-k8s.io/queue-name": f"hyperpod-ns-{team}-localqueue"}
    container = {"name": "workspace", "image": "busybox", "command": ["sleep", "infinity"],
                 "resources": {"requests": {"nvidia.com/gpu": str(gpus)},
                               "limits": {"nvidia.com/gpu": str(gpus)}}}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "nodeSelector": {"node.kubernetes.io/instance-type": P5},
                         "containers": [container]}}}}


def _pods_of(lab: Governed, namespace: str, app: str) -> list[Any]:
    return [p for p in lab.core.list_namespaced_pod(namespace, label_selector=f"app={app}").items
            if p.metadata.deletion_timestamp is None]


def _pod_workload(lab: Governed, namespace: str, pod: Any) -> dict[str, Any] | None:
    found = lab.custom.list_namespaced_custom_object(
        *KUEUE, namespace, "workloads",
        label_selector=f"kueue.x-k8s.io/job-uid={pod.metadata.uid}")["items"]
    return lab.kueue("Workload", found[0]["metadata"]["name"], namespace) if found else None


def test_a_deployment_s_pods_are_gated_queued_one_by_one_and_preempted_by_deletion(
        queue_lab: Governed) -> None:
    """Kueue's deployment (plain pod) integration: each pod of a Deployment labelled with a
    team's queue is created gated (`kueue.x-k8s.io/admission`), gets a Workload of its own
    (`pod-<pod>-<hash>`, owned by the pod), and is let go to the scheduler once admitted; B's
    second pod borrows A's idle p5; A's own pod reclaims it: B's borrowed pod is deleted and
    its replacement waits, gated, for quota."""
    lab = queue_lab
    ns_a, ns_b = "hyperpod-ns-a", "hyperpod-ns-b"
    tag = uuid.uuid4().hex[:5]
    wide, mine = f"b-{tag}", f"a-{tag}"
    apps = k8s.AppsV1Api(lab.api)
    apps.create_namespaced_deployment(ns_b, _deployment(wide, "b", replicas=2))

    def running(namespace: str, app: str, count: int) -> list[Any] | None:
        pods = _pods_of(lab, namespace, app)
        return pods if len([p for p in pods if p.status.phase == "Running"]) == count else None

    pods = wait_for(lambda: running(ns_b, wide, 2), 20)
    for pod in pods:
        assert pod.metadata.labels["kueue.x-k8s.io/managed"] == "true"
        assert not pod.spec.scheduling_gates  # admitted: Kueue's gate is gone
        wl = _pod_workload(lab, ns_b, pod)
        assert wl is not None and wl["metadata"]["name"].startswith(f"pod-{pod.metadata.name}-")
        assert wl["metadata"]["ownerReferences"][0]["uid"] == pod.metadata.uid
        assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("main", 1)]
        assert _condition(wl, "Admitted")["status"] == "True"
    cq_b = lab.kueue("ClusterQueue", "hyperpod-ns-b-clusterqueue")["status"]
    assert _usage(cq_b) == {"name": "nvidia.com/gpu", "total": "16", "borrowed": "8"}

    apps.create_namespaced_deployment(ns_a, _deployment(mine, "a", replicas=1))
    [own] = wait_for(lambda: running(ns_a, mine, 1), 20)
    assert _condition(_pod_workload(lab, ns_a, own), "Admitted")["status"] == "True"

    def one_waits() -> Any:
        pods = _pods_of(lab, ns_b, wide)
        gated = [p for p in pods if p.spec.scheduling_gates]
        return gated[0] if len(pods) == 2 and len(gated) == 1 and len(
            [p for p in pods if p.status.phase == "Running"]) == 1 else None

    waiting = wait_for(one_waits, 20)
    assert [g.name for g in waiting.spec.scheduling_gates] == ["kueue.x-k8s.io/admission"]
    assert waiting.metadata.name not in {p.metadata.name for p in pods}  # a new pod
    scheduled = next(c for c in waiting.status.conditions if c.type == "PodScheduled")
    assert (scheduled.status, scheduled.reason) == ("False", "SchedulingGated")
    wait_for(lambda: "insufficient unused quota for nvidia.com/gpu in flavor ml.p5.48xlarge"
             in _condition(_pod_workload(lab, ns_b, waiting), "QuotaReserved").get(
                 "message", ""), 20)

    apps.delete_namespaced_deployment(mine, ns_a)  # A's node is idle again: B borrows it back
    wait_for(lambda: running(ns_b, wide, 2), 20)
    apps.delete_namespaced_deployment(wide, ns_b)
    wait_for(lambda: not _pods_of(lab, ns_b, wide) and not lab.custom.list_namespaced_custom_object(
        *KUEUE, ns_b, "workloads")["items"], 20)
