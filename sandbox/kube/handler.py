"""The HTTP front of a local Kubernetes: authentication, authorization, then the verb.

One aiohttp request handler per cluster; it serves the API only, as an EKS endpoint does
(no workspace is routed here). Public paths (`/version`, `/healthz`, `/livez`, `/readyz`)
answer anyone, as EKS lets `system:unauthenticated` read them. Everything else needs a
cluster user: a request without a token is `system:anonymous` and gets 403, a token EKS
would not accept (or whose principal no access entry names) gets 401. Then the access
policies decide (403), and the request is served from the store.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
from typing import Any

import yaml
from aiohttp import web

from sandbox.holds import HoldWhen
from sandbox.kube import (
    discovery,
    identity,
    logs,
    patches,
    paths,
    portforward,
    protobuf,
    reviews,
    selectors,
    streams,
    tables,
    validation,
)
from sandbox.kube import token as eks_token
from sandbox.kube.access import Identity
from sandbox.kube.catalog import ResourceType
from sandbox.kube.errors import (
    KubeError,
    bad_request,
    forbidden,
    forbidden_path,
    method_not_allowed,
    no_such_resource,
    unauthorized,
    unsupported_media_type,
)
from sandbox.kube.store import Checks

log = logging.getLogger(__name__)

ANONYMOUS = "system:anonymous"
_PUBLIC = ("/version", "/healthz", "/livez", "/readyz")
_STREAMS = ("exec", "attach", "portforward")
"""A pod's streaming subresources: each needs `create`, however it is asked."""
_SCALABLE = frozenset(
    {
        ("apps", "deployments"),
        ("apps", "statefulsets"),
        ("apps", "replicasets"),
        ("", "replicationcontrollers"),
    }
)
# kinds whose registry returns the deleted object (ReturnDeletedObject), not a Status
_RETURNS_OBJECT_ON_DELETE = frozenset(
    {("", "pods"), ("", "persistentvolumeclaims"), ("", "persistentvolumes")}
)
_VERB_BY_METHOD = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
_WRITES = frozenset({"create", "update", "patch", "delete", "deletecollection"})
# an injected fault's answer per fault kind (sandbox.faults): code, reason, message
_FAULT_ANSWERS = {
    "throttle": (429, "TooManyRequests", "Too many requests, please try again later."),
    "server_error": (500, "InternalError", "Internal error occurred: injected by the sandbox"),
    "timeout": (504, "Timeout", "the server was unable to return a response in the time "
                                "allotted, but may still be processing the request"),
    "error": (400, "BadRequest", "injected error"),
}


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(
        status=status, body=json.dumps(body).encode(), content_type="application/json"
    )


def _warned(response: web.Response, checks: Checks) -> web.Response:
    """The write's warnings as the API server sends them: one `Warning: 299 - "..."` header
    each (the kubernetes client logs them; kubectl prints them)."""
    for text in checks.warnings:
        response.headers.add("Warning", f"299 - {json.dumps(text)}")
    return response


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _yaml_or_json(raw: bytes) -> Any:
    """A YAML body (an apply patch): JSON first, since JSON is YAML and clients mostly send
    it, and a 1.3 MB CRD (KubeRay's RayJob) takes 3 s with PyYAML's pure-Python loader and
    0.02 s with json; then libyaml's loader when PyYAML has it."""
    try:
        return json.loads(raw)
    except ValueError:
        return yaml.load(raw, Loader=_YAML_LOADER)


def _rfc3339(value: str) -> datetime.datetime:
    """A `sinceTime` (RFC 3339, fractional seconds allowed, as the API server parses it)."""
    parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        raise ValueError(f"sinceTime {value!r} has no time zone")
    return parsed


