"""gunicorn's gthread worker, but what gunicorn refuses itself speaks the one envelope.

A request gunicorn cannot or will not parse (a request line over 4,094 bytes, a header field
over 8,190 or more than 100 of them, a control character in a value, a broken chunk, an
unknown transfer coding) never reaches Flask: gunicorn answered it with its own HTML page
(and 501 for a transfer coding), and the audit log never heard of it. Here it answers in the
envelope with a stable code and a 4xx, and the attempt is audited like any refusal.

The method and path are known only when gunicorn got that far; the token never is (nothing
was authenticated). Nothing the client sent is echoed or logged: gunicorn's own messages
carry header names and values, so the reply's message is ours.

Its thread pool is gated (app/gate.py): of `--threads` at most `HYPD_WEB_GATE` run request
code at once, and long-polls and WebSockets step out while they wait. And it listens only while
it holds no more connections than the least-loaded other web process (app/accept_board.py),
so a client's connections spread over the processes.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from gunicorn import util
from gunicorn.http import errors as http
from gunicorn.workers.gthread import ThreadWorker

from app import audit
from app.accept_board import AcceptBoard
from app.gate import GatedPool
from cloud.settings import Settings

log = logging.getLogger(__name__)

BOARD = AcceptBoard()
"""Made when gunicorn's master imports this worker class, so every web process it forks
shares it."""
PATH_KEPT = 200
"""Characters of a refused request's path kept in its audit entry (a line can be 4 KiB)."""

REFUSALS: tuple[tuple[tuple[type[Exception], ...], int, str, str], ...] = (
    ((http.LimitRequestLine,), 414, "uri_too_long",
     "the request line is longer than 4,094 bytes: send long values in a JSON body"),
    ((http.LimitRequestHeaders,), 431, "headers_too_large",
     "a header field is longer than 8,190 bytes, or there are more than 100 of them"),
    ((http.ExpectationFailed,), 417, "expectation_failed",
     "the only expectation the server meets is Expect: 100-continue"),
    ((http.UnsupportedTransferCoding,), 400, "bad_request",
     "unsupported Transfer-Encoding: send chunked or a Content-Length"),
    ((http.InvalidRequestLine, http.InvalidRequestMethod, http.InvalidHTTPVersion), 400,
     "bad_request", "the request line is not HTTP/1.1's METHOD /path HTTP/1.1"),
    ((http.InvalidHeader, http.InvalidHeaderName, http.ObsoleteFolding,
      http.InvalidSchemeHeaders), 400, "bad_request",
     "a header is malformed (a control character in a value, a name that is not a token, "
     "a folded line, or contradictory lengths or schemes)"),
    ((http.InvalidChunkSize, http.ChunkMissingTerminator, http.InvalidChunkExtension), 400,
     "bad_request", "the chunked body is malformed"),
    ((http.InvalidProxyLine, http.InvalidProxyHeader, http.InvalidH2CPreface), 400,
     "bad_request", "the connection's preface is malformed"),
    ((http.ForbiddenProxyRequest,), 403, "forbidden",
     "a PROXY protocol line from an address not allowed to send one"),
)
"""What gunicorn refuses → status, code, message. Anything else (an application's bad
response header, the server's own configuration) stays gunicorn's 500."""


def refusal(exc: Exception) -> tuple[int, str, str] | None:
    """The status, code and message of a request gunicorn refused, None if it is not one."""
    if isinstance(exc, (http.InvalidResponseHeader, http.InvalidResponseHeaderName)):
        return None  # the application's fault, not the client's
    for classes, status, code, message in REFUSALS:
        if isinstance(exc, classes):
            return status, code, message
    return None


def reply(status: int, code: str, message: str) -> bytes:
    """The whole HTTP response, closing the connection (the stream's state is unknown)."""
    body = json.dumps({"error": {"code": code, "message": message, "details": {}}}).encode()
    head = (f"HTTP/1.1 {status} {code.replace('_', ' ')}\r\n"
            "Connection: close\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n")
    return head.encode("latin-1") + body


def audit_entry(req: Any, status: int, code: str) -> dict[str, Any]:
    method = getattr(req, "method", None) or "-"
    path = (getattr(req, "path", None) or "-")[:PATH_KEPT]
    return audit.entry(None, method, f"{method} (refused before routing)", path, None, None,
                       "refused", status, code)


class EnvelopeWorker(ThreadWorker):
    def get_thread_pool(self):
        """Gated when the gate is narrower than the pool, else gunicorn's own."""
        gate = Settings.from_env().web_gate
        if 0 < gate < self.cfg.threads:
            return GatedPool(slots=gate, threads=self.cfg.threads)
        return super().get_thread_pool()

    def _balanced(self) -> bool:
        return BOARD.may_accept(self.age, self.nr_conns)

    def set_accept_enabled(self, enabled):
        """gunicorn turns listening on whenever it holds fewer connections than it may: only
        while the board agrees."""
        super().set_accept_enabled(enabled and self._balanced())

    def wait_for_and_dispatch_events(self, timeout):
        """Before each wait (at least once a second): this process's count on the board, and
        no listening while it holds more than its share."""
        BOARD.write(self.age, self.nr_conns)
        if self._accepting and not self._balanced():
            super().set_accept_enabled(False)
        super().wait_for_and_dispatch_events(timeout)

    def handle_error(self, req, client, addr, exc):
        refused = refusal(exc)
        if refused is None:
            return super().handle_error(req, client, addr, exc)
        status, code, message = refused
        if req is None:
            req = getattr(exc, "req", None)
        self.log.warning("Invalid request from ip=%s: %s (%s)", (addr or ("",))[0], code,
                         type(exc).__name__)
        self._audit(req, status, code)
        try:
            util.write_nonblock(client, reply(status, code, message))
        except Exception:
            self.log.debug("Failed to send error message.")
        return None

    def _audit(self, req: Any, status: int, code: str) -> None:
        try:
            with self.wsgi.app_context():
                audit.record(audit_entry(req, status, code))
        except Exception:  # the refusal stands; losing its entry must not change it
            log.exception("could not write the audit entry of a request refused before routing")
