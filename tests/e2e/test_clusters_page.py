"""The cluster pages in a real browser: create a cluster from the form (decisions only), review
its dry-run plan and cost, follow the staged progress panel, open the cluster, re-run a stage,
download the kubeconfig, delete it; preflight failures and 422/412 replies shown in the form;
a viewer sees every mutating control disabled; an imported cluster is only forgotten.

Fixtures `browser` and `page` (which fails on uncaught JS errors) are in tests/e2e/conftest.py.
"""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path

import boto3
import pytest
import yaml

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

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
from tests.stack import wait_until
from vocabulary import kubernetes_versions, stage_times

pytestmark = pytest.mark.browser

STAGES = ("network", "eks", "activate", "dependencies", "hyperpod", "storage")
ZONE = "us-west-2a"
TYPE = "ml.g5.8xlarge"
NO_EFA_TYPE = "ml.g4dn.xlarge"  # offered in ZONE, no EFA interface
OP_URL = re.compile(r"#/operations/([^/?#]+)$")


def _name(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(3)}"


def _is_create_post(request) -> bool:
    return request.method == "POST" and request.url.split("?")[0].endswith("/api/v1/clusters")


def _is_dry_run(request) -> bool:
    return _is_create_post(request) and "dry_run=true" in request.url


def _op_id(page) -> str:
    expect(page).to_have_url(OP_URL, timeout=AWS_READ_TIMEOUT_MS)
    return OP_URL.search(page.url).group(1)


@pytest.fixture(scope="module")
def rest_cluster(stack):
    """A cluster made through the REST API (for the viewer and import tests); deleted after."""
    stack.wait_idle()
    name = _name("rest")
    with stack.client() as c:
        reply = c.post("/api/v1/clusters", json={
            "name": name, "availability_zone": ZONE, "instance_type": TYPE, "instance_count": 1})
    assert reply.status_code == 202, reply.text
    op = stack.wait_operation(reply.json()["operation"]["id"], timeout=180)
    assert op["status"] == "succeeded", op
    yield name, op
    stack.wait_idle()
    with stack.client() as c:
        gone = c.delete(f"/api/v1/clusters/{name}")
    if gone.status_code == 202:
        stack.wait_operation(gone.json()["operation"]["id"], timeout=180)


def open_create_form(page):
    page.get_by_test_id("nav-clusters").click()
    expect(page).to_have_url(re.compile(r"#/clusters$"))
    page.get_by_test_id("cluster-new").click()
    expect(page).to_have_url(re.compile(r"#/clusters/new$"))


def fill_decisions(page, name, zone=ZONE, instance_type=TYPE, count=2):
    page.get_by_test_id("cluster-name").fill(name)
    # zones, then the zone's instance types, come from discovery (select_option waits for them)
    page.get_by_test_id("cluster-az").select_option(zone, timeout=AWS_READ_TIMEOUT_MS)
    page.get_by_test_id("cluster-type").select_option(instance_type, timeout=AWS_READ_TIMEOUT_MS)
    page.get_by_test_id("cluster-count").fill(str(count))


def review_plan(page):
    with page.expect_response(lambda r: _is_dry_run(r.request),
                              timeout=AWS_READ_TIMEOUT_MS) as planned:
        page.get_by_test_id("cluster-plan").click()
    return planned.value


def expect_op_succeeded_by_stage(page, stages):
    expect(page.get_by_test_id("op-status")).to_have_text("succeeded", timeout=OPERATION_TIMEOUT_MS)
    groups = page.locator("[data-testid=steps] > li[data-stage]")
    expect(groups).to_have_count(len(stages))
    for stage in stages:
        group = page.get_by_test_id(f"op-stage-{stage}")
        expect(group).to_have_attribute("data-status", "succeeded")
        expect(page.get_by_test_id(f"op-stage-status-{stage}")).to_have_text("succeeded")
        steps = group.locator("[data-step]")
        assert steps.count() >= 1, stage
        for i in range(steps.count()):
            step = steps.nth(i)
            expect(step).to_have_attribute("data-phase", "succeeded")
            expect(step).to_have_attribute("data-testid", f"step-{step.get_attribute('data-step')}")


CLUSTER_PAGES = ("jobs", "endpoints", "models", "spaces", "teams", "storage")
"""The pages of a cluster's own resources, in the dashboard's route order."""


