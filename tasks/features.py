"""Operation kind `feature.update` (target `cluster/<c>/feature/<f>`): turn one managed
feature on or off, or change its options, dependency-aware.

The graph is data. `cloud/data/dependencies.yaml` lists every entry a cluster may get (EKS
add-ons, manifests, a service account hypd makes for a consumer of its own, a HyperPod
cluster setting: `TieredStorageConfig`, `AutoScaling`), each in a feature, in install order,
with `requires`. `enabled: true` marks the base set (the cluster create's dependencies stage);
`toggle: true` marks the seven managed features: `training_operator`, `inference_operator`,
`tiered_checkpointing`, `autoscaling`, `observability`, `task_governance`, `spaces`.
cert-manager is no longer in the base set: the operators (and Spaces) pull it in, and it
goes when the last feature needing it goes (DESIGN.md's "not removed while another enabled
feature still needs it" needs a dependency that is not permanent; cert-manager is the one
the operators and Spaces share). The Pod
Identity agent, the S3 CSI driver and HyperPod's agents stay base. The OIDC provider is the
eks stage's; a feature finds it (makes it only if a cluster lacks it) and never deletes it.

Explicit diff. `PATCH /clusters/<c>/features` names features with only the fields to change
(`{"training_operator": {"enabled": true}}`, `{"tiered_checkpointing": {"enabled": true,
"memory_percent": 20}}`, `{"autoscaling": {"groups": {"workers": {"max": 6}}}}`). The route
checks the features' locks, reads the actual state, resolves options against it (a group's
missing bound is its current one) and compares (`cloud.features.matches`). All already true:
`200 {"changed": false}` and no AWS or Kubernetes mutation (the suite counts). Exactly one
feature differing: one `feature.update` operation on `cluster/<c>/feature/<f>`. More than
one: 422; each feature is its own operation and target, and a reply carries one operation
(the dashboard sends one PATCH per touched feature). The route records in the params what a
change needs that is fixed when it is asked (the groups' instance types), so every attempt
acts the same.

The steps, selected when recorded. Every step is an ensure: it reads the actual state first
and acts only on the difference, so a step re-run after a crash adopts what the crashed
attempt made (a role found by name and tags, an add-on found by name and created with a
client request token, a HyperPod setting already as asked is not sent again). Turning on, in
order:

- `requirements`: what the feature needs from other features (e.g. cert-manager, the Pod
  Identity agent), installed when missing, planned and applied by `cloud/addons.py` with
  client tokens, under the per-cluster features mutex `features/<c>`; waits until settled;
- `identity`: each consumer's IAM role (found by name and tags before it is created, so a
  crash never makes a second one), then a service account hypd makes, annotated with it;
- `enable`: the add-ons installed bound to their roles, or an existing add-on bound;
  `UpdateCluster` with the HyperPod setting only when DescribeCluster does not already show
  it; waits until HyperPod shows it. A manifests entry that requires an add-on of its own
  feature (spaces' WorkspaceAccessStrategies `hypd-web` and `hypd-web-root`, a kind the
  Spaces add-on serves) is written by the wait once that add-on has settled;
- for autoscaling, `node_pools` (each group's bounds).

Turning off goes back:

- `node_pools_off`;
- `disable`: hypd-tagged add-ons deleted, the setting set to `Disable`;
- `identity_off`: the feature's service accounts and roles; never a shared role, never the
  OIDC provider;
- `release`, under the same mutex: the requirements outside the base set that no enabled
  feature and no running feature operation on the cluster still needs (the lock table says
  which run) are removed; the step records `removed`, `kept`, `still_needed_by`.

A worker killed at any step finishes the toggle when the sweeper picks it up, and each role
is asked for once (tests/tasks/test_features_kill.py). A half-made chain shows as `partial`;
the same toggle again finishes it (`true`) or removes it (`false`).

Identities. Each consumer that calls AWS states its identity:

- `pod-identity`: trust `pods.eks.amazonaws.com` with `aws:SourceAccount` / `aws:SourceArn` =
  this EKS cluster; bound by the add-on's own `podIdentityAssociations`;
- `irsa`: trust the cluster's OIDC provider for one `system:serviceaccount:<ns>:<name>`,
  audience STS; bound by the add-on's `serviceAccountRoleArn` or the
  `eks.amazonaws.com/role-arn` annotation of the service account hypd makes;
- `hyperpod`: the cluster's own ClusterRole, `shared`.

The role is `hypd-<c>-<role>` with one inline policy per role key, built in `cloud/iam.py` and
pinned by tests:

- training operator: `sagemaker:DescribeClusterNode` on the account's clusters;
- inference operator: read of the cluster's shared bucket, plus AWS's managed
  `AmazonSageMakerHyperPodInferenceAccess`. The operator calls
  `sagemaker:UpdateClusterInference` at start and makes SageMaker endpoints, ACM certificates
  and `hyperpod-tls*` objects for its endpoints; a hand-kept copy would drift from what the
  operator needs, so the boundary lets that policy through whole. Plus `iam:PassRole` on
  itself to SageMaker only: AWS's policy passes only `SageMakerHyperPodInference*` roles, and
  the operator passes its own role as its endpoints' execution role, so the role also trusts
  `sagemaker.amazonaws.com`, and the boundary's only PassRole is to
  `role/hypd/hypd-*-inference-op`;
- KEDA's operator: `cloudwatch:GetMetricData`/`GetMetricStatistics`/`ListMetrics` (the
  inference operator's CloudWatch triggers are read as KEDA's identity; no resource types);
- observability: `aps:RemoteWrite`;
- spaces: the Spaces controller (`jupyter-k8s-system/jupyter-k8s-controller-manager`, Pod
  Identity): SSM activations only with the tags naming this EKS cluster, and the upkeep of
  activations and sessions (AWS's AmazonSageMakerSpacesControllerPolicy without its KMS
  part, which signs the tokens of AWS's web UI router: hypd's access strategy uses no
  router); the EBS CSI driver
  (`kube-system/ebs-csi-controller-sa`, Pod Identity): volume create/attach/detach/resize/
  delete, only of volumes it tagged `ebs.csi.aws.com/cluster=true`;
- tiered checkpointing: list/get/put/delete/abort-multipart on the shared bucket only.

The inference add-on, configured. `amazon-sagemaker-hyperpod-inference` checks at install for
what AWS's HyperPod inference troubleshooting guide lists: the S3 and FSx CSI drivers,
cert-manager, metrics-server, the AWS Load Balancer Controller and KEDA. So those are its
`requires`, installed (with their own identities: the controllers' service accounts and IRSA
roles, through `cloud/requirements.py`, the one installer of dependency sets, which the
endpoints' on-demand installs use too) and waited for until their Deployments run, before it.
It is created with `configurationValues` (`configuration` in the data, `${...}` filled at
install by `cloud.dependencies.configuration`):

- `executionRoleArn`: its IRSA role;
- `tlsCertificateS3Bucket`: `hyperpod-tls-hypd-<c>-<digest>`, made and tagged with the role
  by `cloud.identity.ensure` (`identity.tls_bucket`), and emptied and deleted with it, or by
  the cluster delete's `identity` step; AWS's policy reaches only `hyperpod-tls*` buckets;
- `hyperpodClusterArn`;
- `alb`/`keda` disabled: hypd's own controllers serve it, since a second copy of either would
  fight over the same objects.

An add-on present with other values is updated to hypd's (`configurationValues` compared
parsed). The Load Balancer Controller, KEDA and the FSx driver are `sticky`: endpoints and
FSx volumes install them on demand too, so turning a feature off never removes them (a
controller removed under a LoadBalancer Service would leave its finalizer, and its NLB,
behind); an FSx volume installs the FSx driver with itself. The sandbox checks the same
(sandbox/gaps/eks_addons.py: the configuration's schema, the role and bucket it names, the
objects it needs).

Actual state, never a stored copy. `cloud.features.read` reads, per request: ListAddons and
DescribeAddon (status, health issues, hypd's tags, the role binding), Pod Identity
associations of the consumer's service account, IAM (role present, trust and policy as hypd
builds them), the service account and its annotation, the manifests the features need,
DescribeCluster (`TieredStorageConfig`, `AutoScaling`, `ClusterRole`, the groups) and the
NodePools hypd made. A feature is `on` when every part is there as wanted (`settling` while
an add-on or setting converges), `off` when none of its own parts is (a shared one does not
count), `partial` in between, `failed` when AWS says so. The feature tags
(`hypd:feature:<f>`) of earlier versions are gone; the cluster page's `features` is the same
read, summarised.

Managed autoscaling turns on HyperPod's `AutoScaling` (`Mode: Enable`, `AutoScalerType:
Karpenter`) with the cluster's ClusterRole (made with every cluster; ensured, shared), then
gives each named instance group its bounds as Karpenter objects (`cloud/autoscaling.py`): a
`HyperpodNodeClass` `hypd-<g>` naming the group, a dynamic NodePool `hypd-<g>` with
`limits.nodes` = max - min and `consolidateAfter: 60s`, and, when min > 0, a static NodePool
`hypd-<g>-min` with `replicas` = min. A NodePool has a maximum but no minimum, so the minimum
is a static pool (Karpenter's static capacity); min 0 (scale from zero, AWS's documented path)
needs none. min/max are read back from the pools; current from HyperPod. Only on-demand
groups without deep health checks or a training plan may be autoscaled (AWS's rule; 422
otherwise). The NodePools are validated against the real Karpenter v1.14 CRD as a closed
schema (tests/crds/, tests/crdkit.py). Wherever autoscaling is shown (the panel, the
cluster's status, the MCP tools, the skill) it says it manages HyperPod instance groups only,
not general EC2 capacity.

Faces: MCP `get_features` / `update_features` (status tool `wait_operation`); the cluster
page's Advanced features panel (`static/js/views/cluster_features.js`: a toggle per feature,
its `requires` and identity, the memory share, autoscaling's per-group min/max/current; Apply
sends one PATCH per touched feature with only the touched fields, follows each operation,
shows "no change" for a 200); `skills/features.md`.
"""

