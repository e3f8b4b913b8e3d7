"""compose.yaml and the Dockerfile stay consistent with the CLI (no Docker engine here, so
their commands are checked against the real argument parser)."""

from __future__ import annotations

import json
import re

import yaml

from app.cli import build_parser
from tests.stack import REPO

HYPD_SERVICES = ("web", "worker", "mcp")


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
    for name in ("web", "mcp"):
        for port in services[name]["ports"]:
            assert port.startswith("127.0.0.1:")


def test_compose_runs_with_the_settings_hypd_up_uses():
    """The same processes with the same options as `hypd up` in aws mode: Redis with its
    persistence flags, the web server and the worker with up's defaults, every HYPD_
    variable a real setting, web and workers counting into one metrics volume."""
    from app.supervisor import redis_argv
    from cloud.settings import Settings

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
    is the default, as in a container): a live worker answers, an unknown one does not."""
    import subprocess
    import sys

    test = _compose()["services"]["worker"]["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"]
    code = test[3]

    def run(source: str) -> int:
        return subprocess.run([sys.executable, "-c", source], cwd=REPO, env=stack.env,
                              capture_output=True, timeout=60).returncode

    assert run(code) == 0
    assert run(code.replace("hypd@", "nobody@")) == 1


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
    assert re.search(r"useradd --system --uid 10001 ", text), "a fixed, unprivileged uid"
    # a pinned base: a full Python release, not a moving tag
    assert re.search(r"^FROM python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?$", text,
                     re.M)


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