def test_operator_creates_a_cluster_follows_stages_and_reruns_one(page, stack):
    stack.wait_idle()
    name = _name("ui")
    sign_in(page, stack, stack.operator_token, "operator")
    open_create_form(page)
    fill_decisions(page, name)
    expect(page.get_by_test_id("cluster-type-efa")).to_have_text("EFA \u00d71")
    # one EFA interface: EFA-only is not offered
    expect(page.get_by_test_id("efa-mode-efa-only")).to_be_disabled()
    expect(page.get_by_test_id("cluster-create")).to_be_disabled()  # no plan yet

    # the dry run: stages and steps, resources, cost, preflight
    planned = review_plan(page)
    assert planned.status == 200, planned.text()
    plan = planned.json()
    assert planned.request.post_data_json == {
        "name": name, "availability_zone": ZONE, "instance_type": TYPE, "instance_count": 2,
        "capacity_type": "on-demand", "efa_mode": "efa", "deep_health_checks": False,
        # the form's choices, each the API's default: a new network, the newest version
        "cidr": "10.0.0.0/16", "kubernetes_version": kubernetes_versions.default()}
    cost = page.get_by_test_id("plan-cost")
    expect(cost).to_be_visible()
    expect(cost).to_contain_text("estimate")
    expect(page.get_by_test_id("plan-cost-total")).to_have_text(re.compile(r"\$\d"))
    assert float(cost.get_attribute("data-hourly")) == pytest.approx(plan["cost"]["hourly_usd"])
    expect(page.get_by_test_id("plan-cost-note")).to_have_text(plan["cost"]["note"])
    page_checks(page, "the new-cluster form with its plan")
    # each figure's source: the AWS Price List, when it was read, the SKU of each item
    source = page.get_by_test_id("plan-cost-source")
    expect(source).to_contain_text("AWS Price List · read")
    expect(source).to_have_attribute("data-fetched-at", plan["cost"]["fetched_at"])
    for item in plan["cost"]["items"]:
        expect(page.get_by_test_id(f"plan-cost-sku-{item['kind']}")).to_contain_text(
            f"SKU {item['source']['sku']}")
    planned_steps = next(p["steps"] for p in plan["plan"] if "steps" in p)
    expect(page.get_by_test_id("plan-steps").locator("[data-step]")).to_have_count(len(planned_steps))
    for stage in STAGES:
        expect(page.get_by_test_id(f"plan-stage-{stage}")).to_be_visible()
    expect(page.get_by_test_id("plan-step-eks_cluster")).to_be_visible()
    expect(page.get_by_test_id("plan-resources")).to_contain_text("hyperpod_cluster")
    expect(page.get_by_test_id("plan-preflight")).to_have_attribute("data-ok", "1")

    # changing an input makes the plan stale; putting it back makes it current again
    create = page.get_by_test_id("cluster-create")
    expect(create).to_be_enabled()
    page.get_by_test_id("cluster-count").fill("3")
    expect(create).to_be_disabled()
    expect(page.get_by_test_id("plan-stale")).to_be_visible()
    page.get_by_test_id("cluster-count").fill("2")
    expect(create).to_be_enabled()

    # the network stage is held mid-way: a running stage shows what AWS typically takes
    hold = stack.sandbox.hold("ec2", "CreateInternetGateway")
    try:
        with page.expect_request(lambda r: _is_create_post(r) and "dry_run" not in r.url
                                 ) as posted:
            create.click()
        request = posted.value
        assert UUID_RE.match(request.headers.get("idempotency-key", "")), request.headers
        assert request.post_data_json == planned.request.post_data_json

        # the staged progress panel, grouped by stage
        op_id = _op_id(page)
        expect(page.get_by_test_id("op-kind")).to_have_text("cluster.create")
        expect(page.get_by_test_id("op-target")).to_have_text(f"cluster/{name}")
        stack.sandbox.wait_held(hold, timeout=60)
        low, high = stage_times.TYPICAL_MINUTES["network"]
        expect(page.get_by_test_id("op-stage-expected-network")).to_contain_text(
            f"typically {low}\u2013{high} min; running for ")
        low, high = stage_times.TYPICAL_MINUTES["eks"]
        expect(page.get_by_test_id("op-stage-expected-eks")).to_have_text(
            f"typically {low}\u2013{high} min")
        stack.sandbox.release(hold)
    finally:
        stack.sandbox.clear_holds()
    expect_op_succeeded_by_stage(page, STAGES)
    assert page.locator("[data-testid=steps] [data-step]").count() == len(planned_steps)

    # the cluster's page: every stage succeeded, EKS and HyperPod up, two nodes
    page.get_by_test_id("op-cluster-link").click()
    expect(page).to_have_url(re.compile(rf"#/clusters/{re.escape(name)}$"))
    for stage in STAGES:
        expect(page.get_by_test_id(f"stage-{stage}")).to_have_attribute(
            "data-status", "succeeded", timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id("cluster-eks-status")).to_have_text("ACTIVE")
    expect(page.locator("[data-testid^=stage-expected-]")).to_have_count(0)  # none runs
    # the version's EKS support as the API reads it today (extended support costs more)
    support = kubernetes_versions.support_of(kubernetes_versions.default())
    expect(page.get_by_test_id("status-k8s-support")).to_have_attribute(
        "data-support", support["support"])
    expect(page.get_by_test_id("cluster-hp-status")).to_have_text("InService")
    expect(page.get_by_test_id("cluster-nodes-total")).to_have_text("2")
    expect(page.get_by_test_id("group-row-workers")).to_contain_text(TYPE)
    # the EFA mode the form sent, as the API reports it (`efa_mode`)
    expect(page.get_by_test_id("group-row-workers").get_by_test_id("group-efa-mode")).to_have_text(
        "efa")
    expect(page.get_by_test_id("cluster-create-op")).to_have_attribute(
        "href", f"#/operations/{op_id}")
    expect(page.get_by_test_id("cluster-active")).to_be_visible()  # the activate stage did it
    # the Advanced features panel reads the cluster: a new cluster has its managed features off
    expect(page.get_by_test_id("feature-training_operator")).to_have_attribute(
        "data-state", "off", timeout=AWS_READ_TIMEOUT_MS)

    # the kubeconfig is saved as the YAML file the API serves (?format=yaml)
    with page.expect_download() as downloading:
        page.get_by_test_id("cluster-kubeconfig").click()
    download = downloading.value
    assert download.suggested_filename == f"kubeconfig-{name}.yaml"
    kubeconfig = yaml.safe_load(Path(download.path()).read_text())
    assert kubeconfig["clusters"] and kubeconfig["users"], kubeconfig
    assert kubeconfig["users"][0]["user"]["exec"]["command"] == "aws"

    # re-run one stage: a new operation with only that stage's steps
    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith(
            f"/api/v1/clusters/{name}/stages/storage/run")) as rerun:
        page.get_by_test_id("stage-rerun-storage").click()
    assert rerun.value.status == 202, rerun.value.text()
    assert UUID_RE.match(rerun.value.request.headers.get("idempotency-key", ""))
    rerun_id = _op_id(page)
    assert rerun_id != op_id
    expect(page.get_by_test_id("op-kind")).to_have_text("cluster.stage")
    expect_op_succeeded_by_stage(page, ["storage"])

    page.get_by_test_id("op-cluster-link").click()
    expect(page.get_by_test_id("stage-op-storage")).to_have_attribute(
        "href", f"#/operations/{rerun_id}", timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id("stage-storage")).to_have_attribute("data-status", "succeeded")
    expect(page.get_by_test_id("stage-op-network")).to_have_attribute(
        "href", f"#/operations/{op_id}")

    # the list: the row links to the page and carries the active marker
    page.get_by_test_id("nav-clusters").click()
    row = page.get_by_test_id(f"cluster-row-{name}")
    expect(row).to_be_visible(timeout=AWS_READ_TIMEOUT_MS)
    expect(row).to_have_attribute("data-status", "ACTIVE")
    expect(row).to_have_attribute("data-active", "1")
    expect(row.get_by_test_id("cluster-active")).to_be_visible()
    expect(page.get_by_test_id(f"cluster-activate-{name}")).to_be_disabled()

    # delete: a confirmation that wants the name; the shared bucket's data is kept unless
    # the box is checked (then ?delete_data=true)
    page.get_by_test_id(f"cluster-delete-{name}").click()
    dialog = destroy_dialog(page, "cluster", name, "cluster-delete")
    plan_read(dialog)  # the dry run: what it removes, steps rehearsed
    page_checks(page, "a cluster's delete dialog", within="dialog[open]")
    expect(dialog.get_by_test_id("destroy-remove").first).to_be_visible()
    expect(dialog.get_by_test_id("destroy-steps")).to_be_visible()
    confirm = dialog.get_by_test_id("destroy-dialog-confirm")
    expect(confirm).to_be_disabled()
    cancel(dialog)
    page.get_by_test_id(f"cluster-delete-{name}").click()
    dialog = destroy_dialog(page, "cluster", name, "cluster-delete")
    expect(dialog.get_by_test_id("cluster-delete-data")).not_to_be_checked()
    dialog.get_by_test_id("cluster-delete-data").check()
    dialog.get_by_test_id("destroy-typed").fill(name[:-1])
    expect(confirm).to_be_disabled()
    dialog.get_by_test_id("destroy-typed").fill(name)
    with page.expect_request(lambda r: r.method == "DELETE"
                             and "dry_run" not in r.url) as deleting:  # not the dialog's plan
        confirm.click()
    assert deleting.value.url.endswith(f"/api/v1/clusters/{name}?delete_data=true"), \
        deleting.value.url
    assert UUID_RE.match(deleting.value.headers.get("idempotency-key", ""))
    _op_id(page)
    expect(page.get_by_test_id("op-kind")).to_have_text("cluster.delete")
    expect(page.get_by_test_id("op-params")).to_contain_text('"delete_data": true')
    expect(page.get_by_test_id("op-status")).to_have_text("succeeded", timeout=OPERATION_TIMEOUT_MS)
    page.get_by_test_id("nav-clusters").click()
    expect(page.get_by_test_id("clusters-table")).to_be_visible()
    expect(page.get_by_test_id(f"cluster-row-{name}")).to_have_count(0, timeout=AWS_READ_TIMEOUT_MS)


