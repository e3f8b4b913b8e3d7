"""Training jobs as manifests: HyperPod's `HyperPodPyTorchJob` and KubeRay's `RayJob`, the
recipes above them, and the product's stated limits.

HyperPodPyTorchJob has no public CRD (the training operator is a closed EKS add-on), so its
shape lives in this one builder and its fields are pinned by a test against AWS's
documentation (tests/cloud/test_training.py). RayJob is validated against KubeRay's CRD as a
closed schema (the one hypd ships, cloud/manifests/kuberay-crds/).

Every job's pods carry `hypd.io/job=<job>` (besides what the operators add) and mount the
cluster's shared S3 claim (`hypd-s3`, the storage stage's) at `/s3`, the same bucket a user
mounts in their dev environment; a recipe's data, output and checkpoint paths are under it.

Training jobs, as built.

**Two submission paths, recipes above both.** `POST /clusters/<c>/jobs` takes a recipe and
its small config: `torchrun` (a script under `/s3`), `llama-factory`, `ms-swift` (a config
under `/s3`) run as a `HyperPodPyTorchJob` under HyperPod's training operator; `verl` runs as
a KubeRay `RayJob` (head + `nodes - 1` GPU workers, shut down when it ends); `pytorch` and
`ray` take the user's own command. `cloud/recipes.py` turns the config into argv lists (the
one shell string, a RayJob's entrypoint, is `shlex.join`ed) and `cloud/training.py` into the
manifest: pods labelled `hypd.io/job=<job>` and `hypd.io/recipe`, nodes selected by
instance group (`sagemaker.amazonaws.com/instance-group-name`), GPUs and EFA requested, the
run policy (`jobMaxRetryCount`: the recovery budget; `restartPolicy`;
`logMonitoringConfiguration`: hang and slowness rules), elastic training as
`elasticPolicy` + `maxReplicas` with `hyperpodrun --nnodes=min:max`. HyperPodPyTorchJob has
no public CRD: its fields are pinned by tests/cloud/test_training.py against AWS's job
documentation and the HyperPod CLI's model (sources cited there); every RayJob a recipe makes
is validated against KubeRay v1.7.0's CRD as a closed schema. A HyperPodPyTorchJob command
must start with `hyperpodrun` (refused otherwise, saying why: the elastic agent in the image
is how the operator recovers processes), and the job's reply carries that note.

**One data contract.** Every pod mounts the claim `hypd-s3` (the storage stage's shared
bucket) at `/s3`; output and checkpoints go to `/s3/jobs/<job>/{output,checkpoints}`, data is
read from `data` (default `/s3/data`) — in the environment as `HYPD_OUTPUT_DIR`,
`HYPD_CHECKPOINT_DIR`, `HYPD_DATA_DIR`. A job may name a namespace: it is made when missing
(labelled as hypd's) and given its own PV + PVC of the same bucket.

**Checks, in order.** A name taken by a job of either kind: 409 (an Idempotency-Key replay
answers the job the key made: the key's and the body's hashes are kept as annotations on
the job itself, so the record lives with the resource, not in Redis). A HyperPodPyTorchJob
needs the `training_operator` feature on, read by the managed features' actual-state reader
(`app.readmodels.features.read`): 412 naming the toggle otherwise. Elastic training (a node
range) is refused (422 on `max_nodes`) by `training.ELASTIC_LIMITS`, the one table of what
it excludes — spot capacity (the job's instance group's, or any group when none is named),
managed tiered checkpointing (on for the cluster), checkpointless training (asked) — with its
source (`ELASTIC_LIMITS_SOURCE`); `GET /api/v1/training/limits` serves the table to the
dashboard, the MCP tool and the playbook. Last, before anything is made (namespace, MLflow
binding, the KubeRay operation, the job), **the capacity-fit check** (below).

**What can never fit is refused with the numbers** (`cloud/fit.py`, read by
`app/readmodels/fit.py`; one check for jobs, endpoints and the dev spaces to come). A
workload is asked as `Ask`s — N identical pods, each requesting resources by their
Kubernetes names (`nvidia.com/gpu`, `vpc.amazonaws.com/efa`, `aws.amazon.com/neuron`, `cpu`,
`memory`), on one instance group or instance type or anywhere: a job's `nodes` pods (an
elastic job its minimum; a RayJob its head, which holds no GPU, and `nodes - 1` workers,
`training.fit_asks`), an endpoint's `replicas` and its autoscaling maximum
(`inference.fit_asks`). The cluster is its groups from one `DescribeCluster` (plus groups
being added, from their operations), each able to reach `max(current, target, autoscaling
max)` nodes — the maximum from hypd's Karpenter NodePools (`autoscaling.read`), counted only
while HyperPod's `AutoScaling.Mode` is `Enable` — of what EC2 says one node of its type has
(`discovery.instance_type`, cached a day; GPUs, Neuron devices, EFA interfaces, vCPUs,
memory); a group whose `NoSchedule`/`NoExecute` taint the pods do not tolerate, or that is
being deleted, holds none. When the pods the groups could hold with every node they can ever
have and nothing else running are fewer than asked: `422 exceeds_capacity`, the field named
in `details.fields`, the message and `details` giving the numbers ("nodes: 99 nodes asked,
each with 8 GPUs; the cluster can hold at most 4: group 'workers' holds 4 (4 nodes of
ml.p5.48xlarge with 8 GPUs each; 4 now, no managed autoscaling)"; `details`: `asked`,
`can_hold`, per group its counts, autoscaling maximum, `per_node`, `fits_per_node`,
`can_hold`, `why`). A group or instance type the cluster does not have: `422
validation_failed` on `instance_group` / `instance_type` naming the groups it has. It is an
upper bound on purpose — capacity, not allocatable; perfect packing; no pods-per-node limit;
a pod asking for no resource can share any node — because refusing what might fit is worse
than accepting what then waits with the scheduler's reason; a type EC2 does not describe is
not judged. Only HyperPod's groups are sized: when the cluster has Nodes without HyperPod's
`sagemaker.amazonaws.com/compute-type` label (an imported cluster's EKS node groups,
self-managed nodes), a pod pinned to no group or type is not bounded (a node group at zero
shows no Node and is not seen; asking EKS would need `eks:ListNodegroups`, which the
management role does not have). **Why a code of its own:** the request is well formed and might fit
another
cluster or this one grown, so a client branches on it differently from a malformed field
(shrink the request, or add capacity); it is still a 422 in the one envelope, with
`details.fields` so forms mark the field as for `validation_failed`. What fits but waits
(other workloads hold the GPUs, the autoscaler has not added nodes) is accepted and says why
on its read (`waiting`).

**Submitting is an operation.** The route checks the request without changing anything,
then records `job.create` on `cluster/<c>/job/<j>` and answers `202` with it, whatever the
recipe (tasks/jobs.py: the namespace and its bucket claim, the MLflow binding, KubeRay for a
RayJob on a cluster without it, then a server-side apply of the manifest the route built;
each step re-applied after a crash adopts what it made). KubeRay is the `kuberay-operator`
entry of the dependency graph (feature `kuberay`, not a toggle: upstream v1.7.0's RayJob,
RayCluster and RayService CRDs unchanged, `cloud/manifests/kuberay-crds/` with its
SOURCES.md, then namespace, RBAC and the operator Deployment,
`cloud/manifests/kuberay-operator.yaml`), planned and applied by `cloud/addons.py` under the
features mutex. Until the operation has made the job, the job reads as `submitting` with its
operation id; a submission that ended without it reads as `failed` with the reason.

**Reading.** Jobs are read from the cluster (hypd's by label), never stored: state from the
operator's status (HyperPodPyTorchJob conditions Created/Running/Restarting/Completed/Failed
and `restartCount`; RayJob `jobStatus`), pods with their nodes and restarts, the recovery
budget `{used, allowed, remaining}` (restarts of `jobMaxRetryCount`), the newest events,
and `waiting`: each pod the scheduler has not placed, `{pod, reason, message, since}` from its
PodScheduled False condition (reason `Unschedulable`, the message of its FailedScheduling
event: "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: …") — the
condition rather than the event because it lasts while the pod waits (events expire after an
hour) and comes with the pods the read lists anyway, so the listing shows it too. The jobs
page shows it under the job's state (`job-waiting-<job>`), and the form shows a refusal's
message and marks the field it names.
`DELETE` is the operation `job.delete`: the job deleted (foreground: its pods go first),
then until the job and its pods are gone.

**Logs.** `GET …/jobs/<job>/logs?tail=&since=&pod=&previous=` reads each pod's log from the
Kubernetes API (`timestamps=true`) and answers the newest `tail` lines (≤ 10,000), each
`{pod, time, line}`. The live tail is a WebSocket (below) served by the web process itself:
never Celery, never a worker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cloud import fit, kube, storage
from cloud.errors import Refusal
from cloud.nodes import INSTANCE_GROUP_LABEL
from vocabulary import teams

PYTORCH_API = "sagemaker.amazonaws.com/v1"
PYTORCH_KIND = "HyperPodPyTorchJob"
RAY_API = "ray.io/v1"
RAY_KIND = "RayJob"
KINDS = {"pytorch": (PYTORCH_API, PYTORCH_KIND), "ray": (RAY_API, RAY_KIND)}

JOB_LABEL = "hypd.io/job"
RECIPE_LABEL = "hypd.io/recipe"
OPERATOR_POD_LABEL = "HPJob"  # the training operator's label on a job's pods
RAY_CLUSTER_LABEL = "ray.io/cluster"
LAUNCHER = "hyperpodrun"
ELASTIC_AGENT_PORT = 8080  # the HyperPod elastic agent listens here (AWS's job example)
S3_MOUNT = storage.DEFAULT_MOUNT_PATH
SHARED_CLAIM = storage.DEFAULT_CLAIM
RESOURCE_GPU = fit.GPU
RESOURCE_EFA = fit.EFA
RAY_IMAGE = "rayproject/ray:2.40.0-py311-gpu"


class TrainingError(Refusal):
    default_code = "validation_failed"


# -- the product's stated limits ---------------------------------------------------------------

@dataclass(frozen=True)
class Limit:
    """Something elastic training cannot be combined with, and why."""

    key: str
    with_what: str
    reason: str


ELASTIC_LIMITS_SOURCE = (
    "hypd's product constraints (elastic training excludes spot capacity, managed tiered "
    "checkpointing and checkpointless training); AWS: "
    "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-eks-checkpointless-"
    "considerations.html (checkpointless training is incompatible with managed tiered "
    "checkpointing and elastic training)")
ELASTIC_LIMITS: tuple[Limit, ...] = (
    Limit("spot", "spot capacity",
          "elastic training scales with the instance group's capacity, and spot capacity can "
          "be reclaimed at any time; run elastic jobs on an on-demand or training-plan group"),
    Limit("tiered_checkpointing", "managed tiered checkpointing",
          "managed tiered checkpointing is on for this cluster, and elastic training is not "
          "supported with it; turn tiered checkpointing off or give a fixed node count"),
    Limit("checkpointless", "checkpointless training",
          "checkpointless training is incompatible with elastic training (AWS); give a fixed "
          "node count or turn checkpointless off"),
)
"""The one table of what elastic training excludes: the API refuses with it, the dashboard
and the playbook show it (GET /api/v1/training/limits)."""


def elastic_refusal(present: Mapping[str, bool]) -> str | None:
    """Why an elastic job cannot run given what is `present` (keys of ELASTIC_LIMITS), or
    None."""
    hits = [limit for limit in ELASTIC_LIMITS if present.get(limit.key)]
    if not hits:
        return None
    return ("elastic training (a node range) cannot be combined with "
            + " or ".join(h.with_what for h in hits) + ": "
            + "; ".join(h.reason for h in hits))


# -- the job spec every recipe fills -------------------------------------------------------------

@dataclass(frozen=True)
class HangRule:
    """A log-monitoring rule of the run policy (hang or slowness detection)."""

    name: str
    log_pattern: str
    expected_start_cutoff_s: int | None = None
    expected_recurring_frequency_s: int | None = None
    stop_pattern: str | None = None
    metric_threshold: int | None = None
    operator: str | None = None
    metric_evaluation_data_points: int | None = None


@dataclass(frozen=True)
class RunPolicy:
    job_max_retry_count: int = 3
    restarts_before_full_job_restart: int | None = None
    eval_period_s: int | None = None
    max_full_job_restarts: int | None = None
    rules: tuple[HangRule, ...] = ()


@dataclass(frozen=True)
class JobSpec:
    """What a job runs, wherever: the recipes build one, the builders make it a manifest."""

    name: str
    namespace: str
    recipe: str
    image: str
    command: tuple[str, ...]
    nodes: int = 1
    max_nodes: int | None = None
    processes_per_node: int = 1
    gpus_per_node: int = 0
    efa_per_node: int = 0
    instance_group: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    run_policy: RunPolicy = RunPolicy()
    service_account: str | None = None
    """The pods' service account (the MLflow identity's, when the cluster has MLflow)."""
    team: str | None = None
    """The team the job runs for: Kueue admits it through the team's LocalQueue (in the
    team's namespace, where the job must be)."""
    priority: str | None = None
    """A priority class of the cluster's scheduler config (only with a team)."""

    @property
    def elastic(self) -> bool:
        return self.max_nodes is not None and self.max_nodes > self.nodes


