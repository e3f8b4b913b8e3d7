"""What depends on something a request would destroy: the one answer every destructive route
gives before anything is recorded or changed (and the first step of a network's and a
cluster's delete gives again before it acts, for what appeared in between).

A `Dependent` is something live that would break: a cluster in a VPC, a pod mounting a
claim, a training job of an operator being turned off, an endpoint serving a model. Each says
why it depends and whether an explicit `force` may override it: a workload a person may
decide to lose is forceable; a cluster in a VPC is not (AWS would refuse to delete the VPC
anyway, but only after the NAT gateway, every node's way out, was gone). `refuse` raises
`InUse`, a `Refusal` whose code `in_use` maps to HTTP 409, naming what still blocks. Every
finder reads the actual state now (AWS, the cluster's Kubernetes API), never a copy.

One mechanism, so the browser and the agent meet the same check. Every destructive route
first reads what depends on its target, before anything is recorded or changed, and answers
`409 in_use` naming each dependent: `details: {target, dependents: [{kind, name, namespace,
cluster, why, forceable}], total, force_allowed}` (at most 50 listed, `LISTED_MAX`).

- This module holds the finders.
- `app/readmodels/dependents.py` builds each request's `Impact` (its target in words, what it
  would remove, its dependents).
- `app/mutations.py` is the one path. `destructive(blp, query)` declares a route: operator,
  its `?dry_run=true` open to viewers (`@access(Role.OPERATOR, dry_run=True)`), the query schema
  with `dry_run` and, where a person may override, `force`, the dry run's 200 `DestroyPlan`,
  the 409 `InUseError` in OpenAPI. `destroy(kind, target, params, impact, query)` runs the
  impact as the submit's precheck (after the target's lock, only for a new request: a
  replayed Idempotency-Key answers its operation). `guard(impact, query)` does the same for a
  route that acts at once (a job's delete, forgetting an imported cluster).

The dry run answers `{dry_run, target, removes, dependents, total, refused, force_allowed,
message}` and changes nothing (no operation, no audit entry, no AWS call but reads). Where a
route has a 200 of its own (no change, deleted) the document says `oneOf` it and the plan.

Each request's dependents, and whether `force` overrides them:

- `DELETE /networks/<n>`: every EKS cluster whose `resourcesVpcConfig` is the VPC (hypd's,
  imported or anyone's), every HyperPod cluster with nodes in its subnets (`VpcConfig` or a
  group's `OverrideVpcConfig`), every network interface in the VPC that is not the network's
  own (its NAT gateways', its endpoints') nor a named cluster's, and the clusters hypd is
  creating into it (their running create: own network of that name, or `existing_vpc`).
  Force: no. AWS refuses to delete the VPC anyway, but only after the NAT gateway (every
  node's way out) went.
- `DELETE /clusters/<c>`: training jobs not finished, inference endpoints, model downloads
  running, other live workloads mounting one of hypd's claims (its data); and, when the
  delete would remove the network its create made, every other cluster in it. Force: yes for
  the workloads; never for another cluster in the network.
- `DELETE .../instance-groups/<g>`, `POST .../nodes/replace`, `.../nodes/delete`: live pods on
  its nodes that would not come back elsewhere: no controller that recreates them, a training
  job's (its operator restarts them against the recovery budget), pinned to the group or the
  node by node selector; DaemonSet pods go with their nodes. The last group stays a plain 409
  `conflict`. A reboot is not checked (the node comes back with its disks). Force: yes.
- `DELETE .../storage/<s>`: live pods, jobs, deployments, statefulsets mounting the claim.
  Force: no; stop them first.
- `PATCH .../features` turning one off. Force: yes. `training_operator`: HyperPodPyTorchJobs
  not finished (anyone's: the CRD goes); `inference_operator`: every
  InferenceEndpointConfig; `tiered_checkpointing`: live pods running as its service account;
  `autoscaling`: pods that would not move off the autoscaled groups' nodes (Karpenter takes
  back a removed NodePool's nodes); `task_governance`: live pods admitted through a Kueue
  queue; `spaces`: every Workspace, in any namespace (the add-on takes its CRD, and so
  every space, with it); `observability`: none (no workload needs the metrics).
- `DELETE .../mlflow`: live pods whose `MLFLOW_TRACKING_URI` names the tracking server, one
  per training job. Force: yes.
- `DELETE .../endpoints/<e>`: a model pool's models served now (each with its workers).
  Force: yes.
- `DELETE .../jobs/<j>`: a job not finished: its live pods. Force: yes.
- `DELETE .../models/<m>`: hypd's endpoints serving the model (its model, or one of a
  pool's). Force: yes.
- `DELETE .../teams/<t>`: the team's work, the live pods in its namespace
  `hyperpod-ns-<t>` (one per training job) and its spaces there, running or stopped (a
  space's queue goes with the team). Force: yes (the work loses its quota).
- `DELETE .../scheduler`: every team quota on the cluster (a plain list from SageMaker, not
  Kubernetes: app/readmodels/teams.py). Force: yes.

A dependent can appear between the check and the act. The network's and the cluster's delete
re-run the check as their first step (`in_use`), and the cluster's again before its network
stage (`network_in_use`), for a cluster made in the network meanwhile (its own leftover
interfaces are AWS's to settle: DependencyViolation retries). So the operation fails there,
`in_use`, before it mutates anything; the cluster's honours the request's `force`. The other
kinds act within seconds of their check.

Faces. The MCP tools take `dry_run` and `force` from the document; their descriptions say
that an `in_use` error names the dependents and that force is the user's decision (the agent
configs' prompt and the playbooks say to ask). The dashboard's one confirmation,
`static/js/confirm.js`, opened by every delete, detach, turn-off and node action, shows the
dry run (what it removes, what depends on it) before its confirm is enabled, and the 409's
dependents when the request itself is refused; `force=true` is sent only once the user typed
the target's name — never the browser's `confirm()`.

Tests: tests/app/test_dependents_api.py (the network under a live cluster over REST and MCP,
with the local AWS's counters and the operation list unchanged; a cluster, the training
operator and a node under a running job); the forced paths in each resource's own tests;
tests/app/test_clusters_api.py (a workload that appears after the request was checked stops
the delete at its first step, the local AWS's counters unchanged);
tests/tasks/test_networks_steps.py (the network's guard step against moto);
tests/cloud/test_dependents.py (the finders' rules); tests/e2e/test_clusters_page.py (the
refusal in Chromium).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from cloud import (
    dependencies,
    eks,
    hyperpod,
    inference,
    jobs,
    kube,
    models,
    networks,
    spaces,
    storage,
    training,
)
from cloud.errors import Refusal
from cloud.nodes import INSTANCE_GROUP_LABEL
from vocabulary.teams import QUEUE_LABEL

IN_USE = "in_use"
LISTED_MAX = 50
"""At most this many dependents are named in a reply (`total` counts them all)."""
NAMED_IN_MESSAGE = 5
HOSTNAME_LABEL = "kubernetes.io/hostname"
CONTROLLERS_THAT_MOVE = ("ReplicaSet", "StatefulSet", "Job", "ReplicationController")
FINISHED_PHASES = ("Succeeded", "Failed")


@dataclass(frozen=True)
class Dependent:
    """One live thing that depends on the target."""

    kind: str
    """what it is: cluster, hyperpod_cluster, network_interface, training_job, endpoint,
    model_download, model, or a Kubernetes kind in lower case (pod, deployment, ...)"""
    name: str
    why: str
    """how it depends on the target, in words"""
    namespace: str | None = None
    cluster: str | None = None
    forceable: bool = True
    """`force=true` may go ahead despite it (it breaks); False: nothing may."""

    @property
    def label(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind.replace('_', ' ')} {where}{self.name}"

    def view(self) -> dict[str, Any]:
        return asdict(self)


def blocking(found: Iterable[Dependent], force: bool) -> list[Dependent]:
    """The dependents that stop the request: all of them, or with `force` the ones force
    may not override."""
    return [d for d in found if not (force and d.forceable)]


def views(found: Sequence[Dependent]) -> list[dict[str, Any]]:
    return [d.view() for d in found[:LISTED_MAX]]


class InUse(Refusal):
    """409 `in_use`: the target's dependents, named, before anything was recorded or
    changed."""

    default_code = IN_USE

    def __init__(self, what: str, found: Sequence[Dependent], force: bool = False) -> None:
        stopping = blocking(found, force)
        names = "; ".join(f"{d.label} ({d.why})" for d in stopping[:NAMED_IN_MESSAGE])
        more = len(stopping) - NAMED_IN_MESSAGE
        if more > 0:
            names += f"; and {more} more"
        forceable = all(d.forceable for d in found)
        advice = ("stop or remove them first, or repeat the request with force=true to go "
                  "ahead anyway (they break)" if forceable else
                  "remove them first; force does not override this")
        super().__init__(f"{what} is in use: {names}. Nothing was changed; {advice}",
                         details={"target": what, "dependents": views(stopping),
                                  "total": len(stopping), "force_allowed": forceable})
        self.dependents = list(stopping)


def refuse(what: str, found: Sequence[Dependent], force: bool = False) -> None:
    """Raise `InUse` when a dependent still blocks the request."""
    if blocking(found, force):
        raise InUse(what, found, force)


# -- Kubernetes objects --------------------------------------------------------------------------

def _md(obj: Mapping[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return _md(obj).get("labels") or {}


def live_pod(pod: Mapping[str, Any]) -> bool:
    """Neither finished nor being deleted."""
    return not _md(pod).get("deletionTimestamp") and \
        (pod.get("status") or {}).get("phase") not in FINISHED_PHASES


def _controller(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    return next((o for o in _md(obj).get("ownerReferences") or () if o.get("controller")), None)


def _of(obj: Mapping[str, Any], why: str, *, kind: str | None = None,
        forceable: bool = True) -> Dependent:
    md = _md(obj)
    return Dependent(kind or str(obj.get("kind") or "object").lower(), md.get("name", "?"), why,
                     namespace=md.get("namespace") or storage.DEFAULT_NAMESPACE,
                     forceable=forceable)


def _pod_why(pod: Mapping[str, Any], place: str) -> str:
    job = _labels(pod).get(training.JOB_LABEL)
    if job:
        return f"a pod of training job {job}, running on {place}"
    owner = _controller(pod)
    if owner is None:
        return f"runs on {place}; no controller recreates it elsewhere"
    return f"runs on {place}; its {owner.get('kind')} {owner.get('name')} does not move it"


def pods_on_nodes(api: Any, node_names: Iterable[str], group: str | None = None
                  ) -> list[Dependent]:
    """The live pods on these Kubernetes Nodes that would not come back elsewhere if the
    nodes went: a pod no controller recreates (a training job's pods among them: their
    operator restarts them only against the job's recovery budget), or one pinned to them
    (by its node selector on the group or the node's hostname). DaemonSet pods go with
    their nodes and are not counted."""
    nodes = set(node_names)
    if not nodes:
        return []
    found = []
    for pod in kube.iter_objects(api, "v1", "Pod"):
        spec = pod.get("spec") or {}
        node = spec.get("nodeName")
        if node not in nodes or not live_pod(pod):
            continue
        owner = _controller(pod)
        if owner is not None and owner.get("kind") == "DaemonSet":
            continue
        selector = spec.get("nodeSelector") or {}
        to_group = group is not None and selector.get(INSTANCE_GROUP_LABEL) == group
        to_node = selector.get(HOSTNAME_LABEL) in nodes
        moves = owner is not None and owner.get("kind") in CONTROLLERS_THAT_MOVE
        if to_group or to_node or not moves:
            place = f"instance group {group}" if to_group else f"node {node}"
            found.append(_of(pod, _pod_why(pod, place), kind="pod"))
    return sorted(found, key=lambda d: (d.namespace or "", d.name))


def group_nodes(api: Any, groups: Iterable[str]) -> list[str]:
    """The Kubernetes Nodes of these instance groups."""
    wanted = ",".join(sorted(set(groups)))
    if not wanted:
        return []
    return [_md(n)["name"] for n in kube.iter_objects(
        api, "v1", "Node", label_selector=f"{INSTANCE_GROUP_LABEL} in ({wanted})")]


def claim_users(api: Any, claim: str, namespace: str) -> list[Dependent]:
    """The live workloads mounting a claim: pods, jobs, deployments, statefulsets."""
    found = []
    for user in storage.claim_users(api, claim, namespace):
        kind, ns, name = user.split("/", 2)
        found.append(Dependent(kind, name, f"mounts claim {claim}", namespace=ns,
                               forceable=False))
    return found


# -- a cluster's workloads ------------------------------------------------------------------------

def training_jobs(api: Any, *, hypds_only: bool = True) -> list[Dependent]:
    """Training jobs that have not finished (hypd's, or every HyperPodPyTorchJob when
    `hypds_only` is False): live work of the cluster and its operator."""
    if hypds_only:
        listed = jobs.list_jobs(api)
    else:
        listed = kube.list_objects(api, training.PYTORCH_API, training.PYTORCH_KIND)
    found = []
    for job in listed:
        state = jobs.state(job, [])
        if state.state in (*jobs.TERMINAL_STATES, "deleting"):
            continue
        hypds = kube.managed_by_hypd(job)
        found.append(_of(job, f"{job.get('kind')} {state.state}"
                              + ("" if hypds else " (not submitted through hypd)"),
                         kind="training_job"))
    return found


def queued_jobs(api: Any) -> list[Dependent]:
    """hypd's training jobs in a team's Kueue queue that have not finished: Kueue admits,
    holds and preempts them (Kueue reads the queue on the job; its pods carry no label)."""
    found = []
    for job in jobs.list_jobs(api):
        queue = _labels(job).get(QUEUE_LABEL)
        state = jobs.state(job, [])
        if queue and state.state not in (*jobs.TERMINAL_STATES, "deleting"):
            found.append(_of(job, f"{job.get('kind')} {state.state} in Kueue queue {queue}",
                             kind="training_job"))
    return found


def _endpoint_mains(api: Any) -> list[dict[str, Any]]:
    selector = f"{inference.ENDPOINT_LABEL},{kube.MANAGED_BY_LABEL}={kube.MANAGED_BY_VALUE}"
    return [obj for api_version, kind in (("apps/v1", "Deployment"),
                                          (inference.IEC_API, inference.IEC_KIND))
            for obj in kube.list_objects(api, api_version, kind, None, selector)]


def endpoints(api: Any) -> list[tuple[inference.Endpoint, dict[str, Any]]]:
    """hypd's endpoints in the cluster, each with its main object."""
    found = []
    for obj in _endpoint_mains(api):
        ep = inference.stored_spec(obj)
        if ep is not None and not _md(obj).get("deletionTimestamp"):
            found.append((ep, obj))
    return found


def _endpoint(ep: inference.Endpoint, why: str, forceable: bool = True) -> Dependent:
    return Dependent("endpoint", ep.name, why, namespace=ep.namespace, forceable=forceable)


def _serves(ep: inference.Endpoint) -> str:
    models_served = ", ".join(ep.pool_models) if ep.pool_models else ep.model
    return f"{ep.kind} endpoint serving {models_served}"


def downloads(api: Any) -> list[Dependent]:
    """Model downloads whose Job still runs."""
    found = []
    for job in kube.list_objects(api, "batch/v1", "Job", models.NAMESPACE,
                                 {kube.MANAGED_BY_LABEL: kube.MANAGED_BY_VALUE}):
        model = _labels(job).get(models.MODEL_LABEL)
        if model and models.job_state(job) not in ("succeeded", "failed"):
            found.append(Dependent("model_download", model,
                                   "downloading into the cluster's bucket",
                                   namespace=models.NAMESPACE))
    return found


def _hypds_workload(obj: Mapping[str, Any]) -> bool:
    labels = _labels(obj)
    return any(k in labels for k in (training.JOB_LABEL, inference.ENDPOINT_LABEL,
                                     models.MODEL_LABEL))


def storage_workloads(api: Any) -> list[Dependent]:
    """Live workloads hypd did not submit that mount one of hypd's claims (the cluster's
    data): a pod counts unless its ReplicaSet, Job or StatefulSet is listed for it."""
    claims = {(v["namespace"], v["claim"]) for v in storage.volumes(api) if v["claim_exists"]}
    found = []
    for obj in storage.workloads(api):
        owner = _controller(obj)
        if _hypds_workload(obj) or (owner and owner.get("kind") in CONTROLLERS_THAT_MOVE):
            continue
        ns = _md(obj).get("namespace") or storage.DEFAULT_NAMESPACE
        mounted = [c for n, c in sorted(claims) if n == ns and storage.storage_users([obj], c, ns)]
        if mounted:
            found.append(_of(obj, f"mounts {', '.join(mounted)} (the cluster's storage)"))
    return found


def cluster_workloads(api: Any) -> list[Dependent]:
    """What runs on a cluster that its delete would kill: training jobs not finished,
    inference endpoints, model downloads, and any other live workload using the cluster's
    storage. (Operations of its own — a download, a job's KubeRay install — hold locks on the
    cluster and refuse its delete before this is asked.)"""
    return (training_jobs(api)
            + [_endpoint(ep, _serves(ep)) for ep, _ in endpoints(api)]
            + downloads(api) + storage_workloads(api))


# -- a network ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RegionClusters:
    """Every EKS and HyperPod cluster of a region, described once: what a read of all the
    region's networks checks each network against (without it, each network described every
    cluster again)."""

    eks: list[dict[str, Any]]
    hyperpod: list[dict[str, Any]]


def region_clusters(eks_client: Any, sm: Any) -> RegionClusters:
    return RegionClusters(eks.described_clusters(eks_client), hyperpod.described_clusters(sm))


def in_network(ec2: Any, eks_client: Any, sm: Any, view: Mapping[str, Any], *,
               interfaces: bool = True, leaving: str | None = None,
               clusters: RegionClusters | None = None) -> list[Dependent]:
    """What runs in a network (as `networks.get_network` answers it): every EKS cluster
    whose VPC it is, every HyperPod cluster with nodes in its subnets — whoever made them —
    and, with `interfaces`, every network interface in the VPC that is not the network's
    own, not one of those clusters' and not settling (`networks.settling`: a service's,
    let go of, which AWS removes by itself — a delete waits for those). None of them can be
    forced: AWS refuses to delete the VPC while they are there. `leaving`: a cluster whose
    own delete asks (it and its interfaces are on their way out, not dependents).
    `clusters`: the region's clusters already described (`region_clusters`); read now if
    not given."""
    vpc_id = view["vpc_id"]
    subnets = [s["id"] for s in view.get("subnets") or ()]
    found = []
    for cluster in eks.clusters_in_vpc(eks_client, vpc_id, subnets,
                                       described=clusters and clusters.eks):
        if cluster["name"] == leaving:
            continue
        whose = "made by hypd" if eks.made_by_hypd_for(cluster.get("tags"), cluster["name"]) \
            else "not made by hypd"
        found.append(Dependent("cluster", cluster["name"],
                               f"EKS cluster ({cluster.get('status')}, {whose}) in VPC "
                               f"{vpc_id}", forceable=False))
    named = {d.name for d in found}
    for cluster in hyperpod.clusters_in_subnets(sm, subnets,
                                                described=clusters and clusters.hyperpod):
        if cluster["name"] in named or cluster["name"] == leaving:
            continue
        found.append(Dependent("hyperpod_cluster", cluster["name"],
                               f"HyperPod cluster ({cluster['status']}) with nodes in the "
                               "network's subnets", forceable=False))
    if interfaces:
        clusters = {d.name for d in found} | ({leaving} if leaving else set())
        for eni in networks.foreign_interfaces(ec2, view["name"], vpc_id):
            what = eni.get("Description") or ""
            if networks.settling(eni) or any(name and name in what.split()
                                             for name in clusters):
                continue  # settling, or a cluster's own interface: named already or leaving
            attached = (eni.get("Attachment") or {}).get("InstanceId")
            found.append(Dependent(
                "network_interface", eni["NetworkInterfaceId"],
                f"{eni.get('InterfaceType') or 'interface'} in subnet {eni.get('SubnetId')}"
                + (f": {what}" if what else "") + (f" (instance {attached})" if attached else ""),
                forceable=False))
    return found


# -- a managed feature being turned off ---------------------------------------------------------

def workspaces(api: Any) -> list[dict[str, Any]]:
    """Every Workspace on the cluster (any namespace, whoever made it), sorted by namespace
    and name; none when the cluster does not serve the kind (the Spaces add-on is not
    installed)."""
    return sorted(kube.list_objects(api, spaces.API_VERSION, spaces.KIND),
                  key=lambda w: (_md(w).get("namespace") or "", _md(w).get("name") or ""))


def _space(workspace: Mapping[str, Any]) -> Dependent:
    hypds = kube.managed_by_hypd(workspace)
    return _of(workspace, "a space: its Workspace goes with the Spaces add-on's CRD"
                          + ("" if hypds else " (not made through hypd)"), kind="space")


def _running_as(api: Any, subjects: set[tuple[str, str]], why: str) -> list[Dependent]:
    found = []
    for pod in kube.iter_objects(api, "v1", "Pod"):
        ns = _md(pod).get("namespace") or storage.DEFAULT_NAMESPACE
        account = (pod.get("spec") or {}).get("serviceAccountName")
        if (ns, account) in subjects and live_pod(pod):
            found.append(_of(pod, why, kind="pod"))
    return found


def feature_users(api: Any, feature: str, autoscaled_groups: Iterable[str] = ()
                  ) -> list[Dependent]:
    """The live work a managed feature's off would break:
    training_operator — HyperPodPyTorchJobs not finished (anyone's; the CRD goes with it);
    inference_operator — every InferenceEndpointConfig (a managed endpoint);
    tiered_checkpointing — pods running as its service account (they write checkpoints);
    autoscaling — pods on the nodes of autoscaled groups (Karpenter takes back the nodes of
    a NodePool that is removed) that would not come back elsewhere;
    task_governance — pods submitted through a Kueue queue;
    spaces — every Workspace (anyone's, in any namespace: the CRD goes with the add-on,
    and each space with it);
    observability — nothing (metrics stop being collected; no workload needs them)."""
    if feature == "training_operator":
        return training_jobs(api, hypds_only=False)
    if feature == "inference_operator":
        found = []
        for config in kube.list_objects(api, inference.IEC_API, inference.IEC_KIND):
            hypds = inference.stored_spec(config)
            found.append(_endpoint(hypds, "managed endpoint of the inference operator")
                         if hypds else _of(config, "managed endpoint of the inference "
                                                   "operator (not made through hypd)"))
        return found
    if feature == "tiered_checkpointing":
        subjects = {(d.identity.namespace or "", d.identity.service_account or "")
                    for d in dependencies.entries(feature)
                    if d.kind == "service-account" and d.identity is not None}
        return _running_as(api, subjects, "writes checkpoints as the feature's service "
                                          "account")
    if feature == "autoscaling":
        groups = list(autoscaled_groups)
        return pods_on_nodes(api, group_nodes(api, groups))
    if feature == "spaces":
        return [_space(w) for w in workspaces(api)]
    if feature == "task_governance":
        return [*queued_jobs(api),
                *(_of(pod, f"admitted through Kueue queue {_labels(pod)[QUEUE_LABEL]}",
                      kind="pod")
                  for pod in kube.iter_objects(api, "v1", "Pod", label_selector=QUEUE_LABEL)
                  if live_pod(pod))]
    return []


def team_work(api: Any, namespace: str) -> list[Dependent]:
    """A team's work: the live pods in its namespace (what its queue admitted or holds), one
    dependent per training job where a pod belongs to one, and its spaces (a Workspace in
    its namespace, running or stopped: its queue goes with the team)."""
    found: dict[tuple[str, str], Dependent] = {}
    for ws in kube.iter_objects(api, spaces.API_VERSION, spaces.KIND, namespace):
        found[("space", _md(ws)["name"])] = _of(
            ws, "a space of the team: its queue goes with the team", kind="space")
    for pod in kube.iter_objects(api, "v1", "Pod", namespace):
        if not live_pod(pod) or ("space", _labels(pod).get(spaces.POD_LABEL)) in found:
            continue
        job = _labels(pod).get(training.JOB_LABEL)
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        if job:
            found.setdefault(("training_job", job), Dependent(
                "training_job", job, "runs in the team's namespace", namespace=namespace))
        else:
            found[("pod", _md(pod)["name"])] = _of(pod, f"{phase} in the team's namespace",
                                                   kind="pod")
    return list(found.values())


# -- MLflow, endpoints, jobs, models ------------------------------------------------------------

def tracking_users(api: Any, tracking_server_arn: str) -> list[Dependent]:
    """Live pods logging to the tracking server (their MLFLOW_TRACKING_URI names it), one
    dependent per training job (or per pod outside one)."""
    found: dict[tuple[str, str, str], Dependent] = {}
    for pod in kube.iter_objects(api, "v1", "Pod"):
        if not live_pod(pod):
            continue
        env = [e for c in (pod.get("spec") or {}).get("containers") or ()
               for e in c.get("env") or ()]
        if not any(e.get("name") == "MLFLOW_TRACKING_URI" and
                   e.get("value") == tracking_server_arn for e in env):
            continue
        ns = _md(pod).get("namespace") or storage.DEFAULT_NAMESPACE
        job = _labels(pod).get(training.JOB_LABEL)
        key = ("training_job", ns, job) if job else ("pod", ns, _md(pod)["name"])
        found.setdefault(key, Dependent(key[0], key[2], "logs to the tracking server",
                                        namespace=ns))
    return list(found.values())


def pool_assignments(api: Any, ep: inference.Endpoint) -> list[Dependent]:
    """A model pool's models served now: each model with its assigned workers."""
    served: dict[str, list[str]] = {}
    for worker in inference.pool_workers(api, ep):
        model = inference.worker_model(worker)
        if model != inference.UNASSIGNED and live_pod(worker):
            served.setdefault(model, []).append(_md(worker)["name"])
    return [Dependent("model", model, f"served by pool worker{'s' if len(pods) > 1 else ''} "
                      f"{', '.join(sorted(pods))}", namespace=ep.namespace)
            for model, pods in sorted(served.items())]


def job_pods(api: Any, job: Mapping[str, Any]) -> list[Dependent]:
    """A job's live pods, while the job has not finished."""
    if jobs.state(job, []).state in jobs.TERMINAL_STATES:
        return []
    return [_of(pod, f"pod of the job, {(pod.get('status') or {}).get('phase') or 'Pending'}"
                     + (f" on {pod['spec']['nodeName']}"
                        if (pod.get("spec") or {}).get("nodeName") else ""), kind="pod")
            for pod in jobs.pods(api, job) if live_pod(pod)]


def model_users(api: Any, model: str) -> list[Dependent]:
    """hypd's endpoints that serve the model (their model, one of a pool's models)."""
    return [_endpoint(ep, _serves(ep)) for ep, _ in endpoints(api)
            if ep.model == model or model in ep.pool_models]
