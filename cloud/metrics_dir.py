"""Where each group of hypd processes keeps its Prometheus samples (cloud/metrics.py).

Apart from cloud/metrics.py because it must run before prometheus_client is first imported:
prometheus_client decides at import whether it counts in multiprocess mode, by the presence
of PROMETHEUS_MULTIPROC_DIR.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

from cloud.settings import Settings

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

_PART = re.compile(r"[^A-Za-z0-9_.@-]")


def process_dir(settings: Settings, part: str) -> Path:
    """The directory one group of processes (`web-<host>`, `worker-<node>`) writes to."""
    return settings.metrics_path / _PART.sub("_", part)


def prepare(settings: Settings, part: str) -> Path:
    """Empty this group's directory and point prometheus_client at it: `hypd web` before
    starting gunicorn, `hypd worker` before Celery (both before prometheus_client is
    imported in the processes that will count)."""
    if "prometheus_client" in sys.modules:
        raise RuntimeError("prepare() must run before prometheus_client is imported")
    path = process_dir(settings, part)
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True, mode=0o700)
    os.environ[MULTIPROC_ENV] = str(path)
    return path
