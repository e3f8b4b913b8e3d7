"""botocore's service models as the contract for requests and answers the sandbox makes itself.

A product that sends what AWS would refuse must be refused here too, in AWS's words: every
request a gap answers is checked against the operation's input shape in botocore's model
(required members, enums, string lengths and patterns, number ranges, list and map sizes, all
the way down) and refused with AWS's "N validation errors detected: Value ... at '...' failed to
satisfy constraint: ..." message. Answers are cut to the operation's output shape, so the
sandbox never returns a field the real service does not have.
"""

from __future__ import annotations

import functools
import re
import threading
from datetime import UTC, datetime
from typing import Any

import botocore.session
from botocore.model import OperationModel, ServiceModel, Shape

# AWS reports this many constraint violations at most in one message.
MAX_REPORTED = 10

# Java's Unicode classes in Smithy patterns, as close as Python's `re` gets inside a class.
_CLASS_TRANSLATIONS = {
    r"\p{L}": r"\w",
    r"\p{N}": r"\w",
    r"\p{M}": r"\w",
    r"\p{Z}": r"\s",
    r"\p{P}": r"!-/:-@\[-`{-~\u00a1-\u00bf",
    r"\p{S}": r"!-/:-@\[-`{-~\u00a1-\u00bf",
    r"\p{Alnum}": r"a-zA-Z0-9",
}

_lock = threading.Lock()


@functools.cache
def service_model(name: str) -> ServiceModel:
    """botocore's model of `name` ("sagemaker", "service-quotas"), loaded once per process."""
    with _lock:
        return botocore.session.get_session().get_service_model(name)


def operation(service: str, action: str) -> OperationModel:
    return service_model(service).operation_model(action)


@functools.cache
def _pattern(raw: str) -> re.Pattern[str] | None:
    text = raw
    for java, python in _CLASS_TRANSLATIONS.items():
        text = text.replace(java, python)
    try:
        return re.compile(text, re.DOTALL)
    except re.error:  # a Java-only construct: this pattern is not checked
        return None


