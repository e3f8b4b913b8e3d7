"""Team work on the jobs page in a real browser, on a two-node cluster with the training
operator and task governance on, a scheduler config and two teams of one node each (made as
the REST test makes its own: tests/app/test_team_jobs_api.py). An operator submits a job for
a team with a priority chosen in the form: a job with no team, and a priority the scheduler
config lacks, are refused on their fields first; the team's namespace is the team's, not
sent. The job's detail says it is admitted, borrowing the other team's idle node; the other
team's job takes its node back, and the detail says by whom, linked to that job's detail,
which names the job it preempted. A member's token has its own team only."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

from tests.app.jobkit import deleted, job_name
from tests.app.test_team_jobs_api import (
    BORROWER,
    GPU_JOB,
    LENDER,
    SCHEDULER,
    _queue_state,
    _submitted,
    shared_cluster,
)
from tests.e2e.helpers import AWS_READ_TIMEOUT_MS, base, open_signed_in, page_checks, posted
from tests.stack import MEMBER_TOKENS

pytestmark = pytest.mark.browser
QUEUE_TIMEOUT_MS = 90_000


@pytest.fixture(scope="module")
def cluster(stack) -> str:
    return shared_cluster(stack)


def _jobs_page(page, stack, cluster: str, token: str, role: str) -> None:
    open_signed_in(page, stack, token, role, f"#/clusters/{cluster}/jobs", "job-field-team")


def _submit(page, status: int):
    """Press Submit; the POST's reply, which answers `status`."""
    return posted(page, "job-submit", "/jobs", status)


def test_an_operator_submits_for_a_team_and_follows_its_place_in_the_queue(page, stack,
                                                                          cluster):
    borrower, lender = job_name("ui-wide"), job_name("ui-narrow")
    for job in (borrower, lender):  # both train until deleted
        stack.sandbox.set_training(steps=100000, lines_per_second=1, job=job)
    try:
        _borrow_then_be_preempted(page, stack, cluster, borrower, lender)
    finally:
        with stack.client("viewer") as c:
            made = [j for j in (borrower, lender)
                    if c.get(f"/api/v1/clusters/{cluster}/jobs/{j}").status_code == 200]
        for job in made:
            deleted(stack, cluster, job, force="true")


