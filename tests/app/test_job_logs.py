"""A training job's live log tail over the WebSocket (app/job_logs.py, app/ws.py) on the full
stack: a real WebSocket client receives a job's lines in order, each tagged with its pod,
until the job ends; a tail survives a reconnect without losing or repeating lines; a
restarted container's last words come from its previous run; a client that stops reading
gets a drop marker while the server's buffer stays bounded."""

from __future__ import annotations

import json
import re
import socket
import time

import pytest
import websocket

from app.job_logs import MAX_BUFFERED_LINES
from tests.app.jobkit import TORCHRUN, job_name, submitted, wait_state
from tests.app.wskit import read_all


@pytest.fixture
def cluster(training):
    return training


def _connect(stack, cluster: str, job: str, **first):
    url = stack.url.replace("http://", "ws://") + f"/ws/clusters/{cluster}/jobs/{job}/logs"
    ws = websocket.create_connection(url, timeout=30, **first.pop("options", {}))
    ws.send(json.dumps({"type": "auth", "token": stack.viewer_token, **first}))
    return ws


def _lines(messages: list[dict]) -> list[dict]:
    return [line for m in messages if m["type"] == "lines" for line in m["lines"]]


def _steps(lines: list[dict], pod: str) -> list[str]:
    return [re.search(r"step (\d+)/", x["line"]).group(1) for x in lines
            if x["pod"] == pod and "step" in x["line"]]


def test_a_job_writes_logs_a_websocket_client_receives_in_order_and_finishes(stack, cluster):
    name = job_name("live")
    stack.sandbox.set_training(steps=40, lines_per_second=1, job=name)  # 40 ms of lines
    submitted(stack, cluster["name"], {"name": name, "nodes": 2, **TORCHRUN})
    ws = _connect(stack, cluster["name"], name, tail=1000)
    messages, code = read_all(ws)
    assert code == 1000
    assert messages[0]["type"] == "job" and messages[0]["job"]["kind"] == "HyperPodPyTorchJob"
    assert messages[-1] == {"type": "end", "state": "succeeded"}
    lines = _lines(messages)
    for pod in (f"{name}-pods-0", f"{name}-pods-1"):
        own = [x for x in lines if x["pod"] == pod]
        assert own[0]["line"] == f"{pod}: starting {name}"
        assert _steps(lines, pod) == [str(i) for i in range(1, 41)]  # all, in order
        assert [x["time"] for x in own] == sorted(x["time"] for x in own)
        assert own[-1]["cursor"].startswith(own[-1]["time"] + "|")


def test_tails_of_one_job_share_one_follow_per_pod_and_each_gets_every_line(stack, cluster):
    """Six browsers on one job: the panel holds one stream per pod per web process (not one
    per tail), and every tail still gets every line, in order, after its own tail."""
    from launcher.cli import default_web_workers
    from tests.app.test_metrics import _scrape, _value

    name = job_name("shared")
    stack.sandbox.set_training(steps=200, lines_per_second=0.04, job=name)  # ~5 s of lines
    submitted(stack, cluster["name"], {"name": name, "nodes": 2, **TORCHRUN})
    pods = (f"{name}-pods-0", f"{name}-pods-1")
    tails = [_connect(stack, cluster["name"], name, tail=10_000) for _ in range(6)]
    got: list[list[dict]] = [[] for _ in tails]
    for ws, lines in zip(tails, got, strict=True):  # each tail is reading both pods' logs
        while {x["pod"] for x in lines} != set(pods):
            message = json.loads(ws.recv())
            assert message["type"] != "end", message
            if message["type"] == "lines":
                lines.extend(message["lines"])
    follows = _value(_scrape(stack), "hypd_log_follows_open")
    assert 0 < follows <= len(pods) * default_web_workers() < len(pods) * len(tails)
    for ws, lines in zip(tails, got, strict=True):
        messages, code = read_all(ws)
        assert code == 1000 and messages[-1] == {"type": "end", "state": "succeeded"}
        lines.extend(_lines(messages))
        for pod in pods:
            assert _steps(lines, pod) == [str(i) for i in range(1, 201)]


def test_a_log_tail_survives_a_reconnect_without_losing_or_repeating_lines(stack, cluster):
    name = job_name("resume")
    stack.sandbox.set_training(steps=300, lines_per_second=0.2, job=name)  # ~1.5 s of lines
    submitted(stack, cluster["name"], {"name": name, **TORCHRUN})
    pod = f"{name}-pods-0"
    ws = _connect(stack, cluster["name"], name, tail=1000)
    first: list[dict] = []
    while len(first) < 40:
        message = json.loads(ws.recv())
        if message["type"] == "lines":
            first.extend(message["lines"])
    ws.sock.shutdown(socket.SHUT_RDWR)  # the connection drops mid-stream
    ws.close()
    time.sleep(0.3)  # lines keep coming meanwhile
    cursor = first[-1]["cursor"]
    ws = _connect(stack, cluster["name"], name, tail=1000, after={pod: cursor})
    messages, code = read_all(ws)
    assert code == 1000 and messages[-1]["state"] == "succeeded"
    steps = _steps(first, pod) + _steps(_lines(messages), pod)
    assert steps == [str(i) for i in range(1, 301)]  # none lost, none twice


