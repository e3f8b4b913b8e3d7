"""Request bodies in Kubernetes' protobuf encoding, for the few kinds clients send that way.

kubectl's typed clients (`kubectl auth can-i`, `auth whoami`) POST
`application/vnd.kubernetes.protobuf`: the magic `k8s\\0`, then a `runtime.Unknown` message
(`typeMeta` = 1 {apiVersion = 1, kind = 2}, `raw` = 2, ...) whose `raw` is the object in
the generated.proto encoding of its API group. This module decodes the wire format and the
messages listed in `SCHEMAS` (field numbers from k8s.io/api's generated.proto) into the JSON
shape; any other kind is refused with 415 as an API server refuses what it cannot decode.
Answers go back as JSON, which those clients accept (`Accept: ...protobuf,application/json`).
"""

from __future__ import annotations

from typing import Any

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

Schema = dict[int, tuple[str, Any]]  # field number → (JSON name, "string" | nested schema)

_RESOURCE_ATTRIBUTES: Schema = {
    1: ("namespace", "string"), 2: ("verb", "string"), 3: ("group", "string"),
    4: ("version", "string"), 5: ("resource", "string"), 6: ("subresource", "string"),
    7: ("name", "string"),
}
_NON_RESOURCE_ATTRIBUTES: Schema = {1: ("path", "string"), 2: ("verb", "string")}
_OBJECT_META: Schema = {1: ("name", "string"), 2: ("generateName", "string"),
                        3: ("namespace", "string")}
SCHEMAS: dict[tuple[str, str], Schema] = {
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): {
        1: ("metadata", _OBJECT_META),
        2: ("spec", {1: ("resourceAttributes", _RESOURCE_ATTRIBUTES),
                     2: ("nonResourceAttributes", _NON_RESOURCE_ATTRIBUTES)}),
    },
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): {
        1: ("metadata", _OBJECT_META),
        2: ("spec", {1: ("namespace", "string")}),
    },
    ("authentication.k8s.io/v1", "SelfSubjectReview"): {1: ("metadata", _OBJECT_META)},
}


class ProtobufError(ValueError):
    pass


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("varint too long")


def fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) in wire order: varints as int, length-delimited as bytes."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise ProtobufError("truncated field")
            out.append((number, data[pos : pos + size]))
            pos += size
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
    return out


def decode(data: bytes, schema: Schema) -> dict[str, Any]:
    """A message as JSON, by `schema` (unknown fields are skipped)."""
    out: dict[str, Any] = {}
    for number, value in fields(data):
        if number not in schema or not isinstance(value, bytes):
            continue
        name, kind = schema[number]
        out[name] = value.decode("utf-8") if kind == "string" else decode(value, kind)
    return out


def envelope(body: bytes) -> tuple[str, str, bytes]:
    """(apiVersion, kind, raw object) of a protobuf-encoded request body."""
    if not body.startswith(MAGIC):
        raise ProtobufError("the body does not start with the Kubernetes protobuf magic")
    parts = dict(fields(body[len(MAGIC):]))
    meta = parts.get(1)
    raw = parts.get(2)
    if not isinstance(meta, bytes) or not isinstance(raw, bytes):
        raise ProtobufError("the body is not a runtime.Unknown envelope")
    type_meta = decode(meta, {1: ("apiVersion", "string"), 2: ("kind", "string")})
    return type_meta.get("apiVersion", ""), type_meta.get("kind", ""), raw


def object_from(body: bytes) -> dict[str, Any] | None:
    """The JSON form of a protobuf body of a kind in `SCHEMAS`, else None."""
    api_version, kind, raw = envelope(body)
    schema = SCHEMAS.get((api_version, kind))
    if schema is None:
        return None
    return {"apiVersion": api_version, "kind": kind, **decode(raw, schema)}
