"""EKS requests read and checked against botocore's own model of the EKS API.

`request(ctx)` turns the HTTP request into the operation's input members (URI labels, query
string and JSON body, each where the model puts it, with the model's types), and refuses
with `InvalidParameterException` what EKS would refuse before acting: a missing required
member, a value of the wrong type, outside an enum, too short or long, out of range, or not
matching the model's pattern.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any
from urllib.parse import parse_qs

import botocore.session
from botocore.model import OperationModel, Shape

from sandbox.errors import error_reply
from sandbox.gaps import GapContext
from sandbox.reply import Reply

_lock = threading.Lock()
_models: dict[str, Any] = {}


class EksError(Exception):
    """An EKS error answer (REST-JSON: the code travels in `x-amzn-ErrorType`)."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status

    def reply(self) -> Reply:
        return error_reply("rest-json", self.status, self.code, self.message)


def invalid(message: str) -> EksError:
    return EksError("InvalidParameterException", message)


def not_found(message: str) -> EksError:
    return EksError("ResourceNotFoundException", message, 404)


def in_use(message: str) -> EksError:
    return EksError("ResourceInUseException", message, 409)


def invalid_request(message: str) -> EksError:
    return EksError("InvalidRequestException", message)


def operation(name: str) -> OperationModel:
    with _lock:
        if "eks" not in _models:
            _models["eks"] = botocore.session.get_session().get_service_model("eks")
        return _models["eks"].operation_model(name)


def _coerce(shape: Shape, raw: list[str]) -> Any:
    if shape.type_name == "list":
        return raw
    value = raw[-1]
    if shape.type_name in ("integer", "long"):
        try:
            return int(value)
        except ValueError:
            return value
    if shape.type_name == "boolean":
        return {"true": True, "false": False}.get(value.lower(), value)
    return value


def request(ctx: GapContext, op_name: str | None = None) -> dict[str, Any]:
    """The operation's input members, validated (raises EksError)."""
    op = operation(op_name or ctx.call.action)
    shape = op.input_shape
    params: dict[str, Any] = {}
    if shape is None:
        return params
    query = parse_qs(ctx.environ.get("QUERY_STRING", ""), keep_blank_values=True)
    body: dict[str, Any] = {}
    if ctx.body:
        try:
            loaded = json.loads(ctx.body)
        except ValueError as exc:
            raise invalid("The request body is not valid JSON.") from exc
        if not isinstance(loaded, dict):
            raise invalid("The request body must be a JSON object.")
        body = loaded
    for member, member_shape in shape.members.items():
        location = member_shape.serialization.get("location")
        wire = member_shape.serialization.get("name", member)
        if location == "uri":
            if wire in ctx.call.params:
                params[member] = ctx.call.params[wire]
        elif location == "querystring":
            if wire in query:
                params[member] = _coerce(member_shape, query[wire])
        elif location == "header":
            value = ctx.environ.get("HTTP_" + wire.upper().replace("-", "_"))
            if value is not None:
                params[member] = value
        elif member in body:
            params[member] = body[member]
    validate(shape, params, "")
    return params


def _where(path: str, member: str) -> str:
    return f"{path}.{member}" if path else member


def validate(shape: Shape, value: Any, path: str) -> None:
    """Check one value against its shape (recursively)."""
    kind = shape.type_name
    meta = shape.metadata
    shown = path or "input"
    if kind == "structure":
        if not isinstance(value, dict):
            raise invalid(f"Value at '{shown}' must be an object.")
        for required in shape.required_members:
            if value.get(required) is None:
                raise invalid(f"{_where(path, required)} is required and must not be null.")
        for member, member_shape in shape.members.items():
            if value.get(member) is not None:
                validate(member_shape, value[member], _where(path, member))
        return
    if kind == "list":
        if not isinstance(value, list):
            raise invalid(f"Value at '{shown}' must be a list.")
        _bounds(len(value), meta, shown, "Member must have length")
        for index, item in enumerate(value):
            validate(shape.member, item, f"{shown}.{index + 1}")
        return
    if kind == "map":
        if not isinstance(value, dict):
            raise invalid(f"Value at '{shown}' must be a map.")
        _bounds(len(value), meta, shown, "Member must have length")
        for key, item in value.items():
            validate(shape.key, key, f"{shown}.key")
            validate(shape.value, item, f"{shown}.{key}")
        return
    if kind == "string":
        if not isinstance(value, str):
            raise invalid(f"Value at '{shown}' must be a string.")
        enum = shape.enum
        if enum and value not in enum:
            raise invalid(
                f"Value '{value}' at '{shown}' failed to satisfy constraint: Member must "
                f"satisfy enum value set: [{', '.join(enum)}]"
            )
        _bounds(len(value), meta, shown, "Member must have length", value)
        pattern = meta.get("pattern")
        if pattern and not re.fullmatch(pattern, value):
            raise invalid(
                f"Value '{value}' at '{shown}' failed to satisfy constraint: Member must "
                f"satisfy regular expression pattern: {pattern}"
            )
        return
    if kind in ("integer", "long"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise invalid(f"Value at '{shown}' must be an integer.")
        _bounds(value, meta, shown, "Member must have value", value)
        return
    if kind == "boolean" and not isinstance(value, bool):
        raise invalid(f"Value at '{shown}' must be a boolean.")


def _bounds(size: int, meta: dict[str, Any], where: str, what: str, value: Any = None) -> None:
    shown = f"Value '{value}' at '{where}'" if value is not None else f"Value at '{where}'"
    if "min" in meta and size < meta["min"]:
        raise invalid(
            f"{shown} failed to satisfy constraint: {what} greater than or equal to {meta['min']}"
        )
    if "max" in meta and size > meta["max"]:
        raise invalid(
            f"{shown} failed to satisfy constraint: {what} less than or equal to {meta['max']}"
        )
