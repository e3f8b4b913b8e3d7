"""The campaign's chains: every operation kind of tasks/kinds.py is in at least one, and
each chain leaves the world as it found it, so that its rounds are alike.

Chains on a module's shared cluster name it `cluster` (Campaign.context); the others make
their own. Where an operation's request names something the cluster has only now (a node's
id, a pool's worker), its request reads it through the REST API first.
"""

from __future__ import annotations

import json
from typing import Any

from tests.app.featurekit import toggle
from tests.app.test_clusters_api import TYPE as GPU_TYPE  # one GPU a node
from tests.app.test_clusters_api import ZONE
from tests.faults.campaign import Act, Chain, Request
from tests.stack import Stack
from vocabulary import kubernetes_versions

SHARED_TYPE = "ml.g5.12xlarge"  # four GPUs a node: the shared cluster's endpoints fit
POOL_LABEL = "hypd.io/model"


def _fill(value: Any, n: dict[str, str]) -> Any:
    """`value` with the round's names put in its strings' `{role}` places."""
    if isinstance(value, str):
        return value.format(**n)
    if isinstance(value, dict):
        return {k: _fill(v, n) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, n) for v in value]
    return value


def call(method: str, path: str, body: dict[str, Any] | None = None, **params: str):
    """A request of the round's names."""
    return lambda stack, n: Request(method, path.format(**n), _fill(body, n), params or None)


def post(path: str, body: dict[str, Any] | None = None, **params: str):
    return call("POST", path, body, **params)


def patch(path: str, body: dict[str, Any]):
    return call("PATCH", path, body)


def delete(path: str, **params: str):
    return call("DELETE", path, **params)


def put(path: str, body: dict[str, Any]):
    return call("PUT", path, body)


def _get(stack: Stack, path: str, **params: str) -> dict[str, Any]:
    with stack.client("viewer") as c:
        reply = c.get(path, params=params)
    assert reply.status_code == 200, reply.text
    return reply.json()


# -- networks and whole clusters (each round makes its own) ----------------------------------

NETWORK = Chain(
    "network",
    acts=(
        Act("network.create", post("/api/v1/networks", {"name": "{network}"})),
        Act("network.delete", delete("/api/v1/networks/{network}")),
    ),
    names=lambda token: {"network": f"fn-{token}"},
)


def _new_cluster(stack: Stack, n: dict[str, str]) -> Request:
    """With FSx, one Kubernetes version behind the newest (the chain upgrades it)."""
    return Request("POST", "/api/v1/clusters", {
        "name": n["cluster"], "availability_zone": ZONE, "instance_type": GPU_TYPE,
        "instance_count": 2, "kubernetes_version": kubernetes_versions.offered()[-2],
        "fsx": {"storage_capacity_gib": 1200}})


# A cluster's whole life: made, a stage re-run, Kubernetes upgraded, the nodes' software
# updated, a RayJob submitted while KubeRay is not there yet (each round's fresh cluster has
# none: job.create's kuberay step), then deleted with its data.
CLUSTER = Chain(
    "cluster",
    acts=(
        Act("cluster.create", _new_cluster),
        Act("cluster.stage", post("/api/v1/clusters/{cluster}/stages/hyperpod/run")),
        Act("cluster.kubernetes_upgrade", post("/api/v1/clusters/{cluster}/kubernetes-version",
                                               {"version": kubernetes_versions.offered()[-1]})),
        Act("cluster.software_update", post("/api/v1/clusters/{cluster}/software-update", {})),
        Act("job.create", post("/api/v1/clusters/{cluster}/jobs", {
            "name": "{job}", "recipe": "verl", "image": "verlai/verl:latest", "nodes": 1,
            "gpus_per_node": 1, "config": "/s3/rl/ppo.yaml"})),
        Act("cluster.delete", delete("/api/v1/clusters/{cluster}", delete_data="true")),
    ),
    names=lambda token: {"cluster": f"fc-{token}", "job": f"rl-{token}"},
)

# -- on a shared cluster ------------------------------------------------------------------------

STORAGE = Chain(
    "storage",
    acts=(
        Act("storage.create", post("/api/v1/clusters/{cluster}/storage",
                                   {"name": "{s3}", "kind": "s3"})),
        Act("storage.delete", delete("/api/v1/clusters/{cluster}/storage/{s3}")),
        Act("storage.create", post("/api/v1/clusters/{cluster}/storage", {
            "name": "{fsx}", "kind": "fsx", "fsx": {"storage_capacity_gib": 1200}})),
        Act("storage.delete", delete("/api/v1/clusters/{cluster}/storage/{fsx}")),
    ),
    names=lambda token: {"s3": f"b-{token}", "fsx": f"l-{token}"},
    warmup=True,  # the first FSx volume installs the FSx CSI driver, which stays
)


def _node(index: int):
    """A node action on the round's group's `index`-th node (by id)."""

    def request(stack: Stack, n: dict[str, str], action: str) -> Request:
        items = _get(stack, f"/api/v1/clusters/{n['cluster']}/nodes",
                     instance_group=n["group"], limit="100")["items"]
        ids = sorted(i["id"] for i in items)
        return Request("POST", f"/api/v1/clusters/{n['cluster']}/nodes/{action}",
                       {"node_ids": [ids[index]]})

    return request