def test_a_restarted_containers_last_words_come_from_its_previous_run(stack, cluster):
    name = job_name("crash")
    stack.sandbox.set_training(steps=5, lines_per_second=1, job=name)
    stack.sandbox.fail_training_pod(name, exit_code=9, after_lines=3)
    submitted(stack, cluster["name"], {"name": name, **TORCHRUN})
    wait_state(stack, cluster["name"], name, "succeeded")
    ws = _connect(stack, cluster["name"], name, tail=100)
    messages, code = read_all(ws)
    assert code == 1000
    lines = _lines(messages)
    previous = [x["line"] for x in lines if x.get("previous")]
    current = [x["line"] for x in lines if not x.get("previous")]
    assert previous[-1].endswith("error: process exited with code 9 (sandbox fault "
                                 f"{previous[-1].rsplit('fault ', 1)[1]}")
    assert [line.split()[2] for line in previous[1:-1]] == ["1/5", "2/5", "3/5"]
    assert [line.split()[2] for line in current[1:]] == ["1/5", "2/5", "3/5", "4/5", "5/5"]
    assert lines.index(next(x for x in lines if x.get("previous"))) == 0  # previous first


def test_a_client_that_stops_reading_gets_a_drop_marker_and_the_server_stays_bounded(
        stack, cluster):
    name = job_name("flood")
    total = 40_000
    stack.sandbox.set_training(steps=total, lines_per_second=20, job=name)  # ~2 s of lines
    submitted(stack, cluster["name"], {"name": name, **TORCHRUN})
    # connected from the start (a tail covers what was printed before, at most 10,000
    # lines); a tiny receive window: the kernel holds little for this client, so the
    # server's own buffer is what fills while it does not read
    ws = _connect(stack, cluster["name"], name, tail=10_000,
                  options={"sockopt": [(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)]})
    wait_state(stack, cluster["name"], name, "succeeded", timeout=120)
    time.sleep(1.0)  # everything printed has reached the server by now
    messages, code = read_all(ws)
    assert code == 1000
    lines = _lines(messages)
    dropped = [m for m in messages if m["type"] == "dropped"]
    assert dropped, "the server dropped nothing: it buffered without bound"
    lost = sum(m["count"] for m in dropped)
    assert dropped[0]["pods"] == [f"{name}-pods-0"]
    # each marker stands where its lines went missing: between the lines around the gap
    at = messages.index(dropped[0])
    before, after = _lines(messages[:at]), _lines(messages[at + 1:])
    gap = int(_steps(after, f"{name}-pods-0")[0]) - int(_steps(before, f"{name}-pods-0")[-1])
    assert gap - 1 == dropped[0]["count"]
    # every line from the first one sent is delivered or counted as dropped (on a loaded
    # machine the client may connect after the pod printed more than its 10,000-line tail:
    # the lines before that tail were never asked for)
    first = lines[0]["line"]
    before_tail = 0 if first.endswith(f"starting {name}") else int(_steps(lines[:1],
                                                                          lines[0]["pod"])[0])
    assert len(lines) + lost == total + 1 - before_tail
    # the server held at most its buffer: what arrived is the buffer plus what the
    # sockets held when the client stopped reading
    assert len(lines) < MAX_BUFFERED_LINES + 20_000
    steps = [int(s) for s in _steps(lines, f"{name}-pods-0")]
    assert steps == sorted(steps) and steps[-1] == total  # in order; the newest delivered


def test_a_cursor_skips_what_was_sent_even_among_lines_of_the_same_time():
    from app.job_logs import Cursor

    sent = Cursor()
    stamps = ["2026-01-01T00:00:01.5Z", "2026-01-01T00:00:01.500000Z", "2026-01-01T00:00:02Z"]
    assert [sent.admit(s) for s in stamps[:2]] == [True, True]  # one time, two digits counts
    resumed = Cursor.parse(sent.text())
    assert (resumed.time, resumed.count) == ("2026-01-01T00:00:01.5Z", 2)
    # read again from that time: the two lines sent are skipped, a third of that time is not
    again = ["2026-01-01T00:00:01.500Z", "2026-01-01T00:00:01.5Z", "2026-01-01T00:00:01.5Z",
             stamps[2]]
    assert [resumed.admit(s) for s in again] == [False, False, True, True]
    assert Cursor.parse("no-cursor") is None and Cursor.parse("t|x") is None


def test_a_full_buffer_drops_its_oldest_lines_and_says_so_once():
    from app.job_logs import LineBuffer

    buffer = LineBuffer(limit=3)
    for i in range(5):
        buffer.put({"pod": "p-0" if i < 3 else "p-1", "line": str(i)})
    dropped, pods, lines = buffer.take(0)
    assert (dropped, pods, [x["line"] for x in lines]) == (2, ["p-0"], ["2", "3", "4"])
    assert buffer.take(0) == (0, [], [])
