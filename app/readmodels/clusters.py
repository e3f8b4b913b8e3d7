"""The cluster read model: the one answer to "is there a cluster of this name?" (`find`),
and what the list and a cluster's page say about each.

`find` is used by every cluster and storage route. It decides by three records: the registry
of imported clusters (Redis), the cluster's *current life* (its create, stage and delete
operations since its newest successful `cluster.delete`, Redis) and the EKS cluster of that
name (AWS). A cluster is found when

1. it was imported (whatever AWS says now: forgetting it is how it goes), or
2. an EKS cluster of that name carries hypd's tags for it, or
3. there is no EKS cluster of that name and its current life holds an operation: a create
   still running, or one that failed before EKS existed, or a delete that has not finished.

An EKS cluster of that name that hypd did not make (and nobody imported) is not hypd's, and
a cluster whose delete succeeded is gone: neither is found, both answer 404 (a delete of the
former 409), though every operation of either stays readable through `/api/v1/operations`.

Stages and a stage re-run's inputs come from the current life only, so a cluster made again
under a deleted one's name never inherits its resource ids. A cluster's region is the
imported record's, else the one its operations act in, else the panel's.

The list reads every page of `ListClusters` (`cloud.eks.list_cluster_names`) in the panel's
region, then the clusters whose current life holds operations but no EKS cluster (rule 3:
from one read of the operations, `lifecycle.lives`), then the imported clusters; each entry
carries its stages and state.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from app import context
from app.errors import ApiError
from app.readmodels import features as features_model
from app.readmodels import leftovers, lifecycle
from cloud import aws, eks, features, hyperpod, kube
from tasks import registry
from vocabulary import kubernetes_versions, patterns

"""EKS's own rule: imported clusters' names follow it, and no other name is asked about."""
HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
HYPERPOD_NODES = "sagemaker.amazonaws.com/compute-type=hyperpod"
HYPERPOD_FIELDS = ("name", "arn", "status", "failure_message", "node_recovery",
                   "node_provisioning_mode", "autoscaling")


@dataclass(frozen=True)
class ClusterRef:
    """What hypd knows of a cluster name; `known` says whether that makes it a cluster."""

    name: str
    region: str
    record: dict[str, Any] | None
    """the registry's record, when the cluster was imported"""
    eks: dict[str, Any] | None
    """`describe_cluster`'s cluster of that name, whoever made it"""
    life: tuple[dict[str, Any], ...]
    """its lifecycle operations since its newest successful delete, newest first"""

    @property
    def imported(self) -> bool:
        return self.record is not None

    @property
    def ours(self) -> bool:
        return self.eks is not None and eks.made_by_hypd_for(self.eks.get("tags"), self.name)

    @property
    def foreign(self) -> bool:
        """An EKS cluster of that name exists that hypd neither made nor imported."""
        return self.eks is not None and not self.ours and not self.imported

    @property
    def known(self) -> bool:
        return self.imported or self.ours or (self.eks is None and bool(self.life))

    @property
    def last_create(self) -> dict[str, Any] | None:
        return lifecycle.last_create(list(self.life))

    @property
    def hyperpod_name(self) -> str:
        return (self.record or {}).get("hyperpod_cluster") or self.name

    def require(self) -> ClusterRef:
        """This, if it is a cluster; 404 otherwise."""
        if self.known:
            return self
        why = (f": the EKS cluster of that name in {self.region} was not created by hypd "
               "(import it to use it here)") if self.foreign else ""
        raise ApiError(404, "not_found", f"no cluster named {self.name!r}{why}")


def _region(record: dict[str, Any] | None, life: list[dict[str, Any]]) -> str:
    if record is not None:
        return record["region"]
    return lifecycle.region(life) or context.settings().region


def region_of(name: str) -> str:
    """Where the cluster lives, without asking AWS: an imported cluster's recorded region,
    else the region its operations act in, else the panel's."""
    return _region(registry.get(context.redis_conn(), name), lifecycle.current_life(name))


def locate(name: str) -> ClusterRef:
    """Everything `find` decides by; never refuses (see `ClusterRef.known`)."""
    if not patterns.fits(patterns.EKS_CLUSTER_NAME, name):
        return ClusterRef(name, context.settings().region, None, None, ())
    record = registry.get(context.redis_conn(), name)
    life = lifecycle.current_life(name)
    region = _region(record, life)
    return ClusterRef(name, region, record, eks.describe(aws.client("eks", region=region), name),
                      tuple(life))


def find(name: str) -> ClusterRef:
    """The cluster of that name (the rules are the module's docstring), or 404."""
    return locate(name).require()


