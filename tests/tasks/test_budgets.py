"""tasks/budgets.py on a real Redis: a budget is one record per cluster, each warning of a
month is raised once whoever asks first, a budget set anew warns again, and clearing the
budget (as a cluster's delete does) forgets its warnings too."""

from __future__ import annotations

import uuid

from tasks import budgets


def test_a_warning_is_raised_once_a_month_and_again_after_a_new_budget(stack):
    conn = stack.redis()
    cluster = f"bud-{uuid.uuid4().hex[:6]}"
    assert budgets.get_budget(conn, cluster) is None
    budgets.set_budget(conn, cluster, 120.5, "operator", "2026-12-01T00:00:00Z", "2026-12")
    assert cluster in budgets.budgeted(conn)
    record = budgets.get_budget(conn, cluster)
    assert (record["monthly_usd"], record["set_by"]) == (120.5, "operator")

    firsts = [budgets.raise_once(conn, cluster, "2026-12", 0.8, f"t{i}") for i in range(3)]
    assert firsts == [True, False, False]
    assert budgets.raise_once(conn, cluster, "2027-01", 0.8, "t")  # a new month: again
    assert budgets.raised(conn, cluster, "2026-12") == {0.8: "t0"}

    budgets.set_budget(conn, cluster, 200, "operator", "2026-12-02T00:00:00Z", "2026-12")
    assert budgets.raised(conn, cluster, "2026-12") == {}  # the new figure warns afresh
    assert budgets.raise_once(conn, cluster, "2026-12", 0.8, "t")

    assert budgets.clear(conn, cluster) is True
    assert budgets.get_budget(conn, cluster) is None
    assert budgets.raised(conn, cluster, "2026-12") == {}
    assert budgets.raised(conn, cluster, "2027-01") == {}
    assert cluster not in budgets.budgeted(conn)
    assert budgets.clear(conn, cluster) is False


def test_a_team_s_budget_is_its_own_and_goes_with_its_cluster(stack):
    conn = stack.redis()
    cluster = f"bud-{uuid.uuid4().hex[:6]}"
    team = budgets.subject(cluster, "vision")
    assert budgets.split(team) == (cluster, "vision") and budgets.split(cluster) == (cluster,
                                                                                     None)
    budgets.set_budget(conn, cluster, 100, "operator", "2026-12-01T00:00:00Z", "2026-12")
    budgets.set_budget(conn, team, 10, "operator", "2026-12-01T00:00:00Z", "2026-12")
    assert budgets.raise_once(conn, team, "2026-12", 0.8, "t")
    assert budgets.raised(conn, cluster, "2026-12") == {}  # the team's warning is not the
    assert budgets.get_budget(conn, team)["monthly_usd"] == 10  # cluster's, nor its figure
    assert budgets.clear(conn, cluster) is True
    assert budgets.get_budget(conn, team) is not None  # clearing the cluster's leaves it
    budgets.forget_cluster(conn, cluster)  # the cluster's delete takes every one
    assert budgets.get_budget(conn, team) is None
    assert budgets.raised(conn, team, "2026-12") == {}
    assert not [of for of in budgets.budgeted(conn) if of.startswith(cluster)]
