"""Budget warnings when nobody is looking: every web process runs one watcher thread, and
every `HYPD_BUDGET_CHECK_S` one of them (whichever takes the Redis lock for the interval)
reads every budgeted cluster's cost this month, which raises a crossed warning once
(app/readmodels/budgets.py). Reads made anyway — the budget's, the cost panel's, the
clusters list's — raise them sooner.

Started by gunicorn's `post_worker_init` hook (launcher/gunicorn_conf.py), so an app made in a
test or a script watches nothing unless it asks (`BudgetWatch(app).check_once()`).
"""

from __future__ import annotations

import logging
import os
import threading

from flask import Flask

from app import context
from app.errors import ApiError
from app.readmodels import budgets as readmodel
from app.readmodels import clusters as clusters_readmodel
from tasks import budgets as records

log = logging.getLogger(__name__)

LOCK_KEY = "hypd:mutex:budget-watch"
"""In the engine's mutex family (`hypd:mutex:`): held for one turn, never a record."""


class BudgetWatch(threading.Thread):
    def __init__(self, app: Flask) -> None:
        super().__init__(name="budget-watch", daemon=True)
        self.app = app
        self.interval = app.extensions["hypd.settings"].budget_check_s
        self._stop = threading.Event()

    def run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.check_once()
            except Exception:  # Redis away, say: the next turn tries again
                log.exception("budget check failed")

    def stop(self) -> None:
        self._stop.set()

    def check_once(self) -> list[str]:
        """Check every budgeted cluster if no other process did in this interval; answers
        the clusters checked."""
        with self.app.app_context():
            conn = context.redis_conn()
            if not conn.set(LOCK_KEY, os.getpid(), nx=True, ex=max(1, int(self.interval))):
                return []
            checked = []
            for cluster in records.budgeted(conn):
                try:
                    readmodel.read(clusters_readmodel.find(cluster))
                except ApiError as refused:  # gone since: its budget goes with its delete
                    log.warning("budget of %s not checked: %s", cluster, refused.message)
                    continue
                except Exception:  # AWS away: the next turn tries again
                    log.exception("budget of %s not checked", cluster)
                    continue
                checked.append(cluster)
            return checked
