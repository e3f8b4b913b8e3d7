"""An HTTP reply held in memory.

The layer reads moto's whole answer before passing it on, because it may have to rewrite it
(timed states), record ids from it (call log) or hold it back (fault points); one small type
carries it between those steps.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any


@dataclass
class Reply:
    """Status, headers and body of one HTTP answer."""

    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def json(cls, value: Any, status: int = 200) -> Reply:
        """A JSON answer (the control routes speak only JSON)."""
        return cls(status, json.dumps(value).encode(), [("Content-Type", "application/json")])

    def header(self, name: str) -> str | None:
        """The first header called `name` (case-insensitive)."""
        lowered = name.lower()
        return next((v for k, v in self.headers if k.lower() == lowered), None)

    def with_body(self, body: bytes) -> Reply:
        """The same reply with another body (Content-Length follows)."""
        headers = [(k, v) for k, v in self.headers if k.lower() != "content-length"]
        return Reply(self.status, body, headers)

    def send(self, start_response: Callable[..., Any]) -> Iterable[bytes]:
        """Hand the reply to the WSGI server."""
        try:
            phrase = HTTPStatus(self.status).phrase
        except ValueError:
            phrase = "Unknown"
        headers = list(self.headers)
        # Kept as moto set it when present: a HEAD answer's length is not its (empty) body's.
        if self.header("Content-Length") is None:
            headers.append(("Content-Length", str(len(self.body))))
        start_response(f"{self.status} {phrase}", headers)
        return [self.body]