def test_a_type_without_efa_is_planned_as_the_api_accepts_it(page, stack):
    """The form applies the API's EFA rule (the efa_mode field's x-hypd-min-efa-interfaces),
    so a type without EFA is not refused: no mode is sent and the API makes the group
    without EFA (it used to say "choose a type marked EFA" for a body the API accepts)."""
    sign_in(page, stack, stack.operator_token, "operator")
    open_create_form(page)
    fill_decisions(page, _name("noefa"), instance_type=NO_EFA_TYPE, count=1)
    expect(page.get_by_test_id("cluster-type-efa")).to_have_text("no EFA")
    expect(page.get_by_test_id("efa-mode-efa")).to_be_disabled()
    expect(page.get_by_test_id("cluster-efa-hint")).to_contain_text("made without EFA")
    expect(page.get_by_test_id("cluster-efa-hint")).not_to_have_class(re.compile(r"\bwarn\b"))
    planned = review_plan(page)
    assert planned.status == 200, planned.text()
    assert "efa_mode" not in planned.request.post_data_json
    expect(page.get_by_test_id("error-cluster-instance_type")).to_be_empty()


def test_form_shows_field_errors_preflight_failures_and_412(page, stack):
    sign_in(page, stack, stack.operator_token, "operator")
    open_create_form(page)
    posts = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)

    # refused before any request
    page.get_by_test_id("cluster-name").fill("Bad_Name")
    page.get_by_test_id("cluster-plan").click()
    expect(page.get_by_test_id("error-cluster-name")).not_to_be_empty()
    expect(page.get_by_test_id("cluster-name")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_test_id("error-cluster-availability_zone")).not_to_be_empty()
    assert posts == []

    # a type with many EFA interfaces offers EFA-only; a real preflight shortfall is shown
    # with how to fix it, and Create stays disabled
    name = _name("pf")
    fill_decisions(page, name, instance_type="ml.p5.48xlarge", count=200)
    expect(page.get_by_test_id("efa-mode-efa-only")).to_be_enabled()
    page.get_by_test_id("efa-mode-efa-only").check(force=True)
    planned = review_plan(page)
    assert planned.request.post_data_json["efa_mode"] == "efa-only"
    assert planned.json()["preflight"]["ok"] is False
    preflight = page.get_by_test_id("plan-preflight")
    expect(preflight).to_have_attribute("data-ok", "")
    expect(page.get_by_test_id("preflight-instance_quota")).to_have_attribute("data-status", "fail")
    expect(page.get_by_test_id("preflight-fix-instance_quota")).to_contain_text("Service Quotas")
    expect(page.get_by_test_id("plan-verdict")).to_have_text("preflight failed")
    expect(page.get_by_test_id("cluster-create")).to_be_disabled()

    # a 422 from the server lands next to its fields
    page.get_by_test_id("cluster-type").select_option(TYPE)
    page.get_by_test_id("cluster-count").fill("2")

    fields = {"instance_count": ["over the limit for this zone"],
              "existing_vpc": {"subnet_ids": ["give subnets in at least two zones"]}}

    def refuse_422(route):
        route.fulfill(status=422, content_type="application/json", body=json.dumps({"error": {
            "code": "validation_failed", "message": "instance_count: over the limit",
            "details": {"fields": fields}}}))

    page.route(lambda url: "/api/v1/clusters?dry_run=true" in url, refuse_422)
    page.get_by_test_id("cluster-plan").click()
    expect(page.get_by_test_id("error-cluster-instance_count")).to_have_text(fields["instance_count"][0])
    expect(page.get_by_test_id("cluster-count")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_test_id("error-cluster-existing_vpc.subnet_ids")).to_have_text(
        fields["existing_vpc"]["subnet_ids"][0])
    expect(page.get_by_test_id("plan-error")).to_be_visible()
    expect(page.get_by_test_id("cluster-create")).to_be_disabled()
    page.unroute_all()

    # a good plan, then a 412 on create (a quota changed in between): shown with its checks
    planned = review_plan(page)
    assert planned.status == 200
    expect(page.get_by_test_id("cluster-create")).to_be_enabled()
    assert not page.get_by_test_id("error-cluster-instance_count").text_content()
    failed_check = {"name": "instance_quota", "ok": False, "status": "fail", "required": 2,
                    "available": 0, "message": "quota now 0", "how_to_fix": "ask for more"}

    def refuse_412(route):
        if route.request.method != "POST" or "dry_run" in route.request.url:
            route.continue_()
            return
        route.fulfill(status=412, content_type="application/json", body=json.dumps({"error": {
            "code": "precondition_failed", "message": "preflight: quota now 0",
            "details": {"preflight": {"ok": False, "checks": [failed_check]}}}}))

    page.route(lambda url: url.split("?")[0].endswith("/api/v1/clusters"), refuse_412)
    page.get_by_test_id("cluster-create").click()
    expect(page.get_by_test_id("cluster-form-error")).to_contain_text("quota now 0")
    expect(page.get_by_test_id("plan-preflight")).to_have_attribute("data-ok", "")
    expect(page.get_by_test_id("preflight-fix-instance_quota")).to_contain_text("ask for more")
    expect(page.get_by_test_id("cluster-create")).to_be_disabled()
    expect(page).to_have_url(re.compile(r"#/clusters/new$"))
    page.unroute_all()

    # a CIDR the API refuses is shown once, on its own field
    page.get_by_test_id("cluster-cidr").fill("10.0.0.0/20")
    refused = review_plan(page)
    assert refused.status == 422
    expect(page.get_by_test_id("error-cluster-cidr")).to_contain_text("/16 to /18")
    expect(page.get_by_test_id("cluster-cidr")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_test_id("cluster-form-error")).not_to_contain_text("/16 to /18")
    expect(page.get_by_test_id("cluster-cidr")).to_be_focused()
    page.get_by_test_id("cluster-cidr").fill("10.0.0.0/16")
    assert review_plan(page).status == 200
    expect(page.get_by_test_id("error-cluster-cidr")).to_be_empty()
    expect(page.get_by_test_id("cluster-cidr")).to_have_attribute("aria-invalid", "false")