from __future__ import annotations

from typing import Any

from cloud import (
    addons,
    autoscaling,
    dependencies,
    eks,
    features,
    hyperpod,
    iam,
    identity,
    kube,
    requirements,
    storage,
)
from cloud.aws import CLUSTER_TAG, tags_for
from cloud.dependencies import ADDON, AUTOSCALING, HYPERPOD, MANIFESTS, TIERED_STORAGE, Dependency
from cloud.settings import Settings
from tasks.engine.kinds import OperationKind, Step, StepContext, StepFailed, StepRetry
from tasks.engine.store import live_operations
from tasks.outcomes import guarded, output

SETTLE_POLL_S = 10.0


def target(cluster: str, feature: str) -> str:
    return f"cluster/{cluster}/feature/{feature}"


def _cluster(ctx: StepContext) -> str:
    return ctx.params["cluster"]


def _feature(ctx: StepContext) -> str:
    return ctx.params["feature"]


def _mutex(ctx: StepContext) -> str:
    """One per cluster: installing and releasing shared dependencies never interleave."""
    return f"features/{_cluster(ctx)}"


def _sources(ctx: StepContext) -> features.Sources:
    cluster = _cluster(ctx)
    account = iam.account_id(ctx.client("sts"))
    facts = identity.facts(ctx.client("eks"), cluster, ctx.region, account,
                           storage.shared_bucket_name(cluster, account, ctx.region))
    return features.Sources(eks=ctx.client("eks"), iam=ctx.client("iam"),
                            sagemaker=ctx.client("sagemaker"),
                            api=eks.api_client(cluster, ctx.region), facts=facts,
                            hyperpod_name=ctx.params.get("hyperpod_name") or cluster,
                            s3=ctx.client("s3"))


