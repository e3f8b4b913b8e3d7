"""The Dev spaces page in a real browser (1440 by 900), on a cluster with the spaces feature on:
reached from the cluster page; its create form filled from the cluster's groups and bounded by
the API's document; what the form or the API refuses shown on its field; a space created,
followed on the progress panel, opened (its access URL, in a new tab), stopped, started and
deleted through its dialog, which previews the dry run; a viewer's and another owner's
controls disabled with the reason; no console errors, and every control named for assistive
technology (Chromium's own accessibility tree: the suite has no axe)."""

from __future__ import annotations

import re
from typing import Any

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

from cloud import kube, spaces
from tests.app.featurekit import state
from tests.e2e.helpers import (
    AWS_READ_TIMEOUT_MS,
    OPERATION_TIMEOUT_MS,
    UI_TIMEOUT_MS,
    base,
    destroy_dialog,
    page_checks,
    plan_read,
    sign_in,
)

pytestmark = pytest.mark.browser

VIEWPORT = {"width": 1440, "height": 900}
# Chromium's roles for the controls a person acts on: each needs an accessible name
NAMED_ROLES = {"button", "link", "textbox", "spinbutton", "combobox", "checkbox", "radio",
               "listbox", "searchbox", "switch", "menuitem", "tab"}


@pytest.fixture(scope="module")
def cluster(stack, spaces_cluster):
    """The test process's spaces cluster (tests/conftest.py), shared with the other spaces
    tests: one node, the feature on."""
    name = spaces_cluster["name"]
    assert state(stack, name, "spaces") == "on"
    return name


@pytest.fixture(scope="module")
def theirs(stack, cluster):
    """A space made through REST, then given to another owner (its Workspace's owner
    annotation, as another operator's create writes it); named apart from the REST tests'
    spaces on the shared cluster."""
    name = "alices"
    with stack.client() as c:
        reply = c.post(_url(cluster), json={"name": name, "instance_group": "workers",
                                            "cpu": 1, "memory_gib": 2, "home_gib": 5,
                                            "idle_shutdown_minutes": None})
    assert reply.status_code == 202, reply.text
    assert stack.wait_operation(reply.json()["operation"]["id"], 120)["status"] == "succeeded"
    kube.merge_patch(stack.kube(cluster).api, spaces.API_VERSION, spaces.KIND, name,
                     spaces.NAMESPACE, {"metadata": {"annotations": {
                         spaces.OWNER_ANNOTATION: "alice"}}})
    return name


@pytest.fixture
def expected_console() -> list[re.Pattern]:
    """The console errors a test expects (Chromium logs each 4xx a fetch gets): the page's
    read of the cluster's teams, which a cluster without task governance answers 412."""
    return [re.compile(r"status of 412")]


@pytest.fixture
def page(browser, stack, expected_console):
    """The suite's page at 1440 by 900; fails on uncaught errors and on console errors other
    than the ones the test expects."""
    # the sandbox cluster's HTTPS server has its own CA: an opened space's tab would not load
    context = browser.new_context(viewport=VIEWPORT, ignore_https_errors=True)
    context.set_default_timeout(UI_TIMEOUT_MS)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("response", lambda r: errors.append(f"{r.status} from {r.request.method} {r.url}")
          if r.status >= 500 else None)
    try:
        yield pg
    finally:
        context.close()
    unexpected = [e for e in errors if not any(p.search(e) for p in expected_console)]
    assert not unexpected, f"console errors on the spaces page: {unexpected}"


def _url(cluster: str, name: str = "") -> str:
    return f"/api/v1/clusters/{cluster}/spaces" + (f"/{name}" if name else "")


def _read(stack, cluster: str, name: str) -> dict[str, Any]:
    with stack.client("viewer") as c:
        reply = c.get(_url(cluster, name))
    assert reply.status_code == 200, reply.text
    return reply.json()


def _open(page, stack, cluster: str, token: str | None = None, role: str = "operator"):
    sign_in(page, stack, token or stack.operator_token, role)
    page.goto(f"{base(stack)}/#/clusters/{cluster}")
    page.get_by_test_id("cluster-spaces-link").click()
    expect(page).to_have_url(re.compile(rf"#/clusters/{cluster}/spaces$"))
    expect(page.get_by_test_id("space-instance-group")).to_have_value(
        "workers", timeout=AWS_READ_TIMEOUT_MS)


def _unnamed_controls(page) -> list[str]:
    """The controls on screen that Chromium's accessibility tree gives no name."""
    cdp = page.context.new_cdp_session(page)
    try:
        nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]
    finally:
        cdp.detach()
    missing = []
    for n in nodes:
        role = (n.get("role") or {}).get("value")
        if n.get("ignored") or role not in NAMED_ROLES:
            continue
        if not str((n.get("name") or {}).get("value") or "").strip():
            missing.append(f"{role} (backend node {n.get('backendDOMNodeId')})")
    return missing