def test_viewer_sees_cluster_controls_disabled(page, stack, rest_cluster):
    name, create_op = rest_cluster
    sign_in(page, stack, stack.viewer_token, "viewer")
    page.get_by_test_id("nav-clusters").click()
    expect(page.get_by_test_id("cluster-new")).to_be_disabled()
    expect(page.get_by_test_id("cluster-import")).to_be_disabled()
    expect(page.get_by_test_id("clusters-role-hint")).to_be_visible()
    row = page.get_by_test_id(f"cluster-row-{name}")
    expect(row).to_be_visible(timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id(f"cluster-activate-{name}")).to_be_disabled()
    expect(page.get_by_test_id(f"cluster-delete-{name}")).to_be_disabled()
    # what it costs per hour while it runs, beside it in the list, as the API prices it
    with stack.client("viewer") as c:
        cost = c.get(f"/api/v1/clusters/{name}/cost").json()
    expect(row.get_by_test_id("cluster-hourly")).to_have_attribute(
        "data-hourly", f"{cost['hourly']['hourly_usd']:.4f}", timeout=AWS_READ_TIMEOUT_MS)

    row.get_by_test_id("cluster-link").click()
    expect(page).to_have_url(re.compile(rf"#/clusters/{re.escape(name)}$"))
    expect(page.get_by_test_id("stage-storage")).to_have_attribute("data-status", "succeeded")
    for stage in STAGES:
        expect(page.get_by_test_id(f"stage-rerun-{stage}")).to_be_disabled()
    expect(page.get_by_test_id("cluster-role-hint")).to_be_visible()
    expect(page.get_by_test_id(f"cluster-delete-{name}")).to_be_disabled()
    expect(page.get_by_test_id("cluster-kubeconfig")).to_be_enabled()  # reading is allowed
    # the cluster page links each page of its resources, drawn from the dashboard's routes
    links = page.get_by_test_id("cluster-pages").get_by_role("link")
    expect(links).to_have_count(len(CLUSTER_PAGES))
    assert [links.nth(i).get_attribute("href") for i in range(len(CLUSTER_PAGES))] == [
        f"#/clusters/{name}/{path}" for path in CLUSTER_PAGES]
    expect(page.get_by_test_id("cluster-create-op")).to_have_attribute(
        "href", f"#/operations/{create_op['id']}")
    # what it costs while it runs, as the API prices it (a viewer reads it)
    expect(page.get_by_test_id("cost-now-item-hyperpod_instances")).to_be_visible(
        timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id("cost-now-total")).not_to_be_empty()
    assert page.get_by_test_id("cost-accrued-items").locator("tr").count() == len(
        cost["accrued"]["items"])
    expect(page.get_by_test_id("cost-accrued-item-eks_control_plane")).to_contain_text("since")
    # the monthly budget: read, not set, by a viewer
    expect(page.get_by_test_id("cost-budget")).to_be_visible()
    expect(page.get_by_test_id("budget-set")).to_be_disabled()
    expect(page.get_by_test_id("budget-role-hint")).to_be_visible()

    # a viewer may review a plan (a dry run changes nothing) but not create. The form offers
    # the network, the Kubernetes version with its EKS support, and an FSx file system: a hypd
    # network is chosen from the list (saying which cluster uses it), sent as existing_vpc.
    network = name  # its create made the network of the same name
    page.goto(base(stack) + "/#/clusters/new")
    fill_decisions(page, _name("view"), count=1)
    # a new network by default, its CIDR's default and allowed range shown up front
    expect(page.get_by_test_id("network-choice-new")).to_be_checked()
    expect(page.get_by_test_id("cluster-cidr")).to_have_value("10.0.0.0/16")
    expect(page.get_by_test_id("cluster-cidr-hint")).to_contain_text("/16 to /18")
    # the versions the API offers, each with its EKS support from the document
    version = kubernetes_versions.default()
    support = kubernetes_versions.support_of(version)
    expect(page.get_by_test_id("cluster-k8s-version")).to_have_value(version)
    offered = page.get_by_test_id("cluster-k8s-version").locator("option")
    expect(offered).to_have_count(len(kubernetes_versions.offered()))
    expect(page.get_by_test_id("cluster-k8s-version").locator(f'option[value="{version}"]')
           ).to_contain_text(f"{support['support']} support")
    hint = page.get_by_test_id("cluster-k8s-version-hint")
    expect(hint).to_have_attribute("data-support", support["support"])
    # one of hypd's networks, with its VPC and the cluster using it
    page.get_by_test_id("network-choice-hypd").check(force=True)
    expect(page.get_by_test_id("cluster-cidr-fields")).to_be_hidden()
    choice = page.get_by_test_id("cluster-network")
    expect(choice.locator(f'option[value="{network}"]')).to_contain_text(f"used by {network}",
                                                                          timeout=AWS_READ_TIMEOUT_MS)
    choice.select_option(network)
    with stack.client("viewer") as c:
        made = c.get(f"/api/v1/networks/{network}").json()
    expect(page.get_by_test_id("cluster-network-vpc")).to_have_text(made["vpc_id"])
    expect(page.get_by_test_id("cluster-network-used-by")).to_have_text(f"Used by {network}")
    # and an FSx file system, by the API's rules
    page.get_by_test_id("cluster-fsx").check()
    page.get_by_test_id("cluster-fsx-capacity").fill("2400")
    planned = review_plan(page)
    assert planned.status == 200, planned.text()
    sent = planned.request.post_data_json
    assert sent["existing_vpc"] == {
        "vpc_id": made["vpc_id"],
        "subnet_ids": [s["id"] for s in made["subnets"] if s["role"] == "private"]}
    assert "cidr" not in sent and sent["kubernetes_version"] == version
    assert sent["fsx"] == {"storage_capacity_gib": 2400, "deployment_type": "PERSISTENT_2"}
    expect(page.get_by_test_id("plan-network")).to_have_text(
        f" · hypd network {network} ({made['vpc_id']})")
    if support["support"] == kubernetes_versions.EXTENDED:  # priced by the plan, not the page
        extended = next(i for i in planned.json()["cost"]["items"]
                        if i["kind"] == "eks_extended_support")
        expect(hint).to_contain_text(f"+${extended['unit_usd']:.2f}/h")
    expect(page.get_by_test_id("plan-cost")).to_be_visible()
    page_checks(page, "the new-cluster form, read-only")
    expect(page.get_by_test_id("cluster-create")).to_be_disabled()
    expect(page.get_by_test_id("cluster-role-hint")).to_be_visible()