def _resources(spec: JobSpec) -> dict[str, Any]:
    amounts = {}
    if spec.gpus_per_node:
        amounts[RESOURCE_GPU] = str(spec.gpus_per_node)
    if spec.efa_per_node:
        amounts[RESOURCE_EFA] = str(spec.efa_per_node)
    return {"requests": dict(amounts), "limits": dict(amounts)} if amounts else {}


def fit_asks(spec: JobSpec, ray: bool) -> list[fit.Ask]:
    """What the job's pods ask of the cluster (cloud.fit): one pod per node with the GPUs
    and EFA interfaces its container requests — an elastic job its minimum, the nodes it
    cannot start without —; a RayJob's head, which holds no GPU, and its `nodes - 1`
    workers."""
    per_pod = {name: float(amount) for name, amount in
               (_resources(spec).get("requests") or {}).items()}
    group = spec.instance_group
    if ray:
        asks = [fit.Ask(1, {}, "nodes", "Ray head", instance_group=group)]
        if spec.nodes > 1:
            asks.append(fit.Ask(spec.nodes - 1, per_pod, "nodes", "Ray workers",
                                instance_group=group,
                                note=f"a {spec.nodes}-node RayJob: its head holds no GPU"))
        return asks
    note = (f"the elastic minimum: the job starts with {spec.nodes} and grows to "
            f"{spec.max_nodes} as capacity allows") if spec.elastic else None
    return [fit.Ask(spec.nodes, per_pod, "nodes", "nodes", instance_group=group, note=note)]


