"""The capacity-fit check (cloud/fit.py): what a cluster can ever hold — each group's count,
or its managed-autoscaling maximum while HyperPod's autoscaling is on, times what one node
of its type offers — against what a job's, an endpoint's or a space's pods ask; refusals
name the numbers, unknown groups and types name what the cluster has."""

from __future__ import annotations

import json

import pytest

from cloud import fit, inference, training
from cloud.inference import Autoscaling, Endpoint
from cloud.training import JobSpec

P5 = {"name": "ml.p5.48xlarge", "accelerator": "gpu", "accelerator_count": 8,
      "efa_supported": True, "max_efa_interfaces": 32, "vcpus": 192, "memory_gib": 2048.0}
G5 = {"name": "ml.g5.8xlarge", "accelerator": "gpu", "accelerator_count": 1,
      "efa_supported": True, "max_efa_interfaces": 1, "vcpus": 32, "memory_gib": 128.0}
C5 = {"name": "ml.c5.xlarge", "accelerator": None, "accelerator_count": 0,
      "efa_supported": False, "max_efa_interfaces": 0, "vcpus": 4, "memory_gib": 8.0}
TRN1 = {"name": "ml.trn1.32xlarge", "accelerator": "trainium", "accelerator_count": 16,
        "efa_supported": True, "max_efa_interfaces": 8, "vcpus": 128, "memory_gib": 512.0}
INFOS = {i["name"]: i for i in (P5, G5, C5, TRN1)}


def _group(name: str, itype: str, count: int, target: int | None = None,
           **extra) -> dict:
    return {"InstanceGroupName": name, "InstanceType": itype, "CurrentCount": count,
            "TargetCount": count if target is None else target, "Status": "InService",
            **extra}


def _groups(*groups: dict, scaling: str | None = None, maxima=None, pending=()):
    described = {"InstanceGroups": list(groups)}
    if scaling:
        described["AutoScaling"] = {"Mode": scaling, "AutoScalerType": "Karpenter"}
    return fit.groups_of(described, INFOS, maxima or {}, pending)


def _job(nodes: int, gpus: int = 8, efa: int = 0, group: str | None = None,
         max_nodes: int | None = None) -> JobSpec:
    return JobSpec(name="j", namespace="default", recipe="torchrun", image="i", command=(),
                   nodes=nodes, max_nodes=max_nodes, gpus_per_node=gpus, efa_per_node=efa,
                   instance_group=group)


def _refusal(asks, groups) -> fit.Misfit:
    with pytest.raises(fit.Misfit) as caught:
        fit.check(asks, groups, "lab")
    json.dumps(caught.value.details)  # what the envelope carries is JSON
    return caught.value


def test_a_job_larger_than_the_cluster_is_refused_with_the_numbers() -> None:
    groups = _groups(_group("workers", "ml.p5.48xlarge", 4))
    exc = _refusal(training.fit_asks(_job(99), ray=False), groups)
    assert (exc.code, exc.status, exc.field) == ("exceeds_capacity", 422, "nodes")
    assert exc.message == (
        "nodes: 99 nodes asked, each with 8 GPUs; the cluster can hold at most 4: group "
        "'workers' holds 4 (4 nodes of ml.p5.48xlarge with 8 GPUs each; 4 now, no managed "
        "autoscaling)")
    assert exc.details["asked"] == {"count": 99, "what": "nodes",
                                    "per_unit": {"nvidia.com/gpu": 8},
                                    "instance_group": None, "instance_type": None}
    assert exc.details["can_hold"] == 4
    [group] = exc.details["groups"]
    assert (group["name"], group["max_nodes"], group["fits_per_node"], group["can_hold"]) == (
        "workers", 4, 1, 4)
    assert group["per_node"]["nvidia.com/gpu"] == 8
    assert group["per_node"]["vpc.amazonaws.com/efa"] == 32
    # exactly what it can hold fits
    [result] = fit.check(training.fit_asks(_job(4), ray=False), groups, "lab")
    assert result.can_hold == 4 and result.fits


def test_several_pods_per_node_and_several_groups_add_up() -> None:
    groups = _groups(_group("a", "ml.p5.48xlarge", 2), _group("b", "ml.p5.48xlarge", 1),
                     _group("cpu", "ml.c5.xlarge", 5))
    assert fit.fit(training.fit_asks(_job(12, gpus=2), ray=False)[0], groups,
                   "lab").can_hold == 12
    exc = _refusal(training.fit_asks(_job(13, gpus=2), ray=False), groups)
    assert "can hold at most 12: group 'a' holds 8, 4 per node" in exc.message
    assert "group 'cpu' holds 0 (5 nodes of ml.c5.xlarge with 0 GPUs each; 5 now, no " \
           "managed autoscaling): ml.c5.xlarge has no GPUs" in exc.message


