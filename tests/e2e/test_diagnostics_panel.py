"""The cluster page's Diagnostics section in a real browser, as a viewer: a node marked for a
reboot by HyperPod's health label is found with its evidence, the suggestions come in order
(investigate, then reboot that node, then replace) as text — and the page runs none of them;
a diagnosis with nothing to find says so."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

from tests.app.test_diagnostics_api import HEALTH_LABEL, delete_cluster, two_node_cluster
from tests.e2e.helpers import AWS_READ_TIMEOUT_MS, base, page_checks, sign_in

pytestmark = pytest.mark.browser


def test_viewer_diagnoses_node_health_and_sees_the_next_commands(page, stack):
    cluster = two_node_cluster(stack, "diagui")
    name, kube = cluster["name"], cluster["kube"]
    first, first_node = cluster["nodes"][0], cluster["node_names"][0]
    sign_in(page, stack, stack.viewer_token, "viewer")
    page.goto(base(stack) + f"/#/clusters/{name}")
    expect(page.get_by_test_id("diagnostics")).to_be_visible()

    page.get_by_test_id("diagnose-creation").click()
    expect(page.get_by_test_id("diagnostics-verdict")).to_have_attribute(
        "data-value", "healthy", timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id("diagnostics-summary")).to_contain_text("Nothing found")

    kube.label_node(first_node, {HEALTH_LABEL: "UnschedulablePendingReboot"})
    before = stack.sandbox.counters()["by_action"]
    try:
        page.get_by_test_id("diagnose-node-health").click()
        finding = page.locator(f"[data-testid=diagnostics-finding][data-node='{first}']")
        expect(finding).to_have_attribute("data-code", "node_unhealthy",
                                          timeout=AWS_READ_TIMEOUT_MS)
        expect(finding.get_by_test_id("diagnostics-evidence").first).to_contain_text(
            f"{HEALTH_LABEL}=UnschedulablePendingReboot")
        steps = page.get_by_test_id("diagnostics-suggestion")
        expect(steps).to_have_count(3)
        expect(steps.nth(0)).to_have_attribute("data-step", "investigate")
        page_checks(page, "the diagnostics panel with a finding",
                    within="[data-testid=diagnostics]")
        expect(steps.nth(0).get_by_test_id("diagnostics-kubectl")).to_have_text(
            f"kubectl describe node {first_node}")
        expect(steps.nth(1)).to_have_attribute("data-route",
                                               "/api/v1/clusters/{cluster}/nodes/reboot")
        expect(steps.nth(1).get_by_test_id("diagnostics-call")).to_contain_text(
            f"POST /api/v1/clusters/{name}/nodes/reboot")
        expect(steps.nth(1).get_by_test_id("diagnostics-call")).to_contain_text(first)
        expect(steps.nth(2)).to_have_attribute("data-route",
                                               "/api/v1/clusters/{cluster}/nodes/replace")
        expect(page.get_by_test_id("diagnostics-capacity-link")).to_have_attribute(
            "href", re.compile(re.escape(name)))
    finally:
        kube.label_node(first_node, {HEALTH_LABEL: "Schedulable"})
    assert stack.sandbox.counters()["by_action"] == before  # shown, never run

    # NCCL for one job: the scope goes with the request; a job the cluster lacks is said so
    page.get_by_test_id("diagnose-nccl-job").fill("no-such-job")
    with page.expect_response(lambda r: "/diagnostics/nccl" in r.url) as asked:
        page.get_by_test_id("diagnose-nccl").click()
    assert asked.value.url.endswith("/diagnostics/nccl?job=no-such-job")
    assert asked.value.status == 404
    expect(page.get_by_test_id("diagnostics-error")).to_contain_text("no-such-job")
    delete_cluster(stack, name)
