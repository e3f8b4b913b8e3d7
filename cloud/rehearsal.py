"""A rehearsal: an operation's own steps run with every change held back and written down.

A dry run must not promise what the operation would not do, so it runs the very step code
the worker runs (tasks/engine/rehearsal.py) while a `Recording` is active in this thread's
context. Then:

- **AWS**: every client made by `cloud.aws.client` carries the hooks below. A call whose
  operation only reads (`Describe…`, `List…`, `Get…`, `Head…`, …) goes to AWS as usual, so
  what already exists is found and adopted exactly as the operation would. Any other call is
  written down with its parameters and never sent: botocore is answered a response made from
  the operation's own output shape, each string a placeholder naming where it would come from
  (`<planned CreateVpc#1.Vpc.VpcId>`: the first CreateVpc's), or what the request itself
  said of it (a CIDR block, a zone, tags), as AWS echoes it. A read that names a placeholder
  is not sent either (AWS would not know the id): it is answered with what the rehearsal
  made that it names. An operation name that is not a known read is treated as a change —
  the safe side.
- **Kubernetes**: `cloud.kube` sends a change with `dryRun=All`, so the API server checks it
  (schema, admission) and persists nothing; a request to a pod or service (`…/proxy`,
  `…/exec`, an eviction) is written down and not sent, as the API server has no dry run for
  what a pod does.
- **The panel's own Redis** (steps that keep panel records): writes are written down, reads
  pass (tasks/engine/rehearsal.py wraps it).

Outside a recording the hooks do nothing. The recording lives in a context variable, so a
request rehearsing in one thread changes nothing for another thread's real calls.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import re
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from botocore.awsrequest import AWSResponse

PLACEHOLDER = "<planned "
READ_OPERATION = re.compile(
    r"^(Describe|List|Get|Head|Search|Lookup|BatchGet|BatchDescribe|Query|Scan|Select)"
    r"[A-Z0-9]")
"""AWS operations that only read. GetObject reads; anything not named so is a change."""
MAX_SHAPE_DEPTH = 6
BRIEF_TEXT = 160
SECRET_KEY = re.compile(r"secret|password|token|credential|private", re.IGNORECASE)
PARAMS_STASH = "hypd_rehearsal_params"
NAME_KEY = re.compile(r"(Name|name|Bucket)$")


@dataclass
class Call:
    """One change the operation would make, in the order it would make it."""

    service: str
    operation: str
    params: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    """What was asked, whole (never shown: it may hold secrets)."""

    def view(self) -> dict[str, Any]:
        return {"service": self.service, "operation": self.operation, "params": self.params}


@dataclass
class Recording:
    calls: list[Call] = field(default_factory=list)
    reads: int = 0
    guessed: int = 0
    """Reads answered here because they named a placeholder: what follows them depends on
    resources the rehearsal did not make."""
    made: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """(shape name, structure) of every response the rehearsal made up, for later reads."""

    def change(self, service: str, operation: str, params: Mapping[str, Any]) -> None:
        self.calls.append(Call(service, operation, brief(params), dict(params)))


_active: ContextVar[Recording | None] = ContextVar("hypd_rehearsal", default=None)


def current() -> Recording | None:
    """The recording of this thread's rehearsal, or None when calls are real."""
    return _active.get()


@contextlib.contextmanager
def recording() -> Iterator[Recording]:
    found = Recording()
    token = _active.set(found)
    try:
        yield found
    finally:
        _active.reset(token)


