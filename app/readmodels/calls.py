"""A next step a read suggests, named both ways: the MCP tool an agent calls (with its
arguments) and the REST call that tool makes, so the browser, a script and an agent are
pointed at the same thing. hypd never runs a suggested call itself.

The table below is the one place a read names a tool; a test holds every row equal to the
MCP tool table (mcp_server/tools.py), so a renamed tool or route fails there, not in a
user's hands.
"""

from __future__ import annotations

from typing import Any

TOOL_CALLS: dict[str, tuple[str, str]] = {
    "get_operation": ("GET", "/api/v1/operations/{operation_id}"),
    "retry_operation": ("POST", "/api/v1/operations/{operation_id}/retry"),
    "get_cluster": ("GET", "/api/v1/clusters/{name}"),
    "delete_cluster": ("DELETE", "/api/v1/clusters/{name}"),
    "run_cluster_stage": ("POST", "/api/v1/clusters/{name}/stages/{stage}/run"),
    "get_node": ("GET", "/api/v1/clusters/{cluster}/nodes/{node_id}"),
    "reboot_nodes": ("POST", "/api/v1/clusters/{cluster}/nodes/reboot"),
    "replace_nodes": ("POST", "/api/v1/clusters/{cluster}/nodes/replace"),
}
"""tool → (method, path template) of the route it calls."""


def call(tool: str, args: dict[str, Any], body: dict[str, Any] | None = None
         ) -> dict[str, Any]:
    """{tool, args, rest: {method, path, body}, mutating} for one call of `tool`: `args`
    fill the path, `body` goes in the request (and in the tool's arguments too)."""
    method, template = TOOL_CALLS[tool]
    return {"tool": tool, "args": {**args, **(body or {})},
            "rest": {"method": method, "path": template.format(**args), "body": body},
            "mutating": method != "GET"}
