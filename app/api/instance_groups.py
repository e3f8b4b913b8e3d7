"""Instance groups of a cluster: list and read (from AWS), add, change (explicit diff),
delete. Every change is an operation on `cluster/<c>/group/<g>` (tasks/instance_groups.py)."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from app import audit, choices, context, mutations
from app.errors import ApiError
from app.permissions import access
from app.readmodels import clusters as readmodel
from app.readmodels import dependents
from app.readmodels import instance_groups as groups_model
from app.readmodels.clusters import ClusterRef
from cloud import aws, capacity, preflight
from cloud.errors import Invalid, Refusal
from schemas.common import MutationReplySchema, NoChangeSchema
from schemas.instance_groups import (
    IMMUTABLE,
    InstanceGroupCreateSchema,
    InstanceGroupDeleteQuerySchema,
    InstanceGroupListSchema,
    InstanceGroupPatchSchema,
    InstanceGroupSchema,
)
from tasks.instance_groups import (
    GROUP_CREATE,
    GROUP_DELETE,
    GROUP_UPDATE,
    changed_spec,
    group_spec,
)
from vocabulary.capacity import ON_DEMAND
from vocabulary.roles import Role

blp = Blueprint("instance_groups", __name__, url_prefix="/api/v1/clusters",
                description="Instance groups: capacity added to, changed in and removed from "
                            "a cluster")
audit.declare_target(blp, "cluster/<cluster>/group/<name>")


def _cluster(name: str) -> ClusterRef:
    found = readmodel.find(name)
    if found.imported:
        raise ApiError(409, "conflict", f"cluster {name!r} was imported: hypd reads it but "
                                        "does not change its capacity")
    return found


def _target(cluster: str, group: str) -> str:
    return f"cluster/{cluster}/group/{group}"


# -- adding a group ------------------------------------------------------------------------------

def _placement(cluster: ClusterRef, body: dict[str, Any], group_context: dict[str, Any],
               plan_zones: list[str]) -> str:
    """The group's zone: an existing subnet's, else the one asked for, else the training
    plan's, else the cluster's. A training plan's zone wins over every other choice, and a
    request naming another is refused."""
    if body.get("subnet_id"):
        zone = groups_model.subnet_zone(cluster, body["subnet_id"])
        field = "subnet_id"
    else:
        zone = body.get("availability_zone") or (plan_zones[0] if plan_zones else None) or \
            group_context["default_zone"]
        field = "availability_zone"
        if zone is None:
            raise Invalid("give the group's availability_zone", field="availability_zone")
        choices.check_zone(cluster.region, zone)
    if plan_zones and zone not in plan_zones:
        raise Invalid(f"training plan {body['training_plan_arn']} reserves capacity in "
                      f"{', '.join(plan_zones)}, not in {zone}: place the group there",
                      field=field)
    return zone


def _preflight(cluster: ClusterRef, body: dict[str, Any]) -> dict[str, Any]:
    checks = preflight.check(aws.client("service-quotas", region=cluster.region),
                             aws.client("sagemaker", region=cluster.region), cluster.region,
                             body["instance_type"], body["instance_count"],
                             body.get("capacity_type") or ON_DEMAND,
                             body.get("training_plan_arn"))
    if not checks["ok"]:
        raise ApiError(412, "precondition_failed",
                       "preflight: " + preflight.summary(preflight.failed(checks)),
                       {"preflight": checks})
    return checks


def _plan_zones(checks: dict[str, Any]) -> list[str]:
    return next((c.get("availability_zones") or [] for c in checks["checks"]
                 if c.get("name") == "training_plan"), [])


# -- routes --------------------------------------------------------------------------------------

@blp.route("/<string:cluster>/instance-groups")
class InstanceGroups(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, InstanceGroupListSchema)
    @blp.doc(operationId="list_instance_groups")
    def get(self, cluster):
        """A cluster's instance groups, read from AWS: type, counts, capacity type, EFA mode,
        zone, labels and taints, nodes by status, and the operation changing each."""
        return {"cluster": cluster, "items": groups_model.read(readmodel.find(cluster)).views}

    @mutations.changing(blp)
    @blp.arguments(InstanceGroupCreateSchema)
    @blp.response(202, MutationReplySchema)
    @blp.alt_response(412, description="a quota or the training plan does not cover it")
    @blp.doc(operationId="add_instance_group")
    def post(self, body, cluster):
        """Add an instance group: type and count, capacity type (on-demand, spot or a
        training plan), EFA mode and subnet placement fixed now for its life; labels,
        taints, threads per core, an extra volume, deep health checks."""
        name = body["name"]
        params: dict[str, Any] = {**body, "cluster": cluster}

        def precheck() -> None:
            found = _cluster(cluster)
            groups = groups_model.read(found)
            if groups.detail(name) is not None:
                raise ApiError(409, "conflict", f"cluster {cluster!r} already has an instance "
                                                f"group named {name!r}", {"name": name})
            taken = groups_model.group_context(found, groups)
            checks = _preflight(found, body)
            zone = _placement(found, body, taken, _plan_zones(checks))
            chosen = choices.offered_type(found.region, zone, body["instance_type"])
            params.update(
                region=found.region, zone=zone,
                efa_mode=choices.efa_mode(body.get("efa_mode"), chosen),
                on_create=body.get("on_create") or taken["default_on_create"],
                vpc_id=taken["vpc_id"], route_table_id=taken["route_table_id"],
                execution_role_arn=taken["execution_role_arn"],
                lifecycle_s3_uri=taken["lifecycle_s3_uri"],
                security_group_ids=taken["security_group_ids"])
            # the one capacity function refuses now what AWS would refuse later
            group_spec(params, params.get("subnet_id") or "subnet-00000000", chosen)

        return mutations.submit(GROUP_CREATE, _target(cluster, name), params, precheck)


@blp.route("/<string:cluster>/instance-groups/<string:name>")
class InstanceGroup(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, InstanceGroupSchema)
    @blp.doc(operationId="get_instance_group")
    def get(self, cluster, name):
        """One instance group, read from AWS."""
        return groups_model.read(readmodel.find(cluster)).view(name)

    @mutations.changing(blp, own_200=(NoChangeSchema, "already as asked: nothing sent"))
    @blp.arguments(InstanceGroupPatchSchema)
    @blp.response(202, MutationReplySchema)
    @blp.doc(operationId="update_instance_group")
    def patch(self, body, cluster, name):
        """Change an instance group: only the fields present are acted on. Count, threads
        per core, labels, taints, deep health checks and the lifecycle script may change;
        the instance type, capacity type, EFA mode and placement are fixed for the group's
        life (422 immutable_field). Already as asked: 200, nothing sent to AWS."""
        replayed = mutations.replayed()
        if replayed is not None:
            return replayed
        context.engine().store.ensure_target_free(_target(cluster, name))
        found = _cluster(cluster)
        groups = groups_model.read(found)
        current = groups.detail(name)
        view = groups.view(name)
        if current is None:
            raise ApiError(409, "conflict", f"instance group {name!r} is still being added")
        for field in IMMUTABLE:
            if field in body and body[field] != _actual(view, field):
                raise Refusal(f"{field} of instance group {name!r} is fixed for the group's "
                              f"life ({_actual(view, field)!r}); add a new instance group "
                              "instead", "immutable_field", field=field,
                              details={"field": field})
        changes = {k: v for k, v in body.items() if k not in IMMUTABLE}
        if changed_spec(current, changes) == capacity.spec_from_details(current):
            return mutations.no_change(f"/api/v1/clusters/{cluster}/instance-groups/{name}",
                                       f"instance group {name!r} is already as asked")
        params = {"cluster": cluster, "region": found.region, "name": name,
                  "changes": changes, **({"instance_count": changes["instance_count"]}
                                         if "instance_count" in changes else {})}
        return mutations.submit(GROUP_UPDATE, _target(cluster, name), params)

    @mutations.destructive(blp, InstanceGroupDeleteQuerySchema,
                           conflict="the cluster's last group (conflict)")
    @blp.doc(operationId="delete_instance_group")
    def delete(self, query, cluster, name):
        """Delete an instance group and its own compute subnet. Refused while it is the
        cluster's last group, and (409 in_use, naming them) while pods that would not come
        back elsewhere run on its nodes — bare pods, a training job's pods, pods pinned to
        the group — unless force=true."""
        params = {"cluster": cluster, "name": name}

        def impact() -> mutations.Impact:
            found = _cluster(cluster)
            groups = groups_model.read(found)
            groups.view(name)
            live = [g for g in groups.details if g.get("Status") != "Deleting"]
            if [g.get("InstanceGroupName") for g in live] == [name]:
                raise ApiError(409, "conflict", f"{name!r} is the last instance group of "
                                                f"cluster {cluster!r}; delete the cluster "
                                                "instead")
            params["region"] = found.region
            return dependents.group(found, name, groups.detail(name) or {})

        return mutations.destroy(GROUP_DELETE, _target(cluster, name), params, impact, query)


def _actual(view: dict[str, Any], field: str) -> Any:
    if field == "subnet_id":
        return (view.get("subnet_ids") or [None])[0]
    return view.get(field)