ID_PROBLEMS = """() => {
  const count = {};
  for (const el of document.querySelectorAll('[id]')) count[el.id] = (count[el.id] || 0) + 1;
  const twice = Object.keys(count).filter((id) => count[id] > 1).map((id) => `id ${id} twice`);
  const dangling = [];
  for (const el of document.querySelectorAll('[aria-describedby], [aria-labelledby], label[for]')) {
    const refs = [el.getAttribute('aria-describedby'), el.getAttribute('aria-labelledby'),
                  el.getAttribute('for')].filter(Boolean).join(' ').split(/\\s+/);
    for (const id of refs) {
      if (!document.getElementById(id)) dangling.push(`${id} (from ${el.outerHTML.slice(0, 80)})`);
    }
  }
  return twice.concat(dangling);
}"""


def _accessible(page) -> None:
    """What an accessibility checker would say first: every control has a name (Chromium's
    accessibility tree computes it), no id is used twice, every reference to one resolves."""
    unnamed = _unnamed_controls(page)
    assert not unnamed, f"controls without an accessible name: {unnamed}"
    problems = page.evaluate(ID_PROBLEMS)
    assert not problems, problems
    page_checks(page, "the spaces page")


def _follow(page, stack, kind: str, cluster: str) -> None:
    """On the progress panel of the operation just sent: succeeded, and back to the page."""
    expect(page).to_have_url(re.compile(r"#/operations/[^/]+$"))
    expect(page.get_by_test_id("op-kind")).to_have_text(kind)
    expect(page.get_by_test_id("op-status")).to_have_attribute(
        "data-status", "succeeded", timeout=OPERATION_TIMEOUT_MS)
    # the panel re-renders once its operation ends: the link is read, then followed, so a
    # click on an element the re-render replaced is never what the test measures
    link = page.get_by_test_id("op-spaces-link")
    expect(link).to_have_attribute("href", f"#/clusters/{cluster}/spaces")
    page.evaluate("href => { location.hash = href; }", link.get_attribute("href"))
    expect(page).to_have_url(re.compile(rf"#/clusters/{cluster}/spaces$"))


def test_the_form_is_the_apis_and_a_refusal_lands_on_its_field(page, stack, cluster,
                                                                expected_console):
    _open(page, stack, cluster)
    with stack.client("viewer") as c:
        spec = c.get("/api/v1/openapi.json").json()
    create = spec["components"]["schemas"]["SpaceCreate"]["properties"]
    for field in ("cpu", "memory_gib", "gpus", "home_gib", "idle_shutdown_minutes"):
        box = page.get_by_test_id(f"space-{field}")
        expect(box).to_have_attribute("min", str(create[field]["minimum"]))
        expect(box).to_have_attribute("max", str(create[field]["maximum"]))
        if "default" in create[field] and create[field]["default"] is not None:
            expect(box).to_have_value(str(create[field]["default"]))
    editors = page.get_by_test_id("space-app-type").locator("option")
    expect(editors).to_have_count(len(create["app_type"]["enum"]))
    expect(page.get_by_test_id("space-app-type")).to_have_value(create["app_type"]["default"])
    # the instance groups are the cluster's
    with stack.client("viewer") as c:
        groups = [g["name"] for g in c.get(f"/api/v1/clusters/{cluster}/instance-groups")
                  .json()["items"]]
    options = page.get_by_test_id("space-instance-group").locator("option")
    assert [options.nth(i).get_attribute("value") for i in range(options.count())] == groups
    # never stopping by itself sets the idle minutes aside
    page.get_by_test_id("space-idle-never").check()
    expect(page.get_by_test_id("space-idle_shutdown_minutes")).to_be_disabled()
    _accessible(page)

    # a bad name is caught before anything is sent
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if r.method == "POST" else None)
    page.get_by_test_id("space-name").fill("Bad_Name")
    page.get_by_test_id("space-create").click()
    expect(page.get_by_test_id("error-space-name")).not_to_be_empty()
    expect(page.get_by_test_id("space-name")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_test_id("space-name")).to_be_focused()
    page.get_by_test_id("space-cpu").fill("0")
    page.get_by_test_id("space-create").click()
    expect(page.get_by_test_id("error-space-cpu")).to_contain_text(
        f"from {create['cpu']['minimum']} to {create['cpu']['maximum']}")
    assert not sent

    # more vCPUs than any node of the group has: the API's exceeds_capacity, on the group
    expected_console.append(re.compile(r"status of 422"))
    page.get_by_test_id("space-name").fill("huge")
    page.get_by_test_id("space-cpu").fill("64")
    with page.expect_response(lambda r: r.request.method == "POST"
                              and r.url.endswith(_url(cluster))) as refused:
        page.get_by_test_id("space-create").click()
    assert refused.value.status == 422
    assert refused.value.json()["error"]["code"] == "exceeds_capacity"
    assert refused.value.request.post_data_json["idle_shutdown_minutes"] is None
    group_error = page.get_by_test_id("error-space-instance_group")
    expect(group_error).to_contain_text("64")
    expect(page.get_by_test_id("space-instance-group")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_test_id("error-space-name")).to_be_empty()
    expect(page.get_by_test_id("space-name")).to_have_attribute("aria-invalid", "false")
    expect(page.get_by_test_id("space-name")).to_have_value("huge")  # kept to correct
    assert stack.kube(cluster).get_object(spaces.API_VERSION, spaces.KIND, "huge",
                                          spaces.NAMESPACE) is None


