"""The output schema a tool publishes: its route's reply, as far down as an agent reads it.

Every byte of `tools/list` is context an agent pays before its first question, and the
routes' full reply schemas (every nested field, its description, the dashboard's `x-hypd-*`
words) were three fifths of it (docs/benchmarks.md, "The tool list"). An agent reads which
fields a reply has from here and everything else — the values, their types, what is nested —
from the reply itself, which comes back as structured content and as text; a client that
validates structured content (as the TypeScript SDK's does) needs a schema every real reply
meets. So a tool publishes, from `BoundTool.output_schema()` (every 2xx reply the route
documents, as the server returns it):

- one object whose properties are the union of every reply shape's top-level fields (a
  dry run's plan, a `{"changed": false}` and a 202 operation side by side), each as `{}`:
  the name, not the type (the types were 12 KB of the list; a typed client reads the
  OpenAPI document, whose reply schemas are whole);
- `required`: the fields every shape requires (a mutation's status_tool, status_args,
  poll_after_seconds among them);
- nothing below the top level, no descriptions, no extensions.

Whatever the full schema admits, this admits (it only forgets), so a real reply that meets
the document meets it; tests/mcp_server/test_mcp_tools.py checks that, shape by shape.
`types()` says which JSON types a schema admits (the tests' measure of "admits").
"""

from __future__ import annotations

from typing import Any

Types = frozenset[str] | None
"""The JSON types a value may take; None: any."""


def output(schema: dict[str, Any]) -> dict[str, Any]:
    """The published form of a full output schema (an object's, as MCP wants)."""
    names: dict[str, None] = {}  # every shape's fields, in order, once
    required: set[str] | None = None
    for shape in shapes(schema):
        names.update(dict.fromkeys(shape.get("properties") or {}))
        required = set(shape.get("required") or ()) if required is None else (
            required & set(shape.get("required") or ()))
    out: dict[str, Any] = {"type": "object", "properties": {name: {} for name in names}}
    if required:
        out["required"] = [name for name in names if name in required]
    return out


def shapes(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The object shapes a schema admits: its anyOf/oneOf branches, else itself."""
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return [shape for branch in schema[key] for shape in shapes(branch)]
    return [schema]


def types(schema: Any) -> Types:
    """The JSON types a schema admits at its top, or None when it does not say."""
    if not isinstance(schema, dict):
        return None
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            found: Types = frozenset()
            for branch in schema[key]:
                found = _union(found, types(branch))
            return found
    kind = schema.get("type")
    if isinstance(kind, str):
        named = frozenset({kind})
    elif isinstance(kind, list):
        named = frozenset(kind)
    elif "properties" in schema:
        named = frozenset({"object"})
    elif "enum" in schema:
        named = frozenset(_type_of(v) for v in schema["enum"])
    elif "const" in schema:
        named = frozenset({_type_of(schema["const"])})
    else:
        return None
    if "integer" in named and "number" in named:
        named = named - {"integer"}
    return named


def _union(a: Types, b: Types) -> Types:
    if a is None or b is None:
        return None
    both = a | b
    return both - {"integer"} if "number" in both else both


def _type_of(value: Any) -> str:
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
