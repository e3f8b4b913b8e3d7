"""A cluster's capacity page in a real browser: an operator adds a spot instance group from the
form (preflight first) and follows it to the list; changes its count by an explicit diff, and
sees "no change" when the group already is as asked; filters the nodes by group and health,
opens one node, and reboots more than one batch of nodes, the progress panel showing each
batch; updates the node software; deletes the group past the pods that cannot move. A viewer
sees it all with every change disabled.

One cluster (30 + 2 nodes on the sandbox) serves the whole module. Fixtures `browser` and
`page` (which fails on uncaught JS errors) are in tests/e2e/conftest.py.
"""

from __future__ import annotations

import itertools
import os
import re
import secrets
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

from tests.e2e.helpers import (
    AWS_READ_TIMEOUT_MS,
    OPERATION_TIMEOUT_MS,
    UUID_RE,
    axe_check,
    base,
    cancel,
    dark,
    destroy_dialog,
    page_checks,
    plan_read,
    sign_in,
)
from vocabulary import kubernetes_versions

pytestmark = pytest.mark.browser
FROM_VERSION, TO_VERSION = kubernetes_versions.offered()[-2:]

SCREENSHOTS = Path(os.environ.get("HYPD_TEST_ARTIFACTS")
                   or tempfile.gettempdir()) / "hypd-screenshots"
"""Where the page walk keeps each page's screenshots (set HYPD_TEST_ARTIFACTS to keep them)."""

ZONE = "us-west-2a"
TYPE = "ml.g4dn.xlarge"  # few addresses a node: a small /20 holds many
PRICED_TYPE = "ml.g5.xlarge"  # in the sandbox's Price List
WORKERS = 30  # more than one batch of AWS's 25
HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
OP_URL = re.compile(r"#/operations/([^/?#]+)$")


@pytest.fixture(scope="module")
def cluster(stack):
    """A cluster made through REST at the last Kubernetes version but one (so there is a
    version to upgrade to) with WORKERS nodes in group `workers`; deleted after the module."""
    stack.wait_idle()
    name = f"cap-{secrets.token_hex(3)}"
    with stack.client() as c:
        # the first AWS reads of a fresh stack on a loaded machine can take a while
        reply = c.post("/api/v1/clusters", timeout=120, json={
            "name": name, "availability_zone": ZONE, "instance_type": TYPE,
            "instance_count": WORKERS, "kubernetes_version": FROM_VERSION})
    assert reply.status_code == 202, reply.text
    op = stack.wait_operation(reply.json()["operation"]["id"], timeout=300)
    assert op["status"] == "succeeded", op
    yield name
    stack.wait_idle()
    with stack.client() as c:
        gone = c.delete(f"/api/v1/clusters/{name}")
    if gone.status_code == 202:
        stack.wait_operation(gone.json()["operation"]["id"], timeout=300)


def open_capacity(page, stack, cluster):
    """From the cluster's page, by its link (the page is reachable from #/clusters/<name>)."""
    page.goto(f"{base(stack)}/#/clusters/{cluster}")
    page.get_by_test_id("cluster-capacity-link").click()
    expect(page).to_have_url(re.compile(rf"#/clusters/{re.escape(cluster)}/capacity$"))
    expect(page.get_by_test_id("ig-row-workers")).to_be_visible(timeout=AWS_READ_TIMEOUT_MS)


def op_id(page) -> str:
    expect(page).to_have_url(OP_URL, timeout=AWS_READ_TIMEOUT_MS)
    return OP_URL.search(page.url).group(1)


def follow(page, kind: str) -> str:
    """On the progress panel: the operation of `kind` reaches succeeded; back to capacity."""
    found = op_id(page)
    expect(page.get_by_test_id("op-kind")).to_have_text(kind)
    expect(page.get_by_test_id("op-status")).to_have_text("succeeded", timeout=OPERATION_TIMEOUT_MS)
    return found


def _group_url(cluster: str, group: str = "") -> str:
    return f"/api/v1/clusters/{cluster}/instance-groups{f'/{group}' if group else ''}"


def _ensure_spot_group(stack, cluster: str) -> None:
    """The spot group the first test adds, made through REST if that test did not run."""
    with stack.client() as c:
        if c.get(_group_url(cluster, "spot")).status_code == 200:
            return
        reply = c.post(_group_url(cluster), json={
            "name": "spot", "instance_type": TYPE, "instance_count": 2, "capacity_type": "spot"})
    assert reply.status_code == 202, reply.text
    assert stack.wait_operation(reply.json()["operation"]["id"], 120)["status"] == "succeeded"


