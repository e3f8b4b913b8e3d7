"""A custom resource checked against its CRD's structural schema, as the API server checks it.

On create, update and patch the real API server prunes the fields a CRD version's
`openAPIV3Schema` does not specify (reporting them as `unknown field "spec.x"`: a warning by
default, a 400 under `?fieldValidation=Strict`, silence under `Ignore`) and then validates the
rest, answering 422 `Invalid` with one cause per failing field. This walker covers the
structural-schema subset CRDs use: `type` (with `nullable`), `properties`, `required`,
`additionalProperties`, `items`, `enum`, `pattern`, `format: date-time`, the length, item,
property and numeric bounds, `allOf`/`anyOf`/`oneOf`/`not` as value checks, and the
Kubernetes extensions `x-kubernetes-preserve-unknown-fields`, `x-kubernetes-embedded-resource`,
`x-kubernetes-int-or-string` and `x-kubernetes-list-type: set | map`. A write is defaulted
between pruning and validation: a property with a `default` that is absent (or a null it may
not hold) gets it, and the default's own properties theirs, so what a client reads back holds
the defaults a real API server would add. Not done: CEL rules (`x-kubernetes-validations`)
and formats other than date-time. jsonschema (a test
dependency only) knows none of the extensions, and prunes nothing.

Messages follow kube-openapi's (`spec.replicas in body must be of type integer: "string"`)
and the causes apimachinery's field errors (`FieldValueTypeInvalid`, `FieldValueRequired`,
`FieldValueNotSupported` ...).
"""

from __future__ import annotations

import copy
import functools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from sandbox.kube.catalog import ResourceType
from sandbox.kube.errors import KubeError, bad_request, invalid_fields

STRICT, WARN, IGNORE = "Strict", "Warn", "Ignore"
FIELD_VALIDATIONS = (STRICT, WARN, IGNORE)
_ALWAYS_KEPT = frozenset({"apiVersion", "kind", "metadata"})
_DATE_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)


@dataclass(frozen=True)
class Cause:
    """One failing field, as apimachinery's `field.Error` reports it."""

    reason: str  # FieldValueInvalid, FieldValueRequired ...
    path: str
    body: str  # the cause's message: "Invalid value: 1: ..."


@dataclass
class _Walk:
    unknown: list[str] = field(default_factory=list)
    causes: list[Cause] = field(default_factory=list)

    def fail(self, reason: str, path: str, body: str) -> None:
        self.causes.append(Cause(reason, path, body))

    def invalid(self, path: str, value: Any, detail: str) -> None:
        self.fail("FieldValueInvalid", path, f"Invalid value: {_shown(value)}: {detail}")


