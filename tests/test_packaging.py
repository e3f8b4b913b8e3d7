"""compose.yaml and the Dockerfile stay consistent with the CLI (no Docker engine here, so
their commands are checked against the real argument parser)."""

from __future__ import annotations

import json
import re
import tomllib

import yaml

from launcher.cli import build_parser
from tests.stack import REPO

HYPD_SERVICES = ("web", "worker", "mcp", "spaces-router")


def _compose() -> dict:
    return yaml.safe_load((REPO / "compose.yaml").read_text())


def test_compose_services_run_real_hypd_commands():
    services = _compose()["services"]
    assert {"redis", "web", "worker", "mcp"} <= services.keys()
    parser = build_parser()
    for name in HYPD_SERVICES:
        command = services[name]["command"]
        assert command[0] == "hypd", name
        args = parser.parse_args(command[1:])
        assert args.command == name
    redis_cmd = services["redis"]["command"]
    assert "--appendonly" in redis_cmd
    assert redis_cmd[redis_cmd.index("--appendfsync") + 1] == "always"
    for name in HYPD_SERVICES:
        env = services[name]["environment"]
        assert env["HYPD_REDIS_URL"] == "redis://redis:6379/0"
        assert env["HYPD_AWS"] == "aws"
    assert services["mcp"]["environment"]["HYPD_API_URL"] == "http://web:3099"
    # published on loopback only
    for name in ("web", "mcp", "spaces-router"):
        for port in services[name]["ports"]:
            assert port.startswith("127.0.0.1:")


def test_compose_runs_with_the_settings_hypd_up_uses():
    """The same processes with the same options as `hypd up` in aws mode: Redis with its
    persistence flags, the web server and the worker with up's defaults, every HYPD_
    variable a real setting, web and workers counting into one metrics volume."""
    from cloud.settings import Settings
    from launcher.supervisor import redis_argv

    services = _compose()["services"]
    up_redis = redis_argv(Settings(aws_mode="aws", data_dir=REPO / ".unused"), 6379)
    persistence = up_redis[up_redis.index("--appendonly"):]
    persistence = [a for a in persistence if a != "--dir" and "unused" not in a]
    assert services["redis"]["command"][1:] == persistence
    parser = build_parser()
    up = parser.parse_args(["up"])
    web = parser.parse_args(services["web"]["command"][1:])
    worker = parser.parse_args(services["worker"]["command"][1:])
    defaults = {n: parser.parse_args([n]) for n in ("web", "worker")}
    assert worker.concurrency == up.concurrency
    for parsed, name in ((web, "web"), (worker, "worker")):
        changed = {k for k, v in vars(parsed).items()
                   if k != "func" and v != getattr(defaults[name], k)}
        assert changed <= {"host", "port", "concurrency"}, (name, changed)
    settings_source = (REPO / "cloud" / "settings.py").read_text()
    for name in HYPD_SERVICES:
        for variable in services[name]["environment"]:
            if variable.startswith("HYPD_"):
                assert f'"{variable}"' in settings_source, (name, variable)
    for name in ("web", "worker"):
        assert "metrics:/var/lib/hypd/metrics" in services[name]["volumes"]
    assert services["web"]["environment"] == services["worker"]["environment"]


def test_every_service_has_a_health_check():
    for name, service in _compose()["services"].items():
        check = service.get("healthcheck") or {}
        assert check.get("test") and not check.get("disable"), name
        assert check["test"][0] in ("CMD", "CMD-SHELL"), name
    dockerfile = (REPO / "Dockerfile").read_text()
    assert re.search(r"^HEALTHCHECK .*\n\s+CMD \[", dockerfile, re.M)


def test_the_worker_health_check_pings_a_running_worker(stack):
    """Compose's worker check, run as written against the suite's worker (whose node name
    is the default, as in a container): a live worker answers, an unknown one does not.

    Docker counts a container unhealthy only after `retries` failed checks in a row (a
    worker just restarted by an earlier test, or one whose main process is starved on a
    loaded machine, may miss one 5 s ping), so the live worker gets as many tries; the
    unknown node must fail every one."""
    import subprocess
    import sys

    check = _compose()["services"]["worker"]["healthcheck"]
    test = check["test"]
    assert test[:3] == ["CMD", "python", "-c"]
    code = test[3]
    tries = check["retries"]

    def run(source: str) -> int:
        return subprocess.run([sys.executable, "-c", source], cwd=REPO, env=stack.env,
                              capture_output=True, timeout=60).returncode

    answers = []
    for _ in range(tries):
        answers.append(run(code))
        if answers[-1] == 0:
            break
    assert answers[-1] == 0, answers
    assert run(code.replace("hypd@", "nobody@")) == 1


def test_dockerfile_copies_every_package_and_runs_hypd():
    text = (REPO / "Dockerfile").read_text()
    copied = set(re.findall(r"^COPY (\S+) \1$", text, re.M))
    found = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"]["find"]["include"]
    packages = [pattern.rstrip("*") for pattern in found]
    assert "launcher" in packages and "app" in packages, packages
    stand_ins = re.search(r"^RUN for p in ([a-z_ ]+); do", text, re.M).group(1).split()
    assert sorted(stand_ins) == sorted(packages)  # the dependency layer installs them all
    for package in (*packages, "static", "skills"):
        assert package in copied, package
        assert (REPO / package).is_dir()
    cmd = json.loads(re.search(r"^CMD (\[.*\])$", text, re.M).group(1))
    assert build_parser().parse_args(cmd[1:]).command == "web"
    assert re.search(r"^USER hypd$", text, re.M), "the container must not run as root"
    assert re.search(r"useradd --system --uid 10001 ", text), "a fixed, unprivileged uid"
    # a pinned base: a full Python release, not a moving tag
    assert re.search(r"^FROM python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?$", text,
                     re.M)