def test_operator_adds_a_spot_group_then_changes_its_count(page, stack, cluster):
    sign_in(page, stack, stack.operator_token, "operator")
    open_capacity(page, stack, cluster)
    page.get_by_test_id("ig-add").click()
    expect(page).to_have_url(re.compile(r"/capacity/add-group$"))

    # the decisions: the zone preselected from the cluster's group, a type offered there
    page.get_by_test_id("ig-name").fill("spot")
    expect(page.get_by_test_id("ig-az")).to_have_value(ZONE, timeout=AWS_READ_TIMEOUT_MS)
    page.get_by_test_id("ig-type").select_option(TYPE, timeout=AWS_READ_TIMEOUT_MS)
    page.get_by_test_id("ig-count").fill("2")
    # a priced type on demand first: the check says what the group adds per hour, as the API
    # priced it (the sandbox's Price List has no price for TYPE)
    page.get_by_test_id("ig-type").select_option(PRICED_TYPE)
    with page.expect_response(lambda r: "/api/v1/preflight?" in r.url) as on_demand:
        page.get_by_test_id("ig-check").click()
    adds = on_demand.value.json()["adds"]
    assert adds["complete"] and adds["hourly_usd"] > 0, adds
    expect(page.get_by_test_id("ig-adds")).to_have_attribute(
        "data-hourly", f"{adds['hourly_usd']:.4f}")
    expect(page.get_by_test_id("ig-adds")).to_contain_text(" per hour (≈ ")
    page.get_by_test_id("ig-type").select_option(TYPE)
    page.get_by_test_id("capacity-spot").check(force=True)
    create = page.get_by_test_id("ig-create")
    expect(create).to_be_disabled()  # not checked yet
    with page.expect_response(lambda r: "/api/v1/preflight?" in r.url) as checked:
        page.get_by_test_id("ig-check").click()
    assert checked.value.status == 200
    assert "capacity_type=spot" in checked.value.url and "count=2" in checked.value.url
    [spot] = checked.value.json()["adds"]["items"]  # spot: no fixed price, and it says so
    expect(page.get_by_test_id("ig-adds")).to_have_text(
        f"Adds no hourly list price: {spot['note']}")
    expect(page.get_by_test_id("plan-preflight")).to_have_attribute("data-ok", "1")
    expect(create).to_be_enabled()
    page.get_by_test_id("ig-count").fill("3")  # a changed input makes the check stale
    expect(create).to_be_disabled()
    expect(page.get_by_test_id("ig-create-hint")).to_have_attribute("data-state", "stale")
    page.get_by_test_id("ig-count").fill("2")
    expect(create).to_be_enabled()

    # a subnet outside the cluster's VPC passes the check (quotas) but the API refuses the
    # add on its field; the next check clears it
    page.get_by_test_id("placement-subnet").check(force=True)
    subnet = page.get_by_test_id("ig-subnet")
    subnet.fill("subnet-0123456789abcdef0")
    with page.expect_response(lambda r: "/api/v1/preflight?" in r.url):
        page.get_by_test_id("ig-check").click()
    expect(create).to_be_enabled()
    with page.expect_response(lambda r: r.request.method == "POST") as refused:
        create.click()
    assert refused.value.status == 422, refused.value.text()
    expect(page.get_by_test_id("error-ig-subnet_id")).to_contain_text("not in the cluster's VPC")
    expect(subnet).to_have_attribute("aria-invalid", "true")
    expect(subnet).to_be_focused()
    expect(page.get_by_test_id("ig-form-error")).to_be_empty()  # said once, on its field
    page.get_by_test_id("placement-zone").check(force=True)
    with page.expect_response(lambda r: "/api/v1/preflight?" in r.url):
        page.get_by_test_id("ig-check").click()
    expect(page.get_by_test_id("error-ig-subnet_id")).to_be_empty()
    expect(subnet).to_have_attribute("aria-invalid", "false")
    expect(create).to_be_enabled()

    with page.expect_request(lambda r: r.method == "POST"
                             and r.url.endswith(_group_url(cluster))) as posted:
        create.click()
    # (the type has no EFA interface, so no EFA mode is sent: the API makes it without)
    expect(page.get_by_test_id("ig-type-efa")).to_have_text("no EFA")
    assert posted.value.post_data_json == {
        "name": "spot", "instance_type": TYPE, "instance_count": 2, "capacity_type": "spot",
        "deep_health_checks": False, "availability_zone": ZONE}
    assert UUID_RE.match(posted.value.headers.get("idempotency-key", ""))
    follow(page, "instance_group.create")
    expect(page.get_by_test_id("op-target")).to_have_text(f"cluster/{cluster}/group/spot")

    # it is in the list: spot, 2 of 2, in the zone
    page.get_by_test_id("op-capacity-link").click()
    row = page.get_by_test_id("ig-row-spot")
    expect(row).to_be_visible(timeout=AWS_READ_TIMEOUT_MS)
    expect(row).to_have_attribute("data-capacity", "spot")
    expect(row.get_by_test_id("ig-capacity")).to_contain_text("Spot")
    expect(row.get_by_test_id("ig-count")).to_have_attribute("data-target", "2")
    expect(row.get_by_test_id("ig-zone")).to_contain_text(ZONE)

    # change its count: only the count is sent; the fixed fields are shown, not editable
    page.get_by_test_id("ig-edit-spot").click()
    dialog = page.get_by_test_id("ig-edit-dialog")
    expect(dialog.get_by_test_id("ig-fixed-capacity_type")).to_contain_text("Spot")
    expect(dialog.get_by_test_id("ig-edit-fixed-why")).to_contain_text("add a new instance group")
    # a count out of range is said on its field (where the API's refusal would land too)
    dialog.get_by_test_id("ig-edit-count").fill("-1")
    dialog.get_by_test_id("ig-edit-dialog-confirm").click()
    expect(dialog.get_by_test_id("error-ig-edit-dialog-instance_count")).to_contain_text(
        "A whole number")
    expect(dialog.get_by_test_id("ig-edit-count")).to_have_attribute("aria-invalid", "true")
    dialog.get_by_test_id("ig-edit-count").fill("3")
    with page.expect_request(lambda r: r.method == "PATCH") as patched:
        dialog.get_by_test_id("ig-edit-dialog-confirm").click()
    assert patched.value.post_data_json == {"instance_count": 3}
    follow(page, "instance_group.update")
    page.get_by_test_id("op-capacity-link").click()
    expect(page.get_by_test_id("ig-row-spot").get_by_test_id("ig-count")).to_have_attribute(
        "data-target", "3", timeout=AWS_READ_TIMEOUT_MS)

    # the same count is nothing to send; a count the group already has (changed meanwhile
    # elsewhere) is sent and answered "no change"
    page.get_by_test_id("ig-edit-spot").click()
    dialog = page.get_by_test_id("ig-edit-dialog")
    patches = []
    page.on("request", lambda r: patches.append(r.url) if r.method == "PATCH" else None)
    dialog.get_by_test_id("ig-edit-dialog-confirm").click()
    expect(dialog.get_by_test_id("ig-edit-result")).to_have_attribute("data-result", "unchanged")
    assert patches == []
    with stack.client() as c:
        elsewhere = c.patch(_group_url(cluster, "spot"), json={"instance_count": 2})
    assert elsewhere.status_code == 202, elsewhere.text
    assert stack.wait_operation(elsewhere.json()["operation"]["id"], 120)["status"] == "succeeded"
    dialog.get_by_test_id("ig-edit-count").fill("2")
    with page.expect_response(lambda r: r.request.method == "PATCH") as answered:
        dialog.get_by_test_id("ig-edit-dialog-confirm").click()
    assert answered.value.status == 200 and answered.value.json()["changed"] is False
    result = dialog.get_by_test_id("ig-edit-result")
    expect(result).to_have_attribute("data-result", "no-change")
    expect(result).to_contain_text("No change")
    expect(page).to_have_url(re.compile(r"/capacity$"))  # no operation to follow
    dialog.get_by_test_id("ig-edit-dialog-cancel").click()


