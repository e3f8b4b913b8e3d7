"""The model download Job's image and script: the baked image pins exactly the tools the Job
would install, the Job runs the image the setting names, and the script — run here by a
real `sh` against stand-in tools — installs them only when the image lacks them."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from cloud import models
from cloud.models import Download
from cloud.settings import Settings
from tests.stack import REPO

DOCKERFILE = REPO / "deploy" / "images" / "model-download" / "Dockerfile"


def _pins(dockerfile: str) -> set[str]:
    """The requirements the Dockerfile's `pip install` names (quoted, `name==version`)."""
    install = re.search(r"pip install\b(.*?)(?:&&|$)", dockerfile, re.S)
    assert install, "the Dockerfile installs nothing with pip"
    return set(re.findall(r'"([^"\s]+==[^"\s]+)"', install.group(1)))


def test_the_baked_image_pins_exactly_the_tools_the_job_installs():
    text = DOCKERFILE.read_text()
    assert _pins(text) == set(models.TOOLS)
    # the same Python as the stock image the Job falls back to, a full release
    stock = re.fullmatch(r"python:(\d+\.\d+)-slim", Settings().model_download_image)
    assert stock, Settings().model_download_image
    assert re.search(rf"^FROM python:{re.escape(stock.group(1))}\.\d+-slim-bookworm"
                     r"(@sha256:[0-9a-f]{64})?$", text, re.M)
    assert re.search(r"^USER 10001$", text, re.M), "the download need not run as root"


@pytest.mark.parametrize("env", [{}, {"HYPD_MODEL_DOWNLOAD_IMAGE":
                                      "123456789012.dkr.ecr.us-west-2.amazonaws.com/"
                                      "hypd-model-download:0.34.4"}])
def test_the_job_runs_the_image_the_setting_names(env):
    image = Settings.from_env(env).model_download_image
    assert image == env.get("HYPD_MODEL_DOWNLOAD_IMAGE", "python:3.12-slim")
    for download in (Download("m", "huggingface", repo="org/m"),
                     Download("m", "s3", s3_uri="s3://src/exports/m")):
        job = models.download_job(download, "bkt", "us-west-2", "op-1", image=image)
        containers = job["spec"]["template"]["spec"]["containers"]
        assert [c["image"] for c in containers] == [image]


# -- the script, run by sh ----------------------------------------------------------------

_STAND_IN = '#!/bin/sh\necho "{name} $*" >> "$HYPD_TEST_LOG"\n'
_PIP = ('#!/bin/sh\necho "pip $*" >> "$HYPD_TEST_LOG"\n'
        '[ -z "$HYPD_TEST_PIP_FAILS" ] || exit 1\n'
        'for tool in hf aws; do\n'
        '  printf \'#!/bin/sh\\necho "%s $*" >> "$HYPD_TEST_LOG"\\n\' "$tool" \\\n'
        '    > "$HYPD_TEST_BIN/$tool"\n'
        '  /bin/chmod +x "$HYPD_TEST_BIN/$tool"\n'
        'done\n')


def _tool(directory: Path, name: str, text: str) -> None:
    path = directory / name
    path.write_text(text)
    path.chmod(0o755)


def _run(tmp_path: Path, source: str, baked: bool, pip_fails: bool = False
         ) -> tuple[int, list[str]]:
    """Run the Job's own command with its own environment; PATH holds only stand-ins (pip,
    and with `baked` hf and aws): what each was called with, in order."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    _tool(bin_dir, "pip", _PIP)
    if baked:
        for name in ("hf", "aws"):
            _tool(bin_dir, name, _STAND_IN.format(name=name))
    download = (Download("m", "huggingface", repo="org/m", revision="v1") if source == "huggingface"
                else Download("m", "s3", s3_uri="s3://src/exports/m"))
    job = models.download_job(download, "bkt", "us-west-2", "op-1", image="any")
    container = job["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    log = tmp_path / "calls.log"
    env.update(PATH=str(bin_dir), HYPD_TEST_LOG=str(log), HYPD_TEST_BIN=str(bin_dir))
    if pip_fails:
        env["HYPD_TEST_PIP_FAILS"] = "1"
    done = subprocess.run(["/bin/sh", *container["command"][1:]], env=env, cwd=tmp_path,
                          capture_output=True, timeout=30)
    return done.returncode, log.read_text().splitlines() if log.exists() else []


INSTALL = f"pip install --quiet --no-cache-dir {' '.join(models.TOOLS)}"
UPLOAD = 'aws s3 cp --recursive --only-show-errors --exclude .cache/* {} s3://bkt/models/m/'


@pytest.mark.parametrize(("source", "fetch"), [
    ("huggingface", ["hf download org/m --revision v1 --local-dir /work/model",
                     UPLOAD.format("/work/model")]),
    ("s3", [UPLOAD.format("s3://src/exports/m")]),
])
def test_the_script_installs_the_tools_only_when_the_image_lacks_them(tmp_path, source, fetch):
    code, calls = _run(tmp_path / "stock", source, baked=False)
    assert (code, calls) == (0, [INSTALL, *fetch])
    code, calls = _run(tmp_path / "baked", source, baked=True)
    assert (code, calls) == (0, fetch)
    # a failed install stops the script: nothing is fetched with tools that are not there
    code, calls = _run(tmp_path / "broken", source, baked=False, pip_fails=True)
    assert (code, calls) == (1, [INSTALL])


def test_the_script_is_fixed_text_and_values_come_from_the_environment():
    job = models.download_job(Download("m", "huggingface", repo="org/m"), "bkt", "us-west-2",
                              "op-1", image="python:3.12-slim")
    command = job["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command == ["sh", "-c", models.SCRIPTS["huggingface"]]
    for value in (*models.TOOLS, "org/m", "bkt", "op-1"):
        assert value not in command[2], value