def _own(ctx: StepContext) -> list[Dependency]:
    return dependencies.entries(_feature(ctx))


def _addon_names(deps: list[Dependency]) -> list[str]:
    return [d.name for d in deps if d.kind == ADDON]


def _install(ctx: StepContext, src: features.Sources, deps: list[Dependency],
             roles: dict[str, str] | None = None,
             values: dict[str, str] | None = None) -> list[dict[str, Any]]:
    cluster = _cluster(ctx)
    actions = addons.plan(deps, addons.installed(src.eks, src.api, cluster, deps))
    return [addons.apply(action, src.eks, src.api, cluster, ctx.region, roles=roles,
                         client_token=ctx.token(action.dependency.name), values=values)
            for action in actions]


def _values(ctx: StepContext, src: features.Sources, dep: Dependency) -> dict[str, str]:
    """What an add-on's configuration names (`${tls_bucket}`, `${hyperpod_cluster_arn}`)."""
    values: dict[str, str] = {}
    bucket = identity.tls_bucket(dep, src.facts)
    if bucket is not None:
        values["tls_bucket"] = bucket
    if dep.configuration is not None:
        found = hyperpod.cluster_state(src.sagemaker, src.hyperpod_name)
        if found is None or not found.get("arn"):
            raise StepFailed(f"HyperPod cluster {src.hyperpod_name} is gone", "not_found")
        values["hyperpod_cluster_arn"] = found["arn"]
    return values