def last_create(name: str) -> dict[str, Any] | None:
    """The create of the cluster's current life, from Redis only."""
    return lifecycle.last_create(lifecycle.current_life(name))


# the list ------------------------------------------------------------------------------------

def summary(name: str, region: str, found: dict[str, Any] | None,
            imported: bool, life: list[dict[str, Any]] | tuple = ()) -> dict[str, Any]:
    """A cluster as the list shows it (some of ClusterSchema): EKS as AWS says now, each
    stage and the whole cluster's state as its operations say (Redis only)."""
    stages, now = progress(list(life), imported)
    return {"name": name, "region": region, "imported": imported,
            "eks": {"status": found.get("status"), "version": found.get("version"),
                    "arn": found.get("arn")} if found else None,
            "stages": stages, "state": now}


def progress(life: list[dict[str, Any]], imported: bool
             ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(stages, state) of a cluster from its current life."""
    if imported:
        return [], {"status": lifecycle.IMPORTED, "operation_id": None, "stage": None,
                    "error": None, "summary": "imported read-only: hypd made none of it"}
    stages = lifecycle.stage_view(life)
    return stages, lifecycle.state(life, stages)


def listing() -> list[dict[str, Any]]:
    """The clusters hypd made in the panel's region (by their EKS tags), the clusters whose
    current life has no EKS cluster (a create that stopped before EKS existed, a delete that
    took it already), then imported ones."""
    region = context.settings().region
    conn = context.redis_conn()
    lives = lifecycle.lives()
    items = [summary(found["name"], region, found, False, lives.get(found["name"], ()))
             for found in eks.managed_clusters(aws.client("eks", region=region))]
    listed = {item["name"] for item in items}
    for name, life in sorted(lives.items()):
        if name in listed or registry.get(conn, name) is not None:
            continue
        where = lifecycle.region(life) or region
        if eks.describe(aws.client("eks", region=where), name) is None:  # `find`'s rule 3
            items.append(summary(name, where, None, False, life))
    for record in registry.imported(conn):
        found = eks.describe(aws.client("eks", region=record["region"]), record["name"])
        items.append(summary(record["name"], record["region"], found, imported=True))
    return items


# one cluster ---------------------------------------------------------------------------------

def detail(ref: ClusterRef) -> dict[str, Any]:
    """A found cluster as its page shows it (ClusterSchema): EKS and HyperPod as AWS says
    now, the stages as its operations say, nodes by health as its Kubernetes says."""
    found = ref.eks
    described = hyperpod.describe(aws.client("sagemaker", region=ref.region), ref.hyperpod_name)
    life = list(ref.life)
    stages, now = progress(life, ref.imported)
    return {
        "name": ref.name, "region": ref.region, "imported": ref.imported,
        "eks": {"status": found.get("status"), "version": found.get("version"),
                "support": kubernetes_versions.support_of(found.get("version")),
                "endpoint": found.get("endpoint"), "arn": found.get("arn")} if found else None,
        "hyperpod": {k: described[k] for k in HYPERPOD_FIELDS} if described else None,
        "stages": stages,
        "state": now,
        "left_in_aws": leftovers.read(ref.name, ref.region, life, found, described)
        if now["status"] in lifecycle.UNFINISHED else None,
        "next_actions": lifecycle.next_actions(ref.name, life, now),
        "instance_groups": described["instance_groups"] if described else [],
        "nodes": {**(described["node_counts"] if described else {"total": 0, "by_status": {}}),
                  "by_health": node_health(ref.name, ref.region, found)},
        "features": features_summary(ref),
        "events": described["events"] if described else [],
    }


def features_summary(ref: ClusterRef) -> dict[str, Any] | None:
    """Each managed feature's state as it is now (None when AWS or the cluster cannot be
    read this moment: the page stays up; the features route reports the error itself)."""
    try:
        return features.summary(features_model.read(ref))
    except (ClientError, BotoCoreError, kube.KubeError, OSError):
        return None


def node_health(name: str, region: str, found: dict[str, Any] | None) -> dict[str, int] | None:
    """HyperPod nodes by the health label its agents keep on each Kubernetes Node (None
    when the cluster's Kubernetes API cannot be read now)."""
    if not found or found.get("status") != eks.ACTIVE:
        return None
    try:
        nodes = kube.list_objects(eks.api_client(name, region), "v1", "Node",
                                  label_selector=HYPERPOD_NODES)
    except (kube.KubeError, OSError, ValueError):
        return None
    counts = Counter((n["metadata"].get("labels") or {}).get(HEALTH_LABEL, "Unknown")
                     for n in nodes)
    return dict(sorted(counts.items()))
