"""The cluster page's Advanced features panel in a real browser: each feature as the cluster
has it, its dependencies and identity, autoscaling's scope note and per-group bounds; Apply
sends only the toggles the user touched (one PATCH per feature), follows the operation, and
says "no change" when the cluster already was as asked."""

from __future__ import annotations

import json
import re
import uuid

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

from tests.app.featurekit import state, toggle
from tests.app.test_clusters_api import _body, _create
from tests.e2e.helpers import (
    AWS_READ_TIMEOUT_MS,
    OPERATION_TIMEOUT_MS,
    UUID_RE,
    base,
    cancel,
    destroy_dialog,
    page_checks,
    plan_read,
    sign_in,
)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def cluster(stack):
    stack.wait_idle()
    name = f"fp-{uuid.uuid4().hex[:5]}"
    assert _create(stack, _body(name))["status"] == "succeeded"
    yield name
    stack.wait_idle()  # every feature off again: Karpenter has nothing left to watch
    for feature in ("autoscaling", "training_operator", "task_governance"):
        if state(stack, name, feature) != "off":
            toggle(stack, name, {feature: {"enabled": False}})


def _is_patch(name: str):
    return lambda r: r.method == "PATCH" and r.url.endswith(f"/api/v1/clusters/{name}/features")


def _open(page, stack, cluster):
    sign_in(page, stack, stack.operator_token, "operator")
    page.goto(f"{base(stack)}/#/clusters/{cluster}")
    expect(page.get_by_test_id("feature-training_operator")).to_be_visible(
        timeout=AWS_READ_TIMEOUT_MS)


def test_the_panel_shows_actual_state_dependencies_and_the_autoscaling_scope(page, stack,
                                                                            cluster):
    _open(page, stack, cluster)
    for feature in ("training_operator", "inference_operator", "tiered_checkpointing",
                    "autoscaling", "observability", "task_governance"):
        expect(page.get_by_test_id(f"feature-state-{feature}")).to_have_text("off")
    deps = page.get_by_test_id("feature-deps-training_operator")
    expect(deps).to_contain_text("cert-manager")
    expect(deps).to_contain_text("eks-pod-identity-agent")
    expect(page.get_by_test_id("feature-identity-tiered_checkpointing")).to_contain_text(
        "IRSA")
    expect(page.get_by_test_id("feature-note-autoscaling")).to_contain_text(
        "HyperPod instance groups only, not general EC2 capacity")
    page_checks(page, "the features panel", within="[data-testid=advanced-features]")
    expect(page.get_by_test_id("status-autoscaling-scope")).to_contain_text(
        "not general EC2 capacity")
    expect(page.get_by_test_id("as-group-workers")).to_be_visible()
    expect(page.get_by_test_id("features-apply")).to_be_disabled()
    # touching a toggle and putting it back is no change at all
    page.get_by_test_id("feature-toggle-observability").check()
    expect(page.get_by_test_id("features-apply")).to_be_enabled()
    page.get_by_test_id("feature-toggle-observability").uncheck()
    expect(page.get_by_test_id("features-apply")).to_be_disabled()
    # a value the API refuses is said on its own field, from the refusal's details
    memory = page.get_by_test_id("feature-memory-percent")
    memory.fill("1000")
    with page.expect_response(lambda r: _is_patch(cluster)(r.request)) as refused:
        page.get_by_test_id("features-apply").click()
    assert refused.value.status == 422, refused.value.text()
    expect(page.get_by_test_id("error-feature-tiered_checkpointing.memory_percent")).not_to_be_empty()
    expect(page.get_by_test_id("feature-memory-percent")).to_have_attribute("aria-invalid", "true")


def test_apply_sends_only_what_was_touched_and_follows_it(page, stack, cluster):
    stack.wait_idle()
    _open(page, stack, cluster)
    page.get_by_test_id("feature-toggle-training_operator").check()
    page.get_by_test_id("feature-toggle-autoscaling").check()
    page.get_by_test_id("as-max-workers").fill("3")
    expect(page.get_by_test_id("features-touched")).to_have_text("2 features changed")
    sent = []
    page.on("request", lambda r: sent.append(r) if _is_patch(cluster)(r) else None)
    with page.expect_response(lambda r: _is_patch(cluster)(r.request)
                              and "autoscaling" in (r.request.post_data or "")) as last:
        page.get_by_test_id("features-apply").click()
    assert last.value.status == 202, last.value.text()
    # one PATCH per touched feature, each with only what was touched
    assert [json.loads(r.post_data) for r in sent] == [
        {"training_operator": {"enabled": True}},
        {"autoscaling": {"enabled": True, "groups": {"workers": {"max": 3}}}}]
    assert all(UUID_RE.match(r.headers.get("idempotency-key", "")) for r in sent)
    for feature in ("training_operator", "autoscaling"):
        expect(page.get_by_test_id(f"feature-result-status-{feature}")).to_have_text(
            "succeeded", timeout=OPERATION_TIMEOUT_MS)
        expect(page.get_by_test_id(f"feature-state-{feature}")).to_have_text(
            "on", timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id("as-max-workers")).to_have_value("3")
    expect(page.get_by_test_id("as-min-workers")).to_have_value("0")
    expect(page.get_by_test_id("as-group-workers")).to_have_attribute("data-autoscaled", "1")
    # turning one off asks once, through the one confirmation naming the feature, with the
    # dry run's plan; cancelled, no PATCH is sent
    sent.clear()
    page.get_by_test_id("feature-toggle-training_operator").uncheck()
    page.get_by_test_id("features-apply").click()
    dialog = destroy_dialog(page, "feature", "training_operator", "feature-off")
    plan_read(dialog)
    page_checks(page, "a feature's turn-off dialog", within="dialog[open]")
    cancel(dialog)
    expect(page.get_by_test_id("feature-result-training_operator")).to_have_text("not sent")
    assert not sent  # only the dry run (…/features?dry_run=true) was asked
    assert state(stack, cluster, "training_operator") == "on"
    assert state(stack, cluster, "autoscaling") == "on"


def test_a_change_already_made_elsewhere_answers_no_change(page, stack, cluster):
    stack.wait_idle()
    _open(page, stack, cluster)
    expect(page.get_by_test_id("feature-state-task_governance")).to_have_text("off")
    # the cluster changes behind the open panel
    assert toggle(stack, cluster, {"task_governance": {"enabled": True}})["status"] == \
        "succeeded"
    page.get_by_test_id("feature-toggle-task_governance").check()
    with page.expect_response(lambda r: _is_patch(cluster)(r.request)) as answer:
        page.get_by_test_id("features-apply").click()
    assert answer.value.status == 200
    assert json.loads(answer.value.request.post_data) == {"task_governance": {"enabled": True}}
    expect(page.get_by_test_id("feature-result-task_governance")).to_have_text("no change")
    expect(page.get_by_test_id("feature-state-task_governance")).to_have_text(
        "on", timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id("feature-task_governance")).to_have_attribute(
        "data-enabled", re.compile("1"))
