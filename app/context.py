"""Typed access to what the app factory placed in `app.extensions`."""

from __future__ import annotations

import redis
from flask import current_app

from cloud.settings import Settings
from tasks.engine.service import Engine


def settings() -> Settings:
    return current_app.extensions["hypd.settings"]


def engine() -> Engine:
    return current_app.extensions["hypd.engine"]


def redis_conn() -> redis.Redis:
    return current_app.extensions["hypd.redis"]
