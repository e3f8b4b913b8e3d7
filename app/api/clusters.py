"""Clusters: the staged create (and its dry run), list, describe, kubeconfig, delete, stage
re-runs, import, the active cluster and preflight."""

from __future__ import annotations

from typing import Any

import yaml
from flask import Response, request
from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import RAISE

from app import audit, auth, choices, context, mutations
from app.errors import ApiError
from app.permissions import access
from app.readmodels import budgets as budgets_readmodel
from app.readmodels import clusters as readmodel
from app.readmodels import dependents, dry_run, lifecycle
from cloud import aws, eks, hyperpod, preflight
from schemas.clusters import (
    KUBECONFIG_YAML,
    ActiveClusterReplySchema,
    ActiveClusterSchema,
    ClusterCostSchema,
    ClusterCreateSchema,
    ClusterDeleteQuerySchema,
    ClusterImportSchema,
    ClusterListSchema,
    ClusterSchema,
    ForgottenSchema,
    KubeconfigQuerySchema,
    KubeconfigSchema,
    PlanSchema,
    PreflightQuerySchema,
    PreflightSchema,
    StagePathSchema,
)
from schemas.common import DryRunQuerySchema, MutationReplySchema
from tasks import active, budgets, clusters, registry, team_ledger
from vocabulary.capacity import ON_DEMAND
from vocabulary.roles import Role

blp = Blueprint("clusters", __name__, url_prefix="/api/v1",
                description="EKS + HyperPod clusters: create in stages, inspect, delete")
audit.declare_target(blp, "cluster/<name>")


def _region(data: dict[str, Any]) -> str:
    return data.get("region") or context.settings().region


# validation ---------------------------------------------------------------------------------

def _check_choices(body: dict[str, Any], region: str) -> list[str]:
    """Refuse what AWS would refuse, with the real reason; answer the network's two zones."""
    zone = body["availability_zone"]
    available = choices.check_zone(region, zone)
    chosen = choices.offered_type(region, zone, body["instance_type"])
    body["efa_mode"] = choices.efa_mode(body.get("efa_mode"), chosen)
    others = [z for z in available if z != zone]
    return [zone, others[0]] if others else [zone]


def _preflight(body: dict[str, Any], region: str) -> dict[str, Any]:
    return preflight.check(aws.client("service-quotas", region=region),
                           aws.client("sagemaker", region=region), region,
                           body["instance_type"], body["instance_count"],
                           body.get("capacity_type") or ON_DEMAND,
                           body.get("training_plan_arn"))


# routes ---------------------------------------------------------------------------------------

@blp.route("/clusters")
class Clusters(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, ClusterListSchema)
    @blp.doc(operationId="list_clusters")
    def get(self):
        """List clusters: those hypd created (by tags) and imported ones."""
        return {"items": readmodel.listing()}

    @access(Role.OPERATOR, dry_run=True)
    @blp.arguments(ClusterCreateSchema)
    @blp.arguments(DryRunQuerySchema, location="query", unknown=RAISE)  # a typo never creates
    @blp.response(202, MutationReplySchema)
    @blp.alt_response(200, schema=PlanSchema, description="the plan, with ?dry_run=true")
    @blp.alt_response(412, description="a quota or reservation does not cover the request")
    @blp.doc(operationId="create_cluster")
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
            return mutations.alt_reply(PlanSchema, {
                "dry_run": True, "plan": dry_run.plan(body, found["zones"]),
                "cost": dry_run.cost(body, region), "preflight": found["preflight"]})

        def gate() -> None:
            checks = precheck()["preflight"]
            if not checks["ok"]:
                raise ApiError(412, "precondition_failed",
                               "preflight: " + preflight.summary(preflight.failed(checks)),
                               {"preflight": checks})

        return mutations.submit(clusters.CLUSTER_CREATE, f"cluster/{name}", params, gate)


@blp.route("/clusters/<string:name>")
class Cluster(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, ClusterSchema)
    @blp.doc(operationId="get_cluster")
    def get(self, name):
        """A cluster: EKS and HyperPod state, stages, instance groups, nodes by health,
        features, recent HyperPod events."""
        return readmodel.detail(readmodel.find(name))

    @mutations.destructive(blp, ClusterDeleteQuerySchema, own_200=(
        ForgottenSchema, "an imported cluster: forgotten, AWS untouched"),
        conflict="an EKS cluster hypd did not make")
    @blp.doc(operationId="delete_cluster")
    def delete(self, query, name):
        """Delete what hypd made for the cluster, in reverse order (load balancers and
        volumes first). Refused (409 in_use, naming each) while work runs on it — training
        jobs not finished, inference endpoints, model downloads, workloads using its storage
        — unless force=true; and, without force overriding it, while another cluster runs
        in the network the delete would remove. An imported cluster is only forgotten."""
        conn = context.redis_conn()
        if registry.get(conn, name) is not None:
            shown = mutations.guard(lambda: mutations.Impact(
                f"imported cluster {name}", [f"hypd's record of {name} (AWS untouched)"]), query)
            if shown is not None:
                return shown
            context.engine().store.ensure_target_free(f"cluster/{name}")
            registry.forget(conn, name)
            active.clear_everywhere(conn, name)
            budgets.forget_cluster(conn, name)
            team_ledger.unmark(conn, name)
            return mutations.alt_reply(ForgottenSchema, {
                "changed": True, "imported": True, "resource_url": None,
                "message": f"forgot imported cluster {name}; AWS untouched"})
        region = readmodel.region_of(name)
        create = readmodel.last_create(name)
        params = {**clusters.delete_params(name, region, create, query["delete_data"]),
                  "force": query["force"]}

        def impact() -> mutations.Impact:
            found = readmodel.locate(name)
            if found.foreign:
                raise ApiError(409, "conflict", f"EKS cluster {name!r} was not created by "
                                                "hypd; import it instead of deleting it")
            return dependents.cluster(found.require(), params)

        return mutations.destroy(clusters.CLUSTER_DELETE, f"cluster/{name}", params, impact,
                                 query)