def _shown(value: Any) -> str:
    """A bad value the way Go's field errors print it."""
    if isinstance(value, str):
        return json.dumps(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _is(kind: str, value: Any) -> bool:
    actual = _json_type(value)
    if kind == "integer":
        return actual == "integer" or (actual == "number" and float(value).is_integer())
    if kind == "number":
        return actual in ("integer", "number")
    return actual == kind


def _equal(a: Any, b: Any) -> bool:
    """JSON equality (True is not 1)."""
    return (_json_type(a) == _json_type(b) and a == b) or (
        _is("number", a) and _is("number", b) and a == b)


@functools.lru_cache(maxsize=1024)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _walk(schema: dict[str, Any], value: Any, path: str, out: _Walk, prune: bool,
          root: bool = False) -> Any:
    """Check `value` against `schema` (causes into `out`) and return it, pruned into new
    dicts and lists when `prune` (the value checks of allOf/anyOf/oneOf/not never prune)."""
    if value is None:
        if not schema.get("nullable") and schema.get("type"):
            out.fail("FieldValueTypeInvalid", path,
                     f'Invalid value: "null": {path} in body must be of type '
                     f'{schema["type"]}: "null"')
        return value
    if schema.get("x-kubernetes-int-or-string"):
        if not (_is("integer", value) or isinstance(value, str)):
            out.fail("FieldValueTypeInvalid", path,
                     f'Invalid value: "{_json_type(value)}": {path} in body must be of type '
                     f'integer or string: "{_json_type(value)}"')
            return value
    elif schema.get("type") and not _is(schema["type"], value):
        out.fail("FieldValueTypeInvalid", path,
                 f'Invalid value: "{_json_type(value)}": {path} in body must be of type '
                 f'{schema["type"]}: "{_json_type(value)}"')
        return value
    if isinstance(value, dict):
        value = _object(schema, value, path, out, prune, root)
    elif isinstance(value, list):
        value = _array(schema, value, path, out, prune)
    _values(schema, value, path, out)
    return value


def _object(schema: dict[str, Any], value: dict[str, Any], path: str, out: _Walk, prune: bool,
            root: bool) -> dict[str, Any]:
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    keep_unknown = bool(schema.get("x-kubernetes-preserve-unknown-fields")) or extra is True
    resource = root or bool(schema.get("x-kubernetes-embedded-resource"))
    result: dict[str, Any] = {}
    for key, item in value.items():
        where = _child(path, key)
        if resource and key == "metadata":
            result[key] = item  # ObjectMeta: checked by the API server's own rules
        elif resource and key in _ALWAYS_KEPT and key not in properties:
            result[key] = item
        elif key in properties:
            sub = properties[key]
            if item is None and not sub.get("nullable"):
                continue  # the API server drops a null it may not keep (before defaulting)
            result[key] = _walk(sub, item, where, out, prune)
        elif isinstance(extra, dict):
            result[key] = _walk(extra, item, where, out, prune)
        elif keep_unknown or not prune:
            result[key] = item
        else:
            out.unknown.append(where)
    if prune:  # a write: pruned, then defaulted, then validated, as the API server orders it
        for name, sub in properties.items():
            if name not in result and "default" in sub and not (resource and name in _ALWAYS_KEPT):
                result[name] = _walk(sub, copy.deepcopy(sub["default"]), _child(path, name),
                                     out, prune)
    for name in schema.get("required") or ():
        if name not in result:
            out.fail("FieldValueRequired", _child(path, name), "Required value")
    _counted(schema, len(result), path, out, "Properties", "properties")
    return result if prune else value


def _counted(schema: dict[str, Any], count: int, path: str, out: _Walk, keyword: str,
             noun: str) -> None:
    """`max<keyword>` / `min<keyword>`: Items of an array, Properties of an object."""
    most, least = schema.get(f"max{keyword}"), schema.get(f"min{keyword}")
    if most is not None and count > most:
        out.fail("FieldValueTooMany", path, f"Too many: {count}: must have at most {most} items")
    if least is not None and count < least:
        out.invalid(path, count, f"{path} in body should have at least {least} {noun}")


def _array(schema: dict[str, Any], value: list[Any], path: str, out: _Walk,
           prune: bool) -> list[Any]:
    items = schema.get("items")
    result = value
    if isinstance(items, dict):
        result = [_walk(items, item, f"{path}[{i}]", out, prune) for i, item in enumerate(value)]
    _counted(schema, len(result), path, out, "Items", "items")
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set" or schema.get("uniqueItems"):
        _unique(result, [json.dumps(v, sort_keys=True) for v in result], path, out)
    elif list_type == "map":
        keys = schema.get("x-kubernetes-list-map-keys") or ()
        _unique(result, [json.dumps([v.get(k) for k in keys]) if isinstance(v, dict) else ""
                         for v in result], path, out)
    return result if prune else value


def _unique(items: list[Any], marks: list[str], path: str, out: _Walk) -> None:
    seen: set[str] = set()
    for i, (item, mark) in enumerate(zip(items, marks, strict=True)):
        if mark in seen:
            out.fail("FieldValueDuplicate", f"{path}[{i}]", f"Duplicate value: {_shown(item)}")
        seen.add(mark)


def _values(schema: dict[str, Any], value: Any, path: str, out: _Walk) -> None:
    """The value validations (they never prune)."""
    if "enum" in schema and not any(_equal(value, v) for v in schema["enum"]):
        supported = ", ".join(_shown(v) for v in schema["enum"])
        out.fail("FieldValueNotSupported", path,
                 f"Unsupported value: {_shown(value)}: supported values: {supported}")
    if isinstance(value, str):
        _string(schema, value, path, out)
    elif _is("number", value):
        _number(schema, value, path, out)
    for sub in schema.get("allOf") or ():
        _walk(sub, value, path, out, prune=False)
    for keyword, wanted in (("anyOf", "at least one"), ("oneOf", "one and only one")):
        if keyword in schema:
            passing = sum(1 for sub in schema[keyword] if _passes(sub, value, path))
            if passing == 0 or (keyword == "oneOf" and passing > 1):
                out.invalid(path, value, f"{path} in body must validate {wanted} schema "
                                         f"({keyword})")
    if "not" in schema and _passes(schema["not"], value, path):
        out.invalid(path, value, f"{path} in body must not validate the schema (not)")


def _passes(schema: dict[str, Any], value: Any, path: str) -> bool:
    trial = _Walk()
    _walk(schema, value, path, trial, prune=False)
    return not trial.causes


def _string(schema: dict[str, Any], value: str, path: str, out: _Walk) -> None:
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        out.fail("FieldValueTooLong", path,
                 f"Too long: may not be more than {schema['maxLength']} bytes")
    if "minLength" in schema and len(value) < schema["minLength"]:
        out.invalid(path, value, f"{path} in body should be at least {schema['minLength']} "
                                 f"chars long")
    if "pattern" in schema and not _regex(schema["pattern"]).search(value):
        out.invalid(path, value, f"{path} in body should match '{schema['pattern']}'")
    if schema.get("format") == "date-time" and not _DATE_TIME.match(value):
        out.invalid(path, value, f"{path} in body must be of type date-time: {_shown(value)}")


def _number(schema: dict[str, Any], value: float, path: str, out: _Walk) -> None:
    if "minimum" in schema:
        low = schema["minimum"]
        if value < low or (schema.get("exclusiveMinimum") and value == low):
            word = "greater than" if schema.get("exclusiveMinimum") else \
                "greater than or equal to"
            out.invalid(path, value, f"{path} in body should be {word} {low}")
    if "maximum" in schema:
        high = schema["maximum"]
        if value > high or (schema.get("exclusiveMaximum") and value == high):
            word = "less than" if schema.get("exclusiveMaximum") else "less than or equal to"
            out.invalid(path, value, f"{path} in body should be {word} {high}")
    step = schema.get("multipleOf")
    if step and not float(value / step).is_integer():
        out.invalid(path, value, f"{path} in body should be a multiple of {step}")


# ---------------------------------------------------------------------------------------


def field_validation(value: str | None) -> str:
    """The request's `fieldValidation` (the API server's default is Warn)."""
    if value in (None, ""):
        return WARN
    if value not in FIELD_VALIDATIONS:
        raise bad_request(
            f'fieldValidation must be one of "Ignore", "Warn", or "Strict", got "{value}"')
    return value


def admit(rt: ResourceType, schema: dict[str, Any] | None, obj: dict[str, Any],
          subresource: str | None = None, mode: str = WARN,
          warnings: list[str] | None = None) -> dict[str, Any]:
    """`obj` pruned to what `schema` (the CRD version's openAPIV3Schema, None: no checks)
    specifies, or raise: 400 for unknown fields under Strict, 422 Invalid for the rest.
    A status write checks only `status`; a main-resource write of a kind with a status
    subresource checks all but `status` (carried over from the stored object)."""
    if schema is None:
        return obj
    out = _Walk()
    if subresource == "status":
        status_schema = (schema.get("properties") or {}).get("status")
        checked = dict(obj)
        if status_schema is not None and obj.get("status") is not None:
            checked["status"] = _walk(status_schema, obj["status"], "status", out, prune=True)
    else:
        status = obj.get("status")
        body = {k: v for k, v in obj.items() if not (rt.has_status and k == "status")}
        checked = _walk(schema, body, "", out, prune=True, root=True)
        if rt.has_status and status is not None:
            checked["status"] = status
    name = (obj.get("metadata") or {}).get("name", "")
    if out.unknown and mode == STRICT:
        fields = ", ".join(f'unknown field "{f}"' for f in out.unknown)
        raise KubeError(400, "BadRequest", f'{rt.kind} in version "{rt.version}" cannot be '
                        f"handled as a {rt.kind}: strict decoding error: {fields}")
    if out.unknown and mode == WARN and warnings is not None:
        warnings.extend(f'unknown field "{f}"' for f in out.unknown)
    if out.causes:
        raise invalid_fields(rt.kind, rt.group, name,
                             [(c.reason, c.path, c.body) for c in out.causes])
    return checked
