"""The audit page in a real browser: an operator sees an operation it ran and a viewer's
refusal, filters by target and token; a viewer has no audit link and is told why; the page
runs under the strict CSP (the `page` fixture fails on any uncaught JS error)."""

import uuid

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

from tests.e2e.helpers import base, page_checks, sign_in

pytestmark = pytest.mark.browser


def test_an_operator_reads_the_audit_log_and_filters_it(page, stack):
    name = f"aud-ui-{uuid.uuid4().hex[:4]}"
    with stack.client() as c:
        op_id = c.post("/api/v1/networks", json={"name": name}).json()["operation"]["id"]
    with stack.client("viewer") as v:
        assert v.delete(f"/api/v1/networks/{name}").status_code == 403
    csp = []
    page.on("console", lambda m: csp.append(m.text) if "Content Security Policy" in m.text
            else None)
    sign_in(page, stack, stack.operator_token, "operator")
    page.get_by_test_id("nav-audit").click()
    page.get_by_test_id("audit-filter-target").fill(f"network/{name}")
    rows = page.locator("[data-testid=audit-body] tr[data-outcome]")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_have_attribute("data-outcome", "refused")
    expect(rows.nth(0)).to_have_attribute("data-token", "viewer")
    expect(rows.nth(0).locator("td").nth(1)).to_have_text("viewer")  # not "viewer viewer"
    expect(rows.nth(1)).to_have_attribute("data-outcome", "accepted")
    expect(rows.nth(1).get_by_test_id("audit-op-link")).to_have_text(op_id)
    page_checks(page, "the audit log")
    page.get_by_test_id("audit-filter-token").fill("operator")
    expect(rows).to_have_count(1)
    expect(page).to_have_url(f"{base(stack)}/#/audit?target=network%2F{name}&token=operator")
    page.get_by_test_id("audit-filter-outcome").select_option("refused")
    expect(page.get_by_test_id("audit-empty")).to_be_visible()
    rows_before = page.locator("[data-testid=audit-body] tr")
    expect(rows_before).to_have_count(1)
    assert not csp, csp


def test_a_viewer_has_no_audit_page(page, stack):
    sign_in(page, stack, stack.viewer_token, "viewer")
    expect(page.get_by_test_id("nav-audit")).to_be_hidden()
    page.goto(base(stack) + "/#/audit")
    expect(page.get_by_test_id("audit-forbidden")).to_contain_text("for operators")
