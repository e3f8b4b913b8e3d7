"""WebSockets: an operation's events, and a training job's logs (app/job_logs.py), live
and resumable.

The browser cannot set headers on a WebSocket, so the token arrives as the first message
(within 5 s), read by app/intake.py's strict reader. On both sockets a message over 64 KiB
closes with 1009 before it is held in memory, and each refusal but 4404 is audited. The
server pings every 20 s.

`/ws/operations/<id>`: events are read from the operation's Redis Stream, so a client that
reconnects with the last id it saw misses nothing and sees nothing twice.

- The client's first message is `{"type": "auth", "token": "...", "after": "<event id,
  optional>"}`.
- The server answers `{"type": "operation", "operation": {...}}` (a snapshot), then one
  `{"type": "event", "id": "<stream id>", "event": {...}}` per event after `after`, and
  closes with 1000 once the operation is terminal and its last event sent.
- An operator may send `{"type": "cancel"}` to cancel the operation.
- Close codes: 4401 bad or missing token (a first message that is not a JSON object of type
  `auth`, however deep or malformed); 4403 forbidden (bad Origin, or a viewer sending
  `{"type": "cancel"}`); 4404 unknown operation; 4400 an `after` that is not an event id;
  1009 a message over 64 KiB.

`/ws/clusters/<c>/jobs/<job>/logs` (viewer): a training job's live logs, straight from the
Kubernetes API in the web process (app/job_logs.py).

- First message `{"type": "auth", "token", "tail"? (per pod, default 100, at most 10,000),
  "pod"? (one pod), "after"? ({pod: cursor})}`.
- The server answers `{"type": "job", "job": {name, namespace, kind, state, pods}}`, then
  `{"type": "lines", "lines": [{"pod", "time", "line", "cursor", "previous"?}]}` batches (at
  most 2,000 lines), and `{"type": "end", "state"}` + close 1000 once the job has ended and
  every pod's log is read.

One follow per pod per web process, however many tails (app/log_feeds.py). A job's tails
share a feed in which one reader thread per pod first reads what the pod printed (its newest
10,000 lines and 8 MiB at most; the previous run first), then follows
`follow=true&timestamps=true`, and fans each line out to every tail. The feed holds each
pod's newest lines, so a tail opened later gets its last `tail` lines with no read of its
own, and the last tail to leave stops the readers. The pods are looked up once a second per
feed (later pods, and a container restarted in place followed into its next run). So the API
server's load is O(pods), not O(tails) (`hypd_log_follows_open` counts the streams;
tests/app/test_job_logs.py opens six tails on a two-pod job). A tail that resumes gets a feed
of its own, read from its cursors.

Resume: a line's `cursor` is `<time>|<n>` (the n-th line of that pod stamped `<time>`). A
client that reconnects sends each pod's last cursor as `after`; the pod is read again from
that time (`sinceTime`) and lines up to the cursor are skipped: nothing lost, nothing twice
(tests/app/test_job_logs.py).

Previous run: a pod whose container has restarted gets its previous run's lines first
(`previous=true`, marked `"previous": true`), so its last words (why it failed) are there.

Slow clients: drop-with-marker. Readers never wait for the client: they put lines into one
buffer of at most 10,000 lines per socket (`MAX_BUFFERED_LINES`, lines cut at 16 KiB). When
it is full the *oldest* buffered line is dropped and counted, and the client gets
`{"type": "dropped", "count", "pods"}` exactly where the lines went missing, then the newer
lines: a client that falls behind skips ahead to what is printed now instead of lagging
further. So a client that stops reading costs the server at most its buffer (plus what the
kernel's socket buffers hold), the Kubernetes API streams are never held back, and
`hypd_log_tail_dropped_lines_total` counts the drops. Backpressure was not chosen: it would
hold the API server's streams (and the kubelet's) open and stalled for one slow browser.
Each tail holds a web thread while open (`hypd web --threads`).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from flask import Flask, current_app, request
from flask_sock import ConnectionClosed, Sock

from app import audit, auth, intake, job_logs, log_feeds
from app.errors import ApiError
from app.gate import waiting
from app.permissions import access
from app.readmodels import team_work
from cloud import jobs, kube
from cloud.metrics import WEBSOCKETS
from schemas.common import STREAM_ID_RE
from schemas.jobs import LOG_TAIL_MAX
from tasks.engine.errors import EngineError
from vocabulary.operations import OpStatus
from vocabulary.roles import Role

AUTH_TIMEOUT_S = 5
RECEIVE_SLICE_S = 0.1
PING_INTERVAL_S = 20
READ_BLOCK_MS = 1000

CANCEL_ROUTE = "operations.cancel"
"""The REST route a socket's `{"type": "cancel"}` stands for."""

DEFAULT_TAIL = 100

