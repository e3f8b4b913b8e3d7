"""hypd's Celery app (its broker settings and sweeper) with one more task, for the test that
restarts Redis under a worker: a task that marks a file, sleeps, and marks it again."""

from __future__ import annotations

import time
from pathlib import Path

from cloud.settings import Settings
from tasks.celery_app import make_celery

app = make_celery(Settings.from_env())


@app.task(name="test.sleep")
def sleep(mark: str, seconds: float) -> None:
    Path(mark + ".started").touch()
    time.sleep(seconds)
    Path(mark + ".done").touch()