def test_an_operator_sets_a_budget_sees_it_crossed_and_clears_it(page, stack, rest_cluster):
    """The cost panel's budget: set from its form (the API's bounds on the field), held
    against this month's cost, its state beside the rate in the clusters list, and cleared
    through the one confirmation."""
    name, _ = rest_cluster
    path = f"/api/v1/clusters/{name}/budget"
    sign_in(page, stack, stack.operator_token, "operator")
    page.goto(base(stack) + f"/#/clusters/{name}")
    box = page.get_by_test_id("cost-budget")
    expect(box).to_have_attribute("data-state", "unset", timeout=AWS_READ_TIMEOUT_MS)
    expect(box.get_by_test_id("budget-unset")).to_contain_text("No budget")
    amount = box.get_by_test_id("budget-amount")
    expect(amount).to_have_attribute("min", "0.01")
    try:
        amount.fill("250000")
        box.get_by_test_id("budget-set").click()
        expect(box).to_have_attribute("data-state", "under", timeout=AWS_READ_TIMEOUT_MS)
        expect(box.get_by_test_id("budget-summary")).to_contain_text("of $250,000.00 this month")
        # spend per day this month, drawn (and as a table), one bar per day so far
        with stack.client("viewer") as v:
            days = v.get(f"/api/v1/clusters/{name}/cost").json()["days"]
        bars = page.get_by_test_id("cost-days-bar")
        expect(bars).to_have_count(len(days))
        assert bars.last.get_attribute("data-date") == days[-1]["date"]
        expect(page.get_by_test_id("cost-days-chart")).to_have_attribute(
            "aria-label", re.compile(r"^Spend per day this month: .*budget allows"))
        page_checks(page, "the cost panel with a budget", within="[data-testid=cost-budget]")
        page_checks(page, "the spend chart", within="[data-testid=cost-days]")

        def spent() -> float:
            with stack.client("viewer") as v:
                return v.get(f"/api/v1/clusters/{name}/cost").json()["month"]["usd"]

        wait_until(lambda: spent() >= 0.02, 60, what="a few cents spent")
        amount.fill("0.01")
        box.get_by_test_id("budget-set").click()
        expect(box).to_have_attribute("data-state", "exceeded", timeout=AWS_READ_TIMEOUT_MS)
        expect(box.get_by_test_id("budget-state")).to_contain_text("Over budget")
        expect(box.get_by_test_id("budget-state")).to_contain_text("warned 80 %")
        with stack.client("viewer") as v:
            assert v.get(path).json()["state"] == "exceeded"

        page.get_by_test_id("nav-clusters").click()
        mark = page.get_by_test_id(f"cluster-row-{name}").get_by_test_id("cluster-budget")
        expect(mark).to_have_attribute("data-state", "exceeded", timeout=AWS_READ_TIMEOUT_MS)
        expect(mark).to_contain_text("budget")

        page.goto(base(stack) + f"/#/clusters/{name}")
        page.get_by_test_id("budget-clear").click()
        dialog = destroy_dialog(page, "budget", name, "clear-budget")
        dialog.get_by_test_id("destroy-dialog-confirm").click()
        expect(dialog).to_have_count(0)
        expect(page.get_by_test_id("cost-budget")).to_have_attribute(
            "data-state", "unset", timeout=AWS_READ_TIMEOUT_MS)
        with stack.client("viewer") as v:
            assert v.get(path).json()["monthly_usd"] is None
    finally:
        with stack.client() as c:
            c.delete(path)


