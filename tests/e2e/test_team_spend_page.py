"""A team's spend and budget in a real browser: a governed cluster's team runs a Job Kueue
admits; the Teams page shows its spend this month and its budget box (the cost panel's own
form), which sets a budget below the spend and shows it crossed, and clears it through the
one confirmation; the cluster's cost panel draws spend per day per team (one labelled image,
the same figures as a table); both pass the dashboard's checks (axe, no unfilled value)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

from tests.app.teamkit import follow, running_job, url
from tests.e2e.helpers import AWS_READ_TIMEOUT_MS, base, destroy_dialog, page_checks, sign_in
from tests.stack import wait_until

pytestmark = pytest.mark.browser


@pytest.fixture
def spending(stack, governed_cluster):
    cluster = governed_cluster["name"]
    team = running_job(stack, cluster, "spendui", 16)["team"]
    yield cluster, team
    with stack.client() as c:
        follow(stack, c.delete(url(cluster, team), params={"force": "true"}))


def _month(stack, cluster: str, team: str) -> float:
    with stack.client("viewer") as v:
        teams = v.get(f"/api/v1/clusters/{cluster}/cost").json()["teams"]
    return next(t["month"]["usd"] for t in teams if t["team"] == team)


def test_an_operator_sets_a_team_budget_sees_it_crossed_and_clears_it(page, stack, spending):
    cluster, team = spending
    wait_until(lambda: _month(stack, cluster, team) >= 0.02, 90, interval=1,
               what=f"team {team} to have cost $0.02")
    sign_in(page, stack, stack.operator_token, "operator")
    page.goto(f"{base(stack)}/#/clusters/{cluster}/teams")
    box = page.get_by_test_id(f"team-budget-{team}")
    expect(box).to_have_attribute("data-state", "unset", timeout=AWS_READ_TIMEOUT_MS)
    expect(box).to_contain_text(f"{team}: $")
    amount = box.get_by_test_id(f"team-budget-{team}-amount")
    expect(amount).to_have_attribute("min", "0.01")
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if r.method == "PUT" else None)
    try:
        amount.fill("0.01")
        box.get_by_test_id(f"team-budget-{team}-set").click()
        box = page.get_by_test_id(f"team-budget-{team}")
        expect(box).to_have_attribute("data-state", "exceeded", timeout=AWS_READ_TIMEOUT_MS)
        state = box.get_by_test_id(f"team-budget-{team}-state")
        expect(state).to_contain_text("Over budget")
        expect(state).to_contain_text("warned 80 %")
        assert any(u.endswith(f"/teams/{team}/budget") for u in sent)
        page_checks(page, "the teams page with a team budget",
                    within="[data-testid=team-budgets]")

        # the cost panel: spend per day per team, drawn and as a table
        page.goto(f"{base(stack)}/#/clusters/{cluster}")
        chart = page.get_by_test_id("cost-teams-chart")
        expect(chart).to_have_attribute(
            "aria-label", re.compile(rf"^Spend per day per team this month: .*{team} \$"),
            timeout=AWS_READ_TIMEOUT_MS)
        bars = page.locator(f"[data-testid=cost-teams-bar][data-team={team}]")
        expect(bars.last).to_have_attribute("data-date", re.compile(r"^\d{4}-\d{2}-\d{2}$"))
        assert float(bars.last.get_attribute("data-usd")) > 0
        expect(page.get_by_test_id(f"cost-team-{team}")).to_contain_text("node-hours")
        page_checks(page, "the teams' spend chart", within="[data-testid=cost-teams]")

        page.goto(f"{base(stack)}/#/clusters/{cluster}/teams")
        page.get_by_test_id(f"team-budget-{team}-clear").click()
        dialog = destroy_dialog(page, "team budget", team, "clear-budget")
        dialog.get_by_test_id("destroy-dialog-confirm").click()
        expect(dialog).to_have_count(0)
        expect(page.get_by_test_id(f"team-budget-{team}")).to_have_attribute(
            "data-state", "unset", timeout=AWS_READ_TIMEOUT_MS)
    finally:
        with stack.client() as c:
            c.delete(f"{url(cluster, team)}/budget")
