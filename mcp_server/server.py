"""The hypd MCP server: each row of `mcp_server/tools.py` becomes a tool that calls the REST API.

Two ways to run it (`hypd mcp` calls `run()` or `main()`):
- stdio (Kiro CLI, Claude Code, ...): one token from `HYPD_TOKEN`; at start the server asks
  `GET /api/v1/auth/whoami` who that is, and a viewer token (or `--read-only`) publishes only
  the read-only tools.
- streamable HTTP (`--http`, default 127.0.0.1:3098, path `/mcp`): every request must carry
  `Authorization: Bearer <token>` (401 without one, or with one the API refuses). The token is
  forwarded to the REST API; the request is served by the server built for that token's role
  (operator: every tool, viewer: the read-only ones, a team member's operator token: those and
  the changes of its team's work), so a viewer neither sees nor can call a mutating tool.
  whoami answers are cached 30 s per token. Sessions are stateless, so any number of replicas
  can run behind a load balancer.

The server imports nothing else of hypd: it speaks HTTP only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import sys
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AsyncExitStack
from typing import Any

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ConfigDict, Field, create_model
from starlette.authentication import AuthCredentials

from mcp_server.arguments import ArgumentCheck, summary
from mcp_server.client import ApiClient, ApiError, ApiResponse, openapi_sync, whoami_sync
from mcp_server.idempotency import IdempotencyKeys, headers_for, principal_of
from mcp_server.routemap import ROUTES
from mcp_server.routes import MEMBER, RouteBook, session_role
from mcp_server.tools import (
    IDEMPOTENCY_KEY,
    TOOLS_BY_NAME,
    WAIT_DEFAULT_SECONDS,
    WAIT_MAX_SECONDS,
    BoundTool,
    ToolSpec,
    bind,
    published,
)
from mcp_server.toolsets import TOOLSET_OF, UnknownToolset, help_text, tools_of
from mcp_server.toolsets import parse as parse_toolsets
from vocabulary.operations import OpStatus
from vocabulary.roles import Role

log = logging.getLogger("hypd.mcp")

DEFAULT_API_URL = "http://127.0.0.1:3099"
DEFAULT_HTTP_HOST = "127.0.0.1"
DEFAULT_HTTP_PORT = 3098
HTTP_PATH = "/mcp"
WHOAMI_CACHE_S = 30.0
DEFAULT_POLL_AFTER_S = 5
OPERATOR = Role.OPERATOR.value
VIEWER = Role.VIEWER.value

INSTRUCTIONS = """\
hypd is a control panel for ML clusters on AWS (EKS + SageMaker HyperPod). These tools call \
its REST API with your token, so they have exactly the panel's validation and permissions.
- Look first: list what exists (list_clusters, list_networks, list_operations) and query zones \
and instance types before proposing choices. Ask the user only decisions (availability zone, \
instance type, count, capacity type); CIDRs, route tables and security groups are the panel's job.
- Something wrong (a failed create, an unhealthy node, NCCL errors)? diagnose_cluster reads and \
changes nothing: present its findings and evidence, then its suggestions in their order \
(investigate, reboot, replace); run a change only when the user agrees.
- Every change returns an operation and names its status tool (status_tool, status_args). \
Follow it with wait_operation until its status is succeeded, failed or cancelled, and report \
that outcome, not the submission.
- Errors read `<code>: <message>`; the message states the cause. A conflict names the \
operation that holds the target: wait for it rather than retrying at once. exceeds_capacity: \
the request can never fit, its details give the numbers: propose less (or more capacity), \
never resend it unchanged. precondition_failed: a quota, reservation or feature is missing: \
report it and stop.
- A change already as asked answers changed: false with status_tool null: nothing to follow.
- Every mutating tool takes dry_run=true: the operation rehearsed (its steps, the AWS and \
Kubernetes calls each would make, what exists and would be adopted, would_fail), nothing \
recorded or changed. Show it when the user asks what a change would do.
- Prices: an unknown price stays unknown; say so, never fill in a figure.
- Deletes, detaches, removals and turning a feature off read what depends on the target \
first: refused, the error is in_use and details.dependents names each (kind, name, \
namespace, why); nothing was done. Tell the user what would break. dry_run=true answers \
what would be removed and what would break, changing nothing: call it first. force=true \
goes ahead and breaks them: the user's decision, asked after showing them, never yours.
- Leave idempotency_key unset: the server derives one from the tool and arguments that \
stays the same for 10 minutes, so repeating a call (after a lost reply) returns the same \
operation instead of starting a second. Pass a new value (1-255 characters) only to repeat a \
change on purpose within 10 minutes (re-creating something you deleted).
- Arguments: only those a tool's schema names; a `name` follows its pattern (lowercase \
letters, digits and hyphens, starting with a letter, not ending with a hyphen, at most 32); \
`cluster` and other path arguments name what list tools show; region unset is the panel's."""

TERMINAL = OpStatus.finished()


# --- argument models ---------------------------------------------------------------------------


class _Arguments(ArgModelBase):
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")


def _argument_model(tool: BoundTool) -> type[ArgModelBase]:
    """The SDK wants a pydantic model for a tool's arguments; it only refuses names the tool
    does not have. Values are checked against the published schema (the API's own, see
    mcp_server/arguments.py), with the API's error code, not pydantic's types."""
    fields: dict[str, Any] = {name: (Any, Field(None))
                              for name in tool.input_schema()["properties"]}
    return create_model(f"{tool.spec.name}_arguments", __base__=_Arguments, **fields)


# --- results -----------------------------------------------------------------------------------


def _ok(data: dict[str, Any]) -> CallToolResult:
    text = json.dumps(data, ensure_ascii=False, default=str)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _error(err: ApiError) -> CallToolResult:
    """A tool error that keeps the REST code and message: `conflict: <message>`, then the
    envelope (code, message, details) as JSON, also in `_meta.hypd.error`. It carries no
    structured content: that is the reply's, and its output schema is the reply's shape
    (a client validating one against the other must not meet the error envelope there)."""
    content = [TextContent(type="text", text=err.text),
               TextContent(type="text", text=json.dumps(err.envelope(), default=str))]
    return CallToolResult(content=content, is_error=True,
                          meta={"hypd": {"error": err.envelope()["error"]}})


def _dig(data: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def _retry_after(headers: dict[str, str]) -> int | None:
    value = {k.lower(): v for k, v in headers.items()}.get("retry-after")
    try:
        return max(0, int(value)) if value is not None else None
    except ValueError:
        return None


def _reply(body: Any) -> dict[str, Any]:
    """A REST reply as a tool's result: an object, whose routes name their tools too."""
    return ROUTES.translate(dict(body) if isinstance(body, dict) else {"result": body})


