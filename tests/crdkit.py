"""Validate manifests against the real CRD schemas in tests/crds/, as closed schemas.

The CRDs leave `additionalProperties` open, so a misspelt field would pass; here every
object schema that lists its properties refuses any other (unless the CRD marks it
`x-kubernetes-preserve-unknown-fields`), and `x-kubernetes-int-or-string` becomes an integer
or a string. CEL rules (`x-kubernetes-validations`) are not evaluated: a test states the
ones it relies on.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import jsonschema
import yaml

CRD_DIR = Path(__file__).parent / "crds"
SANDBOX_CRD_DIR = Path(__file__).parent.parent / "sandbox" / "data" / "crds"
"""The upstream CRDs the sandbox serves (tests/crds/SOURCES.md)."""


def _close(schema: dict[str, Any]) -> dict[str, Any]:
    schema = {k: v for k, v in schema.items() if not k.startswith("x-kubernetes-validations")}
    if schema.pop("x-kubernetes-int-or-string", False):
        rest = {k: v for k, v in schema.items() if k not in ("type", "anyOf")}
        return {"anyOf": [{"type": "integer"}, {"type": "string", **rest}]}
    nullable = schema.pop("nullable", False)
    if "properties" in schema:
        schema["properties"] = {k: _close(v) for k, v in schema["properties"].items()}
        if not schema.get("x-kubernetes-preserve-unknown-fields"):
            schema.setdefault("additionalProperties", False)
    if isinstance(schema.get("additionalProperties"), dict):
        schema["additionalProperties"] = _close(schema["additionalProperties"])
    if isinstance(schema.get("items"), dict):
        schema["items"] = _close(schema["items"])
    if "anyOf" in schema:
        schema["anyOf"] = [_close(s) for s in schema["anyOf"]]
    if nullable and "type" in schema:
        schema["type"] = [schema["type"], "null"]
    return schema


def _closed_version(crd: dict[str, Any], version: str) -> dict[str, Any]:
    found = next(v for v in crd["spec"]["versions"] if v["name"] == version)
    schema = _close(copy.deepcopy(found["schema"]["openAPIV3Schema"]))
    # metadata is Kubernetes' own ObjectMeta: checked by the API server, open here
    schema["properties"]["metadata"] = {"type": "object"}
    return schema


@functools.cache
def closed_schema(file: str, version: str) -> dict[str, Any]:
    """`file` under tests/crds/ or sandbox/data/crds/ (or an absolute path: a CRD hypd
    ships)."""
    path = CRD_DIR / file
    if not path.exists():
        path = SANDBOX_CRD_DIR / file
    crd = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return _closed_version(crd, version)


@functools.cache
def _validator(file: str, version: str) -> Any:
    """The closed schema's validator, its schema checked once (checking RayJob's takes
    seconds: `jsonschema.validate` would do it at every call)."""
    schema = closed_schema(file, version)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def validate(manifest: dict[str, Any], file: str, version: str) -> None:
    """Raise jsonschema.ValidationError when `manifest` does not fit the closed schema."""
    error = jsonschema.exceptions.best_match(_validator(file, version).iter_errors(manifest))
    if error is not None:
        raise error


def validate_served(manifest: dict[str, Any], crd: dict[str, Any], version: str) -> None:
    """The same against a CRD as a cluster serves it (read back from its API server)."""
    jsonschema.validate(manifest, _closed_version(crd, version))