def test_a_space_is_created_opened_stopped_started_and_deleted(page, stack, cluster,
                                                               expected_console):
    _open(page, stack, cluster)
    page.get_by_test_id("space-name").fill("lab")
    page.get_by_test_id("space-app-type").select_option("code-editor")
    page.get_by_test_id("space-cpu").fill("1")
    page.get_by_test_id("space-memory_gib").fill("4")
    page.get_by_test_id("space-home_gib").fill("10")
    page.get_by_test_id("space-idle-never").check()  # the sandbox's clock runs 1000x
    # more vCPUs than the group's nodes have: refused on the group's field; the good submit
    # that follows clears it
    expected_console.append(re.compile(r"status of 422"))
    page.get_by_test_id("space-cpu").fill("64")
    with page.expect_response(lambda r: r.request.method == "POST") as refused:
        page.get_by_test_id("space-create").click()
    assert refused.value.status == 422
    group_error = page.get_by_test_id("error-space-instance_group")
    expect(group_error).to_contain_text("64")
    expect(page.get_by_test_id("space-instance-group")).to_be_focused()
    page.get_by_test_id("space-cpu").fill("1")
    # the good submit goes out from a cleared form: its POST is held while the form is read
    # (its 202 leaves the page for the operation's), then let through
    held = []
    page.route(f"**{_url(cluster)}", lambda route: held.append(route)
               if route.request.method == "POST" else route.continue_())
    with page.expect_request(lambda r: r.method == "POST"
                             and r.url.endswith(_url(cluster))) as sent:
        page.get_by_test_id("space-create").click()
    assert sent.value.post_data_json == {
        "name": "lab", "app_type": "code-editor", "instance_group": "workers", "cpu": 1,
        "memory_gib": 4, "gpus": 0, "home_gib": 10, "idle_shutdown_minutes": None}
    assert sent.value.headers.get("idempotency-key")
    expect(group_error).to_be_empty()
    expect(page.get_by_test_id("space-instance-group")).to_have_attribute("aria-invalid", "false")
    page.wait_for_timeout(50)
    assert held, "the create was not sent"
    held[0].continue_()
    page.unroute(f"**{_url(cluster)}")
    _follow(page, stack, "space.create", cluster)

    row = page.get_by_test_id("space-row-lab")
    expect(page.get_by_test_id("space-state-lab")).to_have_text(
        "running", timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id("space-owner-lab")).to_have_text("operator")
    expect(page.get_by_test_id("space-size-lab")).to_contain_text("1 vCPU · 4 GiB")
    expect(page.get_by_test_id("space-size-lab")).to_contain_text("workers · home 10 GiB")
    expect(page.get_by_test_id("space-idle-lab")).to_have_text("never stops by itself")
    expect(row).to_contain_text("Code Editor")
    url = _read(stack, cluster, "lab")["access"]["url"]
    assert url == f"{stack.spaces_url}/s/{cluster}/default/lab/", url
    stack.spaces_router()
    _accessible(page)
    # Open: the API's one-use code, posted in a new tab to the spaces router, which answers
    # with the space's session cookie and sends the tab on to the space (the sandbox's
    # editor lists its /s3); the tab is not told who opened it, and no URL holds the code
    asked: list[str] = []
    page.context.on("request", lambda r: asked.append(r.url))
    with page.expect_response(lambda r: r.url.endswith(_url(cluster, "lab") + "/sign-in")
                              ) as signed, page.context.expect_page() as opened:
        page.get_by_test_id("space-open-lab").click()
    tab = opened.value
    tab.wait_for_url(url)
    expect(tab).to_have_title(re.compile(r"^lab: /s3"))
    assert tab.evaluate("window.opener") is None
    code = signed.value.json()["code"]
    assert asked and not any(code in u for u in asked), asked
    [cookie] = [c for c in page.context.cookies(url) if c["name"] == "hypd_space"]
    assert (cookie["httpOnly"], cookie["path"], cookie["sameSite"]) == (
        True, f"/s/{cluster}/default/lab/", "Lax")
    assert tab.evaluate("document.cookie") == ""  # the page's scripts cannot read it
    tab.close()
    # its detail: how a remote IDE (or a browser without the router) reaches it
    page.get_by_test_id("space-select-lab").click()
    expect(page.get_by_test_id("space-port-forward")).to_have_text(
        "kubectl port-forward -n default service/workspace-lab-service 8888:8888")
    expect(page.get_by_test_id("space-local-url")).to_have_text(
        f"http://localhost:8888/s/{cluster}/default/lab/")
    _accessible(page)
    page.get_by_test_id("space-select-lab").click()

    # Stop: the operation, then stopped with no Open link
    with page.expect_response(lambda r: r.request.method == "POST"
                              and r.url.endswith(_url(cluster, "lab") + "/stop")) as stop:
        page.get_by_test_id("space-stop-lab").click()
    assert stop.value.status == 202
    _follow(page, stack, "space.stop", cluster)
    expect(page.get_by_test_id("space-state-lab")).to_have_text(
        "stopped", timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id("space-open-lab")).to_have_count(0)
    expect(page.get_by_test_id("space-stop-lab")).to_have_count(0)

    # Start: running again, the same URL
    page.get_by_test_id("space-start-lab").click()
    _follow(page, stack, "space.start", cluster)
    expect(page.get_by_test_id("space-state-lab")).to_have_text(
        "running", timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id("space-open-lab")).to_be_enabled()

    # Delete: the dialog shows the dry run's plan first
    with page.expect_request(lambda r: r.method == "DELETE"
                             and "dry_run=true" in r.url) as plan:
        page.get_by_test_id("space-delete-lab").click()
    assert plan.value.url.split("?")[0].endswith(_url(cluster, "lab"))
    dialog = destroy_dialog(page, "space", "lab", "space-delete")
    plan_read(dialog)
    removes = dialog.get_by_test_id("destroy-removes")
    expect(removes).to_contain_text("workspace-lab-pvc (10 GiB)")
    expect(removes).to_contain_text("Workspace")
    _accessible(page)
    with page.expect_response(lambda r: r.request.method == "DELETE"
                              and r.url.endswith(_url(cluster, "lab"))) as gone:
        dialog.get_by_test_id("destroy-dialog-confirm").click()
    assert gone.value.status == 202
    _follow(page, stack, "space.delete", cluster)
    expect(page.get_by_test_id("space-row-lab")).to_have_count(0, timeout=AWS_READ_TIMEOUT_MS)
    assert stack.kube(cluster).get_object(spaces.API_VERSION, spaces.KIND, "lab",
                                          spaces.NAMESPACE) is None


