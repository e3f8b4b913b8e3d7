"""Recipes: small validated configs turned into a training job's manifest.

| recipe | runs as | what it launches |
|---|---|---|
| `torchrun` | HyperPodPyTorchJob | a plain PyTorch script under `/s3` with `hyperpodrun` |
| `llama-factory` | HyperPodPyTorchJob | LLaMA-Factory's launcher with a config under `/s3` |
| `ms-swift` | HyperPodPyTorchJob | MS-Swift's `sft` with a config under `/s3` |
| `verl` | RayJob | VERL's PPO trainer (`verl.trainer.main_ppo`) with a config under `/s3` |
| `pytorch` | HyperPodPyTorchJob | the user's own `command` (it must start with `hyperpodrun`) |
| `ray` | RayJob | the user's own entrypoint (`command`, an argv) |

One data contract for all: the cluster's shared bucket is at `/s3` in every pod; a job's
output and checkpoints go to `/s3/jobs/<job>/output` and `/s3/jobs/<job>/checkpoints`
(`HYPD_OUTPUT_DIR`, `HYPD_CHECKPOINT_DIR` in its environment), its data is read from
`data` (default `/s3/data`, `HYPD_DATA_DIR`). Commands are argv lists; the one shell string
(a RayJob's entrypoint) is joined with `shlex.join`, never formatted.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from cloud import training
from cloud.training import JobSpec, TrainingError

S3_PATH_RE = re.compile(r"^/s3(/[A-Za-z0-9._=+-]+)+/?$")
PYTORCH, RAY = "pytorch", "ray"


@dataclass(frozen=True)
class Recipe:
    name: str
    kind: str  # pytorch | ray
    description: str
    needs: tuple[str, ...]  # the config fields it requires


RECIPES: dict[str, Recipe] = {r.name: r for r in (
    Recipe("torchrun", PYTORCH, "A plain PyTorch script (under /s3) launched with hyperpodrun.",
           ("script",)),
    Recipe("llama-factory", PYTORCH, "LLaMA-Factory fine-tuning with a config file under /s3.",
           ("config",)),
    Recipe("ms-swift", PYTORCH, "MS-Swift supervised fine-tuning with a config file under /s3.",
           ("config",)),
    Recipe("verl", RAY, "VERL reinforcement learning (PPO) on Ray, config file under /s3.",
           ("config",)),
    Recipe("pytorch", PYTORCH, "Your own HyperPodPyTorchJob command (starts with hyperpodrun).",
           ("command",)),
    Recipe("ray", RAY, "Your own RayJob entrypoint (an argv).", ("command",)),
)}


@dataclass(frozen=True)
class Built:
    kind: str
    manifest: dict[str, Any]
    paths: dict[str, str]


def s3_path(value: str, field: str) -> str:
    if not S3_PATH_RE.match(value) or ".." in value.split("/"):
        raise TrainingError(f"{field}: {value!r} must be a path under /s3 (the cluster's "
                            "bucket, mounted in every pod)", field=field)
    return value


def paths(job: str, data: str | None) -> dict[str, str]:
    base = f"{training.S3_MOUNT}/jobs/{job}"
    return {"data": s3_path(data, "data") if data else f"{training.S3_MOUNT}/data",
            "output": f"{base}/output", "checkpoints": f"{base}/checkpoints"}


def _launcher(spec: JobSpec) -> list[str]:
    nodes = f"{spec.nodes}:{spec.max_nodes}" if spec.elastic else str(spec.nodes)
    return [training.LAUNCHER, f"--nnodes={nodes}",
            f"--nproc-per-node={spec.processes_per_node}"]


def build(recipe_name: str, spec: JobSpec, config: Mapping[str, Any]) -> Built:
    """The manifest of `recipe_name` for `spec` (whose command is filled here) and the
    job's paths under /s3. `config`: script, config, args, command, data."""
    recipe = RECIPES.get(recipe_name)
    if recipe is None:
        raise TrainingError(f"recipe: unknown recipe {recipe_name!r}; one of "
                            f"{', '.join(RECIPES)}", field="recipe")
    for need in recipe.needs:
        if not config.get(need):
            raise TrainingError(f"{need}: the {recipe_name} recipe needs {need}", field=need)
    where = paths(spec.name, config.get("data"))
    env = dict(spec.env)
    env.update(HYPD_DATA_DIR=where["data"], HYPD_OUTPUT_DIR=where["output"],
               HYPD_CHECKPOINT_DIR=where["checkpoints"], HYPD_JOB=spec.name)
    spec = replace(spec, env=tuple(sorted(env.items())))
    args = [str(a) for a in config.get("args") or ()]
    if recipe.kind == RAY:
        if spec.elastic:
            raise TrainingError("max_nodes: elastic training is a HyperPodPyTorchJob feature; "
                                f"the {recipe_name} recipe runs on Ray", field="max_nodes")
        if recipe_name == "verl":
            conf = s3_path(config["config"], "config")
            argv = ["python3", "-m", "verl.trainer.main_ppo",
                    f"--config-path={posixpath.dirname(conf)}",
                    f"--config-name={posixpath.splitext(posixpath.basename(conf))[0]}",
                    f"trainer.default_local_dir={where['checkpoints']}",
                    f"trainer.nnodes={spec.nodes}",
                    f"trainer.n_gpus_per_node={spec.gpus_per_node}", *args]
        else:
            argv = [str(a) for a in config["command"]]
        return Built(RAY, training.ray_job(spec, shlex.join(argv)), where)
    if recipe_name == "torchrun":
        command = [*_launcher(spec), s3_path(config["script"], "script"), *args]
    elif recipe_name == "llama-factory":
        command = [*_launcher(spec), "-m", "llamafactory.launcher",
                   s3_path(config["config"], "config"), f"output_dir={where['output']}", *args]
    elif recipe_name == "ms-swift":
        command = [*_launcher(spec), "-m", "swift.cli.sft", "--config",
                   s3_path(config["config"], "config"), "--output_dir", where["output"], *args]
    else:
        command = [str(a) for a in config["command"]]
    spec = replace(spec, command=tuple(command))
    return Built(PYTORCH, training.pytorch_job(spec), where)
