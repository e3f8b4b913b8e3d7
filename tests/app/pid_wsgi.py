"""A WSGI app that answers which process served it, for tests of how hypd's web worker class
spreads connections over its processes (tests/app/test_accept_board.py)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    body = str(os.getpid()).encode()
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]