def _render(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def _lower_first(name: str) -> str:
    return name[:1].lower() + name[1:]


class _Checker:
    """Walks a value against a shape, collecting AWS-worded constraint violations."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.type_errors: list[str] = []

    def fail(self, value: Any, path: str, constraint: str) -> None:
        self.errors.append(
            f"Value {_render(value)} at '{path}' failed to satisfy constraint: {constraint}"
        )

    def check(self, value: Any, shape: Shape, path: str) -> None:
        kind = shape.type_name
        meta = shape.metadata
        if kind == "structure":
            if not isinstance(value, dict):
                self.type_errors.append(f"{path or 'request'} must be an object")
                return
            for name in shape.required_members:
                if value.get(name) is None:
                    self.fail(None, self._join(path, name), "Member must not be null")
            for name, member in shape.members.items():
                if value.get(name) is not None:
                    self.check(value[name], member, self._join(path, name))
        elif kind == "list":
            if not isinstance(value, list):
                self.type_errors.append(f"{path} must be a list")
                return
            self._size(value, len(value), meta, path)
            for index, item in enumerate(value, start=1):
                self.check(item, shape.member, f"{path}.{index}.member")
        elif kind == "map":
            if not isinstance(value, dict):
                self.type_errors.append(f"{path} must be an object")
                return
            self._size(value, len(value), meta, path)
            for key, item in value.items():
                self.check(key, shape.key, f"{path}.{key}.key")
                self.check(item, shape.value, f"{path}.{key}.value")
        elif kind == "string":
            if not isinstance(value, str):
                self.type_errors.append(f"{path} must be a string")
                return
            self._size(value, len(value), meta, path)
            if shape.enum and value not in shape.enum:
                self.fail(
                    value, path, f"Member must satisfy enum value set: [{', '.join(shape.enum)}]"
                )
            pattern = meta.get("pattern")
            compiled = _pattern(pattern) if pattern else None
            if compiled is not None and compiled.fullmatch(value) is None:
                self.fail(value, path, f"Member must satisfy regular expression pattern: {pattern}")
        elif kind in ("integer", "long"):
            if isinstance(value, bool) or not isinstance(value, int):
                self.type_errors.append(f"{path} must be an integer")
                return
            self._range(value, meta, path)
        elif kind in ("double", "float"):
            if isinstance(value, bool) or not isinstance(value, int | float):
                self.type_errors.append(f"{path} must be a number")
                return
            self._range(value, meta, path)
        elif kind == "boolean":
            if not isinstance(value, bool):
                self.type_errors.append(f"{path} must be a boolean")
        elif kind == "timestamp" and (
            isinstance(value, bool) or not isinstance(value, int | float | str)
        ):
            self.type_errors.append(f"{path} must be a timestamp")

    def _size(self, value: Any, size: int, meta: dict[str, Any], path: str) -> None:
        if "min" in meta and size < meta["min"]:
            self.fail(
                value, path, f"Member must have length greater than or equal to {meta['min']}"
            )
        if "max" in meta and size > meta["max"]:
            self.fail(value, path, f"Member must have length less than or equal to {meta['max']}")

    def _range(self, value: float, meta: dict[str, Any], path: str) -> None:
        if "min" in meta and value < meta["min"]:
            self.fail(value, path, f"Member must have value greater than or equal to {meta['min']}")
        if "max" in meta and value > meta["max"]:
            self.fail(value, path, f"Member must have value less than or equal to {meta['max']}")

    @staticmethod
    def _join(path: str, name: str) -> str:
        return f"{path}.{_lower_first(name)}" if path else _lower_first(name)


class RequestInvalid(Exception):
    """The request breaks its model: `code` is ValidationException or SerializationException."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def validate(service: str, action: str, params: dict[str, Any]) -> None:
    """Raise RequestInvalid if `params` break the input shape of service:action."""
    check_input(operation(service, action), params)


def check_input(op: OperationModel, params: dict[str, Any]) -> None:
    """Raise RequestInvalid if `params` break the operation's input shape."""
    shape = op.input_shape
    if shape is None:
        return
    checker = _Checker()
    checker.check(params, shape, "")
    if checker.type_errors:
        raise RequestInvalid("SerializationException", "; ".join(checker.type_errors))
    if checker.errors:
        count = len(checker.errors)
        noun = "error" if count == 1 else "errors"
        shown = "; ".join(checker.errors[:MAX_REPORTED])
        raise RequestInvalid("ValidationException", f"{count} validation {noun} detected: {shown}")


def _epoch(value: datetime) -> float:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return round(value.timestamp(), 3)


def shaped(value: Any, shape: Shape) -> Any:
    """`value` cut to `shape`: members the model does not know are dropped, times made epoch."""
    kind = shape.type_name
    if value is None:
        return None
    if kind == "structure":
        out = {}
        for name, member in shape.members.items():
            if name in value and value[name] is not None:
                item = shaped(value[name], member)
                if item is not None:
                    out[name] = item
        return out
    if kind == "list":
        return [shaped(item, shape.member) for item in value]
    if kind == "map":
        return {key: shaped(item, shape.value) for key, item in value.items()}
    if kind == "timestamp" and isinstance(value, datetime):
        return _epoch(value)
    return value


def output(service: str, action: str, value: dict[str, Any]) -> dict[str, Any]:
    """An answer cut to the operation's output shape."""
    shape = operation(service, action).output_shape
    return shaped(value, shape) if shape is not None else {}


def shape_named(service: str, name: str) -> Shape:
    return service_model(service).shape_for(name)


def parse_time(value: Any) -> datetime | None:
    """A JSON-protocol timestamp (epoch seconds, or ISO 8601 from hand-written clients)."""
    if value is None:
        return None
    if isinstance(value, int | float):
        return datetime.fromtimestamp(float(value), UTC)
    text = str(value).replace("Z", "+00:00")
    parsed = datetime.fromisoformat(text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
