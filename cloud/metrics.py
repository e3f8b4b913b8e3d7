"""Prometheus metrics: defined once here, counted where each thing happens, served by the
web server at `GET /metrics`.

Here because every layer counts something (the engine its operations and steps, the AWS
client factory its calls, the WebSocket its sockets) and `cloud/` is the layer every other may
import, as for the settings.

The metrics:

- `hypd_operations_total{kind,status}`: counted in the operation store when an operation
  enters a status (queued at submit and retry, then running and a terminal one).
- `hypd_step_duration_seconds{kind,step,outcome}`: a step's first attempt to its end,
  observed by the runner once the end is written.
- `hypd_aws_calls_total{service,api}` and `hypd_aws_errors_total{service,api,code}`: from
  botocore's `after-call` / `after-call-error` events, registered on the one session of
  cloud/aws.py, so every client counts; once per call, after botocore's retries.
- `hypd_websockets_open{kind}`: a live-sum gauge; kinds `operation` and `job_logs`.
- `hypd_sweeper_pickups_total`.
- `hypd_log_tail_dropped_lines_total`: lines a job's live tail dropped for a slow client.
- `hypd_budget_warnings_total{cluster,at}`: a cluster's monthly budget crossed at 80 % or
  100 %, once per crossing per month (app/readmodels/budgets.py).

hypd runs many processes: gunicorn's web processes and Celery's prefork children. They count
in prometheus_client's multiprocess mode: each process writes its samples to small mmap files
in a directory, and a scrape merges the files. Each group of processes writes to a directory
of its own under `HYPD_METRICS_DIR`: `web-<host>` (set by `hypd web` before gunicorn starts)
and `worker-<node name>` (by `hypd worker` before Celery), which it empties when it starts.
A restarted web server must not wipe a running worker's files, and processes in different
containers sharing the metrics volume may have the same pid (one file per pid and kind). A
scrape merges every directory under `HYPD_METRICS_DIR`, so one `/metrics` shows the web
server and the workers of its machine (or of every container sharing that volume); a worker
elsewhere serves its own with `hypd worker --metrics-port`. gunicorn's `child_exit` marks a
web process dead for the live gauge.

prometheus_client chooses multiprocess mode when it is first imported, so the directory must
be known before that: `hypd web` and `hypd worker` call `cloud.metrics_dir.prepare()` first
(it sets PROMETHEUS_MULTIPROC_DIR). `cloud/metrics_dir.py` has no prometheus import and
refuses to run once prometheus_client is loaded. Importing anything of `app` imports this
module, so the metrics are made on first use (`cloud.metrics._Metric`). Without
PROMETHEUS_MULTIPROC_DIR (an app made in a test process) the metrics count in this process
only.
"""

from __future__ import annotations

import glob
import importlib
import os
import threading
from pathlib import Path
from typing import Any

from cloud.metrics_dir import MULTIPROC_ENV
from cloud.settings import Settings

_MAKING = threading.Lock()


class _Metric:
    """A prometheus_client metric made on first use: nothing imports prometheus_client
    before `hypd worker` has set its directory (importing any of `app` imports this module)."""

    def __init__(self, kind: str, name: str, documentation: str, labels: tuple[str, ...] = (),
                 **options: Any) -> None:
        self._spec = (kind, name, documentation, labels, options)
        self._made: Any = None

    def made(self) -> Any:
        """Made once per process under a lock: two threads of a web process making their first
        call at once each registered the metric, and the second's DuplicateTimeseries answered
        its request 500 (found by the spaces page's browser test on a fresh stack)."""
        if self._made is None:
            with _MAKING:
                if self._made is None:
                    kind, name, documentation, labels, options = self._spec
                    self._made = getattr(importlib.import_module("prometheus_client"), kind)(
                        name, documentation, labels, **options)
        return self._made

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.made(), attribute)


OPERATIONS = _Metric(
    "Counter", "hypd_operations", "Operations entering a status, by kind and status "
    "(queued when recorded and on retry, then running, succeeded, failed, cancelled)",
    ("kind", "status"))
STEP_SECONDS = _Metric(
    "Histogram", "hypd_step_duration_seconds", "How long a step took, from its first attempt "
    "to its end (waits on AWS included), by operation kind, step and outcome",
    ("kind", "step", "outcome"),
    buckets=(0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 900, 1200, 1800, 3600, float("inf")))
AWS_CALLS = _Metric("Counter", "hypd_aws_calls", "AWS API calls, by service and API",
                    ("service", "api"))
