"""The part of Kubernetes JSONPath that CRD printer columns use.

A column's `jsonPath` is evaluated as the API server evaluates it (`{<path>}`, missing keys
allowed): `.a.b`, `['a.b']`, `a\\.b` (an escaped dot), `[0]`, `[-1]`, `[*]`, and filters
`[?(@.type=="Ready")]` (`==`, `!=`; string, number or boolean literals; `@.x` alone tests
presence). Every step yields zero or more values; the column shows the first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

_FILTER = re.compile(r"^\?\(\s*@((?:\.[^=!<>\s]+)*)\s*(?:(==|!=)\s*(.+?))?\s*\)$")


class JsonPathError(ValueError):
    pass


def _split_dotted(text: str) -> list[str]:
    """Field names of `a.b\\.c` → ["a", "b.c"]."""
    names, current, i = [], "", 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            current += text[i + 1]
            i += 2
            continue
        if ch == ".":
            names.append(current)
            current = ""
        else:
            current += ch
        i += 1
    names.append(current)
    return [n for n in names if n]


def parse(path: str) -> list[tuple[str, Any]]:
    """Steps of a path: ("field", name) | ("index", n) | ("all", None) | ("filter", (...))."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if text.startswith("$"):
        text = text[1:]
    steps: list[tuple[str, Any]] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "[":
            end = _closing(text, i)
            inner = text[i + 1 : end].strip()
            steps.append(_bracket(inner, path))
            i = end + 1
        elif ch == ".":
            j = i + 1
            while j < len(text) and text[j] != "[" and not (text[j] == "." and text[j - 1] != "\\"):
                j += 1
            steps.extend(("field", name) for name in _split_dotted(text[i + 1 : j]))
            i = j
        else:
            j = i
            while j < len(text) and text[j] not in ".[":
                j += 1
            steps.append(("field", text[i:j]))
            i = j
    return steps


def _closing(text: str, start: int) -> int:
    depth, quote = 0, ""
    for j in range(start, len(text)):
        ch = text[j]
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth == 0:
                return j
    raise JsonPathError(f"unclosed [ in {text!r}")


def _literal(text: str) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    try:
        return json.loads(text)
    except ValueError as exc:
        raise JsonPathError(f"unknown literal {text!r}") from exc


def _bracket(inner: str, path: str) -> tuple[str, Any]:
    if inner == "*":
        return ("all", None)
    if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
        return ("field", inner[1:-1])
    if re.fullmatch(r"-?\d+", inner):
        return ("index", int(inner))
    found = _FILTER.match(inner)
    if found:
        fields = _split_dotted(found.group(1))
        operator = found.group(2)
        value = _literal(found.group(3)) if operator else None
        return ("filter", (fields, operator, value))
    raise JsonPathError(f"unsupported JSONPath {path!r}")


def _walk(value: Any, fields: list[str]) -> tuple[bool, Any]:
    for name in fields:
        if not isinstance(value, dict) or name not in value:
            return False, None
        value = value[name]
    return True, value


def _step(values: list[Any], step: tuple[str, Any]) -> Iterator[Any]:
    kind, arg = step
    for value in values:
        if kind == "field":
            if isinstance(value, dict) and arg in value:
                yield value[arg]
        elif kind == "index":
            if isinstance(value, list) and -len(value) <= arg < len(value):
                yield value[arg]
        elif kind == "all":
            if isinstance(value, list):
                yield from value
            elif isinstance(value, dict):
                yield from value.values()
        else:
            fields, operator, wanted = arg
            for item in value if isinstance(value, list) else []:
                present, got = _walk(item, fields)
                if present and (
                    operator is None
                    or (operator == "==" and got == wanted)
                    or (operator == "!=" and got != wanted)
                ):
                    yield item


def find(obj: Any, path: str) -> list[Any]:
    """Every value `path` selects in `obj` (missing keys select nothing)."""
    values = [obj]
    for step in parse(path):
        values = list(_step(values, step))
    return values


def text(value: Any) -> str:
    """A value printed as JSONPath prints it in a string column."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)
