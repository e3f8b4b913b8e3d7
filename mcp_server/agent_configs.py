"""The agent configs' tool lists, written from the tool table so they are never edited by hand.

The agent runs `hypd mcp --toolsets <AGENT_TOOLSETS>`: the toolsets its playbooks use
(skills/*.md), so it reads only their tools' descriptions and schemas (mcp_server/toolsets.py;
Dev spaces are a person's editors, not this agent's work). Four configs in skills/agents/
name the server's command and tools:
- `hypd-inst-agent.json` (Kiro CLI): `mcpServers.hypd.args`, and `allowedTools` — the
  read-only tools, which run without asking; a mutating tool asks the user first.
- `claude-code/.mcp.json` (Claude Code): the server's `args`.
- `claude-code/.claude/settings.json` (Claude Code): `permissions.allow` the read-only tools,
  `permissions.ask` the mutating ones.
- `claude-code/.claude/agents/hypd-inst-agent.md` (a Claude Code subagent): its front
  matter's `tools:` line — Read and Glob (for the playbooks), then every tool.

Each list follows the table's order and holds the tools of AGENT_TOOLSETS.
`python -m mcp_server.agent_configs` rewrites the lists and args (nothing else in the
files); `problems()` says how the files on disk differ from the table, and a test holds it
empty, so a tool added to the table and not to a config (or a config naming a tool that
does not exist, or a playbook naming a tool outside the agent's toolsets) fails there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mcp_server import toolsets
from mcp_server.tools import TOOLS, ToolSpec

SKILLS = Path(__file__).resolve().parents[1] / "skills"
AGENTS = SKILLS / "agents"
KIRO = AGENTS / "hypd-inst-agent.json"
CLAUDE_MCP = AGENTS / "claude-code" / ".mcp.json"
CLAUDE_SETTINGS = AGENTS / "claude-code" / ".claude" / "settings.json"
CLAUDE_AGENT = AGENTS / "claude-code" / ".claude" / "agents" / "hypd-inst-agent.md"

SERVER = "hypd"
KIRO_PREFIX = f"@{SERVER}/"
CLAUDE_PREFIX = f"mcp__{SERVER}__"
CLAUDE_FILE_TOOLS = ("Read", "Glob")
_TOOLS_LINE = re.compile(r"^tools: .*$", re.MULTILINE)
_PLAYBOOK_TOOLS = re.compile(r"^Version \d+\. Tools:(.*?)(?:\n\n|\Z)", re.M | re.S)

AGENT_TOOLSETS: tuple[str, ...] = ("clusters", "capacity", "training", "inference",
                                   "spaces", "teams", "operations")
"""The toolsets the agent's server publishes: those its playbooks use (all of them, since
skills/dev-spaces.md; teams since skills/teams-and-cost.md)."""


def server_args() -> list[str]:
    """How the configs start the agent's server."""
    return ["mcp", "--toolsets", ",".join(AGENT_TOOLSETS)]


def agent_table(table: Iterable[ToolSpec] = TOOLS) -> list[ToolSpec]:
    """The rows the agent's server publishes (an operator's view), in the table's order."""
    return toolsets.tools_of(toolsets.parse(AGENT_TOOLSETS), table)


def _names(table: Iterable[ToolSpec], prefix: str, mutating: bool | None = None) -> list[str]:
    return [prefix + t.name for t in table if mutating is None or t.mutating == mutating]


def _with_args(config: dict[str, Any]) -> dict[str, Any]:
    servers = config.get("mcpServers", {})
    server = {**servers.get(SERVER, {}), "args": server_args()}
    return {**config, "mcpServers": {**servers, SERVER: server}}


def kiro(config: dict[str, Any], table: Iterable[ToolSpec] = TOOLS) -> dict[str, Any]:
    return {**_with_args(config), "allowedTools": _names(table, KIRO_PREFIX, mutating=False)}


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
    """Each config as the table (the rows of the agent's toolsets) says it should read."""
    table = agent_table(table)
    return {
        KIRO: _json(kiro(json.loads(KIRO.read_text()), table)),
        CLAUDE_MCP: _json(_with_args(json.loads(CLAUDE_MCP.read_text()))),
        CLAUDE_SETTINGS: _json(claude_settings(json.loads(CLAUDE_SETTINGS.read_text()), table)),
        CLAUDE_AGENT: claude_agent(CLAUDE_AGENT.read_text(), table),
    }


def _named(path: Path) -> list[str]:
    """The tool names a config on disk lists (without the server's prefix)."""
    text = path.read_text()
    prefix = KIRO_PREFIX if path == KIRO else CLAUDE_PREFIX
    return [m.group(1) for m in re.finditer(re.escape(prefix) + r"([a-z_]+)", text)]


def playbook_tools() -> dict[str, list[str]]:
    """Each playbook's `Tools:` line (skills/*.md), by file name."""
    found = {}
    for playbook in sorted(SKILLS.glob("*.md")):
        line = _PLAYBOOK_TOOLS.search(playbook.read_text().split("\n## ")[0])
        if line:
            found[playbook.name] = re.findall(r"`([a-z_]+)`", line.group(1))
    return found


def problems(table: Iterable[ToolSpec] = TOOLS) -> list[str]:
    """How the configs on disk differ from the table: tools they lack, tools they name that
    the table (or the agent's toolsets) has not, lists or args out of date otherwise
    (order, read or mutating), and playbook tools outside the agent's toolsets."""
    table = list(table)
    known = {t.name for t in table}
    ours = {t.name for t in agent_table(table)}
    found: list[str] = []
    for path, text in rendered(table).items():
        where = path.relative_to(SKILLS.parent)
        named = set(_named(path))
        if path == CLAUDE_MCP:
            should: set[str] = set()
        elif path == KIRO:
            should = {t.name for t in table if t.name in ours and not t.mutating}
        else:
            should = ours
        here = [f"{where}: lacks {n}" for n in sorted(should - named)]
        here += [f"{where}: names {n}, which is no tool" for n in sorted(named - known)]
        here += [f"{where}: names {n}, outside its toolsets ({', '.join(AGENT_TOOLSETS)})"
                 for n in sorted((named & known) - ours)]
        if not here and path.read_text() != text:
            here.append(f"{where}: its tool lists are not the table's (order, which "
                        "tools run without asking, or the server's --toolsets)")
        found += here
    for playbook, names in playbook_tools().items():
        found += [f"skills/{playbook}: uses {n} ({toolsets.TOOLSET_OF.get(n)}), outside the "
                  f"agent's toolsets: add that toolset to AGENT_TOOLSETS"
                  for n in names if n in known and n not in ours]
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