def test_deleting_the_network_under_a_cluster_shows_the_cluster_using_it(page, stack,
                                                                        rest_cluster):
    name, _ = rest_cluster  # its create made the network of the same name
    sign_in(page, stack, stack.operator_token, "operator")
    page.get_by_test_id("nav-networks").click()
    delete = page.get_by_test_id(f"network-delete-{name}")
    expect(delete).to_be_visible(timeout=AWS_READ_TIMEOUT_MS)
    # the list says which cluster uses the network before any delete is tried
    expect(page.get_by_test_id(f"network-row-{name}").get_by_test_id("network-used-by")
           ).to_have_text(f"used by {name}")
    delete.click()  # the one dialog: its dry run shows what uses the network
    dialog = destroy_dialog(page, "network", name, "network-delete")
    plan_read(dialog)
    used = dialog.get_by_test_id("destroy-dependents")
    cluster = used.locator(f'[data-kind="cluster"][data-name="{name}"]')
    expect(cluster).to_contain_text(f"cluster {name}")
    expect(cluster).to_contain_text("EKS cluster (ACTIVE, made by hypd)")
    # a network cannot be forced: no name to type, the reason instead, and no confirm
    expect(used.get_by_test_id("destroy-no-force")).to_be_visible()
    expect(dialog.get_by_test_id("destroy-typed")).to_be_hidden()
    expect(dialog.get_by_test_id("destroy-dialog-confirm")).to_be_disabled()
    cancel(dialog)
    with stack.client("viewer") as c:  # nothing was recorded
        ops = c.get("/api/v1/operations", params={"target": f"network/{name}"}).json()["items"]
    assert not [o for o in ops if o["kind"] == "network.delete"]