def test_the_autoscaling_maximum_counts_only_while_hyperpods_autoscaling_is_on() -> None:
    group = _group("workers", "ml.p5.48xlarge", 2)
    on = _groups(group, scaling="Enable", maxima={"workers": 10})
    assert fit.fit(training.fit_asks(_job(10), ray=False)[0], on, "lab").can_hold == 10
    exc = _refusal(training.fit_asks(_job(11), ray=False), on)
    assert "(10 nodes of ml.p5.48xlarge with 8 GPUs each; 2 now, autoscaling max 10)" in \
        exc.message
    assert exc.details["groups"][0]["autoscaling_max"] == 10
    off = _groups(group, scaling="Disable", maxima={"workers": 10})
    assert fit.fit(training.fit_asks(_job(3), ray=False)[0], off, "lab").can_hold == 2
    # a group scaled from zero: its target and maximum, not its current count
    zero = _groups(_group("burst", "ml.p5.48xlarge", 0, target=1), scaling="Enable",
                   maxima={"burst": 6})
    assert zero[0].max_nodes == 6


def test_a_group_that_does_not_exist_is_refused_naming_those_that_do() -> None:
    groups = _groups(_group("workers", "ml.p5.48xlarge", 4), _group("cpu", "ml.c5.xlarge", 1))
    with pytest.raises(fit.UnknownPlacement) as caught:
        fit.check(training.fit_asks(_job(1, group="nope"), ray=False), groups, "lab")
    exc = caught.value
    assert (exc.code, exc.status, exc.field) == ("validation_failed", 422, "instance_group")
    assert exc.message == ("cluster 'lab' has no instance group 'nope'; its groups: workers "
                           "(ml.p5.48xlarge), cpu (ml.c5.xlarge)")
    assert exc.details == {"groups": ["workers", "cpu"]}
    # even a job asking for nothing must name a group that exists
    with pytest.raises(fit.UnknownPlacement):
        fit.check(training.fit_asks(_job(1, gpus=0, group="nope"), ray=False), groups, "lab")


def test_the_named_groups_type_must_have_what_each_pod_asks() -> None:
    groups = _groups(_group("workers", "ml.p5.48xlarge", 4), _group("cpu", "ml.c5.xlarge", 8))
    exc = _refusal(training.fit_asks(_job(1, gpus=1, group="cpu"), ray=False), groups)
    assert exc.message.endswith("ml.c5.xlarge has no GPUs")
    exc = _refusal(training.fit_asks(_job(1, gpus=16), ray=False), groups)
    assert "ml.p5.48xlarge has 8 GPUs per node" in exc.message
    assert exc.details["can_hold"] == 0
    exc = _refusal(training.fit_asks(_job(1, gpus=8, efa=33, group="workers"), ray=False),
                   groups)
    assert "each with 8 GPUs and 33 EFA interfaces" in exc.message
    assert "ml.p5.48xlarge has 32 EFA interfaces per node" in exc.message
    fit.check(training.fit_asks(_job(4, gpus=8, efa=32, group="workers"), ray=False),
              groups, "lab")


def test_neuron_cpu_and_memory_are_judged_too() -> None:
    assert fit.node_resources(TRN1)[fit.NEURON] == 16
    assert fit.node_resources(TRN1)[fit.GPU] == 0
    groups = _groups(_group("trn", "ml.trn1.32xlarge", 2), _group("cpu", "ml.c5.xlarge", 3))
    space = fit.Ask(1, {fit.CPU: 8, fit.MEMORY: 16 * fit.GIB}, "resources", "spaces",
                    instance_group="cpu")
    exc = _refusal([space], groups)
    assert "each with 8 vCPUs and 16 GiB of memory" in exc.message
    assert "ml.c5.xlarge has 4 vCPUs per node; ml.c5.xlarge has 8 GiB of memory per node" in \
        exc.message
    small = fit.Ask(6, {fit.CPU: 2, fit.MEMORY: 4 * fit.GIB}, "resources", "spaces",
                    instance_group="cpu")
    assert fit.fit(small, groups, "lab").can_hold == 6
    neuron = fit.Ask(5, {fit.NEURON: 8}, "nodes", "nodes")
    exc = _refusal([neuron], groups)
    assert "can hold at most 4" in exc.message