def _pod_labels(spec: JobSpec) -> dict[str, str]:
    return kube.labels({JOB_LABEL: spec.name, RECIPE_LABEL: spec.recipe})


def _job_labels(spec: JobSpec) -> dict[str, str]:
    """The job's own labels: its pods', and for a team's job the team's queue and its
    priority class (Kueue reads them on the job, never on its pods: a pod labelled with a
    queue would be queued a second time, as a plain pod)."""
    return {**_pod_labels(spec), **teams.queue_labels(spec.team, spec.priority)}


def _container(spec: JobSpec, name: str, command: Sequence[str] | None,
               ports: Sequence[int] = ()) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": name, "image": spec.image, "imagePullPolicy": "IfNotPresent",
        "env": [{"name": k, "value": v} for k, v in spec.env],
        "volumeMounts": [storage.volume_mount()],
    }
    if command:
        container["command"] = list(command)
    if ports:
        container["ports"] = [{"containerPort": p} for p in ports]
    resources = _resources(spec)
    if resources:
        container["resources"] = resources
    return container


def _pod_spec(spec: JobSpec, containers: list[dict[str, Any]],
              restart_policy: str | None = None) -> dict[str, Any]:
    pod: dict[str, Any] = {"containers": containers,
                           "volumes": [storage.pod_volume(SHARED_CLAIM)]}
    if spec.service_account:
        pod["serviceAccountName"] = spec.service_account
    if spec.instance_group:
        pod["nodeSelector"] = {INSTANCE_GROUP_LABEL: spec.instance_group}
    if restart_policy:
        pod["restartPolicy"] = restart_policy
    return pod


