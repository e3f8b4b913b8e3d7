"""What each destructive request would remove and what depends on its target (an `Impact`),
read now from AWS, the cluster's Kubernetes and the panel's records.

The finders are cloud/dependents.py's (the delete operations' first steps use the same
ones); `app.mutations.destroy` turns an Impact into the dry run's reply or the 409 in_use
refusal. A route builds its Impact after its own checks (404, a busy cluster), so a dry run
answers what the request itself would.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from app import context
from app.errors import ApiError
from app.mutations import Impact
from app.readmodels.clusters import ClusterRef
from app.readmodels.kubeapi import api_for, talking_to
from cloud import aws, dependents, eks, inference, jobs, models, networks
from cloud import nodes as cloud_nodes
from tasks import clusters as cluster_kind
from tasks import networks as network_kind
from tasks.engine.kinds import OperationKind

GUARDS = ("in_use", "network_in_use")
"""The delete operations' own checks: they remove nothing."""


def steps_of(kind: OperationKind, params: dict[str, Any]) -> list[str]:
    """What an operation of `kind` with these params would do, step by step."""
    return [s.title for s in kind.steps_for(params) if s.name not in GUARDS]


def network(region: str, name: str) -> Impact:
    """A network's resources, and what runs in it; 404 when there is no such network."""
    ec2 = aws.client("ec2", region=region)
    view = networks.get_network(ec2, name)
    if view is None:
        raise ApiError(404, "not_found", f"no network named {name!r} in {region}")
    found = network_kind.in_use(ec2, aws.client("eks", region=region),
                                aws.client("sagemaker", region=region),
                                context.redis_conn(), view)
    removes = [f"VPC {view['vpc_id']} ({view['cidr']})"]
    removes += [f"{s['role']} subnet {s['id']} ({s['cidr']}, {s['availability_zone']})"
                for s in view["subnets"]]
    for key, what in (("nat_gateway_id", "NAT gateway and its Elastic IP"),
                      ("internet_gateway_id", "internet gateway"),
                      ("security_group_id", "security group"),
                      ("s3_endpoint_id", "S3 gateway endpoint")):
        if view.get(key):
            removes.append(f"{what} {view[key]}")
    return Impact(f"network {name}", [*removes, "its route tables"], found)


