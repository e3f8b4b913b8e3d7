"""The Teams page in a real browser, on a cluster with task governance on: reached from the
cluster page; its form bounded by the API's document and offering the cluster's instance
types; a bad name caught before anything is sent, the API's refusal of an instance type the
cluster lacks shown on that field; the scheduler config created from the page; a team created,
listed with its quota and state, and deleted through the one confirmation (its dry run first);
the scheduler config deleted the same way; a viewer's controls disabled with the reason; the
page passes the dashboard's checks (axe, no unfilled value)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

from tests.app.teamkit import read, scheduler_url, team_name, url
from tests.app.test_clusters_api import TYPE
from tests.e2e.helpers import (
    AWS_READ_TIMEOUT_MS,
    OPERATION_TIMEOUT_MS,
    base,
    destroy_dialog,
    page_checks,
    plan_read,
    sign_in,
)
from tests.stack import MEMBER_TOKENS
from tests.stack import TEAM as MEMBERS_TEAM

pytestmark = pytest.mark.browser
OP_URL = re.compile(r"#/operations/([^/]+)$")


@pytest.fixture
def cluster(governed_cluster) -> str:
    return governed_cluster["name"]


def _open(page, stack, cluster: str, token: str, role: str) -> None:
    sign_in(page, stack, token, role)
    page.goto(f"{base(stack)}/#/clusters/{cluster}")
    page.get_by_test_id("cluster-teams-link").click()
    expect(page).to_have_url(re.compile(rf"#/clusters/{cluster}/teams$"))
    expect(page.get_by_test_id("team-instance-type")).to_have_value(
        TYPE, timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id("scheduler-state")).to_be_visible(timeout=AWS_READ_TIMEOUT_MS)


def _followed(page, stack, cluster: str, kind: str) -> None:
    """On the progress panel: the operation of `kind` succeeded; back to the teams page by
    the panel's link."""
    expect(page).to_have_url(OP_URL, timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id("op-kind")).to_have_text(kind)
    expect(page.get_by_test_id("op-status")).to_have_text("succeeded",
                                                          timeout=OPERATION_TIMEOUT_MS)
    # back through the panel's link to what it changed (read, then followed: the panel
    # re-renders once its operation ends)
    link = page.get_by_test_id("op-resource-link")
    expect(link).to_have_attribute("href", f"#/clusters/{cluster}/teams")
    page.evaluate("href => { location.hash = href; }", link.get_attribute("href"))
    expect(page).to_have_url(re.compile(rf"#/clusters/{cluster}/teams$"))