def test_a_price_the_price_list_cannot_give_is_shown_as_unknown(page, stack):
    sign_in(page, stack, stack.viewer_token, "viewer")  # a viewer may review a plan
    page.goto(base(stack) + "/#/clusters/new")
    fill_decisions(page, _name("nop"), count=1)
    # nothing cached: the plan must ask (after the clusters list, which prices each cluster)
    conn = stack.redis()
    for key in conn.scan_iter("hypd:cache:price:*"):
        conn.delete(key)
    stack.sandbox.add_fault("pricing", "GetProducts", "throttle", count=10)
    try:
        planned = review_plan(page)
    finally:
        stack.sandbox.clear_faults()
    assert planned.status == 200, planned.text()
    cost = planned.json()["cost"]
    expect(page.get_by_test_id("plan-cost")).to_have_attribute("data-complete", "")
    expect(page.get_by_test_id("plan-cost-source")).to_contain_text("no price could be read")
    for item in cost["items"]:
        none = page.get_by_test_id(f"plan-cost-none-{item['kind']}")
        expect(none).to_have_text("price unknown")
        expect(page.get_by_test_id(f"plan-cost-item-{item['kind']}")).to_contain_text(
            "the AWS Price List is throttling hypd")
    expect(page.get_by_test_id("plan-cost-total")).to_have_text(re.compile(r"\$0"))


