"""Clusters: the staged create (and its dry run), list, describe, kubeconfig, delete, stage
re-runs, import, the active cluster and preflight."""

from __future__ import annotations

from collections import Counter
from typing import Any

from flask import jsonify
from flask.views import MethodView
from flask_smorest import Blueprint

from app import auth, context, mutations
from app.api.discovery import zones_in
from app.cache import cached
from app.errors import ApiError
from app.permissions import access
from cloud import addons, aws, discovery, eks, hyperpod, kube, preflight, pricing
from schemas.clusters import (
    STAGES,
    ActiveClusterReplySchema,
    ActiveClusterSchema,
    ClusterCreateSchema,
    ClusterDeleteQuerySchema,
    ClusterImportSchema,
    ClusterListSchema,
    ClusterSchema,
    KubeconfigSchema,
    PlanSchema,
    PreflightQuerySchema,
    PreflightSchema,
    StagePathSchema,
)
from schemas.common import DryRunQuerySchema, MutationReplySchema
from tasks import active, clusters, registry

blp = Blueprint("clusters", __name__, url_prefix="/api/v1",
                description="EKS + HyperPod clusters: create in stages, inspect, delete")


def _region(data: dict[str, Any]) -> str:
    return data.get("region") or context.settings().region


def _create_ops(name: str) -> list[dict[str, Any]]:
    """This cluster's create and stage operations, newest first."""
    store = context.engine().store
    return [op for op in store.list(target=f"cluster/{name}", limit=200)
            if op["target"] == f"cluster/{name}" and op["kind"] in ("cluster.create",
                                                                       "cluster.stage")]


def _last_create(name: str) -> dict[str, Any] | None:
    return next((op for op in _create_ops(name) if op["kind"] == "cluster.create"), None)


# validation ---------------------------------------------------------------------------------

def _check_choices(body: dict[str, Any], region: str) -> list[str]:
    """Refuse what AWS would refuse, with the real reason; answer the network's two zones."""
    zone = body["availability_zone"]
    available = [z["name"] for z in zones_in(region) if z.get("state") == "available"]
    if zone not in available:
        raise ApiError(422, "validation_failed",
                       f"{zone} is not an available zone of {region}; choose one of "
                       f"{', '.join(available)}", {"fields": {"availability_zone": ["unknown"]}})
    offered = cached(f"instance-types:{region}:{zone}", 300,
                     lambda: discovery.instance_types(aws.client("ec2", region=region), zone))
    chosen = next((t for t in offered if t["name"] == body["instance_type"]), None)
    if chosen is None:
        raise ApiError(422, "validation_failed",
                       f"{body['instance_type']} is not offered in {zone}; see "
                       f"GET /api/v1/discovery/instance-types?availability_zone={zone}",
                       {"fields": {"instance_type": [f"not offered in {zone}"]}})
    _check_efa(body, chosen)
    others = [z for z in available if z != zone]
    return [zone, others[0]] if others else [zone]


def _check_efa(body: dict[str, Any], chosen: dict[str, Any]) -> None:
    """EFA as the type allows: unset means EFA where the type has it, none where it has not;
    HyperPod refuses `efa` on a type without EFA and `efa-only` on one with a single
    interface — say so now, not after the network and EKS stages have run."""
    mode = body.get("efa_mode")
    name = chosen["name"]
    if mode is None:
        body["efa_mode"] = "efa" if chosen.get("efa_supported") else None
    elif mode == "efa" and not chosen.get("efa_supported"):
        raise ApiError(422, "validation_failed", f"{name} has no EFA; leave efa_mode unset",
                       {"fields": {"efa_mode": [f"{name} does not support EFA"]}})
    elif mode == "efa-only" and (chosen.get("max_efa_interfaces") or 0) < 2:
        raise ApiError(422, "validation_failed",
                       f"efa-only needs an instance type with several EFA interfaces; {name} "
                       f"has {chosen.get('max_efa_interfaces') or 0}",
                       {"fields": {"efa_mode": ["needs several EFA interfaces"]}})


def _preflight(body: dict[str, Any], region: str) -> dict[str, Any]:
    return preflight.check(aws.client("service-quotas", region=region),
                           aws.client("sagemaker", region=region), region,
                           body["instance_type"], body["instance_count"],
                           body.get("capacity_type") or "on-demand",
                           body.get("training_plan_arn"))


