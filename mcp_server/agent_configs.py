"""The agent configs' tool lists, written from the tool table so they are never edited by hand.

Three configs in skills/agents/ name the server's tools (an agent runs `hypd mcp`):
- `hypd-inst-agent.json` (Kiro CLI): `allowedTools` — the read-only tools, which run
  without asking; a mutating tool asks the user first.
- `claude-code/.claude/settings.json` (Claude Code): `permissions.allow` the read-only tools,
  `permissions.ask` the mutating ones.
- `claude-code/.claude/agents/hypd-inst-agent.md` (a Claude Code subagent): its front
  matter's `tools:` line — Read and Glob (for the playbooks), then every tool.

Each list follows the table's order. `python -m mcp_server.agent_configs` rewrites the lists
(nothing else in the files); `problems()` says how the files on disk differ from the table,
and a test holds it empty, so a tool added to the table and not to a config (or a config
naming a tool that does not exist) fails there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mcp_server.tools import TOOLS, ToolSpec

AGENTS = Path(__file__).resolve().parents[1] / "skills" / "agents"
KIRO = AGENTS / "hypd-inst-agent.json"
CLAUDE_SETTINGS = AGENTS / "claude-code" / ".claude" / "settings.json"
CLAUDE_AGENT = AGENTS / "claude-code" / ".claude" / "agents" / "hypd-inst-agent.md"

SERVER = "hypd"
KIRO_PREFIX = f"@{SERVER}/"
CLAUDE_PREFIX = f"mcp__{SERVER}__"
CLAUDE_FILE_TOOLS = ("Read", "Glob")
_TOOLS_LINE = re.compile(r"^tools: .*$", re.MULTILINE)


def _names(table: Iterable[ToolSpec], prefix: str, mutating: bool | None = None) -> list[str]:
    return [prefix + t.name for t in table if mutating is None or t.mutating == mutating]


def kiro(config: dict[str, Any], table: Iterable[ToolSpec] = TOOLS) -> dict[str, Any]:
    return {**config, "allowedTools": _names(table, KIRO_PREFIX, mutating=False)}


def claude_settings(config: dict[str, Any], table: Iterable[ToolSpec] = TOOLS
                    ) -> dict[str, Any]:
    table = list(table)
    permissions = {**config.get("permissions", {}),
                   "allow": _names(table, CLAUDE_PREFIX, mutating=False),
                   "ask": _names(table, CLAUDE_PREFIX, mutating=True)}
    return {**config, "permissions": permissions}


def claude_agent(text: str, table: Iterable[ToolSpec] = TOOLS) -> str:
    line = "tools: " + ", ".join([*CLAUDE_FILE_TOOLS, *_names(table, CLAUDE_PREFIX)])
    if not _TOOLS_LINE.search(text):
        raise ValueError(f"{CLAUDE_AGENT} has no `tools:` line in its front matter")
    return _TOOLS_LINE.sub(lambda _: line, text, count=1)


def _json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def rendered(table: Iterable[ToolSpec] = TOOLS) -> dict[Path, str]:
    """Each config as the table says it should read."""
    table = list(table)
    return {
        KIRO: _json(kiro(json.loads(KIRO.read_text()), table)),
        CLAUDE_SETTINGS: _json(claude_settings(json.loads(CLAUDE_SETTINGS.read_text()), table)),
        CLAUDE_AGENT: claude_agent(CLAUDE_AGENT.read_text(), table),
    }


def _named(path: Path) -> list[str]:
    """The tool names a config on disk lists (without the server's prefix)."""
    text = path.read_text()
    prefix = KIRO_PREFIX if path == KIRO else CLAUDE_PREFIX
    return [m.group(1) for m in re.finditer(re.escape(prefix) + r"([a-z_]+)", text)]


def problems(table: Iterable[ToolSpec] = TOOLS) -> list[str]:
    """How the configs on disk differ from the table: tools they lack, tools they name that
    the table has not, and lists out of date otherwise (order, read or mutating)."""
    table = list(table)
    known = {t.name for t in table}
    found: list[str] = []
    for path, text in rendered(table).items():
        where = path.relative_to(AGENTS.parent.parent)
        named = set(_named(path))
        should = known if path != KIRO else {t.name for t in table if not t.mutating}
        here = [f"{where}: lacks {n}" for n in sorted(should - named)]
        here += [f"{where}: names {n}, which is no tool" for n in sorted(named - known)]
        if not here and path.read_text() != text:
            here.append(f"{where}: its tool lists are not the table's (order, or which "
                        "tools run without asking)")
        found += here
    return found


def write() -> list[Path]:
    """Rewrite the configs whose lists differ from the table; the ones written."""
    changed = []
    for path, text in rendered().items():
        if path.read_text() != text:
            path.write_text(text)
            changed.append(path)
    return changed


if __name__ == "__main__":
    for written in write():
        print(f"wrote {written}")
