"""Team work on the Dev spaces page in a real browser, on the two-team cluster the REST test
makes (tests/app/test_team_spaces_api.py: a scheduler config, two teams of one GPU node each,
the spaces feature on). The form's Team and Priority are the job form's (views/job_team.js):
an operator outside any team must choose the team — a space with none is refused on the
team's field —, then the space runs for it: the list's Team column names it and its detail's
Queue section (views/job_queue.js) says it is admitted through its team's queue with its
priority. A member's form has its own team only, fixed."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

from tests.app.test_team_jobs_api import BORROWER, LENDER, SCHEDULER
from tests.app.test_team_spaces_api import _name, _url, team_spaces_cluster
from tests.e2e.helpers import AWS_READ_TIMEOUT_MS, open_signed_in, page_checks, posted
from tests.e2e.test_spaces_page import _follow
from tests.e2e.test_team_jobs_page import QUEUE_TIMEOUT_MS
from tests.stack import MEMBER_TOKENS

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def cluster(stack) -> str:
    return team_spaces_cluster(stack)


def _spaces_page(page, stack, cluster: str, token: str, role: str) -> None:
    open_signed_in(page, stack, token, role, f"#/clusters/{cluster}/spaces", "space-team")
    expect(page.get_by_test_id("space-instance-group")).to_have_value(
        "workers", timeout=AWS_READ_TIMEOUT_MS)


def _create(page, status: int):
    return posted(page, "space-create", "/spaces", status)


def test_an_operator_creates_a_space_for_a_team_and_sees_its_place_in_the_queue(page, stack,
                                                                                cluster):
    name = _name("ui-lab")
    _spaces_page(page, stack, cluster, stack.operator_token, "operator")
    team, priority = page.get_by_test_id("space-team"), page.get_by_test_id("space-priority")
    # the cluster's teams, no default (the operator's token is no team's); its classes
    expect(team.locator("option")).to_have_text(["Choose the team", LENDER, BORROWER])
    expect(priority.locator("option")).to_have_text(
        ["none", *(f"{c['name']} (weight {c['weight']})" for c in SCHEDULER["priority_classes"])])
    page.get_by_test_id("space-name").fill(name)
    page.get_by_test_id("space-gpus").fill("1")
    page.get_by_test_id("space-home_gib").fill("10")
    page.get_by_test_id("space-idle-never").check()  # the sandbox's clock runs 1000x

    # no team on a cluster the teams share: refused on the team's field
    _create(page, 422)
    expect(page.get_by_test_id("error-space-team")).to_contain_text("name the team")
    expect(team).to_have_attribute("aria-invalid", "true")
    expect(team).to_be_focused()

    team.select_option(BORROWER)
    priority.select_option("training")
    sent = _create(page, 202).request.post_data_json
    assert (sent["team"], sent["priority"], "namespace" in sent) == (BORROWER, "training",
                                                                     False)
    try:
        _follow(page, stack, "space.create", cluster)  # its progress panel, then back
        row = page.get_by_test_id(f"space-team-{name}")
        expect(row).to_contain_text(BORROWER, timeout=AWS_READ_TIMEOUT_MS)
        expect(row).to_contain_text("priority training")
        page.get_by_test_id(f"space-select-{name}").click()
        detail = page.get_by_test_id("space-detail")
        expect(detail.get_by_test_id("space-queue-state")).to_have_text(
            "Admitted", timeout=QUEUE_TIMEOUT_MS)
        expect(detail.get_by_test_id("space-queue-team")).to_have_text(BORROWER)
        expect(detail.get_by_test_id("space-queue-priority")).to_have_text(
            "training (weight 50)")
        expect(page.get_by_test_id(f"space-state-{name}")).to_have_text(
            "running", timeout=QUEUE_TIMEOUT_MS)
        page_checks(page, "a team's space admitted through its queue")
    finally:
        with stack.client() as c:
            reply = c.delete(_url(cluster, name))
        if reply.status_code == 202:
            stack.wait_operation(reply.json()["operation"]["id"], 120)


def test_a_member_creates_spaces_for_its_own_team_only(page, stack, cluster):
    _spaces_page(page, stack, cluster, MEMBER_TOKENS["ana"][1], "operator")
    team = page.get_by_test_id("space-team")
    expect(team.locator("option")).to_have_text([BORROWER])
    expect(team).to_be_disabled()
    expect(page.get_by_test_id("space-team-work")).to_contain_text(
        re.compile(rf"member of team {BORROWER}"))
    expect(page.get_by_test_id("space-create")).to_be_enabled()
    page_checks(page, "the spaces page of a team member")