def test_taints_deletion_pending_groups_and_unknown_types() -> None:
    tainted = _group("dedicated", "ml.p5.48xlarge", 8, KubernetesConfig={
        "DesiredTaints": [{"Key": "team", "Value": "a", "Effect": "NoSchedule"}]})
    groups = _groups(tainted, _group("old", "ml.p5.48xlarge", 4, Status="Deleting"),
                     pending=[{"name": "new", "instance_type": "ml.p5.48xlarge",
                               "instance_count": 2, "taints": []}])
    exc = _refusal(training.fit_asks(_job(3), ray=False), groups)
    assert exc.details["can_hold"] == 2  # the group being added; none of the other two
    assert "group 'dedicated' holds 0" in exc.message
    assert "its taint team=a:NoSchedule is not tolerated" in exc.message
    assert "group 'old' holds 0 (0 nodes of ml.p5.48xlarge" in exc.message
    assert "it is being deleted" in exc.message
    tolerant = fit.Ask(3, {fit.GPU: 8}, "nodes", "nodes",
                       tolerations=({"key": "team", "operator": "Exists"},))
    assert fit.fit(tolerant, groups, "lab").can_hold == 10
    # a pod asking for nothing shares nodes: only a tainted-only cluster cannot hold it
    assert fit.fit(fit.Ask(500, {}, "nodes", "nodes"), groups, "lab").can_hold is None
    only_tainted = _groups(tainted)
    assert _refusal([fit.Ask(1, {}, "nodes", "nodes")], only_tainted).details["can_hold"] == 0
    # a type EC2 does not describe is not judged
    unknown = fit.groups_of({"InstanceGroups": [_group("x", "ml.p9.99xlarge", 1)]}, {
        "ml.p9.99xlarge": None}, {})
    assert fit.fit(training.fit_asks(_job(50), ray=False)[0], unknown, "lab").fits
    # no HyperPod cluster: nothing to hold anything on
    assert _refusal(training.fit_asks(_job(1), ray=False), fit.groups_of(None, {}, {})
                    ).message.endswith("it has no instance groups")


def test_a_rayjob_asks_a_head_without_gpus_and_its_workers() -> None:
    head, workers = training.fit_asks(_job(5, gpus=8), ray=True)
    assert (head.count, head.needs, head.what) == (1, {}, "Ray head")
    assert (workers.count, workers.needs) == (4, {fit.GPU: 8.0})
    groups = _groups(_group("workers", "ml.p5.48xlarge", 4))
    fit.check([head, workers], groups, "lab")
    exc = _refusal(training.fit_asks(_job(6, gpus=8), ray=True), groups)
    assert exc.message.startswith("nodes: 5 Ray workers asked, each with 8 GPUs (a 6-node "
                                  "RayJob: its head holds no GPU); the cluster can hold at "
                                  "most 4")
    assert training.fit_asks(_job(1, gpus=8), ray=True) == [head]


def test_an_elastic_job_is_checked_at_its_minimum() -> None:
    groups = _groups(_group("workers", "ml.p5.48xlarge", 4))
    fit.check(training.fit_asks(_job(4, max_nodes=64), ray=False), groups, "lab")
    exc = _refusal(training.fit_asks(_job(5, max_nodes=64), ray=False), groups)
    assert "(the elastic minimum: the job starts with 5 and grows to 64 as capacity " \
           "allows)" in exc.message


def test_an_endpoint_asks_replicas_and_its_autoscaling_maximum() -> None:
    groups = _groups(_group("workers", "ml.g5.8xlarge", 2), _group("big", "ml.p5.48xlarge", 1))
    ep = Endpoint(name="chat", kind="managed", model="m", gpus=1, replicas=2,
                  instance_type="ml.g5.8xlarge", autoscaling=Autoscaling(min=1, max=3))
    exc = _refusal(inference.fit_asks(ep), groups)
    assert exc.field == "autoscaling.max"
    assert exc.message.startswith("autoscaling.max: 3 replicas at the autoscaling maximum "
                                  "asked, each with 1 GPU; the cluster can hold at most 2")
    assert [a.field for a in inference.fit_asks(ep, {"replicas"})] == ["replicas"]
    fit.check(inference.fit_asks(ep, {"replicas"}), groups, "lab")
    with pytest.raises(fit.UnknownPlacement) as caught:
        fit.check(inference.fit_asks(Endpoint(name="x", kind="managed", model="m", gpus=1,
                                              instance_type="ml.g5.xlarge")), groups, "lab")
    assert caught.value.field == "instance_type"
    assert caught.value.message == ("cluster 'lab' has no instance group of ml.g5.xlarge; its "
                                    "groups: workers (ml.g5.8xlarge), big (ml.p5.48xlarge)")
    anywhere = Endpoint(name="v", kind="vllm", model="m", gpus=4, replicas=3)
    exc = _refusal(inference.fit_asks(anywhere), groups)
    assert "3 replicas asked, each with 4 GPUs; the cluster can hold at most 2" in exc.message


def test_compute_outside_hyperpod_leaves_unpinned_pods_unbounded() -> None:
    """Nodes hypd does not size (an EKS node group, self-managed nodes) may take a pod that
    names no group or type; one pinned to a HyperPod group or type is judged as before."""
    groups = _groups(_group("workers", "ml.p5.48xlarge", 4))
    elsewhere = "3 nodes outside HyperPod's instance groups"
    [free] = fit.check(training.fit_asks(_job(99), ray=False), groups, "lab", elsewhere)
    assert free.can_hold is None
    with pytest.raises(fit.Misfit):
        fit.check(training.fit_asks(_job(99, group="workers"), ray=False), groups, "lab",
                  elsewhere)
