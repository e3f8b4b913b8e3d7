"""What a team's work costs, through REST on the full stack: a governed cluster's team runs
a batch Job that the sandbox's Kueue admits; the cost read's `teams` entry prices it at its
dominant share of a node x the Price List's price for the type (the same item the cluster's
own hourly rate uses), its month grows while the Workload is admitted and stays once the
Job is gone (hypd's ledger, not the vanished Workload), and a team budget set below it
warns once at 80 % and once at 100 % (audit log, metric)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from schemas.budgets import BudgetSchema
from tasks import budgets
from tests.app.teamkit import follow, running_job, url
from tests.app.test_cost_api import _cost
from tests.app.test_metrics import _scrape, _value
from tests.stack import wait_until

CPU = 24
"""The Job's one pod asks 24 of an ml.g5.8xlarge's 32 vCPUs: its dominant share is 0.75."""
VCPUS = 32


@pytest.fixture(scope="module")
def spending(stack, governed_cluster):
    """A team of the governed cluster with one admitted Job (deleted by the last test)."""
    cluster = governed_cluster["name"]
    found = {"cluster": cluster, **running_job(stack, cluster, "spend", CPU)}
    yield found
    with stack.client() as c:
        follow(stack, c.delete(url(cluster, found["team"]), params={"force": "true"}))


def _team(cost: dict, team: str) -> dict:
    [entry] = [t for t in cost["teams"] if t["team"] == team]
    return entry


def _running(stack, spending) -> tuple[dict, dict]:
    def admitted() -> tuple[dict, dict] | None:
        cost = _cost(stack, spending["cluster"])
        entry = _team(cost, spending["team"])
        return (cost, entry) if entry["hourly"]["items"] else None

    return wait_until(admitted, 60, interval=0.5, what="the team's Job to be admitted")


def test_a_team_s_rate_is_its_dominant_share_times_the_price_list_s_price(stack, spending):
    cost, entry = _running(stack, spending)
    [instances] = [i for i in cost["hourly"]["items"] if i["kind"] == "hyperpod_instances"]
    [item] = entry["hourly"]["items"]
    assert (item["instance_type"], item["capacity_type"], item["basis"]) == (
        instances["name"].split(" ")[1], "on-demand", "list-price")
    assert item["share"] == pytest.approx(CPU / VCPUS)
    assert item["unit_usd"] == instances["unit_usd"] and item["source"] == instances["source"]
    assert item["hourly_usd"] == pytest.approx(CPU / VCPUS * instances["unit_usd"], abs=1e-4)
    assert entry["hourly"]["usd"] == item["hourly_usd"] and entry["hourly"]["complete"]
    assert "dominant share" in entry["hourly"]["note"] and entry["quota"] is True
    assert entry["budget"]["state"] == "unset" and entry["budget"]["team"] == spending["team"]

    first = entry["month"]
    time.sleep(2)
    later = _team(_cost(stack, spending["cluster"]), spending["team"])["month"]
    assert later["node_hours"] > first["node_hours"] >= 0
    assert later["usd"] > first["usd"]
    assert later["usd"] == pytest.approx(later["node_hours"] * item["unit_usd"], abs=2e-4)
    # admitted today: every cent of the month is today's
    days = _team(_cost(stack, spending["cluster"]), spending["team"])["days"]
    assert days[-1]["usd"] >= later["usd"] and sum(d["usd"] for d in days[:-1]) == 0


def _warnings(stack, cluster: str, team: str) -> list[dict]:
    with stack.client() as c:
        entries = c.get("/api/v1/audit", params={
            "target": f"cluster/{cluster}/team/{team}/budget",
            "outcome": "warning"}).json()["items"]
    return sorted(entries, key=lambda e: e["code"])


def test_a_team_budget_below_its_spend_warns_once_at_each_threshold(stack, spending):
    cluster, team = spending["cluster"], spending["team"]
    path = f"{url(cluster, team)}/budget"
    _running(stack, spending)
    with stack.client("viewer") as v:
        assert v.put(path, json={"monthly_usd": 5}).status_code == 403
        unset = v.get(path).json()
    assert not BudgetSchema().validate(unset)
    assert (unset["state"], unset["team"], unset["cluster"]) == ("unset", team, cluster)
    with stack.client() as c:
        assert c.put(path, json={"monthly_usd": 0}).status_code == 422
        missing = c.put(f"{url(cluster, 'no-such-team')}/budget", json={"monthly_usd": 5})
        assert missing.status_code == 404, missing.text
    wait_until(lambda: _team(_cost(stack, cluster), team)["month"]["usd"] >= 0.02, 90,
               interval=1, what=f"team {team} to have cost $0.02")
    with stack.client() as c:
        tight = c.put(path, json={"monthly_usd": 0.01})
    assert tight.status_code == 200, tight.text
    body = tight.json()
    assert body["state"] == "exceeded" and body["set_by"] == "operator"
    assert [w["at"] for w in body["warnings"]] == [0.8, 1.0]
    raised = _warnings(stack, cluster, team)
    assert [(e["code"], e["method"], e["token"]) for e in raised] == [
        ("budget_100", "HYPD", None), ("budget_80", "HYPD", None)]
    assert f"team {team} of {cluster}" in raised[0]["message"]
    for _ in range(2):  # every read, and the watcher's turns, see it again: raised once
        assert _team(_cost(stack, cluster), team)["budget"]["state"] == "exceeded"
    time.sleep(3 * 2)
    assert len(_warnings(stack, cluster, team)) == 2
    samples = _scrape(stack)
    for at in ("0.8", "1.0"):
        assert _value(samples, "hypd_budget_warnings_total", cluster=cluster, team=team,
                      at=at) == 1
    assert _value(samples, "hypd_budget_warnings_total", cluster=cluster, team="",
                  at="0.8") == 0  # the cluster's own budget is not the team's
    with stack.client() as c:
        cleared = c.delete(path)
    assert cleared.status_code == 200 and cleared.json()["state"] == "unset"


def test_the_web_processes_raise_a_crossed_team_budget_when_nobody_reads_it(stack, spending):
    """No read of the cost or the budget: the watcher (every HYPD_BUDGET_CHECK_S, 2 s in the
    suite) records the team's work, finds its budget crossed and raises it once."""
    cluster, team = spending["cluster"], spending["team"]
    conn = stack.redis()
    month = datetime.now(UTC).strftime("%Y-%m")
    of = budgets.subject(cluster, team)
    before = len(_warnings(stack, cluster, team))  # the test before's
    budgets.set_budget(conn, of, 0.01, "operator", "2026-01-01T00:00:00Z", month)
    try:
        wait_until(lambda: len(_warnings(stack, cluster, team)) == before + 2, 60,
                   what="the watcher to raise both of the team's warnings")
        assert set(budgets.raised(conn, of, month)) == {0.8, 1.0}
        time.sleep(3 * 2)
        assert len(_warnings(stack, cluster, team)) == before + 2
    finally:
        budgets.clear(conn, of)


def test_what_a_team_spent_stays_once_its_job_is_gone(stack, spending):
    cluster, team = spending["cluster"], spending["team"]
    _running(stack, spending)
    spending["batch"].delete_namespaced_job("work", spending["namespace"],
                                            propagation_policy="Background")

    def stopped() -> dict | None:
        entry = _team(_cost(stack, cluster), team)
        return entry if not entry["hourly"]["items"] else None

    gone = wait_until(stopped, 60, interval=0.5, what="the Job's Workload to go")
    assert gone["hourly"]["usd"] == 0 and gone["month"]["usd"] > 0
    time.sleep(2)
    after = _team(_cost(stack, cluster), team)
    assert after["month"] == gone["month"]  # kept, and no longer growing
