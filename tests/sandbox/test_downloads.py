"""The sandbox's model download container: the tools are where the image says — a stock
Python image needs `pip install` first, an image named hypd-model-download has them — and a
script that runs a tool the image lacks fails as sh does."""

from __future__ import annotations

from typing import Any

import pytest

from cloud import models
from cloud.models import Download
from sandbox.simulator.downloads import DownloadProgram, tools_in

BAKED = "123456789012.dkr.ecr.us-west-2.amazonaws.com/hypd-model-download:0.34.4"


class Bucket:
    """An object store with one empty bucket, `bkt`, recording what lands in it."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    def put(self, bucket: str, key: str, body: bytes) -> None:
        self.keys.append(key)

    def objects(self, bucket: str, prefix: str) -> list[tuple[str, bytes]] | None:
        return [] if bucket == "bkt" else None


def _container(image: str) -> dict[str, Any]:
    job = models.download_job(Download("m", "huggingface", repo="org/m"), "bkt", "us-west-2",
                              "op-1", image=image)
    return job["spec"]["template"]["spec"]["containers"][0]


def _run(container: dict[str, Any]) -> tuple[int | None, list[str], list[str]]:
    bucket = Bucket()
    program = DownloadProgram(bucket, lambda *_: False)({"metadata": {}}, container)
    assert program is not None
    for line in program.lines:
        if line.effect is not None:
            line.effect()
    return program.exit_code, [line.text for line in program.lines if line.text], bucket.keys


def test_which_images_have_the_tools():
    assert tools_in(BAKED) == {"hf", "aws"}
    assert tools_in("hypd-model-download@sha256:" + "a" * 64) == {"hf", "aws"}
    for image in ("python:3.12-slim", "docker.io/library/python:3.12", "hypd-model-download-x:1"):
        assert tools_in(image) == set(), image


@pytest.mark.parametrize(("image", "installs"), [("python:3.12-slim", True), (BAKED, False)])
def test_a_download_installs_only_what_its_image_lacks(image, installs):
    code, printed, uploaded = _run(_container(image))
    assert code == 0, printed
    assert any(p.startswith("Successfully installed") for p in printed) is installs
    assert sorted(uploaded) == sorted(f"models/m/{f}" for f in (
        "config.json", "generation_config.json", "tokenizer.json", "model.safetensors"))


def test_a_tool_the_image_lacks_is_not_found():
    container = _container("python:3.12-slim")
    container["command"] = ["sh", "-c", 'hf download "$HYPD_REPO" --local-dir /work/model && '
                            'aws s3 cp --recursive /work/model "s3://$HYPD_BUCKET/models/m/"']
    code, printed, uploaded = _run(container)
    assert (code, printed, uploaded) == (127, ["sh: 1: hf: not found"], [])