_KUBECONFIG_REPLY = ("the kubeconfig: JSON by default; the file itself (application/yaml) with "
                     "?format=yaml or Accept: application/yaml")


def _wants_yaml(query: dict[str, Any]) -> bool:
    if query.get("format"):
        return bool(query["format"] == "yaml")
    best = request.accept_mimetypes.best_match(["application/json", KUBECONFIG_YAML])
    return best == KUBECONFIG_YAML


@blp.route("/clusters/<string:name>/kubeconfig")
@access(Role.VIEWER)
@blp.arguments(KubeconfigQuerySchema, location="query")
@blp.response(200, KubeconfigSchema, description=_KUBECONFIG_REPLY)
@blp.alt_response(200, schema={"type": "string"}, content_type=KUBECONFIG_YAML, success=True,
                  description=_KUBECONFIG_REPLY)
@blp.doc(operationId="get_kubeconfig")
def kubeconfig(query, name):
    """A kubeconfig for the cluster (authenticates with `aws eks get-token`): JSON, or the
    file itself with `?format=yaml`."""
    found = readmodel.find(name)
    if found.eks is None:
        raise ApiError(404, "not_found", f"no EKS cluster named {name!r} in {found.region} yet")
    try:
        config = eks.kubeconfig(found.eks, found.region)
    except ValueError as exc:
        raise ApiError(409, "conflict", str(exc)) from exc
    if not _wants_yaml(query):
        return {"kubeconfig": config}
    reply = Response(yaml.safe_dump(config, sort_keys=False), mimetype=KUBECONFIG_YAML)
    reply.headers["Content-Disposition"] = f'attachment; filename="kubeconfig-{name}.yaml"'
    return reply


@blp.route("/clusters/<string:name>/cost")
@access(Role.VIEWER)
@blp.response(200, ClusterCostSchema)
@blp.doc(operationId="get_cluster_cost")
def cluster_cost(name):
    """What the cluster costs while it runs: the hourly rate now (HyperPod's instances per
    group at the count running, the EKS control plane and extended support, its VPC's NAT
    gateways; each priced from the AWS Price List with its source, or unknown with why) and
    a lower bound of what it has cost since it was made, from its nodes' launch times; and
    per team what its admitted work costs (node-hours by dominant share x price), with each
    monthly budget against it."""
    return budgets_readmodel.cluster_cost(readmodel.find(name))


@blp.route("/clusters/<string:name>/stages/<string:stage>/run", methods=["POST"])
@mutations.changing(blp)
@blp.arguments(StagePathSchema, location="path")
@blp.response(202, MutationReplySchema)
@blp.doc(operationId="run_cluster_stage")
def run_stage(path, name, stage):
    """Re-run one stage of a cluster's create on its own (it adopts what exists)."""
    found = readmodel.find(name)
    if found.last_create is None:
        raise ApiError(404, "not_found", f"no cluster named {name!r} created by hypd here")
    params, inputs = lifecycle.stage_rerun(list(found.life), stage)
    return mutations.submit(clusters.CLUSTER_STAGE, f"cluster/{name}", params, inputs=inputs)


@blp.route("/clusters/import", methods=["POST"])
@access(Role.OPERATOR)
@blp.arguments(ClusterImportSchema)
@blp.response(201, ClusterSchema)
@blp.doc(operationId="import_cluster")
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
    return readmodel.summary(name, region, found, imported=True), 201


@blp.route("/active-cluster")
class ActiveCluster(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, ActiveClusterReplySchema)
    @blp.doc(operationId="get_active_cluster")
    def get(self):
        """The calling token's active cluster."""
        return {"name": active.get_active(context.redis_conn(), auth.current().name)}

    @access(Role.OPERATOR)
    @blp.arguments(ActiveClusterSchema)
    @blp.response(200, ActiveClusterReplySchema)
    @blp.doc(operationId="set_active_cluster")
    def put(self, body):
        """Choose the calling token's active cluster (a per-token default)."""
        name = readmodel.find(body["name"]).name
        active.set_active(context.redis_conn(), auth.current().name, name)
        return {"name": name}


@blp.route("/preflight")
@access(Role.VIEWER)
@blp.arguments(PreflightQuerySchema, location="query")
@blp.response(200, PreflightSchema)
@blp.doc(operationId="preflight")
def run_preflight(query):
    """Read-only checks of service quotas and training-plan reservations for a capacity
    request, with what is missing and how to ask for it, and what it adds per hour."""
    region = _region(query)
    return {"region": region, **_preflight(
        {"instance_type": query["instance_type"], "instance_count": query["count"],
         "capacity_type": query["capacity_type"],
         "training_plan_arn": query.get("training_plan_arn")}, region),
        "adds": dry_run.capacity_cost(query["instance_type"], query["count"],
                                      query["capacity_type"], region)}
