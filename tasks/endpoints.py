"""Operation kinds of inference endpoints, each on target `cluster/<c>/endpoint/<e>`, and
(in the same part of the product) of the models they serve.

- `endpoint.create`: `requirements` (the AWS Load Balancer Controller for an external
  Service, KEDA for an autoscaled SGLang endpoint; only when the endpoint needs one), `deploy`
  (the InferenceEndpointConfig, or the Deployment and the SGLang router; waits until the
  servers are available), `service` (the Service(s), not for a managed endpoint; an external
  one, an NLB, waits for its load balancer's address), `autoscaler` (KEDA's ScaledObject, for
  an autoscaled routed endpoint);
- `endpoint.update`: an explicit diff (replicas, autoscaling bounds, routing); `200
  {"changed": false}` when already as asked. `requirements` when what it needs changed;
  `scale_in` for a pool scaled in (unassigned workers are marked to go first and the
  Deployment scaled only when the controller would remove nothing else), else `deploy`
  again; for a routed SGLang endpoint `service` again (so one made before the load reader
  gets its Service); `autoscaler` when it is or was routed;
- `endpoint.reassign`: `relabel`, one pool worker's model label changed, nothing else of the
  pod;
- `endpoint.delete`: `delete`, every object hypd made for the endpoint (every labelled
  object, foreground), then waits until gone.

`requirements` installs entries of `cloud/data/dependencies.yaml` in the non-toggle features
`load_balancing` and `event_autoscaling` when first needed, with the same `cloud/addons.py`
plan/apply and `cloud/identity.py` the features use, under the cluster's features mutex, and
waits until their Deployments are available. Every write is a server-side apply of the whole
object by name, or a merge patch of one label, so a step re-run after a crash converges on
the same objects: nothing is made twice. A worker SIGKILLed after the API server took the
Deployment leaves one Deployment (same uid), one ReplicaSet (tests/tasks/test_endpoints_kill.py;
the fault point is a held Kubernetes write, below).

Endpoints are the cluster's own objects, each labelled `hypd.io/endpoint=<e>`. The request
the route accepted is kept on the main object (annotation `hypd.io/endpoint-spec`), so reads,
changes and deletes start from what the cluster holds (`cloud/inference.py` builds every
manifest from an `Endpoint`).

`kind: managed` is one `InferenceEndpointConfig`: model in the cluster's bucket under
`models/<m>`, instance type, replicas, managed tiered KV cache (L1 always, HyperPod tiered
storage as L2 on request), intelligent routing, autoscaling with a CloudWatch trigger. Its
`deploy` step waits until the operator reports the config's current generation
`DeploymentComplete` (`status.state`, else
`status.deploymentStatus.deploymentObjectOverallState`, as the HyperPod CLI reads it;
`DeploymentFailed` fails the step), and the read model takes state, ready replicas and
message from the same status. It is refused (412, naming the `inference_operator` toggle)
while that feature is not on, read through `cloud/features.py`; and (409, with the holder's
ARN) when a SageMaker endpoint of that name exists in the Region: the config's
`endpointName` is the endpoint's name, and the operator makes a SageMaker endpoint under it
(names are unique per account and Region).

`vllm`, `sglang`, `custom`: a Deployment (GPU requests and limits, readiness and liveness
probes, the shared bucket's claim at `/s3`, `/dev/shm`, the model path) and its Service:
`in_cluster` (ClusterIP), `load_balancer` (an NLB: `loadBalancerClass: service.k8s.aws/nlb`
and the AWS Load Balancer Controller's annotations) or `pool`.

A model pool's workers carry `hypd.io/model=unassigned`, a label outside the Deployment's
selector (relabelling a selected label makes the ReplicaSet release the pod and make another;
the sandbox plays that too); one binding Service per model selects it. A worker reads its
label through a downward-API file and its liveness probe fails when the label no longer names
what it serves, so the kubelet restarts the container in the same pod. Reassigning
(`POST .../reassign`) is a merge patch of that one label. Scaling a pool in marks workers
with `controller.kubernetes.io/pod-deletion-cost` (unassigned -1000, assigned 1000) and
lowers the replicas only when the ReplicaSet controller's order (unscheduled, pending, not
ready, then cost) would take unassigned workers alone; otherwise the step waits. The route
refuses (409) a count below the assigned workers.

SGLang with several replicas or autoscaling gets the SGLang router (`--policy cache_aware`,
its workers found by label through the Kubernetes API with a Role of its own) behind the
endpoint's Service. Beside it in the router's pod runs hypd's load reader
(`cloud/incluster/sglang_load.py`, mounted from a ConfigMap made from that file; its
in-cluster Service `<e>-router`, port 29100, `GET /load`: the router's workers' `/get_load`
`num_reqs`, running plus waiting, summed). A KEDA `ScaledObject` reads it (metrics-api
scaler, JSON `load`, `metricType: AverageValue`: desired = ceil(total / target); fields KEDA
2.17 knows; replicas left to KEDA: server-side apply never sets them then). Why a reader:
KEDA 2.17's metrics-api takes the first matching Prometheus series and cannot add, the
router's `sgl_router_running_requests` is one gauge per worker (set only under cache_aware,
stale after a worker goes), and there is no Prometheus server to ask
(`inference.scaled_object`'s docstring cites the sources). With no server there is nothing to
read, so an SGLang endpoint's `autoscaling.min` is at least 1 (422 otherwise).

Too large for the cluster, checked before anything is recorded: `replicas` servers of `gpus`
GPUs each, on nodes of the endpoint's instance type when it names one (a managed endpoint
always does: a type none of the cluster's groups has is `422 validation_failed` naming the
groups), and as many at the autoscaling maximum, go through the one capacity-fit check
(cloud/fit.py, as a training job does: see cloud/training.py). That is `422
exceeds_capacity` with the numbers, on create and on a PATCH that raises `replicas` or
`autoscaling.max` (one already as asked answers 200 unchanged; a scale-in or a routing change
is never refused for a cluster that shrank). One that fits but waits says why, as a job does:
the read's `waiting` (its servers' PodScheduled conditions: hypd's pods by
`hypd.io/endpoint`, one list for all endpoints; a managed endpoint's by the operator's
`app=<name>`), its `message` when nothing else is said ("1 of its servers wait for capacity:
0/2 nodes are available: ..."), the `deploy` step's detail while it waits, and the endpoints
page under the state (`endpoint-waiting-<e>`).

Invoke (`POST .../endpoints/<e>/invoke`, operator) sends one OpenAI-compatible completion
through the Kubernetes API server's service proxy,
`POST /api/v1/namespaces/<ns>/services/<svc>:http/proxy/v1/completions`. Namespace and
Service come from the endpoint's stored request (a pool's binding Service for the model
named, which must be one of the pool's); port, path and method are fixed by hypd, every path
part quoted. The body is built by hypd from a prompt (at most 4000 characters), `max_tokens`
(at most 256) and the model; unknown fields are 422; the answer is cut at 64 KiB. A managed
endpoint's Service is the one the inference operator made for its InferenceEndpointConfig:
AWS does not publish that Service's name, so hypd finds it by its controller ownerReference
to the config (uid) in the endpoint's namespace, and its port by the config's
`modelInvocationPort` (`cloud.inference.operator_service`); the config names the same path
(`invocationEndpoint: v1/completions`). 409 until the operator has made it. The MCP tool
`invoke_endpoint` is mutating (an operator's; it uses GPUs) with `get_endpoint` as its
confirming read, as import and the active cluster are.

Models (`GET/POST /clusters/<c>/models`, `DELETE .../models/<m>`; the kinds are in
tasks/models.py). `model.delete` has one step, `files`: every object version under
`models/<m>/`, counted; deleting what is gone deletes nothing. It is refused while endpoints
serve the model (see cloud/dependents.py). `model.download` on `cluster/<c>/model/<m>`:

- `identity`: service account `default/hypd-model-download`, IRSA role
  `hypd-<c>-model-download`: list the bucket under `models/`, put and abort multipart uploads
  under `models/*` only;
- `job`: for an S3 source, its read is an extra inline policy for that download, granted
  here and taken back by the `cleanup` step, or, when the Job fails or disappears, before the
  step fails. `source_grant` (granting -> granted -> revoking -> revoked) is recorded before
  each IAM call, so a re-run task calls nothing twice and a retry grants anew. Then a
  `batch/v1` Job `hypd-model-<m>` labelled with the operation id, adopted by it after a
  crash; a finished one of an earlier download is removed first. Every value reaches it as an
  environment variable: `hf download` into an emptyDir, then `aws s3 cp --recursive` to
  `s3://<bucket>/models/<m>/`, the S3 API, never the Mountpoint mount. Its wait records
  `files` and `bytes` read from the bucket itself and ends with the Job;
- `cleanup`: the source's read taken back.

The Job's image is the setting `HYPD_MODEL_DOWNLOAD_IMAGE`, read by the worker that builds the
Job (`Settings.from_env()` in `apply_job`). The default `python:3.12-slim` pip-installs the
pinned Hugging Face CLI and AWS CLI (`cloud.models.TOOLS`) at every run, which needs a way to
PyPI from the cluster; `deploy/images/model-download/Dockerfile` bakes exactly those pins
(tests/cloud/test_models.py keeps them equal), and the fixed script installs only when
`command -v hf` or `aws` fails (tested by running it in a real `sh` against stand-in tools).

A cancelled download stops by the kind's `on_cancel`. It deletes the operation's own Job
(only one carrying its `hypd.io/operation` label, bound to the uid it found by a delete
precondition) with `propagationPolicy: Background`, since a `batch/v1` Job deleted without a
policy leaves its pods running, and records `job_deleted: <uid>`. Then it takes the source's
read back (even when the deletion failed; a retryable failure deletes again at the next
boundary), and, cancelled in the `job` step, once no pod of it is left to write, deletes the
partial files under `models/<m>/` (a finished model, cancelled at `cleanup`, stays). A re-run
after a worker's death finds the Job gone or someone else's and deletes nothing.

A hub token is accepted only as a Secret reference (`hub_token_secret: {name, key}`, checked
to exist): it reaches the pod as `HF_TOKEN` from `secretKeyRef` and never passes through hypd
(tests/app/test_models_api.py greps the operation, its events, the web and worker logs, the
Job, the pod, its log and the cluster's events for it).

The sandbox serves. `sandbox/simulator/workloads.py` plays kube-controller-manager's
Deployment, ReplicaSet (the real scale-in order with pod-deletion-cost; release of a pod
relabelled out of the selector), Job and Endpoints controllers and the AWS Load Balancer
Controller's NLB address, and answers the API server's service proxy from a ready endpoint
pod: `programs.model_server` recognises vLLM, SGLang and the SGLang router by their command
lines and answers a small deterministic completion (`system_fingerprint` names the pod);
anything else refuses the connection (503). `sandbox/simulator/inference.py` plays the
HyperPod inference operator (once its add-on's controller runs): from each
InferenceEndpointConfig a Deployment and a ClusterIP Service it controls, pods labelled
`app=<config>` (the label the HyperPod CLI lists an endpoint's pods by) on nodes of its
instance type, a model server answering on the invocation port, and the status the CRD
describes (tests/app/test_endpoints_api.py validates it as a closed schema).
`sandbox/simulator/downloads.py` plays `pip install`, `hf download` (a deterministic hub;
gated organisations need a token Secret) and `aws s3 cp`, whose uploads land in the local
AWS's S3 as the CLI would send them (a program line may carry an effect), with the shell's
list rules (`programs.run_script`): a stock `python:*` image has the tools only once
`pip install` ran, an image named `.../hypd-model-download:...` has them from the start. The
sandbox's API server orphans a `batch/v1` Job's pods when it is deleted without a
propagation policy, as Kubernetes does. Kubernetes writes are fault points too: a hold on
service `kubernetes`, action `<verb> <plural>` (e.g. `patch deployments`) keeps the API
server's answer back after the store took the write.

Faces. MCP tools `list_endpoints`, `get_endpoint`, `create_endpoint`, `update_endpoint`,
`delete_endpoint`, `reassign_endpoint_worker`, `invoke_endpoint`, `list_models`,
`download_model`, `remove_model`. Dashboard pages `#/clusters/<c>/endpoints` (a create form,
`views/endpoint_form.js`, its choices and bounds from the OpenAPI document through
`rules.js`, routing per kind from the `x-hypd-by-kind` extension on `routing`; per row a test
completion and a delete, each in a dialog, `views/endpoint_actions.js`; a pool's workers,
reassigned by menu) and `#/clusters/<c>/models` (a download from the hub or from an S3
prefix; downloads with files and bytes; a model's removal in a dialog). Skills
`skills/deploy-model.md` (the user states the GPU count) and `skills/download-model.md`. A
route reaches a cluster's Kubernetes API through `app/readmodels/kubeapi.py` (409 until
ACTIVE, 502 for its failures), which storage uses too.

The controller's webhook certificate. The AWS Load Balancer Controller (controller-runtime)
exits at start without `ca.crt`, `tls.crt`, `tls.key` in
/tmp/k8s-webhook-server/serving-certs (kubernetes-sigs/aws-load-balancer-controller#1942).
As its Helm chart does, `cloud/manifests/aws-load-balancer-controller.yaml` has the
`kubernetes.io/tls` Secret `kube-system/aws-load-balancer-tls` (no data; annotated
`hypd/serving-certificate-for: aws-load-balancer-webhook-service`), the Deployment mounting
it read-only there and the Service `aws-load-balancer-webhook-service` (443 -> the
container's `webhook-server` port 9443). `cloud/addons.py` never applies that Secret:
`cloud/serving_certs.py` creates it when absent (POST; a 409 keeps the one another install
made) with a new self-signed CA (P-256, ten years, its key dropped) and a server certificate
it signs for `<service>.<ns>`, `.svc` and `.svc.cluster.local`. An existing Secret is kept
as it is: a re-apply lists it under `kept`, never rotates it; one lacking a file is refused
(412), not overwritten. The key is in no log, repr or step result (tests/cloud/test_addons.py,
tests/cloud/test_serving_certs.py: a real TLS handshake against the CA).

CRDs: the AWS Load Balancer Controller's TargetGroupBinding and IngressClassParams
(kubernetes-sigs/aws-load-balancer-controller v2.13.4) and KEDA's six (ScaledObject,
ScaledJob, TriggerAuthentication, ClusterTriggerAuthentication, CloudEventSource,
ClusterCloudEventSource; kedacore/keda v2.17.2: its operator starts a controller for each,
and its ClusterRole now lets it watch them all, as upstream's does) are upstream's files,
unchanged, in `cloud/manifests/*-crds/` with a SOURCES.md each (source, tag, commit, git blob
per file; tests/cloud/test_addons.py checks the blobs), applied before the controllers.
KubeRay's RayJob, RayCluster and RayService CRDs (ray-project/kuberay v1.7.0) are shipped the
same way (`cloud/manifests/kuberay-crds/`). Not done: neither the LBC nor KEDA installs its
admission webhooks, so nothing in the API server calls the LBC's webhook server: hypd's
Services carry every annotation, the Service mutator is off, no namespace asks for
readiness-gate injection, the only TargetGroupBindings are the controller's own; the
manifest's header says why.

The sandbox's API server holds custom resources to their CRD's structural schema as a real
one does: unknown fields pruned (a warning; 400 under `fieldValidation=Strict`); type,
required, enum and bound violations 422 `Invalid` with field paths. So hypd's RayJobs and
ScaledObjects, and (with the sandbox's upstream inference-operator and NodePool CRDs) its
InferenceEndpointConfigs and NodePools, are checked by the server in every stack test,
besides the closed-schema tests (tests/crdkit.py), and what hypd reads back carries the CRDs'
defaults as on a real cluster; CEL rules are not evaluated there (sandbox/README.md).
"""