def _plan(body: dict[str, Any], region: str, zones: list[str]) -> list[dict[str, Any]]:
    name = body["name"]
    steps = clusters.create_steps(body)
    plan = [{"stage": s.stage, "step": s.name, "action": s.title} for s in steps]
    resources = []
    if not body.get("existing_vpc"):
        resources.append({"type": "vpc", "name": name, "cidr": body.get("cidr") or "10.0.0.0/16",
                          "availability_zones": zones})
    resources += [
        {"type": "iam_role", "name": f"hypd-{name}-eks-cluster"},
        {"type": "eks_cluster", "name": name,
         "kubernetes_version": body.get("kubernetes_version")},
        {"type": "eks_access_entry", "policy": eks.ADMIN_ACCESS_POLICY},
        {"type": "iam_oidc_provider"},
        {"type": "s3_bucket", "purpose": "lifecycle scripts"},
        {"type": "iam_role", "name": f"hypd-{name}-hp-exec"},
        {"type": "iam_role", "name": f"hypd-{name}-hp-cluster"},
        {"type": "subnet", "prefix": "/20", "availability_zone": body["availability_zone"]},
        {"type": "hyperpod_cluster", "name": name, "node_recovery": hyperpod.NODE_RECOVERY,
         "node_provisioning_mode": hyperpod.NODE_PROVISIONING_MODE,
         "instance_groups": [{"name": clusters.GROUP_NAME,
                              "instance_type": body["instance_type"],
                              "count": body["instance_count"],
                              "capacity_type": body.get("capacity_type"),
                              "efa_mode": body.get("efa_mode"),
                              "deep_health_checks": body.get("deep_health_checks")}]},
        {"type": "s3_bucket", "purpose": "shared data, mounted at /s3"},
        {"type": "kubernetes", "objects": ["PersistentVolume", "PersistentVolumeClaim"]},
    ]
    if body.get("fsx"):
        resources.append({"type": "fsx_lustre", "claim": "hypd-fsx",
                          "storage_capacity_gib": body["fsx"]["storage_capacity_gib"],
                          "deployment_type": body["fsx"]["deployment_type"],
                          "availability_zone": body["availability_zone"]})
    return [{"steps": plan}, {"resources": resources}]


def _cost(body: dict[str, Any], region: str) -> dict[str, Any]:
    return pricing.estimate({
        "region": region,
        "instance_groups": [{"instance_type": body["instance_type"],
                             "count": body["instance_count"],
                             "capacity_type": body.get("capacity_type") or "on-demand"}],
        "nat_gateways": 0 if body.get("existing_vpc") else 1,
    })


# routes ---------------------------------------------------------------------------------------

@blp.route("/clusters")
class Clusters(MethodView):
    @access("viewer")
    @blp.response(200, ClusterListSchema)
    def get(self):
        """List clusters: those hypd created (by tags) and imported ones."""
        region = context.settings().region
        client = aws.client("eks", region=region)
        items = []
        for name in client.list_clusters().get("clusters", []):
            found = eks.describe(client, name)
            if found and eks.made_by_hypd_for(found.get("tags"), name):
                items.append(_summary(name, region, found, imported=False))
        for record in registry.imported(context.redis_conn()):
            found = eks.describe(aws.client("eks", region=record["region"]), record["name"])
            items.append(_summary(record["name"], record["region"], found, imported=True))
        return {"items": items}

    @access("operator", dry_run=True)
    @blp.arguments(ClusterCreateSchema)
    @blp.arguments(DryRunQuerySchema, location="query")
    @blp.response(202, MutationReplySchema)
    @blp.alt_response(200, schema=PlanSchema, description="the plan, with ?dry_run=true")
    @blp.alt_response(412, description="a quota or reservation does not cover the request")
    def post(self, body, query):
        """Create a cluster in stages: network, EKS, activate, dependencies, HyperPod,
        storage. With `?dry_run=true`, answer the plan and an hourly cost estimate."""
        region = _region(body)
        name = body["name"]
        params = dict(body)
        params["region"] = region

        def precheck() -> dict[str, Any]:
            if eks.describe(aws.client("eks", region=region), name) is not None:
                raise ApiError(409, "conflict", f"an EKS cluster named {name!r} already "
                                                f"exists in {region}", {"name": name})
            zones = _check_choices(body, region)
            params["availability_zones"] = zones
            params["efa_mode"] = body.get("efa_mode")
            checks = _preflight(body, region)
            return {"zones": zones, "preflight": checks}

        if query["dry_run"]:
            found = precheck()
            return jsonify(PlanSchema().dump({
                "dry_run": True, "plan": _plan(body, region, found["zones"]),
                "cost": _cost(body, region), "preflight": found["preflight"]}))

        def gate() -> None:
            checks = precheck()["preflight"]
            if not checks["ok"]:
                raise ApiError(412, "precondition_failed",
                               "preflight: " + preflight.summary(preflight.failed(checks)),
                               {"preflight": checks})

        return mutations.submit(clusters.CLUSTER_CREATE, f"cluster/{name}", params, gate)