def _mutation_reply(spec: ToolSpec, resp: ApiResponse) -> dict[str, Any]:
    """The REST reply, with status_tool/status_args/poll_after_seconds always present: the
    tool its status_route maps to, else (a change made at once) the row's status tool."""
    out = _reply(resp.body)
    # An operation is followed with its status tool; a synchronous change (import, active
    # cluster) is confirmed with the read tool its row names; a dry run changed nothing.
    synchronous = spec.status_tool not in (None, "wait_operation")
    follow = (isinstance(out.get("operation"), dict) or synchronous) and (
        out.get("changed") is not False) and out.get("dry_run") is not True
    if "status_tool" not in out:
        out["status_tool"] = spec.status_tool if follow else None
    if "status_args" not in out:
        args = {k: _dig(out, path) for k, path in spec.status_args_from.items()}
        out["status_args"] = args if out["status_tool"] and all(args.values()) else {}
    if "poll_after_seconds" not in out:
        retry_after = _retry_after(resp.headers)
        out["poll_after_seconds"] = (
            retry_after if retry_after is not None
            else (DEFAULT_POLL_AFTER_S if out["status_tool"] else 0)
        )
    return out


# --- one REST call per tool --------------------------------------------------------------------


def _split(tool: BoundTool, args: dict[str, Any]
           ) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """Each argument where the route's document says it goes."""
    spec = tool.spec
    path, query, body = spec.path, dict(spec.fixed_query), {}
    for param in tool.params:
        value = args.get(param.name)
        if value is None:
            continue
        if param.location == "path":
            path = path.replace("{" + param.name + "}",
                                urllib.parse.quote(str(value), safe=""))
        elif param.location == "query":
            query[param.name] = _query_value(value)
        else:
            body[param.name] = value
    return path, query, body


