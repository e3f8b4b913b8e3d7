"""From sign-in to a running job and an answered endpoint, with only the dashboard: a network
made and then picked from the cluster form's list, a cluster created on it, a group added,
the training operator turned on, a job submitted and seen on its detail (pods on their nodes,
log lines with their times), a model downloaded, an endpoint deployed from the list of the
cluster's models, scaled to 2 in place and invoked. Every step is a click in Chromium; the API
is only read to check what the pages said.

Marked slow: it makes a whole cluster and everything on it (a few minutes), so it runs with
the long campaign (`-m slow`), which CI runs after the default suite."""

from __future__ import annotations

import re
import secrets

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

from tests.e2e.helpers import AWS_READ_TIMEOUT_MS, OPERATION_TIMEOUT_MS, base, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ZONES = ("us-west-2a", "us-west-2b")
GPU_TYPE = "ml.g5.12xlarge"  # 4 GPUs a node
OP_URL = re.compile(r"#/operations/(op_[0-9A-Z]+)$")


def _succeeded(page, kind: str) -> None:
    """On the progress panel the dashboard opened: the operation of `kind` succeeds."""
    expect(page).to_have_url(OP_URL, timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id("op-kind")).to_have_text(kind)
    expect(page.get_by_test_id("op-status")).to_have_text("succeeded",
                                                          timeout=OPERATION_TIMEOUT_MS)


