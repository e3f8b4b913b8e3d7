"""Every regular expression a schema checks a value against matches the whole value, as the
OpenAPI document (and every client reading it) means it: marshmallow's own `Regexp` uses
`re.match`, whose `$` also matches before a trailing newline."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator

import pytest
from marshmallow import Schema, ValidationError, fields, validate

import schemas
from schemas.common import Name, Pattern, Region, StreamId
from vocabulary import patterns


def _fields(field: fields.Field) -> Iterator[fields.Field]:
    yield field
    for inner in (getattr(field, "inner", None), getattr(field, "key_field", None),
                  getattr(field, "value_field", None), *getattr(field, "tuple_fields", ())):
        if inner is not None:
            yield from _fields(inner)


def _regex_validators() -> Iterator[tuple[str, validate.Regexp]]:
    for module in pkgutil.iter_modules(schemas.__path__):
        loaded = importlib.import_module(f"schemas.{module.name}")
        for name, value in vars(loaded).items():
            if not (isinstance(value, type) and issubclass(value, Schema)):
                continue
            for field_name, declared in value._declared_fields.items():
                for field in _fields(declared):
                    for validator in field.validators:
                        if isinstance(validator, validate.Regexp):
                            yield f"{module.name}.{name}.{field_name}", validator


def test_every_pattern_in_the_schemas_matches_the_whole_value():
    found = list(_regex_validators())
    assert len(found) >= 50, len(found)
    assert [where for where, v in found if not isinstance(v, Pattern)] == []
    # Python's \d is any script's digit, ECMAScript's (the OpenAPI reader's) only ASCII
    assert [where for where, v in found if "\\d" in v.regex.pattern] == []


@pytest.mark.parametrize(("field", "value"), [
    (Name(), "lab\n"), (Region(), "us-west-2\n"), (StreamId("", "bad"), "1-0\n"),
    (StreamId("", "bad"), "\u0661-\u0661"), (StreamId("", "bad"), "1-0 "),
])
def test_a_trailing_newline_or_foreign_digit_fails(field, value):
    with pytest.raises(ValidationError):
        field.deserialize(value)


def test_the_document_keeps_the_pattern_as_written():
    assert Name().validators[0].regex.pattern == patterns.NAME.pattern
    assert Name().deserialize("lab") == "lab"
