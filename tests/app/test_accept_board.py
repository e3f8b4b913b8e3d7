"""app/accept_board.py: the web processes share a board of how many connections each holds,
and one holding more than the least-loaded other stops listening — so a client's
keep-alive connections spread over the processes instead of piling on whichever woke first.

The rule on its own (slots, staleness, the board shared across fork), then gunicorn with
hypd's worker class and two processes: connections opened one after another, each held open,
split evenly, round after round."""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import time
from collections import Counter

import pytest

from app.accept_board import STALE_S, AcceptBoard
from tests.stack import REPO, free_port, wait_until


def test_a_process_listens_while_it_holds_no_more_than_the_least_loaded() -> None:
    board = AcceptBoard(slots=4)
    now = 1_000_000
    assert board.may_accept(0, 50, now)  # alone: nothing to balance against
    board.write(1, 3, now)
    board.write(2, 5, now)
    assert board.fewest_elsewhere(0, now) == 3
    assert board.may_accept(0, 3, now) and not board.may_accept(0, 4, now)
    # the least-loaded process always listens: no connection waits for nobody
    assert board.may_accept(1, 3, now)
    # a slot not written for STALE_S (a dead or hung process) counts for nothing
    later = now + int(STALE_S * 1000) + 1
    board.write(0, 9, later)
    board.write(2, 5, later)
    assert board.fewest_elsewhere(0, later) == 5
    # a process's slot is its number modulo the board's size
    board.write(5, 0, later)
    assert board.fewest_elsewhere(0, later) == 0


def test_the_board_is_shared_with_forked_processes() -> None:
    board = AcceptBoard(slots=2)
    child = os.fork()
    if child == 0:
        board.write(1, 7)
        os._exit(0)
    os.waitpid(child, 0)
    assert board.fewest_elsewhere(0) == 7


@pytest.fixture
def two_processes(tmp_path):
    port = free_port()
    log = open(tmp_path / "gunicorn.log", "wb")  # noqa: SIM115 (lives with the process)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--worker-class", "app.web_worker.EnvelopeWorker",
         "--workers", "2", "--threads", "8", "--bind", f"127.0.0.1:{port}",
         "tests.app.pid_wsgi:app"],
        cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("HYPD_")})

    def pids() -> set[int]:
        found = set()
        for _ in range(20):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            try:
                conn.request("GET", "/")
                found.add(int(conn.getresponse().read()))
            except OSError:
                return set()
            finally:
                conn.close()
        return found

    try:
        wait_until(lambda: len(pids()) == 2, 60, what="two gunicorn processes answering")
        yield port
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
        log.close()


def test_connections_opened_one_after_another_spread_over_the_processes(two_processes):
    for _ in range(3):
        held, served = [], []
        for _ in range(8):
            conn = http.client.HTTPConnection("127.0.0.1", two_processes, timeout=10)
            conn.request("GET", "/")
            served.append(int(conn.getresponse().read()))
            held.append(conn)
            time.sleep(0.05)  # each process has written its count before the next arrives
        split = sorted(Counter(served).values())
        assert split == [4, 4], split
        for conn in held:
            conn.close()
        time.sleep(STALE_S / 2)  # the processes see the closes and write them