from __future__ import annotations

from typing import Any

from cloud import dependencies, eks, iam, identity, inference, kube, requirements, storage
from cloud.inference import Endpoint
from tasks.engine.kinds import OperationKind, Step, StepContext, StepFailed, StepRetry
from tasks.outcomes import guarded

READY_POLL_S = 5.0
OPERATOR_FEATURE = "inference_operator"


def target(cluster: str, endpoint: str) -> str:
    return f"cluster/{cluster}/endpoint/{endpoint}"


def _endpoint(ctx: StepContext) -> Endpoint:
    return Endpoint.from_params(ctx.params["endpoint"])


def _api(ctx: StepContext) -> Any:
    return eks.api_client(ctx.params["cluster"], ctx.region)


def _names(objects: list[dict[str, Any]]) -> list[str]:
    return [f"{o['kind']}/{o['metadata']['name']}" for o in objects]


def _objects(ctx: StepContext, ep: Endpoint) -> inference.Objects:
    return inference.objects(ep, ctx.params.get("bucket") or "", ctx.region)


def needed_dependencies(ep: Endpoint) -> list[str]:
    """The dependency entries (cloud/data/dependencies.yaml) an endpoint needs."""
    needed = []
    if ep.service == inference.LOAD_BALANCER:
        needed.append("aws-load-balancer-controller")
    if ep.routed and ep.autoscaling is not None:
        needed.append("keda")
    return needed