def _rule(rule: HangRule) -> dict[str, Any]:
    out: dict[str, Any] = {"name": rule.name, "logPattern": rule.log_pattern}
    for key, value in (("expectedStartCutOffInSeconds", rule.expected_start_cutoff_s),
                       ("expectedRecurringFrequencyInSeconds",
                        rule.expected_recurring_frequency_s),
                       ("stopPattern", rule.stop_pattern),
                       ("metricThreshold", rule.metric_threshold),
                       ("operator", rule.operator),
                       ("metricEvaluationDataPoints", rule.metric_evaluation_data_points)):
        if value is not None:
            out[key] = value
    return out


def check_launcher(command: Sequence[str]) -> None:
    """A HyperPodPyTorchJob must launch with `hyperpodrun`: said, not hidden."""
    if not command or command[0].rsplit("/", 1)[-1] != LAUNCHER:
        raise TrainingError(
            "command: a HyperPodPyTorchJob must be launched with hyperpodrun (the HyperPod "
            "elastic agent's launcher, a drop-in for torchrun: `hyperpodrun --nnodes=N "
            "--nproc-per-node=P train.py`), and the image must contain the agent (pip package "
            "hyperpod-elastic-agent); the training operator recovers failed processes "
            "through it", field="command")


def pytorch_job(spec: JobSpec) -> dict[str, Any]:
    """The HyperPodPyTorchJob manifest (fields pinned in tests/cloud/test_training.py)."""
    check_launcher(spec.command)
    policy = spec.run_policy
    run_policy: dict[str, Any] = {"jobMaxRetryCount": policy.job_max_retry_count,
                                  "cleanPodPolicy": "All"}
    restart = {k: v for k, v in (
        ("numRestartBeforeFullJobRestart", policy.restarts_before_full_job_restart),
        ("evalPeriodSeconds", policy.eval_period_s),
        ("maxFullJobRestarts", policy.max_full_job_restarts)) if v is not None}
    if restart:
        restart.setdefault("evalPeriodSeconds", 21600)
        run_policy["restartPolicy"] = restart
    if policy.rules:
        run_policy["logMonitoringConfiguration"] = [_rule(r) for r in policy.rules]
    replica: dict[str, Any] = {
        "name": "pods", "replicas": spec.nodes,
        "template": {"metadata": {"labels": _pod_labels(spec)},
                     "spec": _pod_spec(spec, [_container(spec, "pytorch", spec.command,
                                                         (ELASTIC_AGENT_PORT,))],
                                       "OnFailure")}}
    body: dict[str, Any] = {"nprocPerNode": str(spec.processes_per_node),
                            "replicaSpecs": [replica], "runPolicy": run_policy}
    if spec.elastic:
        replica["maxReplicas"] = spec.max_nodes
        body["elasticPolicy"] = {"minReplicas": spec.nodes, "maxReplicas": spec.max_nodes}
    return {"apiVersion": PYTORCH_API, "kind": PYTORCH_KIND,
            "metadata": {"name": spec.name, "namespace": spec.namespace,
                         "labels": _job_labels(spec)},
            "spec": body}