def _label_health(stack, cluster: str, node_ids: list[str], value: str) -> None:
    kube = stack.kube(cluster)
    for node_id in node_ids:
        kube.label_node(f"hyperpod-{node_id}", {HEALTH_LABEL: value})
    stack.redis().delete(f"hypd:cache:nodes:{cluster}")  # the listing's few-second cache


def _workers(stack, cluster: str) -> list[str]:
    with stack.client("viewer") as c:
        page = c.get(f"/api/v1/clusters/{cluster}/nodes",
                     params={"instance_group": "workers", "limit": 500}).json()
    return [n["id"] for n in page["items"]]


def test_nodes_filter_open_one_and_bulk_reboot_in_batches(page, stack, cluster):
    stack.wait_idle()
    workers = _workers(stack, cluster)
    assert len(workers) == WORKERS
    sick = workers[3:5]
    _label_health(stack, cluster, sick, "UnschedulablePendingReboot")
    try:
        sign_in(page, stack, stack.operator_token, "operator")
        open_capacity(page, stack, cluster)

        # health at a glance: the two flagged nodes; a click filters on them
        chip = page.get_by_test_id("nodes-health-UnschedulablePendingReboot")
        expect(chip).to_have_attribute("data-count", "2")
        chip.click()
        expect(page.get_by_test_id("nodes-filter-health")).to_have_value("UnschedulablePendingReboot")
        expect(page).to_have_url(re.compile(r"health=UnschedulablePendingReboot"))
        rows = page.locator("[data-testid=nodes-body] tr[data-id]")
        expect(rows).to_have_count(2)
        assert sorted(rows.nth(i).get_attribute("data-id") for i in range(2)) == sorted(sick)

        # investigate one: conditions, health, pods; the escalation starts here
        page.get_by_test_id(f"node-row-{sick[0]}").get_by_test_id("node-open").click()
        detail = page.get_by_test_id("node-detail")
        expect(detail.get_by_test_id("node-detail-health")).to_have_text(
            "UnschedulablePendingReboot", timeout=AWS_READ_TIMEOUT_MS)
        expect(detail.get_by_test_id("node-condition-Ready")).to_have_attribute(
            "data-status", "True")
        expect(detail.get_by_test_id("node-escalation")).to_have_attribute(
            "data-current", "investigate")
        # its reboot dialog names the node it would reboot; cancelled, nothing is sent
        detail.get_by_test_id("node-detail-reboot").click()
        dialog = destroy_dialog(page, "node", sick[0], "node-reboot")
        expect(dialog.get_by_test_id("destroy-dialog-title")).to_have_text(
            f"Reboot node {sick[0]}?")
        expect(dialog.get_by_test_id("destroy-dialog-confirm")).to_have_text(
            f"Reboot node {sick[0]}")
        cancel(dialog)

        # by group: every worker, and only workers, in pages of 20 cut by cursor
        page.get_by_test_id("nodes-filter-health").select_option("")
        page.get_by_test_id("nodes-filter-group").select_option("workers")
        expect(page.get_by_test_id("nodes-total")).to_have_attribute("data-total", str(WORKERS))
        with page.expect_response(lambda r: "limit=20" in r.url):
            page.get_by_test_id("nodes-page-size").select_option("20")
        expect(rows).to_have_count(20)
        first_page = [rows.nth(i).get_attribute("data-id") for i in range(20)]
        with page.expect_response(lambda r: "cursor=" in r.url) as paged:
            page.get_by_test_id("nodes-next").click()
        assert f"cursor={first_page[-1]}" in paged.value.url
        expect(rows).to_have_count(WORKERS - 20)
        second_page = [rows.nth(i).get_attribute("data-id") for i in range(WORKERS - 20)]
        assert first_page + second_page == workers  # every worker once, in id order
        assert {rows.nth(i).get_attribute("data-group") for i in range(WORKERS - 20)} == {"workers"}
        expect(page.get_by_test_id("nodes-next")).to_be_disabled()
        page.get_by_test_id("nodes-prev").click()
        expect(rows.first).to_have_attribute("data-id", first_page[0])

        # bulk: every matching node, across pages → reboot: the confirmation says what
        # happens to pods and how the nodes split into AWS's batches
        page.get_by_test_id("nodes-select-all").click()
        expect(page.get_by_test_id("nodes-selected")).to_have_attribute("data-count", str(WORKERS))
        # replace and delete ask once through the same dialog, naming what they act on;
        # cancelled, nothing is sent
        for action in ("replace", "delete"):
            page.get_by_test_id(f"nodes-{action}").click()
            dialog = destroy_dialog(page, f"{WORKERS} nodes of cluster", cluster, f"node-{action}")
            plan_read(dialog)
            cancel(dialog)
        page.get_by_test_id("nodes-reboot").click()
        dialog = destroy_dialog(page, f"{WORKERS} nodes of cluster", cluster, "node-reboot")
        expect(dialog.get_by_test_id("node-action-pods")).to_contain_text("disrupted")
        expect(dialog.get_by_test_id("node-escalation")).to_have_attribute("data-current", "reboot")
        expect(dialog.get_by_test_id("node-action-batches")).to_have_attribute("data-count", "2")
        expect(dialog.get_by_test_id("node-action-batch-1")).to_have_attribute("data-count", "25")
        expect(dialog.get_by_test_id("node-action-batch-2")).to_have_attribute("data-count", "5")
        with page.expect_request(lambda r: r.method == "POST"
                                 and r.url.endswith("/nodes/reboot")) as posted:
            dialog.get_by_test_id("destroy-dialog-confirm").click()
        assert posted.value.post_data_json == {"node_ids": workers}

        # the progress panel: one step per batch, each readable, each reaching succeeded
        follow(page, "nodes.reboot")
        steps = page.locator("[data-testid=steps] [data-step]")
        expect(steps).to_have_count(2)
        for name in ("batch_1", "batch_2"):
            expect(page.get_by_test_id(f"step-{name}")).to_have_attribute("data-phase", "succeeded")
        for name, first, last in (("batch_1", 1, 25), ("batch_2", 26, WORKERS)):
            span = page.get_by_test_id(f"step-batch-{name}")
            expect(span).to_have_attribute("data-first", str(first))
            expect(span).to_have_attribute("data-last", str(last))
            expect(span).to_contain_text(f"of {WORKERS} · {last - first + 1} sent to HyperPod")
        expect(page.get_by_test_id("steps-count")).to_contain_text("2 of 2 batches succeeded")
        # the events: a step that said again what it waits for is one line that counts
        shown = page.get_by_test_id("events").locator("li").evaluate_all(
            "items => items.map(li => li.dataset.same)")
        assert shown and all(a != b for a, b in itertools.pairwise(shown)), shown
    finally:
        _label_health(stack, cluster, sick, "Schedulable")


