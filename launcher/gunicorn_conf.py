"""gunicorn's hooks for `hypd web` (its settings are flags on the command line; hooks need
code): hypd's log format for gunicorn's lines too, a web process that ends stops counting
in the live gauges, and each web process watches the budgets (app/budget_watch.py)."""

import logging

from cloud import logs, metrics
from cloud.settings import Settings

logconfig_dict = logs.gunicorn_config(Settings.from_env())


def post_fork(server, worker) -> None:
    if logconfig_dict and server.cfg.accesslog in (None, "/dev/null"):
        # the JSON handlers replace gunicorn's own; without --access-log there is none
        logging.getLogger("gunicorn.access").disabled = True


def child_exit(server, worker) -> None:
    metrics.process_died(worker.pid)


def post_worker_init(worker) -> None:
    from app.budget_watch import BudgetWatch

    BudgetWatch(worker.wsgi).start()
