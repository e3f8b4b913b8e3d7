"""A next step a read suggests, named as the REST call that takes it: the method, the route's
path template and its arguments, the path they fill in and the body. The browser and a
script make that call; an agent gets the MCP tool the MCP server maps the route to (the app
names no tool). hypd never runs a suggested call itself.

The routes below are the ones reads suggest; a test holds each to the API's own OpenAPI
document and to a tool of the MCP table, so a renamed route fails there, not in a user's
hands.
"""

from __future__ import annotations

from typing import Any

Route = tuple[str, str]
"""(method, path template), as the OpenAPI document writes it."""

OPERATION: Route = ("GET", "/api/v1/operations/{operation_id}")
RETRY_OPERATION: Route = ("POST", "/api/v1/operations/{operation_id}/retry")
CLUSTER: Route = ("GET", "/api/v1/clusters/{name}")
DELETE_CLUSTER: Route = ("DELETE", "/api/v1/clusters/{name}")
RUN_STAGE: Route = ("POST", "/api/v1/clusters/{name}/stages/{stage}/run")
NODE: Route = ("GET", "/api/v1/clusters/{cluster}/nodes/{node_id}")
REBOOT_NODES: Route = ("POST", "/api/v1/clusters/{cluster}/nodes/reboot")
REPLACE_NODES: Route = ("POST", "/api/v1/clusters/{cluster}/nodes/replace")

ROUTES: tuple[Route, ...] = (OPERATION, RETRY_OPERATION, CLUSTER, DELETE_CLUSTER, RUN_STAGE,
                             NODE, REBOOT_NODES, REPLACE_NODES)


def call(route: Route, args: dict[str, Any], body: dict[str, Any] | None = None
         ) -> dict[str, Any]:
    """{rest: {method, route, args, path, body}, mutating} for one call of `route`: `args`
    fill the path's placeholders, `body` goes in the request."""
    method, template = route
    return {"rest": {"method": method, "route": template, "args": args,
                     "path": template.format(**args), "body": body},
            "mutating": method != "GET"}
