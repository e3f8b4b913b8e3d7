"""flask-smorest's Blueprint, with an argument parser that answers an empty query at once.

A status read (`GET /operations/<id>`) is polled with no query string nearly always, and
webargs loaded that empty query through the route's schema on every request: the second
largest cost a read paid that a bare Flask route does not (docs/benchmarks.md, "Status
reads"). Loading nothing gives the same arguments every time when the schema has no hooks
and no callable defaults, so those are loaded once per schema and copied. Anything else
(a query string, a schema class, validators, hooks) is parsed as webargs always did;
what a client sees, the OpenAPI document included, is the same.
"""

from __future__ import annotations

from typing import Any

import marshmallow as ma
from flask import request
from flask_smorest import Blueprint as SmorestBlueprint
from webargs.core import _UNKNOWN_DEFAULT_PARAM
from webargs.flaskparser import FlaskParser

IMMUTABLE = (str, int, float, bool, type(None))
"""The values an empty query's arguments may hold to be shared between requests."""


class QueryParser(FlaskParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._empty: dict[ma.Schema, dict[str, Any] | None] = {}
        """Schema instance → its arguments for an empty query, or None: not constant."""

    def parse(self, argmap: Any, req: Any = None, *, location: str | None = None,
              unknown: str | None = _UNKNOWN_DEFAULT_PARAM, validate: Any = None,
              **kwargs: Any) -> Any:
        if validate is None and isinstance(argmap, ma.Schema) and \
                (location or self.location) in ("query", "querystring") and \
                not (req if req is not None else request).query_string:
            try:
                constant = self._empty[argmap]
            except KeyError:
                parsed = super().parse(argmap, req, location=location, unknown=unknown,
                                       **kwargs)
                self._empty[argmap] = dict(parsed) if _constant(argmap, parsed) else None
                return parsed
            if constant is not None:
                return dict(constant)
        return super().parse(argmap, req, location=location, unknown=unknown,
                             validate=validate, **kwargs)


def _constant(schema: ma.Schema, parsed: Any) -> bool:
    """Whether loading an empty query through `schema` gives `parsed` every time."""
    return (isinstance(parsed, dict)
            and not any(schema._hooks.values())
            and not any(callable(field.load_default) for field in schema.fields.values())
            and all(isinstance(value, IMMUTABLE) for value in parsed.values()))


class Blueprint(SmorestBlueprint):
    ARGUMENTS_PARSER = QueryParser()
