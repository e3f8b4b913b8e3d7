"""cloud/logs.py: a JSON line per record, carrying the operation being handled."""

from __future__ import annotations

import json
import logging

from cloud import logs
from cloud.settings import Settings


def _line(record_args: dict, **context) -> dict:
    record = logging.LogRecord("tasks.engine.runner", logging.WARNING, __file__, 1,
                               "step failed (%s): %s", ("upstream_error", "no"), None)
    record.__dict__.update(record_args)
    if context:
        with logs.operation(**context):
            logs.at_step("vpc")
            return json.loads(logs.JsonFormatter().format(record))
    return json.loads(logs.JsonFormatter().format(record))


def test_a_json_line_carries_the_operation_while_one_is_handled():
    line = _line({}, op_id="op_01", kind="network.create")
    assert line["message"] == "step failed (upstream_error): no"
    assert (line["level"], line["logger"]) == ("WARNING", "tasks.engine.runner")
    assert (line["op_id"], line["kind"], line["step"]) == ("op_01", "network.create", "vpc")
    assert line["time"].endswith("Z")
    outside = _line({})
    assert "op_id" not in outside  # the context ended with the block


def test_an_exception_is_one_field_of_one_line():
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        line = _line({"exc_info": sys.exc_info()})
    assert "ValueError: boom" in line["exception"]


def test_text_stays_the_default_and_gunicorn_keeps_its_own_config_then():
    assert isinstance(logs.formatter(Settings()), logging.Formatter)
    assert not isinstance(logs.formatter(Settings()), logs.JsonFormatter)
    assert logs.gunicorn_config(Settings()) == {}
    config = logs.gunicorn_config(Settings(log_format="json"))
    assert config["formatters"]["json"]["()"] == "cloud.logs.JsonFormatter"