def _query_value(value: Any) -> Any:
    """Booleans as the API's query parser reads them (`true`/`false`), not Python's."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


async def _call_rest(tool: BoundTool, args: dict[str, Any], api: ApiClient,
                     keys: IdempotencyKeys) -> dict[str, Any]:
    spec = tool.spec
    path, query, body = _split(tool, args)
    send_body = body if spec.method in ("POST", "PUT", "PATCH") else None
    if not spec.mutating:
        resp = await api.request(spec.method, path, params=query, json_body=send_body)
        return _reply(resp.body)
    if args.get("dry_run") is True:
        # a plan records nothing: no key to derive or remember, no earlier call to replay
        resp = await api.request(spec.method, path, params=query, json_body=send_body)
        return _mutation_reply(spec, resp)

    explicit = args.get(IDEMPOTENCY_KEY)
    principal = principal_of(api.token)
    if explicit:
        key, replayed = explicit, False
    else:
        key, replayed = keys.key_for(principal, spec.name, args)
    resp = await api.request(spec.method, path, params=query, json_body=send_body,
                             headers=headers_for(key, derived=not explicit))
    if not explicit:
        keys.accepted(principal, spec.name, args, key)
    out = _mutation_reply(spec, resp)
    out["idempotency_key"] = key
    if replayed:
        out["replayed"] = True
        out["note"] = (
            "This call repeats one this server already sent with the same arguments in the "
            "last 10 minutes, so the API answered with that earlier request's operation "
            "instead of starting another. If you meant to make the change again, call "
            "again with a new idempotency_key."
        )
    return out


async def _wait_operation(args: dict[str, Any], api: ApiClient) -> dict[str, Any]:
    """Long-poll `GET /api/v1/operations/<id>?wait=N` until terminal or the timeout."""
    op_id = args["operation_id"]
    timeout = min(float(args.get("timeout_seconds") or WAIT_DEFAULT_SECONDS), WAIT_MAX_SECONDS)
    path = "/api/v1/operations/" + urllib.parse.quote(str(op_id), safe="")
    start = time.monotonic()
    deadline = start + timeout
    op = (await api.request("GET", path)).body
    while op.get("status") not in TERMINAL:
        remaining = deadline - time.monotonic()
        if remaining < 0.2:
            break
        wait = round(min(WAIT_MAX_SECONDS, remaining), 1)  # the API takes fractions of seconds
        params: dict[str, Any] = {"wait": wait}
        if op.get("last_event_id"):
            params["after"] = op["last_event_id"]
        asked = time.monotonic()
        new = (await api.request("GET", path, params=params, timeout=wait + 15)).body
        unchanged = (new.get("status"), new.get("last_event_id"), new.get("updated_at")) == (
            op.get("status"), op.get("last_event_id"), op.get("updated_at"))
        op = new
        if unchanged and time.monotonic() - asked < 0.2:
            # The API answered at once without news (it should have held the request):
            # pace the loop instead of spinning against it.
            await anyio.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
    status = op.get("status")
    out: dict[str, Any] = {
        "operation": op,
        "status": status,
        "terminal": status in TERMINAL,
        "waited_seconds": round(time.monotonic() - start, 1),
    }
    if status not in TERMINAL:
        out.update(
            status_tool="wait_operation",
            status_args={"operation_id": op_id},
            poll_after_seconds=0,
            note=f"Still {status} after {out['waited_seconds']} s: call wait_operation again.",
        )
    return out


# --- building the server -----------------------------------------------------------------------


def _caller_token(ctx: Context) -> str | None:
    """The bearer token of the HTTP request this tool call arrived on (HTTP mode)."""
    try:
        request = ctx.request_context.request
    except ValueError:
        return None
    scope = getattr(request, "scope", None) or {}
    user = scope.get("user")
    if isinstance(user, AuthenticatedUser):
        return user.access_token.token
    return None


Runner = Callable[[dict[str, Any], ApiClient], Awaitable[dict[str, Any]]]
_RUNNERS: dict[str, Runner] = {"wait_operation": _wait_operation}


def _make_tool(tool: BoundTool, api_url: str, token: str | None,
               keys: IdempotencyKeys) -> Tool:
    spec = tool.spec
    runner = _RUNNERS[spec.runner] if spec.runner else None

    async def call(ctx: Context, **kwargs: Any) -> CallToolResult:
        # the arguments were checked against the schema by _RoleServer.call_tool
        args = {k: v for k, v in kwargs.items() if v is not None}
        api = ApiClient(api_url, token or _caller_token(ctx))
        if not api.token:
            return _error(ApiError("unauthorized", "no bearer token to call the hypd API with"))
        try:
            if runner is not None:
                return _ok(await runner(args, api))
            return _ok(await _call_rest(tool, args, api, keys))
        except ApiError as err:
            return _error(err)

    call.__name__ = spec.name
    return Tool(
        fn=call,
        name=spec.name,
        description=spec.description,
        parameters=tool.input_schema(),
        fn_metadata=FuncMetadata(arg_model=_argument_model(tool),
                                 output_schema=tool.published_output_schema()),
        is_async=True,
        context_kwarg="ctx",
        annotations=_annotations(spec),
    )


def _annotations(spec: ToolSpec) -> ToolAnnotations:
    """The hints a client acts on, without what the specification already presumes (the
    title is the tool's own; openWorldHint defaults to true, readOnlyHint to false; a read's
    destructive and idempotent hints mean nothing). destructiveHint is said both ways,
    though true is its default: a client that does not apply the default still sees which
    changes destroy. A mutation is idempotent: repeated, its derived Idempotency-Key answers
    the first call's operation."""
    if spec.read_only:
        return ToolAnnotations(read_only_hint=True)
    return ToolAnnotations(destructive_hint=spec.destructive, idempotent_hint=True)