AGENTS = REPO / "skills" / "agents"
PLAYBOOKS = ("create-network", "create-cluster", "add-instance-group", "features", "node-health",
             "nccl-failures", "failed-creation")
DIAGNOSTIC_PLAYBOOKS = ("node-health", "nccl-failures", "failed-creation")
THREE_RULES = (
    re.compile(r"look first", re.I),
    re.compile(r"ask (the user )?only (decisions|decision questions)", re.I),
    re.compile(r"(follow every long operation|terminal state).*?(succeeded, failed or cancelled|"
               r"wait_operation)", re.I | re.S),
)
NEVER_ASKED = ("CIDR", "route table", "security group")


def _tools() -> dict:
    from mcp_server.tools import TOOLS

    return {t.name: t for t in TOOLS}


def _states_the_three_rules(text: str, where: str) -> None:
    for rule in THREE_RULES:
        assert rule.search(text), (where, rule.pattern)
    for word in NEVER_ASKED:
        assert word.lower() in text.lower(), (where, word)


def _names_only_real_tools(text: str, where: str) -> set[str]:
    """Every tool-like word (a tool's verb, then `_`) is a real tool; answers them."""
    names = _tools()
    verbs = {n.split("_")[0] for n in names if "_" in n}
    words = set(re.findall(r"\b([a-z]+_[a-z_]+)\b", text))
    named = {w for w in words if w.split("_")[0] in verbs and not w.startswith("status_")}
    assert named <= set(names), (where, sorted(named - set(names)))
    return named


def _the_hypd_server(server: dict, where: str) -> None:
    """`hypd mcp` over stdio, given a hypd URL and token and nothing else (no AWS
    credentials): the same command the real CLI parser accepts."""
    assert server["command"] == "hypd", where
    assert build_parser().parse_args(server["args"]).command == "mcp", where
    assert set(server["env"]) == {"HYPD_API_URL", "HYPD_TOKEN"}, where


def test_kiro_agent_reaches_only_hypd():
    """Which tools it auto-approves (exactly the read ones) is written from the tool table
    and checked in tests/mcp_server/test_agent_configs.py."""
    config = json.loads((AGENTS / "hypd-inst-agent.json").read_text())
    assert config["name"] == "hypd-inst-agent"
    _the_hypd_server(config["mcpServers"]["hypd"], "kiro")
    assert config["tools"] == ["@hypd"]
    # the playbooks are its resources: each pattern finds files
    for resource in config["resources"]:
        assert resource.startswith("file://")
        assert list(REPO.glob(resource.removeprefix("file://"))), resource
    assert "file://skills/*.md" in config["resources"]
    _states_the_three_rules(config["prompt"], "kiro prompt")
    _names_only_real_tools(config["prompt"] + config["description"], "kiro")


def test_claude_code_agent_reaches_only_hypd():
    """Its tool lists (reads allowed, changes asked, every tool in the sub-agent's `tools`)
    are written from the tool table and checked in tests/mcp_server/test_agent_configs.py."""
    base = AGENTS / "claude-code"
    servers = json.loads((base / ".mcp.json").read_text())["mcpServers"]
    assert list(servers) == ["hypd"] and servers["hypd"]["type"] == "stdio"
    _the_hypd_server(servers["hypd"], "claude .mcp.json")
    settings = json.loads((base / ".claude" / "settings.json").read_text())
    assert settings["enabledMcpjsonServers"] == ["hypd"]
    text = (base / ".claude" / "agents" / "hypd-inst-agent.md").read_text()
    _, front, body = text.split("---\n", 2)
    meta = yaml.safe_load(front)
    assert meta["name"] == "hypd-inst-agent" and meta["description"]
    _states_the_three_rules(body, "claude agent")
    _names_only_real_tools(body, "claude agent")


def test_playbooks_state_the_rules_and_name_real_tools():
    """Each playbook states the three rules and names only tools that exist; one with a
    Tools: line lists every tool it names; the diagnostic ones diagnose read-only and
    present changes as suggestions."""
    found = {p.stem for p in (REPO / "skills").glob("*.md")} - {"README"}
    assert set(PLAYBOOKS) <= found, sorted(set(PLAYBOOKS) - found)
    for playbook in sorted((REPO / "skills").glob("*.md")):
        text = playbook.read_text()
        header = text.split("\n## ")[0]
        tools_line = re.search(r"^Version \d+\. Tools:(.*?)(?:\n\n|\Z)", header, re.M | re.S)
        listed = re.findall(r"`([a-z_]+)`", tools_line.group(1)) if tools_line else []
        named = _names_only_real_tools(text, playbook.name)
        assert set(listed) <= set(_tools()), (playbook.name, listed)
        assert bool(tools_line) == (playbook.stem != "README"), playbook.name
        if tools_line:
            assert named <= set(listed), (playbook.name, sorted(named - set(listed)))
        if playbook.stem != "README":
            assert "## The three rules" in text, playbook.name
            _states_the_three_rules(text.split("## The three rules", 1)[1], playbook.name)
        if playbook.stem in DIAGNOSTIC_PLAYBOOKS:
            assert "diagnose_cluster" in listed, playbook.name
            assert "read-only" in text and "suggestion" in text, playbook.name
    _states_the_three_rules((REPO / "skills" / "README.md").read_text(), "README")
