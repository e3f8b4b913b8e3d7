"""Kubernetes API errors as the API server sends them: a `Status` object and its HTTP code.

The official client raises `ApiException` with the status code and keeps the body, and the
product branches on `e.status` (404, 409, 422 ...), so each error carries the code, the
`reason` and the wording the real API server uses.
"""

from __future__ import annotations

from typing import Any


class KubeError(Exception):
    """An error answer: HTTP `code` and a `Status` body."""

    def __init__(
        self, code: int, reason: str, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def _details(resource: str, group: str, name: str | None) -> dict[str, Any]:
    details: dict[str, Any] = {"kind": resource}
    if name is not None:
        details["name"] = name
    if group:
        details["group"] = group
    return details


def not_found(resource: str, group: str, name: str) -> KubeError:
    return KubeError(
        404,
        "NotFound",
        f'{_qualified(resource, group)} "{name}" not found',
        _details(resource, group, name),
    )


def no_such_resource() -> KubeError:
    return KubeError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(resource: str, group: str, name: str) -> KubeError:
    return KubeError(
        409,
        "AlreadyExists",
        f'{_qualified(resource, group)} "{name}" already exists',
        _details(resource, group, name),
    )


def conflict(resource: str, group: str, name: str) -> KubeError:
    return KubeError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": the object '
        "has been modified; please apply your changes to the latest version and try again",
        _details(resource, group, name),
    )


def apply_conflict(conflicts: list[tuple[str, str]]) -> KubeError:
    """Server-side apply found fields owned by other managers (`(manager, field)` pairs)."""
    lines = [f'conflict with "{manager}": {field}' for manager, field in conflicts]
    plural = "s" if len(conflicts) != 1 else ""
    message = f"Apply failed with {len(conflicts)} conflict{plural}: " + "\n".join(lines)
    causes = [
        {"reason": "FieldManagerConflict", "message": f'conflict with "{m}"', "field": f}
        for m, f in conflicts
    ]
    return KubeError(409, "Conflict", message, {"causes": causes})


def invalid(
    kind: str, group: str, name: str, field: str, detail: str, value: Any = None
) -> KubeError:
    """422: the object does not pass validation (one cause)."""
    shown = f'Invalid value: "{value}": ' if value is not None else ""
    return invalid_fields(kind, group, name, [("FieldValueInvalid", field, shown + detail)])


def invalid_fields(
    kind: str, group: str, name: str, causes: list[tuple[str, str, str]]
) -> KubeError:
    """422: the object does not pass validation; `causes` are (reason, field, message) as
    apimachinery's field errors give them (`FieldValueRequired`, "spec.x", "Required value").
    One cause reads `field: message`, several `[field: message, ...]`, as the API server
    aggregates them."""
    what = f'{kind}.{group} "{name}" is invalid' if group else f'{kind} "{name}" is invalid'
    listed = [f"{field}: {message}" for _, field, message in causes]
    joined = listed[0] if len(listed) == 1 else "[" + ", ".join(listed) + "]"
    return KubeError(
        422,
        "Invalid",
        f"{what}: {joined}",
        {
            "name": name,
            **({"group": group} if group else {}),
            "kind": kind,
            "causes": [
                {"reason": reason, "message": message, "field": field}
                for reason, field, message in causes
            ],
        },
    )


def bad_request(message: str) -> KubeError:
    return KubeError(400, "BadRequest", message)


def unsupported_media_type(content_type: str, accepted: list[str]) -> KubeError:
    return KubeError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{', '.join(accepted)}",
        {},
    )


def method_not_allowed(verb: str, resource: str) -> KubeError:
    return KubeError(
        405,
        "MethodNotAllowed",
        f"the server does not allow this method on the requested resource ({verb} {resource})",
        {},
    )


def unauthorized() -> KubeError:
    return KubeError(401, "Unauthorized", "Unauthorized")


def forbidden_path(user: str, verb: str, path: str) -> KubeError:
    return KubeError(
        403,
        "Forbidden",
        f'forbidden: User "{user}" cannot {verb} path "{path}"',
        {},
    )


def forbidden(
    user: str, verb: str, resource: str, group: str, namespace: str | None, name: str | None
) -> KubeError:
    where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    target = f'{_qualified(resource, group)} "{name}"' if name else _qualified(resource, group)
    return KubeError(
        403,
        "Forbidden",
        f'{target} is forbidden: User "{user}" cannot {verb} resource "{resource}" '
        f'in API group "{group}" {where}',
        _details(resource, group, name),
    )


def gone(message: str) -> KubeError:
    return KubeError(410, "Expired", message)