class _RoleServer(MCPServer):
    """Answers a call to a tool this role may not use the way the REST API would (403
    `forbidden`), instead of the SDK's bare "Unknown tool"; and checks a call's arguments
    against the tool's published schema before the SDK's own model does, so any argument
    the schema refuses (an unknown name too) is `validation_failed` naming each field."""

    def __init__(self, *args: Any, tools: list[Tool], toolsets: frozenset[str],
                 checks: dict[str, dict[str, Any]], role: str = OPERATOR,
                 **kwargs: Any) -> None:
        super().__init__(*args, tools=tools, **kwargs)
        self._role = role
        self._published = frozenset(tool.name for tool in tools)
        self._toolsets = toolsets
        # the published schema's rules, in the document's words (a refused name quotes the
        # name rule, which tools/list leaves to the pattern)
        self._checks = {name: ArgumentCheck(schema) for name, schema in checks.items()}

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context | None = None) -> Any:
        if name in TOOLS_BY_NAME and name not in self._published:
            toolset = TOOLSET_OF.get(name)
            if toolset not in self._toolsets:
                return _error(ApiError("not_found", (
                    f"{name} is in the {toolset} toolset, which this session does not "
                    f"publish; start hypd mcp with --toolsets "
                    f"{','.join(sorted(self._toolsets | {str(toolset)}))}"),
                    {"toolset": toolset}, 404))
            if self._role == MEMBER:
                return _error(ApiError("forbidden", (
                    f"{name} changes more than a team's work, and this session's token is "
                    "a team member's: use an operator token outside any team")))
            return _error(ApiError("forbidden", (
                f"{name} changes things and this session may only read "
                "(a viewer token or --read-only); use an operator token")))
        check = self._checks.get(name)
        if check is not None:
            given = {k: v for k, v in (arguments or {}).items() if v is not None}
            problems = check.problems(given)
            if problems:
                return _error(ApiError("validation_failed", summary(problems),
                                       {"fields": problems}))
        return await super().call_tool(name, arguments, context)