def test_an_operator_runs_teams_from_the_page(page, stack, cluster):
    _open(page, stack, cluster, stack.operator_token, "operator")
    with stack.client("viewer") as c:
        spec = c.get("/api/v1/openapi.json").json()["components"]["schemas"]["TeamCreate"]
    for testid, field in (("team-borrow", "borrow_limit_percent"),
                          ("team-weight", "fair_share_weight")):
        box = page.get_by_test_id(testid)
        expect(box).to_have_attribute("min", str(spec["properties"][field]["minimum"]))
        expect(box).to_have_attribute("max", str(spec["properties"][field]["maximum"]))
        expect(box).to_have_value(str(spec["properties"][field]["default"]))
    page_checks(page, "the teams page")

    # a bad name is caught before anything is sent
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if r.method == "POST" else None)
    page.get_by_test_id("team-name").fill("Bad_Name")
    page.get_by_test_id("team-create").click()
    expect(page.get_by_test_id("error-team-name")).not_to_be_empty()
    assert sent == []

    # an instance type the cluster lacks: the API's refusal lands on that field
    page.evaluate("""() => { const s = document.querySelector('[data-testid=team-instance-type]');
      s.append(new Option('ml.p5.48xlarge', 'ml.p5.48xlarge')); s.value = 'ml.p5.48xlarge'; }""")
    page.get_by_test_id("team-name").fill(team_name("wrong"))
    page.get_by_test_id("team-create").click()
    expect(page.get_by_test_id("error-team-quota.0.instance_type")).to_contain_text(
        "no instance group of type ml.p5.48xlarge")
    page.get_by_test_id("team-instance-type").select_option(TYPE)

    # the scheduler config, from the page
    page.get_by_test_id("scheduler-add-class").click()
    page.get_by_test_id("scheduler-class-name-0").fill("training")
    page.get_by_test_id("scheduler-class-weight-0").fill("70")
    page.get_by_test_id("scheduler-save").click()
    _followed(page, stack, cluster, "scheduler.put")
    expect(page.get_by_test_id("scheduler-state")).to_contain_text(
        "version 1", timeout=AWS_READ_TIMEOUT_MS)
    assert read(stack, scheduler_url(cluster))["priority_classes"] == [
        {"name": "training", "weight": 70}]

    # a team, created and listed
    team = team_name("page")
    page.get_by_test_id("team-name").fill(team)
    page.get_by_test_id("team-borrow").fill("20")
    page.get_by_test_id("team-create").click()
    _followed(page, stack, cluster, "team.create")
    expect(page.get_by_test_id(f"team-row-{team}")).to_be_visible(timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id(f"team-quota-{team}")).to_have_text(
        f"{TYPE} \N{MULTIPLICATION SIGN} 1")
    expect(page.get_by_test_id(f"team-sharing-{team}")).to_contain_text("borrows ≤ 20 %")
    assert read(stack, url(cluster, team))["borrow_limit_percent"] == 20
    page_checks(page, "the teams page with a team")

    # edited in place: only what changed is sent (an explicit diff), then followed
    page.get_by_test_id(f"team-edit-{team}").click()
    edit = page.get_by_test_id("team-edit-dialog")
    expect(edit.get_by_test_id("team-edit-borrow")).to_have_value("20")
    page_checks(page, "the team's edit dialog", within="[data-testid=team-edit-dialog]")
    edit.get_by_test_id("team-edit-dialog-confirm").click()  # nothing changed: nothing sent
    expect(edit.get_by_test_id("team-edit-dialog-error")).to_have_text("Nothing changed.")
    edit.get_by_test_id("team-edit-borrow").fill("600")  # over the API's bound: on its field
    edit.get_by_test_id("team-edit-dialog-confirm").click()
    expect(edit.get_by_test_id("error-team-edit-borrow_limit_percent")).not_to_be_empty()
    with page.expect_request(lambda r: r.method == "PATCH") as patched:
        edit.get_by_test_id("team-edit-borrow").fill("30")
        edit.get_by_test_id("team-edit-count-0").fill("2")
        edit.get_by_test_id("team-edit-dialog-confirm").click()
    assert patched.value.post_data_json == {
        "quota": [{"instance_type": TYPE, "count": 2}], "borrow_limit_percent": 30}
    _followed(page, stack, cluster, "team.update")
    got = read(stack, url(cluster, team))
    assert (got["borrow_limit_percent"], got["quota"]) == (30, [{"instance_type": TYPE,
                                                                 "count": 2}])
    expect(page.get_by_test_id(f"team-sharing-{team}")).to_contain_text("borrows ≤ 30 %")

    # deleted through the one confirmation, its dry run first
    page.get_by_test_id(f"team-delete-{team}").click()
    dialog = destroy_dialog(page, "team", team, "team-delete")
    plan_read(dialog)
    dialog.get_by_test_id("destroy-dialog-confirm").click()
    _followed(page, stack, cluster, "team.delete")
    with stack.client("viewer") as c:
        assert c.get(url(cluster, team)).status_code == 404

    page.get_by_test_id("scheduler-delete").click()
    dialog = destroy_dialog(page, "scheduler config", cluster, "scheduler-delete")
    plan_read(dialog)
    dialog.get_by_test_id("destroy-dialog-confirm").click()
    _followed(page, stack, cluster, "scheduler.delete")
    with stack.client("viewer") as c:
        assert c.get(scheduler_url(cluster)).status_code == 404


def test_a_viewer_sees_the_teams_read_only(page, stack, cluster):
    _open(page, stack, cluster, stack.viewer_token, "viewer")
    expect(page.get_by_test_id("team-role-hint")).to_be_visible()
    expect(page.get_by_test_id("scheduler-role-hint")).to_be_visible()
    for testid in ("team-create", "scheduler-save", "scheduler-add-class"):
        expect(page.get_by_test_id(testid)).to_be_disabled()


def test_a_member_sees_their_team_beside_their_name(page, stack):
    """A token of the tokens file naming a team: the header says which; others say none."""
    sign_in(page, stack, MEMBER_TOKENS["ana"][1], "operator")
    expect(page.get_by_test_id("whoami-name")).to_have_text("ana")
    expect(page.get_by_test_id("whoami-team")).to_have_text(f"team {MEMBERS_TEAM}")
    page_checks(page, "the header of a team member")
    page.evaluate("() => sessionStorage.clear()")
    sign_in(page, stack, stack.viewer_token, "viewer")
    expect(page.get_by_test_id("whoami-team")).to_be_hidden()
