"""The dashboard in a real browser: sign in, create a network from the form, follow its
progress panel to the end; a viewer cannot create; a 401 sends the user back to sign-in.

Drives Debian's /usr/bin/chromium headless through Playwright's sync API against the session
`stack` fixture (tests/conftest.py): `.url`, `.operator_token`, `.viewer_token`; the browser
fixtures are in tests/e2e/conftest.py, the launch settings and sign-in in tests/e2e/helpers.py.
"""

import json
import re
import secrets

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

from tests.e2e.helpers import (
    AWS_READ_TIMEOUT_MS,
    OPERATION_TIMEOUT_MS,
    UUID_RE,
    page_checks,
    sign_in,
)
from tests.e2e.helpers import base as _base

pytestmark = pytest.mark.browser

# Fixtures `browser` and `page` (fails on uncaught JS errors) live in tests/e2e/conftest.py.


def expect_progress_panel(page):
    """After submitting the create form: the reply's operation opens in the progress panel.
    (The POST may be the first AWS read of a fresh stack, hence the longer timeout.)"""
    try:
        expect(page).to_have_url(re.compile(r"#/operations/[^/?#]+$"), timeout=AWS_READ_TIMEOUT_MS)
    except AssertionError as exc:
        form_error = page.get_by_test_id("network-form-error").text_content()
        raise AssertionError(f"no progress panel; the form says: {form_error!r}") from exc


def test_operator_creates_network_and_follows_progress(page, stack):
    name = f"web-{secrets.token_hex(3)}"
    sign_in(page, stack, stack.operator_token, "operator")

    page.get_by_test_id("nav-networks").click()
    expect(page).to_have_url(re.compile(r"#/networks$"))
    create = page.get_by_test_id("network-create")
    expect(create).to_be_enabled()

    # availability zones come from discovery (the first AWS read of a fresh stack can be
    # slow on a loaded machine); pick two (EKS needs subnets in two zones)
    zones = page.locator("[data-testid=network-zones] input[type=checkbox]:not([disabled])")
    expect(zones.first).to_be_visible(timeout=AWS_READ_TIMEOUT_MS)
    picked = []
    for i in range(min(2, zones.count())):
        zones.nth(i).check()
        picked.append(zones.nth(i).get_attribute("value"))

    page.get_by_test_id("network-name").fill(name)
    expect(page.get_by_test_id("network-cidr")).to_have_value("10.0.0.0/16")

    # the API's refusal lands on its field (form_fields.js) and the focus with it
    cidr = page.get_by_test_id("network-cidr")
    cidr_error = page.get_by_test_id("error-network-cidr")
    cidr.fill("10.0.0.0/20")
    with page.expect_response(lambda r: r.request.method == "POST") as refused:
        create.click()
    assert refused.value.status == 422
    expect(cidr_error).to_contain_text("/16 to /18")
    expect(cidr).to_have_attribute("aria-invalid", "true")
    expect(cidr).to_be_focused()
    cidr.fill("10.0.0.0/16")

    # the successful submit goes out from a clean form: its POST is held while the form is
    # read (its 202 leaves the page), then let through
    held = []
    page.route("**/api/v1/networks", lambda route: held.append(route)
               if route.request.method == "POST" else route.continue_())
    with page.expect_request(
        lambda r: r.method == "POST" and r.url.split("?")[0].endswith("/api/v1/networks")
    ) as posted:
        create.click()
    expect(cidr_error).to_be_empty()
    expect(cidr).to_have_attribute("aria-invalid", "false")
    expect(page.get_by_test_id("network-form-error")).to_be_empty()
    page.wait_for_timeout(50)
    assert held, "the create was not sent"
    held[0].continue_()
    request = posted.value
    assert UUID_RE.match(request.headers.get("idempotency-key", "")), request.headers
    assert request.headers.get("authorization") == f"Bearer {stack.operator_token}"
    body = request.post_data_json
    assert body["name"] == name
    assert body["cidr"] == "10.0.0.0/16"
    assert body.get("availability_zones", []) == picked

    expect_progress_panel(page)
    op_id = page.url.split("#/operations/", 1)[1]
    expect(page.get_by_test_id("op-id")).to_have_text(op_id)
    expect(page.get_by_test_id("op-kind")).to_have_text("network.create")
    expect(page.get_by_test_id("op-target")).to_have_text(f"network/{name}")

    expect(page.get_by_test_id("op-status")).to_have_text("succeeded", timeout=OPERATION_TIMEOUT_MS)
    steps = page.locator("[data-testid=steps] [data-step]")
    expect(steps.first).to_be_visible()
    count = steps.count()
    assert count >= 1
    for i in range(count):
        step = steps.nth(i)
        step_name = step.get_attribute("data-step")
        expect(step).to_have_attribute("data-testid", f"step-{step_name}")
        expect(step).to_have_attribute("data-phase", "succeeded")
        expect(page.get_by_test_id(f"step-phase-{step_name}")).to_have_text("succeeded")
    expect(page.get_by_test_id("op-error")).to_have_count(0)
    expect(page.get_by_test_id("op-cancel")).to_be_disabled()
    expect(page.get_by_test_id("op-retry")).to_be_disabled()

    # the network is listed (read from AWS by tag), the operation in the operations list
    page.get_by_test_id("nav-networks").click()
    expect(page.get_by_test_id(f"network-row-{name}")).to_be_visible(timeout=AWS_READ_TIMEOUT_MS)
    page.get_by_test_id("nav-operations").click()
    row = page.get_by_test_id(f"op-row-{op_id}")
    expect(row).to_be_visible()
    expect(row.get_by_test_id("op-row-status")).to_have_text("succeeded")
    row.click()
    expect(page).to_have_url(re.compile(rf"#/operations/{re.escape(op_id)}$"))
    expect(page.get_by_test_id("op-status")).to_have_text("succeeded")