def load_routes(api_url: str) -> RouteBook:
    """The API's own OpenAPI document: the rulebook for every tool's inputs and role."""
    return RouteBook(openapi_sync(api_url))


def build_server(api_url: str = DEFAULT_API_URL, token: str | None = None,
                 read_only: bool = False, *, role: str | None = None,
                 keys: IdempotencyKeys | None = None,
                 routes: RouteBook | None = None,
                 toolsets: str | Iterable[str] | None = None) -> MCPServer:
    """An MCPServer whose tools are the table's rows, bound to the API's OpenAPI document
    (`routes`, else read from the API now).

    The published tools are those of `toolsets` (mcp_server/toolsets.py; default all,
    raises UnknownToolset for a name it lacks) that `role` may call by the routes'
    declarations, and with `read_only` only the ones that change nothing. With a `token`,
    every call uses it and
    `role` defaults to the token's own (`GET /api/v1/auth/whoami`, asked now; raises ApiError
    if the API refuses or cannot be reached). Without a token (HTTP mode), each call uses the
    bearer token of the HTTP request it arrived on, and `role` defaults to operator.
    """
    if role is None:
        if token and not read_only:
            role = session_role(whoami_sync(api_url, token))
        else:
            role = VIEWER if token else OPERATOR
    role = role if role in (OPERATOR, MEMBER) else VIEWER
    chosen = parse_toolsets(toolsets)
    keys = keys or IdempotencyKeys()
    bound = bind(routes or load_routes(api_url))
    publishes = _publishes(bound, role, read_only, chosen)
    tools = [_make_tool(tool, api_url, token, keys) for tool in publishes]
    return _RoleServer(
        name="hypd",
        title="hypd",
        instructions=INSTRUCTIONS,
        version="0.1.0",
        tools=tools,
        toolsets=chosen,
        checks={tool.spec.name: tool.input_schema(published=False) for tool in publishes},
        role=role,
        log_level="WARNING",
    )


def _publishes(bound: dict[str, BoundTool], role: str, read_only: bool,
               toolsets: frozenset[str]) -> list[BoundTool]:
    return published(bound, role, read_only, only={t.name for t in tools_of(toolsets)})


# --- streamable HTTP: per-caller token and role ------------------------------------------------


