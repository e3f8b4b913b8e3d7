"""What moto lacks or gets wrong, answered by the sandbox itself — one way to write a gap.

A gap module declares its state once and answers actions with plain functions:

    FILES = GapState("fsx", lambda app: FsxState())

    @answers("fsx", "CreateFileSystem")
    def create_file_system(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any]:
        with FILES.of(ctx).lock:
            ...
        return {"FileSystem": system}

Every answer runs through one path (`GapAnswer.run`), for JSON-protocol and REST-JSON services
alike: the request is read into the operation's input members (`wire.request_params`) and
checked against botocore's model, then the function runs; the dict it returns is cut to the
output shape and encoded for the protocol; an `AwsError` it raises becomes AWS's error answer
(a request breaking the model too, with the code the service uses); anything else is a sandbox
bug, answered `500 InternalFailure` in AWS's shape. To let moto answer instead — a request that
is not the gap's (another service code, an ARN the gap does not own), or one the gap builds
on — return `ctx.moto()` (or a Reply built from it): a Reply is passed on as it is.

State: everything a gap keeps lives in its declared `GapState` on the local AWS it serves
(`app.gap_state`), never in module globals, so two local AWS in one process share no more
than moto's own state does. `reset(app)` — what `POST /moto-api/reset` and
`POST /_sandbox/reset {"aws": true}` do after wiping moto — drops every gap's state, the
timeline's pending changes and every local Kubernetes, so no gap can keep state past a reset.

Age: a gap that reports when something was made or launched — its own records' times, or
moto's that it answers on top of — registers an ager (`@ages`), and a jump of the sandbox's
clock (`POST /_sandbox/clock/advance`) calls every ager with the local AWS and the jump: each
moves the times of what exists by the jump into the past, so the world is that much older to
a reader on the wall clock (sandbox/timing.py says why). moto's state is per process, so an
ager of moto's models ages them for every local AWS in the process, as moto's reset wipes them.

All of it runs inside the layer's one request path, so faults, holds, the call log and the
counters apply to gap answers exactly as to moto's. Every module of this package is imported
by the layer (`load`).
"""

from __future__ import annotations

import base64
import importlib
import io
import logging
import pkgutil
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Generic, TypeVar

from botocore.model import OperationModel

from sandbox.gaps import wire
from sandbox.gaps.sagemaker_model import RequestInvalid, service_model
from sandbox.identify import Call, model_name
from sandbox.reply import Reply

log = logging.getLogger(__name__)

T = TypeVar("T")
# Lists page at this size unless the request asks for another, so code that ignores the next
# token fails here rather than first in production.
DEFAULT_PAGE = 10