# -- requirements --------------------------------------------------------------------------------

def _wanted(ep: Endpoint) -> list[dependencies.Dependency]:
    return dependencies.with_requirements(needed_dependencies(ep))


@guarded
def ensure_requirements(ctx: StepContext) -> dict[str, Any]:
    """What the endpoint's Service or autoscaler needs in the cluster, installed once: each
    consumer's role and service account, then the manifests."""
    wanted = _wanted(_endpoint(ctx))
    if not wanted:
        return {"requirements": []}
    cluster = ctx.params["cluster"]
    account = iam.account_id(ctx.client("sts"))
    facts = identity.facts(ctx.client("eks"), cluster, ctx.region, account,
                           storage.shared_bucket_name(cluster, account, ctx.region))
    with ctx.lock(f"features/{cluster}"):
        done = requirements.ensure(ctx.client("eks"), ctx.client("iam"), ctx.client("s3"),
                                   _api(ctx), wanted, facts, ctx.region, ctx.token)
    return {"requirements": [d.name for d in wanted], "actions": done["actions"]}


@guarded
def wait_requirements(ctx: StepContext) -> float | None:
    """Until the controllers run (their Deployments available)."""
    waiting = requirements.not_running(_api(ctx), _wanted(_endpoint(ctx)), ctx.region)
    if waiting is not None:
        ctx.detail(f"waiting for {waiting} to run")
        return READY_POLL_S
    return None


