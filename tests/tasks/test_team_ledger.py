"""tasks/team_ledger.py on a real Redis: an entry is state, so a look repeated (a retried
turn, two processes) rewrites it and never adds, nor moves its last sighting back; a
re-admission is a new entry; an interval spanning two months is in both; the set of clusters
with teams is kept by mark/unmark."""

from __future__ import annotations

import uuid

from tasks import team_ledger
from tasks.team_ledger import Entry


def _entry(seen: str, admitted: str = "2026-12-01T10:00:00Z") -> Entry:
    return Entry("uid-1", admitted, "vision", "ml.g5.8xlarge", 0.75, seen)


def test_a_repeated_look_rewrites_the_entry_and_never_adds(stack):
    conn = stack.redis()
    cluster = f"led-{uuid.uuid4().hex[:6]}"
    team_ledger.record(conn, cluster, [_entry("2026-12-01T11:00:00Z")])
    team_ledger.record(conn, cluster, [_entry("2026-12-01T11:00:00Z")])
    team_ledger.record(conn, cluster, [_entry("2026-12-01T12:00:00Z")])
    assert team_ledger.entries(conn, cluster, "2026-12") == [_entry("2026-12-01T12:00:00Z")]
    readmitted = _entry("2026-12-01T13:00:00Z", admitted="2026-12-01T12:30:00Z")
    team_ledger.record(conn, cluster, [readmitted])
    assert len(team_ledger.entries(conn, cluster, "2026-12")) == 2
    assert 0 < conn.ttl(f"hypd:team-ledger:{cluster}:2026-12") <= team_ledger.KEPT_S


def test_a_look_that_ends_late_never_moves_last_seen_back(stack):
    """Two processes look at once; the one that saw the Workload earlier writes last."""
    conn = stack.redis()
    cluster = f"led-{uuid.uuid4().hex[:6]}"
    other = Entry("uid-2", "2026-12-01T10:00:00Z", "vision", "ml.g5.8xlarge", 1.0,
                  "2026-12-01T10:30:00Z")
    team_ledger.record(conn, cluster, [_entry("2026-12-01T12:00:00.500000Z")])
    team_ledger.record(conn, cluster, [_entry("2026-12-01T12:00:00Z"), other])
    assert sorted(team_ledger.entries(conn, cluster, "2026-12"), key=lambda e: e.uid) == [
        _entry("2026-12-01T12:00:00.500000Z"), other]


def test_an_interval_across_a_month_s_end_is_in_both_months(stack):
    conn = stack.redis()
    cluster = f"led-{uuid.uuid4().hex[:6]}"
    spanning = _entry("2027-01-01T02:00:00Z", admitted="2026-12-31T22:00:00Z")
    team_ledger.record(conn, cluster, [spanning])
    assert team_ledger.entries(conn, cluster, "2026-12") == [spanning]
    assert team_ledger.entries(conn, cluster, "2027-01") == [spanning]


def test_the_clusters_with_teams_are_marked_and_unmarked(stack):
    conn = stack.redis()
    cluster = f"led-{uuid.uuid4().hex[:6]}"
    team_ledger.mark(conn, cluster)
    team_ledger.mark(conn, cluster)
    assert cluster in team_ledger.clusters(conn)
    team_ledger.unmark(conn, cluster)
    assert cluster not in team_ledger.clusters(conn)
