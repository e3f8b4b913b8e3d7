"""The workload controllers of one local Kubernetes, and its API server's service proxy.

kube-controller-manager's controllers, as far as hypd's workloads need them:

- **Deployments** own one ReplicaSet per pod template (`<deployment>-<pod-template-hash>`,
  the hash also a label of the set and its pods); the current template's set gets the
  Deployment's replicas, older ones none. Status: replicas, updated, ready, available,
  `Available` and `Progressing` conditions, observedGeneration.
- **ReplicaSets** keep their number of pods (`<set>-<5 characters>`), owned through
  ownerReferences. A pod whose labels stop matching the set's selector is released (its
  ownerReference removed) and replaced, as the real controller does — so relabelling a
  selected label orphans a worker. Scaling in deletes pods in the controller's order:
  unscheduled before scheduled, pending before running, not ready before ready, lower
  `controller.kubernetes.io/pod-deletion-cost` first, more restarts first, newest first.
- **Jobs** run pods to completion (`completions`, `parallelism`, `backoffLimit`), with the
  job-name and controller-uid labels, active/succeeded/failed counts and the `Complete` /
  `Failed` conditions.
- **Endpoints** of each Service with a selector: ready pods' IPs as addresses, the others as
  notReadyAddresses, ports resolved (numbers or container port names).
- **The AWS Load Balancer Controller**, when its Deployment runs in kube-system: a
  LoadBalancer Service it owns (`service.beta.kubernetes.io/aws-load-balancer-type:
  external`) gets an NLB hostname in its status.

The service proxy (`/api/v1/namespaces/<ns>/services/[scheme:]<svc>:<port>/proxy/<path>`)
sends a request to a ready endpoint of the Service, as the API server does; the container
behind it answers as its program says: a model server (programs.model_server) answers
OpenAI-compatible requests with a small deterministic completion, another server
(`programs.HttpServer`, e.g. a workspace's Jupyter server) as its handler says; anything else
refuses the connection.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import random
from collections.abc import Callable
from typing import Any

from sandbox.kube.errors import KubeError
from sandbox.kube.objects import now as stamp
from sandbox.kube.patches import MERGE_PATCH
from sandbox.kube.selectors import matcher, parse_labels
from sandbox.simulator import programs
from sandbox.simulator.programs import HttpServer, ModelServer

log = logging.getLogger(__name__)

WORKLOAD_KINDS = frozenset({("apps", "deployments"), ("apps", "replicasets"),
                            ("batch", "jobs"), ("", "services")})
"""What these controllers follow, besides pods (the cluster simulator follows those)."""
PLURALS = frozenset({"deployments", "replicasets", "jobs", "services", "pods"})

HASH_LABEL = "pod-template-hash"
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")
JOB_UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")
LB_TYPE = "service.beta.kubernetes.io/aws-load-balancer-type"
LB_CONTROLLER = "aws-load-balancer-controller"
DEPLOYMENT_CONTROLLER = "deployment-controller"
REPLICASET_CONTROLLER = "replicaset-controller"
JOB_CONTROLLER = "job-controller"
ENDPOINT_CONTROLLER = "endpoint-controller"
TERMINAL = frozenset({"Succeeded", "Failed"})
_SAFE = "bcdfghjklmnpqrstvwxz2456789"  # the characters Kubernetes' generated names use
MAX_COMPLETION_TOKENS = 16
_WORDS = ("the", "model", "answers", "from", "the", "sandbox", "with", "a", "short",
          "deterministic", "completion", "for", "this", "prompt", "and", "nothing", "else")


def _md(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _safe_hash(value: Any, length: int = 10) -> str:
    digest = hashlib.sha256(json.dumps(value, sort_keys=True).encode()).digest()
    return "".join(_SAFE[b % len(_SAFE)] for b in digest[:length])


def _suffix() -> str:
    return "".join(random.choice(_SAFE) for _ in range(5))


def _owned_by(obj: dict[str, Any], owner: dict[str, Any]) -> bool:
    uid = _md(owner).get("uid")
    return any(r.get("uid") == uid and r.get("controller")
               for r in _md(obj).get("ownerReferences") or [])


def owner_ref(owner: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": owner.get("apiVersion"), "kind": owner.get("kind"),
            "name": _md(owner).get("name"), "uid": _md(owner).get("uid"),
            "controller": True, "blockOwnerDeletion": True}


def _selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A LabelSelector (matchLabels, matchExpressions) against labels; empty selects none."""
    selector = selector or {}
    terms = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In":
            terms.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            terms.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            terms.append(str(key))
        elif op == "DoesNotExist":
            terms.append(f"!{key}")
    if not terms:
        return False
    return matcher(parse_labels(",".join(terms)), [])({"metadata": {"labels": labels}})


