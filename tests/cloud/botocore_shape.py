"""Check a request dict against botocore's input shape, the way AWS's validation would.

botocore's own `ParamValidator` checks types and required members but not enums, lengths,
ranges or patterns; AWS checks all of them. This walker does: unknown members, required
members, types, enum values, string/list/map lengths, numeric ranges and string patterns
(patterns Python's `re` cannot compile, such as `\\p{L}`, are skipped).

    errors = validate_input("sagemaker", "CreateCluster", request)
    assert errors == []
"""

from __future__ import annotations

import datetime
import functools
import re
from typing import Any

import botocore.session
from botocore.model import Shape


@functools.cache
def service_model(service: str) -> Any:
    return botocore.session.get_session().get_service_model(service)


def input_shape(service: str, operation: str) -> Shape:
    return service_model(service).operation_model(operation).input_shape


def shape(service: str, name: str) -> Shape:
    return service_model(service).shape_for(name)


def validate_input(service: str, operation: str, params: dict[str, Any]) -> list[str]:
    """Every way `params` breaks the operation's input shape (empty when none)."""
    return validate(params, input_shape(service, operation), operation)


def validate(value: Any, shape: Shape, path: str = "$") -> list[str]:
    errors: list[str] = []
    _walk(value, shape, path, errors)
    return errors


@functools.cache
def _pattern(text: str) -> re.Pattern[str] | None:
    try:
        return re.compile(text)
    except re.error:
        return None


def _walk(value: Any, shape: Shape, path: str, errors: list[str]) -> None:
    kind = shape.type_name
    meta = shape.metadata
    if kind == "structure":
        if not isinstance(value, dict):
            errors.append(f"{path}: expected an object ({shape.name}), got {type(value).__name__}")
            return
        for member in shape.required_members:
            if member not in value:
                errors.append(f"{path}: missing required member {member}")
        for key, item in value.items():
            if key not in shape.members:
                errors.append(f"{path}: unknown member {key} (not in {shape.name})")
                continue
            _walk(item, shape.members[key], f"{path}.{key}", errors)
        return
    if kind == "list":
        if not isinstance(value, list):
            errors.append(f"{path}: expected a list, got {type(value).__name__}")
            return
        _length(len(value), meta, path, "items", errors)
        for i, item in enumerate(value):
            _walk(item, shape.member, f"{path}[{i}]", errors)
        return
    if kind == "map":
        if not isinstance(value, dict):
            errors.append(f"{path}: expected a map, got {type(value).__name__}")
            return
        _length(len(value), meta, path, "entries", errors)
        for key, item in value.items():
            _walk(key, shape.key, f"{path}<key {key!r}>", errors)
            _walk(item, shape.value, f"{path}[{key!r}]", errors)
        return
    if kind == "string":
        if not isinstance(value, str):
            errors.append(f"{path}: expected a string, got {type(value).__name__}")
            return
        if shape.enum and value not in shape.enum:
            errors.append(f"{path}: {value!r} is not one of {shape.name}'s values")
        _length(len(value), meta, path, "characters", errors)
        if "pattern" in meta:
            compiled = _pattern(meta["pattern"])
            if compiled is not None and not compiled.fullmatch(value):
                errors.append(f"{path}: {value!r} does not match {meta['pattern']}")
        return
    if kind in ("integer", "long"):
        if isinstance(value, bool) or not isinstance(value, int):
            errors.append(f"{path}: expected an integer, got {type(value).__name__}")
            return
        _range(value, meta, path, errors)
        return
    if kind in ("float", "double"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            errors.append(f"{path}: expected a number, got {type(value).__name__}")
            return
        _range(value, meta, path, errors)
        return
    if kind == "boolean":
        if not isinstance(value, bool):
            errors.append(f"{path}: expected a boolean, got {type(value).__name__}")
        return
    if kind == "timestamp":
        if not isinstance(value, (datetime.datetime, str, int, float)) or isinstance(value, bool):
            errors.append(f"{path}: expected a timestamp, got {type(value).__name__}")
        return
    if kind == "blob":
        if not isinstance(value, (bytes, bytearray, str)):
            errors.append(f"{path}: expected bytes, got {type(value).__name__}")
        return
    errors.append(f"{path}: shape type {kind} is not known to this validator")


def _length(n: int, meta: dict[str, Any], path: str, unit: str, errors: list[str]) -> None:
    if "min" in meta and n < meta["min"]:
        errors.append(f"{path}: {n} {unit}, fewer than the minimum {meta['min']}")
    if "max" in meta and n > meta["max"]:
        errors.append(f"{path}: {n} {unit}, more than the maximum {meta['max']}")


def _range(n: float, meta: dict[str, Any], path: str, errors: list[str]) -> None:
    if "min" in meta and n < meta["min"]:
        errors.append(f"{path}: {n} is below the minimum {meta['min']}")
    if "max" in meta and n > meta["max"]:
        errors.append(f"{path}: {n} is above the maximum {meta['max']}")