class AwsError(Exception):
    """An AWS error answer: code (as botocore matches it), message, HTTP status."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


@dataclass
class GapContext:
    """One AWS call a gap answers."""

    call: Call
    environ: dict[str, Any]
    body: bytes
    app: Any  # sandbox.layer.LocalAwsApp: its clock, transitions, kubes, and gap state
    params: dict[str, Any] = field(default_factory=dict)  # the input members, once read
    operation: OperationModel | None = None  # botocore's model of the call, once known

    def moto(
        self, method: str | None = None, path: str | None = None, body: bytes | None = None
    ) -> Reply:
        """moto's answer to this request — or, given a method, path or body, to that request
        on the same connection details (e.g. `ctx.moto("GET", f"/clusters/{name}", b"")`)."""
        environ = dict(self.environ)
        payload = self.body if body is None else body
        if method is not None:
            environ["REQUEST_METHOD"] = method
        if path is not None:
            environ["PATH_INFO"] = environ["RAW_URI"] = environ["REQUEST_URI"] = path
            environ["QUERY_STRING"] = ""
        environ["wsgi.input"] = io.BytesIO(payload)
        return self.app.forward_to_moto(environ, payload, self.call.protocol)  # type: ignore[no-any-return]

    def page(
        self,
        items: list[Any],
        key: str,
        default: int = DEFAULT_PAGE,
        render: Callable[[Any], Any] | None = None,
    ) -> dict[str, Any]:
        """`{key: one page of items}` (each through `render`, if given: only the page's items
        are rendered), plus the next token where more follow, spelled as the operation spells
        it (`NextToken`/`MaxResults`, or EKS's `nextToken`/`maxResults`)."""
        chunk, token = page(items, self.params, default)
        answer: dict[str, Any] = {key: [render(i) for i in chunk] if render else chunk}
        if token:
            output = self.operation.output_shape if self.operation is not None else None
            camel = output is not None and "nextToken" in output.members
            answer["nextToken" if camel else "NextToken"] = token
        return answer


def page(items: list[Any], params: dict[str, Any], default: int = DEFAULT_PAGE
         ) -> tuple[list[Any], str | None]:
    """One page of `items` and the token for the next (None at the end)."""
    start = 0
    token = params.get("NextToken") or params.get("nextToken")
    if token:
        try:
            start = int(base64.b64decode(token.encode(), validate=True).decode())
        except (ValueError, UnicodeDecodeError) as exc:
            raise RequestInvalid("ValidationException",
                                 f"Invalid pagination token {token!r}.") from exc
    size = int(params.get("MaxResults") or params.get("maxResults") or default)
    end = start + size
    following = base64.b64encode(str(end).encode()).decode()  # opaque, and base64 as FSx wants
    return items[start:end], (following if end < len(items) else None)


# --- answers -----------------------------------------------------------------------------

Handler = Callable[[GapContext, dict[str, Any]], "dict[str, Any] | Reply"]


@dataclass(frozen=True)
class GapAnswer:
    """A function answering service:action, and the one path it runs through."""

    service: str
    action: str
    fn: Handler

    def run(self, ctx: GapContext) -> Reply:
        model = model_name(self.service)
        op = ctx.operation = service_model(model).operation_model(self.action)
        try:
            ctx.params = wire.request_params(op, ctx.call, ctx.environ, ctx.body)
            value = self.fn(ctx, ctx.params)
        except RequestInvalid as exc:
            return wire.invalid(op, self.service, exc)
        except AwsError as exc:
            return wire.error(op, exc.status, exc.code, exc.message)
        except Exception as exc:  # a sandbox bug: say so in AWS's shape, not as HTML
            log.exception("sandbox: %s:%s failed", self.service, self.action)
            message = f"local AWS (sandbox gap) failed: {type(exc).__name__}: {exc}"
            return wire.error(op, 500, "InternalFailure", message)
        if isinstance(value, Reply):
            return value
        return wire.answer(op, value)


_ANSWERS: dict[str, GapAnswer] = {}


def answers(service: str, action: str) -> Callable[[Handler], Handler]:
    """Register `fn(ctx, params) -> dict | Reply` as the sandbox's answer to service:action
    (`service` as the SDK signs it: "eks", "sagemaker", "servicequotas")."""

    def register(fn: Handler) -> Handler:
        key = f"{service}:{action}"
        if key in _ANSWERS and _ANSWERS[key].fn is not fn:
            raise ValueError(f"two gap answers for {key}")
        _ANSWERS[key] = GapAnswer(service, action, fn)
        return fn

    return register


def answer_for(key: str) -> GapAnswer | None:
    return _ANSWERS.get(key)


def answered() -> list[str]:
    """Every "service:Action" a gap answers."""
    return sorted(_ANSWERS)


def load() -> None:
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


# --- age -----------------------------------------------------------------------------------

GapAger = Callable[[Any, timedelta], None]
_AGERS: list[GapAger] = []


def ages(fn: GapAger) -> GapAger:
    """Register `fn(app, delta)`: move the creation/launch times the gap reports for what
    exists on `app` (the LocalAwsApp) `delta` into the past."""
    if fn not in _AGERS:
        _AGERS.append(fn)
    return fn


def moto_backends(backends: Any) -> list[Any]:
    """Every region's backend of a moto service (e.g. `moto.eks.models.eks_backends`), in
    every account: what an ager of moto's models walks (moto's state is per process)."""
    return [found for regions in list(backends.values()) for found in list(regions.values())]


def age(app: Any, delta: timedelta) -> None:
    """Age everything the gaps report on `app` by `delta` (the sandbox's clock jumped)."""
    for fn in list(_AGERS):
        fn(app, delta)


# --- state -------------------------------------------------------------------------------

_STATES: dict[str, GapState[Any]] = {}
_STATE_LOCK = threading.Lock()


class GapState(Generic[T]):
    """One gap's state on each local AWS: made on first use by `factory(app)`, dropped by
    `reset`. Declared once, at module level, under a name no other gap uses."""

    def __init__(self, name: str, factory: Callable[[Any], T]) -> None:
        if name in _STATES:
            raise ValueError(f"gap state {name!r} is declared twice")
        self.name = name
        self.factory = factory
        _STATES[name] = self

    def of(self, owner: Any) -> T:
        """This state on a local AWS (`owner`: the LocalAwsApp, or a GapContext on it)."""
        app = owner.app if isinstance(owner, GapContext) else owner
        with _STATE_LOCK:
            found = app.gap_state.get(self.name)
            if found is None:
                found = app.gap_state[self.name] = self.factory(app)
            return found  # type: ignore[no-any-return]

    def peek(self, app: Any) -> T | None:
        """This state if it exists now (nothing is made)."""
        return app.gap_state.get(self.name)  # type: ignore[no-any-return]


def declared() -> list[str]:
    """The names of every declared gap state."""
    return sorted(_STATES)


def reset(app: Any) -> None:
    """Forget everything the gaps keep on `app`: every gap's state (declared or not), the
    changes still due on the timeline, and every local Kubernetes."""
    app.transitions.timeline.clear()
    with _STATE_LOCK:
        app.gap_state.clear()
    app.kubes.clear()
