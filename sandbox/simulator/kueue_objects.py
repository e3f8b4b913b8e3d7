"""The Kueue objects HyperPod's task-governance add-on makes from SageMaker's compute quotas
and cluster scheduler config, as pure builders (`governance_addon` writes them).

Taken from AWS's documentation and what AWS's tools read:
- per team (the quota's `ComputeQuotaTarget.TeamName`): namespace `hyperpod-ns-<team>`,
  ClusterQueue `hyperpod-ns-<team>-clusterqueue`, LocalQueue
  `hyperpod-ns-<team>-localqueue` in that namespace (the HyperPod CLI's constants
  `HYPERPOD_NAMESPACE_PREFIX`, `SAGEMAKER_MANAGED_LOCAL_QUEUE_SUFFIX`,
  `SAGEMAKER_MANAGED_CLUSTER_QUEUE_SUFFIX`);
- the labels the HyperPod CLI selects managed namespaces and queues by:
  `sagemaker.amazonaws.com/sagemaker-managed-queue: "true"` and
  `sagemaker.amazonaws.com/quota-allocation-id: <team>`; the task-governance admission
  policy binds to namespaces labelled `sagemaker.amazonaws.com/activate-quota: Enabled`
  (AWS's HyperPod workshop, awslabs/ai-on-sagemaker-hyperpod);
- a priority class `<name>` of the scheduler config is the WorkloadPriorityClass
  `<name>-priority` (a job names it in `kueue.x-k8s.io/priority-class: training-priority`
  for the class `training`; AWS's task-governance task examples), its value the class's
  `Weight`;
- a quota's nominal quota is counted in the instance type's nominal figures: Count x
  vCPUs, Count x memory (a console-made quota of 4 x ml.m5.xlarge shows `cpu 16`,
  `memory 64Gi`, borrowingLimit `8` / `32Gi` at the default BorrowLimit 50);
- the add-on (v1.6) packages Kueue v0.19.2: objects are written at `kueue.x-k8s.io/v1beta2`,
  the CRDs' storage version.

Inferred (AWS does not document it; what the sandbox writes):
- one ResourceFlavor per instance type, named as the type (`ml.p5.48xlarge`), with
  `nodeLabels: {node.kubernetes.io/instance-type: <type>}` (the label HyperPod nodes carry);
- one resource group covering COVERED (cpu, memory, nvidia.com/gpu, aws.amazon.com/neuron,
  vpc.amazonaws.com/efa) for every flavor — zero where the type has none; a quota's
  `Accelerators`, `VCpu` and `MemoryInGiB` replace the count-derived figure of that resource
  (fine-grained quotas);
- all teams' ClusterQueues share one cohort, COHORT;
- `ResourceSharingConfig`: `LendAndBorrow` → no lendingLimit (all of it lendable) and
  borrowingLimit = nominal x BorrowLimit / 100 (an `AbsoluteBorrowLimits` entry for the
  type, counted like the quota, replaces it); `Lend` → borrowingLimit 0; `DontLend` →
  lendingLimit 0 and borrowingLimit 0;
- preemption: `withinClusterQueue: LowerPriority` when `PreemptTeamTasks` is
  `LowerPriority`, else `Never`; `reclaimWithinCohort: Any` (a lender takes back what it
  lent, whatever the borrower's priority: AWS's "borrowed pods are preemptible if the
  lending team reclaims"); `borrowWithinCohort: Never`;
- `fairSharing.weight` is the team's FairShareWeight when the scheduler config has
  FairShare Enabled; `queueingStrategy: BestEffortFIFO`; `namespaceSelector: {}`;
- `ActivationState: Disabled` → the namespace's `activate-quota: Disabled` and the
  ClusterQueue's `stopPolicy: Hold` (nothing new is admitted);
- WorkloadPriorityClasses carry the managed-queue label.
"""

from __future__ import annotations

import math
from typing import Any

