"""The three agent configs in skills/agents/ list exactly the tool table's tools (read-only
ones run without asking, mutating ones ask), as `python -m mcp_server.agent_configs` writes
them: a tool added to the table and not to a config, or a config naming a tool that does
not exist, fails here."""

from __future__ import annotations

import dataclasses

from mcp_server import agent_configs
from mcp_server.tools import TOOLS, TOOLS_BY_NAME


def test_the_configs_list_the_table_s_tools() -> None:
    assert agent_configs.problems() == [], (
        "run `python -m mcp_server.agent_configs` to write the lists from the table")


def test_each_config_says_which_tools_run_without_asking() -> None:
    reads = [t.name for t in TOOLS if not t.mutating]
    changes = [t.name for t in TOOLS if t.mutating]
    assert agent_configs._named(agent_configs.KIRO) == reads
    assert agent_configs._named(agent_configs.CLAUDE_SETTINGS) == reads + changes
    assert agent_configs._named(agent_configs.CLAUDE_AGENT) == [t.name for t in TOOLS]


def test_a_tool_the_configs_lack_or_one_they_name_that_is_gone_is_found() -> None:
    added = dataclasses.replace(TOOLS_BY_NAME["get_network"], name="get_teapot")
    assert agent_configs.problems((*TOOLS, added)) == [
        "skills/agents/hypd-inst-agent.json: lacks get_teapot",
        "skills/agents/claude-code/.claude/settings.json: lacks get_teapot",
        "skills/agents/claude-code/.claude/agents/hypd-inst-agent.md: lacks get_teapot"]
    gone = [t for t in TOOLS if t.name != "delete_network"]
    assert agent_configs.problems(gone) == [
        "skills/agents/claude-code/.claude/settings.json: names delete_network, which is no "
        "tool",
        "skills/agents/claude-code/.claude/agents/hypd-inst-agent.md: names delete_network, "
        "which is no tool"]
    turned = [dataclasses.replace(t, mutating=True) if t.name == "list_networks" else t
              for t in TOOLS]  # a read that became a change must now ask
    assert agent_configs.problems(turned) == [
        "skills/agents/hypd-inst-agent.json: its tool lists are not the table's (order, or "
        "which tools run without asking)",
        "skills/agents/claude-code/.claude/settings.json: its tool lists are not the "
        "table's (order, or which tools run without asking)"]