def names_placeholder(value: Any) -> bool:
    if isinstance(value, str):
        return PLACEHOLDER in value
    if isinstance(value, Mapping):
        return any(names_placeholder(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(names_placeholder(v) for v in value)
    return False


def brief(params: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters a person reads in a plan: scalars and short lists of them, never a
    secret-looking key, long text cut (a lifecycle script, a policy document)."""
    shown: dict[str, Any] = {}
    for key, value in params.items():
        if SECRET_KEY.search(str(key)):
            continue
        if isinstance(value, str):
            shown[key] = value if len(value) <= BRIEF_TEXT else value[:BRIEF_TEXT] + "…"
        elif isinstance(value, (bool, int, float)) or value is None:
            shown[key] = value
        elif isinstance(value, (list, tuple)) and len(value) <= 8 and all(
                isinstance(v, (str, int, float, bool)) for v in value):
            shown[key] = [v if not isinstance(v, str) or len(v) <= BRIEF_TEXT
                          else v[:BRIEF_TEXT] + "…" for v in value]
        elif isinstance(value, Mapping) and key in ("Tags", "tags", "metadata"):
            continue
    return shown


# -- AWS ---------------------------------------------------------------------------------------

class RehearsedResponse(AWSResponse):
    """The HTTP answer of a call that was not sent (metrics count no AWS call for it)."""

    rehearsed = True

    def __init__(self) -> None:
        super().__init__("", 200, {}, None)


def register_aws_hooks(events: Any) -> None:
    """On a boto3 session, before any client is made from it (clients copy its hooks)."""
    events.register("before-parameter-build", _stash_params)
    events.register("before-call", _hold_back)


def _stash_params(params: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
    if _active.get() is not None:
        context[PARAMS_STASH] = copy.deepcopy(dict(params))


def _hold_back(model: Any, context: Mapping[str, Any], **_: Any) -> tuple[Any, dict] | None:
    found = _active.get()
    if found is None:
        return None
    params = context.get(PARAMS_STASH) or {}
    name = model.name
    if READ_OPERATION.match(name):
        if names_placeholder(params):
            found.guessed += 1
            return RehearsedResponse(), _already_made(model.output_shape, params, found)
        if _names_what_was_made(params, found):
            # AWS would answer "no such role/bucket": it was made only in this rehearsal
            found.guessed += 1
            nth = sum(1 for c in found.calls if c.operation == name) + 1
            answer = _made(model.output_shape, f"{name}#{nth}", 0, params, [])
            answer = answer if isinstance(answer, dict) else {}
            answer["ResponseMetadata"] = {"HTTPStatusCode": 200, "RequestId": "rehearsal"}
            return RehearsedResponse(), answer
        found.reads += 1
        return None
    found.change(model.service_model.service_name, name, params)
    nth = sum(1 for c in found.calls if c.operation == name)
    made = _made(model.output_shape, f"{name}#{nth}", 0, params, found.made)
    made = made if isinstance(made, dict) else {}
    made["ResponseMetadata"] = {"HTTPStatusCode": 200, "RequestId": "rehearsal"}
    return RehearsedResponse(), made


def _made(shape: Any, path: str, depth: int, asked: Mapping[str, Any],
          made: list[tuple[str, dict[str, Any]]]) -> Any:
    """A response of `shape` whose strings name where they would come from — or, where the
    request named the same member (a CIDR block, a zone, a VPC id, tags), what it asked
    for, as AWS would echo it. Each structure made is kept (`made`) so a later read of it
    finds it."""
    if shape is None:
        return {}
    kind = shape.type_name
    if kind == "structure":
        if depth >= MAX_SHAPE_DEPTH:
            return {}
        built: dict[str, Any] = {}
        for name, member in shape.members.items():
            if getattr(member, "serialization", {}).get("eventstream"):
                continue
            echoed = _echo(name, member, asked)
            built[name] = echoed if echoed is not None else _made(
                member, f"{path}.{name}", depth + 1, asked, made)
        made.append((shape.name, built))
        return built
    if kind == "list":
        return []
    if kind == "map":
        return {}
    if kind == "string":
        return f"{PLACEHOLDER}{path}>"
    if kind in ("integer", "long"):
        return 0
    if kind in ("float", "double"):
        return 0.0
    if kind == "boolean":
        return False
    if kind == "timestamp":
        return dt.datetime.now(dt.UTC)
    if kind == "blob":
        return b""
    return None


def _names(params: Mapping[str, Any]) -> dict[str, str]:
    return {k: v for k, v in params.items() if NAME_KEY.search(k) and isinstance(v, str)}


def _names_what_was_made(params: Mapping[str, Any], found: Recording) -> bool:
    """Every name the read gives (RoleName, Bucket, clusterName, ...) is one an earlier
    rehearsed change gave under the same key: it reads what only the rehearsal made."""
    asked = _names(params)
    return bool(asked) and any(
        asked.items() <= _names(call.raw).items() for call in found.calls if call.raw)


def _echo(name: str, member: Any, asked: Mapping[str, Any]) -> Any:
    """What the request itself said of a response member, or None."""
    if name in ("Tags", "tags") and member.type_name in ("list", "map"):
        tags = asked.get(name)
        if tags is None:
            for spec in asked.get("TagSpecifications") or ():
                tags = (tags or []) + list(spec.get("Tags") or ())
        return copy.deepcopy(tags) if tags is not None else None
    value = asked.get(name)
    if value is None:
        return None
    if member.type_name == "string" and isinstance(value, str):
        return value
    if member.type_name in ("integer", "long", "boolean") and isinstance(value, (int, bool)):
        return value
    return None


def _already_made(shape: Any, params: Mapping[str, Any], found: Recording) -> dict[str, Any]:
    """A read's answer when what it asks about would only exist after the rehearsed calls:
    each list holds what the rehearsal made of its item's shape and the read names (by a
    placeholder id it holds), nothing else."""
    answer: dict[str, Any] = {"ResponseMetadata": {"HTTPStatusCode": 200,
                                                   "RequestId": "rehearsal"}}
    named = set(_placeholders(params))
    if shape is not None and shape.type_name == "structure":
        for name, member in shape.members.items():
            if member.type_name != "list":
                continue
            item = member.member.name
            answer[name] = [copy.deepcopy(obj) for shape_name, obj in found.made
                            if shape_name == item and named & set(_placeholders(obj))]
            if not answer[name]:
                # made by a call whose answer was not this shape (CreateSecurityGroup answers
                # a GroupId): one item of it, echoing the ids asked for (GroupIds → GroupId)
                asked = {key[:-1]: ids[0] for key, ids in params.items()
                         if key.endswith("Ids") and isinstance(ids, list) and len(ids) == 1
                         and names_placeholder(ids)}
                if asked:
                    answer[name] = [_made(member.member, f"{item}", 1, asked, [])]
    return answer


def _placeholders(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if PLACEHOLDER in value:
            yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _placeholders(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _placeholders(v)


# -- Kubernetes --------------------------------------------------------------------------------

NOT_DRY_RUNNABLE = re.compile(r"/(proxy|exec|attach|portforward|eviction|binding)(/|$)")


def kube_change(method: str, path: str, body: Any) -> bool:
    """Write a Kubernetes change down; True when it may still be sent with `dryRun=All`,
    False when it must not be sent at all (a pod's or service's own endpoint)."""
    found = _active.get()
    assert found is not None
    params: dict[str, Any] = {"path": path, **_object_of(path)}
    if isinstance(body, Mapping) and method != "DELETE":  # a DELETE's body: DeleteOptions
        meta = body.get("metadata") if isinstance(body.get("metadata"), Mapping) else {}
        params.update({k: v for k, v in (("kind", body.get("kind")),
                                         ("name", meta.get("name")),
                                         ("namespace", meta.get("namespace"))) if v})
    found.calls.append(Call("kubernetes", method, params))
    return not NOT_DRY_RUNNABLE.search(path)


def _object_of(path: str) -> dict[str, str]:
    """{resource, namespace, name} of a Kubernetes API path (`/api/v1/namespaces/x/pods/y`,
    `/apis/<group>/<version>/<plural>/<name>`), as far as it names them."""
    parts = path.split("?")[0].strip("/").split("/")
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
    found: dict[str, str] = {}
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        found["namespace"], rest = rest[1], rest[2:]
    if rest:
        found["resource"] = rest[0]
    if len(rest) > 1:
        found["name"] = rest[1]
    return found