class HttpGateway:
    """ASGI app for `hypd mcp --http`: bearer check, then the server built for the role."""

    def __init__(self, api_url: str = DEFAULT_API_URL, *, read_only: bool = False,
                 host: str = DEFAULT_HTTP_HOST, whoami_ttl_s: float = WHOAMI_CACHE_S,
                 toolsets: str | Iterable[str] | None = None) -> None:
        self.api_url = api_url.rstrip("/")
        keys = IdempotencyKeys()
        routes = load_routes(api_url)
        self.servers = {
            role: build_server(api_url, None, read_only, role=role, keys=keys,
                               routes=routes, toolsets=toolsets)
            for role in (OPERATOR, MEMBER, VIEWER)
        }
        self.apps = {
            role: server.streamable_http_app(streamable_http_path=HTTP_PATH,
                                             stateless_http=True, host=host)
            for role, server in self.servers.items()
        }
        self._ttl = whoami_ttl_s
        self._who: dict[str, tuple[float, dict[str, Any]]] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope.get("path") == "/healthz":
            await _json(send, 200, {"status": "ok"})
            return
        token = _bearer(scope)
        if not token:
            await _json(send, 401, _envelope(
                "unauthorized", "send Authorization: Bearer <hypd token>; the MCP server "
                "calls the hypd API with that token"), auth=True)
            return
        try:
            who = await self._whoami(token)
        except ApiError as err:
            if err.status in (401, 403):
                await _json(send, 401, _envelope("unauthorized", err.message), auth=True)
            else:
                await _json(send, 502, _envelope("upstream_error", err.text))
            return
        role = session_role(who)
        name = str(who.get("name") or "unknown")
        user = AuthenticatedUser(AccessToken(token=token, client_id=name, scopes=[role],
                                             subject=principal_of(token)))
        scope = {**scope, "user": user, "auth": AuthCredentials([role])}
        await self.apps[role](scope, receive, send)

    async def _whoami(self, token: str) -> dict[str, Any]:
        fp = hashlib.sha256(token.encode()).hexdigest()
        now = time.monotonic()
        hit = self._who.get(fp)
        if hit and hit[0] > now:
            return hit[1]
        who = await ApiClient(self.api_url, token).whoami()
        if len(self._who) > 1000:
            self._who = {k: v for k, v in self._who.items() if v[0] > now}
        self._who[fp] = (now + self._ttl, who)
        return who

    async def _lifespan(self, receive: Any, send: Any) -> None:
        await receive()  # lifespan.startup
        async with AsyncExitStack() as stack:
            try:
                for server in self.servers.values():
                    await stack.enter_async_context(server.session_manager.run())
            except Exception as exc:
                await send({"type": "lifespan.startup.failed", "message": str(exc)})
                return
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
        await send({"type": "lifespan.shutdown.complete"})


def _bearer(scope: dict[str, Any]) -> str | None:
    for name, value in scope.get("headers") or ():
        if name.lower() == b"authorization":
            text = value.decode("latin-1").strip()
            if text[:7].lower() == "bearer " and text[7:].strip():
                return text[7:].strip()
    return None


