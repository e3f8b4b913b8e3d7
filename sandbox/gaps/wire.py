"""A gap's requests and answers on the wire, for JSON-protocol and REST-JSON services alike.

Both kinds of service reach a gap the same way: the operation's input members, validated
against botocore's model, go in; an answer dict comes out, cut to the output shape and
encoded as the protocol wants it; an error comes out in the protocol's error shape. Only the
reading of the request differs: a JSON-protocol request is its body, while a REST-JSON
request spreads its members over URI labels, the query string, headers and the body, each
where the model puts it.

EC2 (the `ec2` query protocol) reaches a gap only for calls the gap checks before moto
answers them (`ctx.moto()`): its top-level scalar members are read, typed as the model says
(`DryRun=true` a boolean); lists and structures stay flattened in `ctx.call.params`.
"""

from __future__ import annotations

import json
import uuid
from typing import Any
from urllib.parse import parse_qs

from botocore.model import OperationModel, Shape

from sandbox.errors import error_reply
from sandbox.gaps.sagemaker_model import RequestInvalid, check_input, shaped
from sandbox.identify import Call
from sandbox.reply import Reply

# The code a service answers a request that breaks its model with, where it is not
# `ValidationException` (EKS never says ValidationException; boto3 raises these by name).
REQUEST_INVALID_CODE: dict[str, str] = {"eks": "InvalidParameterException"}


def protocol(op: OperationModel) -> str:
    return str(op.service_model.protocol)


def request_params(op: OperationModel, call: Call, environ: dict[str, Any],
                   body: bytes) -> dict[str, Any]:
    """The operation's input members, checked against the model (raises RequestInvalid)."""
    kind = protocol(op)
    if kind == "rest-json":
        params = _rest_params(op, call, environ, body)
    elif kind in ("ec2", "query"):
        params = _query_params(op, call)
    else:
        params = call.params
    check_input(op, params)
    return params


def _query_params(op: OperationModel, call: Call) -> dict[str, Any]:
    """A query-protocol request's top-level scalar members, typed (the rest stays flat)."""
    shape = op.input_shape
    if shape is None:
        return {}
    params: dict[str, Any] = {}
    for member, member_shape in shape.members.items():
        if member_shape.type_name in ("list", "structure", "map"):
            continue
        wire = (member_shape.serialization.get("queryName")
                or member_shape.serialization.get("name") or member)
        wire = wire[:1].upper() + wire[1:]
        for key in (wire, member):
            if key in call.params:
                params[member] = _coerce(member_shape, [str(call.params[key])])
                break
    return params


def _rest_params(op: OperationModel, call: Call, environ: dict[str, Any],
                 body: bytes) -> dict[str, Any]:
    shape = op.input_shape
    params: dict[str, Any] = {}
    if shape is None:
        return params
    query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
    payload: dict[str, Any] = {}
    if body:
        try:
            loaded = json.loads(body)
        except ValueError as exc:
            raise RequestInvalid("SerializationException",
                                 "The request body is not valid JSON.") from exc
        if not isinstance(loaded, dict):
            raise RequestInvalid("SerializationException",
                                 "The request body must be a JSON object.")
        payload = loaded
    for member, member_shape in shape.members.items():
        location = member_shape.serialization.get("location")
        wire = member_shape.serialization.get("name", member)
        if location == "uri":
            if wire in call.params:
                params[member] = call.params[wire]
        elif location == "querystring":
            if wire in query:
                params[member] = _coerce(member_shape, query[wire])
        elif location == "header":
            value = environ.get("HTTP_" + wire.upper().replace("-", "_"))
            if value is not None:
                params[member] = value
        elif member in payload:
            params[member] = payload[member]
    return params


def _coerce(shape: Shape, raw: list[str]) -> Any:
    """A query-string value in the member's type (left as sent when it is not one)."""
    if shape.type_name == "list":
        return raw
    value = raw[-1]
    if shape.type_name in ("integer", "long"):
        try:
            return int(value)
        except ValueError:
            return value
    if shape.type_name == "boolean":
        return {"true": True, "false": False}.get(value.lower(), value)
    return value


def answer(op: OperationModel, value: dict[str, Any]) -> Reply:
    """A successful answer: `value` cut to the output shape, encoded for the protocol."""
    shape = op.output_shape
    body = json.dumps(shaped(value, shape) if shape is not None else {}).encode()
    request_id = str(uuid.uuid4())
    if protocol(op) == "rest-json":
        status = int(op.http.get("responseCode", 200))
        return Reply(status, body, [("Content-Type", "application/json"),
                                    ("x-amzn-RequestId", request_id)])
    version = op.service_model.metadata.get("jsonVersion", "1.1")
    return Reply(200, body, [("Content-Type", f"application/x-amz-json-{version}"),
                             ("x-amzn-RequestId", request_id)])


def error(op: OperationModel, status: int, code: str, message: str) -> Reply:
    """An error answer in the protocol's shape."""
    return error_reply(protocol(op), status, code, message)


def invalid(op: OperationModel, service: str, exc: RequestInvalid) -> Reply:
    """A request that breaks the model, refused with the code this service uses for it."""
    return error(op, 400, REQUEST_INVALID_CODE.get(service, exc.code), exc.message)