def test_every_page_passes_axe_and_shows_no_unfilled_value(page, stack, cluster):
    """Every page of the dashboard, on this module's cluster, and the one destructive
    dialog: axe-core (run in the page) finds no serious or critical violation, and no text
    says null, undefined, NaN, [object Object] or names an internal document."""
    _ensure_spot_group(stack, cluster)  # so that workers is not the last group
    page.goto(f"{base(stack)}/")
    expect(page.get_by_test_id("token-input")).to_be_visible()
    page_checks(page, "sign-in")
    with dark(page):
        axe_check(page, "sign-in (dark)")
    sign_in(page, stack, stack.operator_token, "operator")
    with stack.client("viewer") as c:
        ops = c.get("/api/v1/operations", params={"target": f"cluster/{cluster}"}).json()["items"]
    routes = ["clusters", f"clusters/{cluster}", f"clusters/{cluster}/capacity",
              f"clusters/{cluster}/capacity/add-group", f"clusters/{cluster}/jobs",
              f"clusters/{cluster}/endpoints", f"clusters/{cluster}/models",
              f"clusters/{cluster}/spaces", f"clusters/{cluster}/teams",
              f"clusters/{cluster}/storage", "clusters/new",
              "clusters/import", "networks", "operations",
              f"operations/{ops[-1]['id']}", "discovery", "audit"]
    shots = SCREENSHOTS / "pages"
    shots.mkdir(parents=True, exist_ok=True)
    for route in routes:
        page.goto(f"{base(stack)}/#/{route}")
        expect(page.get_by_test_id("view")).not_to_be_empty()
        page_checks(page, f"#/{route}")
        # looked at: the page at 1280 and 1920 px, kept with the test artifacts
        for width in (1280, 1920):
            page.set_viewport_size({"width": width, "height": 860})
            page.screenshot(path=shots / f"{route.replace('/', '_')}-{width}.png", full_page=True)
        page.set_viewport_size({"width": 1280, "height": 860})
        # and in the dark theme: axe again (its contrast), and how it looks at 1280 px
        with dark(page):
            axe_check(page, f"#/{route} (dark)")
            page.screenshot(path=shots / f"{route.replace('/', '_')}-1280-dark.png",
                            full_page=True)
    # the one confirmation, open with its plan
    open_capacity(page, stack, cluster)
    page.get_by_test_id("ig-delete-workers").click()
    dialog = destroy_dialog(page, "instance group", "workers", "ig-delete")
    plan_read(dialog)
    page_checks(page, "the delete dialog of an instance group", within="dialog[open]")
    with dark(page):
        axe_check(page, "the delete dialog of an instance group (dark)", within="dialog[open]")
    cancel(dialog)