def create_network_from_form(page, name):
    """On #/networks: submit the form (server-default zones) and land on the progress panel."""
    page.get_by_test_id("nav-networks").click()
    page.get_by_test_id("network-name").fill(name)
    page.get_by_test_id("network-create").click()
    expect_progress_panel(page)
    return page.url.split("#/operations/", 1)[1]


def expect_all_steps_succeeded(page):
    expect(page.get_by_test_id("op-status")).to_have_text("succeeded", timeout=OPERATION_TIMEOUT_MS)
    steps = page.locator("[data-testid=steps] [data-step]")
    expect(steps.first).to_be_visible()
    for i in range(steps.count()):
        expect(steps.nth(i)).to_have_attribute("data-phase", "succeeded")


def test_live_feed_resumes_after_a_drop(page, stack):
    """The first socket is cut mid-stream; the panel reconnects with `after` = the last event
    id it received and still reaches the end."""
    connections = []

    def relay(ws):
        conn = {"auth": None, "event_ids": [], "dropped": False}
        connections.append(conn)
        server = ws.connect_to_server()
        drop_this_one = len(connections) == 1

        def from_page(message):
            if conn["auth"] is None:
                conn["auth"] = json.loads(message)
            server.send(message)

        def from_server(message):
            if conn["dropped"]:
                return
            data = json.loads(message)
            if data.get("type") == "event":
                if drop_this_one and len(conn["event_ids"]) == 2:
                    conn["dropped"] = True
                    ws.close(code=1011, reason="test: connection lost")
                    server.close()
                    return
                conn["event_ids"].append(data["id"])
            ws.send(message)

        ws.on_message(from_page)
        server.on_message(from_server)

    page.route_web_socket(re.compile(r"/ws/operations/"), relay)
    sign_in(page, stack, stack.operator_token, "operator")
    create_network_from_form(page, f"ws-{secrets.token_hex(3)}")
    expect_all_steps_succeeded(page)

    assert len(connections) >= 2, connections
    first, second = connections[0], connections[1]
    assert first["dropped"]
    assert first["auth"]["type"] == "auth"
    assert first["auth"]["token"] == stack.operator_token
    assert second["auth"]["after"] == first["event_ids"][-1]


def test_progress_falls_back_to_long_polling(page, stack):
    """With every WebSocket refused, the panel follows the operation with
    GET /api/v1/operations/<id>?wait=20."""
    refused = []

    def refuse(ws):
        refused.append(ws.url)
        ws.close(code=1011, reason="test: no WebSocket here")

    page.route_web_socket(re.compile(r"/ws/operations/"), refuse)
    replies = []
    page.on("response", lambda r: replies.append(r) if "/api/v1/operations/" in r.url else None)
    stack.wait_idle()
    # Hold a mid-way AWS call so the operation is certainly running while the panel
    # gives up on WebSockets and turns to long-polling.
    hold = stack.sandbox.hold("ec2", "CreateInternetGateway")
    try:
        sign_in(page, stack, stack.operator_token, "operator")
        op_id = create_network_from_form(page, f"poll-{secrets.token_hex(3)}")
        stack.sandbox.wait_held(hold, timeout=60)
        expect(page.get_by_test_id("live-status")).to_have_attribute("data-mode", "polling")
        stack.sandbox.release(hold)
    finally:
        stack.sandbox.clear_holds()
    expect_all_steps_succeeded(page)

    assert len(refused) >= 2
    polls = [r.url for r in replies if "wait=20" in r.url and op_id in r.url]
    assert polls, [r.url for r in replies]