def _manifest_values(ctx: StepContext) -> dict[str, str]:
    """What a manifest names: `${spaces_url}`, where people open spaces (hypd's spaces
    router, HYPD_SPACES_URL), and `${cluster}`, hypd's name of the cluster (the router's
    paths name it as the REST paths do)."""
    return {"spaces_url": Settings.from_env().spaces_origin,
            "cluster": _cluster(ctx)}


def _settled(ctx: StepContext, names: list[str]) -> dict[str, list[str]]:
    state = addons.addons_settled(ctx.client("eks"), _cluster(ctx), names)
    if state["failed"]:
        raise StepFailed("add-ons failed: " + "; ".join(state["failed"]), "upstream_error")
    return state


# -- turning on ------------------------------------------------------------------------------

@guarded
def ensure_requirements(ctx: StepContext) -> dict[str, Any]:
    """What the feature needs from other features, installed where missing."""
    src = _sources(ctx)
    wanted = dependencies.requirements(_feature(ctx))
    with ctx.lock(_mutex(ctx)):
        done = requirements.ensure(src.eks, src.iam, src.s3, src.api, wanted, src.facts,
                                   ctx.region, ctx.token)
    return {"requirements": [d.name for d in wanted], "actions": done["actions"]}


@guarded
def wait_requirements(ctx: StepContext) -> float | None:
    """Until the add-ons settle and the controllers run (the inference add-on refuses to
    install without a running Load Balancer Controller and KEDA)."""
    wanted = dependencies.requirements(_feature(ctx))
    state = _settled(ctx, _addon_names(wanted))
    if state["missing"]:
        # removed meanwhile by a feature turned off: ensure it again
        src = _sources(ctx)
        with ctx.lock(_mutex(ctx)):
            requirements.ensure(src.eks, src.iam, src.s3, src.api, wanted, src.facts,
                                ctx.region, ctx.token)
        return SETTLE_POLL_S
    if state["pending"]:
        return SETTLE_POLL_S
    api = eks.api_client(_cluster(ctx), ctx.region)
    waiting = requirements.not_running(api, wanted, ctx.region)
    if waiting is not None:
        ctx.detail(f"waiting for {waiting} to run")
        return SETTLE_POLL_S
    return None


@guarded
def ensure_identity(ctx: StepContext) -> dict[str, Any]:
    """Each consumer's role (created once: found by name and tags first), and the service
    account hypd makes for its own consumers, annotated with the role."""
    src = _sources(ctx)
    roles = {}
    buckets = []
    for dep in _own(ctx):
        if dep.identity is not None:
            made = identity.ensure(src.iam, src.api, dep, src.facts, s3=src.s3)
            roles[dep.identity.role] = made["role_arn"]
            if made.get("tls_bucket"):
                buckets.append(made["tls_bucket"])
    return {"roles": roles, "tls_buckets": buckets}


def _wanted_setting(ctx: StepContext, dep: Dependency, roles: dict[str, str]) -> dict[str, Any]:
    if dep.setting == TIERED_STORAGE:
        wanted: dict[str, Any] = {"Mode": features.ENABLE}
        if ctx.params.get("memory_percent") is not None:
            wanted["InstanceMemoryAllocationPercentage"] = ctx.params["memory_percent"]
        return {TIERED_STORAGE: wanted}
    members: dict[str, Any] = {AUTOSCALING: {"Mode": features.ENABLE,
                                             "AutoScalerType": features.AUTOSCALER}}
    if dep.identity is not None:
        members["ClusterRole"] = roles[dep.identity.role]
    return members


def _setting_holds(actual: dict[str, Any] | None, dep: Dependency,
                   members: dict[str, Any]) -> bool:
    """Whether DescribeCluster already shows what `members` would set (a crashed attempt's
    UpdateCluster went through, or it was never needed)."""
    if actual is None:
        return False
    if dep.setting == TIERED_STORAGE:
        have = actual.get("tiered_storage") or {}
        want = members[TIERED_STORAGE]
        return have.get("mode") == want["Mode"] and (
            "InstanceMemoryAllocationPercentage" not in want
            or have.get("memory_percent") == want["InstanceMemoryAllocationPercentage"])
    have = actual.get("autoscaling") or {}
    return have.get("mode") == members[AUTOSCALING]["Mode"] and (
        "ClusterRole" not in members or actual.get("cluster_role") == members["ClusterRole"])