def ray_job(spec: JobSpec, entrypoint: str) -> dict[str, Any]:
    """The RayJob manifest: a head and `nodes - 1` GPU workers, shut down when it ends."""
    labels = _pod_labels(spec)
    head = _container(spec, "ray-head", None, (6379, 8265, 10001))
    head.pop("resources", None)  # the head schedules work; the workers hold the GPUs
    cluster: dict[str, Any] = {
        "headGroupSpec": {"rayStartParams": {"dashboard-host": "0.0.0.0"},
                          "template": {"metadata": {"labels": labels},
                                       "spec": _pod_spec(spec, [head])}}}
    workers = spec.nodes - 1
    if workers > 0:
        cluster["workerGroupSpecs"] = [{
            "groupName": "gpu", "replicas": workers, "minReplicas": workers,
            "maxReplicas": workers, "rayStartParams": {},
            "template": {"metadata": {"labels": labels},
                         "spec": _pod_spec(spec, [_container(spec, "ray-worker", None)])}}]
    return {"apiVersion": RAY_API, "kind": RAY_KIND,
            "metadata": {"name": spec.name, "namespace": spec.namespace,
                         "labels": _job_labels(spec)},
            "spec": {"entrypoint": entrypoint, "shutdownAfterJobFinishes": True,
                     "ttlSecondsAfterFinished": 3600,
                     "backoffLimit": spec.run_policy.job_max_retry_count,
                     "rayClusterSpec": cluster}}


def namespace_manifest(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": kube.labels()}}