def _summary(name: str, region: str, found: dict[str, Any] | None,
             imported: bool) -> dict[str, Any]:
    return {"name": name, "region": region, "imported": imported,
            "eks": {"status": found.get("status"), "version": found.get("version"),
                    "arn": found.get("arn")} if found else None}


def _stage_view(name: str) -> list[dict[str, Any]]:
    """Each stage's state from the newest operation that ran it."""
    views: dict[str, dict[str, Any]] = {}
    for op in _create_ops(name):
        for stage in STAGES:
            if stage in views:
                continue
            steps = [s for s in op["steps"] if s.get("stage") == stage]
            if not steps:
                continue
            phases = {s["phase"] for s in steps}
            if phases <= {"succeeded", "skipped"}:
                status = "succeeded"
            elif "failed" in phases:
                status = "failed"
            elif op["status"] == "cancelled":
                status = "cancelled"
            elif phases & {"applying", "applied"}:
                status = "running"
            else:
                status = "pending"
            views[stage] = {"name": stage, "status": status, "operation_id": op["id"],
                            "steps": [{"name": s["name"], "phase": s["phase"],
                                       "detail": s["detail"]} for s in steps]}
    return [views.get(stage, {"name": stage, "status": "not_run", "operation_id": None,
                              "steps": []}) for stage in STAGES]


HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"


def _node_health(name: str, region: str, found: dict[str, Any] | None) -> dict[str, int] | None:
    """HyperPod nodes by the health label its agents keep on each Kubernetes Node (None
    when the cluster's Kubernetes API cannot be read now)."""
    if not found or found.get("status") != eks.ACTIVE:
        return None
    try:
        nodes = kube.list_objects(eks.api_client(name, region), "v1", "Node",
                                  label_selector="sagemaker.amazonaws.com/compute-type=hyperpod")
    except (kube.KubeError, OSError, ValueError):
        return None
    counts = Counter((n["metadata"].get("labels") or {}).get(HEALTH_LABEL, "Unknown")
                     for n in nodes)
    return dict(sorted(counts.items()))


@blp.route("/clusters/<string:name>")
class Cluster(MethodView):
    @access("viewer")
    @blp.response(200, ClusterSchema)
    def get(self, name):
        """A cluster: EKS and HyperPod state, stages, instance groups, nodes by health,
        features, recent HyperPod events."""
        record = registry.get(context.redis_conn(), name)
        region = record["region"] if record else context.settings().region
        found = eks.describe(aws.client("eks", region=region), name)
        ours = found is not None and eks.made_by_hypd_for(found.get("tags"), name)
        if record is None and not ours and not _create_ops(name):
            raise ApiError(404, "not_found", f"no cluster named {name!r}")
        hp_name = (record or {}).get("hyperpod_cluster") or name
        described = hyperpod.describe(aws.client("sagemaker", region=region), hp_name)
        overrides = addons.overrides_from_tags((found or {}).get("tags"))
        features = {f: {"enabled": overrides.get(f, meta["default"]),
                        "description": meta["description"]}
                    for f, meta in addons.features().items()}
        return {
            "name": name, "region": region, "imported": record is not None,
            "eks": {"status": found.get("status"), "version": found.get("version"),
                    "endpoint": found.get("endpoint"), "arn": found.get("arn")}
            if found else None,
            "hyperpod": {k: described[k] for k in ("name", "arn", "status", "failure_message",
                                                    "node_recovery", "node_provisioning_mode",
                                                    "autoscaling")}
            if described else None,
            "stages": [] if record else _stage_view(name),
            "instance_groups": described["instance_groups"] if described else [],
            "nodes": {**(described["node_counts"] if described
                         else {"total": 0, "by_status": {}}),
                      "by_health": _node_health(name, region, found)},
            "features": features,
            "events": described["events"] if described else [],
        }

    @access("operator")
    @blp.arguments(ClusterDeleteQuerySchema, location="query")
    @blp.response(202, MutationReplySchema)
    @blp.alt_response(200, description="an imported cluster: forgotten, AWS untouched")
    def delete(self, query, name):
        """Delete what hypd made for the cluster, in reverse order (load balancers and
        volumes first). An imported cluster is only forgotten."""
        conn = context.redis_conn()
        if registry.get(conn, name) is not None:
            context.engine().store.ensure_target_free(f"cluster/{name}")
            registry.forget(conn, name)
            active.clear_everywhere(conn, name)
            return jsonify({"changed": True, "imported": True, "resource_url": None,
                            "message": f"forgot imported cluster {name}; AWS untouched"})
        region = context.settings().region
        create = _last_create(name)
        made_network = not (create or {}).get("params", {}).get("existing_vpc")

        def precheck() -> None:
            found = eks.describe(aws.client("eks", region=region), name)
            if found is None and create is None:
                raise ApiError(404, "not_found", f"no cluster named {name!r}")
            if found is not None and not eks.made_by_hypd_for(found.get("tags"), name):
                raise ApiError(409, "conflict", f"EKS cluster {name!r} was not created by "
                                                "hypd; import it instead of deleting it")

        params = {"name": name, "region": region, "network": made_network,
                  "delete_data": query["delete_data"]}
        return mutations.submit(clusters.CLUSTER_DELETE, f"cluster/{name}", params, precheck)