def test_invalid_name_is_refused_before_any_request(page, stack):
    sign_in(page, stack, stack.operator_token, "operator")
    page.get_by_test_id("nav-networks").click()
    posts = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    page.get_by_test_id("network-name").fill("Bad_Name")
    page.get_by_test_id("network-create").click()
    expect(page.get_by_test_id("error-network-name")).not_to_be_empty()
    expect(page.get_by_test_id("network-name")).to_have_attribute("aria-invalid", "true")
    assert posts == []
    page_checks(page, "the network form with an error")


def test_viewer_sees_mutations_disabled(page, stack):
    sign_in(page, stack, stack.viewer_token, "viewer")
    expect(page.get_by_test_id("readonly-hint")).to_be_visible()
    page.get_by_test_id("nav-networks").click()
    expect(page.get_by_test_id("network-create")).to_be_disabled()
    expect(page.get_by_test_id("network-create-hint")).to_be_visible()
    # reads still work for a viewer
    expect(page.get_by_test_id("networks-table")).to_be_visible()
    page.get_by_test_id("nav-discovery").click()
    page_checks(page, "the networks page, read-only")
    expect(page.get_by_test_id("az-select")).to_be_enabled()


def test_wrong_token_is_refused(page, stack):
    page.goto(_base(stack) + "/")
    page.get_by_test_id("token-input").fill("not-a-real-token")
    page.get_by_test_id("sign-in").click()
    expect(page.get_by_test_id("sign-in-error")).to_contain_text("401")
    expect(page.get_by_test_id("whoami")).to_be_hidden()


def test_first_run_lands_on_clusters_says_sandbox_and_the_session_spans_tabs(page, stack):
    sign_in(page, stack, stack.operator_token, "operator")  # lands on #/clusters
    badge = page.get_by_test_id("sandbox-badge")
    expect(badge).to_be_visible()
    expect(badge).to_contain_text("simulated AWS, nothing billed")
    assert "Nothing is made in an AWS account" in badge.get_attribute("title")
    expect(page.get_by_test_id("aws-place")).to_be_hidden()
    # the first steps, ticked from what exists, each linking to its form
    with stack.client("viewer") as c:
        networks = c.get("/api/v1/networks").json()["items"]
        clusters = c.get("/api/v1/clusters").json()["items"]
    steps = page.locator("[data-testid=first-steps][data-settled]")
    expect(steps).to_have_count(1, timeout=AWS_READ_TIMEOUT_MS)
    if steps.is_visible():
        for key, done in (("network", networks), ("cluster", clusters)):
            expect(page.get_by_test_id(f"first-step-{key}")).to_have_attribute(
                "data-done", "1" if done else "")
        expect(page.get_by_test_id("first-step-cluster").get_by_role("link")).to_have_attribute(
            "href", "#/clusters/new")
    else:  # every step taken: nothing left to lead to
        assert networks and clusters
    # a new tab of this browser is signed in already; the token is in no URL it asks for
    other = page.context.new_page()
    asked: list[str] = []
    other.on("request", lambda r: asked.append(r.url))
    other.goto(_base(stack) + "/#/networks")
    expect(other.get_by_test_id("whoami-role")).to_have_text("operator")
    expect(other.get_by_test_id("networks-table")).to_be_visible()
    assert asked and not any(stack.operator_token in url for url in [*asked, other.url])
    # signing out in one tab signs out every tab; a tab opened then asks for a token
    other.get_by_test_id("sign-out").click()
    expect(page.get_by_test_id("token-input")).to_be_visible()
    expect(page.get_by_test_id("sign-in-error")).to_contain_text("signed out in another tab")
    assert page.evaluate("sessionStorage.getItem('hypd.token')") is None
    third = page.context.new_page()
    third.goto(_base(stack) + "/")
    expect(third.get_by_test_id("token-input")).to_be_visible()


def test_401_returns_to_sign_in(page, stack):
    sign_in(page, stack, stack.operator_token, "operator")
    page.evaluate("sessionStorage.setItem('hypd.token', 'revoked-token')")
    page.reload()
    expect(page.get_by_test_id("token-input")).to_be_visible()
    expect(page.get_by_test_id("sign-in-error")).to_contain_text("401")
    expect(page.get_by_test_id("whoami")).to_be_hidden()