MAX_MESSAGE_BYTES = 64 * 1024
"""The largest message a client may send (an auth message with a job's resume cursors is a
few KiB); a bigger one closes the socket with 1009 before it is held in memory."""

CLOSE_TOO_BIG = 1009
CLOSE_BAD_REQUEST = 4400
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404

_STREAM_ID = re.compile(STREAM_ID_RE)


def _same_origin() -> bool:
    origin = request.headers.get("Origin")
    if origin is None:
        return True  # not a browser: nothing to protect against cross-site
    return origin.rstrip("/") == request.host_url.rstrip("/")


def _send(ws: Any, payload: dict[str, Any]) -> None:
    ws.send(json.dumps(payload))


def _message(raw: str | bytes | None) -> Any:
    """A client's message as JSON (app/intake.py's strict reader: deep nesting cannot crash
    the handler's thread); None for one that is not JSON."""
    try:
        return intake.loads(raw) if raw else None
    except ValueError:
        return None


def _first_message(ws: Any) -> str | bytes | None:
    """The client's first message, None when none came within AUTH_TIMEOUT_S. Looked for in
    short slices: simple-websocket can miss waking a reader when it closes the socket
    itself (a message over `max_message_size`), which left it waiting out the whole time."""
    deadline = time.monotonic() + AUTH_TIMEOUT_S
    with waiting():  # out of the web pool's gate while the client says nothing
        while True:
            try:
                raw = ws.receive(timeout=RECEIVE_SLICE_S)
            except ConnectionClosed:
                raw = None
            if raw is not None or not ws.connected or time.monotonic() >= deadline:
                return raw


def _authenticate(ws: Any) -> tuple[auth.Principal, dict[str, Any]] | None:
    raw = _first_message(ws)
    if raw is None and not ws.connected:  # gone before it said anything
        if ws.incoming_message_len > MAX_MESSAGE_BYTES:  # simple-websocket closed it: 1009
            audit.record_socket(request.path, None, CLOSE_TOO_BIG, "refused",
                                "payload_too_large")
        raise ConnectionClosed()
    first = _message(raw)
    if not isinstance(first, dict) or first.get("type") != "auth":
        audit.record_socket(request.path, None, CLOSE_UNAUTHENTICATED, "refused", "unauthorized")
        ws.close(CLOSE_UNAUTHENTICATED, "send {\"type\": \"auth\", \"token\": ...} first")
        return None
    tokens: auth.TokenTable = current_app.extensions["hypd.tokens"]
    principal = tokens.lookup(str(first.get("token") or ""))
    if principal is None:
        audit.record_socket(request.path, None, CLOSE_UNAUTHENTICATED, "refused", "unauthorized")
        ws.close(CLOSE_UNAUTHENTICATED, "the token is not valid")
        return None
    return principal, first


def _admit(ws: Any, what: str) -> tuple[auth.Principal, dict[str, Any]] | None:
    """Origin, the first message's token and the route's declared role; None (the socket
    closed, the refusal audited) when one fails."""
    if not _same_origin():
        audit.record_socket(request.path, None, CLOSE_FORBIDDEN, "refused", "forbidden")
        ws.close(CLOSE_FORBIDDEN, "cross-origin WebSocket refused")
        return None
    authed = _authenticate(ws)
    if authed is None:
        return None
    principal, _first = authed
    needs = auth.declared(request.url_rule.endpoint, "GET")
    if auth.refusal(principal, needs) is not None:
        audit.record_socket(request.path, principal, CLOSE_FORBIDDEN, "refused", "forbidden")
        ws.close(CLOSE_FORBIDDEN, f"{what} needs the {needs.role} role")
        return None
    return authed


def _handle_client_message(ws: Any, principal: auth.Principal, op_id: str, raw: str) -> bool:
    """Clients may ask to cancel over the socket; answers False when the socket closed."""
    engine = current_app.extensions["hypd.engine"]
    message = _message(raw)
    if not isinstance(message, dict) or message.get("type") != "cancel":
        return True
    # the REST twin's declaration decides, as it would for POST …/cancel
    why = auth.refusal(principal, auth.declared(CANCEL_ROUTE, "POST"))
    if why is not None:
        audit.record_socket(request.path, principal, CLOSE_FORBIDDEN, "refused", "forbidden",
                            engine.store.get(op_id))
        _send(ws, {"type": "error", "error": {"code": "forbidden",
                                             "message": f"cancelling: {why}"}})
        ws.close(CLOSE_FORBIDDEN, "forbidden")
        return False
    try:
        team_work.may_follow_up(principal, engine.store.require(op_id))
        cancelled = engine.cancel(op_id)
    except (EngineError, ApiError) as exc:
        audit.record_socket(request.path, principal, getattr(exc, "http_status", 409),
                            "refused", exc.code, engine.store.get(op_id))
        _send(ws, {"type": "error", "error": {"code": exc.code, "message": exc.message}})
        return True
    audit.record_socket(request.path, principal, 202, "accepted", None, cancelled)
    return True


