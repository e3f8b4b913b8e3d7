"""The REST face's words in the MCP face's: a route a reply names becomes the tool that calls it.

The REST API names only routes — it knows nothing of MCP. Two shapes in its replies point
somewhere, and this module adds the tool an agent calls for each, from the tool table
(mcp_server/tools.py), before a reply reaches the agent:

- `<what>_route: "/api/v1/operations/op_1"` — a path to read next (a mutation's
  `status_route`, a job's `mlflow.ui_url_route`). It gains `<what>_tool` and `<what>_args`
  (the path's placeholders, read back from the concrete path): `status_tool:
  "wait_operation", status_args: {"operation_id": "op_1"}`. Where several tools call that
  route, the one the table marks `follows` wins: a route given to be followed is waited on.
- `rest: {method, route, args, path, body}` — a call a read suggests (a diagnosis's
  suggestions, a cluster's `next_actions`). It gains `tool` (the route's own tool, never the
  waiting one) and `args` (the path's `args` and the `body` together, as the tool takes them).

What the reply already says is kept; a route no tool calls is left as it is.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable
from typing import Any

from mcp_server.tools import TOOLS, ToolSpec

ROUTE_SUFFIX = "_route"
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _pattern(template: str) -> re.Pattern[str]:
    """A concrete path's matcher for a template: each placeholder is one path segment."""
    parts = _PLACEHOLDER.split(template)
    regex = "".join(re.escape(part) if i % 2 == 0 else f"(?P<{part}>[^/]+)"
                    for i, part in enumerate(parts))
    return re.compile(regex + r"\Z")


class RouteMap:
    """Which tool calls which route (method + path template), from the tool table."""

    def __init__(self, specs: Iterable[ToolSpec] = TOOLS) -> None:
        self._by_route: dict[tuple[str, str], list[ToolSpec]] = {}
        for spec in specs:
            if spec.fixed_query:  # a planning tool (dry_run=true) is not its route's tool
                continue
            self._by_route.setdefault((spec.method, spec.path), []).append(spec)
        self._patterns = [(method, template, _pattern(template))
                          for method, template in self._by_route]

    def tool(self, method: str, template: str, follow: bool = False) -> str | None:
        """The tool calling `method template`: with `follow`, the one the table marks as
        following that route, if any; else the route's own plain call."""
        specs = self._by_route.get((method.upper(), template)) or []
        chosen = [s for s in specs if s.follows == follow] or specs
        return chosen[0].name if chosen else None

    def match(self, method: str, path: str) -> tuple[str, dict[str, str]] | None:
        """(template, placeholders) of the route a concrete path is, or None."""
        path = urllib.parse.urlsplit(path).path
        for route_method, template, pattern in self._patterns:
            found = pattern.match(path) if route_method == method.upper() else None
            if found:
                return template, {k: urllib.parse.unquote(v)
                                  for k, v in found.groupdict().items()}
        return None

    def translate(self, data: Any) -> Any:
        """`data` with every route it names given its tool (see the module docstring);
        changed in place and returned."""
        if isinstance(data, list):
            for item in data:
                self.translate(item)
        elif isinstance(data, dict):
            for key, value in list(data.items()):
                if key.endswith(ROUTE_SUFFIX) and isinstance(value, str):
                    self._follow(data, key[:-len(ROUTE_SUFFIX)], value)
                else:
                    self.translate(value)
            rest = data.get("rest")
            if isinstance(rest, dict) and isinstance(rest.get("route"), str):
                self._suggested(data, rest)
        return data

    def _follow(self, data: dict[str, Any], what: str, path: str) -> None:
        found = self.match("GET", path)
        tool = found and self.tool("GET", found[0], follow=True)
        if found and tool:
            data.setdefault(f"{what}_tool", tool)
            data.setdefault(f"{what}_args", found[1])

    def _suggested(self, data: dict[str, Any], rest: dict[str, Any]) -> None:
        tool = self.tool(str(rest.get("method") or ""), rest["route"])
        if tool:
            data.setdefault("tool", tool)
            data.setdefault("args", {**(rest.get("args") or {}), **(rest.get("body") or {})})


ROUTES = RouteMap()
"""The map of the table this server publishes."""
