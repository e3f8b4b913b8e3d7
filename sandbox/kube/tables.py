"""Server-side printing: the `Table` (meta.k8s.io) answer kubectl asks for.

`kubectl get` sends `Accept: application/json;as=Table;v=v1;g=meta.k8s.io, ...;v=v1beta1...,
application/json` and prints the columns the server returns. The API server's printers give
each built-in kind its own columns (a Pod's READY, STATUS, RESTARTS; a Node's STATUS, ROLES,
VERSION; …; `Priority: 1` columns appear only with `-o wide`); kinds without a printer get
NAME and CREATED AT; custom resources get NAME plus their CRD version's
`additionalPrinterColumns` (JSONPath evaluated against the object; `date` columns as ages),
or NAME and AGE when the CRD declares none. The cells here follow the upstream printers
(pkg/printers/internalversion) field for field; ages use the API machinery's
`HumanDuration` rounding.

Rows carry the object as `PartialObjectMetadata` (the default `includeObject=Metadata`), the
whole object with `includeObject=Object`, or nothing with `None`.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sandbox.kube import jsonpath
from sandbox.kube.catalog import ResourceType

META_GROUP = "meta.k8s.io"
TABLE = "Table"
PARTIAL = "PartialObjectMetadata"
PARTIAL_LIST = "PartialObjectMetadataList"


@dataclass(frozen=True)
class Wanted:
    """What the client asked for in `Accept`: a Table or partial metadata, at a version."""

    kind: str  # TABLE | PARTIAL | PARTIAL_LIST
    version: str  # v1 | v1beta1

    @property
    def api_version(self) -> str:
        return f"{META_GROUP}/{self.version}"


def negotiate(accept: str) -> Wanted | None:
    """The first meta.k8s.io form in `accept` this server can give; None means plain JSON."""
    for item in accept.split(","):
        media, *raw = (part.strip() for part in item.split(";"))
        params = dict(p.partition("=")[::2] for p in raw if "=" in p)
        if media not in ("application/json", "*/*"):
            continue
        kind = params.get("as")
        if kind is None:
            return None  # plain JSON comes first
        if (params.get("g") == META_GROUP and params.get("v") in ("v1", "v1beta1")
                and kind in (TABLE, PARTIAL, PARTIAL_LIST)):
            return Wanted(kind, params["v"])
    return None


# --- formatting helpers (as the upstream printers format) --------------------------------


def _parse_time(value: Any) -> datetime.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration."""
    total = int(seconds)
    if total < -1:
        return "<invalid>"
    if total < 0:
        return "0s"
    if total < 120:
        return f"{total}s"
    minutes = total // 60
    if minutes < 10:
        rest = total % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = total // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def age(value: Any, now: datetime.datetime) -> str:
    when = _parse_time(value)
    if when is None:
        return "<unknown>"
    return human_duration((now - when).total_seconds())


def _md(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("spec") or {}


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("status") or {}


def _created(obj: dict[str, Any], now: datetime.datetime) -> str:
    return age(_md(obj).get("creationTimestamp"), now)


def _labels(selector: dict[str, Any] | None) -> str:
    """labels.FormatLabels: k=v,k=v sorted, `<none>` when empty."""
    if not selector:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))


def _label_selector(selector: dict[str, Any] | None) -> str:
    """metav1.FormatLabelSelector."""
    if not selector:
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        op, key, values = expr.get("operator"), expr.get("key"), expr.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts) or "<none>"


def _containers(template_spec: dict[str, Any]) -> tuple[str, str]:
    containers = template_spec.get("containers") or []
    return (
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
    )


def _template_spec(obj: dict[str, Any]) -> dict[str, Any]:
    return (_spec(obj).get("template") or {}).get("spec") or {}


_MODES = (
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
)


def _access_modes(modes: list[str] | None) -> str:
    given = set(modes or [])
    return ",".join(short for full, short in _MODES if full in given)


# --- columns and rows per kind -----------------------------------------------------------

Column = tuple[str, str, str, int]  # name, type, description, priority (format "name" for Name)
Cells = Callable[[dict[str, Any], datetime.datetime], list[Any]]