def test_viewer_sees_capacity_read_only(page, stack, cluster):
    sign_in(page, stack, stack.viewer_token, "viewer")
    open_capacity(page, stack, cluster)
    expect(page.get_by_test_id("capacity-role-hint")).to_be_visible()
    for testid in ("ig-add", "ig-edit-workers", "ig-delete-workers", "cluster-software-update",
                   "cluster-k8s-upgrade", "nodes-reboot", "nodes-replace", "nodes-delete"):
        expect(page.get_by_test_id(testid)).to_be_disabled()
    # reading is allowed: select nodes, open one — its actions stay disabled
    rows = page.locator("[data-testid=nodes-body] tr[data-id]")
    expect(rows.first).to_be_visible(timeout=AWS_READ_TIMEOUT_MS)
    rows.first.get_by_test_id("node-select").check()
    expect(page.get_by_test_id("nodes-selected")).to_have_attribute("data-count", "1")
    expect(page.get_by_test_id("nodes-reboot")).to_be_disabled()
    rows.first.get_by_test_id("node-open").click()
    detail = page.get_by_test_id("node-detail")
    expect(detail.get_by_test_id("node-detail-status")).to_be_visible(timeout=AWS_READ_TIMEOUT_MS)
    for action in ("reboot", "replace", "delete"):
        expect(detail.get_by_test_id(f"node-detail-{action}")).to_be_disabled()
    # the add form: a viewer may check preflight, not add
    page.goto(f"{base(stack)}/#/clusters/{cluster}/capacity/add-group")
    expect(page.get_by_test_id("ig-create")).to_be_disabled()
    expect(page.get_by_test_id("ig-role-hint")).to_be_visible()


