"""A create that stops short, in a real browser: the operation panel asks before Cancel; the
cluster page then shows each stage with an honest mark (a skipped stage is never ✓), the
create's state in words, a "Left in AWS" card with what is billed by the hour and its cost,
and the two ways on — Resume (it carries on: here it is stopped again) and Delete (the typed
confirmation), which removes what the create made.

The create stops in its network stage (a sandbox hold keeps the NAT gateway's CreateNatGateway
answer while the cancel is asked), so nothing past the network is made: cheap and
deterministic.
"""

from __future__ import annotations

import re
import secrets

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

from tests.e2e.helpers import (
    AWS_READ_TIMEOUT_MS,
    OPERATION_TIMEOUT_MS,
    base,
    cancel,
    destroy_dialog,
    page_checks,
    plan_read,
    sign_in,
)

pytestmark = pytest.mark.browser

OP_URL = re.compile(r"#/operations/([^/?#]+)$")
SKIPPED_MARK = "\u2013"  # an en dash; a succeeded stage's mark is a check


def _op(stack, op_id: str) -> dict:
    with stack.client("viewer") as c:
        return c.get(f"/api/v1/operations/{op_id}").json()


def test_cancel_asks_first_and_the_cluster_page_shows_what_is_left(page, stack):
    stack.wait_idle()
    name = f"ux-{secrets.token_hex(3)}"
    hold = stack.sandbox.hold("ec2", "CreateNatGateway")
    try:
        with stack.client() as c:
            reply = c.post("/api/v1/clusters", json={
                "name": name, "availability_zone": "us-west-2a", "instance_type": "ml.g5.8xlarge",
                "instance_count": 2})
        assert reply.status_code == 202, reply.text
        op_id = reply.json()["operation"]["id"]
        stack.sandbox.wait_held(hold, timeout=60)

        sign_in(page, stack, stack.operator_token, "operator")
        page.goto(f"{base(stack)}/#/operations/{op_id}")
        expect(page.get_by_test_id("op-status")).to_have_attribute("data-status", "running")
        # Cancel asks first; "Keep running" sends nothing
        page.get_by_test_id("op-cancel").click()
        confirm = destroy_dialog(page, "cluster.create operation on", f"cluster/{name}",
                                 "op-cancel")
        expect(confirm).to_contain_text("stays in AWS")
        expect(confirm).to_have_attribute("data-plan", "none")  # a cancel has no dry run
        expect(confirm.get_by_test_id("destroy-dialog-cancel")).to_have_text("Keep running")
        cancel(confirm)
        assert _op(stack, op_id)["cancel_requested"] is False
        # ... and confirmed, it is sent
        page.get_by_test_id("op-cancel").click()
        confirm.get_by_test_id("destroy-dialog-confirm").click()
        expect(page.get_by_test_id("op-cancel-requested")).to_be_visible()
        assert _op(stack, op_id)["cancel_requested"] is True
        stack.sandbox.release(hold)
        expect(page.get_by_test_id("op-status")).to_have_attribute(
            "data-status", "cancelled", timeout=OPERATION_TIMEOUT_MS)
        expect(page.get_by_test_id("op-stage-status-storage")).to_have_text("skipped")
    finally:
        stack.sandbox.clear_holds()

    # the cluster page: honest stages, the state, what is left and its hourly cost
    page.get_by_test_id("op-cluster-link").click()
    state = page.get_by_test_id("cluster-state")
    expect(state).to_have_attribute("data-status", "create_cancelled",
                                    timeout=AWS_READ_TIMEOUT_MS)
    expect(state).to_contain_text("create cancelled at stage network")
    expect(page.get_by_test_id("stage-network")).to_have_attribute("data-status", "cancelled")
    for stage in ("eks", "activate", "dependencies", "hyperpod", "storage"):
        row = page.get_by_test_id(f"stage-{stage}")
        expect(row).to_have_attribute("data-status", "skipped")
        expect(page.get_by_test_id(f"stage-mark-{stage}")).to_have_text(SKIPPED_MARK)
        expect(page.get_by_test_id(f"stage-status-{stage}")).to_have_text("skipped")
    left = page.get_by_test_id("cluster-left")
    expect(left).to_be_visible()
    nat = left.get_by_test_id("left-item-nat_gateway")
    expect(nat.get_by_test_id("left-billed")).to_be_visible()
    expect(left.get_by_test_id("left-item-vpc")).to_be_visible()
    expect(left.get_by_test_id("left-cost-item-nat_gateway")).to_be_visible()
    with stack.client("viewer") as c:
        cost = c.get(f"/api/v1/clusters/{name}").json()["left_in_aws"]["cost"]
    assert [i["kind"] for i in cost["items"]] == ["nat_gateway"] and cost["hourly_usd"] > 0
    expect(left).to_have_attribute("data-hourly", str(cost["hourly_usd"]))
    expect(page.get_by_test_id("left-cost-total")).to_contain_text(f"{cost['hourly_usd']:.3f}")
    page_checks(page, "what a cancelled create left", within="[data-testid=cluster-left]")

    # the list of clusters says it too
    page.goto(f"{base(stack)}/#/clusters")
    expect(page.get_by_test_id(f"cluster-row-{name}").get_by_test_id("cluster-state")).to_have_attribute(
        "data-status", "create_cancelled", timeout=AWS_READ_TIMEOUT_MS)
    page.goto(f"{base(stack)}/#/clusters/{name}")

    # Resume carries on from where it stopped (stopped again here, before its route tables)
    hold = stack.sandbox.hold("ec2", "CreateRouteTable")
    try:
        page.get_by_test_id("cluster-resume").click()
        expect(page).to_have_url(re.compile(rf"#/operations/{op_id}$"))
        stack.sandbox.wait_held(hold, timeout=60)
        with stack.client() as c:
            assert c.post(f"/api/v1/operations/{op_id}/cancel").status_code == 202
        stack.sandbox.release(hold)
        expect(page.get_by_test_id("op-status")).to_have_attribute(
            "data-status", "cancelled", timeout=OPERATION_TIMEOUT_MS)
    finally:
        stack.sandbox.clear_holds()
    resumed = {s["name"]: s["phase"] for s in _op(stack, op_id)["steps"]}
    assert resumed["nat_gateway"] == resumed["route_tables"] == "succeeded"

    # Delete what was made: the typed confirmation, then the delete runs to its end
    page.get_by_test_id("op-cluster-link").click()
    page.get_by_test_id("cluster-delete-made").click()
    dialog = destroy_dialog(page, "cluster", name, "cluster-delete")
    plan_read(dialog)
    dialog.get_by_test_id("destroy-typed").fill(name)
    dialog.get_by_test_id("destroy-dialog-confirm").click()
    expect(page).to_have_url(OP_URL, timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id("op-kind")).to_have_text("cluster.delete")
    expect(page.get_by_test_id("op-status")).to_have_attribute(
        "data-status", "succeeded", timeout=OPERATION_TIMEOUT_MS)
    with stack.client("viewer") as c:
        assert c.get(f"/api/v1/clusters/{name}").status_code == 404
