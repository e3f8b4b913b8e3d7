"""A tool call's arguments checked against the tool's published input schema.

The schema is the API's own (mcp_server/routes.py reads it from the OpenAPI document), so
this is the REST API's rulebook applied before the call, not a second one: an argument the
API would refuse for its shape (a name breaking the name rule, a count out of bounds) is
refused here with the same code the API would answer, `validation_failed`, naming each field,
and no request is sent. What only the API can judge (a zone that exists, a name still free)
is left to it.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError


class ArgumentCheck:
    def __init__(self, schema: dict[str, Any]) -> None:
        self._schema = schema
        self._validator = Draft202012Validator(schema)

    def problems(self, arguments: dict[str, Any]) -> dict[str, list[str]]:
        """Field path → what is wrong with it (empty when the arguments are acceptable)."""
        found: dict[str, list[str]] = {}
        for error in sorted(self._validator.iter_errors(arguments), key=_where):
            if error.validator == "additionalProperties" and isinstance(error.instance, dict):
                # each name the schema does not have, as its own field
                known = set((error.schema or {}).get("properties") or ())
                base = [str(part) for part in error.absolute_path]
                for name in sorted(set(error.instance) - known):
                    found.setdefault(".".join([*base, name]), []).append(
                        "unknown field: this tool takes no such argument")
                continue
            found.setdefault(_where(error), []).append(self._explain(error))
        return found

    def _explain(self, error: ValidationError) -> str:
        if error.validator == "required":
            return "required"
        if error.validator == "additionalProperties":
            return error.message
        described = error.schema.get("description") if isinstance(error.schema, dict) else None
        if error.validator == "pattern" and described:
            return f"{error.instance!r} does not follow the rule: {described}"
        return error.message


def summary(problems: dict[str, list[str]]) -> str:
    return "; ".join(f"{field}: {', '.join(why)}" for field, why in problems.items())


def _where(error: ValidationError) -> str:
    path = [str(part) for part in error.absolute_path]
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else "?"
        path.append(missing)
    return ".".join(path) or "_"