def test_from_sign_in_to_a_trained_job_and_an_answered_endpoint(page, stack):
    stack.wait_idle()
    suffix = secrets.token_hex(2)
    network, cluster, job = f"jn-{suffix}", f"jc-{suffix}", f"jj-{suffix}"
    stack.sandbox.set_training(steps=20, lines_per_second=5, job=job)
    sign_in(page, stack, stack.operator_token, "operator")

    # a network, made from its page
    page.get_by_test_id("nav-networks").click()
    zones = page.locator("[data-testid=network-zones] input[type=checkbox]")
    expect(zones.first).to_be_visible(timeout=AWS_READ_TIMEOUT_MS)
    for zone in ZONES:
        page.locator(f"[data-testid=network-zones] input[value='{zone}']").check()
    page.get_by_test_id("network-name").fill(network)
    page.get_by_test_id("network-create").click()
    _succeeded(page, "network.create")

    # a cluster on it, the network picked from the form's list
    page.get_by_test_id("nav-clusters").click()
    page.get_by_test_id("cluster-new").click()
    page.get_by_test_id("cluster-name").fill(cluster)
    page.get_by_test_id("cluster-az").select_option(ZONES[0], timeout=AWS_READ_TIMEOUT_MS)
    page.get_by_test_id("cluster-type").select_option(GPU_TYPE, timeout=AWS_READ_TIMEOUT_MS)
    page.get_by_test_id("cluster-count").fill("1")
    page.get_by_test_id("network-choice-hypd").check(force=True)
    page.get_by_test_id("cluster-network").select_option(network, timeout=AWS_READ_TIMEOUT_MS)
    with page.expect_response(lambda r: "dry_run=true" in r.url,
                              timeout=AWS_READ_TIMEOUT_MS) as planned:
        page.get_by_test_id("cluster-plan").click()
    assert planned.value.status == 200, planned.value.text()
    with stack.client("viewer") as c:
        made = c.get(f"/api/v1/networks/{network}").json()
    assert planned.value.request.post_data_json["existing_vpc"]["vpc_id"] == made["vpc_id"]
    page.get_by_test_id("cluster-create").click()
    _succeeded(page, "cluster.create")

    # a second group, from the capacity page's form after its preflight
    page.goto(f"{base(stack)}/#/clusters/{cluster}")
    page.get_by_test_id("cluster-capacity-link").click()
    page.get_by_test_id("ig-add").click()
    page.get_by_test_id("ig-name").fill("more")
    page.get_by_test_id("ig-type").select_option(GPU_TYPE, timeout=AWS_READ_TIMEOUT_MS)
    page.get_by_test_id("ig-count").fill("1")
    page.get_by_test_id("ig-check").click()
    expect(page.get_by_test_id("plan-preflight")).to_have_attribute("data-ok", "1",
                                                                  timeout=AWS_READ_TIMEOUT_MS)
    page.get_by_test_id("ig-create").click()
    _succeeded(page, "instance_group.create")

    # the training operator, from the cluster's features panel
    page.goto(f"{base(stack)}/#/clusters/{cluster}")
    expect(page.get_by_test_id("feature-training_operator")).to_be_visible(
        timeout=AWS_READ_TIMEOUT_MS)
    page.get_by_test_id("feature-toggle-training_operator").check()
    page.get_by_test_id("features-apply").click()
    expect(page.get_by_test_id("feature-state-training_operator")).to_have_text(
        "on", timeout=OPERATION_TIMEOUT_MS)

    # a job, followed on its detail: its pod on a node, its log lines with their times
    page.get_by_test_id("cluster-jobs-link").click()
    page.get_by_test_id("job-recipe").select_option("torchrun", timeout=AWS_READ_TIMEOUT_MS)
    page.get_by_test_id("job-name").fill(job)
    page.get_by_test_id("job-image").fill("repo/train:1")
    page.get_by_test_id("job-script").fill("/s3/code/train.py")
    page.get_by_test_id("job-gpus").fill("1")
    page.get_by_test_id("job-submit").click()
    expect(page.get_by_test_id("log-job")).to_have_text(job, timeout=AWS_READ_TIMEOUT_MS)
    detail = page.get_by_test_id("job-detail")
    pod = detail.get_by_test_id(f"job-pod-{job}-pods-0")
    expect(pod).to_have_attribute("data-node", re.compile(r".+"), timeout=AWS_READ_TIMEOUT_MS)
    rows = page.get_by_test_id("log-row")
    expect(rows.filter(has_text="step 20/20")).to_be_visible(timeout=AWS_READ_TIMEOUT_MS)
    expect(rows.first.locator(".log-time")).to_have_text(re.compile(r"\d{1,2}:\d{2}:\d{2}"))
    expect(detail.get_by_test_id("job-detail-state")).to_have_text("succeeded",
                                                                   timeout=AWS_READ_TIMEOUT_MS)

    # a model, downloaded from its page
    page.goto(f"{base(stack)}/#/clusters/{cluster}/models")
    page.get_by_test_id("model-name").fill("tiny")
    page.get_by_test_id("model-repo").fill("acme/tiny")
    page.get_by_test_id("model-download").click()
    expect(page.get_by_test_id("model-state-tiny")).to_have_text("available",
                                                                 timeout=OPERATION_TIMEOUT_MS)

    # an endpoint serving it, chosen from the cluster's models; scaled to 2 in place; invoked
    page.goto(f"{base(stack)}/#/clusters/{cluster}/endpoints")
    page.get_by_test_id("ep-name").fill("chat")
    page.get_by_test_id("ep-kind").select_option("vllm")
    page.get_by_test_id("ep-model").select_option("tiny", timeout=AWS_READ_TIMEOUT_MS)
    page.get_by_test_id("ep-gpus").fill("1")
    page.get_by_test_id("ep-create").click()
    expect(page.get_by_test_id("endpoint-state-chat")).to_have_text("ready",
                                                                    timeout=OPERATION_TIMEOUT_MS)
    page.get_by_test_id("endpoint-scale-chat").click()
    page.get_by_test_id("scale-replicas").fill("2")
    page.get_by_test_id("scale-dialog-confirm").click()
    expect(page.get_by_test_id("endpoint-ready-chat")).to_have_text(
        "2 / 2", timeout=OPERATION_TIMEOUT_MS)
    page.get_by_test_id("endpoint-invoke-chat").click()
    page.get_by_test_id("invoke-prompt").fill("Hello there")
    page.get_by_test_id("invoke-confirm").click()
    expect(page.get_by_test_id("invoke-service")).to_contain_text("HTTP 200",
                                                                  timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id("invoke-text")).not_to_be_empty()

    # what the pages said is what the API holds
    with stack.client("viewer") as c:
        assert c.get(f"/api/v1/clusters/{cluster}/jobs/{job}").json()["state"] == "succeeded"
        endpoint = c.get(f"/api/v1/clusters/{cluster}/endpoints/chat").json()
        groups = c.get(f"/api/v1/clusters/{cluster}/instance-groups").json()["items"]
    assert (endpoint["replicas"], endpoint["ready_replicas"]) == (2, 2)
    assert "more" in {g["name"] for g in groups}