from sandbox.simulator.nodes import (
    LABEL_INSTANCE_TYPE,
    RESOURCE_EFA,
    RESOURCE_GPU,
    RESOURCE_NEURON,
    instance_info,
)

API_VERSION = "kueue.x-k8s.io/v1beta2"
NAMESPACE_PREFIX = "hyperpod-ns-"
CLUSTER_QUEUE_SUFFIX = "-clusterqueue"
LOCAL_QUEUE_SUFFIX = "-localqueue"
PRIORITY_SUFFIX = "-priority"
MANAGED_QUEUE = "sagemaker.amazonaws.com/sagemaker-managed-queue"
QUOTA_ALLOCATION = "sagemaker.amazonaws.com/quota-allocation-id"
ACTIVATE_QUOTA = "sagemaker.amazonaws.com/activate-quota"
COHORT = "hyperpod-cohort"  # inferred: AWS does not publish the cohort's name
COVERED = ("cpu", "memory", RESOURCE_GPU, RESOURCE_NEURON, RESOURCE_EFA)
MIB = 2.0**20


def namespace_of(team: str) -> str:
    return f"{NAMESPACE_PREFIX}{team}"


def cluster_queue_of(team: str) -> str:
    return f"{namespace_of(team)}{CLUSTER_QUEUE_SUFFIX}"


def local_queue_of(team: str) -> str:
    return f"{namespace_of(team)}{LOCAL_QUEUE_SUFFIX}"


def priority_class_of(name: str) -> str:
    return f"{name.lower()}{PRIORITY_SUFFIX}"


def _labels(team: str | None = None) -> dict[str, str]:
    labels = {MANAGED_QUEUE: "true"}
    if team is not None:
        labels[QUOTA_ALLOCATION] = team
    return labels


def shown(resource: str, amount: float) -> str:
    """A quantity as the add-on writes it: memory in Gi (or Mi), the rest in whole units
    (or milli-units)."""
    if resource == "memory":
        mib = round(amount / MIB)
        return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"
    if float(amount).is_integer():
        return str(int(amount))
    return f"{math.ceil(amount * 1000)}m"


def per_instance(instance_type: str) -> dict[str, float]:
    """One instance's nominal figures (base units: cores, bytes, devices)."""
    info = instance_info(instance_type)
    if info is None:
        return dict.fromkeys(COVERED, 0.0)
    return {"cpu": float(info.vcpus), "memory": info.memory_mib * MIB,
            RESOURCE_GPU: float(info.gpus), RESOURCE_NEURON: float(info.neuron_devices),
            RESOURCE_EFA: float(info.efa_interfaces)}


def amounts(entry: dict[str, Any]) -> dict[str, float]:
    """A ComputeQuotaResources (or AbsoluteBorrowLimits) entry in base units."""
    one = per_instance(entry["InstanceType"])
    count = float(entry.get("Count") or 0)
    out = {r: count * one[r] for r in COVERED}
    if entry.get("VCpu") is not None:
        out["cpu"] = float(entry["VCpu"])
    if entry.get("MemoryInGiB") is not None:
        out["memory"] = float(entry["MemoryInGiB"]) * 1024 * MIB
    if entry.get("Accelerators") is not None:
        kind = RESOURCE_NEURON if one[RESOURCE_NEURON] and not one[RESOURCE_GPU] else RESOURCE_GPU
        out[kind] = float(entry["Accelerators"])
    return out


def resource_flavor(instance_type: str) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "ResourceFlavor",
            "metadata": {"name": instance_type, "labels": _labels()},
            "spec": {"nodeLabels": {LABEL_INSTANCE_TYPE: instance_type}}}


def namespace(quota: dict[str, Any]) -> dict[str, Any]:
    team = quota["ComputeQuotaTarget"]["TeamName"]
    state = "Enabled" if quota.get("ActivationState", "Enabled") == "Enabled" else "Disabled"
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": namespace_of(team),
                         "labels": {**_labels(team), ACTIVATE_QUOTA: state}}}