def test_a_viewer_sees_every_change_control_disabled_with_the_role(page, stack, cluster,
                                                                   theirs):
    _open(page, stack, cluster, stack.viewer_token, "viewer")
    expect(page.get_by_test_id(f"space-state-{theirs}")).to_have_text(
        "running", timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id("space-role-hint")).to_contain_text("viewer")
    for testid in ("space-create", f"space-stop-{theirs}", f"space-delete-{theirs}",
                   f"space-open-{theirs}"):
        control = page.get_by_test_id(testid)
        expect(control).to_be_disabled()
        expect(control).to_have_attribute("data-locked", "role")
        expect(control).to_have_attribute("title", re.compile("operator role.*viewer"))
    _accessible(page)


def test_an_operator_sees_anothers_space_but_cannot_change_it(page, stack, cluster, theirs):
    _open(page, stack, cluster)
    expect(page.get_by_test_id(f"space-owner-{theirs}")).to_have_text(
        "alice", timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id("space-create")).to_be_enabled()
    for testid in (f"space-stop-{theirs}", f"space-delete-{theirs}", f"space-open-{theirs}"):
        control = page.get_by_test_id(testid)
        expect(control).to_be_disabled()
        expect(control).to_have_attribute("data-locked", "owner")
        expect(control).to_have_attribute("title", re.compile(r"\balice\b"))
    _accessible(page)
    # the list refreshes every few seconds; a refresh that changes nothing keeps the focus
    page.get_by_test_id(f"space-select-{theirs}").focus()
    with page.expect_response(lambda r: r.request.method == "GET"
                              and r.url.endswith(_url(cluster)), timeout=10_000):
        pass
    page.wait_for_timeout(200)
    expect(page.get_by_test_id(f"space-select-{theirs}")).to_be_focused()