GROUP = Chain(
    "group",
    acts=(
        Act("instance_group.create", post("/api/v1/clusters/{cluster}/instance-groups", {
            "name": "{group}", "instance_type": GPU_TYPE, "instance_count": 3})),
        Act("nodes.reboot", lambda stack, n: _node(0)(stack, n, "reboot")),
        Act("nodes.replace", lambda stack, n: _node(1)(stack, n, "replace")),
        Act("nodes.delete", lambda stack, n: _node(2)(stack, n, "delete")),
        Act("instance_group.update", patch("/api/v1/clusters/{cluster}/instance-groups/{group}",
                                           {"instance_count": 3})),
        Act("instance_group.delete", delete("/api/v1/clusters/{cluster}/instance-groups/{group}",
                                            force="true")),
    ),
    names=lambda token: {"group": f"g-{token}"},
)

FEATURES = "/api/v1/clusters/{cluster}/features"

# Each of feature.update's steps: the training operator on (requirements, identity, add-on)
# and off; autoscaling on (its NodePools too) and off. Bounds that scale nothing, so the
# shared cluster's nodes stay.
FEATURE = Chain(
    "feature",
    acts=(
        Act("feature.update", patch(FEATURES, {"training_operator": {"enabled": True}})),
        Act("feature.update", patch(FEATURES, {"autoscaling": {
            "enabled": True, "groups": {"workers": {"min": 2, "max": 3}}}})),
        Act("feature.update", patch(FEATURES, {"autoscaling": {"enabled": False}})),
        Act("feature.update", patch(FEATURES, {"training_operator": {"enabled": False}})),
    ),
    names=lambda token: {},
    warmup=True,  # turning them on the first time installs what stays (cert-manager, ...)
)


def _their_tracking_server(stack: Stack, n: dict[str, str]) -> None:
    """A tracking server hypd did not make (its own role and bucket), to attach."""
    iam, s3, sm = stack.aws("iam"), stack.aws("s3"), stack.aws("sagemaker")
    role = iam.create_role(RoleName=n["theirs"], AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Action": "sts:AssumeRole",
            "Principal": {"Service": "sagemaker.amazonaws.com"}}]}))
    s3.create_bucket(Bucket=n["theirs"], CreateBucketConfiguration={
        "LocationConstraint": "us-west-2"})
    sm.create_mlflow_tracking_server(
        TrackingServerName=n["theirs"], ArtifactStoreUri=f"s3://{n['theirs']}/runs",
        RoleArn=role["Role"]["Arn"])


MLFLOW = "/api/v1/clusters/{cluster}/mlflow"

JOBS = "/api/v1/clusters/{cluster}/jobs"

# A job submitted while a tracking server is attached, in a namespace of its own: every step
# of job.create but kuberay (namespace and bucket claim, the MLflow Pod Identity binding, the
# job), then job.delete (forced: it may still run).
MLFLOW_CHAIN = Chain(
    "mlflow",
    acts=(
        Act("mlflow.attach", put(MLFLOW, {})),
        Act("job.create", post(JOBS, {
            "name": "{job}", "namespace": "{ns}", "recipe": "verl",
            "image": "verlai/verl:latest", "nodes": 1, "gpus_per_node": 1,
            "config": "/s3/rl/ppo.yaml"})),
        Act("job.delete", delete(JOBS + "/{job}", force="true")),
        Act("mlflow.detach", delete(MLFLOW)),
        Act("mlflow.attach", put(MLFLOW, {"tracking_server": "{theirs}"})),
        Act("mlflow.detach", delete(MLFLOW)),
    ),
    names=lambda token: {"theirs": f"team-{token}", "job": f"mj-{token}", "ns": f"mn-{token}"},
    arrange=_their_tracking_server,
    warmup=True,  # ... and the first RayJob installs KubeRay, which stays
)


def _model_source(stack: Stack, n: dict[str, str]) -> None:
    s3 = stack.aws("s3")
    s3.create_bucket(Bucket=n["source"], CreateBucketConfiguration={
        "LocationConstraint": "us-west-2"})
    for name in ("config.json", "weights.bin"):
        s3.put_object(Bucket=n["source"], Key=f"exports/m/{name}", Body=b"x" * 1000)


MODEL = Chain(
    "model",
    acts=(
        Act("model.download", post("/api/v1/clusters/{cluster}/models", {
            "name": "{model}", "source": "s3", "s3_uri": "s3://{source}/exports/m"})),
        Act("model.delete", delete("/api/v1/clusters/{cluster}/models/{model}")),
    ),
    names=lambda token: {"model": f"m-{token}", "source": f"src-{token}"},
    arrange=_model_source,
    warmup=True,  # the first download makes the download role, which stays
)

ENDPOINTS = "/api/v1/clusters/{cluster}/endpoints"


