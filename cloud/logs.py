"""Log lines of the web server and the workers: text, or one JSON object per line
(`HYPD_LOG_FORMAT=json`) carrying the operation being handled.

Here beside the settings and metrics because every layer logs and the operation id is set
where an operation is handled and read where a line is written: a context variable, set by
the engine's runner around each task and by `mutations.submit` (the mutation door of the web
app) for its line.

With `HYPD_LOG_FORMAT=json` every line is one JSON object: those of the web server
(gunicorn's and the app's, through gunicorn's `logconfig_dict`) and of the worker (Celery's
and hypd's: the worker installs the handler and tells Celery to keep it). A JSON line holds
`time`, `level`, `logger`, `message`, `process`, `thread`, and while an operation is handled
its `op_id`, `kind` and `step`; an exception adds `exception`. Text lines end with
`[op_id step]` the same way. The runner logs each attempt, each step's end, retries and
failures.

Tokens never reach a log line: hypd logs token names only, requests are not logged with their
headers, and gunicorn's access log (off unless `--access-log`) has no header fields; a test
reads the stack's logs for the secrets.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from cloud.settings import Settings

OPERATION: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "hypd_operation", default=None)
"""The operation this thread is handling: {op_id, kind, step}."""

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s%(hypd_op)s"


@contextlib.contextmanager
def operation(op_id: str, kind: str | None = None, step: str | None = None) -> Iterator[None]:
    """Every line logged inside carries this operation (and step)."""
    fields = {k: v for k, v in (("op_id", op_id), ("kind", kind), ("step", step)) if v}
    token = OPERATION.set(fields)
    try:
        yield
    finally:
        OPERATION.reset(token)


def at_step(step: str) -> None:
    """The operation being handled moved on to `step`."""
    current = OPERATION.get()
    if current is not None:
        OPERATION.set({**current, "step": step})


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "process": record.process,
            "thread": record.threadName,
        }
        line.update(OPERATION.get() or {})
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


class _OperationSuffix(logging.Filter):
    """Text lines end with ` [op_... step]` while an operation is handled."""

    def filter(self, record: logging.LogRecord) -> bool:
        current = OPERATION.get() or {}
        shown = " ".join(current[k] for k in ("op_id", "step") if k in current)
        record.hypd_op = f" [{shown}]" if shown else ""
        return True


def formatter(settings: Settings) -> logging.Formatter:
    return JsonFormatter() if settings.log_format == "json" else logging.Formatter(TEXT_FORMAT)


def configure(settings: Settings, level: str = "INFO") -> None:
    """The root logger of this process writes hypd's lines to stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter(settings))
    handler.addFilter(_OperationSuffix())
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)


def gunicorn_config(settings: Settings) -> dict[str, Any]:
    """gunicorn's `logconfig_dict`: its own lines and the app's as JSON in json mode (text
    mode keeps gunicorn's defaults)."""
    if settings.log_format != "json":
        return {}
    handler = {"class": "logging.StreamHandler", "formatter": "json",
               "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": f"{__name__}.JsonFormatter"}},
        "handlers": {"console": handler, "error_console": handler},
        "root": {"level": "INFO", "handlers": ["console"]},
        "loggers": {
            "gunicorn.error": {"level": "INFO", "handlers": ["error_console"],
                               "propagate": False, "qualname": "gunicorn.error"},
            "gunicorn.access": {"level": "INFO", "handlers": ["console"],
                                "propagate": False, "qualname": "gunicorn.access"},
        },
    }
