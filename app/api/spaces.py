"""Dev spaces: a JupyterLab or Code Editor workspace on the cluster, with the cluster's bucket
at /s3 (the claim the jobs mount) and its own home volume — create, list, read, update, stop,
start and delete, each change an operation on `cluster/<c>/space/<s>` (tasks/spaces.py).

A space belongs to the token that made it: a viewer sees every space, an operator changes only
their own (403 `forbidden` naming the owner); an operator may delete another's space only
with `force=true`, which the audit log records with the request. The spaces feature must be
on (its operator serves Workspace; 412 otherwise), and a space is checked against what its
instance group can ever hold, as a job is (422 exceeds_capacity).

With task governance a space runs for a team as a job does (app/readmodels/team_work.py
`place`, the same rules and refusals: `team`, default the token's, and `priority`): it is
made in the team's namespace with the team's queue labels (cloud/spaces.py). A team member's
token may create, change, stop, start and delete only its team's spaces (the routes declare
`team_work`; the owner rule holds besides)."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from app import audit, auth, context, mutations
from app.errors import ApiError
from app.permissions import access
from app.readmodels import clusters as readmodel
from app.readmodels import fit as fit_readmodel
from app.readmodels import spaces as spaces_readmodel
from app.readmodels import team_work
from app.readmodels.clusters import ClusterRef
from app.readmodels.kubeapi import api_for as kube_api
from app.readmodels.kubeapi import talking_to
from cloud import fit, kube, spaces, storage
from schemas.common import ErrorSchema, MutationReplySchema, NoChangeSchema
from schemas.spaces import (
    DEFAULT_IMAGES,
    SpaceCreateSchema,
    SpaceListSchema,
    SpaceSchema,
    SpaceSignInSchema,
    SpaceUpdateSchema,
)
from tasks import space_sessions
from tasks.spaces import (
    SPACE_CREATE,
    SPACE_DELETE,
    SPACE_START,
    SPACE_STOP,
    SPACE_UPDATE,
    space_url,
    target,
)
from vocabulary import spaces as words
from vocabulary.roles import Role

blp = Blueprint("spaces", __name__, url_prefix="/api/v1/clusters",
                description="Dev spaces: JupyterLab and Code Editor on the cluster, with the "
                            "bucket the jobs mount at /s3")
audit.declare_target(blp, "cluster/<cluster>/space/<name>")

FEATURE = "spaces"


def _url(cluster: str, name: str) -> str:
    return space_url({"cluster": cluster, "name": name})


def _served(ref: ClusterRef, api: Any) -> None:
    try:
        kube.resource_info(api, spaces.API_VERSION, spaces.KIND)
    except kube.KubeError as exc:
        if exc.http_status != 404:
            raise
        raise ApiError(412, "precondition_failed",
                       f"cluster {ref.name} runs no spaces operator: turn the {FEATURE} "
                       "feature on first (PATCH …/features)") from exc


def _check_fit(ref: ClusterRef, api: Any, space: spaces.Space) -> None:
    per_pod = {fit.CPU: space.cpu, fit.MEMORY: space.memory_gib * fit.GIB, fit.GPU: space.gpus}
    fit_readmodel.check(ref, api, [fit.Ask(count=1, per_pod=per_pod, field="instance_group",
                                           what="spaces", instance_group=space.instance_group)])


def _own(ws: dict[str, Any], cluster: str, force: bool = False) -> None:
    """Only the space's owner changes it (force lets an operator delete another's)."""
    owner = spaces.owner(ws)
    me = auth.current().name
    if owner != me and not force:
        raise ApiError(403, "forbidden", f"space {ws['metadata']['name']!r} of cluster "
                                         f"{cluster} belongs to {owner!r}; only its owner "
                                         "may change it", {"owner": owner})


def _team_may(ws: dict[str, Any]) -> None:
    """A team member's token changes only its team's spaces (a dry run changes nothing)."""
    if not auth.dry_run():
        team_work.may_change(auth.current(), ws["metadata"]["name"], spaces.namespace_of(ws),
                             "space")


def _existing(cluster: str, name: str) -> tuple[ClusterRef, Any, dict[str, Any]]:
    ref = readmodel.find(cluster)
    api = kube_api(ref)
    with talking_to(ref):
        return ref, api, spaces.require(api, cluster, name)


@blp.route("/<string:cluster>/spaces")
class Spaces(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, SpaceListSchema)
    @blp.doc(operationId="list_spaces")
    def get(self, cluster):
        """The cluster's spaces: state, owner, editor, size, instance group, URL (and those
        being created)."""
        ref = readmodel.find(cluster)
        api = kube_api(ref)
        with talking_to(ref):
            return {"cluster": cluster, "items": spaces_readmodel.listing(ref, api)}

    @mutations.changing(blp, team_work=True)
    @blp.arguments(SpaceCreateSchema)
    @blp.response(202, MutationReplySchema)
    @blp.alt_response(409, description="a space of that name exists or is being created, or "
                                       "the cluster is not ACTIVE")
    @blp.alt_response(412, description="the spaces feature is off, or the cluster has no "
                                       "bucket claim")
    @blp.alt_response(422, schema=ErrorSchema, description=(
        "exceeds_capacity: more than one node of the instance group can ever offer; "
        "validation_failed: an instance group the cluster does not have"))
    @blp.doc(operationId="create_space")
    def post(self, body, cluster):
        """Create a space: JupyterLab or Code Editor (image: the SageMaker Distribution
        unless named), its vCPUs, memory and GPUs on one instance group, a home volume, the
        cluster's bucket at /s3, and idle shutdown (after 60 minutes unless set; null: never).
        Owned by the calling token. Answers 202 with the operation, which ends when the
        editor runs (a space waiting for a node says why); then GET its resource_url for the
        URL. A space runs for a team (`team`, default your token's) as a job does: Kueue
        admits its pod through the team's queue, ordered by its `priority` class, and its
        read says whether it waits, is admitted or borrowing; on a cluster with teams every
        space runs for one, and a team member creates only its own team's."""
        image = body.get("image") or DEFAULT_IMAGES["gpu" if body["gpus"] else "cpu"]
        params: dict[str, Any] = {**body, "image": image, "cluster": cluster,
                                  "owner": auth.current().name}

        def precheck() -> None:
            ref = readmodel.find(cluster)
            placed = team_work.place(ref, body, auth.current(), spaces.NAMESPACE)
            params.update(team=placed.team, priority=placed.priority,
                          namespace=placed.namespace)
            api = kube_api(ref)
            params["region"] = ref.region
            with talking_to(ref):
                _served(ref, api)
                if spaces.find(api, body["name"]) is not None or kube.get_object(
                        api, spaces.API_VERSION, spaces.KIND, body["name"],
                        placed.namespace) is not None:
                    raise ApiError(409, "conflict", f"a space named {body['name']!r} already "
                                                    f"exists on cluster {cluster}")
                if placed.namespace == spaces.NAMESPACE and kube.get_object(
                        api, "v1", "PersistentVolumeClaim", storage.DEFAULT_CLAIM,
                        spaces.NAMESPACE) is None:
                    raise ApiError(412, "precondition_failed",
                                   f"cluster {cluster} has no {storage.DEFAULT_CLAIM} claim "
                                   "(its bucket at /s3): re-run its storage stage first")
                _check_fit(ref, api, spaces.Space.from_params(params))

        return mutations.submit(SPACE_CREATE, target(cluster, body["name"]), params, precheck)


@blp.route("/<string:cluster>/spaces/<string:name>")
class Space(MethodView):
    @access(Role.VIEWER)
    @blp.response(200, SpaceSchema)
    @blp.doc(operationId="get_space")
    def get(self, cluster, name):
        """One space: state, owner, URL and the port-forward a remote IDE uses, idle time,
        its pod and node (or why it waits), resources, mounts, recent events."""
        ref = readmodel.find(cluster)
        api = kube_api(ref)
        with talking_to(ref):
            return spaces_readmodel.one(ref, api, name)

    @mutations.changing(blp, own_200=(NoChangeSchema, "already as asked: nothing sent"),
                        team_work=True)
    @blp.arguments(SpaceUpdateSchema)
    @blp.response(202, MutationReplySchema)
    @blp.alt_response(403, schema=ErrorSchema, description="the space is another token's")
    @blp.doc(operationId="update_space")
    def patch(self, body, cluster, name):
        """Change a space's vCPUs, memory, GPUs or idle shutdown (only the fields present).
        A running space restarts its editor with them (its home volume and /s3 stay). Already
        as asked: 200, nothing sent."""
        replayed = mutations.replayed()
        if replayed is not None:
            return replayed
        context.engine().store.ensure_target_free(target(cluster, name))
        ref, api, ws = _existing(cluster, name)
        _team_may(ws)
        _own(ws, cluster)
        before = spaces.asked(ws)
        after = spaces.Space(**{**before.__dict__, **body})
        if after == before:
            return mutations.no_change(_url(cluster, name), f"space {name!r} is already as asked")
        with talking_to(ref):
            _check_fit(ref, api, after)
        params = {**after.__dict__, "cluster": cluster, "region": ref.region, "changes": body,
                  "namespace": spaces.namespace_of(ws)}
        return mutations.submit(SPACE_UPDATE, target(cluster, name), params)

    @mutations.destructive(blp, team_work=True)
    @blp.alt_response(403, schema=ErrorSchema, description="the space is another token's "
                                                           "(force=true deletes it anyway)")
    @blp.doc(operationId="delete_space")
    def delete(self, query, cluster, name):
        """Delete a space: its editor, its pod and its home volume (files under /s3 stay in
        the bucket). Only its owner, or any operator with force=true."""
        params: dict[str, Any] = {"cluster": cluster, "name": name}

        def impact() -> mutations.Impact:
            ref, _, ws = _existing(cluster, name)
            namespace = spaces.namespace_of(ws)
            params.update(region=ref.region, owner=spaces.owner(ws), namespace=namespace)
            _team_may(ws)
            if not query.get("dry_run"):
                _own(ws, cluster, bool(query.get("force")))
            home = spaces.asked(ws).home_gib
            return mutations.Impact(f"space {name} of cluster {cluster}", [
                f"Workspace {namespace}/{name} and its editor's pod",
                f"its home volume workspace-{name}-pvc ({home} GiB) and every file on it"])

        return mutations.destroy(SPACE_DELETE, target(cluster, name), params, impact, query)


def _lifecycle(cluster: str, name: str, want: str) -> Any:
    """Stop or start: an operation, or 200 when the space is already so."""
    replayed = mutations.replayed()
    if replayed is not None:
        return replayed
    context.engine().store.ensure_target_free(target(cluster, name))
    ref, _, ws = _existing(cluster, name)
    _team_may(ws)
    _own(ws, cluster)
    desired = words.DESIRED_STOPPED if want == words.STOPPED else words.DESIRED_RUNNING
    state, _ = spaces.state(ws)
    if spaces.desired(ws) == desired and state == want:
        return mutations.no_change(_url(cluster, name), f"space {name!r} is already {state}")
    kind = SPACE_STOP if want == words.STOPPED else SPACE_START
    return mutations.submit(kind, target(cluster, name),
                            {"cluster": cluster, "name": name, "region": ref.region,
                             "namespace": spaces.namespace_of(ws)})


@blp.route("/<string:cluster>/spaces/<string:name>/stop")
class SpaceStop(MethodView):
    @mutations.changing(blp, own_200=(NoChangeSchema, "already stopped: nothing sent"),
                        team_work=True)
    @blp.response(202, MutationReplySchema)
    @blp.alt_response(403, schema=ErrorSchema, description="the space is another token's")
    @blp.doc(operationId="stop_space")
    def post(self, cluster, name):
        """Stop a space: its pod goes (no compute used), its home volume and settings stay;
        start it again with …/start."""
        return _lifecycle(cluster, name, words.STOPPED)


@blp.route("/<string:cluster>/spaces/<string:name>/start")
class SpaceStart(MethodView):
    @mutations.changing(blp, own_200=(NoChangeSchema, "already running: nothing sent"),
                        team_work=True)
    @blp.response(202, MutationReplySchema)
    @blp.alt_response(403, schema=ErrorSchema, description="the space is another token's")
    @blp.doc(operationId="start_space")
    def post(self, cluster, name):
        """Start a stopped space (also one its idle shutdown stopped): the operation ends when
        the editor runs again."""
        return _lifecycle(cluster, name, words.RUNNING)


@blp.route("/<string:cluster>/spaces/<string:name>/sign-in")
class SpaceSignIn(MethodView):
    @access(Role.OPERATOR, team_work=True)
    @blp.response(200, SpaceSignInSchema)
    @blp.alt_response(403, schema=ErrorSchema, description="the space is another token's")
    @blp.alt_response(409, schema=ErrorSchema, description="the space is not running")
    @blp.doc(operationId="sign_in_space")
    def post(self, cluster, name):
        """A one-use code that signs a browser in to the space's editor at hypd's spaces
        router: the dashboard's Open posts it in the new tab. Only the space's owner; good
        once, for 30 seconds; the session it opens is for this space only (12 hours)."""
        ref, _, ws = _existing(cluster, name)
        _team_may(ws)
        _own(ws, cluster)
        state, _ = spaces.state(ws)
        if state != words.RUNNING:
            raise ApiError(409, "conflict", f"space {name!r} of cluster {cluster} is {state}: "
                                            "it opens once it runs (…/start)")
        namespace = spaces.namespace_of(ws)
        door = space_sessions.SpaceDoor(cluster, ref.region, namespace, name,
                                        ws["metadata"]["uid"], auth.current().name)
        url = context.settings().spaces_origin + words.base_path(cluster, namespace, name)
        return {"url": url, "action": url + space_sessions.SESSION_PATH,
                "code": space_sessions.mint_code(context.redis_conn(), door),
                "expires_in_s": space_sessions.CODE_TTL_S}