def _configure_addon(ctx: StepContext, src: features.Sources, dep: Dependency,
                     roles: dict[str, str]) -> str | None:
    """An add-on that was there already gets hypd's configuration if it differs (made by an
    older hypd, or by hand)."""
    if dep.configuration is None or dep.identity is None:
        return None
    wanted = dependencies.configuration(
        dep, {**_values(ctx, src, dep), "role": roles[dep.identity.role]})
    state = addons.addon_state(src.eks, _cluster(ctx), dep.name) or {}
    if wanted is None or state.get("configuration") == wanted:
        return None
    if state.get("status") in addons.ADDON_SETTLING:
        raise StepRetry(f"add-on {dep.name} is {state.get('status')}", SETTLE_POLL_S)
    src.eks.update_addon(clusterName=_cluster(ctx), addonName=dep.name,
                         configurationValues=addons.configuration_values(wanted),
                         resolveConflicts="OVERWRITE",
                         clientRequestToken=ctx.token(dep.name, "configuration"))
    return "configured"


def _bind_addon(ctx: StepContext, src: features.Sources, dep: Dependency,
                roles: dict[str, str]) -> str | None:
    """An add-on that was there already gets its role binding if it lacks it."""
    if dep.identity is None:
        return None
    role_arn = roles[dep.identity.role]
    if dep.identity.mechanism == dependencies.POD_IDENTITY:
        if identity.pod_identity_role(src.eks, _cluster(ctx), dep) is None:
            src.eks.create_pod_identity_association(
                clusterName=_cluster(ctx), namespace=dep.identity.namespace,
                serviceAccount=dep.identity.service_account, roleArn=role_arn,
                tags={t["Key"]: t["Value"] for t in tags_for(CLUSTER_TAG, _cluster(ctx),
                                                             dependency=dep.name)},
                clientRequestToken=ctx.token(dep.name, "association"))
            return "associated"
        return None
    state = addons.addon_state(src.eks, _cluster(ctx), dep.name) or {}
    if state.get("service_account_role_arn") != role_arn:
        src.eks.update_addon(clusterName=_cluster(ctx), addonName=dep.name,
                             serviceAccountRoleArn=role_arn, resolveConflicts="PRESERVE",
                             clientRequestToken=ctx.token(dep.name, "role"))
        return "bound"
    return None


def _after_own_addon(ctx: StepContext, dep: Dependency) -> bool:
    """A manifests entry that requires an add-on of its own feature: its objects are of a kind
    that add-on serves (the Spaces add-on's WorkspaceAccessStrategy), so they are written
    once the add-on has settled (`wait_enabled`), not with it."""
    own = {d.name: d for d in _own(ctx)}
    return dep.kind == MANIFESTS and any(
        r in own and own[r].kind == ADDON for r in dep.requires)


@guarded
def enable(ctx: StepContext) -> dict[str, Any]:
    src = _sources(ctx)
    roles = output(ctx, "identity", "roles")
    done: list[Any] = []
    for dep in _own(ctx):
        if dep.kind == ADDON:
            if addons.addon_state(src.eks, _cluster(ctx), dep.name) is None:
                done += _install(ctx, src, [dep], roles, _values(ctx, src, dep))
            else:
                for change in (_bind_addon(ctx, src, dep, roles),
                               _configure_addon(ctx, src, dep, roles)):
                    if change:
                        done.append({"name": dep.name, "action": change})
        elif dep.kind == MANIFESTS:
            if not _after_own_addon(ctx, dep):
                done += _install(ctx, src, [dep])
        elif dep.kind == HYPERPOD:
            members = _wanted_setting(ctx, dep, roles)
            if not _setting_holds(hyperpod.settings(src.sagemaker, src.hyperpod_name), dep,
                                  members):
                ctx.detail(f"UpdateCluster: {', '.join(sorted(members))}")
                hyperpod.update_settings(src.sagemaker, src.hyperpod_name, members,
                                         owner=_cluster(ctx))
                done.append({"name": dep.name, "action": "update_cluster",
                             "members": sorted(members)})
    return {"actions": done}


