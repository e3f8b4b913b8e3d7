"""AWS error replies shaped the way each protocol's SDK parser expects them.

An injected fault is only useful if the product's boto3 sees exactly what AWS would send: the
right status, the error code where botocore looks for it (EC2's `<Response><Errors>`, the
query protocols' `<ErrorResponse>`, JSON's `__type`, REST-JSON's `x-amzn-ErrorType` header,
S3's `<Error>`), so its retry logic classifies it as AWS's would.
"""

from __future__ import annotations

import json
import uuid
from xml.sax.saxutils import escape

from sandbox.reply import Reply

# (status, code, message) per fault kind and protocol family.
_DEFAULTS: dict[str, dict[str, tuple[int, str, str]]] = {
    "throttle": {
        "ec2": (503, "RequestLimitExceeded", "Request limit exceeded."),
        "query": (400, "Throttling", "Rate exceeded"),
        "json": (400, "ThrottlingException", "Rate exceeded"),
        "rest-xml": (503, "SlowDown", "Please reduce your request rate."),
    },
    "server_error": {
        "ec2": (500, "InternalError", "An internal error has occurred."),
        "query": (500, "InternalFailure", "An internal error has occurred."),
        "json": (500, "InternalFailure", "An internal error has occurred."),
        "rest-xml": (500, "InternalError", "We encountered an internal error."),
    },
    "timeout": {
        "ec2": (503, "Unavailable", "The service is unavailable."),
        "query": (503, "ServiceUnavailable", "The service is unavailable."),
        "json": (503, "ServiceUnavailable", "The service is unavailable."),
        "rest-xml": (503, "ServiceUnavailable", "The service is unavailable."),
    },
    "error": {
        "ec2": (400, "InvalidParameterValue", "Injected error."),
        "query": (400, "ValidationError", "Injected error."),
        "json": (400, "ValidationException", "Injected error."),
        "rest-xml": (400, "InvalidRequest", "Injected error."),
    },
}
KINDS = frozenset(_DEFAULTS)


def _family(protocol: str) -> str:
    if protocol in ("ec2", "query", "rest-xml"):
        return protocol
    return "json"


def defaults(kind: str, protocol: str) -> tuple[int, str, str]:
    """AWS's usual (status, code, message) for a fault kind on a protocol."""
    return _DEFAULTS[kind][_family(protocol)]


def error_reply(protocol: str, status: int, code: str, message: str) -> Reply:
    """An AWS error answer for `protocol` ("ec2", "query", "json", "rest-json", "rest-xml")."""
    request_id = str(uuid.uuid4())
    code_x, message_x = escape(code), escape(message)
    if protocol == "ec2":
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Response><Errors><Error><Code>{code_x}</Code><Message>{message_x}</Message>"
            f"</Error></Errors><RequestID>{request_id}</RequestID></Response>"
        )
        return Reply(status, body.encode(), [("Content-Type", "text/xml")])
    if protocol == "query":
        side = "Sender" if status < 500 else "Receiver"
        body = (
            f"<ErrorResponse><Error><Type>{side}</Type><Code>{code_x}</Code>"
            f"<Message>{message_x}</Message></Error><RequestId>{request_id}</RequestId>"
            "</ErrorResponse>"
        )
        return Reply(status, body.encode(), [("Content-Type", "text/xml")])
    if protocol == "rest-xml":
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{code_x}</Code><Message>{message_x}</Message>"
            f"<RequestId>{request_id}</RequestId></Error>"
        )
        return Reply(
            status,
            body.encode(),
            [("Content-Type", "application/xml"), ("x-amz-request-id", request_id)],
        )
    if protocol == "json":
        payload = json.dumps({"__type": code, "message": message}).encode()
        return Reply(
            status,
            payload,
            [("Content-Type", "application/x-amz-json-1.1"), ("x-amzn-RequestId", request_id)],
        )
    # rest-json and anything unknown: the header is where botocore looks first.
    payload = json.dumps({"message": message}).encode()
    return Reply(
        status,
        payload,
        [
            ("Content-Type", "application/json"),
            ("x-amzn-ErrorType", code),
            ("x-amzn-RequestId", request_id),
        ],
    )