def test_imported_cluster_is_forgotten_and_aws_untouched(page, stack, rest_cluster):
    _, create_op = rest_cluster
    stack.wait_idle()
    name = _name("imp")
    aws = {"region_name": "us-west-2", "endpoint_url": stack.env["AWS_ENDPOINT_URL"],
           "aws_access_key_id": stack.env["AWS_ACCESS_KEY_ID"],
           "aws_secret_access_key": stack.env["AWS_SECRET_ACCESS_KEY"]}
    eks = boto3.client("eks", **aws)
    role = boto3.client("iam", **aws).create_role(
        RoleName=f"outside-{name}", AssumeRolePolicyDocument="{}")["Role"]
    subnets = next(s for s in create_op["steps"] if s["name"] == "subnets")["resources"]
    eks.create_cluster(name=name, roleArn=role["Arn"],
                       resourcesVpcConfig={"subnetIds": subnets["private_subnet_ids"]})

    # imported from its page: each refusal where it belongs, then the cluster's page
    sign_in(page, stack, stack.operator_token, "operator")
    page.get_by_test_id("cluster-import").click()
    expect(page).to_have_url(re.compile(r"#/clusters/import$"))
    page.get_by_test_id("import-name").fill("not a name!")
    page.get_by_test_id("import-submit").click()
    expect(page.get_by_test_id("error-import-name")).to_have_text("Not an EKS cluster name.")
    page.get_by_test_id("import-name").fill(f"{name}-none")
    with page.expect_response(lambda r: r.url.endswith("/clusters/import")) as missing:
        page.get_by_test_id("import-submit").click()
    assert missing.value.status == 404
    expect(page.get_by_test_id("import-form-error")).to_have_text(
        missing.value.json()["error"]["message"])
    expect(page.get_by_test_id("error-import-name")).to_be_empty()
    page.get_by_test_id("import-name").fill(name)
    with page.expect_request(lambda r: r.url.endswith("/clusters/import")) as posted:
        page.get_by_test_id("import-submit").click()
    assert posted.value.post_data_json == {"name": name}
    expect(page).to_have_url(re.compile(rf"#/clusters/{re.escape(name)}$"))
    expect(page.get_by_test_id("cluster-stages-imported")).to_be_visible(
        timeout=AWS_READ_TIMEOUT_MS)
    with stack.client() as c:
        listed = {i["name"]: i for i in c.get("/api/v1/clusters").json()["items"]}
    assert listed[name]["imported"] is True

    page.get_by_test_id("back-to-clusters").click()
    row = page.get_by_test_id(f"cluster-row-{name}")
    expect(row).to_be_visible(timeout=AWS_READ_TIMEOUT_MS)
    expect(row).to_have_attribute("data-imported", "1")
    expect(row.get_by_test_id("cluster-imported")).to_be_visible()
    forget = page.get_by_test_id(f"cluster-delete-{name}")
    expect(forget).to_have_text("Forget")

    row.get_by_test_id("cluster-link").click()
    expect(page.get_by_test_id("cluster-stages-imported")).to_be_visible()
    page.get_by_test_id("back-to-clusters").click()

    page.get_by_test_id(f"cluster-delete-{name}").click()
    dialog = destroy_dialog(page, "imported cluster", name, "cluster-delete")
    expect(dialog).to_contain_text("Nothing in AWS is touched")
    expect(dialog.get_by_test_id("cluster-delete-data")).to_have_count(0)
    expect(dialog.get_by_test_id("destroy-typed")).to_be_hidden()
    with page.expect_response(lambda r: r.request.method == "DELETE"
                              and "dry_run" not in r.url) as forgetting:
        dialog.get_by_test_id("destroy-dialog-confirm").click()
    assert forgetting.value.status == 200, forgetting.value.text()
    expect(page.get_by_test_id(f"cluster-row-{name}")).to_have_count(0, timeout=AWS_READ_TIMEOUT_MS)
    assert name in eks.list_clusters()["clusters"]
    # its owner removes it: running in the fixture's network, it would refuse that delete
    eks.delete_cluster(name=name)