def _settings_settled(ctx: StepContext, deps: list[Dependency], mode: str) -> float | None:
    settings = [d for d in deps if d.kind == HYPERPOD]
    if not settings:
        return None
    actual = hyperpod.settings(ctx.client("sagemaker"),
                               ctx.params.get("hyperpod_name") or _cluster(ctx))
    if actual is None:
        raise StepFailed(f"HyperPod cluster {_cluster(ctx)} is gone", "not_found")
    for dep in settings:
        setting = (actual.get("tiered_storage") if dep.setting == TIERED_STORAGE
                   else actual.get("autoscaling")) or {}
        if setting.get("status") in features.FAILED_AUTOSCALING:
            raise StepFailed(f"HyperPod reports {dep.setting} failed: "
                             f"{setting.get('failure_message') or 'no message'}",
                             "upstream_error")
        shown = setting.get("mode") or features.DISABLE
        if shown != mode or setting.get("status") in features.SETTLING_AUTOSCALING:
            return SETTLE_POLL_S
    return SETTLE_POLL_S if actual["status"] in hyperpod.BUSY_STATUSES else None


@guarded
def wait_enabled(ctx: StepContext) -> float | None:
    own = _own(ctx)
    state = _settled(ctx, _addon_names(own))
    if state["missing"]:
        raise StepFailed("add-ons disappeared while being installed: "
                         + ", ".join(state["missing"]), "upstream_error")
    if state["pending"]:
        return SETTLE_POLL_S
    later = [d for d in own if _after_own_addon(ctx, d)]
    if later:
        # the add-ons serve their kinds now: their objects are written (server-side apply,
        # only what is missing: a wait run again after a crash changes nothing)
        src = _sources(ctx)
        try:
            for dep in later:
                _install(ctx, src, [dep], values=_manifest_values(ctx))
        except kube.KubeError as exc:
            if exc.http_status != 404:
                raise
            ctx.detail(f"waiting for the cluster to serve the kinds of {dep.name}")
            return SETTLE_POLL_S
    return _settings_settled(ctx, own, features.ENABLE)


@guarded
def ensure_node_pools(ctx: StepContext) -> dict[str, Any]:
    """Each named group's node class and pools as its bounds say (a group given as null
    is no longer autoscaled)."""
    api = eks.api_client(_cluster(ctx), ctx.region)
    done: dict[str, list[str]] = {}
    try:
        for group, bounds in sorted((ctx.params.get("groups") or {}).items()):
            if bounds is None:
                done[group] = autoscaling.remove(api, group)
            else:
                done[group] = autoscaling.apply(
                    api, group, bounds["instance_type"],
                    autoscaling.Bounds(bounds["min"], bounds["max"]))
    except kube.KubeError as exc:
        if exc.http_status == 404:
            raise StepRetry("HyperPod has not installed Karpenter's NodePool yet", 15.0) from exc
        raise
    return {"groups": done}


# -- turning off -----------------------------------------------------------------------------

@guarded
def remove_node_pools(ctx: StepContext) -> dict[str, Any]:
    api = eks.api_client(_cluster(ctx), ctx.region)
    return {"removed": {g: autoscaling.remove(api, g) for g in autoscaling.managed_groups(api)}}


@guarded
def disable(ctx: StepContext) -> dict[str, Any]:
    src = _sources(ctx)
    done: list[Any] = []
    for dep in reversed(_own(ctx)):
        if dep.kind in (ADDON, MANIFESTS):
            present = addons.installed(src.eks, src.api, _cluster(ctx), [dep])
            state = present.get(dep.name)
            if state is not None and state.get("status") == "DELETING":
                continue
            for action in addons.removal_plan([dep], present):
                done.append(addons.apply(action, src.eks, src.api, _cluster(ctx), ctx.region))
        elif dep.kind == HYPERPOD:
            actual = hyperpod.settings(src.sagemaker, src.hyperpod_name) or {}
            setting = (actual.get("tiered_storage") if dep.setting == TIERED_STORAGE
                       else actual.get("autoscaling")) or {}
            if setting.get("mode") == features.ENABLE:
                ctx.detail(f"UpdateCluster: {dep.setting} Disable")
                hyperpod.update_settings(src.sagemaker, src.hyperpod_name,
                                         {dep.setting: {"Mode": features.DISABLE}},
                                         owner=_cluster(ctx))
                done.append({"name": dep.name, "action": "update_cluster"})
    return {"actions": done}