def _borrow_then_be_preempted(page, stack, cluster: str, borrower: str, lender: str) -> None:
    _jobs_page(page, stack, cluster, stack.operator_token, "operator")
    team, priority = page.get_by_test_id("job-team"), page.get_by_test_id("job-priority")
    namespace = page.get_by_test_id("job-namespace")
    # the cluster's teams, no default (the operator's token is no team's); its classes
    expect(team.locator("option")).to_have_text(["Choose the team", LENDER, BORROWER])
    expect(priority.locator("option")).to_have_text(
        ["none", *(f"{c['name']} (weight {c['weight']})" for c in SCHEDULER["priority_classes"])])
    page.get_by_test_id("job-recipe").select_option("torchrun")
    page.get_by_test_id("job-name").fill(borrower)
    page.get_by_test_id("job-image").fill(GPU_JOB["image"])
    page.get_by_test_id("job-script").fill(GPU_JOB["script"])
    page.get_by_test_id("job-gpus").fill("1")
    page.get_by_test_id("job-nodes").fill("2")  # one more than the team's quota: it borrows

    # no team on a cluster the teams share: refused on the team's field
    _submit(page, 422)
    expect(page.get_by_test_id("error-job-team")).to_contain_text("name the team")
    expect(team).to_have_attribute("aria-invalid", "true")
    expect(team).to_be_focused()

    # the team chosen, its namespace is the team's (shown, not editable); a priority class
    # the scheduler config lacks (as if it went since the form was read): on its field
    team.select_option(BORROWER)
    expect(namespace).to_have_value(f"hyperpod-ns-{BORROWER}")
    expect(namespace).not_to_be_editable()
    priority.evaluate("s => { s.append(new Option('lowest', 'lowest')); s.value = 'lowest'; }")
    _submit(page, 422)
    expect(page.get_by_test_id("error-job-priority")).to_contain_text("training")
    expect(page.get_by_test_id("error-job-team")).to_be_empty()
    expect(team).to_have_attribute("aria-invalid", "false")
    page_checks(page, "the job form with a refused priority")

    priority.select_option("training")
    sent = _submit(page, 202).request.post_data_json
    assert (sent["team"], sent["priority"], "namespace" in sent) == (BORROWER, "training",
                                                                     False)
    # its detail opens once submitted: admitted through its team's queue, borrowing
    detail = page.get_by_test_id("job-detail")
    state = detail.get_by_test_id("job-queue-state")
    expect(state).to_have_text("Admitted, borrowing idle capacity of other teams",
                               timeout=QUEUE_TIMEOUT_MS)
    expect(detail.get_by_test_id("job-queue-team")).to_have_text(BORROWER)
    expect(detail.get_by_test_id("job-queue-priority")).to_have_text("training (weight 50)")
    row = page.get_by_test_id(f"job-team-{borrower}")
    expect(row).to_contain_text(BORROWER)
    expect(row).to_contain_text("priority training")
    page_checks(page, "a team's job admitted, borrowing")

    # the lender's job takes its node back: the borrower's detail says by whom
    _submitted(stack, cluster, {**GPU_JOB, "name": lender, "team": LENDER})
    expect(state).to_contain_text(
        f"Preempted by job {lender} of team {LENDER} (its team took back the capacity "
        "it had lent): it waits for quota again", timeout=QUEUE_TIMEOUT_MS)
    expect(detail.get_by_test_id("job-queue-message")).to_contain_text(
        "Preempted to accommodate a workload")
    page_checks(page, "a preempted team's job")
    # the preemptor's link opens its detail, which names the job it took quota from
    _queue_state(stack, cluster, lender, "admitted")
    detail.get_by_test_id("job-queue-preempted-by").click()
    expect(page.get_by_test_id("log-job")).to_have_text(lender)
    expect(state).to_have_text("Admitted", timeout=QUEUE_TIMEOUT_MS)
    expect(detail.get_by_test_id("job-queue-priority")).to_have_text("none")
    expect(detail.get_by_test_id("job-queue-preempted")).to_contain_text(
        f"job {borrower} of team {BORROWER}")
    expect(detail.get_by_test_id(f"job-queue-preempted-{borrower}")).to_have_attribute(
        "href", f"#/clusters/{cluster}/jobs?job={borrower}")
    expect(page.get_by_test_id(f"job-team-{lender}")).to_have_text(LENDER)


def test_a_member_submits_for_its_own_team_only(page, stack, cluster):
    """ana's token is a member of the team: the form's team is hers, fixed; she may delete
    her team's job, not the other team's; the header says her token changes only its team's
    jobs, and the Teams page's changes are locked, saying why."""
    own, other = job_name("ui-own"), job_name("ui-other")
    for job in (own, other):
        stack.sandbox.set_training(steps=100000, lines_per_second=1, job=job)
    _submitted(stack, cluster, {**GPU_JOB, "name": own}, token="ana")
    _submitted(stack, cluster, {**GPU_JOB, "name": other, "team": LENDER})
    try:
        _jobs_page(page, stack, cluster, MEMBER_TOKENS["ana"][1], "operator")
        expect(page.get_by_test_id("readonly-hint")).to_have_text("team work only")
        team = page.get_by_test_id("job-team")
        expect(team.locator("option")).to_have_text([BORROWER])
        expect(team).to_be_disabled()
        expect(page.get_by_test_id("job-namespace")).to_have_value(f"hyperpod-ns-{BORROWER}")
        expect(page.get_by_test_id("job-field-team")).to_contain_text(
            f"member of team {BORROWER}")
        expect(page.get_by_test_id("job-submit")).to_be_enabled()
        expect(page.get_by_test_id(f"job-delete-{own}")).to_be_enabled()
        theirs = page.get_by_test_id(f"job-delete-{other}")
        expect(theirs).to_be_disabled()
        expect(theirs).to_have_attribute("title", re.compile(rf"team {LENDER}'s"))
        page_checks(page, "the jobs page of a team member")

        page.goto(f"{base(stack)}/#/clusters/{cluster}/teams")
        expect(page.get_by_test_id("team-create")).to_be_disabled(
            timeout=AWS_READ_TIMEOUT_MS)
        expect(page.get_by_test_id("team-role-hint")).to_contain_text(
            f"member of team {BORROWER}")
    finally:
        for job in (own, other):
            deleted(stack, cluster, job, force="true")