def network_users(region: str, views: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each network (as `networks.get_network` answers it) with `used_by`: the clusters its
    delete would refuse for (the same finder), without the network interfaces. The region's
    clusters are described once, whatever the number of networks."""
    ec2 = aws.client("ec2", region=region)
    eks_client = aws.client("eks", region=region)
    sm = aws.client("sagemaker", region=region)
    clusters = dependents.region_clusters(eks_client, sm) if views else None
    for view in views:
        found = network_kind.in_use(ec2, eks_client, sm, context.redis_conn(), view,
                                    interfaces=False, clusters=clusters)
        view["used_by"] = [{"kind": d.kind, "name": d.name, "why": d.why} for d in found]
    return views


def _api(ref: ClusterRef) -> Any | None:
    """The cluster's Kubernetes API when its EKS cluster is ACTIVE, else None."""
    if (ref.eks or {}).get("status") != eks.ACTIVE:
        return None
    with talking_to(ref):
        return eks.api_client(ref.name, ref.region)


def cluster(ref: ClusterRef, params: dict[str, Any]) -> Impact:
    """A cluster's delete: its steps, and what runs on it (and in the network it would
    remove)."""
    api = _api(ref)
    with talking_to(ref):
        found = cluster_kind.delete_dependents(
            aws.client("ec2", region=ref.region), aws.client("eks", region=ref.region),
            aws.client("sagemaker", region=ref.region), context.redis_conn(), api, ref.name,
            bool(params.get("network")))
    removes = steps_of(cluster_kind.CLUSTER_DELETE, params)
    if not params.get("delete_data"):
        removes.append("(the shared bucket is kept: delete_data is false)")
    return Impact(f"cluster {ref.name}", removes, found)


def group(ref: ClusterRef, name: str, details: Mapping[str, Any]) -> Impact:
    """An instance group's delete: its nodes, and the pods on them that would not come back
    elsewhere."""
    api = _api(ref)
    found: list[dependents.Dependent] = []
    if api is not None:
        with talking_to(ref):
            found = dependents.pods_on_nodes(api, dependents.group_nodes(api, [name]), name)
    count = details.get("CurrentCount") or 0
    return Impact(f"instance group {name} of cluster {ref.name}",
                  [f"instance group {name}: {count} {details.get('InstanceType')} node(s)",
                   "its own compute subnet (one it was given is kept)"], found)


def nodes(ref: ClusterRef, action: str, node_ids: Iterable[str],
          now: Mapping[str, Mapping[str, Any]]) -> Impact:
    """A node replace or delete: the nodes, and the pods on them that would not come back
    elsewhere."""
    ids = list(node_ids)
    api = _api(ref)
    found: list[dependents.Dependent] = []
    if api is not None:
        with talking_to(ref):
            by_instance = cloud_nodes.kube_nodes(api)
            names = [by_instance[i]["node_name"] for i in ids if i in by_instance]
            found = dependents.pods_on_nodes(api, names)
    verb = {"replace": "replaced", "delete": "deleted"}[action]
    return Impact(f"{action} of {len(ids)} node(s) of cluster {ref.name}",
                  [f"node {i} ({now[i].get('instance_group')}) {verb}: its instance and local "
                   "disks" for i in ids], found)


def storage_item(ref: ClusterRef, api: Any, item: Mapping[str, Any]) -> Impact:
    """A storage item's removal (as the storage route reads it): its claim, its volume and
    what backs it, and the live workloads mounting it (no force: they must stop first)."""
    namespace = item["namespace"] or "default"
    removes = [f"claim {namespace}/{item['claim']}" if item["claim"] else None,
               f"volume {item['volume']}" if item["volume"] else None]
    backing = (f"bucket {item['s3']['bucket']}" if item["s3"] else
               f"FSx file system {(item['fsx'] or {}).get('file_system_id')}")
    removes.append(backing + (" and everything in it" if item["deletes_data"] else
                              " (kept: hypd did not make it for this item)"))
    found: list[dependents.Dependent] = []
    if item["claim"]:
        with talking_to(ref):
            found = dependents.claim_users(api, item["claim"], namespace)
    return Impact(f"storage {item['name']} of cluster {ref.name}", [r for r in removes if r],
                  found)


def feature(ref: ClusterRef, view: Mapping[str, Any], name: str,
            resolved: Mapping[str, Any]) -> Impact:
    """A feature change: turned off, its own parts go and its users break; any other change
    removes nothing."""
    what = f"{'turning off' if not resolved['enabled'] else 'changing'} {name} on cluster " \
           f"{ref.name}"
    if resolved["enabled"]:
        return Impact(what, [], [])
    parts = view["features"][name]["parts"]
    removes = [f"{p['kind'].replace('_', ' ')} {p['name']}" for p in parts
               if p["present"] and not p["shared"]]
    groups = [g["name"] for g in view["features"][name].get("groups") or () if g.get("autoscaled")]
    api = api_for(ref)
    with talking_to(ref):
        found = dependents.feature_users(api, name, groups)
    return Impact(what, removes, found)


def mlflow(ref: ClusterRef, record: Mapping[str, Any] | None) -> Impact:
    """A detach: what it removes, and the jobs logging to the tracking server."""
    removes = ["the cluster's record of the tracking server (new jobs stop logging)",
               "the jobs' role, service accounts and Pod Identity associations"]
    if record is None:
        return Impact(f"MLflow of cluster {ref.name}",
                      [*removes, "what a failed attach left (hypd's server or role)"], [])
    server = record["tracking_server_name"]
    removes.append(f"tracking server {server} and its role" if record["made_by_hypd"]
                   else f"(tracking server {server} is kept: hypd did not make it)")
    with talking_to(ref):
        found = dependents.tracking_users(api_for(ref), record["tracking_server_arn"])
    return Impact(f"MLflow tracking server {server} of cluster {ref.name}", removes, found)


def endpoint(ref: ClusterRef, ep: inference.Endpoint) -> Impact:
    """An endpoint's delete: its objects, and a pool's models served now."""
    api = api_for(ref)
    with talking_to(ref):
        owned = inference.owned(api, ep.namespace, ep.name)
        found = dependents.pool_assignments(api, ep) if ep.service == inference.POOL else []
    removes = [f"{o['kind']} {o['metadata'].get('namespace') or ep.namespace}/"
               f"{o['metadata']['name']}" for o in owned]
    return Impact(f"endpoint {ep.name} of cluster {ref.name}", removes, found)


def job(ref: ClusterRef, api: Any, found: Mapping[str, Any]) -> Impact:
    """A job's delete: the job and its pods, which are live work until it finishes."""
    md = found["metadata"]
    pods = jobs.pods(api, found)
    removes = [f"{found['kind']} {md.get('namespace')}/{md['name']}"]
    removes += [f"pod {p['metadata'].get('namespace')}/{p['metadata']['name']}" for p in pods]
    return Impact(f"training job {md['name']} of cluster {ref.name}", removes,
                  dependents.job_pods(api, found))


def model(ref: ClusterRef, bucket: str, name: str) -> Impact:
    """A model's removal: its files in the bucket, and the endpoints serving it; 404 when
    there is nothing under models/<name>/."""
    counts = models.progress(aws.client("s3", region=ref.region), bucket, name)
    if not counts["files"]:
        raise ApiError(404, "not_found", f"no model {name!r} in s3://{bucket}/models/")
    api = api_for(ref)
    with talking_to(ref):
        found = dependents.model_users(api, name)
    return Impact(f"model {name} of cluster {ref.name}",
                  [f"s3://{bucket}/{models.MODEL_PREFIX}{name}/ ({counts['files']} files, "
                   f"{counts['bytes']} bytes)"], found)