def test_operator_updates_software_and_deletes_a_group_past_its_pods(page, stack, cluster):
    stack.wait_idle()
    _ensure_spot_group(stack, cluster)
    sign_in(page, stack, stack.operator_token, "operator")
    open_capacity(page, stack, cluster)

    # Kubernetes: the next minor version is offered (the upgrade itself is tested by REST)
    upgrade = page.get_by_test_id("cluster-k8s-upgrade")
    expect(upgrade).to_have_text(re.compile(rf"to {re.escape(TO_VERSION)}"))
    upgrade.click()
    expect(page.get_by_test_id("upgrade-dialog")).to_contain_text(
        f"from {FROM_VERSION} to {TO_VERSION}")
    page.get_by_test_id("upgrade-dialog-cancel").click()

    # node software: every group unless narrowed; its own operation, followed to the end
    page.get_by_test_id("cluster-software-update").click()
    dialog = page.get_by_test_id("software-dialog")
    dialog.get_by_test_id("software-group-spot").uncheck()
    with page.expect_request(lambda r: r.method == "POST"
                             and r.url.endswith("/software-update")) as posted:
        dialog.get_by_test_id("software-dialog-confirm").click()
    assert posted.value.post_data_json == {"instance_groups": ["workers"]}
    follow(page, "cluster.software_update")

    # a bare pod on the spot group would be lost: the delete is refused, naming it; force
    with stack.client("viewer") as c:
        spot = c.get(f"/api/v1/clusters/{cluster}/nodes",
                     params={"instance_group": "spot"}).json()["items"]
    kube = stack.kube(cluster)
    kube.create_pod({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "scratch", "namespace": "default"},
                     "spec": {"nodeName": f"hyperpod-{spot[0]['id']}",
                              "containers": [{"name": "c", "image": "x"}]},
                     "status": {"phase": "Running"}})
    try:
        page.goto(f"{base(stack)}/#/clusters/{cluster}/capacity")
        page.get_by_test_id("ig-delete-spot").click()
        # the one dialog: its dry run names the pod; the confirm waits for the group's name
        dialog = destroy_dialog(page, "instance group", "spot", "ig-delete")
        plan_read(dialog)
        pod = dialog.get_by_test_id("destroy-dependent")
        expect(pod).to_have_attribute("data-name", "scratch")
        expect(pod).to_contain_text("pod default/scratch")
        expect(pod).to_contain_text("no controller recreates it elsewhere")
        confirm = dialog.get_by_test_id("destroy-dialog-confirm")
        expect(confirm).to_be_disabled()
        dialog.get_by_test_id("destroy-typed").fill("spo")
        expect(confirm).to_be_disabled()
        dialog.get_by_test_id("destroy-typed").fill("spot")
        expect(confirm).to_have_text("Delete anyway")
        with page.expect_request(lambda r: r.method == "DELETE"
                                 and "dry_run" not in r.url) as forced:
            confirm.click()
        assert forced.value.url.endswith(_group_url(cluster, "spot") + "?force=true")
        follow(page, "instance_group.delete")
    finally:
        kube.delete_object("v1", "Pod", "scratch", "default")
    page.get_by_test_id("op-capacity-link").click()
    expect(page.get_by_test_id("ig-row-workers")).to_be_visible(timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id("ig-row-spot")).to_have_count(0)