_NAME: Column = ("Name", "string", "Name must be unique within a namespace.", 0)
_AGE: Column = ("Age", "string", "CreationTimestamp of the object.", 0)
_CONTAINERS: Column = ("Containers", "string", "Names of each container in the template.", 1)
_IMAGES: Column = ("Images", "string", "Images referenced by each container in the template.", 1)
_SELECTOR: Column = ("Selector", "string", "The label selector of the object.", 1)


def _pod_cells(pod: dict[str, Any], now: datetime.datetime) -> list[Any]:
    spec, status = _spec(pod), _status(pod)
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    init_specs = {c.get("name"): c for c in spec.get("initContainers") or []}
    restartable = {n for n, c in init_specs.items() if c.get("restartPolicy") == "Always"}
    total = len(spec.get("containers") or []) + len(restartable)
    ready = restarts = sidecar_restarts = 0
    last_restart: datetime.datetime | None = None
    sidecar_last: datetime.datetime | None = None

    def later(a: datetime.datetime | None, cs: dict[str, Any]) -> datetime.datetime | None:
        finished = _parse_time(((cs.get("lastState") or {}).get("terminated") or {}).get(
            "finishedAt"))
        return finished if finished and (a is None or finished > a) else a

    initializing = False
    for i, cs in enumerate(status.get("initContainerStatuses") or []):
        restarts += int(cs.get("restartCount") or 0)
        last_restart = later(last_restart, cs)
        state = cs.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if cs.get("name") in restartable:
            sidecar_restarts += int(cs.get("restartCount") or 0)
            sidecar_last = later(sidecar_last, cs)
        if terminated and terminated.get("exitCode") == 0:
            continue
        if cs.get("name") in restartable and cs.get("started"):
            ready += 1 if cs.get("ready") else 0
            continue
        if terminated:
            if terminated.get("reason"):
                reason = "Init:" + terminated["reason"]
            elif terminated.get("signal"):
                reason = f"Init:Signal:{terminated['signal']}"
            else:
                reason = f"Init:ExitCode:{terminated.get('exitCode')}"
        elif waiting and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break
    initialized = any(
        c.get("type") == "Initialized" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    if not initializing or initialized:
        restarts, last_restart = sidecar_restarts, sidecar_last
        has_running = False
        for cs in reversed(status.get("containerStatuses") or []):
            restarts += int(cs.get("restartCount") or 0)
            last_restart = later(last_restart, cs)
            state = cs.get("state") or {}
            waiting, terminated = state.get("waiting"), state.get("terminated")
            if waiting and waiting.get("reason"):
                reason = waiting["reason"]
            elif terminated and terminated.get("reason"):
                reason = terminated["reason"]
            elif terminated:
                reason = (f"Signal:{terminated['signal']}" if terminated.get("signal")
                          else f"ExitCode:{terminated.get('exitCode')}")
            elif cs.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            pod_ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                            for c in status.get("conditions") or [])
            reason = "Running" if pod_ready else "NotReady"
    if _md(pod).get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    shown = str(restarts)
    if restarts and last_restart is not None:
        shown = f"{restarts} ({human_duration((now - last_restart).total_seconds())} ago)"
    ips = status.get("podIPs") or []
    gates = spec.get("readinessGates") or []
    gate_text = "<none>"
    if gates:
        true = {c.get("type") for c in status.get("conditions") or [] if c.get("status") == "True"}
        gate_text = f"{sum(1 for g in gates if g.get('conditionType') in true)}/{len(gates)}"
    return [
        _md(pod).get("name"),
        f"{ready}/{total}",
        reason,
        shown,
        _created(pod, now),
        (ips[0].get("ip") if ips else None) or status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        gate_text,
    ]


