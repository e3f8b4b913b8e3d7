"""Managed features of a cluster: read as they actually are, changed by explicit diff. A
change is one operation on `cluster/<c>/feature/<f>` (tasks/features.py)."""

from __future__ import annotations

from flask.views import MethodView
from flask_smorest import Blueprint

from app import audit, context, mutations
from app.errors import ApiError
from app.permissions import access
from app.readmodels import clusters as readmodel
from app.readmodels import dependents
from app.readmodels import features as features_model
from cloud import eks
from schemas.common import NoChangeSchema
from schemas.features import FeaturesPatchSchema, FeaturesSchema
from tasks.features import FEATURE_UPDATE, target
from vocabulary.roles import Role

blp = Blueprint("features", __name__, url_prefix="/api/v1/clusters",
                description="Managed features: training and inference operators, tiered "
                            "checkpointing, autoscaling, observability, task governance, "
                            "spaces")
audit.declare_target(blp, "cluster/<cluster>")

NEEDS_HYPERPOD = ("tiered_checkpointing", "autoscaling")


def _url(cluster: str) -> str:
    return f"/api/v1/clusters/{cluster}/features"


@blp.route("/<string:cluster>/features")
class Features(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, FeaturesSchema)
    @blp.doc(operationId="get_features")
    def get(self, cluster):
        """Each managed feature as it actually is — add-ons and their status, IAM roles and
        their trust, service accounts, Pod Identity associations, HyperPod's
        TieredStorageConfig and AutoScaling, each group's autoscaling bounds — with what it
        needs from other features, read from AWS and the cluster now."""
        return features_model.read(readmodel.find(cluster))

    @blp.arguments(FeaturesPatchSchema)
    @mutations.destructive(blp, own_200=(
        NoChangeSchema, "already as asked: nothing sent to AWS or Kubernetes"))
    @blp.doc(operationId="update_features")
    def patch(self, body, query, cluster):
        """Turn managed features on or off, or change their options: only the fields
        present are acted on, each compared with the actual state. Already as asked: 200
        `changed: false`, nothing sent. Otherwise one operation on the one feature that
        differs: what it needs is ensured first, and turning it off keeps what another
        enabled feature still needs. Turning one off is refused (409 in_use, naming them)
        while work uses it — training_operator: HyperPodPyTorchJobs not finished;
        inference_operator: managed endpoints; tiered_checkpointing: pods writing checkpoints
        as its service account; autoscaling: pods on autoscaled groups' nodes that would not
        come back; task_governance: pods admitted through a Kueue queue; spaces: every
        Workspace (a space) on the cluster — unless force=true."""
        if not query["dry_run"]:
            replayed = mutations.replayed()
            if replayed is not None:
                return replayed
            store = context.engine().store
            for name in body:
                store.ensure_target_free(target(cluster, name))
        found = readmodel.find(cluster)
        if found.imported:
            raise ApiError(409, "conflict", f"cluster {cluster!r} was imported: hypd reads its "
                                            "features but does not change them")
        if not found.eks or found.eks.get("status") != eks.ACTIVE:
            raise ApiError(409, "conflict", f"cluster {cluster!r} has no ACTIVE EKS cluster "
                                            "yet; features can change once it is")
        view = features_model.read(found)
        if not view["kubernetes_readable"]:
            raise ApiError(502, "upstream_error", f"the Kubernetes API of cluster {cluster!r} "
                                                  "cannot be read now; try again shortly")
        asked = features_model.change(view, body)
        if asked is None:
            if query["dry_run"]:
                return mutations.plan(mutations.Impact(
                    f"no change to the features of cluster {cluster}", []), query["force"])
            return mutations.no_change(_url(cluster),
                                       "the cluster's features are already as asked")
        name, resolved = asked
        _check(found, view, name, resolved)
        params = {"cluster": cluster, "region": found.region,
                  "hyperpod_name": found.hyperpod_name, "feature": name, **resolved}
        return mutations.destroy(FEATURE_UPDATE, target(cluster, name), params,
                                 lambda: dependents.feature(found, view, name, resolved), query)


def _check(found: readmodel.ClusterRef, view: dict, name: str, resolved: dict) -> None:
    """What the operation could not do, refused before it is recorded."""
    parts = view["features"][name]["parts"]
    if name in NEEDS_HYPERPOD and not view["hyperpod_cluster"]:
        raise ApiError(409, "conflict", f"{name} is a HyperPod setting and cluster "
                                        f"{found.name!r} has no HyperPod cluster yet")
    if not resolved["enabled"]:
        foreign = [p["name"] for p in parts if p["kind"] == "addon" and p["hypds"] is False]
        if foreign:
            raise ApiError(409, "conflict", f"add-on {', '.join(foreign)} of cluster "
                                            f"{found.name!r} was not installed by hypd, so "
                                            "hypd does not remove it; remove it with EKS")