# -- deploy --------------------------------------------------------------------------------------

def _operator_missing(ctx: StepContext) -> StepFailed:
    return StepFailed(f"the cluster does not serve {inference.IEC_KIND}: turn the "
                      f"{OPERATOR_FEATURE} feature on (PATCH /clusters/{ctx.params['cluster']}"
                      f"/features) first", "precondition_failed")


@guarded
def apply_deploy(ctx: StepContext) -> dict[str, Any]:
    ep = _endpoint(ctx)
    api = _api(ctx)
    parts = _objects(ctx, ep)
    applied = []
    for obj in [*parts.main, *parts.router]:
        try:
            applied.append(kube.server_side_apply(api, obj))
        except kube.KubeError as exc:
            if exc.http_status == 404 and obj["kind"] == inference.IEC_KIND:
                raise _operator_missing(ctx) from exc
            raise
    main = applied[0]
    return {"objects": _names(applied), "uid": main["metadata"].get("uid")}


def _available(ctx: StepContext, ep: Endpoint, name: str, wanted: int) -> float | None:
    found = kube.get_object(_api(ctx), "apps/v1", "Deployment", name, ep.namespace)
    if found is None:
        raise StepFailed(f"Deployment {ep.namespace}/{name} disappeared while deploying; "
                         "retry to apply it again", "upstream_error")
    available = (found.get("status") or {}).get("availableReplicas") or 0
    if available < wanted:
        selector = ((found.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        waiting = kube.waiting_pods(kube.list_objects(_api(ctx), "v1", "Pod", ep.namespace,
                                                      label_selector=selector))
        why = (f"; {len(waiting)} wait for capacity: {waiting[0]['message']}"
               if waiting else "")
        ctx.detail(f"{name}: {available} of {wanted} servers available{why}")
        return READY_POLL_S
    return None


def _operator_done(ctx: StepContext, ep: Endpoint) -> float | None:
    """Until the inference operator reports the config's current spec deployed."""
    config = kube.get_object(_api(ctx), inference.IEC_API, inference.IEC_KIND, ep.name,
                             ep.namespace)
    if config is None:
        raise StepFailed(f"{inference.IEC_KIND} {ep.namespace}/{ep.name} disappeared while "
                         "deploying; retry to apply it again", "upstream_error")
    state = inference.operator_state(config)
    if state == inference.OPERATOR_FAILED:
        message = ((config.get("status") or {}).get("deploymentStatus") or {}).get("message")
        raise StepFailed(f"the inference operator failed to deploy {ep.name}: "
                         f"{message or state}", "upstream_error")
    if state != inference.OPERATOR_COMPLETE:
        ctx.detail(f"the inference operator reports {state or 'nothing yet'}")
        return READY_POLL_S
    return None


@guarded
def wait_deploy(ctx: StepContext) -> float | None:
    ep = _endpoint(ctx)
    if ep.kind == inference.MANAGED:
        return _operator_done(ctx, ep)
    if ep.service == inference.POOL:
        wanted = 0  # unassigned workers wait for a model: running, not ready
    elif ep.autoscaling is not None:
        wanted = min(ep.autoscaling.min, 1)
    else:
        wanted = ep.replicas
    waiting = _available(ctx, ep, ep.name, wanted)
    if waiting is None and ep.routed:
        waiting = _available(ctx, ep, inference.router_name(ep), 1)
    return waiting


@guarded
def apply_services(ctx: StepContext) -> dict[str, Any]:
    ep = _endpoint(ctx)
    api = _api(ctx)
    applied = [kube.server_side_apply(api, s) for s in _objects(ctx, ep).services]
    return {"objects": _names(applied)}


@guarded
def wait_services(ctx: StepContext) -> float | None:
    ep = _endpoint(ctx)
    if ep.service != inference.LOAD_BALANCER:
        return None
    found = kube.get_object(_api(ctx), "v1", "Service", ep.name, ep.namespace) or {}
    ingress = ((found.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    if not ingress:
        ctx.detail("waiting for the load balancer's address")
        return READY_POLL_S
    ctx.record(address=ingress[0].get("hostname") or ingress[0].get("ip"))
    return None


@guarded
def apply_autoscaler(ctx: StepContext) -> dict[str, Any]:
    ep = _endpoint(ctx)
    api = _api(ctx)
    parts = _objects(ctx, ep)
    applied = [kube.server_side_apply(api, o) for o in parts.autoscaler]
    if ep.routed and ep.autoscaling is None:  # autoscaling turned off: KEDA's object goes
        kube.delete_object(api, inference.KEDA_API, inference.SCALED_OBJECT, ep.name,
                           ep.namespace)
    return {"objects": _names(applied)}


# -- a pool's workers -----------------------------------------------------------------------------

def _pool_rank(pod: dict[str, Any]) -> tuple[Any, ...]:
    """The ReplicaSet controller's order of deletion, as far as hypd can influence it:
    unscheduled, then pending, then not ready, then lower pod-deletion-cost first."""
    status = pod.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                for c in status.get("conditions") or [])
    cost = int(((pod.get("metadata") or {}).get("annotations") or {}).get(
        inference.DELETION_COST, "0") or 0)
    return (bool((pod.get("spec") or {}).get("nodeName")),
            status.get("phase") == "Running", ready, cost)


@guarded
def scale_in_pool(ctx: StepContext) -> dict[str, Any]:
    """Mark unassigned workers to go first, then lower the Deployment's replicas — only once
    the controller would remove unassigned workers alone (an assigned worker still starting
    would rank before a ready unassigned one: wait for it)."""
    ep = _endpoint(ctx)
    api = _api(ctx)
    workers = inference.pool_workers(api, ep)
    excess = len(workers) - ep.replicas
    if excess <= 0:
        return {"removed": []}
    assigned = [w for w in workers if inference.worker_model(w) != inference.UNASSIGNED]
    free = [w for w in workers if inference.worker_model(w) == inference.UNASSIGNED]
    if len(free) < excess:
        raise StepFailed(f"scaling pool {ep.name} to {ep.replicas} would remove assigned "
                         f"workers: only {len(free)} of {len(workers)} are unassigned",
                         "conflict")
    for worker in workers:
        cost = inference.POOL_DELETION_COST[worker in assigned]
        if ((worker["metadata"].get("annotations") or {}).get(inference.DELETION_COST)
                != cost):
            kube.merge_patch(api, "v1", "Pod", worker["metadata"]["name"], ep.namespace,
                             {"metadata": {"annotations": {inference.DELETION_COST: cost}}})
            worker.setdefault("metadata", {}).setdefault("annotations", {})[
                inference.DELETION_COST] = cost
    first = sorted(workers, key=_pool_rank)[:excess]
    late = [w["metadata"]["name"] for w in first if w in assigned]
    if late:
        raise StepRetry(f"assigned workers {', '.join(late)} are not ready yet: the "
                        "controller would remove them first; waiting", READY_POLL_S)
    ctx.record(keep=[w["metadata"]["name"] for w in assigned],
               remove=[w["metadata"]["name"] for w in first])
    kube.server_side_apply(api, inference.server_deployment(ep))
    return {"removed": [w["metadata"]["name"] for w in first],
            "kept": [w["metadata"]["name"] for w in assigned]}


@guarded
def wait_scale_in(ctx: StepContext) -> float | None:
    ep = _endpoint(ctx)
    names = {w["metadata"]["name"] for w in inference.pool_workers(_api(ctx), ep)}
    gone = [n for n in ctx.resources.get("keep") or () if n not in names]
    if gone:
        raise StepFailed(f"assigned workers {', '.join(gone)} were removed by the scale-in",
                         "upstream_error")
    if names & set(ctx.resources.get("remove") or ()):
        return READY_POLL_S
    return None


@guarded
def relabel_worker(ctx: StepContext) -> dict[str, Any]:
    """The worker's model label — only that — so the pod stays where it is and its
    container reloads the model (its liveness probe sees the label change)."""
    ep = _endpoint(ctx)
    api = _api(ctx)
    worker, model = ctx.params["worker"], ctx.params["model"]
    pod = next((w for w in inference.pool_workers(api, ep) if w["metadata"]["name"] == worker),
               None)
    if pod is None:
        raise StepFailed(f"worker {worker} is not in pool {ep.name}", "not_found")
    uid = pod["metadata"].get("uid")
    ctx.record(uid=uid, before=inference.worker_model(pod))
    if inference.worker_model(pod) != model:
        kube.merge_patch(api, "v1", "Pod", worker, ep.namespace,
                         {"metadata": {"labels": {inference.MODEL_LABEL: model}}})
    return {"worker": worker, "uid": uid, "model": model}


# -- delete ----------------------------------------------------------------------------------------

@guarded
def delete_objects(ctx: StepContext) -> dict[str, Any]:
    ep = _endpoint(ctx)
    api = _api(ctx)
    found = inference.owned(api, ep.namespace, ep.name)
    ctx.record(objects=_names(found))
    for obj in found:
        kube.delete_object(api, obj["apiVersion"], obj["kind"], obj["metadata"]["name"],
                           ep.namespace, propagation="Foreground")
    return {"objects": _names(found)}


@guarded
def wait_deleted(ctx: StepContext) -> float | None:
    ep = _endpoint(ctx)
    left = inference.owned(_api(ctx), ep.namespace, ep.name)
    if left:
        ctx.detail(f"still terminating: {', '.join(_names(left))}")
        return READY_POLL_S
    return None


# -- the kinds ------------------------------------------------------------------------------

REQUIREMENTS = Step("requirements", "Install what the endpoint needs (load balancer "
                                    "controller, KEDA) if missing",
                    ensure_requirements, wait_requirements)
DEPLOY = Step("deploy", "Apply the endpoint's servers (and the SGLang router); wait until "
                        "they serve", apply_deploy, wait_deploy)
SERVICE = Step("service", "Apply the endpoint's Service(s)", apply_services, wait_services)
AUTOSCALER = Step("autoscaler", "Apply KEDA's ScaledObject", apply_autoscaler)
SCALE_IN = Step("scale_in", "Scale the pool in, removing unassigned workers only",
                scale_in_pool, wait_scale_in)


def _create_steps(params: dict[str, Any]) -> tuple[Step, ...]:
    ep = Endpoint.from_params(params["endpoint"])
    steps = [DEPLOY] if ep.kind == inference.MANAGED else [DEPLOY, SERVICE]
    if needed_dependencies(ep):
        steps.insert(0, REQUIREMENTS)
    if ep.routed and ep.autoscaling is not None:
        steps.append(AUTOSCALER)
    return tuple(steps)


def _update_steps(params: dict[str, Any]) -> tuple[Step, ...]:
    ep = Endpoint.from_params(params["endpoint"])
    before = Endpoint.from_params(params["before"])
    steps: list[Step] = []
    if needed_dependencies(ep) != needed_dependencies(before):
        steps.append(REQUIREMENTS)
    if ep.service == inference.POOL and ep.replicas < before.replicas:
        steps.append(SCALE_IN)
    else:
        steps.append(DEPLOY)
    if ep.routed:  # its Services again: the ScaledObject reads the load reader's Service
        steps.append(SERVICE)
    if ep.routed or before.routed:
        steps.append(AUTOSCALER)
    return tuple(steps)


def endpoint_url(params: dict[str, Any]) -> str:
    return f"/api/v1/clusters/{params['cluster']}/endpoints/{params['endpoint']['name']}"


ENDPOINT_CREATE = OperationKind(
    name="endpoint.create", steps=(REQUIREMENTS, DEPLOY, SERVICE, AUTOSCALER),
    select=_create_steps, resource_url=endpoint_url)
ENDPOINT_UPDATE = OperationKind(
    name="endpoint.update", steps=(REQUIREMENTS, SCALE_IN, DEPLOY, SERVICE, AUTOSCALER),
    select=_update_steps, resource_url=endpoint_url)
ENDPOINT_REASSIGN = OperationKind(
    name="endpoint.reassign",
    steps=(Step("relabel", "Change the worker's model label", relabel_worker),),
    resource_url=endpoint_url)
ENDPOINT_DELETE = OperationKind(
    name="endpoint.delete",
    steps=(Step("delete", "Delete the endpoint's objects", delete_objects, wait_deleted),),
    resource_url=endpoint_url)