def install(app: Flask) -> None:
    app.config.setdefault("SOCK_SERVER_OPTIONS", {"ping_interval": PING_INTERVAL_S,
                                                  "max_message_size": MAX_MESSAGE_BYTES})
    sock = Sock(app)

    @sock.route("/ws/operations/<string:op_id>")
    @access(Role.VIEWER, websocket=True)
    def operation_events(ws: Any, op_id: str) -> None:
        admitted = _admit(ws, "following an operation")
        if admitted is None:
            return
        principal, first = admitted
        after = first.get("after") or "0"
        if after != "0" and not (isinstance(after, str) and _STREAM_ID.fullmatch(after)):
            # checked before Redis sees it: Redis refuses a malformed id with an error
            audit.record_socket(request.path, principal, CLOSE_BAD_REQUEST, "refused",
                                "validation_failed")
            ws.close(CLOSE_BAD_REQUEST, "after: not an event id")
            return
        op = current_app.extensions["hypd.engine"].store.get(op_id)
        if op is None:
            ws.close(CLOSE_NOT_FOUND, f"no operation {op_id}")
            return
        try:
            with WEBSOCKETS.labels("operation").track_inprogress():
                _follow(ws, principal, op_id, op, after)
        except ConnectionClosed:
            return

    @sock.route("/ws/clusters/<string:cluster>/jobs/<string:job>/logs")
    @access(Role.VIEWER, websocket=True)
    def job_log_tail(ws: Any, cluster: str, job: str) -> None:
        admitted = _admit(ws, "following a job's logs")
        if admitted is None:
            return
        _principal, first = admitted
        try:
            with WEBSOCKETS.labels("job_logs").track_inprogress():
                _job_logs(ws, cluster, job, first)
        except ConnectionClosed:
            return


def _job_logs(ws: Any, cluster: str, job: str, first: dict[str, Any]) -> None:
    """Follow a training job's logs (app/job_logs.py) until it ends or the client goes."""
    from app.readmodels import clusters, kubeapi

    try:
        ref = clusters.find(cluster)
        api = kubeapi.api_for(ref)
        found = jobs.find(api, job)
    except (ApiError, kube.KubeError, OSError) as exc:
        status = getattr(exc, "status", None) or getattr(exc, "http_status", None)
        ws.close(CLOSE_NOT_FOUND if status == 404 else 1011,
                 str(getattr(exc, "message", exc))[:120])
        return
    if found is None:
        ws.close(CLOSE_NOT_FOUND, f"no job {job} on cluster {cluster}")
        return
    try:
        tail = min(max(int(first.get("tail", DEFAULT_TAIL)), 0), LOG_TAIL_MAX)
    except (TypeError, ValueError, OverflowError):
        tail = DEFAULT_TAIL
    after = first.get("after") if isinstance(first.get("after"), dict) else {}
    pod = first.get("pod") if isinstance(first.get("pod"), str) else None
    job_pods = jobs.pods(api, found)
    _send(ws, {"type": "job", "job": {
        "name": job, "cluster": cluster, "namespace": found["metadata"].get("namespace"),
        "kind": found.get("kind"), "state": jobs.state(found, job_pods).state,
        "pods": [p["metadata"]["name"] for p in job_pods]}})

    def state() -> str | None:
        current = jobs.find(api, job)
        return None if current is None else jobs.state(current, jobs.pods(api, current)).state

    def client_here() -> bool:
        ws.receive(timeout=0)  # raises ConnectionClosed once the client went
        return True

    tailing = log_feeds.subscribe(api, (ref.name, ref.region), found, tail, pod,
                                  {str(k): str(v) for k, v in after.items()})
    ended = job_logs.run(lambda payload: _send(ws, payload), client_here, tailing, state)
    _send(ws, {"type": "end", "state": ended})
    ws.close(1000, ended or "gone")


def _follow(ws: Any, principal: auth.Principal, op_id: str, op: dict[str, Any],
            after: str) -> None:
    """Send the operation, then its events as they come, until it is finished."""
    engine = current_app.extensions["hypd.engine"]
    store = engine.store
    _send(ws, {"type": "operation", "operation": engine.view(op)})
    while True:
        with waiting():  # out of the web pool's gate while no event comes
            events = store.events(op_id, after=after, block_ms=READ_BLOCK_MS)
        for event_id, event in events:
            _send(ws, {"type": "event", "id": event_id, "event": event})
            after = event_id
        incoming = ws.receive(timeout=0)
        if incoming is not None and not _handle_client_message(ws, principal, op_id, incoming):
            return
        current = store.get(op_id)
        finished = current is not None and OpStatus(current["status"]).is_finished
        if finished and not store.events(op_id, after=after):
            ws.close(1000, current["status"])
            return