def _envelope(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": {}}}


async def _json(send: Any, status: int, body: dict[str, Any], auth: bool = False) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    if auth:
        headers.append((b"www-authenticate", b'Bearer realm="hypd"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def build_http_app(api_url: str = DEFAULT_API_URL, *, read_only: bool = False,
                   host: str = DEFAULT_HTTP_HOST,
                   toolsets: str | Iterable[str] | None = None) -> HttpGateway:
    return HttpGateway(api_url, read_only=read_only, host=host, toolsets=toolsets)


# --- entry points for `hypd mcp` ---------------------------------------------------------------


def run(api_url: str | None = None, token: str | None = None, http: bool = False,
        host: str = DEFAULT_HTTP_HOST, port: int = DEFAULT_HTTP_PORT,
        read_only: bool = False, toolsets: str | Iterable[str] | None = None) -> None:
    """Serve MCP until stopped. stdio by default; `http=True` serves streamable HTTP.

    `api_url` defaults to HYPD_API_URL (else http://127.0.0.1:3099); in stdio mode `token`
    defaults to HYPD_TOKEN. `toolsets` (names, or one comma-separated string) defaults to
    all. Exits with a message naming the cause when a toolset is unknown, the token is
    missing or refused, or the API cannot be reached.
    """
    try:
        chosen = parse_toolsets(toolsets)
    except UnknownToolset as err:
        raise SystemExit(f"hypd mcp: {err}") from None
    api_url = (api_url or os.environ.get("HYPD_API_URL") or DEFAULT_API_URL).rstrip("/")
    if http:
        import uvicorn

        app = _when_the_api_answers(lambda: build_http_app(
            api_url, read_only=read_only, host=host, toolsets=chosen), api_url)
        print(f"hypd mcp: streamable HTTP on http://{host}:{port}{HTTP_PATH} for {api_url}"
              + (" (read-only)" if read_only else "") + _toolsets_said(chosen),
              file=sys.stderr, flush=True)
        uvicorn.run(app, host=host, port=port, log_level="warning")
        return
    token = token or os.environ.get("HYPD_TOKEN")
    if not token:
        raise SystemExit("hypd mcp: HYPD_TOKEN is not set; give the MCP server a hypd token "
                         "(the operator token `hypd up` printed, or a viewer token)")
    try:
        who = whoami_sync(api_url, token)
    except ApiError as err:
        raise SystemExit(f"hypd mcp: {err.text}") from None
    role = session_role(who)
    try:
        routes = load_routes(api_url)
    except ApiError as err:
        raise SystemExit(f"hypd mcp: {err.text}") from None
    server = build_server(api_url, token, read_only, role=role, routes=routes,
                          toolsets=chosen)
    n = len(_publishes(bind(routes), role, read_only, chosen))
    print(f"hypd mcp: {n} tools for {who.get('name')} ({role}) on {api_url}, over stdio"
          + _toolsets_said(chosen), file=sys.stderr, flush=True)
    server.run("stdio")


def _toolsets_said(chosen: frozenset[str]) -> str:
    return "" if chosen == parse_toolsets(None) else f" (toolsets {','.join(sorted(chosen))})"


API_WAIT_S = 60.0


def _when_the_api_answers(build: Callable[[], HttpGateway], api_url: str) -> HttpGateway:
    """The HTTP server reads the API's OpenAPI document at start; started beside the API
    (compose), it waits for it instead of failing on the first refused connection."""
    deadline = time.monotonic() + API_WAIT_S
    while True:
        try:
            return build()
        except ApiError as err:
            if err.code != "api_unreachable" or time.monotonic() > deadline:
                raise SystemExit(f"hypd mcp: {err.text}") from None
            time.sleep(1.0)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="hypd mcp", description="MCP server whose tools call the hypd REST API.")
    parser.add_argument("--api-url", default=None,
                        help=f"hypd REST API (default: $HYPD_API_URL or {DEFAULT_API_URL})")
    parser.add_argument("--http", action="store_true",
                        help="serve streamable HTTP (each caller sends its own bearer token) "
                        "instead of stdio (token from $HYPD_TOKEN)")
    parser.add_argument("--host", default=DEFAULT_HTTP_HOST, help="HTTP mode: listen address")
    parser.add_argument("--port", type=int, default=DEFAULT_HTTP_PORT, help="HTTP mode: port")
    parser.add_argument("--read-only", action="store_true",
                        help="publish only the read-only tools")
    add_toolsets_argument(parser)
    ns = parser.parse_args(argv)
    run(ns.api_url, None, ns.http, ns.host, ns.port, ns.read_only, ns.toolsets)


def add_toolsets_argument(parser: argparse.ArgumentParser) -> None:
    """`--toolsets a,b`: refused by the parser, naming the valid names, when one is unknown
    (launcher/cli.py's `hypd mcp` adds the same argument)."""

    def toolsets(text: str) -> frozenset[str]:
        try:
            return parse_toolsets(text)
        except UnknownToolset as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    parser.add_argument("--toolsets", type=toolsets, default=None, help=help_text())


__all__ = [
    "DEFAULT_API_URL",
    "DEFAULT_HTTP_HOST",
    "DEFAULT_HTTP_PORT",
    "TOOLS_BY_NAME",
    "HttpGateway",
    "build_http_app",
    "build_server",
    "main",
    "run",
]