def _active(pod: dict[str, Any]) -> bool:
    return not _md(pod).get("deletionTimestamp") and \
        (pod.get("status") or {}).get("phase") not in TERMINAL


def _ready(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def _deletion_cost(pod: dict[str, Any]) -> int:
    try:
        return int((_md(pod).get("annotations") or {}).get(DELETION_COST, "0"))
    except ValueError:
        return 0


def scale_in_order(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods in the order a ReplicaSet deletes them (see the module docstring)."""
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}

    def rank(pod: dict[str, Any]) -> tuple[Any, ...]:
        status = pod.get("status") or {}
        restarts = sum(c.get("restartCount", 0) for c in status.get("containerStatuses") or [])
        created = _md(pod).get("creationTimestamp") or ""
        return (bool((pod.get("spec") or {}).get("nodeName")),
                phase_rank.get(status.get("phase", "Pending"), 0), _ready(pod),
                _deletion_cost(pod), -restarts, _Reverse(created), _md(pod).get("name"))

    return sorted(pods, key=rank)


class _Reverse:
    """Sorts a string newest (largest) first."""

    def __init__(self, value: str) -> None:
        self.value = value

    def __lt__(self, other: _Reverse) -> bool:
        return self.value > other.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reverse) and self.value == other.value


class Workloads:
    """The controllers of one cluster simulator's `LocalKube` (see the module docstring)."""

    def __init__(self, kube: Any, programs_book: programs.Programs) -> None:
        self.kube = kube
        self.programs = programs_book
        self.programs.register(programs.model_server)

    # --- store access ---------------------------------------------------------------------

    def _type(self, group: str, version: str, plural: str) -> Any:
        return self.kube.catalog.lookup(group, version, plural)

    def _list(self, group: str, version: str, plural: str,
              namespace: str | None = None) -> list[dict[str, Any]]:
        rt = self._type(group, version, plural)
        if rt is None:
            return []
        items, _, _, _ = self.kube.store.list(rt, namespace, lambda _o: True)
        return items

    def _put(self, obj: dict[str, Any], manager: str) -> dict[str, Any] | None:
        try:
            return self.kube.store.put(obj, manager)
        except (KubeError, ValueError):
            log.debug("workloads: %s %s not written", obj.get("kind"), _md(obj).get("name"))
            return None

    def patch_object(self, group: str, plural: str, obj: dict[str, Any], patch: dict[str, Any],
               manager: str) -> None:
        md = _md(obj)
        rt = self._type(group, obj["apiVersion"].split("/")[-1], plural)
        with contextlib.suppress(KubeError):  # gone meanwhile
            self.kube.store.patch(rt, md.get("namespace"), md["name"], MERGE_PATCH, patch,
                                  manager)

    def _status(self, group: str, plural: str, obj: dict[str, Any], status: dict[str, Any],
                manager: str) -> None:
        """Write a status only when it differs (each write wakes the controllers again)."""
        current = obj.get("status") or {}
        if all(current.get(k) == v for k, v in status.items()):
            return
        self.replace_status(group, plural, obj, {**current, **status}, manager)

    def _delete_pod(self, pod: dict[str, Any]) -> None:
        md = _md(pod)
        self.kube.store.remove(self._type("", "v1", "pods"), md.get("namespace"), md["name"])

    # --- reconcile ------------------------------------------------------------------------

    def reconcile(self) -> None:
        pods = self._list("", "v1", "pods")
        for deployment in self._list("apps", "v1", "deployments"):
            self._deployment(deployment)
        sets = self._list("apps", "v1", "replicasets")
        for replica_set in sets:
            self._replica_set(replica_set, pods)
        for job in self._list("batch", "v1", "jobs"):
            self._job(job, pods)
        pods = self._list("", "v1", "pods")
        for deployment in self._list("apps", "v1", "deployments"):
            self._deployment_status(deployment, self._list("apps", "v1", "replicasets"))
        lb_running = self._lb_controller_running()
        for service in self._list("", "v1", "services"):
            self._endpoints(service, pods)
            if lb_running:
                self._load_balancer(service)

    # --- deployments ----------------------------------------------------------------------

    def _deployment(self, deployment: dict[str, Any]) -> None:
        md, spec = _md(deployment), deployment.get("spec") or {}
        if md.get("deletionTimestamp"):
            return
        template = spec.get("template") or {}
        template_hash = _safe_hash(template)
        replicas = spec.get("replicas", 1)
        owned = [rs for rs in self._list("apps", "v1", "replicasets", md.get("namespace"))
                 if _owned_by(rs, deployment)]
        current = next((rs for rs in owned
                        if (_md(rs).get("labels") or {}).get(HASH_LABEL) == template_hash),
                       None)
        if current is None:
            labels = {**((template.get("metadata") or {}).get("labels") or {}),
                      HASH_LABEL: template_hash}
            selector = dict(spec.get("selector") or {})
            selector["matchLabels"] = {**(selector.get("matchLabels") or {}),
                                       HASH_LABEL: template_hash}
            pod_template = json.loads(json.dumps(template))
            pod_template.setdefault("metadata", {})["labels"] = labels
            self._put({
                "apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": f"{md['name']}-{template_hash}",
                             "namespace": md.get("namespace"), "labels": labels,
                             "annotations": {"deployment.kubernetes.io/desired-replicas":
                                             str(replicas)},
                             "ownerReferences": [owner_ref(deployment)]},
                "spec": {"replicas": replicas, "selector": selector,
                         "template": pod_template},
            }, DEPLOYMENT_CONTROLLER)
        for rs in owned:
            wanted = replicas if rs is current else 0
            if (rs.get("spec") or {}).get("replicas", 1) != wanted:
                self.patch_object("apps", "replicasets", rs, {"spec": {"replicas": wanted}},
                            DEPLOYMENT_CONTROLLER)

    def _deployment_status(self, deployment: dict[str, Any],
                           sets: list[dict[str, Any]]) -> None:
        md, spec = _md(deployment), deployment.get("spec") or {}
        template_hash = _safe_hash(spec.get("template") or {})
        owned = [rs for rs in sets if _owned_by(rs, deployment)]
        desired = spec.get("replicas", 1)

        def total(key: str, only: list[dict[str, Any]] | None = None) -> int:
            return sum((rs.get("status") or {}).get(key, 0) for rs in (only or owned))

        current = [rs for rs in owned
                   if (_md(rs).get("labels") or {}).get(HASH_LABEL) == template_hash]
        replicas, ready = total("replicas"), total("readyReplicas")
        available = total("availableReplicas")
        updated = total("replicas", current) if current else 0
        max_unavailable = math.floor(desired * 0.25)
        old = {c.get("type"): c for c in (deployment.get("status") or {}).get("conditions") or []}
        at = stamp()

        def condition(kind: str, ok: bool, reason: str, message: str) -> dict[str, Any]:
            status = "True" if ok else "False"
            before = old.get(kind) or {}
            since = before.get("lastTransitionTime") if before.get("status") == status else at
            return {"type": kind, "status": status, "reason": reason, "message": message,
                    "lastUpdateTime": before.get("lastUpdateTime", at)
                    if before.get("reason") == reason else at,
                    "lastTransitionTime": since or at}

        name = f"{md['name']}-{template_hash}"
        complete = updated == desired and available >= desired and replicas == desired
        conditions = [
            condition("Available", available >= desired - max_unavailable,
                      "MinimumReplicasAvailable" if available >= desired - max_unavailable
                      else "MinimumReplicasUnavailable",
                      "Deployment has minimum availability." if available >= desired -
                      max_unavailable else "Deployment does not have minimum availability."),
            condition("Progressing", True,
                      "NewReplicaSetAvailable" if complete else "ReplicaSetUpdated",
                      f'ReplicaSet "{name}" has successfully progressed.' if complete
                      else f'ReplicaSet "{name}" is progressing.'),
        ]
        status: dict[str, Any] = {
            "observedGeneration": md.get("generation", 1), "replicas": replicas,
            "updatedReplicas": updated, "readyReplicas": ready,
            "availableReplicas": available, "unavailableReplicas": max(0, desired - available),
            "conditions": conditions}
        for key in ("readyReplicas", "availableReplicas", "unavailableReplicas"):
            if not status[key]:
                del status[key]
        current_status = deployment.get("status") or {}
        if {k: v for k, v in current_status.items() if k != "conditions"} == \
                {k: v for k, v in status.items() if k != "conditions"} and \
                [(c.get("type"), c.get("status"), c.get("reason"))
                 for c in current_status.get("conditions") or []] == \
                [(c["type"], c["status"], c["reason"]) for c in conditions]:
            return
        self.replace_status("apps", "deployments", deployment, status, DEPLOYMENT_CONTROLLER)

    def replace_status(self, group: str, plural: str, obj: dict[str, Any],
                        status: dict[str, Any], manager: str) -> None:
        md = _md(obj)
        rt = self._type(group, obj["apiVersion"].split("/")[-1], plural)
        body = {"apiVersion": obj["apiVersion"], "kind": obj["kind"],
                "metadata": {"name": md["name"]}, "status": status}
        with contextlib.suppress(KubeError):  # gone meanwhile
            self.kube.store.replace(rt, md.get("namespace"), md["name"], body, manager,
                                    "status")

    # --- replica sets ---------------------------------------------------------------------

    def _replica_set(self, rs: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        md, spec = _md(rs), rs.get("spec") or {}
        if md.get("deletionTimestamp"):
            return
        selector = spec.get("selector") or {}
        mine = []
        for pod in pods:
            if _md(pod).get("namespace") != md.get("namespace") or not _owned_by(pod, rs):
                continue
            if not _selects(selector, _md(pod).get("labels") or {}):
                # relabelled out of the selector: released, and replaced below
                refs = [r for r in _md(pod).get("ownerReferences") or []
                        if r.get("uid") != md.get("uid")]
                self.patch_object("", "pods", pod, {"metadata": {"ownerReferences": refs or None}},
                            REPLICASET_CONTROLLER)
                continue
            mine.append(pod)
        active = [p for p in mine if _active(p)]
        wanted = spec.get("replicas", 1)
        if len(active) < wanted:
            for _ in range(wanted - len(active)):
                self._new_pod(rs, spec.get("template") or {}, f"{md['name']}-",
                              REPLICASET_CONTROLLER)
        elif len(active) > wanted:
            doomed = scale_in_order(active)[:len(active) - wanted]
            for pod in doomed:
                self._delete_pod(pod)
            active = [p for p in active if p not in doomed]
        ready = [p for p in active if _ready(p)]
        status = {"replicas": len(active), "fullyLabeledReplicas": len(active),
                  "readyReplicas": len(ready), "availableReplicas": len(ready),
                  "observedGeneration": md.get("generation", 1)}
        self._status("apps", "replicasets", rs, status, REPLICASET_CONTROLLER)

    def _new_pod(self, owner: dict[str, Any], template: dict[str, Any], prefix: str,
                 manager: str, extra_labels: dict[str, str] | None = None) -> None:
        template_md = template.get("metadata") or {}
        pod = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": prefix + _suffix(), "namespace": _md(owner).get("namespace"),
                "labels": {**(template_md.get("labels") or {}), **(extra_labels or {})},
                "ownerReferences": [owner_ref(owner)],
            },
            "spec": json.loads(json.dumps(template.get("spec") or {})),
        }
        if template_md.get("annotations"):
            pod["metadata"]["annotations"] = dict(template_md["annotations"])
        pod["spec"].setdefault("restartPolicy", "Always")
        pod["spec"].setdefault("schedulerName", "default-scheduler")
        self._put(pod, manager)

    # --- jobs -----------------------------------------------------------------------------

    def _job(self, job: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        md, spec = _md(job), job.get("spec") or {}
        status = job.get("status") or {}
        if md.get("deletionTimestamp") or any(
                c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
                for c in status.get("conditions") or []):
            return
        mine = [p for p in pods if _owned_by(p, job)]
        succeeded = sum(1 for p in mine if (p.get("status") or {}).get("phase") == "Succeeded")
        failed = sum(1 for p in mine if (p.get("status") or {}).get("phase") == "Failed")
        active = [p for p in mine if _active(p)]
        completions = spec.get("completions", 1)
        parallelism = spec.get("parallelism", 1)
        backoff_limit = spec.get("backoffLimit", 6)
        at = stamp()
        new: dict[str, Any] = {"startTime": status.get("startTime") or at,
                               "active": len(active), "ready": sum(map(_ready, active)),
                               "terminating": 0, "uncountedTerminatedPods": {}}
        if succeeded:
            new["succeeded"] = succeeded
        if failed:
            new["failed"] = failed
        ended = None
        if succeeded >= completions:
            new["completionTime"] = at
            ended = (("SuccessCriteriaMet", "Complete"), "CompletionsReached",
                     "Reached expected number of succeeded pods")
        elif failed > backoff_limit:
            ended = (("FailureTarget", "Failed"), "BackoffLimitExceeded",
                     "Job has reached the specified backoff limit")
        if ended is not None:
            kinds, reason, message = ended
            new["conditions"] = [{"type": kind, "status": "True", "reason": reason,
                                  "message": message, "lastProbeTime": at,
                                  "lastTransitionTime": at} for kind in kinds]
            for pod in active:
                self._delete_pod(pod)
            new["active"] = 0
        elif spec.get("suspend"):  # suspended (by Kueue, say): its running pods go
            for pod in active:
                self._delete_pod(pod)
            new["active"] = 0
        else:
            missing = min(parallelism, completions - succeeded) - len(active)
            labels = {k: md["name"] for k in JOB_NAME_LABELS}
            labels.update({k: str(md.get("uid")) for k in JOB_UID_LABELS})
            for _ in range(max(0, missing)):
                self._new_pod(job, spec.get("template") or {}, f"{md['name']}-",
                              JOB_CONTROLLER, labels)
                new["active"] += 1
        if {k: status.get(k) for k in new} != new:
            self.replace_status("batch", "jobs", job, {**status, **new}, JOB_CONTROLLER)

    # --- services -------------------------------------------------------------------------

    @staticmethod
    def _target_port(port: dict[str, Any], pod: dict[str, Any]) -> int | None:
        target = port.get("targetPort", port.get("port"))
        if isinstance(target, int):
            return target
        if isinstance(target, str) and target.isdigit():
            return int(target)
        for c in (pod.get("spec") or {}).get("containers") or []:
            for p in c.get("ports") or []:
                if p.get("name") == target:
                    return int(p.get("containerPort"))
        return None

    def _endpoints(self, service: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        md, spec = _md(service), service.get("spec") or {}
        selector = spec.get("selector")
        if not selector:
            return
        namespace = md.get("namespace")
        chosen = sorted((p for p in pods if _md(p).get("namespace") == namespace
                         and _active(p) and (p.get("status") or {}).get("podIP")
                         and _selects({"matchLabels": selector}, _md(p).get("labels") or {})),
                        key=lambda p: _md(p).get("name"))
        subsets: dict[str, dict[str, Any]] = {}
        for pod in chosen:
            ports = []
            for port in spec.get("ports") or []:
                number = self._target_port(port, pod)
                if number is not None:
                    item = {"port": number, "protocol": port.get("protocol", "TCP")}
                    if port.get("name"):
                        item["name"] = port["name"]
                    ports.append(item)
            key = json.dumps(ports, sort_keys=True)
            subset = subsets.setdefault(key, {"ports": ports})
            address = {"ip": pod["status"]["podIP"],
                       "nodeName": (pod.get("spec") or {}).get("nodeName"),
                       "targetRef": {"kind": "Pod", "namespace": namespace,
                                     "name": _md(pod).get("name"), "uid": _md(pod).get("uid")}}
            subset.setdefault("addresses" if _ready(pod) else "notReadyAddresses",
                              []).append(address)
        wanted = [s for s in subsets.values() if s.get("addresses") or
                  s.get("notReadyAddresses")]
        current = self.kube.get_object("v1", "Endpoints", md["name"], namespace)
        if current is not None and (current.get("subsets") or []) == wanted:
            return
        body: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": md["name"], "namespace": namespace,
                         "labels": dict(md.get("labels") or {})}}
        if wanted:
            body["subsets"] = wanted
        self._put(body, ENDPOINT_CONTROLLER)

    def _lb_controller_running(self) -> bool:
        found = self.kube.get_object("apps/v1", "Deployment", LB_CONTROLLER, "kube-system")
        return bool(found and (found.get("status") or {}).get("availableReplicas"))

    def _load_balancer(self, service: dict[str, Any]) -> None:
        md, spec = _md(service), service.get("spec") or {}
        if spec.get("type") != "LoadBalancer" or \
                (md.get("annotations") or {}).get(LB_TYPE) != "external":
            return
        if ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress"):
            return
        region = next((((n.get("metadata") or {}).get("labels") or {}).get(
            "topology.kubernetes.io/region") for n in self._list("", "v1", "nodes")), None)
        name = f"k8s-{str(md.get('namespace'))[:8]}-{str(md['name'])[:8]}-{_safe_hash(md)}"
        host = f"{name}.elb.{region or 'us-west-2'}.amazonaws.com"
        self._status("", "services", service, {"loadBalancer": {"ingress": [{"hostname": host}]}},
                     LB_CONTROLLER)

    # --- the service proxy ----------------------------------------------------------------

    def proxy(self, namespace: str, target: str, path: str, method: str,
              body: bytes, headers: dict[str, str] | None = None) -> tuple[int, str, bytes]:
        """What the API server's service proxy answers: (status, content type, body)."""
        parts = target.split(":")
        if len(parts) == 3:
            parts = parts[1:]  # scheme
        name, port_spec = parts[0], (parts[1] if len(parts) > 1 else "")
        service = self.kube.get_object("v1", "Service", name, namespace)
        if service is None:
            raise KubeError(404, "NotFound", f'services "{name}" not found')
        ports = (service.get("spec") or {}).get("ports") or []
        port = next((p for p in ports if not port_spec or p.get("name") == port_spec
                     or str(p.get("port")) == port_spec), None)
        if port is None:
            raise KubeError(503, "ServiceUnavailable",
                            f'no endpoints available for service "{name}"')
        pods = [p for p in self.kube.list_objects("v1", "Pod", namespace)
                if _active(p) and _ready(p) and (p.get("status") or {}).get("podIP")
                and _selects({"matchLabels": (service.get("spec") or {}).get("selector")},
                             _md(p).get("labels") or {})]
        if not pods:
            raise KubeError(503, "ServiceUnavailable",
                            f'no endpoints available for service "{name}"')
        pod = sorted(pods, key=lambda p: _md(p).get("name"))[0]
        number = self._target_port(port, pod)
        server = self._server(pod, number)
        ip = pod["status"]["podIP"]
        if server is None:
            raise KubeError(503, "ServiceUnavailable",
                            f"error trying to reach service: dial tcp {ip}:{number}: "
                            "connect: connection refused")
        if isinstance(server, HttpServer):
            return server.handle(path, method, body, headers or {})
        return answer(server, str(_md(pod).get("name")), path, method, body)

    def pod_port(self, pod: dict[str, Any], port: int
                 ) -> Callable[..., tuple[int, str, bytes]] | None:
        """What listens on a pod's port, for pods/portforward: a function of one HTTP
        request (path, method, body, headers), or None (nothing listens)."""
        server = self._server(pod, port)
        if server is None:
            return None
        if isinstance(server, HttpServer):
            return server.handle
        name = str(_md(pod).get("name"))
        return lambda path, method, body, headers: answer(server, name, path, method, body)

    def _server(self, pod: dict[str, Any], port: int | None) -> ModelServer | HttpServer | None:
        for container in (pod.get("spec") or {}).get("containers") or []:
            found = self.programs.program(pod, container).serves
            if found is not None and found.port == port:
                return found
        return None


