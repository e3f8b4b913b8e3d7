"""compose.yaml and the Dockerfile stay consistent with the CLI (no Docker engine here, so
their commands are checked against the real argument parser)."""

from __future__ import annotations

import json
import re

import yaml

from app.cli import build_parser
from tests.stack import REPO


def test_compose_services_run_real_hypd_commands():
    compose = yaml.safe_load((REPO / "compose.yaml").read_text())
    services = compose["services"]
    assert {"redis", "web", "worker", "mcp"} <= services.keys()
    parser = build_parser()
    for name in ("web", "worker", "mcp"):
        command = services[name]["command"]
        assert command[0] == "hypd", name
        args = parser.parse_args(command[1:])
        assert args.command == name
    redis_cmd = services["redis"]["command"]
    assert "--appendonly" in redis_cmd
    assert redis_cmd[redis_cmd.index("--appendfsync") + 1] == "always"
    for name in ("web", "worker", "mcp"):
        env = services[name]["environment"]
        assert env["HYPD_REDIS_URL"] == "redis://redis:6379/0"
        assert env["HYPD_AWS"] == "aws"
    assert services["mcp"]["environment"]["HYPD_API_URL"] == "http://web:3099"
    # published on loopback only
    for name in ("web", "mcp"):
        for port in services[name]["ports"]:
            assert port.startswith("127.0.0.1:")


def test_dockerfile_copies_every_package_and_runs_hypd():
    text = (REPO / "Dockerfile").read_text()
    copied = set(re.findall(r"^COPY (\S+) \1$", text, re.M))
    for package in ("app", "schemas", "tasks", "cloud", "mcp_server", "sandbox", "static",
                    "skills"):
        assert package in copied, package
        assert (REPO / package).is_dir()
    cmd = json.loads(re.search(r"^CMD (\[.*\])$", text, re.M).group(1))
    assert build_parser().parse_args(cmd[1:]).command == "web"
    assert re.search(r"^USER hypd$", text, re.M), "the container must not run as root"


def test_agent_config_auto_allows_only_read_tools_and_playbooks_name_real_tools():
    """The shipped agent may run read tools without asking; every change needs the user's
    yes. Playbooks may only name tools that exist."""
    import fnmatch

    from mcp_server.tools import TOOLS

    config = json.loads((REPO / "skills" / "hypd-inst-agent.json").read_text())
    names = {t.name: t for t in TOOLS}
    allowed = [p.removeprefix("@hypd/") for p in config["allowedTools"]]
    matched = {n for n in names for p in allowed if fnmatch.fnmatch(n, p)}
    assert matched, "the allow-list matches no tool"
    assert all(names[n].read_only for n in matched), [n for n in matched
                                                      if not names[n].read_only]
    verbs = {n.split("_")[0] for n in names if "_" in n}
    for playbook in (REPO / "skills").glob("*.md"):
        text = playbook.read_text()
        header = text.split("\n## ")[0]
        listed = re.findall(r"`([a-z_]+)`", header.split("Tools:", 1)[-1].split("\n\n")[0])
        for tool in listed:
            assert tool in names, (playbook.name, tool)
        # every tool-like name anywhere in it (a tool's verb, then `_`) is a real tool, and
        # a playbook with a Tools: line lists every tool it names
        for word in set(re.findall(r"`([a-z]+_[a-z_]+)`", text)):
            if word.split("_")[0] in verbs:
                assert word in names, (playbook.name, word)
                assert "Tools:" not in header or word in listed, (playbook.name, word)