@blp.route("/clusters/<string:name>/kubeconfig")
@access("viewer")
@blp.response(200, KubeconfigSchema)
def kubeconfig(name):
    """A kubeconfig for the cluster (authenticates with `aws eks get-token`)."""
    record = registry.get(context.redis_conn(), name)
    region = record["region"] if record else context.settings().region
    found = eks.describe(aws.client("eks", region=region), name)
    if found is None:
        raise ApiError(404, "not_found", f"no EKS cluster named {name!r} in {region}")
    try:
        return {"kubeconfig": eks.kubeconfig(found, region)}
    except ValueError as exc:
        raise ApiError(409, "conflict", str(exc)) from exc


@blp.route("/clusters/<string:name>/stages/<string:stage>/run", methods=["POST"])
@access("operator")
@blp.arguments(StagePathSchema, location="path")
@blp.response(202, MutationReplySchema)
def run_stage(path, name, stage):
    """Re-run one stage of a cluster's create on its own (it adopts what exists)."""
    create = _last_create(name)
    if create is None:
        raise ApiError(404, "not_found", f"no cluster named {name!r} created by hypd here")
    params = {**create["params"], "stage": stage}
    inputs = {s["name"]: s["resources"] for s in create["steps"] if s.get("stage") != stage}
    for op in reversed(_create_ops(name)):  # newer stage runs override older outputs
        inputs.update({s["name"]: s["resources"] for s in op["steps"]
                       if s.get("stage") != stage and s["resources"]})
    return mutations.submit(clusters.CLUSTER_STAGE, f"cluster/{name}", params, inputs=inputs)


@blp.route("/clusters/import", methods=["POST"])
@access("operator")
@blp.arguments(ClusterImportSchema)
@blp.response(201, ClusterSchema)
def import_cluster(body):
    """Adopt an existing EKS (and HyperPod) cluster read-only: listable and usable; deleting
    it in hypd never deletes its AWS resources."""
    region = _region(body)
    name = body["name"]
    found = eks.describe(aws.client("eks", region=region), name)
    if found is None:
        raise ApiError(404, "not_found", f"no EKS cluster named {name!r} in {region}")
    if eks.made_by_hypd_for(found.get("tags"), name):
        raise ApiError(409, "conflict", f"{name!r} was created by hypd; it is listed already")
    hp = body.get("hyperpod_cluster")
    if hp and hyperpod.cluster_state(aws.client("sagemaker", region=region), hp) is None:
        raise ApiError(404, "not_found", f"no HyperPod cluster named {hp!r} in {region}")
    registry.remember(context.redis_conn(), name, region, hp, auth.current().name)
    return _summary(name, region, found, imported=True), 201


@blp.route("/active-cluster")
class ActiveCluster(MethodView):
    @access("viewer")
    @blp.response(200, ActiveClusterReplySchema)
    def get(self):
        """The calling token's active cluster."""
        return {"name": active.get_active(context.redis_conn(), auth.current().name)}

    @access("operator")
    @blp.arguments(ActiveClusterSchema)
    @blp.response(200, ActiveClusterReplySchema)
    def put(self, body):
        """Choose the calling token's active cluster (a per-token default)."""
        name = body["name"]
        known = registry.get(context.redis_conn(), name) is not None or _last_create(name)
        if not known:
            found = eks.describe(aws.client("eks", region=context.settings().region), name)
            if found is None or not eks.made_by_hypd_for(found.get("tags"), name):
                raise ApiError(404, "not_found", f"no cluster named {name!r}")
        active.set_active(context.redis_conn(), auth.current().name, name)
        return {"name": name}


@blp.route("/preflight")
@access("viewer")
@blp.arguments(PreflightQuerySchema, location="query")
@blp.response(200, PreflightSchema)
def run_preflight(query):
    """Read-only checks of service quotas and training-plan reservations for a capacity
    request, with what is missing and how to ask for it."""
    region = _region(query)
    return {"region": region, **_preflight(
        {"instance_type": query["instance_type"], "instance_count": query["count"],
         "capacity_type": query["capacity_type"],
         "training_plan_arn": query.get("training_plan_arn")}, region)}
