"""What a model-fetching container does in the sandbox: `pip install`, the Hugging Face CLI's
`hf download` and the AWS CLI's `aws s3 cp --recursive`, run from a `sh -c` script (the
shell's list rules: programs.run_script) whose `$VARIABLES` come from the container's
environment (plain values; a Secret's value only decides whether a token is there, and is
never printed).

The tools are where the image says: Docker Hub's stock images (`python:3.12-slim`) have
Python and pip only, so `command -v hf` fails until `pip install` has put `hf` and `aws`
there, and a script running them without installing fails as sh does (`hf: not found`, 127);
an image whose repository is named `hypd-model-download` (built from
deploy/images/model-download/Dockerfile) has both from the start.

The hub is a small deterministic one: any `org/name` repository holds `config.json`,
`generation_config.json`, `tokenizer.json` and `model.safetensors` (sizes from the id and
revision); a repository of a gated organisation (`meta-llama`, `mistralai`, `google`) needs a
token (401 otherwise). `aws s3 cp` uploads through the local AWS's S3 — each object appears
in the bucket when the CLI would have sent it — from the downloaded directory or from
another bucket's prefix (an object store adapter given by the local AWS).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any, Protocol

from sandbox.simulator.programs import Line, Program, run_script

GATED = ("meta-llama", "mistralai", "google")
BAKED_REPOSITORY = "hypd-model-download"
"""The repository name of an image that has the download tools already."""
PROVIDES = {"huggingface_hub": "hf", "awscli": "aws"}
"""The command each Python package installs."""
FILES = ("config.json", "generation_config.json", "tokenizer.json", "model.safetensors")
PIP_S = 5.0
FILE_S = 2.0  # simulated seconds per file fetched or sent
_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")
_S3 = re.compile(r"^s3://([^/]+)/?(.*)$")
_PROJECT = re.compile(r"^[A-Za-z0-9_.-]+")


def tools_in(image: str) -> set[str]:
    """The download tools an image has before anything is installed in it."""
    repository = image.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]
    return set(PROVIDES.values()) if repository == BAKED_REPOSITORY else set()


class ObjectStore(Protocol):
    """The local AWS's S3, as a container's uploads reach it."""

    def put(self, bucket: str, key: str, body: bytes) -> None: ...

    def objects(self, bucket: str, prefix: str) -> list[tuple[str, bytes]] | None:
        """(key, body) under the prefix, or None when the bucket does not exist."""


def hub_files(repo: str, revision: str) -> dict[str, bytes]:
    """The sandbox hub's files of a repository at a revision."""
    seed = hashlib.sha256(f"{repo}@{revision}".encode()).digest()
    weights = 65_536 + int.from_bytes(seed[:2], "big") * 2
    return {
        "config.json": f'{{"_name_or_path": "{repo}", "revision": "{revision}"}}'.encode(),
        "generation_config.json": b'{"max_new_tokens": 256}',
        "tokenizer.json": b'{"version": "1.0"}' + seed * 32,
        "model.safetensors": (seed * (weights // len(seed) + 1))[:weights],
    }


class DownloadProgram:
    """A `Programs` resolver for containers whose script runs `aws s3 cp`."""

    def __init__(self, store: ObjectStore, secret_value: Callable[[str, str, str], bool]
                 ) -> None:
        """`secret_value(namespace, name, key)`: whether that Secret key exists."""
        self.store = store
        self.secret_value = secret_value

    def __call__(self, pod: dict[str, Any], container: dict[str, Any]) -> Program | None:
        command = [str(a) for a in container.get("command") or []]
        if len(command) != 3 or command[:2] != ["sh", "-c"] or "aws s3 cp" not in command[2]:
            return None
        namespace = (pod.get("metadata") or {}).get("namespace") or "default"
        env: dict[str, str] = {}
        has_token = False
        for item in container.get("env") or []:
            if "value" in item:
                env[item["name"]] = str(item["value"])
            ref = ((item.get("valueFrom") or {}).get("secretKeyRef")) or {}
            if item.get("name") == "HF_TOKEN" and ref:
                has_token = self.secret_value(namespace, ref.get("name", ""), ref.get("key", ""))
        return self._run(command[2], env, has_token, tools_in(str(container.get("image", ""))))

    def _run(self, script: str, env: dict[str, str], has_token: bool, tools: set[str]
             ) -> Program:
        lines: list[Line] = []
        local: dict[str, dict[str, bytes]] = {}  # directory → files

        def simple(words: list[str]) -> int:
            argv = [_VAR.sub(lambda m: env.get(m.group(1), ""), a) for a in words]
            if argv[:2] == ["command", "-v"]:  # prints the path; nothing when missing
                return 0 if argv[2:] and set(argv[2:]) <= tools else 1
            if argv[0] in PROVIDES.values() and argv[0] not in tools:
                lines.append(Line(0.0, f"sh: 1: {argv[0]}: not found"))
                return 127
            failed = self._command(argv, lines, local, has_token, tools)
            if failed is not None:
                lines.append(Line(0.0, failed))
                return 1
            return 0

        status = run_script(script, simple)
        return Program(lines=tuple(lines), exit_code=status)

    def _command(self, argv: list[str], lines: list[Line], local: dict[str, dict[str, bytes]],
                 has_token: bool, tools: set[str]) -> str | None:
        """Run one command; an error message when it fails."""
        if argv[:2] == ["pip", "install"]:
            wanted = [a for a in argv[2:] if not a.startswith("-")]
            for requirement in wanted:
                project = _PROJECT.match(requirement)
                if project and project.group(0) in PROVIDES:
                    tools.add(PROVIDES[project.group(0)])
            lines.append(Line(PIP_S, "Successfully installed " + " ".join(wanted)))
            return None
        if argv[:2] == ["hf", "download"]:
            repo = argv[2] if len(argv) > 2 else ""
            revision = _option(argv, "--revision") or "main"
            directory = _option(argv, "--local-dir") or "."
            if "/" not in repo:
                return f"Repository Not Found for url: https://huggingface.co/{repo}"
            if repo.split("/", 1)[0] in GATED and not has_token:
                return (f"401 Client Error: Unauthorized for url: https://huggingface.co/api/"
                        f"models/{repo}/revision/{revision} (a gated repository needs a "
                        "token)")
            files = hub_files(repo, revision)
            local[directory.rstrip("/")] = files
            for name in files:
                lines.append(Line(FILE_S, f"Downloading '{name}' to '{directory}/{name}'"))
            lines.append(Line(0.0, directory))
            return None
        if argv[:3] == ["aws", "s3", "cp"]:
            return self._copy(argv[3:], lines, local)
        return None  # a command the sandbox does not play: it succeeds silently

    def _copy(self, args: list[str], lines: list[Line],
              local: dict[str, dict[str, bytes]]) -> str | None:
        excludes, positional, quiet, i = [], [], False, 0
        while i < len(args):
            if args[i] == "--exclude" and i + 1 < len(args):
                excludes.append(args[i + 1])
                i += 2
                continue
            if args[i] == "--only-show-errors":
                quiet = True
            elif not args[i].startswith("--"):
                positional.append(args[i])
            i += 1
        if len(positional) != 2:
            return "aws: error: the following arguments are required: paths"
        source, destination = positional
        target = _S3.match(destination)
        if target is None:
            return f"aws: error: {destination} is not an S3 location"
        bucket, prefix = target.group(1), target.group(2)
        found = _S3.match(source)
        if found is not None:
            listed = self.store.objects(found.group(1), found.group(2))
            if listed is None:
                return f"fatal error: An error occurred (NoSuchBucket): {found.group(1)}"
            base = found.group(2)
            files = {key[len(base):].lstrip("/"): body for key, body in listed}
        else:
            files = local.get(source.rstrip("/"), {})
        if self.store.objects(bucket, "") is None:
            return f"upload failed: An error occurred (NoSuchBucket): {bucket}"
        for name, body in files.items():
            if any(_matches(name, pattern) for pattern in excludes):
                continue
            key = f"{prefix.rstrip('/')}/{name}" if prefix else name

            def upload(key: str = key, body: bytes = body) -> None:
                self.store.put(bucket, key, body)

            lines.append(Line(FILE_S, None if quiet else f"upload: {name} to s3://{bucket}/{key}",
                              upload))
        return None


def _option(argv: list[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _matches(name: str, pattern: str) -> bool:
    regex = "^" + re.escape(pattern).replace(r"\*", ".*") + "$"
    return re.match(regex, name) is not None


class MotoObjects:
    """The local AWS's S3 (moto's backends, in this process), for containers' uploads."""

    def _backend(self, bucket: str) -> Any | None:
        from moto.s3.models import s3_backends

        for regions in s3_backends.values():
            backend = regions["global"]
            if bucket in backend.buckets:
                return backend
        return None

    def put(self, bucket: str, key: str, body: bytes) -> None:
        backend = self._backend(bucket)
        if backend is not None:
            backend.put_object(bucket, key, body)

    def objects(self, bucket: str, prefix: str) -> list[tuple[str, bytes]] | None:
        backend = self._backend(bucket)
        if backend is None:
            return None
        found = backend.buckets[bucket]
        return [(key, found.keys[key].value) for key in list(found.keys.keys())
                if key.startswith(prefix)]
