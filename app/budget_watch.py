"""Budget warnings and teams' spend when nobody is looking: every web process runs one
watcher thread, and every `HYPD_BUDGET_CHECK_S` one of them (whichever takes the Redis lock
for the interval) makes one turn:
- every cluster with a budget — its own or a team's — gets the cost read with its teams
  (app/readmodels/budgets.py `cluster_cost`), which records what the teams' work holds now
  and raises a crossed warning once;
- every other cluster with teams (tasks/team_ledger.py's set, kept by the team operations
  and reads) has only its teams' admitted work recorded (app/readmodels/team_cost.py
  `observe`: Kubernetes reads, no AWS price or node call), so what ends between two reads
  is still counted. Clusters without teams or budgets cost a turn nothing.
Reads made anyway — the budget's, the cost panel's, the clusters list's — do the same sooner.
A cluster that is gone leaves the set.

Started by gunicorn's `post_worker_init` hook (launcher/gunicorn_conf.py), so an app made in a
test or a script watches nothing unless it asks (`BudgetWatch(app).check_once()`).
"""

from __future__ import annotations

import logging
import os
import threading
from datetime import UTC, datetime

from flask import Flask

from app import context
from app.errors import ApiError
from app.readmodels import budgets as readmodel
from app.readmodels import clusters as clusters_readmodel
from app.readmodels import cost as cost_model
from app.readmodels import team_cost
from tasks import budgets as records
from tasks import team_ledger

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
        """Check every budgeted cluster and record every cluster's teams' work, if no other
        process did in this interval; answers the clusters looked at."""
        with self.app.app_context():
            conn = context.redis_conn()
            if not conn.set(LOCK_KEY, os.getpid(), nx=True, ex=max(1, int(self.interval))):
                return []
            budgeted = {records.split(of)[0] for of in records.budgeted(conn)}
            with_teams = set(team_ledger.clusters(conn))
            checked = []
            for cluster in sorted(budgeted | with_teams):
                try:
                    ref = clusters_readmodel.find(cluster)
                    if cluster in budgeted:
                        readmodel.cluster_cost(ref)
                    else:
                        team_cost.observe(ref, cost_model.iso(datetime.now(UTC)))
                except ApiError as refused:  # gone since: its budgets go with its delete
                    log.warning("cluster %s not checked: %s", cluster, refused.message)
                    if refused.status == 404:
                        team_ledger.unmark(conn, cluster)
                    continue
                except Exception:  # AWS away: the next turn tries again
                    log.exception("cluster %s not checked", cluster)
                    continue
                checked.append(cluster)
            return checked