def _node_cells(node: dict[str, Any], now: datetime.datetime) -> list[Any]:
    status, spec = _status(node), _spec(node)
    states = [
        ("Ready" if c.get("status") == "True" else "NotReady")
        for c in status.get("conditions") or []
        if c.get("type") == "Ready"
    ] or ["Unknown"]
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    roles = set()
    for key, value in (_md(node).get("labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/") and key.split("/", 1)[1]:
            roles.add(key.split("/", 1)[1])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    info = status.get("nodeInfo") or {}

    def address(kind: str) -> str:
        for item in status.get("addresses") or []:
            if item.get("type") == kind:
                return str(item.get("address"))
        return "<none>"

    return [
        _md(node).get("name"),
        ",".join(states),
        ",".join(sorted(roles)) or "<none>",
        _created(node, now),
        info.get("kubeletVersion", ""),
        address("InternalIP"),
        address("ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _service_cells(svc: dict[str, Any], now: datetime.datetime) -> list[Any]:
    spec = _spec(svc)
    kind = spec.get("type") or "ClusterIP"
    ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    external = spec.get("externalIPs") or []
    if kind in ("ClusterIP", "NodePort"):
        ext = ",".join(external) or "<none>"
    elif kind == "LoadBalancer":
        lb = [i.get("ip") or i.get("hostname") for i in
              ((_status(svc).get("loadBalancer") or {}).get("ingress") or [])]
        found = [x for x in lb if x] + list(external)
        ext = ",".join(found) or "<pending>"
    elif kind == "ExternalName":
        ext = spec.get("externalName", "")
    else:
        ext = "<unknown>"
    ports = ",".join(
        (f"{p.get('port')}:{p['nodePort']}/{p.get('protocol', 'TCP')}" if p.get("nodePort")
         else f"{p.get('port')}/{p.get('protocol', 'TCP')}")
        for p in spec.get("ports") or []
    )
    return [_md(svc).get("name"), kind, ips[0] if ips else "<none>", ext, ports or "<none>",
            _created(svc, now), _labels(spec.get("selector"))]


def _deployment_cells(obj: dict[str, Any], now: datetime.datetime) -> list[Any]:
    spec, status = _spec(obj), _status(obj)
    names, images = _containers(_template_spec(obj))
    return [_md(obj).get("name"),
            f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
            int(status.get("updatedReplicas", 0)), int(status.get("availableReplicas", 0)),
            _created(obj, now), names, images, _label_selector(spec.get("selector"))]


def _replicaset_cells(obj: dict[str, Any], now: datetime.datetime) -> list[Any]:
    spec, status = _spec(obj), _status(obj)
    names, images = _containers(_template_spec(obj))
    return [_md(obj).get("name"), int(spec.get("replicas", 1)), int(status.get("replicas", 0)),
            int(status.get("readyReplicas", 0)), _created(obj, now), names, images,
            _label_selector(spec.get("selector"))]


def _statefulset_cells(obj: dict[str, Any], now: datetime.datetime) -> list[Any]:
    spec, status = _spec(obj), _status(obj)
    names, images = _containers(_template_spec(obj))
    return [_md(obj).get("name"), f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
            _created(obj, now), names, images]


def _daemonset_cells(obj: dict[str, Any], now: datetime.datetime) -> list[Any]:
    spec, status = _spec(obj), _status(obj)
    names, images = _containers(_template_spec(obj))
    return [_md(obj).get("name"), int(status.get("desiredNumberScheduled", 0)),
            int(status.get("currentNumberScheduled", 0)), int(status.get("numberReady", 0)),
            int(status.get("updatedNumberScheduled", 0)), int(status.get("numberAvailable", 0)),
            _labels(_template_spec(obj).get("nodeSelector")), _created(obj, now), names, images,
            _label_selector(spec.get("selector"))]


def _condition_true(obj: dict[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in _status(obj).get("conditions") or [])


def _job_cells(obj: dict[str, Any], now: datetime.datetime) -> list[Any]:
    spec, status = _spec(obj), _status(obj)
    succeeded = status.get("succeeded", 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{spec['completions']}"
    elif int(spec.get("parallelism") or 0) > 1:
        completions = f"{succeeded}/1 of {spec['parallelism']}"
    else:
        completions = f"{succeeded}/1"
    start, end = _parse_time(status.get("startTime")), _parse_time(status.get("completionTime"))
    took = "" if start is None else human_duration(((end or now) - start).total_seconds())
    if _condition_true(obj, "Complete"):
        state = "Complete"
    elif _condition_true(obj, "Failed"):
        state = "Failed"
    elif _md(obj).get("deletionTimestamp"):
        state = "Terminating"
    elif _condition_true(obj, "Suspended"):
        state = "Suspended"
    elif _condition_true(obj, "FailureTarget"):
        state = "FailureTarget"
    else:
        state = "Running"
    names, images = _containers(_template_spec(obj))
    return [_md(obj).get("name"), state, completions, took, _created(obj, now), names, images,
            _label_selector(spec.get("selector"))]


def _cronjob_cells(obj: dict[str, Any], now: datetime.datetime) -> list[Any]:
    spec, status = _spec(obj), _status(obj)
    template = ((spec.get("jobTemplate") or {}).get("spec") or {})
    names, images = _containers((template.get("template") or {}).get("spec") or {})
    last = status.get("lastScheduleTime")
    return [_md(obj).get("name"), spec.get("schedule", ""), spec.get("timeZone") or "<none>",
            bool(spec.get("suspend", False)), len(status.get("active") or []),
            age(last, now) if last else "<none>", _created(obj, now), names, images,
            _label_selector(template.get("selector"))]


def _pv_cells(pv: dict[str, Any], now: datetime.datetime) -> list[Any]:
    spec, status = _spec(pv), _status(pv)
    ref = spec.get("claimRef")
    claim = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref else ""
    phase = "Terminating" if _md(pv).get("deletionTimestamp") else status.get("phase", "")
    return [_md(pv).get("name"), (spec.get("capacity") or {}).get("storage", ""),
            _access_modes(spec.get("accessModes")),
            spec.get("persistentVolumeReclaimPolicy", ""), phase, claim,
            spec.get("storageClassName", ""), spec.get("volumeAttributesClassName") or "<unset>",
            status.get("reason", ""), _created(pv, now), spec.get("volumeMode") or "<unset>"]


def _pvc_cells(pvc: dict[str, Any], now: datetime.datetime) -> list[Any]:
    spec, status = _spec(pvc), _status(pvc)
    phase = "Terminating" if _md(pvc).get("deletionTimestamp") else status.get("phase", "")
    capacity = modes = ""
    if spec.get("volumeName"):
        modes = _access_modes(status.get("accessModes"))
        capacity = (status.get("capacity") or {}).get("storage", "")
    return [_md(pvc).get("name"), phase, spec.get("volumeName", ""), capacity, modes,
            spec.get("storageClassName", ""), spec.get("volumeAttributesClassName") or "<unset>",
            _created(pvc, now), spec.get("volumeMode") or "<unset>"]


def _event_cells(ev: dict[str, Any], now: datetime.datetime) -> list[Any]:
    first = (age(ev["firstTimestamp"], now) if ev.get("firstTimestamp")
             else age(ev.get("eventTime"), now))
    last = age(ev["lastTimestamp"], now) if ev.get("lastTimestamp") else first
    count = ev.get("count") or 1
    if ev.get("series"):
        last = age(ev["series"].get("lastObservedTime"), now)
        count = ev["series"].get("count", count)
    involved = ev.get("involvedObject") or {}
    kind = str(involved.get("kind", "")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = ev.get("source") or {}
    component = source.get("component") or ev.get("reportingComponent") or ""
    host = source.get("host") or ev.get("reportingInstance") or ""
    return [last, ev.get("type", ""), ev.get("reason", ""), target,
            involved.get("fieldPath", ""), f"{component}, {host}" if host else component,
            str(ev.get("message", "")).strip(), first, int(count), _md(ev).get("name")]


def _rfc3339(obj: dict[str, Any], now: datetime.datetime) -> str:
    return str(_md(obj).get("creationTimestamp") or "")


def _binding_cells(obj: dict[str, Any], now: datetime.datetime) -> list[Any]:
    ref = obj.get("roleRef") or {}
    users, groups, sas = [], [], []
    for subject in obj.get("subjects") or []:
        kind = subject.get("kind")
        if kind == "User":
            users.append(subject.get("name", ""))
        elif kind == "Group":
            groups.append(subject.get("name", ""))
        elif kind == "ServiceAccount":
            sas.append(f"{subject.get('namespace', '')}/{subject.get('name', '')}")
    return [_md(obj).get("name"), f"{ref.get('kind', '')}/{ref.get('name', '')}",
            _created(obj, now), ", ".join(users), ", ".join(groups), ", ".join(sas)]


def _storageclass_cells(obj: dict[str, Any], now: datetime.datetime) -> list[Any]:
    annotations = _md(obj).get("annotations") or {}
    default = any(annotations.get(k) == "true" for k in (
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class"))
    name = str(_md(obj).get("name")) + (" (default)" if default else "")
    return [name, obj.get("provisioner", ""), obj.get("reclaimPolicy") or "Delete",
            obj.get("volumeBindingMode") or "Immediate",
            bool(obj.get("allowVolumeExpansion", False)), _created(obj, now)]


def _csidriver_cells(obj: dict[str, Any], now: datetime.datetime) -> list[Any]:
    spec = _spec(obj)
    tokens = spec.get("tokenRequests")
    return [_md(obj).get("name"), bool(spec.get("attachRequired", True)),
            bool(spec.get("podInfoOnMount", False)), bool(spec.get("storageCapacity", False)),
            ",".join(t.get("audience", "") for t in tokens) if tokens is not None else "<unset>",
            bool(spec.get("requiresRepublish", False)),
            ",".join(spec.get("volumeLifecycleModes") or []) or "<none>", _created(obj, now)]


def _name_age(extra: Callable[[dict[str, Any]], list[Any]]) -> Cells:
    def cells(obj: dict[str, Any], now: datetime.datetime) -> list[Any]:
        return [_md(obj).get("name"), *extra(obj), _created(obj, now)]

    return cells


_DEFAULT: tuple[list[Column], Cells] = (
    [_NAME, ("Created At", "date", "CreationTimestamp of the object.", 0)],
    lambda o, now: [_md(o).get("name"), _rfc3339(o, now)],
)


_PRINTERS: dict[tuple[str, str], tuple[list[Column], Cells]] = {
    ("", "pods"): (
        [_NAME, ("Ready", "string", "The aggregate readiness state of this pod for accepting "
                 "traffic.", 0),
         ("Status", "string", "The aggregate status of the containers in this pod.", 0),
         ("Restarts", "string", "The number of times the containers in this pod have been "
          "restarted and when the last container in this pod has restarted.", 0), _AGE,
         ("IP", "string", "podIP address allocated to the pod.", 1),
         ("Node", "string", "NodeName is a request to schedule this pod onto a specific "
          "node.", 1),
         ("Nominated Node", "string", "nominatedNodeName is set only when this pod preempts "
          "other pods on the node.", 1),
         ("Readiness Gates", "string", "If specified, all readiness gates will be evaluated "
          "for pod readiness.", 1)],
        _pod_cells),
    ("", "nodes"): (
        [_NAME, ("Status", "string", "The status of the node", 0),
         ("Roles", "string", "The roles of the node", 0), _AGE,
         ("Version", "string", "Kubelet Version reported by the node.", 0),
         ("Internal-IP", "string", "List of addresses reachable to the node.", 1),
         ("External-IP", "string", "List of addresses reachable to the node.", 1),
         ("OS-Image", "string", "OS Image reported by the node.", 1),
         ("Kernel-Version", "string", "Kernel Version reported by the node.", 1),
         ("Container-Runtime", "string", "ContainerRuntime Version reported by the node.", 1)],
        _node_cells),
    ("", "namespaces"): (
        [_NAME, ("Status", "string", "The status of the namespace", 0), _AGE],
        _name_age(lambda o: [_status(o).get("phase", "")])),
    ("", "services"): (
        [_NAME, ("Type", "string", "type determines how the Service is exposed.", 0),
         ("Cluster-IP", "string", "clusterIP is the IP address of the service.", 0),
         ("External-IP", "string", "externalIPs is a list of IP addresses.", 0),
         ("Port(s)", "string", "The list of ports that are exposed by this service.", 0),
         _AGE, ("Selector", "string", "Route service traffic to pods with label keys and "
                "values matching this selector.", 1)],
        _service_cells),
    ("", "configmaps"): (
        [_NAME, ("Data", "string", "Data contains the configuration data.", 0), _AGE],
        _name_age(lambda o: [len(o.get("data") or {}) + len(o.get("binaryData") or {})])),
    ("", "secrets"): (
        [_NAME, ("Type", "string", "Used to facilitate programmatic handling of secret "
                 "data.", 0), ("Data", "string", "Data contains the secret data.", 0), _AGE],
        _name_age(lambda o: [o.get("type", ""), len(o.get("data") or {})])),
    ("", "serviceaccounts"): (
        [_NAME, ("Secrets", "string", "Secrets is a list of the secrets in the same "
                 "namespace.", 0), _AGE],
        _name_age(lambda o: [len(o.get("secrets") or [])])),
    ("", "persistentvolumes"): (
        [_NAME, ("Capacity", "string", "capacity is the description of the persistent "
                 "volume's resources and capacity.", 0),
         ("Access Modes", "string", "accessModes contains all ways the volume can be "
          "mounted.", 0),
         ("Reclaim Policy", "string", "persistentVolumeReclaimPolicy defines what happens to "
          "a persistent volume when released from its claim.", 0),
         ("Status", "string", "phase indicates if a volume is available, bound to a claim, "
          "or released by a claim.", 0),
         ("Claim", "string", "claimRef is part of a bi-directional binding between "
          "PersistentVolume and PersistentVolumeClaim.", 0),
         ("StorageClass", "string", "StorageClass of the pv", 0),
         ("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv", 0),
         ("Reason", "string", "reason is a brief CamelCase string that describes any "
          "failure.", 0), _AGE,
         ("VolumeMode", "string", "volumeMode defines if a volume is intended to be used "
          "with a formatted filesystem or to remain in raw block state.", 1)],
        _pv_cells),
    ("", "persistentvolumeclaims"): (
        [_NAME, ("Status", "string", "phase represents the current phase of "
                 "PersistentVolumeClaim.", 0),
         ("Volume", "string", "volumeName is the binding reference to the PersistentVolume "
          "backing this claim.", 0),
         ("Capacity", "string", "capacity represents the actual resources of the underlying "
          "volume.", 0),
         ("Access Modes", "string", "accessModes contains the actual access modes the "
          "volume backing the PVC has.", 0),
         ("StorageClass", "string", "StorageClass of the pvc", 0),
         ("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc", 0), _AGE,
         ("VolumeMode", "string", "volumeMode defines what type of volume is required by the "
          "claim.", 1)],
        _pvc_cells),
    ("", "events"): (
        [("Last Seen", "string", "The time at which the most recent occurrence of this event "
          "was recorded.", 0),
         ("Type", "string", "Type of this event (Normal, Warning).", 0),
         ("Reason", "string", "This should be a short, machine understandable string that "
          "gives the reason for the transition into the object's current status.", 0),
         ("Object", "string", "The object that this event is about.", 0),
         ("Subobject", "string", "The field of the object the event is about.", 1),
         ("Source", "string", "The component reporting this event.", 1),
         ("Message", "string", "A human-readable description of the status of this "
          "operation.", 0),
         ("First Seen", "string", "The time at which the event was first recorded.", 1),
         ("Count", "string", "The number of times this event has occurred.", 1),
         ("Name", "string", "Name must be unique within a namespace.", 1)],
        _event_cells),
    ("apps", "deployments"): (
        [_NAME, ("Ready", "string", "Number of the pod with ready state", 0),
         ("Up-to-date", "string", "Total number of non-terminated pods targeted by this "
          "deployment that have the desired template spec.", 0),
         ("Available", "string", "Total number of available pods targeted by this "
          "deployment.", 0), _AGE, _CONTAINERS, _IMAGES, _SELECTOR],
        _deployment_cells),
    ("apps", "replicasets"): (
        [_NAME, ("Desired", "integer", "Replicas is the number of desired replicas.", 0),
         ("Current", "integer", "Replicas is the most recently observed number of "
          "replicas.", 0),
         ("Ready", "integer", "The number of ready replicas for this replica set.", 0),
         _AGE, _CONTAINERS, _IMAGES, _SELECTOR],
        _replicaset_cells),
    ("apps", "statefulsets"): (
        [_NAME, ("Ready", "string", "Number of the pod with ready state", 0), _AGE,
         _CONTAINERS, _IMAGES],
        _statefulset_cells),
    ("apps", "daemonsets"): (
        [_NAME, ("Desired", "integer", "The total number of nodes that should be running the "
                 "daemon pod.", 0),
         ("Current", "integer", "The number of nodes that are running at least 1 daemon "
          "pod.", 0),
         ("Ready", "integer", "The number of nodes that should be running the daemon pod and "
          "have one or more of the daemon pod running and ready.", 0),
         ("Up-to-date", "integer", "The total number of nodes that are running updated daemon "
          "pod.", 0),
         ("Available", "integer", "The number of nodes that should be running the daemon pod "
          "and have one or more of the daemon pod running and available.", 0),
         ("Node Selector", "string", "NodeSelector is a selector which must be true for the "
          "pod to fit on a node.", 0), _AGE, _CONTAINERS, _IMAGES, _SELECTOR],
        _daemonset_cells),
    ("batch", "jobs"): (
        [_NAME, ("Status", "string", "Status of the job.", 0),
         ("Completions", "string", "The number of pods which reached phase Succeeded.", 0),
         ("Duration", "string", "Time required to complete the job.", 0), _AGE,
         _CONTAINERS, _IMAGES, _SELECTOR],
        _job_cells),
    ("batch", "cronjobs"): (
        [_NAME, ("Schedule", "string", "The schedule in Cron format.", 0),
         ("Timezone", "string", "The time zone name for the given schedule.", 0),
         ("Suspend", "boolean", "This flag tells the controller to suspend subsequent "
          "executions.", 0),
         ("Active", "integer", "A list of pointers to currently running jobs.", 0),
         ("Last Schedule", "string", "Information when was the last time the job was "
          "successfully scheduled.", 0), _AGE, _CONTAINERS, _IMAGES, _SELECTOR],
        _cronjob_cells),
    ("rbac.authorization.k8s.io", "roles"): _DEFAULT,
    ("rbac.authorization.k8s.io", "rolebindings"): (
        [_NAME, ("Role", "string", "RoleRef can reference a Role in the current namespace or "
                 "a ClusterRole in the global namespace.", 0), _AGE,
         ("Users", "string", "Users in the roleBinding", 1),
         ("Groups", "string", "Groups in the roleBinding", 1),
         ("ServiceAccounts", "string", "ServiceAccounts in the roleBinding", 1)],
        _binding_cells),
    ("storage.k8s.io", "storageclasses"): (
        [_NAME, ("Provisioner", "string", "provisioner indicates the type of the "
                 "provisioner.", 0),
         ("ReclaimPolicy", "string", "reclaimPolicy controls the reclaimPolicy for "
          "dynamically provisioned PersistentVolumes of this storage class.", 0),
         ("VolumeBindingMode", "string", "volumeBindingMode indicates how "
          "PersistentVolumeClaims should be provisioned and bound.", 0),
         ("AllowVolumeExpansion", "string", "allowVolumeExpansion shows whether the storage "
          "class allow volume expand.", 0), _AGE],
        _storageclass_cells),
    ("storage.k8s.io", "csidrivers"): (
        [_NAME, ("AttachRequired", "boolean", "attachRequired indicates this CSI volume "
                 "driver requires an attach operation.", 0),
         ("PodInfoOnMount", "boolean", "podInfoOnMount indicates this CSI volume driver "
          "requires additional pod information during mount operations.", 0),
         ("StorageCapacity", "boolean", "storageCapacity indicates that the CSI volume driver "
          "wants pod scheduling to consider the storage capacity.", 0),
         ("TokenRequests", "string", "tokenRequests indicates the CSI driver needs pods' "
          "service account tokens.", 0),
         ("RequiresRepublish", "boolean", "requiresRepublish indicates the CSI driver wants "
          "NodePublishVolume being periodically called.", 0),
         ("Modes", "string", "volumeLifecycleModes defines what kind of volumes this CSI "
          "volume driver supports.", 0), _AGE],
        _csidriver_cells),
    ("coordination.k8s.io", "leases"): (
        [_NAME, ("Holder", "string", "holderIdentity contains the identity of the holder of a "
                 "current lease.", 0), _AGE],
        _name_age(lambda o: [_spec(o).get("holderIdentity", "")])),
}
_PRINTERS[("rbac.authorization.k8s.io", "clusterroles")] = _PRINTERS[
    ("rbac.authorization.k8s.io", "roles")]
_PRINTERS[("rbac.authorization.k8s.io", "clusterrolebindings")] = _PRINTERS[
    ("rbac.authorization.k8s.io", "rolebindings")]

def _definitions(columns: list[Column]) -> list[dict[str, Any]]:
    out = []
    for name, kind, description, priority in columns:
        out.append({"name": name, "type": kind, "format": "name" if name == "Name" else "",
                    "description": description, "priority": priority})
    return out


# --- custom resources --------------------------------------------------------------------


def _json_cell(kind: str, value: Any, now: datetime.datetime) -> Any:
    """apiextensions' cellForJSONValue: typed cells; dates as ages."""
    if kind == "integer" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    if kind == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "date" and isinstance(value, str):
        return age(value, now) if _parse_time(value) else "<invalid>"
    return None


def crd_printer(crd: dict[str, Any] | None, version: str) -> tuple[list[dict[str, Any]], Cells]:
    """Columns and cells of a custom resource at `version`, from its CRD."""
    found: list[dict[str, Any]] = []
    for entry in (_spec(crd) if crd else {}).get("versions") or []:
        if entry.get("name") == version:
            found = list(entry.get("additionalPrinterColumns") or [])
    if not found:
        found = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
                  "description": "CreationTimestamp is a timestamp representing the server "
                                 "time when this object was created."}]
    definitions = _definitions([_NAME])
    for col in found:
        definitions.append({
            "name": col.get("name", ""), "type": col.get("type", "string"),
            "format": col.get("format", ""),
            "description": col.get("description")
            or f"Custom resource definition column (in JSONPath format): {col.get('jsonPath')}",
            "priority": int(col.get("priority") or 0),
        })

    def cells(obj: dict[str, Any], now: datetime.datetime) -> list[Any]:
        row: list[Any] = [_md(obj).get("name")]
        for col in found:
            try:
                values = jsonpath.find(obj, str(col.get("jsonPath", "")))
            except jsonpath.JsonPathError:
                values = []
            if not values:
                row.append(None)
            elif col.get("type", "string") == "string":
                row.append(jsonpath.text(values[0]))
            else:
                row.append(_json_cell(str(col.get("type")), values[0], now))
        return row

    return definitions, cells


# --- the answers -------------------------------------------------------------------------


class Printer:
    """Renders objects of one resource type in the form the client asked for."""

    def __init__(self, rt: ResourceType, wanted: Wanted, include: str | None,
                 crd: dict[str, Any] | None = None) -> None:
        self.rt = rt
        self.wanted = wanted
        self.include = include or "Metadata"
        if rt.crd is not None:
            self.columns, self.cells = crd_printer(crd, rt.version)
        else:
            columns, self.cells = _PRINTERS.get((rt.group, rt.plural), _DEFAULT)
            self.columns = _definitions(columns)

    def _partial(self, obj: dict[str, Any]) -> dict[str, Any]:
        return {"kind": PARTIAL, "apiVersion": self.wanted.api_version,
                "metadata": obj.get("metadata") or {}}

    def _row(self, obj: dict[str, Any], now: datetime.datetime) -> dict[str, Any]:
        row: dict[str, Any] = {"cells": self.cells(obj, now)}
        if (self.rt.group, self.rt.plural) == ("", "pods"):
            phase = _status(obj).get("phase")
            if phase in ("Succeeded", "Failed"):
                row["conditions"] = [{
                    "type": "Completed", "status": "True", "reason": phase,
                    "message": ("The pod has completed successfully." if phase == "Succeeded"
                                else "The pod failed.")}]
        if self.include == "Object":
            row["object"] = obj
        elif self.include != "None":
            row["object"] = self._partial(obj)
        return row

    def table(self, items: list[dict[str, Any]], metadata: dict[str, Any],
              headers: bool = True) -> dict[str, Any]:
        now = datetime.datetime.now(datetime.UTC)
        return {"kind": TABLE, "apiVersion": self.wanted.api_version, "metadata": metadata,
                "columnDefinitions": self.columns if headers else [],
                "rows": [self._row(obj, now) for obj in items]}

    def list(self, items: list[dict[str, Any]], metadata: dict[str, Any]) -> dict[str, Any]:
        if self.wanted.kind == TABLE:
            return self.table(items, metadata)
        return {"kind": PARTIAL_LIST, "apiVersion": self.wanted.api_version,
                "metadata": metadata, "items": [self._partial(o) for o in items]}

    def one(self, obj: dict[str, Any]) -> dict[str, Any]:
        if self.wanted.kind == TABLE:
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            return self.table([obj], {"resourceVersion": rv} if rv else {})
        return self._partial(obj)

    def event(self, obj: dict[str, Any], first: bool) -> dict[str, Any]:
        """A watch event's object: a one-row Table (headers on the first event only)."""
        if self.wanted.kind == TABLE:
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            return self.table([obj], {"resourceVersion": rv} if rv else {}, headers=first)
        return self._partial(obj)
