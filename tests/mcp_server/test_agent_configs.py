"""The agent configs in skills/agents/ start `hypd mcp --toolsets <the agent's toolsets>` and
list exactly those toolsets' tools from the tool table (read-only ones run without asking,
mutating ones ask), as `python -m mcp_server.agent_configs` writes them: a tool added to the
table and not to a config, a config naming a tool that does not exist or that its server
does not publish, or a playbook using a tool outside the agent's toolsets, fails here."""

from __future__ import annotations

import dataclasses
import json

import pytest

from mcp_server import agent_configs, toolsets
from mcp_server.tools import TOOLS, TOOLS_BY_NAME


def test_the_configs_list_the_table_s_tools() -> None:
    assert agent_configs.problems() == [], (
        "run `python -m mcp_server.agent_configs` to write the lists from the table")


def test_each_config_says_which_tools_run_without_asking() -> None:
    ours = agent_configs.agent_table()
    reads = [t.name for t in ours if not t.mutating]
    changes = [t.name for t in ours if t.mutating]
    assert agent_configs._named(agent_configs.KIRO) == reads
    assert agent_configs._named(agent_configs.CLAUDE_SETTINGS) == reads + changes
    assert agent_configs._named(agent_configs.CLAUDE_AGENT) == [t.name for t in ours]


def test_the_agent_s_server_publishes_its_toolsets_and_every_playbook_s_tools() -> None:
    """Both configs start the server with the agent's toolsets; every tool a playbook uses is
    among them (the Dev spaces playbook's too, so every toolset is named)."""
    kiro = json.loads(agent_configs.KIRO.read_text())["mcpServers"]["hypd"]
    claude = json.loads(agent_configs.CLAUDE_MCP.read_text())["mcpServers"]["hypd"]
    for server in (kiro, claude):
        assert server["args"] == ["mcp", "--toolsets",
                                  "clusters,capacity,training,inference,spaces,teams,operations"]
    ours = {t.name for t in agent_configs.agent_table()}
    used = {n for names in agent_configs.playbook_tools().values() for n in names}
    assert used and used <= ours, sorted(used - ours)
    assert set(toolsets.TOOLSETS_BY_NAME["spaces"].tools) <= ours
    assert set(toolsets.TOOLSETS_BY_NAME["operations"].tools) <= ours
    assert len(ours) == len(TOOLS)


def test_a_tool_the_configs_lack_or_one_they_name_that_is_gone_is_found(
        monkeypatch: pytest.MonkeyPatch) -> None:
    added = dataclasses.replace(TOOLS_BY_NAME["get_network"], name="get_teapot")
    monkeypatch.setitem(toolsets.TOOLSET_OF, "get_teapot", "clusters")
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
        "skills/agents/hypd-inst-agent.json: its tool lists are not the table's (order, "
        "which tools run without asking, or the server's --toolsets)",
        "skills/agents/claude-code/.claude/settings.json: its tool lists are not the "
        "table's (order, which tools run without asking, or the server's --toolsets)"]


def test_a_playbook_tool_outside_the_agent_s_toolsets_is_found(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A playbook naming a tool the agent's server would not publish (here: submit_job, were
    training left out) names the tool and its toolset; so do the lists naming it."""
    monkeypatch.setattr(agent_configs, "AGENT_TOOLSETS",
                        ("clusters", "capacity", "inference", "operations"))
    found = agent_configs.problems()
    assert ("skills/submit-training.md: uses submit_job (training), outside the agent's "
            "toolsets: add that toolset to AGENT_TOOLSETS") in found
    assert ("skills/agents/hypd-inst-agent.json: names get_job, outside its toolsets "
            "(clusters, capacity, inference, operations)") in found