def _reassign(stack: Stack, n: dict[str, str]) -> Request:
    """The pool's first unassigned worker to serve llama."""
    view = _get(stack, f"/api/v1/clusters/{n['cluster']}/endpoints/{n['pool']}")
    worker = sorted(w["name"] for w in view["workers"] if w["model"] == "unassigned")[0]
    return Request("POST", f"/api/v1/clusters/{n['cluster']}/endpoints/{n['pool']}/reassign",
                   {"worker": worker, "model": "llama"})


def _sglang(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "kind": "sglang", "model": "qwen", "gpus": 1, "replicas": 2,
            "instance_type": SHARED_TYPE, **extra}


# endpoint.create's and .update's steps between them: a routed SGLang endpoint with KEDA
# autoscaling (requirements, deploy, service, autoscaler), its bounds changed (deploy,
# service, autoscaler); a model pool, its worker reassigned and the pool scaled in around it
# (scale_in). An update's own requirements step runs only when what an endpoint needs
# changes, which no request can do (autoscaling is neither added nor removed by a PATCH).
ENDPOINT = Chain(
    "endpoint",
    acts=(
        Act("endpoint.create", post(ENDPOINTS, _sglang("{scaled}", autoscaling={
            "min": 1, "max": 2, "target": 4}))),
        Act("endpoint.update", patch(ENDPOINTS + "/{scaled}", {"autoscaling": {"max": 3}})),
        Act("endpoint.delete", delete(ENDPOINTS + "/{scaled}")),
        Act("endpoint.create", post(ENDPOINTS, {
            "name": "{pool}", "kind": "vllm", "model": "llama", "gpus": 1, "replicas": 3,
            "service": "pool", "pool_models": ["llama", "qwen"],
            "instance_type": SHARED_TYPE})),
        Act("endpoint.reassign", _reassign),
        Act("endpoint.update", patch(ENDPOINTS + "/{pool}", {"replicas": 2})),
        # its workers serve llama and qwen: refused in_use without force
        Act("endpoint.delete", delete(ENDPOINTS + "/{pool}", force="true")),
    ),
    names=lambda token: {"scaled": f"as-{token}", "pool": f"pl-{token}"},
    warmup=True,  # the first routed endpoint installs KEDA, which stays
)

SPACES = "/api/v1/clusters/{cluster}/spaces"


def _spaces_on(stack: Stack, n: dict[str, str]) -> None:
    """The spaces feature on (the first round turns it on; later rounds find it on)."""
    op = toggle(stack, n["cluster"], {"spaces": {"enabled": True}}, timeout=300)
    assert op is None or op["status"] == "succeeded", op


# A space's whole life, each of its kinds' one step (apply, then its wait): made, resized
# while it runs, stopped, started again, deleted with its home volume. No idle shutdown: the
# sandbox's clock runs 1000x, and a space stopping itself would make the rounds unalike.
SPACE = Chain(
    "space",
    acts=(
        Act("space.create", post(SPACES, {
            "name": "{space}", "instance_group": "workers", "cpu": 2, "memory_gib": 8,
            "home_gib": 20, "idle_shutdown_minutes": None})),
        Act("space.update", patch(SPACES + "/{space}", {"cpu": 4, "memory_gib": 16})),
        Act("space.stop", post(SPACES + "/{space}/stop")),
        Act("space.start", post(SPACES + "/{space}/start")),
        Act("space.delete", delete(SPACES + "/{space}")),
    ),
    names=lambda token: {"space": f"sp-{token}"},
    arrange=_spaces_on,
)

TEAMS = "/api/v1/clusters/{cluster}/teams"
SCHEDULER = "/api/v1/clusters/{cluster}/scheduler"


def _governance_on(stack: Stack, n: dict[str, str]) -> None:
    """The task_governance feature on (the first round turns it on; later rounds find it)."""
    op = toggle(stack, n["cluster"], {"task_governance": {"enabled": True}}, timeout=300)
    assert op is None or op["status"] == "succeeded", op


# Task governance's whole life on the cluster: the scheduler config made and changed, a
# team's quota made, changed and deleted, then the config deleted (SageMaker calls only;
# neither takes a client token, so each re-run adopts by name).
TEAM = Chain(
    "team",
    acts=(
        Act("scheduler.put", put(SCHEDULER, {"priority_classes": [
            {"name": "training", "weight": 50}], "fair_share": True})),
        Act("team.create", post(TEAMS, {"name": "{team}", "quota": [
            {"instance_type": SHARED_TYPE, "count": 1}]})),
        Act("team.update", patch(TEAMS + "/{team}", {"borrow_limit_percent": 0})),
        Act("scheduler.put", put(SCHEDULER, {"priority_classes": [
            {"name": "training", "weight": 60}], "fair_share": False})),
        Act("team.delete", delete(TEAMS + "/{team}")),
        Act("scheduler.delete", delete(SCHEDULER)),
    ),
    names=lambda token: {"team": f"tm-{token}"},
    arrange=_governance_on,
)

ALL = (NETWORK, CLUSTER, STORAGE, GROUP, FEATURE, MLFLOW_CHAIN, MODEL, ENDPOINT, SPACE, TEAM)