AWS_ERRORS = _Metric("Counter", "hypd_aws_errors", "AWS API calls that failed (after "
                     "botocore's retries), by service, API and error code",
                     ("service", "api", "code"))
WEBSOCKETS = _Metric("Gauge", "hypd_websockets_open", "WebSockets open now, by kind "
                     "(operation: an operation's events; job_logs: a job's log tail)", ("kind",),
                     multiprocess_mode="livesum")
SWEEPER_PICKUPS = _Metric("Counter", "hypd_sweeper_pickups", "Stalled operations the sweeper "
                          "re-kicked (their worker died, or their first task was never sent)")
LOG_LINES_DROPPED = _Metric("Counter", "hypd_log_tail_dropped_lines", "Log lines a job's "
                            "live tail dropped because its client read too slowly (each "
                            "drop is marked in the stream)")
LOG_FOLLOWS = _Metric("Gauge", "hypd_log_follows_open", "Pod log streams held open on "
                      "clusters' Kubernetes APIs for live tails: one per followed pod per web "
                      "process, however many tails follow it", (), multiprocess_mode="livesum")
BUDGET_WARNINGS = _Metric("Counter", "hypd_budget_warnings", "A monthly budget crossed "
                          "(at: 0.8, 1.0) — the cluster's (team empty) or a team's — counted "
                          "once per crossing per month", ("cluster", "team", "at"))
ALL = (OPERATIONS, STEP_SECONDS, AWS_CALLS, AWS_ERRORS, WEBSOCKETS, SWEEPER_PICKUPS,
       LOG_LINES_DROPPED, LOG_FOLLOWS, BUDGET_WARNINGS)


def registry(settings: Settings, only: Path | None = None) -> Any:
    """What a scrape reads: every group's processes in multiprocess mode (or only the group
    in `only`), else this process's own metrics."""
    import prometheus_client
    from prometheus_client.multiprocess import MultiProcessCollector

    if MULTIPROC_ENV not in os.environ:
        for metric in ALL:
            metric.made()  # listed even before they first count
        return prometheus_client.REGISTRY
    pattern = str(only / "*.db") if only else str(settings.metrics_path / "*" / "*.db")

    class EveryProcess:
        def collect(self):
            return MultiProcessCollector.merge(glob.glob(pattern), accumulate=True)

    merged = prometheus_client.CollectorRegistry()
    merged.register(EveryProcess())
    return merged


def scrape(settings: Settings) -> tuple[bytes, str]:
    """The exposition text `/metrics` answers, and its content type."""
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    return generate_latest(registry(settings)), CONTENT_TYPE_LATEST


def serve(settings: Settings, port: int, only: Path) -> None:
    """`hypd worker --metrics-port`: this worker's own metrics over HTTP on HYPD_HOST (a
    worker on a machine without the web server; nothing but metrics, no token)."""
    from prometheus_client import start_http_server

    start_http_server(port, addr=settings.host, registry=registry(settings, only))


def process_died(pid: int) -> None:
    """A web process ended (gunicorn's child_exit): its live gauges stop counting."""
    if MULTIPROC_ENV in os.environ:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)


# -- AWS calls, counted from botocore's events -------------------------------------------------

def count_aws_call(event_name: str, http_response=None, parsed=None, **_: object) -> None:
    """`after-call.<service>.<Operation>`: every call that got an answer (not one a
    rehearsal held back: cloud/rehearsal.py answered it, AWS never saw it)."""
    if getattr(http_response, "rehearsed", False):
        return
    _, service, api = event_name.split(".", 2)
    AWS_CALLS.labels(service, api).inc()
    if http_response is not None and http_response.status_code >= 300:
        code = ((parsed or {}).get("Error") or {}).get("Code") or str(http_response.status_code)
        AWS_ERRORS.labels(service, api, code).inc()


def count_aws_failure(event_name: str, exception: BaseException | None = None,
                      **_: object) -> None:
    """`after-call-error.<service>.<Operation>`: a call that got no answer (connection lost,
    timed out) after botocore's retries."""
    _, service, api = event_name.split(".", 2)
    AWS_CALLS.labels(service, api).inc()
    AWS_ERRORS.labels(service, api, type(exception).__name__ if exception else "error").inc()


def register_aws_hooks(events) -> None:
    """Count every call of the clients made from a boto3 session with these events."""
    events.register("after-call", count_aws_call)
    events.register("after-call-error", count_aws_failure)