def _json(status: int, body: dict[str, Any]) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps(body).encode()


def answer(server: ModelServer, pod: str, path: str, method: str,
           body: bytes) -> tuple[int, str, bytes]:
    """A model server's answer to one request: OpenAI's completions and chat completions,
    its model list and its health check; a small deterministic text (the same request gets
    the same completion)."""
    path = "/" + path.strip("/")
    if method == "GET" and path in ("/health", "/healthz"):
        return 200, "text/plain", b""
    if method == "GET" and path == "/v1/models":
        return _json(200, {"object": "list", "data": [
            {"id": server.model, "object": "model", "owned_by": server.kind}]})
    if path not in ("/v1/completions", "/v1/chat/completions"):
        return _json(404, {"detail": "Not Found"})
    if method != "POST":
        return _json(405, {"detail": "Method Not Allowed"})
    try:
        request = json.loads(body or b"{}")
    except ValueError:
        return _json(400, {"object": "error", "message": "the body is not JSON",
                           "type": "BadRequestError", "code": 400})
    if not isinstance(request, dict):
        return _json(400, {"object": "error", "message": "the body is not an object",
                           "type": "BadRequestError", "code": 400})
    model = server.model or str(request.get("model") or "")
    if request.get("model") not in (None, model):
        return _json(404, {"object": "error", "type": "NotFoundError", "code": 404,
                           "message": f"The model `{request.get('model')}` does not exist."})
    chat = path.endswith("chat/completions")
    prompt = (" ".join(str(m.get("content", "")) for m in request.get("messages") or []
                       if isinstance(m, dict)) if chat else str(request.get("prompt", "")))
    wanted = request.get("max_tokens", MAX_COMPLETION_TOKENS)
    count = max(1, min(MAX_COMPLETION_TOKENS, wanted if isinstance(wanted, int) else 1))
    seed = hashlib.sha256(f"{model}\n{prompt}".encode()).digest()
    words = [_WORDS[b % len(_WORDS)] for b in seed[:count]]
    text = " " + " ".join(words)
    usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": count,
             "total_tokens": len(prompt.split()) + count}
    ident = seed.hex()[:24]
    if chat:
        return _json(200, {"id": f"chatcmpl-{ident}", "object": "chat.completion",
                           "created": 0, "model": model, "usage": usage,
                           "choices": [{"index": 0, "finish_reason": "length",
                                        "message": {"role": "assistant",
                                                    "content": text.strip()}}]})
    return _json(200, {"id": f"cmpl-{ident}", "object": "text_completion", "created": 0,
                       "model": model, "usage": usage, "system_fingerprint": pod,
                       "choices": [{"index": 0, "text": text, "finish_reason": "length",
                                    "logprobs": None}]})


ProxyFn = Callable[[str, str, str, str, bytes], tuple[int, str, bytes]]
"""(namespace, `[scheme:]service:port`, path, method, body) → (status, type, body)."""
