"""A cluster's inference endpoints as REST, MCP and the dashboard show them: read from the
cluster (the objects hypd labelled for each endpoint, the request kept on its main object,
the Deployment's and pods' status, the load balancer's address) and from the endpoint
operations running now."""

from __future__ import annotations

from typing import Any

from app import context
from app.errors import ApiError
from app.readmodels.clusters import ClusterRef
from app.readmodels.kubeapi import api_for, not_active, talking_to
from cloud import inference, kube
from cloud.inference import Endpoint
from vocabulary.operations import OpStatus

RUNNING_STATE = {"endpoint.create": "creating", "endpoint.update": "updating",
                 "endpoint.reassign": "updating", "endpoint.delete": "deleting"}


def _ready(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def _worker(pod: dict[str, Any]) -> dict[str, Any]:
    status = pod.get("status") or {}
    return {"name": pod["metadata"]["name"], "model": inference.worker_model(pod),
            "ready": _ready(pod), "node": (pod.get("spec") or {}).get("nodeName"),
            "phase": status.get("phase"),
            "restarts": sum(c.get("restartCount", 0)
                            for c in status.get("containerStatuses") or [])}


def _waiting(api: Any, ep: Endpoint, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The endpoint's servers the scheduler has not placed: hypd's (labelled with the
    endpoint), or a managed endpoint's, which the inference operator labels `app=<name>`."""
    if ep.kind == inference.MANAGED:
        pods = kube.list_objects(api, "v1", "Pod", ep.namespace,
                                 label_selector={inference.OPERATOR_POD_LABEL: ep.name})
    return kube.waiting_pods(pods)


def _view(cluster: str, ep: Endpoint, main: dict[str, Any] | None,
          objs: list[dict[str, Any]], api: Any,
          pods: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    services = [o for o in objs if o["kind"] == "Service"]
    front = next((s for s in services if s["metadata"]["name"] == ep.name), None)
    ingress = (((front or {}).get("status") or {}).get("loadBalancer") or {}).get("ingress")
    view: dict[str, Any] = {
        "name": ep.name, "cluster": cluster, "namespace": ep.namespace, "kind": ep.kind,
        "model": ep.model, "service": None if ep.kind == inference.MANAGED else ep.service,
        "replicas": ep.replicas, "gpus": ep.gpus, "instance_type": ep.instance_type,
        "routing": ep.routing, "autoscaling": ({"min": ep.autoscaling.min,
                                                "max": ep.autoscaling.max,
                                                "target": ep.autoscaling.target}
                                               if ep.autoscaling else None),
        "address": (ingress[0].get("hostname") or ingress[0].get("ip")) if ingress else None,
        "services": sorted(s["metadata"]["name"] for s in services),
        "pool_models": list(ep.pool_models), "workers": [], "ready_replicas": None,
        "state": "incomplete", "message": None, "operation_id": None,
        "sagemaker_endpoint": None,
        "waiting": _waiting(api, ep, pods or []) if api is not None else [],
    }
    status = (main or {}).get("status") or {}
    if ep.kind == inference.MANAGED:
        state = inference.operator_state(main or {})
        deployment = status.get("deploymentStatus") or {}
        view["ready_replicas"] = (deployment.get("status") or {}).get("availableReplicas", 0)
        view["state"] = {inference.OPERATOR_COMPLETE: "ready",
                         inference.OPERATOR_FAILED: "failed"}.get(state, "deploying")
        view["message"] = deployment.get("message") or (
            f"the inference operator reports {state}" if state else
            "waiting for the inference operator")
        registered = (status.get("endpoints") or {}).get("sagemaker") or {}
        if registered.get("endpointArn"):
            view["sagemaker_endpoint"] = {"arn": registered["endpointArn"],
                                          "state": registered.get("state")}
        if api is not None and main is not None:
            made = inference.operator_service(api, main)
            view["services"] = [made[0]] if made else []
        return view
    view["ready_replicas"] = status.get("readyReplicas") or 0
    if ep.service == inference.POOL and api is not None:
        view["workers"] = [_worker(p) for p in inference.pool_workers(api, ep)]
    if main is None:
        view["message"] = "its Deployment is missing; delete the endpoint, or create it again"
    elif ep.service == inference.POOL:
        view["state"] = "ready" if len(view["workers"]) == ep.replicas else "deploying"
    else:
        wanted = ep.autoscaling.min if ep.autoscaling else ep.replicas
        view["state"] = "ready" if (status.get("availableReplicas") or 0) >= wanted \
            else "deploying"
    if view["waiting"] and view["message"] is None:
        first = view["waiting"][0]
        view["message"] = (f"{len(view['waiting'])} of its servers wait for capacity: "
                           f"{first['message']}")
    return view


def collect(cluster: str, api: Any | None) -> dict[str, dict[str, Any]]:
    """Every endpoint of the cluster, by name."""
    objs = inference.owned(api, None) if api is not None else []
    by_name: dict[str, list[dict[str, Any]]] = {}
    for obj in objs:
        by_name.setdefault(obj["metadata"]["labels"][inference.ENDPOINT_LABEL], []).append(obj)
    pods: dict[str, list[dict[str, Any]]] = {}
    for pod in kube.list_objects(api, "v1", "Pod", label_selector=inference.ENDPOINT_LABEL
                                 ) if api is not None else []:
        pods.setdefault(pod["metadata"]["labels"][inference.ENDPOINT_LABEL], []).append(pod)
    ops = context.engine().store.newest_by_child(f"cluster/{cluster}/endpoint",
                                                 kinds=RUNNING_STATE)
    items: dict[str, dict[str, Any]] = {}
    for name, mine in by_name.items():
        main = next((o for o in mine if inference.stored_spec(o) is not None), None)
        if main is None:
            continue
        ep = inference.stored_spec(main)
        assert ep is not None
        items[name] = _view(cluster, ep, main, mine, api, pods.get(name))
    for name, op in ops.items():
        if name not in items and op["kind"] == "endpoint.create" and \
                op["status"] != OpStatus.SUCCEEDED:
            ep = Endpoint.from_params(op["params"]["endpoint"])
            items[name] = _view(cluster, ep, None, [], None)
            items[name]["state"] = "failed" if op["status"] in OpStatus.unsuccessful() \
                else "creating"
            items[name]["message"] = (op.get("error") or {}).get("message")
    for name, item in items.items():
        op = ops.get(name)
        if op is None:
            continue
        item["operation_id"] = op["id"]
        if op["status"] in OpStatus.active():
            item["state"] = RUNNING_STATE[op["kind"]]
    return items


def items(found: ClusterRef) -> tuple[dict[str, dict[str, Any]], str | None]:
    """Every endpoint of the cluster by name, and why its Kubernetes could not be read (None
    when it could: only endpoints being created show without it)."""
    why = not_active(found)
    api = None if why else api_for(found)
    with talking_to(found):
        return collect(found.name, api), why


def one(found: ClusterRef, name: str) -> dict[str, Any]:
    """One endpoint as a read shows it, or 404."""
    found_items, _ = items(found)
    if name not in found_items:
        raise ApiError(404, "not_found", f"no endpoint named {name!r} on cluster "
                                         f"{found.name!r}")
    return found_items[name]


def stored(found: ClusterRef, name: str) -> Endpoint:
    """The endpoint as the cluster holds it (its request, on its main object)."""
    api = api_for(found)
    with talking_to(found):
        ep = inference.stored(api, name)
    if ep is None:
        raise ApiError(404, "not_found", f"no endpoint named {name!r} on cluster "
                                         f"{found.name!r}")
    return ep