@guarded
def wait_disabled(ctx: StepContext) -> float | None:
    own = _own(ctx)
    left = [n for n in _addon_names(own)
            if (addons.addon_state(ctx.client("eks"), _cluster(ctx), n) or {}).get("managed")]
    if left:
        return SETTLE_POLL_S
    return _settings_settled(ctx, own, features.DISABLE)


@guarded
def remove_identity(ctx: StepContext) -> dict[str, Any]:
    """The feature's own roles and service accounts; a shared role (the cluster's own
    ClusterRole) and the OIDC provider stay."""
    src = _sources(ctx)
    done = {}
    for dep in reversed(_own(ctx)):
        if dep.identity is not None:
            if dep.identity.mechanism == dependencies.POD_IDENTITY:
                identity.remove_association(src.eks, _cluster(ctx), dep,
                                            iam.role_name(_cluster(ctx), dep.identity.role))
            done[dep.name] = identity.remove(src.iam, src.api, dep, _cluster(ctx), s3=src.s3,
                                             facts=src.facts)
    return {"removed": done}


@guarded
def release_requirements(ctx: StepContext) -> dict[str, Any]:
    """What turning the feature on pulled in, removed unless another enabled feature (or one
    being changed now) still needs it; the base set always stays."""
    src = _sources(ctx)
    cluster = _cluster(ctx)
    with ctx.lock(_mutex(ctx)):
        view = features.read(src)
        staying = [name for name, f in view["features"].items()
                   if f["state"] != features.OFF and name != _feature(ctx)]
        busy = [op["params"].get("feature") for op in
                live_operations(ctx.redis, f"cluster/{cluster}/feature/")
                if op["id"] != ctx.op_id]
        remove = dependencies.releasable(_feature(ctx), [*staying, *busy])
        present = addons.installed(src.eks, src.api, cluster, remove)
        done = [addons.apply(action, src.eks, src.api, cluster, ctx.region)
                for action in addons.removal_plan(remove, present)]
    kept = [d.name for d in dependencies.requirements(_feature(ctx))
            if d.name not in {r.name for r in remove}]
    return {"removed": [d["name"] for d in done], "kept": kept,
            "still_needed_by": sorted({f for f in (*staying, *busy) if f})}


@guarded
def wait_released(ctx: StepContext) -> float | None:
    for name in ctx.resources.get("removed") or ():
        if addons.addon_state(ctx.client("eks"), _cluster(ctx), name) is not None:
            return SETTLE_POLL_S
    return None


# -- the kind --------------------------------------------------------------------------------

REQUIREMENTS = Step("requirements", "Install what the feature needs (cert-manager, the Pod "
                    "Identity agent, ...)", ensure_requirements, wait_requirements)
IDENTITY = Step("identity", "Create the IAM role (and service account) of each consumer",
                ensure_identity)
ENABLE = Step("enable", "Install the feature bound to its role, or set it on HyperPod",
              enable, wait_enabled)
NODE_POOLS = Step("node_pools", "Set each instance group's minimum and maximum (Karpenter "
                  "NodePools)", ensure_node_pools)
NODE_POOLS_OFF = Step("node_pools_off", "Remove hypd's Karpenter NodePools",
                      remove_node_pools)
DISABLE = Step("disable", "Remove the feature's add-ons, or turn it off on HyperPod",
               disable, wait_disabled)
IDENTITY_OFF = Step("identity_off", "Delete the feature's IAM roles and service accounts",
                    remove_identity)
RELEASE = Step("release", "Remove what only this feature needed", release_requirements,
               wait_released)
ALL_STEPS = (REQUIREMENTS, IDENTITY, ENABLE, NODE_POOLS, NODE_POOLS_OFF, DISABLE,
             IDENTITY_OFF, RELEASE)


def select_steps(params: dict[str, Any]) -> tuple[Step, ...]:
    scaling = params["feature"] == features.AUTOSCALING_FEATURE
    if params["enabled"]:
        return (REQUIREMENTS, IDENTITY, ENABLE) + ((NODE_POOLS,) if scaling else ())
    return ((NODE_POOLS_OFF,) if scaling else ()) + (DISABLE, IDENTITY_OFF, RELEASE)


def features_url(params: dict[str, Any]) -> str:
    return f"/api/v1/clusters/{params['cluster']}/features"


FEATURE_UPDATE = OperationKind(name="feature.update", steps=ALL_STEPS, select=select_steps,
                               resource_url=features_url)
