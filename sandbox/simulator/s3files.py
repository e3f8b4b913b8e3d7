"""Files under a pod's bucket mount: what `/s3/<path>` is in the local AWS's S3.

hypd mounts the cluster's bucket through the Mountpoint for S3 CSI driver
(cloud/storage.py `s3_volume`): a container's volume mount → the pod's volume → its
PersistentVolumeClaim → the PersistentVolume bound to it, whose `csi.driver` is
`s3.csi.aws.com`, `csi.volumeAttributes.bucketName` the bucket, and a `prefix P/` mount
option the key prefix. A file under the mount is the object `<prefix><path>` — the same
resolution for what a workspace lists (`workspaces`) and for what a job's container writes.

No container runs in the sandbox, so a write is what a script says (`programs.run_script`):
`echo TEXT > /s3/<path>` puts the object when the line runs (Mountpoint uploads a file when
it is closed), `>>` appends to it, `mkdir -p` is a no-op (S3 has no directories); the
container's plain `$VARIABLES` (`$HYPD_OUTPUT_DIR`) are expanded in the path and text. A
read-only mount (the container's `readOnly`, or Mountpoint's `read-only` option) writes
nothing, nor does `>` over an existing object without Mountpoint's `allow-overwrite`.
Mountpoint itself refuses appending to an existing object unless it uploads incrementally
(S3 Express One Zone); the sandbox appends.

`ScriptFiles` is a `Programs` resolver for a pod's shell scripts that write into a mounted
bucket; the training operators use `effects` for a job's own command.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sandbox.simulator.programs import SHELLS, FileWrite, Line, Program, from_command_line

S3_CSI_DRIVER = "s3.csi.aws.com"
_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


@dataclass(frozen=True)
class BucketMount:
    """A bucket as one container sees it."""

    mount_path: str
    bucket: str
    prefix: str
    read_only: bool
    overwrite: bool

    def key(self, path: str) -> str | None:
        """The object a path under the mount is (None: not under it, or the mount itself)."""
        base = self.mount_path.rstrip("/") + "/"
        if not path.startswith(base) or path == base:
            return None
        return self.prefix + os.path.normpath(path[len(base):]).lstrip("/")


def _md(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _prefix(options: list[str]) -> str:
    for option in options:
        name, _, value = option.replace("=", " ", 1).partition(" ")
        if name.lstrip("-") == "prefix" and value.strip():
            return value.strip().lstrip("/")
    return ""


def mounts(kube: Any, pod: dict[str, Any], container: dict[str, Any]) -> list[BucketMount]:
    """The container's mounts that are a Mountpoint bucket, resolved through the cluster."""
    namespace = _md(pod).get("namespace") or "default"
    volumes = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or []}
    found = []
    for mount in container.get("volumeMounts") or []:
        claim_ref = (volumes.get(mount.get("name")) or {}).get("persistentVolumeClaim") or {}
        claim = kube.get_object("v1", "PersistentVolumeClaim", claim_ref.get("claimName", ""),
                                namespace) if claim_ref.get("claimName") else None
        volume_name = ((claim or {}).get("spec") or {}).get("volumeName")
        volume = kube.get_object("v1", "PersistentVolume", volume_name) if volume_name else None
        spec = (volume or {}).get("spec") or {}
        csi = spec.get("csi") or {}
        bucket = (csi.get("volumeAttributes") or {}).get("bucketName")
        if csi.get("driver") != S3_CSI_DRIVER or not bucket:
            continue
        options = [str(o) for o in spec.get("mountOptions") or []]
        found.append(BucketMount(
            mount_path=str(mount.get("mountPath") or ""), bucket=str(bucket),
            prefix=_prefix(options),
            read_only=bool(mount.get("readOnly") or claim_ref.get("readOnly")
                           or "read-only" in options or "--read-only" in options),
            overwrite=any(o.lstrip("-") == "allow-overwrite" for o in options)))
    return found


def mount_at(kube: Any, pod: dict[str, Any], container: dict[str, Any],
             path: str) -> BucketMount | None:
    """The bucket mounted at exactly `path` in the container, if any."""
    return next((m for m in mounts(kube, pod, container)
                 if m.mount_path.rstrip("/") == path.rstrip("/")), None)


def shell_script(argv: list[str]) -> str | None:
    """The script of the first `<shell> -c SCRIPT` in a command line (a launcher's too:
    `hyperpodrun --no-python sh -c …`)."""
    for i, word in enumerate(argv[:-2]):
        if os.path.basename(word) in SHELLS and argv[i + 1] == "-c":
            return argv[i + 2]
    return None


class ScriptFiles:
    """Writes into mounted buckets by a pod's shell scripts (see the module docstring).
    `objects`: the local AWS's S3 (`downloads.ObjectStore`), read when a line runs; None
    (a cluster without a local AWS) keeps nothing."""

    def __init__(self, kube: Any, objects: Callable[[], Any]) -> None:
        self.kube = kube
        self.objects = objects

    def writer(self, pod: dict[str, Any], container: dict[str, Any]) -> FileWrite:
        found = mounts(self.kube, pod, container)
        env = {str(e.get("name")): str(e["value"]) for e in container.get("env") or []
               if "value" in e}

        def expand(text: str) -> str:  # the container's plain $VARIABLES, as sh would
            return _VAR.sub(lambda m: env.get(m.group(1), ""), text)

        def write(path: str, text: str, append: bool) -> Callable[[], None] | None:
            path, text = expand(path), expand(text)
            mount = next((m for m in found if m.key(path) is not None), None)
            if mount is None or mount.read_only:
                return None
            key = str(mount.key(path))

            def put() -> None:
                store = self.objects()
                if store is None:
                    return
                existing = dict(store.objects(mount.bucket, key) or [])
                if key in existing and not append and not mount.overwrite:
                    return  # Mountpoint refuses to replace an object without allow-overwrite
                body = (existing.get(key, b"") if append else b"") + text.encode()
                store.put(mount.bucket, key, body)

            return put

        return write

    def effects(self, pod: dict[str, Any], container: dict[str, Any],
                argv: list[str]) -> tuple[Line, ...]:
        """The lines of a command line's shell script that write into a mounted bucket."""
        script = shell_script(argv)
        if script is None or ">" not in script:
            return ()
        program = from_command_line({"command": ["sh", "-c", script]},
                                    self.writer(pod, container))
        return tuple(line for line in program.lines if line.effect is not None)

    def __call__(self, pod: dict[str, Any], container: dict[str, Any]) -> Program | None:
        argv = [str(a) for a in (container.get("command") or [])] + [
            str(a) for a in (container.get("args") or [])]
        if not argv or os.path.basename(argv[0]) not in SHELLS:
            return None
        script = shell_script(argv)
        if script is None or ">" not in script or not mounts(self.kube, pod, container):
            return None
        return from_command_line(container, self.writer(pod, container))
