"""Operation kinds of inference endpoints, each on target `cluster/<c>/endpoint/<e>`:

- `endpoint.create`: `requirements` (the AWS Load Balancer Controller for an external
  Service, KEDA for an autoscaled SGLang endpoint: installed when first needed, under the
  cluster's features mutex), `deploy` (the InferenceEndpointConfig, or the Deployment and
  the SGLang router; waits until the servers are available), `service` (the Service(s); an
  external one waits for its load balancer's address), `autoscaler` (KEDA's ScaledObject);
- `endpoint.update` (explicit diff: replicas, autoscaling bounds, routing): `scale_in`
  (a pool only: unassigned workers are marked to go first and the Deployment scaled only
  when the controller would remove nothing else), then `deploy` again, and for a routed
  SGLang endpoint `service` and `autoscaler` again;
- `endpoint.reassign`: one pool worker's model label changed — nothing else of the pod;
- `endpoint.delete`: every object hypd made for the endpoint, then waits until gone.

Every write is a server-side apply of the whole object by name (or a merge patch of one
label), so a step re-run after a crash converges on the same objects: nothing is made twice.
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