def _flag(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1")


class KubeHandler:
    def __init__(self, kube: Any) -> None:
        self.kube = kube  # sandbox.kube.registry.LocalKube

    async def __call__(self, request: web.BaseRequest) -> web.StreamResponse:
        try:
            return await self._handle(request)
        except KubeError as exc:
            return _json(exc.status(), exc.code)
        except Exception as exc:  # a sandbox bug: answer as the API server does to its own
            log.exception("local kubernetes %s failed", self.kube.name)
            err = KubeError(500, "InternalError", f"sandbox error: {type(exc).__name__}: {exc}")
            return _json(err.status(), 500)

    # --- authentication ---------------------------------------------------------------

    def _authenticate(self, request: web.BaseRequest) -> Identity | None:
        header = request.headers.get("Authorization", "")
        if not header:
            return None
        scheme, _, credential = header.partition(" ")
        if scheme.lower() != "bearer" or not credential.strip():
            raise unauthorized()
        try:
            caller = eks_token.verify(credential.strip(), self.kube.name, identity.secret_for)
        except eks_token.TokenError as exc:
            log.info("local kubernetes %s: token refused: %s", self.kube.name, exc)
            raise unauthorized() from exc
        arn = identity.caller_arn(caller.access_key, caller.region)
        principal = identity.principal_arn(arn)
        aws_auth = None
        if self.kube.access.mode != "API":
            try:
                aws_auth = self.kube.store.get(self.kube.configmaps, "kube-system", "aws-auth")
            except KubeError:
                aws_auth = None
        found = self.kube.access.authenticate(principal, arn, aws_auth)
        if found is None:
            log.info("local kubernetes %s: %s has no access entry", self.kube.name, principal)
            raise unauthorized()
        return found

    def _authorize(
        self,
        who: Identity | None,
        verb: str,
        rt: ResourceType,
        namespace: str | None,
        name: str | None,
    ) -> None:
        user = who.user if who else ANONYMOUS
        if who is None or not self.kube.access.authorize(
            who, verb, rt.group, rt.plural, namespace, rt.namespaced
        ):
            raise forbidden(user, verb, rt.plural, rt.group, namespace, name)

    # --- routing ----------------------------------------------------------------------

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        path = "/" + request.path.strip("/")
        if path in _PUBLIC or path.startswith(tuple(p + "/" for p in _PUBLIC[1:])):
            if path == "/version":
                return _json(discovery.version(self.kube.kubernetes_version))
            return web.Response(text="ok", content_type="text/plain")
        who = self._authenticate(request)
        target = paths.parse(path)
        if target is None:
            if who is None:
                raise forbidden_path(ANONYMOUS, request.method.lower(), path)
            return self._discovery(request, path)
        return await self._resource(request, target, who)

    def _discovery(self, request: web.BaseRequest, path: str) -> web.Response:
        if request.method != "GET":
            raise method_not_allowed(request.method, path)
        parts = [p for p in path.split("/") if p]
        catalog = self.kube.catalog
        if not parts:
            return _json(discovery.root_paths(catalog))
        if parts == ["api"]:
            return _json(discovery.core_versions())
        if parts == ["apis"]:
            return _json(discovery.group_list(catalog))
        if len(parts) == 2 and parts[0] == "api":
            return _json(discovery.resource_list(catalog, "", parts[1]))
        if len(parts) == 2 and parts[0] == "apis":
            return _json(discovery.group(catalog, parts[1]))
        if len(parts) == 3 and parts[0] == "apis":
            return _json(discovery.resource_list(catalog, parts[1], parts[2]))
        raise no_such_resource()

    async def _resource(
        self, request: web.BaseRequest, t: paths.Target, who: Identity | None
    ) -> web.StreamResponse:
        rt = self.kube.catalog.lookup(t.group, t.version, t.plural)
        if rt is None or (not rt.namespaced and t.namespace is not None):
            raise no_such_resource()
        query = request.query
        method = request.method
        namespace = t.namespace if rt.namespaced else None
        if method == "GET":
            watching = _flag(query.get("watch"))
            verb = "watch" if watching else ("get" if t.name else "list")
        elif t.name is None and method == "DELETE":
            verb = "deletecollection"
        elif method in _VERB_BY_METHOD:
            verb = _VERB_BY_METHOD[method]
        else:
            raise method_not_allowed(method, rt.plural)
        if rt.namespaced and namespace is None and verb not in ("list", "watch"):
            raise no_such_resource()
        if t.name is None and verb not in ("list", "watch", "create", "deletecollection"):
            raise method_not_allowed(method, rt.plural)
        if t.name is not None and verb == "create" and not t.subresource:
            raise method_not_allowed(method, rt.plural)
        if verb == "create" and (rt.group, rt.plural) in reviews.SELF_REVIEWS:
            if who is None or t.subresource:
                raise forbidden(ANONYMOUS, verb, rt.plural, rt.group, namespace, t.name)
            body = await self._review_body(request)
            return _json(reviews.answer((rt.group, rt.plural), body, who, self.kube.catalog), 201)
        if rt.plural == "pods" and t.subresource in _STREAMS:
            verb = "create"  # a WebSocket GET too (AuthorizePodWebsocketUpgradeCreatePermission)
        self._authorize(who, verb, rt, namespace, t.name)

        if t.subresource and t.subresource != "status":
            return await self._subresource(request, rt, namespace, t, verb)
        if verb not in _WRITES:
            return await self._verb(request, rt, namespace, t, verb)
        action = f"{verb} {rt.plural}"
        resource = f"{rt.group}/{rt.plural}" if rt.group else rt.plural
        if await self._hold(action, HoldWhen.BEFORE):  # parked on arrival, then dropped
            err = KubeError(503, "ServiceUnavailable", "dropped at a fault point before the "
                                                       "API server saw it")
            self._record_write(verb, resource, namespace, await self._named(request, t),
                               err.code, None, "dropped")
            raise err
        fault = self.kube.faults.take("kubernetes", action) if self.kube.faults else None
        if fault is not None:
            err = await self._fault(fault)
            self._record_write(verb, resource, namespace, await self._named(request, t),
                               err.code, None, fault.kind)
            raise err
        try:
            answer = await self._verb(request, rt, namespace, t, verb)
        except KubeError as exc:
            self._record_write(verb, resource, namespace, await self._named(request, t),
                               exc.code, None, dry_run=request.query.get("dryRun") == "All")
            raise
        made = None
        if answer.status == 201 and request.query.get("dryRun") != "All":
            made = (json.loads(answer.body or b"{}").get("metadata") or {})
        self._record_write(verb, resource, namespace,
                           (made or {}).get("name") or await self._named(request, t),
                           answer.status, made, dry_run=request.query.get("dryRun") == "All")
        await self._hold(action, HoldWhen.AFTER)
        return answer

    async def _hold(self, action: str, when: HoldWhen) -> bool:
        """Keep a write back at an armed fault point: before the store saw it, or its
        answer after the store took it. True when it was let go by a drop."""
        holds = self.kube.holds
        hold = holds.take("kubernetes", action, when) if holds is not None else None
        if hold is None:
            return False
        return await asyncio.get_running_loop().run_in_executor(None, holds.park, hold, 0)

    async def _fault(self, fault: Any) -> KubeError:
        """What the API server answers under an injected fault (the store never sees the
        write): 429 when throttled (API Priority and Fairness), 500, 504 after a stall, or
        400."""
        if fault.kind == "timeout":
            await asyncio.get_running_loop().run_in_executor(
                None, self.kube.faults.stall, fault.seconds)
        code, reason, message = _FAULT_ANSWERS[fault.kind]
        return KubeError(fault.status or code, fault.code or reason, fault.message or message,
                         {"retryAfterSeconds": 1} if fault.kind == "throttle" else None)

    @staticmethod
    async def _named(request: web.BaseRequest, t: paths.Target) -> str | None:
        """The object a write names: in its path, or (a create) in its JSON body."""
        if t.name is not None:
            return t.name
        try:
            body = json.loads(await request.read() or b"{}")
        except ValueError:
            return None
        return ((body.get("metadata") or {}).get("name")
                if isinstance(body, dict) else None)

    def _record_write(self, verb: str, resource: str, namespace: str | None, name: str | None,
                      status: int, made: dict[str, Any] | None,
                      fault: str | None = None, dry_run: bool = False) -> None:
        if self.kube.writes is not None:
            self.kube.writes.record(self.kube.name, verb, resource,
                                    (made or {}).get("namespace") or namespace, name, status,
                                    made is not None, fault, dry_run)

    async def _verb(self, request: web.BaseRequest, rt: ResourceType, namespace: str | None,
                    t: paths.Target, verb: str) -> web.StreamResponse:
        query = request.query
        if t.subresource == "status" and "status" not in rt.subresources:
            raise no_such_resource()
        store = self.kube.store
        manager = self._manager(request)
        dry_run = query.get("dryRun") == "All"
        if query.get("dryRun") not in (None, "", "All"):
            raise bad_request(f'unsupported dryRun value "{query.get("dryRun")}"')

        printer = self._printer(request, rt) if verb in ("list", "watch", "get") else None
        if verb in ("list", "watch"):
            match = selectors.matcher(
                selectors.parse_labels(query.get("labelSelector")),
                selectors.parse_fields(query.get("fieldSelector"), rt.group, rt.plural),
            )
            if verb == "watch":
                render = printer.event if printer else None
                return await streams.watch(request, self.kube, rt, namespace, t.name, match, render)
            return self._list(rt, namespace, match, query, printer)
        if verb == "get":
            obj = store.get(rt, namespace, t.name or "")
            return _json(printer.one(obj) if printer else obj)
        checks = Checks(validation.field_validation(query.get("fieldValidation")))
        if verb == "create":
            body = await self._body(request)
            created = store.create(rt, namespace, body, manager, dry_run, checks)
            return _warned(_json(created, 201), checks)
        if verb == "update":
            body = await self._body(request)
            return _warned(_json(store.replace(
                rt, namespace, t.name or "", body, manager, t.subresource, dry_run, checks
            )), checks)
        if verb == "patch":
            return _warned(await self._patch(request, rt, namespace, t, manager, dry_run, checks),
                           checks)
        if verb == "delete":
            return await self._delete(request, rt, namespace, t.name or "", dry_run)
        match = selectors.matcher(
            selectors.parse_labels(query.get("labelSelector")),
            selectors.parse_fields(query.get("fieldSelector"), rt.group, rt.plural),
        )
        items = store.delete_collection(rt, namespace, match, query.get("propagationPolicy"))
        return _json(self._list_body(rt, items, store.current_rv(), None, 0))

    # --- verbs ------------------------------------------------------------------------

    @staticmethod
    def _manager(request: web.BaseRequest) -> str:
        manager = request.query.get("fieldManager")
        if manager is not None:
            if len(manager) > 128:
                raise KubeError(
                    422, "Invalid", "fieldManager: Too long: may not be more than 128 bytes"
                )
            return manager
        agent = request.headers.get("User-Agent", "")
        return agent.split("/", 1)[0].strip() or "unknown"

    @staticmethod
    async def _body(request: web.BaseRequest, yaml_ok: bool = False) -> Any:
        raw = await request.read()
        if not raw:
            raise bad_request("the request body is empty")
        content_type = request.headers.get("Content-Type", "application/json").split(";")[0]
        try:
            if yaml_ok or "yaml" in content_type:
                return _yaml_or_json(raw)
            return json.loads(raw)
        except (ValueError, yaml.YAMLError) as exc:
            raise bad_request(f"the body of the request could not be decoded: {exc}") from exc

    @classmethod
    async def _review_body(cls, request: web.BaseRequest) -> Any:
        """A self review's body: JSON, or protobuf as kubectl's typed clients send it."""
        content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
        if content_type != protobuf.MEDIA_TYPE:
            return await cls._body(request)
        try:
            body = protobuf.object_from(await request.read())
        except protobuf.ProtobufError as exc:
            raise bad_request(f"the body of the request could not be decoded: {exc}") from exc
        if body is None:
            raise unsupported_media_type(content_type, ["application/json"])
        return body

    @staticmethod
    def _list_body(
        rt: ResourceType, items: list[dict[str, Any]], rv: str, token: str | None, remaining: int
    ) -> dict[str, Any]:
        meta: dict[str, Any] = {"resourceVersion": rv}
        if token:
            meta["continue"] = token
            meta["remainingItemCount"] = remaining
        return {
            "apiVersion": rt.api_version,
            "kind": f"{rt.kind}List",
            "metadata": meta,
            "items": items,
        }

    def _printer(self, request: web.BaseRequest, rt: ResourceType) -> tables.Printer | None:
        """A Table (or partial metadata) printer when `Accept` asks for one."""
        wanted = tables.negotiate(request.headers.get("Accept", ""))
        if wanted is None:
            return None
        crd = None
        if rt.crd is not None:
            crd_type = self.kube.catalog.lookup(
                "apiextensions.k8s.io", "v1", "customresourcedefinitions"
            )
            try:
                crd = self.kube.store.get(crd_type, None, rt.crd) if crd_type else None
            except KubeError:
                crd = None
        return tables.Printer(rt, wanted, request.query.get("includeObject"), crd)

    def _list(
        self,
        rt: ResourceType,
        namespace: str | None,
        match: Any,
        query: Any,
        printer: tables.Printer | None = None,
    ) -> web.Response:
        limit = None
        if query.get("limit"):
            try:
                limit = int(query["limit"])
            except ValueError as exc:
                raise bad_request("limit must be an integer") from exc
        items, rv, token, remaining = self.kube.store.list(
            rt, namespace, match, limit if limit and limit > 0 else None, query.get("continue")
        )
        body = self._list_body(rt, items, rv, token, remaining)
        return _json(printer.list(items, body["metadata"]) if printer else body)

    async def _patch(
        self,
        request: web.BaseRequest,
        rt: ResourceType,
        namespace: str | None,
        t: paths.Target,
        manager: str,
        dry_run: bool,
        checks: Checks,
    ) -> web.Response:
        content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
        if content_type not in patches.PATCH_TYPES:
            raise unsupported_media_type(content_type, list(patches.PATCH_TYPES))
        force = _flag(request.query.get("force"))
        if content_type == patches.APPLY_PATCH:
            if not request.query.get("fieldManager"):
                raise KubeError(
                    422,
                    "Invalid",
                    'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is '
                    "required for apply patch",
                )
        elif "force" in request.query:
            raise KubeError(
                422,
                "Invalid",
                'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be '
                "specified for non-apply patch",
            )
        body = await self._body(request, yaml_ok=content_type == patches.APPLY_PATCH)
        obj, created = self.kube.store.patch(
            rt, namespace, t.name or "", content_type, body, manager, force, t.subresource, dry_run,
            checks,
        )
        return _json(obj, 201 if created else 200)

    async def _delete(
        self,
        request: web.BaseRequest,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        dry_run: bool,
    ) -> web.Response:
        options: dict[str, Any] = {}
        raw = await request.read()
        if raw:
            try:
                options = json.loads(raw) or {}
            except ValueError as exc:
                raise bad_request(f"the DeleteOptions could not be decoded: {exc}") from exc
        propagation = request.query.get("propagationPolicy") or options.get("propagationPolicy")
        if dry_run or (options.get("dryRun") or []) == ["All"]:
            dry_run = True
        last, removed = self.kube.store.delete(
            rt, namespace, name, propagation, options.get("preconditions"), dry_run
        )
        if not removed:
            return _json(last, 202 if not dry_run else 200)
        if rt.crd is not None or (rt.group, rt.plural) in _RETURNS_OBJECT_ON_DELETE:
            return _json(last)
        details: dict[str, Any] = {
            "name": name,
            "kind": rt.plural,
            "uid": last["metadata"].get("uid"),
        }
        if rt.group:
            details["group"] = rt.group
        return _json(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "details": details,
            }
        )

    # --- subresources -----------------------------------------------------------------

    async def _subresource(
        self,
        request: web.BaseRequest,
        rt: ResourceType,
        namespace: str | None,
        t: paths.Target,
        verb: str,
    ) -> web.StreamResponse:
        sub = t.subresource or ""
        pod = (rt.group, rt.plural) == ("", "pods")
        if pod and sub == "log" and verb == "get":
            return await self._log(request, rt, namespace or "", t.name or "")
        if pod and sub == "eviction" and verb == "create":
            self.kube.store.delete(rt, namespace, t.name or "")
            return _json(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "code": 201,
                },
                201,
            )
        if pod and sub == "portforward" and portforward.is_upgrade(request) \
                and self.kube.pod_port is not None:
            found = self.kube.store.get(rt, namespace, t.name or "")
            phase = (found.get("status") or {}).get("phase")
            if phase != "Running":
                raise bad_request(f"pod {t.name} is not running (phase {phase}): "
                                  "unable to upgrade connection")
            return await portforward.serve(
                request, found, lambda port: self.kube.pod_port(found, port))
        if pod and sub in _STREAMS:
            raise bad_request("Upgrade request required")
        if (
            sub == "scale"
            and (rt.group, rt.plural) in _SCALABLE
            and verb in ("get", "update", "patch")
        ):
            return await self._scale(request, rt, namespace, t.name or "", verb)
        if (sub == "proxy" or sub.startswith("proxy/")) and (rt.group, rt.plural) == (
                "", "services") and self.kube.service_proxy is not None:
            status, content_type, body = self.kube.service_proxy(
                namespace or "default", t.name or "", sub[len("proxy"):] or "/",
                request.method, await request.read(), dict(request.headers))
            return web.Response(status=status, body=body, content_type=content_type)
        if sub in ("proxy",) or sub.startswith("proxy/"):
            raise KubeError(503, "ServiceUnavailable", "the sandbox runs no containers to proxy to")
        raise no_such_resource()

    async def _log(
        self, request: web.BaseRequest, rt: ResourceType, namespace: str, name: str
    ) -> web.StreamResponse:
        query = request.query
        pod = self.kube.store.get(rt, namespace, name)
        spec = pod.get("spec") or {}
        containers = [c.get("name") for c in spec.get("containers") or []]
        container = query.get("container")
        if not container:
            if len(containers) != 1:
                raise bad_request(
                    f"a container name must be specified for pod {name}, choose one of: "
                    f"[{' '.join(str(c) for c in containers)}]"
                )
            container = str(containers[0])
        elif container not in containers and container not in [
            c.get("name") for c in spec.get("initContainers") or []
        ]:
            raise bad_request(f"container {container} is not valid for pod {name}")
        previous = _flag(query.get("previous"))
        instance = self.kube.logs.instance(namespace, name, container, previous)
        if previous and instance is None:
            raise bad_request(
                f'previous terminated container "{container}" in pod "{name}" not found'
            )
        lines = self.kube.logs.read(namespace, name, container, instance)
        phase = (pod.get("status") or {}).get("phase", "Pending")
        if phase == "Pending" and not lines:
            raise bad_request(
                f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating'
            )
        try:
            tail = int(query["tailLines"]) if "tailLines" in query else None
            limit = int(query["limitBytes"]) if "limitBytes" in query else None
            since = (
                datetime.datetime.now(datetime.UTC)
                - datetime.timedelta(seconds=int(query["sinceSeconds"]))
                if "sinceSeconds" in query
                else _rfc3339(query["sinceTime"])
                if "sinceTime" in query
                else None
            )
        except ValueError as exc:
            raise bad_request(f"invalid log options: {exc}") from exc
        timestamps = _flag(query.get("timestamps"))
        if _flag(query.get("follow")) and not previous:
            return await streams.follow_log(
                request, self.kube, rt, namespace, name, container, timestamps, tail, since,
                instance,
            )
        return web.Response(
            body=logs.render(lines, timestamps, tail, since, limit), content_type="text/plain"
        )

    async def _scale(
        self,
        request: web.BaseRequest,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        verb: str,
    ) -> web.Response:
        store = self.kube.store
        obj = store.get(rt, namespace, name)
        if verb != "get":
            scale = self._scale_of(obj)
            body = await self._body(request)
            if verb == "update":
                wanted = body
            else:
                content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
                if content_type == patches.JSON_PATCH:
                    wanted = patches.json_patch(scale, body)
                else:
                    wanted = patches.merge_patch(scale, patches.strip_directives(body))
            replicas = ((wanted or {}).get("spec") or {}).get("replicas")
            if not isinstance(replicas, int) or replicas < 0:
                raise KubeError(
                    422,
                    "Invalid",
                    f'Scale.autoscaling "{name}" is invalid: spec.replicas: Invalid value',
                )
            obj, _ = store.patch(
                rt,
                namespace,
                name,
                patches.MERGE_PATCH,
                {"spec": {"replicas": replicas}},
                self._manager(request),
            )
        return _json(self._scale_of(obj))

    @staticmethod
    def _scale_of(obj: dict[str, Any]) -> dict[str, Any]:
        md = obj.get("metadata") or {}
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        labels = ((spec.get("selector") or {}).get("matchLabels")) or {}
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                k: md[k]
                for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                if k in md
            },
            "spec": {"replicas": spec.get("replicas", 1)},
            "status": {
                "replicas": status.get("replicas", 0),
                "selector": ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
            },
        }