def test_storage_is_added_refused_on_its_field_and_removed_from_its_page(page, stack, cluster):
    """The storage page adds what the API adds (a new bucket hypd makes, mounted by a claim of
    the item's name), puts a refusal on the field it names, and removes the item through
    its dialog."""
    sign_in(page, stack, stack.operator_token, "operator")
    page.goto(f"{base(stack)}/#/clusters/{cluster}")
    page.get_by_test_id("cluster-storage-link").click()
    expect(page).to_have_url(re.compile(rf"#/clusters/{re.escape(cluster)}/storage$"))
    with stack.client() as c:
        made_with_the_cluster = c.get(f"/api/v1/clusters/{cluster}/storage").json()["items"]
    for item in made_with_the_cluster:
        expect(page.get_by_test_id(f"storage-row-{item['name']}")).to_have_attribute(
            "data-state", item["state"], timeout=AWS_READ_TIMEOUT_MS)

    # checked in the page first, then by the API: each refusal on its own field
    page.get_by_test_id("storage-name").fill("scratch")
    page.get_by_test_id("storage-bucket").fill("Not_A_Bucket")
    page.get_by_test_id("storage-add").click()
    expect(page.get_by_test_id("error-storage-s3.bucket")).to_have_text("Not an S3 bucket name.")
    expect(page.get_by_test_id("storage-bucket")).to_have_attribute("aria-invalid", "true")
    page.get_by_test_id("storage-bucket").fill("")
    page.get_by_test_id("storage-kind").select_option("fsx")
    page.get_by_test_id("storage-capacity").fill("1300")  # not 1200 nor a multiple of 2400
    with page.expect_response(lambda r: r.url.endswith("/storage")
                              and r.request.method == "POST") as refused:
        page.get_by_test_id("storage-add").click()
    assert refused.value.status == 422
    expect(page.get_by_test_id("error-storage-fsx.storage_capacity_gib")).to_contain_text(
        "multiple of 2400")
    expect(page.get_by_test_id("error-storage-s3.bucket")).to_be_empty()  # cleared

    page.get_by_test_id("storage-kind").select_option("s3")
    with page.expect_request(lambda r: r.url.endswith("/storage")
                             and r.method == "POST") as posted:
        page.get_by_test_id("storage-add").click()
    assert posted.value.post_data_json == {
        "name": "scratch", "kind": "s3", "namespace": "default", "s3": {"read_only": False}}
    follow(page, "storage.create")
    with stack.client() as c:
        item = c.get(f"/api/v1/clusters/{cluster}/storage/scratch").json()
    assert (item["state"], item["claim"], item["s3"]["made_by_hypd"]) == (
        "available", "scratch", True)
    page.goto(f"{base(stack)}/#/clusters/{cluster}/storage")
    expect(page.get_by_test_id("storage-state-scratch")).to_have_text("available",
                                                                      timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id("storage-backing-scratch")).to_contain_text(
        f"s3://{item['s3']['bucket']}/")

    page_checks(page, "the storage page")
    page.get_by_test_id("storage-remove-scratch").click()
    dialog = destroy_dialog(page, "storage", "scratch", "storage-remove")
    plan_read(dialog)
    expect(dialog.get_by_test_id("destroy-remove").first).to_be_visible()
    dialog.get_by_test_id("destroy-dialog-confirm").click()
    follow(page, "storage.delete")
    with stack.client() as c:
        assert c.get(f"/api/v1/clusters/{cluster}/storage/scratch").status_code == 404