def _flavor(entry: dict[str, Any], sharing: dict[str, Any],
            absolute: dict[str, dict[str, Any]]) -> dict[str, Any]:
    nominal = amounts(entry)
    strategy = sharing.get("Strategy", "LendAndBorrow")
    if entry["InstanceType"] in absolute:
        borrow = amounts(absolute[entry["InstanceType"]])
    else:
        percent = float(sharing.get("BorrowLimit", 50))
        borrow = {r: math.floor(nominal[r] * percent / 100) for r in COVERED}
    resources = []
    for r in COVERED:
        item: dict[str, Any] = {"name": r, "nominalQuota": shown(r, nominal[r])}
        item["borrowingLimit"] = shown(r, borrow[r] if strategy == "LendAndBorrow" else 0)
        if strategy == "DontLend":
            item["lendingLimit"] = "0"
        resources.append(item)
    return {"name": entry["InstanceType"], "resources": resources}


def cluster_queue(quota: dict[str, Any], fair_share: bool) -> dict[str, Any]:
    target, config = quota["ComputeQuotaTarget"], quota["ComputeQuotaConfig"]
    team = target["TeamName"]
    sharing = config.get("ResourceSharingConfig") or {}
    absolute = {e["InstanceType"]: e for e in sharing.get("AbsoluteBorrowLimits") or ()}
    flavors = [_flavor(e, sharing, absolute) for e in config.get("ComputeQuotaResources") or ()]
    spec: dict[str, Any] = {
        "cohortName": COHORT,
        "namespaceSelector": {},
        "queueingStrategy": "BestEffortFIFO",
        "preemption": {
            "withinClusterQueue": ("LowerPriority"
                                   if config.get("PreemptTeamTasks") == "LowerPriority"
                                   else "Never"),
            "reclaimWithinCohort": "Any",
            "borrowWithinCohort": {"policy": "Never"},
        },
        "resourceGroups": [{"coveredResources": list(COVERED), "flavors": flavors}]
        if flavors else [],
        "stopPolicy": "None" if quota.get("ActivationState", "Enabled") == "Enabled" else "Hold",
    }
    if fair_share:
        spec["fairSharing"] = {"weight": str(target.get("FairShareWeight", 0))}
    return {"apiVersion": API_VERSION, "kind": "ClusterQueue",
            "metadata": {"name": cluster_queue_of(team), "labels": _labels(team)},
            "spec": spec}


def local_queue(team: str) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "LocalQueue",
            "metadata": {"name": local_queue_of(team), "namespace": namespace_of(team),
                         "labels": _labels(team)},
            "spec": {"clusterQueue": cluster_queue_of(team)}}


def priority_class(entry: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "WorkloadPriorityClass",
            "metadata": {"name": priority_class_of(entry["Name"]), "labels": _labels()},
            "value": int(entry["Weight"]),
            "description": f"HyperPod task governance priority class {entry['Name']}"}


def desired(quotas: list[dict[str, Any]], scheduler: dict[str, Any] | None
            ) -> list[dict[str, Any]]:
    """Every object the add-on keeps for a cluster's live quotas and scheduler config
    (namespaces and cluster-scoped objects first, LocalQueues last)."""
    config = (scheduler or {}).get("SchedulerConfig") or {}
    fair_share = config.get("FairShare", "Enabled") == "Enabled"
    types = sorted({e["InstanceType"] for q in quotas
                    for e in q["ComputeQuotaConfig"].get("ComputeQuotaResources") or ()})
    out = [resource_flavor(t) for t in types]
    out += [priority_class(c) for c in config.get("PriorityClasses") or ()]
    for quota in quotas:
        out += [namespace(quota), cluster_queue(quota, fair_share)]
    out += [local_queue(q["ComputeQuotaTarget"]["TeamName"]) for q in quotas]
    return out
