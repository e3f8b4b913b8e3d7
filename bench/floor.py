"""The floor a status read is measured against: the least a Flask route can do to answer
one — check a bearer token and read one Redis hash — served by gunicorn (2 workers x 8
threads). `gunicorn 'bench.floor:app'` with FLOOR_REDIS_URL and FLOOR_TOKEN set."""

from __future__ import annotations

import hashlib
import hmac
import os

import redis
from flask import Flask, abort, jsonify, request

app = Flask(__name__)
_redis = redis.Redis.from_url(os.environ["FLOOR_REDIS_URL"], decode_responses=True)
_digest = hashlib.sha256(os.environ["FLOOR_TOKEN"].encode()).hexdigest()


@app.get("/floor/<key>")
def read(key: str):
    header = request.headers.get("Authorization", "")
    presented = hashlib.sha256(header.removeprefix("Bearer ").encode()).hexdigest()
    if not hmac.compare_digest(presented, _digest):
        abort(401)
    return jsonify(_redis.hgetall(f"floor:{key}"))
