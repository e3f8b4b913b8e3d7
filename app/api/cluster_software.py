"""Cluster software: update the HyperPod software of a cluster's nodes, and upgrade its EKS
Kubernetes version. Each is an operation on `cluster/<c>` that waits for AWS to finish."""

from __future__ import annotations

from flask_smorest import Blueprint

from app import audit, mutations
from app.errors import ApiError
from app.readmodels import clusters as readmodel
from app.readmodels import instance_groups as groups_model
from cloud.eks import next_minor
from cloud.errors import Invalid
from schemas.cluster_software import KubernetesUpgradeSchema, SoftwareUpdateSchema
from schemas.common import MutationReplySchema, NoChangeSchema
from tasks.cluster_software import KUBERNETES_UPGRADE, SOFTWARE_UPDATE

blp = Blueprint("cluster_software", __name__, url_prefix="/api/v1/clusters",
                description="Cluster software: HyperPod node software, Kubernetes version")
audit.declare_target(blp, "cluster/<name>")


@blp.route("/<string:name>/software-update", methods=["POST"])
@mutations.changing(blp)
@blp.arguments(SoftwareUpdateSchema)
@blp.response(202, MutationReplySchema)
@blp.doc(operationId="update_cluster_software")
def software_update(body, name):
    """Update the HyperPod software (AMI, drivers, agents) of the cluster's nodes, group by
    group and node by node as AWS rolls it out; running pods on a node being updated are
    disrupted. The operation follows the update until AWS has finished."""
    params = {**body, "name": name}

    def precheck() -> None:
        found = readmodel.find(name)
        if found.imported:
            raise ApiError(409, "conflict", f"cluster {name!r} was imported: hypd reads it "
                                            "but does not update its software")
        groups = groups_model.read(found)
        unknown = [g for g in body.get("instance_groups") or () if groups.detail(g) is None]
        if unknown:
            raise Invalid(f"cluster {name!r} has no instance group {', '.join(unknown)}",
                          field="instance_groups")
        params["region"] = found.region

    return mutations.submit(SOFTWARE_UPDATE, f"cluster/{name}", params, precheck)


@blp.route("/<string:name>/kubernetes-version", methods=["POST"])
@mutations.changing(blp, own_200=(NoChangeSchema, "the cluster runs that version"))
@blp.arguments(KubernetesUpgradeSchema)
@blp.response(202, MutationReplySchema)
@blp.doc(operationId="upgrade_kubernetes")
def kubernetes_upgrade(body, name):
    """Upgrade the cluster's EKS Kubernetes version one minor version (EKS allows no
    bigger step), then move its EKS add-ons to the new version's defaults. The control
    plane stays available; nodes keep their version until their software is updated."""
    replayed = mutations.replayed()
    if replayed is not None:
        return replayed
    found = readmodel.find(name)
    if found.imported:
        raise ApiError(409, "conflict", f"cluster {name!r} was imported: hypd reads it but "
                                        "does not upgrade it")
    current = (found.eks or {}).get("version")
    if not current:
        raise ApiError(409, "conflict", f"cluster {name!r} has no EKS cluster yet")
    wanted = body["version"]
    if wanted == current:
        return mutations.no_change(f"/api/v1/clusters/{name}",
                                   f"cluster {name!r} runs Kubernetes {current} already")
    if next_minor(current) != wanted:
        raise Invalid(f"EKS upgrades one minor version at a time: cluster {name!r} runs "
                      f"{current}, so the next version is {next_minor(current)}",
                      field="version")
    return mutations.submit(KUBERNETES_UPGRADE, f"cluster/{name}",
                            {"name": name, "region": found.region, "version": wanted,
                             "from_version": current})
